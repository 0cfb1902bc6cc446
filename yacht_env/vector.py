"""``YachtVectorEnv``: N games of Yacht stepped at once with array operations on the rules core's tables.

Semantics are those of :class:`yacht_env.YachtEnv` in every respect (observation layout, action encoding,
legality, illegal-action policy, rewards, dice streams); ``tests/test_vector.py`` proves step-by-step
agreement with N single envs. There is no per-game Python loop in :meth:`YachtVectorEnv.step`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.env import DICE_STREAM_SHAPE, check_env_options, dice_stream_codes

_STREAM_ROWS = R.NUM_CATEGORIES * R.ROLLS_PER_TURN  # a game's dice stream, flattened to (36, 5)
_AUTORESET_MODES = {
    AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP,
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
}
_INFO_KEYS = ("dice", "rolls_left", "scores", "total", "action_mask", "illegal_action")


class YachtVectorEnv(VectorEnv):
    """N independent solo games of Yacht as one ``gymnasium.vector.VectorEnv``.

    ``gymnasium.make_vec("Yacht-v0", num_envs=N, vectorization_mode="vector_entry_point", rules=...)``
    returns one. Every argument of :class:`yacht_env.YachtEnv` is accepted (except ``render_mode``
    ``"human"``), plus:

    Args:
        num_envs: Number of games stepped together.
        autoreset_mode: ``"next_step"`` (Gymnasium's default) or ``"same_step"``.

            * ``next_step``: the step that ends a game returns its final observation; the next step
              ignores that game's action, starts a new game and returns its first observation with
              reward 0 and ``terminated = truncated = False``. While a game waits for that reset its
              action mask is all zeros.
            * ``same_step``: the step that ends a game already returns the new game's first
              observation; the final one is in ``info["final_obs"]`` (an ``(N, 64)`` array, valid
              where ``info["_final_obs"]``), its final total in ``info["final_total"]``.

    Batched ``info`` (every key paired with an all-True ``"_key"`` mask, as Gymnasium's vector envs do):
    ``"dice"`` int8 (N, 5) sorted, ``"rolls_left"`` (N,), ``"scores"`` int16 (N, 12) with -1 for open
    categories, ``"total"`` (N,), ``"action_mask"`` int8 (N, 44), ``"illegal_action"`` bool (N,).

    Seeding: ``reset(seed=s)`` draws every game's ``(12, 3, 5)`` dice stream from the env's
    ``np_random``, so the whole batch is reproducible, and so are the games started by autoreset.
    ``reset(options={"dice_stream": S})`` with ``S`` of shape ``(N, 12, 3, 5)`` plays given streams.
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
    ) -> None:
        if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        check_env_options(observation_type, illegal_action, illegal_action_penalty, max_illegal_actions)
        if autoreset_mode not in _AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be 'next_step' or 'same_step', got {autoreset_mode!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None for the vector env, got {render_mode!r}")
        self.num_envs = num_envs
        self.rules = R.get_rules(rules)
        self.observation_type = observation_type
        self.canonical_keeps = bool(canonical_keeps)
        self.illegal_action = illegal_action
        self.illegal_action_penalty = float(illegal_action_penalty)
        self.max_illegal_actions = max_illegal_actions
        self.autoreset_mode = _AUTORESET_MODES[autoreset_mode]
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = render_mode

        self._encoder = ObservationEncoder(self.rules)
        self._score = R.score_table(self.rules)
        self.single_action_space = spaces.Discrete(R.NUM_ACTIONS)
        self.action_space = spaces.MultiDiscrete(np.full(num_envs, R.NUM_ACTIONS))
        self.single_observation_space = (
            self._encoder.flat_space if observation_type == "flat" else self._encoder.dict_space
        )
        self.observation_space = batch_space(self.single_observation_space, num_envs)

        n = num_envs
        self._index = np.arange(n)
        self._codes = np.zeros((n, _STREAM_ROWS, R.NUM_DICE + 1), dtype=np.int32)  # rules.prefix_codes
        self._roll = np.zeros(n, dtype=np.intp)
        self._rolls_left = np.zeros(n, dtype=np.intp)
        self._open = np.zeros(n, dtype=np.intp)
        self._turn = np.zeros(n, dtype=np.intp)
        self._sheet = np.full((n, R.NUM_CATEGORIES), -1, dtype=np.int16)
        self._total = np.zeros(n, dtype=np.int32)
        self._illegal_count = np.zeros(n, dtype=np.int32)
        self._awaiting_reset = np.zeros(n, dtype=bool)
        self._was_reset = False
        self._mask = np.zeros((n, R.NUM_ACTIONS), dtype=bool)
        self._all_true = np.ones(n, dtype=bool)
        self._all_true.flags.writeable = False

    # ---------------------------------------------------------------------------------------------
    @property
    def roll(self) -> np.ndarray:
        """Each game's sorted-roll index (a row of ``yacht_env.rules.ROLLS``); a read-only copy."""
        return self._roll.copy()

    @property
    def rolls_left(self) -> np.ndarray:
        """Each game's re-rolls left this turn (0..2); a copy."""
        return self._rolls_left.copy()

    @property
    def open_mask(self) -> np.ndarray:
        """Each game's 12-bit mask of open categories; a copy."""
        return self._open.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._start_games(self._index, dice_stream_codes(options, (self.num_envs,)))
        self._awaiting_reset[:] = False
        self._was_reset = True
        return self._get_obs(), self._get_info(np.zeros(self.num_envs, dtype=bool))

    def step(self, actions):
        if not self._was_reset:
            raise ValueError("call reset() before step()")
        actions = self._check_actions(actions)
        n = self.num_envs
        roll, rolls_left, open_mask, turn = self._roll, self._rolls_left, self._open, self._turn
        waiting = self._awaiting_reset
        legal = self._mask[self._index, actions]
        illegal = ~legal & ~waiting
        if self.illegal_action == "raise" and illegal.any():
            i = int(np.flatnonzero(illegal)[0])
            reason = R.describe_illegal(int(actions[i]), int(roll[i]), int(rolls_left[i]))
            raise ValueError(f"env {i}: {reason}")

        keep = legal & (actions < R.PICK_OFFSET)
        pick = legal ^ keep
        # Keeps: re-roll from the next row of each game's dice stream (the row index is clipped where
        # nothing is kept, whose result is discarded below).
        row = np.minimum(turn * R.ROLLS_PER_TURN + (R.ROLLS_PER_TURN - rolls_left), _STREAM_ROWS - 1)
        rerolled = R.reroll(roll, actions & R.KEEP_ALL, self._codes[self._index, row])
        # Picks: score, close the category, move to the next turn's automatic first roll.
        category = np.maximum(actions - R.PICK_OFFSET, 0)
        points = self._score[roll, category] * pick
        new_open = open_mask & ~(pick.astype(np.intp) << category)
        finished = pick & (new_open == 0)
        next_turn = pick & ~finished
        turn += next_turn
        first_roll = R.roll_from_code(
            self._codes[self._index, np.minimum(turn, R.NUM_CATEGORIES - 1) * R.ROLLS_PER_TURN, R.NUM_DICE]
        )

        self._roll = np.where(keep, rerolled, np.where(next_turn, first_roll, roll))
        self._rolls_left = np.where(next_turn, R.MAX_ROLLS_LEFT, rolls_left - keep) * ~finished
        self._open = new_open
        picked = np.flatnonzero(pick)
        self._sheet.reshape(-1)[picked * R.NUM_CATEGORIES + category[picked]] = points[picked]
        self._total += points

        rewards = points.astype(np.float64)
        if illegal.any():
            rewards[illegal] = self.illegal_action_penalty
            self._illegal_count += illegal
        terminated = finished
        if self.max_illegal_actions is None:
            truncated = np.zeros(n, dtype=bool)
        else:
            truncated = illegal & (self._illegal_count >= self.max_illegal_actions)
        done = terminated | truncated

        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            if waiting.any():
                self._start_games(np.flatnonzero(waiting))
            self._awaiting_reset = done
            obs = self._get_obs()
            info = self._get_info(illegal)
        else:
            info_extra = {}
            if done.any():
                final_obs = self._get_obs()
                info_extra = {
                    "final_obs": final_obs,
                    "_final_obs": done,
                    "final_total": self._total.copy(),
                    "_final_total": done,
                }
                self._start_games(np.flatnonzero(done))
            obs = self._get_obs()
            info = self._get_info(illegal)
            info.update(info_extra)
        return obs, rewards, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game now, bool of shape (N, 44)."""
        return self._mask.copy()

    def render(self) -> tuple[str, ...] | None:
        """With ``render_mode="ansi"``, one score-sheet line per game."""
        if self.render_mode is None:
            return None
        lines = []
        for i in range(self.num_envs):
            dice = " ".join(str(v) for v in R.ROLL_TUPLES[self._roll[i]])
            lines.append(f"game {i}: dice {dice}  rolls left {self._rolls_left[i]}  total {self._total[i]}")
        return tuple(lines)

    # ---------------------------------------------------------------------------------------------
    def _check_actions(self, actions) -> np.ndarray:
        array = np.asarray(actions)
        if array.shape != (self.num_envs,) or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"actions must be an int array of shape ({self.num_envs},), got {array.dtype} {array.shape}"
            )
        if array.size and (array.min() < 0 or array.max() >= R.NUM_ACTIONS):
            raise ValueError(f"actions must be in 0..{R.NUM_ACTIONS - 1}, got values {array.min()}..{array.max()}")
        return array.astype(np.intp, copy=False)

    def _start_games(self, games: np.ndarray, codes: np.ndarray | None = None) -> None:
        """Starts new games at the given indices, on given dice (as prefix codes) or drawn ones."""
        if codes is None:
            codes = R.draw_prefix_codes(self.np_random, (len(games), _STREAM_ROWS))
        self._codes[games] = codes
        self._roll[games] = R.roll_from_code(self._codes[games, 0, R.NUM_DICE])
        self._rolls_left[games] = R.MAX_ROLLS_LEFT
        self._open[games] = R.ALL_OPEN
        self._turn[games] = 0
        self._sheet[games] = -1
        self._total[games] = 0
        self._illegal_count[games] = 0

    def _get_obs(self):
        if self.observation_type == "flat":
            return self._encoder.flat(self._roll, self._rolls_left, self._open)
        return self._encoder.structured(self._roll, self._rolls_left, self._open)

    def _get_info(self, illegal: np.ndarray) -> dict[str, Any]:
        self._mask = R.legal_action_mask(self._roll, self._rolls_left, self._open, self.canonical_keeps)  # a new array
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._mask[self._awaiting_reset] = False
        info = {
            "dice": R.ROLLS[self._roll],
            "rolls_left": self._rolls_left.copy(),
            "scores": self._sheet.copy(),
            "total": self._total.copy(),
            "action_mask": self._mask.astype(np.int8),  # a copy: legality is read from self._mask
            "illegal_action": illegal,
        }
        for key in _INFO_KEYS:
            info["_" + key] = self._all_true
        return info


def game_streams(seed: int, games: np.ndarray | range) -> np.ndarray:
    """The ``(len(games), 12, 3, 5)`` dice streams of the given game indices under ``seed``.

    Game ``g``'s stream depends only on ``(seed, g)``, never on how many games are played or in which
    batch, so every policy evaluated with the same seed meets the same dice as far as its choices allow.
    """
    games = np.asarray(games, dtype=np.int64)
    streams = np.empty((len(games), *DICE_STREAM_SHAPE), dtype=np.int8)
    for i, g in enumerate(games):
        rng = np.random.Generator(np.random.PCG64([int(seed), int(g)]))
        streams[i] = rng.integers(1, R.NUM_FACES + 1, size=DICE_STREAM_SHAPE, dtype=np.int8)
    return streams
