"""RLlib on the PettingZoo table: the env under RLlib's masking keys, masked multi-agent PPO, the game's metrics.

RLlib's ``PettingZooEnv`` takes the table as it is, but its default model has no encoder for a ``Dict``
observation, and its action-masking module (``ActionMaskingTorchRLModule`` in
``ray.rllib.examples.rl_modules.classes.action_masking_rlm``) reads the observation under ``"observations"``
and the mask under ``"action_mask"``. :class:`RLlibKeys` renames the one key; :func:`rllib_env` is the env
creator; :func:`ppo_config` is PPO with that module for every policy (one shared policy or one per seat);
:func:`log_table_metrics` logs each game's totals, wins and illegal actions. Everything else is RLlib's own.

Example:
    >>> from yacht_env.rllib import ppo_config
    >>> algo = ppo_config(num_players=2).build_algo()  # doctest: +SKIP
    >>> algo.train()["env_runners"]["episode_len_mean"]  # doctest: +SKIP

Needs the ``rllib`` extra (``ray[rllib]``, torch, PettingZoo); ``ray`` is imported only inside
:func:`rllib_env` and :func:`ppo_config`, so the wrapper and the callback import without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.wrappers import BaseWrapper

from yacht_env.multiplayer import env

if TYPE_CHECKING:  # only for the annotations: ray is imported where it is used
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

ENV_NAME = "yacht_v0"  # the name rllib_env is registered under (ray.tune.registry.register_env)
OBSERVATIONS = "observations"  # RLlib's key for the observation beside "action_mask"
SHARED_POLICY = "shared"


class RLlibKeys(BaseWrapper):
    """The table's observations under RLlib's masking keys: ``{"observations": ..., "action_mask": ...}``.

    The values and spaces are the env's own (``"observation"`` renamed, the int8 mask as it is); every other
    call goes to the wrapped env.
    """

    def __init__(self, aec) -> None:
        super().__init__(aec)
        space = aec.observation_space(aec.possible_agents[0])
        self._space = spaces.Dict({OBSERVATIONS: space["observation"], "action_mask": space["action_mask"]})

    def observation_space(self, agent: str) -> spaces.Dict:
        """The observation space of ``agent``: the PettingZoo env's, for RLlib."""
        return self._space

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s observation, for RLlib."""
        observation = self.env.observe(agent)
        return {OBSERVATIONS: observation["observation"], "action_mask": observation["action_mask"]}


def rllib_env(config: dict[str, Any] | None = None) -> PettingZooEnv:
    """The table as an RLlib ``MultiAgentEnv`` (RLlib's ``PettingZooEnv`` over :class:`RLlibKeys`).

    Args:
        config: ``yacht_env.multiplayer.env``'s arguments (``num_players``, ``rules``, ``reward``, ...): RLlib's
            ``env_config``.

    Returns:
        RLlib's ``PettingZooEnv``: each step returns the observation of the agent on turn (the same agent through
        its re-rolls), and every agent's last observation at the end.
    """
    _require_rllib()
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    return PettingZooEnv(RLlibKeys(env(**dict(config or {}))))


def ppo_config(num_players: int = 2, shared: bool = True, **env_kwargs: Any) -> PPOConfig:
    """RLlib's PPO (new API stack) on a table, each policy RLlib's action-masking module.

    Registers :func:`rllib_env` as ``"yacht_v0"``, maps the agents to one policy ``"shared"`` (``shared=True``)
    or each to its own (module ids ``player_0`` ..), gives every module ``ActionMaskingTorchRLModule`` (the
    logits of illegal actions are pushed to the float minimum, so they are never sampled), logs
    :func:`log_table_metrics` at the end of each game, and turns RLlib's env check off (it steps an unmasked
    random action: PettingZoo's ``api_test`` checks this env instead). Change the rest as for any ``PPOConfig``
    (``.training(...)``, ``.env_runners(...)``, ``.rl_module(model_config=...)``), then ``.build_algo()``.

    Args:
        num_players: players at the table (1 to 10).
        shared: one policy for every seat (parameter sharing), else one per seat.
        **env_kwargs: further arguments of ``yacht_env.multiplayer.env`` (``rules``, ``reward``, ...).

    Returns:
        An ordinary ``PPOConfig``.
    """
    _require_rllib()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule
    from ray.tune.registry import register_env

    register_env(ENV_NAME, rllib_env)
    module_ids = [SHARED_POLICY] if shared else [f"player_{p}" for p in range(num_players)]
    specs = {module_id: RLModuleSpec(module_class=ActionMaskingTorchRLModule) for module_id in module_ids}
    return (
        PPOConfig()
        # RLlib's env check steps one unmasked random action in the env it then trains on: the env's one warning
        # would go to it, and a real illegal action later would pass in silence (api_test checks this env).
        .environment(ENV_NAME, env_config={"num_players": num_players, **env_kwargs}, disable_env_checking=True)
        .multi_agent(policies=set(module_ids), policy_mapping_fn=shared_policy if shared else own_policy)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .callbacks(on_episode_end=log_table_metrics)
    )


def _require_rllib() -> None:
    """One clear error where RLlib cannot be imported (``ray[tune]`` alone lacks RLlib's ``dm_tree``, ...)."""
    try:
        import ray.rllib  # noqa: F401
    except ModuleNotFoundError as error:
        hint = f'yacht_env.rllib needs RLlib: pip install "yacht-rl[rllib]" (importing ray.rllib failed: {error})'
        raise ModuleNotFoundError(hint, name="ray.rllib") from error


def shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """RLlib's ``policy_mapping_fn`` for parameter sharing: every seat plays policy ``"shared"``."""
    return SHARED_POLICY


def own_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    """RLlib's ``policy_mapping_fn`` for one policy per seat: ``player_k`` plays policy ``player_k``."""
    return agent_id


def log_table_metrics(*, episode: Any, metrics_logger: Any, **kwargs: Any) -> None:
    """RLlib ``on_episode_end`` callback: each game's result and its illegal actions, from the env's last infos.

    Logs, under ``env_runners/yacht``: ``illegal_actions`` (summed over every game so far: 0 while the masks
    are honoured), and per agent ``total/<agent>`` and ``win/<agent>`` (its share of the win: 1 alone on the
    highest total, 1/k tied with k-1 others), averaged over the last 100 games of each env runner.
    """
    finals = {agent: single.get_infos(-1) for agent, single in episode.agent_episodes.items()}
    illegal = sum(int(info.get("illegal_actions", 0)) for info in finals.values())
    metrics_logger.log_value(("yacht", "illegal_actions"), illegal, reduce="lifetime_sum")
    for agent, info in finals.items():
        seat = int(agent.rsplit("_", 1)[1])
        metrics_logger.log_value(("yacht", "total", agent), int(info["totals"][seat]), reduce="mean", window=100)
        if info["winners"].any():  # all zeros when the game was truncated
            share = info["winners"][seat] / info["winners"].sum()
            metrics_logger.log_value(("yacht", "win", agent), float(share), reduce="mean", window=100)
