"""``ppo:NAME`` / ``ppo:PATH``: a saved sb3-contrib ``MaskablePPO`` model, acting deterministically on the legal
actions.

The package ships the recipe's models (``yacht_agents/models/ppo_<name>.zip``: the repository's ``models/``
folder): ``ppo:standard`` and ``ppo:classic`` name them (:func:`resolve_model`). :func:`load_model` is the one
place models are loaded (by :class:`PPOAgent` and by ``yacht_lab``'s resume): it also loads models saved before
0.2, when this package was the top-level ``agents`` (see :data:`LEGACY_POLICY_MODULES`).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R

#: Where a saved model's ``policy_class`` was imported from before 0.2, when this package installed as the
#: top-level ``agents`` (``agents.policy.OddsPolicy``, now :class:`yacht_agents.policy.OddsPolicy`). Such a
#: model is loaded with the class given (``custom_objects``), never by unpickling that import path: ``agents``
#: is today another package's name (openai-agents), or the repository's folder imported a second time.
LEGACY_POLICY_MODULES = frozenset({"agents.policy"})


def shipped_models() -> dict[str, Path]:
    """The models that come with the package, by short name: ``{"classic": .../ppo_classic.zip, "standard": ...}``.

    Installed, they are the package data ``yacht_agents/models/ppo_<name>.zip``; in a source checkout (an
    editable install) the repository's ``models/`` folder, which is where the wheel takes them from.
    """
    package = Path(__file__).resolve().parent
    folders = [package / "models"]
    if (package.parent / "pyproject.toml").is_file():  # a source checkout: agents/ beside models/
        folders.append(package.parent / "models")
    for folder in folders:
        found = {path.name[len("ppo_") : -len(".zip")]: path for path in sorted(folder.glob("ppo_*.zip"))}
        if found:
            return found
    return {}


def resolve_model(model: str | os.PathLike) -> Path:
    """The file a PPO model names: a shipped model's short name (``"standard"``, ``"classic"``: see
    :func:`shipped_models`), or a path.

    A string without a path separator and not ending in ``.zip`` is a name; a shipped model's name wins over a
    file of that name in the working folder (write ``./standard`` for the file). Anything else is a path.

    Raises:
        ValueError: an unknown name (the message lists the shipped ones), or no file at the path.
    """
    text = os.fspath(model)
    separators = [sep for sep in ("/", os.sep, os.altsep) if sep]
    if isinstance(model, str) and not any(sep in text for sep in separators) and not text.lower().endswith(".zip"):
        shipped = shipped_models()
        if text in shipped:
            return shipped[text]
        if not Path(text).is_file():
            names = ", ".join(sorted(shipped)) or "none (they are missing from this installation)"
            raise ValueError(
                f"cannot load PPO model '{text}': no shipped model of that name (shipped: {names}) "
                f"and no such file; give a shipped name or a path to a .zip"
            )
    path = Path(model)
    if not path.is_file():
        reason = "it is a directory" if path.is_dir() else "file not found"
        raise ValueError(f"cannot load PPO model '{text}': {reason}")
    return path


def saved_policy_module(path: str | os.PathLike) -> str | None:
    """The module a saved model's ``policy_class`` names (read from the zip's ``data`` JSON, nothing
    unpickled), or ``None`` if the file does not say (not an SB3 zip: loading it will tell)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
        module = data["policy_class"]["__module__"]
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile):
        return None
    return module if isinstance(module, str) else None


def _no_learning(progress_remaining: float) -> float:
    """The learning rate of a model loaded to act: it never learns."""
    return 0.0


def load_model(path: str | os.PathLike, *, inference: bool = True, **kwargs: Any):
    """``MaskablePPO.load(path, **kwargs)`` that also loads models saved before 0.2.

    A model whose ``policy_class`` was saved as ``agents.policy`` (:data:`LEGACY_POLICY_MODULES`) gets
    :class:`yacht_agents.policy.OddsPolicy` instead, whatever ``agents`` is in this process. With
    ``inference`` (acting only) the saved learning-rate schedules, closures pickled by value, are not
    unpickled at all; to continue training leave it off and set the run's schedules after loading (as
    ``yacht_lab``'s resume does).

    Raises:
        whatever ``MaskablePPO.load`` raises for a file that is not a model; ``ImportError`` without sb3-contrib.
    """
    from sb3_contrib import MaskablePPO

    custom_objects = dict(kwargs.pop("custom_objects", None) or {})
    if saved_policy_module(path) in LEGACY_POLICY_MODULES:
        from yacht_agents.policy import OddsPolicy

        custom_objects.setdefault("policy_class", OddsPolicy)
    if inference:
        custom_objects.setdefault("learning_rate", 0.0)
        custom_objects.setdefault("lr_schedule", _no_learning)
    return MaskablePPO.load(path, custom_objects=custom_objects, **kwargs)


