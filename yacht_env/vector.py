"""``YachtVectorEnv``: N games of Yacht stepped at once with array operations on the rules core's tables.

Semantics are those of :class:`yacht_env.YachtEnv` in every respect (observation layout, action encoding,
legality, illegal-action policy, rewards, dice streams); ``tests/test_vector.py`` proves step-by-step
agreement with N single envs. There is no per-game Python loop in :meth:`YachtVectorEnv.step`.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from yacht_env import rules as R
from yacht_env.env import ILLEGAL_ACTION_HINT, checked_render_mode, configure
from yacht_env.game import GameState, draw_stream, game_streams, parse_dice_stream
from yacht_env.rules import is_int

_AUTORESET_MODES = {
    AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED: AutoresetMode.DISABLED,
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}
_INFO_KEYS = ("dice", "rolls_left", "scores", "total", "action_mask", "illegal_action", "illegal_actions")
__all__ = ["YachtVectorEnv", "game_streams"]  # game_streams lives in yacht_env.game; kept importable here


class YachtVectorEnv(VectorEnv):
    """N independent solo games of Yacht as one ``gymnasium.vector.VectorEnv``.

    ``gymnasium.make_vec("Yacht-v0", num_envs=N)`` returns one (Gymnasium's default vectorization for
    Yacht-v0 is this ``vector_entry_point``). Every argument of :class:`yacht_env.YachtEnv` is accepted
    (``render_mode`` only ``"ansi"``), plus:

    Args:
        num_envs: Number of games stepped together.
        autoreset_mode: ``"next_step"`` (Gymnasium's default), ``"same_step"`` or ``"disabled"``.

            * ``next_step``: the step that ends a game returns its final observation; the next step
              ignores that game's action, starts a new game and returns its first observation with
              reward 0 and ``terminated = truncated = False``.
            * ``same_step``: the step that ends a game already returns the new game's first
              observation; the final one is in ``info["final_obs"]`` (an ``(N, obs size)`` array, valid
              where ``info["_final_obs"]``), its final total in ``info["final_total"]``.
            * ``disabled`` (TorchRL's way): a finished game stays finished until
              ``reset(options={"reset_mask": done})`` starts new games where ``done`` (bool ``(N,)``) is
              True; stepping a finished game raises ``ValueError``.

            A game that waits for its reset (``next_step``, ``disabled``) shows an all-True action mask,
            as pgx does at terminal states, so a masked policy never meets an empty row; its action is
            ignored.

    Batched ``info`` (every key paired with an all-True ``"_key"`` mask, as Gymnasium's vector envs do),
    the single env's keys and types with a leading axis of N: ``"dice"`` int8 (N, 5) sorted,
    ``"rolls_left"`` (N,), ``"scores"`` int16 (N, 12) with -1 for open categories, ``"total"`` (N,),
    ``"action_mask"`` int8 (N, 44), ``"illegal_action"`` bool (N,), ``"illegal_actions"`` (N,).

    Seeding: ``reset(seed=s)`` draws every game's ``(12, 3, 5)`` dice stream from the env's
    ``np_random``, so the whole batch is reproducible, and so are the games started by autoreset.
    ``reset(options={"dice_stream": S})`` with ``S`` of shape ``(N, 12, 3, 5)`` plays given streams
    (with ``reset_mask``, only the masked rows of ``S`` are dealt).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi"]}

    def __init__(
        self,
        num_envs: int,
        rules: str | R.Rules = "standard",
        observation_type: str = "flat",
        canonical_keeps: bool = True,
        illegal_action: str = "ignore",
        illegal_action_penalty: float = 0.0,
        max_illegal_actions: int | None = 100,
        autoreset_mode: str | AutoresetMode = "next_step",
        render_mode: str | None = None,
        action_mask_dtype: str = "int8",
    ) -> None:
        if not is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if not isinstance(autoreset_mode, (str, AutoresetMode)) or autoreset_mode not in _AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be 'next_step', 'same_step' or 'disabled', got {autoreset_mode!r}")
        configure(
            self,
            rules,
            observation_type,
            action_mask_dtype,
            canonical_keeps,
            illegal_action,
            illegal_action_penalty,
            max_illegal_actions,
        )
        self.num_envs = num_envs = int(num_envs)
        self.autoreset_mode = _AUTORESET_MODES[autoreset_mode]
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = checked_render_mode(render_mode, self.metadata["render_modes"])

        self.single_action_space = spaces.Discrete(self.rules.num_actions)
        self.action_space = spaces.MultiDiscrete(np.full(num_envs, self.rules.num_actions))
        self.single_observation_space = self._encoder.space(observation_type, self.action_mask_dtype)
        self.observation_space = batch_space(self.single_observation_space, num_envs)

        self._game = GameState(self.rules, num_envs, self.canonical_keeps)  # the N games: the rules' state
        self._index = np.arange(num_envs)
        self._illegal_count = np.zeros(num_envs, dtype=np.int32)
        self._awaiting_reset = np.zeros(num_envs, dtype=bool)
        self._warned_illegal = False
        self._was_reset = False
        self._mask = np.zeros((num_envs, self.rules.num_actions), dtype=bool)
        self._all_true = np.ones(num_envs, dtype=bool)
        self._all_true.flags.writeable = False

    # ---------------------------------------------------------------------------------------------
    @property
    def roll(self) -> np.ndarray:
        """Each game's sorted-roll index (a row of ``yacht_env.rules.ROLLS``); a copy."""
        return self._game.roll.copy()

    @property
    def rolls_left(self) -> np.ndarray:
        """Each game's re-rolls left this turn (0..2); a copy."""
        return self._game.rolls_left.copy()

    @property
    def open_mask(self) -> np.ndarray:
        """Each game's mask of open categories (bit ``k``: category ``k``); a copy."""
        return self._game.open_mask.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts new games: all of them, or with ``options={"reset_mask": m}`` those where ``m`` is True.

        ``seed`` reseeds the env's generator first. ``options["dice_stream"]`` (``(N, 12, 3, 5)``) deals given
        dice instead of drawn ones. Returns the observations and info of every game.
        """
        super().reset(seed=seed)
        options = dict(options) if isinstance(options, dict) else options
        games = self._index
        if isinstance(options, dict) and "reset_mask" in options:
            games = np.flatnonzero(self._check_reset_mask(options.pop("reset_mask")))
            if not self._was_reset:
                raise ValueError("the first reset() starts every game; reset_mask is for later resets")
        stream = parse_dice_stream(options, self.rules, (self.num_envs,))
        if stream is None:
            stream = draw_stream(self.np_random, self.rules, len(games))
        else:
            stream = stream[games]
        self._game.start(stream, games)
        self._illegal_count[games] = 0
        self._awaiting_reset[games] = False
        self._was_reset = True
        return self._get_obs(), self._get_info(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions):
        if not self._was_reset:
            raise ValueError("call reset() before step()")
        actions = self._check_actions(actions)
        game, waiting = self._game, self._awaiting_reset
        if self.autoreset_mode == AutoresetMode.DISABLED and waiting.any():
            i = int(np.flatnonzero(waiting)[0])
            raise ValueError(
                f"env {i}: its game is over and autoreset_mode='disabled'; start it with "
                "reset(options={'reset_mask': done}) before step()"
            )
        shown = self._mask[self._index, actions]  # the masks the games were shown with
        legal = shown & ~waiting  # a waiting game's mask is all True, and its action is ignored
        illegal = ~shown
        if self.illegal_action == "raise" and illegal.any():
            i = int(np.flatnonzero(illegal)[0])
            reason = self._describe_illegal(i, actions)
            raise ValueError(f"env {i}: {reason}")

        points, terminated = game.play(actions, legal)
        rewards = points.astype(np.float64)
        if illegal.any():
            rewards[illegal] = self.illegal_action_penalty
            self._illegal_count += illegal
            if not self._warned_illegal:
                self._warned_illegal = True
                i = int(np.flatnonzero(illegal)[0])
                reason = self._describe_illegal(i, actions)  # an ignored action left the game as it was
                gym.logger.warn(f"{ILLEGAL_ACTION_HINT} (the first: env {i}, {reason})")
        if self.max_illegal_actions is None:
            truncated = np.zeros(self.num_envs, dtype=bool)
        else:
            truncated = illegal & (self._illegal_count >= self.max_illegal_actions)
        done = terminated | truncated

        if self.autoreset_mode == AutoresetMode.DISABLED:
            self._awaiting_reset = done
            return self._get_obs(), rewards, terminated, truncated, self._get_info(illegal)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            if waiting.any():
                self._start_games(np.flatnonzero(waiting))
            self._awaiting_reset = done
            return self._get_obs(), rewards, terminated, truncated, self._get_info(illegal)
        final = {}
        if done.any():
            final = {
                "final_obs": self._get_obs(),
                "_final_obs": done,
                "final_total": game.total.copy(),
                "_final_total": done,
            }
            self._start_games(np.flatnonzero(done))
        info = self._get_info(illegal)
        info.update(final)
        return self._get_obs(), rewards, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game now, bool of shape ``(N, num_actions)``; a copy."""
        return self._mask.copy()

    def render(self) -> tuple[str, ...] | None:
        """With ``render_mode="ansi"``, one score-sheet line per game."""
        if self.render_mode is None:
            return None
        game = self._game
        lines = []
        for i in range(self.num_envs):
            dice = " ".join(str(v) for v in R.ROLL_TUPLES[game.roll[i]])
            lines.append(f"game {i}: dice {dice}  rolls left {game.rolls_left[i]}  total {game.total[i]}")
        return tuple(lines)

    # ---------------------------------------------------------------------------------------------
    def _check_actions(self, actions) -> np.ndarray:
        array = np.asarray(actions)
        if array.shape != (self.num_envs,) or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"actions must be an int array of shape ({self.num_envs},), got {array.dtype} {array.shape}"
            )
        if array.size and (array.min() < 0 or array.max() >= self.rules.num_actions):
            raise ValueError(
                f"actions must be in 0..{self.rules.num_actions - 1}, got values {array.min()}..{array.max()}"
            )
        return array.astype(np.intp, copy=False)

    def _start_games(self, games: np.ndarray) -> None:
        """Starts new games at the given indices on dice drawn from the env's generator (autoreset)."""
        self._game.start(draw_stream(self.np_random, self.rules, len(games)), games)
        self._illegal_count[games] = 0

    def _describe_illegal(self, i: int, actions: np.ndarray) -> str:
        game = self._game
        return R.describe_illegal(int(actions[i]), int(game.roll[i]), int(game.rolls_left[i]), self.rules.categories)

    def _check_reset_mask(self, reset_mask: object) -> np.ndarray:
        if not (
            isinstance(reset_mask, np.ndarray) and reset_mask.dtype == np.bool_ and reset_mask.shape == (self.num_envs,)
        ):
            raise ValueError(f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)")
        if not reset_mask.any():
            raise ValueError("options['reset_mask'] must have at least one True value")
        return reset_mask

    def _get_obs(self):
        if self.observation_type == "masked":
            dtype = np.bool_ if self.action_mask_dtype == "bool" else np.int8
            return self._encoder.observe(self._game, "masked", self._current_mask().astype(dtype))
        return self._encoder.observe(self._game, self.observation_type)

    def _current_mask(self) -> np.ndarray:
        """The masks the games show now: the state's, all True for a game waiting for its reset."""
        mask = self._game.mask
        if self._awaiting_reset.any():  # all True, never an empty row (the action is ignored)
            mask = mask.copy()
            mask[self._awaiting_reset] = True
        return mask

    def _get_info(self, illegal: np.ndarray) -> dict[str, Any]:
        game = self._game
        self._mask = self._current_mask()  # the legality the next step reads: the masks shown with this step
        info = {
            "dice": R.ROLLS[game.roll],
            "rolls_left": game.rolls_left.copy(),
            "scores": game.sheet.copy(),
            "total": game.total.copy(),
            "action_mask": self._mask.astype(np.int8),  # a copy: legality is read from self._mask
            "illegal_action": illegal,
            "illegal_actions": self._illegal_count.copy(),
        }
        for key in _INFO_KEYS:
            info["_" + key] = self._all_true
        return info
