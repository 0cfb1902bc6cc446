"""``YachtSB3VecEnv``: the native vector env as a Stable-Baselines3 ``VecEnv``.

``MaskablePPO("MlpPolicy", YachtSB3VecEnv(64))`` trains on it directly: sb3-contrib asks a VecEnv for
its masks with ``env_method("action_masks")``, which this adapter answers with one ``(N, 44)`` array.
Episodes reset in the same step (SB3's convention): a finished game's last observation is in
``infos[i]["terminal_observation"]``, its score in ``infos[i]["score"]`` and its return and length in
``infos[i]["episode"]`` (as SB3's ``Monitor`` writes them, so ``ep_rew_mean`` is logged without a
wrapper; the return equals the score unless illegal actions were penalised), and how many illegal actions
the episode had in ``infos[i]["illegal_actions"]``.

Needs the ``train`` extra (stable-baselines3); the rest of ``yacht_env`` does not.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from yacht_env.game import parse_dice_stream
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusVectorEnv


class YachtSB3VecEnv(VecEnv):
    """N games of Yacht as a Stable-Baselines3 ``VecEnv``, stepped by :class:`~yacht_env.vector.YachtVectorEnv`.

    ## Description
    ``MaskablePPO("MlpPolicy", YachtSB3VecEnv(64))`` trains on it directly, no wrapper code: sb3-contrib
    asks a VecEnv for its masks with ``env_method("action_masks")``, which this adapter answers with one
    ``(N, 44)`` array. Needs the ``train`` extra (stable-baselines3); the rest of ``yacht_env`` does not.
    With ``opponents`` it steps tables of ``YachtVersus-v0`` instead (what ``train.py --opponents`` trains).

    ## Observation
    ``Yacht-v0``'s flat observation, ``Box(0, 1, (64,), float32)`` per game (SB3's ``MlpPolicy`` wants
    it flat), batched by SB3 to ``(N, 64)``; with ``opponents``, ``YachtVersus-v0``'s table view from the
    learner's seat (79 values for 2 players).

    ## Action mask
    ``env_method("action_masks")`` (what sb3-contrib's ``MaskablePPO`` calls) returns one ``(N, 44)``
    bool array.

    ## Actions
    ``Discrete(44)`` per game, ``Yacht-v0``'s encoding, checked by the vector env: floats, bools (as
    ``Yacht-v0`` refuses a bool action) and wrong shapes are one ``ValueError``.

    ## Rewards
    As ``Yacht-v0`` (or ``YachtVersus-v0`` with ``opponents``), per game.

    ## Episode End
    Episodes reset in the same step (SB3's convention): a finished game's last observation is in
    ``infos[i]["terminal_observation"]``, its score in ``infos[i]["score"]`` (with ``opponents``, the
    learner's final total) and its return and length in ``infos[i]["episode"]`` (as SB3's ``Monitor``
    writes them, so ``ep_rew_mean`` is logged without a wrapper; the return equals the score unless
    illegal actions were penalised), and how many illegal actions the episode had in
    ``infos[i]["illegal_actions"]``.

    ## Arguments
    ``YachtSB3VecEnv(num_envs, opponents=None, **env_kwargs)``:

    * ``num_envs``: number of games (or tables) stepped together.
    * ``opponents``: ``None`` for solo games (:class:`~yacht_env.vector.YachtVectorEnv`); a list of agents
      or specs for games against them (:class:`~yacht_env.versus.YachtVersusVectorEnv`, the learner in
      ``seat``).
    * ``pool`` (with ``players``, ``pool_weights``): instead of ``opponents``, tables whose opponents are drawn
      from a pool at each game's start (:class:`~yacht_env.versus.YachtVersusVectorEnv`; ``vector_env`` changes
      the pool between rollouts). A finished game's info then also holds ``"opponents"`` (the member at each
      opponent seat, in seat order), ``"totals"`` (every seat's final total) and ``"seat"`` (the learner's).
    * ``env_kwargs``: any other argument of those envs except ``observation_type`` (SB3's ``MlpPolicy``
      wants the flat observation), ``render_mode`` and ``autoreset_mode``.

    ## Version History
    * v0: initial release (yacht-rl 0.1.0), over ``Yacht-v0`` v0 (and ``YachtVersus-v0`` v0 with
      ``opponents``); its changes are those envs'.
    """

    def __init__(self, num_envs: int, opponents: list | tuple | None = None, **env_kwargs: Any) -> None:
        for name in ("observation_type", "render_mode", "autoreset_mode"):
            if name in env_kwargs:
                raise ValueError(f"{name} is fixed by the SB3 adapter and cannot be passed")
        self.versus = opponents is not None or env_kwargs.get("pool") is not None
        if not self.versus:
            self.vector_env = YachtVectorEnv(num_envs, autoreset_mode="same_step", **env_kwargs)
        else:
            self.vector_env = YachtVersusVectorEnv(num_envs, opponents, autoreset_mode="same_step", **env_kwargs)
        self._drawn = self.versus and self.vector_env.opponents is None  # opponents drawn from a pool
        self.render_mode = None
        super().__init__(num_envs, self.vector_env.single_observation_space, self.vector_env.single_action_space)
        self._actions = np.zeros(num_envs, dtype=np.intp)
        self._episode_return = np.zeros(num_envs, dtype=np.float64)
        self._episode_length = np.zeros(num_envs, dtype=np.int64)
        self._episode_illegal = np.zeros(num_envs, dtype=np.int64)
        self._episode_start = np.full(num_envs, time.time())

    def reset(self) -> np.ndarray:
        """Resets every game; uses the seed of :meth:`seed` and the options of :meth:`set_options`.

        The only option is ``dice_stream``: given for every env (each a ``(12, 3, 5)`` array), the
        games play those streams; given for some envs only, ``ValueError``.
        """
        options = None
        if any(self._options):
            if not all("dice_stream" in o for o in self._options) or any(
                set(o) - {"dice_stream"} for o in self._options
            ):
                raise ValueError("set_options accepts only 'dice_stream', given for every env")
            leading = (self.vector_env.num_players,) if self.versus else ()
            for o in self._options:  # each with its own shape: a ragged one is our ValueError, not numpy's
                parse_dice_stream(o, self.vector_env.rules, leading)
            options = {"dice_stream": np.stack([np.asarray(o["dice_stream"]) for o in self._options])}
        obs, _ = self.vector_env.reset(seed=self._seeds[0], options=options)
        self._reset_seeds()
        self._reset_options()
        self._episode_return[:] = 0.0
        self._episode_length[:] = 0
        self._episode_illegal[:] = 0
        self._episode_start[:] = time.time()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Keeps the actions for :meth:`step_wait` (SB3's ``VecEnv``)."""
        # Checked by the vector env in step_wait, by the same rules as every face of the env (an int array of
        # shape (N,)): a float, a bool or a wrong shape is an error, never silently cast.
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        """Steps every game with the kept actions (SB3's ``VecEnv``): observations, rewards, dones, infos."""
        obs, rewards, terminated, truncated, info = self.vector_env.step(self._actions)
        self._episode_return += rewards
        self._episode_length += 1
        self._episode_illegal += info["illegal_action"]
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            now = time.time()
            for i in np.flatnonzero(dones):
                infos[i] = {
                    "terminal_observation": info["final_obs"][i],
                    "TimeLimit.truncated": bool(truncated[i] and not terminated[i]),
                    "score": self._final_score(info, i),
                    "illegal_actions": int(self._episode_illegal[i]),
                    "episode": {
                        "r": float(self._episode_return[i]),
                        "l": int(self._episode_length[i]),
                        "t": round(now - self._episode_start[i], 6),
                    },
                }
                if self._drawn:  # whom the game was against, for a league's results
                    infos[i].update(
                        opponents=info["final_opponents"][i],
                        totals=info["final_totals"][i],
                        seat=int(info["final_seat"][i]),
                    )
            self._episode_return[dones] = 0.0
            self._episode_illegal[dones] = 0
            self._episode_length[dones] = 0
            self._episode_start[dones] = now
        return obs, rewards.astype(np.float32), dones, infos

    def _final_score(self, info: dict[str, Any], i: int) -> int:
        if not self.versus:
            return int(info["final_total"][i])
        return int(info["final_totals"][i, info["final_seat"][i]])

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game, bool (N, 44)."""
        return self.vector_env.action_masks()

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any] | np.ndarray:
        """Calls ``method_name`` on the vector env for the given indices (``action_masks`` answers per game)."""
        if method_name == "action_masks":
            # One (N, 44) array: np.stack (what sb3-contrib applies to the result) leaves it as it is.
            return self.action_masks()[self._indices(indices)]
        raise AttributeError(f"YachtSB3VecEnv has no per-env method {method_name!r}; only 'action_masks'")

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """An attribute of the vector env, once per game of ``indices``."""
        value = getattr(self.vector_env, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Refused: the attributes are fixed at construction (``AttributeError``)."""
        raise AttributeError(f"YachtSB3VecEnv attributes are fixed at construction; cannot set {attr_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """Per game, whether it counts as wrapped in ``wrapper_class``: so it does for ``Monitor``."""
        # The adapter writes Monitor's "episode" info itself, so SB3's evaluation helpers may rely on it.
        wrapped = issubclass(Monitor, wrapper_class)
        return [wrapped for _ in self._indices(indices)]

    def close(self) -> None:
        """Closes the vector env."""
        self.vector_env.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No images: ``None`` for every game."""
        return [None for _ in range(self.num_envs)]

    def _indices(self, indices: VecEnvIndices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int):
            return [indices]
        return list(indices) if isinstance(indices, Iterable) else [int(indices)]