class PPOAgent(Agent):
    """Loads a model (:func:`load_model` of :func:`resolve_model`'s file: ``path`` is a file or a shipped model's
    name, e.g. ``"standard"``) on the CPU and acts with ``predict(..., deterministic=True)``.

    The model must have been trained on a flat observation of the preset's sheet with
    ``Discrete(rules.num_actions)`` actions: the solo one (``Box`` of ``encoder.size``, 64 for Yacht, the same
    for every preset of 12 categories) or a table's view from ``YachtVersus-v0`` (a ``P``-player
    :class:`~yacht_env.encoding.MultiplayerEncoder`'s size; the agent's ``table_players`` is then ``P``). A model
    of :class:`yacht_agents.policy.OddsPolicy` (the default recipe) also names its preset, and must be played on it.

    Raises:
        ValueError: an unknown name, the file is missing, is not a loadable MaskablePPO model, or has other spaces.
    """

    def __init__(self, path: str | Path, rules: str | R.Rules = "standard", name: str | None = None) -> None:
        super().__init__(name or f"ppo:{path}", rules)
        self.path = resolve_model(path)
        try:
            import sb3_contrib  # noqa: F401 - imported here: only this agent needs torch
        except ImportError:
            extra = "pip install 'yacht-rl[train]'"
            raise ValueError(f"cannot load PPO model '{path}': the ppo agent needs the train extra ({extra})") from None

        try:
            self.model = load_model(self.path, device="cpu")
        except Exception as error:  # a corrupt or foreign file fails in many ways (zip, pickle, torch)
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"cannot load PPO model '{path}': not a MaskablePPO model ({detail})") from None
        self._read_spaces(f"PPO model '{path}'")

    def _read_spaces(self, what: str) -> None:
        """Sets ``table_players`` from the model's observation size; raises ``ValueError`` for other spaces."""
        from gymnasium import spaces

        from yacht_env.encoding import MultiplayerEncoder

        obs_space, action_space = self.model.observation_space, self.model.action_space
        sizes = {self.encoder.size: None}
        sizes.update({MultiplayerEncoder(self.rules, p).size: p for p in range(2, 11)})
        num_actions = self.rules.num_actions
        shape = obs_space.shape if isinstance(obs_space, spaces.Box) else None
        if (
            shape is None
            or len(shape) != 1
            or shape[0] not in sizes
            or not (isinstance(action_space, spaces.Discrete) and int(action_space.n) == num_actions)
        ):
            raise ValueError(
                f"cannot use {what}: it was trained on observation space {obs_space} and action space "
                f"{action_space}; Yacht-v0 has Box(0, 1, ({self.encoder.size},)) and Discrete({num_actions}), "
                f"YachtVersus-v0 a table's view of {sorted(s for s in sizes if s != self.encoder.size)} values"
            )
        self.table_players = sizes[shape[0]]
        trained = getattr(self.model.policy, "rules", None)  # an OddsPolicy knows its preset (its odds tables)
        if trained is not None and trained != self.rules:
            raise ValueError(f"cannot use {what} for the {self.rules.name!r} rules: it was trained on {trained.name!r}")

    @classmethod
    def from_model(cls, model, rules: str | R.Rules = "standard", name: str = "ppo") -> PPOAgent:
        """An agent over a live ``MaskablePPO`` model (e.g. evaluated during training), not a file."""
        agent = cls.__new__(cls)
        Agent.__init__(agent, name, rules)
        agent.path, agent.model = None, model
        agent._read_spaces("the model")
        return agent

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        import torch

        # A small MLP runs fastest on one thread; more only contend for the cores (10x slower on a busy
        # two-core machine). The process's setting is restored after.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            actions, _ = self.model.predict(observations, action_masks=action_masks, deterministic=True)
        finally:
            torch.set_num_threads(threads)
        return np.asarray(actions).reshape(len(observations))
