"""A new run that starts from a trained model's weights (``init`` in the config, ``train.py --init MODEL``: a
path, or a shipped model's name such as ``standard``).

Training to win at a table from scratch fails: a random policy never beats ``optimal``, so the win reward is a
constant -1 and carries no signal. A model trained for score already wins a good share of its games, and
starting from it makes the win signal informative from the first rollout. The same applies to any new run
that should continue from another one's policy with a new config (a new reward, new opponents, new PPO
settings) rather than resume it.

What is copied, from a model file read by the safe loader (:func:`yacht_agents.ppo.build_model`: nothing in it
is unpickled) into the new run's network, which the run's config builds:

* every parameter of the same shape, as it is;
* the first layer of the policy and value MLPs when the new run sees a table and the model saw its own game
  (``Yacht-v0``'s observation, 64 values for Yacht): a table's view starts with the player's own observation
  (:class:`yacht_env.encoding.MultiplayerEncoder`), so those columns are copied, the columns of the rest of
  the table start at zero (the network starts out ignoring the opponents and acts as the model did), and the
  odds policy's chase columns after the observation are copied to their new place;
* except the value head's output layer, which starts at zero: the critic's scale belonged to the model's
  reward (a score-trained critic predicts the points still to come, and would turn every point scored into
  a negative advantage under the win reward). Its hidden layers are kept.

The network must be the one the config describes (the same policy class, ``net_arch``, activation and odds
options) for the same rules; anything else is refused in one line. A model trained at a table can start a
run at a table of the same size. The optimizer starts fresh, the step count at zero, and the run's own
schedules apply. Nothing of the solver enters: the model is a trained agent, read as data.
"""

from __future__ import annotations

import os
from typing import Any

from yacht_lab.training.config import TrainConfig

__all__ = ["describe_init", "warm_start"]


def _expected(config: TrainConfig) -> dict[str, Any]:
    """What the config's network looks like in a model file's terms (:class:`yacht_agents.ppo.SavedModel`)."""
    odds = config.policy.chase_inputs or config.policy.keep_head
    expected: dict[str, Any] = {
        "policy": "OddsPolicy" if odds else "MaskableActorCriticPolicy",
        "net_arch": {"pi": list(config.policy.net_arch), "vf": list(config.policy.net_arch)},
        "activation": {"relu": "ReLU", "tanh": "Tanh"}[config.policy.activation],
    }
    if odds:
        expected.update(
            rules=config.rules,
            chase_inputs=config.policy.chase_inputs,
            keep_head=config.policy.keep_head,
            bonus_odds=_bonus_odds(config.rules, config.policy.bonus_odds),
        )
    return expected


def _bonus_odds(rules: str, bonus_odds: bool) -> bool:
    """Whether the bonus odds change the network: only on rules with an upper or a Yahtzee bonus."""
    from yacht_env import rules as R

    preset = R.get_rules(rules)
    return bool(bonus_odds and (preset.upper_bonus or preset.yahtzee_bonus))


def describe_init(config: TrainConfig, observation_size: int, num_actions: int):
    """Checks that ``config.init`` can start this run: the model file loads (safe loader), has the config's
    network and rules, and saw this run's observation (or its own game's, for a run at a table).

    Returns:
        The file's :class:`yacht_agents.ppo.SavedModel`.

    Raises:
        ValueError: one line naming the file and the first thing that does not fit.
    """
    from yacht_agents.base import outdated_table_view
    from yacht_agents.ppo import read_model, resolve_model
    from yacht_env import rules as R
    from yacht_env.encoding import ObservationEncoder

    try:
        path = os.fspath(resolve_model(config.init))
        saved = read_model(path)
    except ValueError as error:
        raise ValueError(f"init: {error}") from None
    found = {"policy": saved.policy, "net_arch": saved.net_arch, "activation": saved.activation, **saved.odds}
    if "bonus_odds" in found:
        found["bonus_odds"] = _bonus_odds(found["rules"], found["bonus_odds"])
    for key, value in _expected(config).items():
        if found.get(key) != value:
            where = "rules" if key == "rules" else ("policy class" if key == "policy" else f"policy.{key}")
            raise ValueError(
                f"init: {path!r} has {where} {found.get(key)!r}, this run's config has {value!r} "
                "(the network must be the one the config describes)"
            )
    if saved.num_actions != num_actions:
        raise ValueError(
            f"init: {path!r} has {saved.num_actions} actions, the {config.rules!r} rules have {num_actions}"
        )
    solo = ObservationEncoder(config.rules).size
    if saved.observation_size not in (observation_size, solo):
        raise ValueError(
            f"init: {path!r} saw observations of {saved.observation_size} values: neither this run's "
            f"({observation_size}) nor one game's of the {config.rules!r} rules ({solo}); a model trained at a "
            "table starts runs at a table of the same size"
            + outdated_table_view(R.get_rules(config.rules), saved.observation_size)
        )
    return saved


def warm_start(model, config: TrainConfig) -> None:
    """Loads ``config.init``'s weights into the new run's ``model`` as the module docstring says.

    Raises:
        ValueError: see :func:`describe_init`; also parameters that fit neither as they are nor by the column
            mapping (a file that lies about its network).
    """
    import torch

    from yacht_agents.ppo import build_model, resolve_model

    observation_size = model.observation_space.shape[0]
    saved = describe_init(config, observation_size, model.action_space.n)
    path = resolve_model(config.init)
    source = build_model(path, device="cpu").policy.state_dict()
    target = model.policy.state_dict()
    if set(source) != set(target):
        raise ValueError(f"init: {os.fspath(path)!r} has other parameters than this run's network")
    old, new = saved.observation_size, observation_size
    state = {}
    for name, value in target.items():
        weights = source[name]
        if weights.shape == value.shape:
            state[name] = weights.clone()
        elif (
            weights.ndim == 2 and weights.shape[0] == value.shape[0] and value.shape[1] - weights.shape[1] == new - old
        ):
            # A first layer: [own observation | extras] -> [own observation | the rest of the table | extras].
            mapped = torch.zeros_like(value)
            mapped[:, :old] = weights[:, :old]
            mapped[:, new:] = weights[:, old:]
            state[name] = mapped
        else:
            raise ValueError(
                f"init: {os.fspath(path)!r}'s {name} has shape {tuple(weights.shape)}, this run's network "
                f"{tuple(value.shape)}"
            )
    for name in ("value_net.weight", "value_net.bias"):  # the critic's output: its scale was the old reward's
        state[name] = torch.zeros_like(target[name])
    model.policy.load_state_dict(state, strict=True)
