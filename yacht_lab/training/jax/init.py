"""Where a JAX run starts: ``init``'s parameters, fitted to the run's network (the JAX trainer's warm start).

``init`` names a JAX model (its ``.npz`` or run folder: :func:`yacht_agents.jax_policy.load_params`; ``jax:PATH``
as an agent spec writes it; a shipped JAX model's name, :func:`yacht_agents.jax_policy.shipped_params`, such as
``standard``: ``ppo:standard``'s network as JAX arrays, read without torch) or, failing that, a MaskablePPO model
of the odds policy (another shipped name, or a ``.zip``: read by :func:`yacht_agents.ppo.build_model`, which needs
torch, the ``train`` extra; its arrays are the same network's, transposed). A solo model
starts a table run playing exactly as it did (:func:`yacht_agents.jax_policy.table_params`); otherwise the network
must be the config's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yacht_agents.jax_policy import NetworkSpec, load_params, shipped_params, table_params
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.util import is_bare_name
from yacht_lab.training.config import TrainConfig

__all__ = ["sb3_params", "start_params"]


def start_params(config: TrainConfig, spec: NetworkSpec):
    """The parameters ``config.init`` names, fitted to the run's network ``spec``; ``None`` without ``init``.

    Raises:
        ValueError: an unreadable model, or one whose network is not the config's.
    """
    if config.init is None:
        return None
    name = os.fspath(config.init)
    name = name.removeprefix("jax:")  # an agent spec's form: jax:PATH
    try:
        shipped = shipped_params().get(name) if is_bare_name(name, (".npz",)) else None  # "standard": no torch
        path = Path(name) if shipped is None else shipped
        jax_model = (
            shipped is not None or config.init != name or path.suffix == ".npz" or (path / "model.npz").is_file()
        )
        params, found = load_params(path) if jax_model else sb3_params(name)
    except ValueError as error:
        raise ValueError(f"init: {error}") from None
    saved = found
    if found.players == 1 and spec.players > 1:
        params, found = table_params(params, found, spec.players, spec.obs_size)
    if _effective(found) != _effective(spec):
        raise ValueError(
            f"init: {os.fspath(config.init)!r} is the network {_describe(saved)}, this run's config is "
            f"{_describe(spec)} (a solo model starts runs at any table; a table model, runs at a table of its size)"
        )
    return jax.tree.map(jnp.asarray, params)


def _effective(spec: NetworkSpec) -> NetworkSpec:
    """``spec`` with ``bonus_odds`` as the network has it: off on rules without bonuses, whatever the file says."""
    rules = R.get_rules(spec.rules) if spec.rules in R.PRESETS else None
    bonuses = rules is not None and (rules.upper_bonus or rules.yahtzee_bonus)
    return spec._replace(bonus_odds=bool(spec.bonus_odds and bonuses))


def _describe(spec: NetworkSpec) -> str:
    return ", ".join(f"{key} {value!r}" for key, value in spec._asdict().items())


def sb3_params(model: str | os.PathLike) -> tuple[dict[str, Any], NetworkSpec]:
    """A MaskablePPO model of the odds policy (relu, the same MLP for policy and value) as JAX parameters.

    Raises:
        ValueError: not such a model (or torch and Stable-Baselines3, the train extra, are missing: one line naming
            the extra).
    """
    try:
        return _sb3_params(model)
    except ImportError as error:  # torch, Stable-Baselines3 or sb3-contrib
        raise ValueError(
            f"{os.fspath(model)!r} is not a JAX model (a .npz, or a run folder with model.npz), and reading a PPO "
            f"model needs the train extra (pip install -e '.[train]'; {error})"
        ) from None


def _sb3_params(model: str | os.PathLike) -> tuple[dict[str, Any], NetworkSpec]:
    from yacht_agents.ppo import build_model, read_model, resolve_model

    path = resolve_model(model)
    saved = read_model(path)
    arch = saved.net_arch or {}
    if saved.policy != "OddsPolicy" or saved.activation != "ReLU" or arch.get("pi") != arch.get("vf"):
        raise ValueError(f"{os.fspath(path)!r} is not a relu OddsPolicy with one MLP shape: no JAX network plays it")
    state = {
        name: value.detach().numpy() for name, value in build_model(path, device="cpu").policy.state_dict().items()
    }

    def dense(prefix: str) -> dict[str, np.ndarray]:
        return {"w": state[f"{prefix}.weight"].T.copy(), "b": state[f"{prefix}.bias"].copy()}

    params: dict[str, Any] = {
        net: [dense(f"mlp_extractor.{name}.{2 * i}") for i in range(len(arch["pi"]))]
        for net, name in (("pi", "policy_net"), ("vf", "value_net"))
    }
    params.update(action=dense("action_net"), value=dense("value_net"))
    if saved.odds["keep_head"]:
        params["keep"] = dense("keep_weights")
    rules = saved.odds["rules"]
    if saved.observation_size != ObservationEncoder(rules).size:
        raise ValueError(f"{os.fspath(path)!r} was trained at a table: only a solo PPO model starts a JAX run")
    spec = NetworkSpec(
        rules,
        saved.observation_size,
        saved.num_actions,
        tuple(arch["pi"]),
        saved.odds["chase_inputs"],
        saved.odds["keep_head"],
        saved.odds["bonus_odds"],
    )
    return params, spec
