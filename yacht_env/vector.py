"""``YachtVectorEnv``: N games of Yacht stepped at once with array operations on the rules core's tables.

Semantics are those of :class:`yacht_env.YachtEnv` in every respect (observation layout, action encoding,
legality, illegal-action policy, rewards, dice streams); ``tests/test_vector.py`` proves step-by-step
agreement with N single envs. There is no per-game Python loop in :meth:`YachtVectorEnv.step`.

:class:`BatchedEnv` is what every batched Yacht env shares (this one and ``YachtVersusVectorEnv``): action
checks, the illegal-action policy and its warning, truncation, the three autoreset modes, ``reset_mask``,
masks and the batched info; a subclass only says how its games start, play, look and report.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from yacht_env import chance
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.env import ILLEGAL_ACTION_HINT, cannot_render, checked_render_mode, configure_from
from yacht_env.game import GameState, bonus_info, draw_stream, game_streams, parse_dice_stream
from yacht_env.rules import is_int

AUTORESET_MODES = {
    AutoresetMode.NEXT_STEP: AutoresetMode.NEXT_STEP,
    AutoresetMode.SAME_STEP: AutoresetMode.SAME_STEP,
    AutoresetMode.DISABLED: AutoresetMode.DISABLED,
    "next_step": AutoresetMode.NEXT_STEP,
    "same_step": AutoresetMode.SAME_STEP,
    "disabled": AutoresetMode.DISABLED,
}
__all__ = ["BatchedEnv", "YachtVectorEnv", "game_streams"]  # game_streams lives in yacht_env.game


class BatchedEnv(VectorEnv):
    """N Yacht games (or tables) as one ``gymnasium.vector.VectorEnv``: the API work every batched env shares.

    A subclass calls :meth:`_setup` in its ``__init__`` (after :func:`yacht_env.env.configure`) and implements
    the hooks: :meth:`_deal` (start games), :meth:`_play` (apply the legal actions), :meth:`_state_mask`,
    :meth:`_observe`, :meth:`_info`, :meth:`_final_info` and :meth:`_describe_illegal`.
    """

    def _setup(self, num_envs: int, autoreset_mode: str | AutoresetMode, render_mode: str | None) -> None:
        if not is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if not isinstance(autoreset_mode, (str, AutoresetMode)) or autoreset_mode not in AUTORESET_MODES:
            raise ValueError(f"autoreset_mode must be 'next_step', 'same_step' or 'disabled', got {autoreset_mode!r}")
        self.num_envs = n = int(num_envs)
        self.autoreset_mode = AUTORESET_MODES[autoreset_mode]
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = checked_render_mode(render_mode, self.metadata["render_modes"])
        self.single_action_space = spaces.Discrete(self.rules.num_actions)
        self.action_space = spaces.MultiDiscrete(np.full(n, self.rules.num_actions))
        self._index = np.arange(n)
        self._illegal_count = np.zeros(n, dtype=np.int64)
        self._awaiting_reset = np.zeros(n, dtype=bool)
        self._warned_illegal = False
        self._was_reset = False
        self._mask = np.zeros((n, self.rules.num_actions), dtype=bool)
        self._all_true = np.ones(n, dtype=bool)
        self._all_true.flags.writeable = False

    # ---------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Starts new games: all of them, or with ``options={"reset_mask": m}`` those where ``m`` is True.

        ``seed`` reseeds the env's generator first. ``options["dice_stream"]`` deals given dice instead of
        drawn ones (with ``reset_mask``, only the masked rows). Returns the observations and info of every game.
        """
        super().reset(seed=seed)
        options = dict(options) if isinstance(options, dict) else options
        games = self._index
        if isinstance(options, dict) and "reset_mask" in options:
            games = np.flatnonzero(self._check_reset_mask(options.pop("reset_mask")))
            if not self._was_reset:
                raise ValueError("the first reset() starts every game; reset_mask is for later resets")
        streams = self._parse_streams(options, seed)
        self._start(games, None if streams is None else streams[games])
        self._awaiting_reset[games] = False
        self._was_reset = True
        info = self._get_info(np.zeros(self.num_envs, dtype=bool))
        return self._get_obs(), info

    def step(self, actions):
        """Plays one action in every game (Gymnasium's ``VectorEnv.step``); see the class docstring."""
        if not self._was_reset:
            raise ValueError("call reset() before step()")
        actions = self._check_actions(actions)
        waiting = self._awaiting_reset
        if self.autoreset_mode == AutoresetMode.DISABLED and waiting.any():
            i = int(np.flatnonzero(waiting)[0])
            raise ValueError(
                f"env {i}: its game is over and autoreset_mode='disabled'; start it with "
                "reset(options={'reset_mask': done}) before step()"
            )
        shown = self._mask[self._index, actions]  # the masks the games were shown with
        legal = shown & ~waiting  # a waiting game's mask is all True, and its action is ignored
        illegal = ~shown
        if illegal.any():
            i = int(np.flatnonzero(illegal)[0])
            if self.illegal_action == "raise":
                raise ValueError(f"env {i}: {self._describe_illegal(i, int(actions[i]))}")
            if not self._warned_illegal:
                self._warned_illegal = True
                gym.logger.warn(
                    f"{ILLEGAL_ACTION_HINT} (the first: env {i}, {self._describe_illegal(i, int(actions[i]))})"
                )

        rewards, terminated = self._play(actions, legal)
        terminated = terminated & ~waiting
        if illegal.any():
            rewards[illegal] = self.illegal_action_penalty
            self._illegal_count += illegal
        if self.max_illegal_actions is None:
            truncated = np.zeros(self.num_envs, dtype=bool)
        else:
            truncated = illegal & (self._illegal_count >= self.max_illegal_actions) & ~terminated
        done = terminated | truncated

        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            if self.autoreset_mode == AutoresetMode.NEXT_STEP and waiting.any():
                self._start(np.flatnonzero(waiting))
            self._awaiting_reset = done
            info = self._get_info(illegal)
            return self._get_obs(), rewards, terminated, truncated, info
        final = {}
        if done.any():
            final = {"final_obs": self._get_obs(), **self._final_info()}
            final.update({"_" + key: done for key in list(final)})
            self._start(np.flatnonzero(done))
        info = self._get_info(illegal)
        info.update(final)
        return self._get_obs(), rewards, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game now, bool of shape ``(N, num_actions)``; a copy."""
        return self._mask.copy()

    # ---------------------------------------------------------------------------------------------
    def _start(self, games: np.ndarray, streams: np.ndarray | None = None) -> None:
        self._deal(games, streams)
        self._illegal_count[games] = 0

    def _check_actions(self, actions) -> np.ndarray:
        if isinstance(actions, (list, tuple)) and any(
            isinstance(a, (bool, np.bool_)) or getattr(a, "dtype", None) == np.bool_ for a in actions
        ):  # numpy would read [True, 32] as ints; a bool is no action, as in Yacht-v0 (an array is checked below)
            raise ValueError(f"actions must be ints, not bools; got {actions!r}"[:200])
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

    def _check_reset_mask(self, reset_mask: object) -> np.ndarray:
        if not (
            isinstance(reset_mask, np.ndarray) and reset_mask.dtype == np.bool_ and reset_mask.shape == (self.num_envs,)
        ):
            raise ValueError(f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)")
        if not reset_mask.any():
            raise ValueError("options['reset_mask'] must have at least one True value")
        return reset_mask

    def _current_mask(self) -> np.ndarray:
        """The masks the games show now: the state's, all True for a game waiting for its reset."""
        mask = self._state_mask()
        if self._awaiting_reset.any():  # all True, never an empty row (the action is ignored)
            mask = mask.copy()
            mask[self._awaiting_reset] = True
        return mask

    def _get_obs(self):
        if self.observation_type != "masked":
            return self._observe()
        dtype = np.bool_ if self.action_mask_dtype == "bool" else np.int8
        return {"observation": self._observe(), "action_mask": self._current_mask().astype(dtype)}

    def _get_info(self, illegal: np.ndarray) -> dict[str, Any]:
        self._mask = self._current_mask()  # the legality the next step reads: the masks shown with this step
        info = {
            **self._info(),
            "action_mask": self._mask.astype(np.int8),  # a copy: legality is read from self._mask
            "illegal_action": illegal,
            "illegal_actions": self._illegal_count.copy(),
        }
        info.update({"_" + key: self._all_true for key in list(info)})
        return info

    # The hooks --------------------------------------------------------------------------------------
    def _parse_streams(self, options: dict[str, Any] | None, seed: int | None) -> np.ndarray | None:
        """The dice streams of ``options`` for every game (prefix codes), or ``None`` to draw them."""
        raise NotImplementedError

    def _deal(self, games: np.ndarray, streams: np.ndarray | None) -> None:
        """Starts new games at ``games`` on ``streams`` (or on dice drawn from ``np_random``)."""
        raise NotImplementedError

    def _play(self, actions: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Applies the legal actions; returns float64 rewards and which games ended."""
        raise NotImplementedError

    def _state_mask(self) -> np.ndarray:
        """Every game's legal actions (all True where the game is over); callers do not write to it."""
        raise NotImplementedError

    def _observe(self) -> np.ndarray | dict[str, np.ndarray]:
        """The observations of every game, without the mask."""
        raise NotImplementedError

    def _info(self) -> dict[str, np.ndarray]:
        """The env's own batched info keys."""
        raise NotImplementedError

    def _final_info(self) -> dict[str, np.ndarray]:
        """What ``same_step`` autoreset reports of the games that just ended, besides ``final_obs``."""
        raise NotImplementedError

    def _describe_illegal(self, i: int, action: int) -> str:
        raise NotImplementedError


class YachtVectorEnv(BatchedEnv):
    """N independent solo games of Yacht as one ``gymnasium.vector.VectorEnv``, with no per-game Python loop.

    ## Description
    ``gymnasium.make_vec("Yacht-v0", num_envs=N, vectorization_mode="vector_entry_point", rules=...)`` (also
    the default vectorization of ``make_vec`` for ``Yacht-v0``) returns a ``YachtVectorEnv``: N games
    stepped with array operations on the rules core's tables. Same semantics as ``Yacht-v0`` in every
    respect (a test plays N single envs beside it step by step). Gymnasium's own ``SyncVectorEnv`` and
    ``AsyncVectorEnv`` over ``YachtEnv`` work too (``make_vec(..., vectorization_mode="sync")``), at a
    fraction of the native env's speed. Every preset's id (``Yahtzee-v0``, ``Yatzy-v0``, ...: the table on the
    ``Yacht-v0`` page) builds this env on its rules the same way.

    ## Observation
    ``Yacht-v0``'s observation with a leading axis of N: ``Box(0, 1, (N, 64), float32)`` for
    ``observation_type="flat"`` (the layout is on the ``Yacht-v0`` page), and the ``"dict"`` and
    ``"masked"`` types batched the same way.

    ## Action mask
    ``envs.action_masks()`` gives ``(N, 44)`` bool; ``info["action_mask"]`` is int8 ``(N, 44)``. A game
    that waits for its reset (``next_step``, ``disabled``) shows an all-True action mask row, as pgx does
    at terminal states, so a masked policy (``Categorical(logits=masked)``) never meets an empty row; its
    action is ignored.

    ## Actions
    ``MultiDiscrete([44] * N)``: one ``Yacht-v0`` action per game, an int array of shape ``(N,)`` (or a
    list of ints). Anything else is one ``ValueError``: floats, a wrong shape, values outside ``0..43``, and
    bools (a bool array, or a bool in a list such as ``[True, 32]``), as ``Yacht-v0`` refuses a bool action.

    ## Rewards
    As ``Yacht-v0``, per game: the points of a pick, 0 for a keep, ``illegal_action_penalty`` for an
    ignored illegal action; 0 on a ``next_step`` reset step.

    ## Autoreset
    ``autoreset_mode=``:

    * ``"next_step"`` (Gymnasium's default): the step that ends a game returns its final observation; the
      next step ignores that game's action, starts a new game and returns its first observation with
      reward 0 and ``terminated = truncated = False``.
    * ``"same_step"``: the step that ends a game already returns the new game's first observation; the
      final one is in ``info["final_obs"]`` (an ``(N, obs size)`` array, valid where
      ``info["_final_obs"]``), its final total in ``info["final_total"]``.
    * ``"disabled"`` (TorchRL's way): a finished game stays finished until
      ``reset(options={"reset_mask": done})`` starts new games where ``done`` (bool ``(N,)``) is True;
      stepping a finished game raises ``ValueError``.

    ## Information
    Batched ``info`` (every key paired with an all-True ``"_key"`` mask, as Gymnasium's vector envs do),
    the single env's keys and dtypes with a leading axis of N (the dtypes Gymnasium's sync and async vector
    envs give over ``Yacht-v0``): ``"dice"`` int8 (N, 5) sorted, ``"rolls_left"`` int64 (N,), ``"scores"``
    int16 (N, 12) with -1 for open categories, ``"total"`` int64 (N,), ``"action_mask"`` int8 (N, 44),
    ``"illegal_action"`` bool (N,), ``"illegal_actions"`` int64 (N,); the family's ``"upper"`` int64 (N,)
    and ``"armed"`` bool (N,); with ``same_step`` also ``"final_total"`` int64 (N,).

    ## Seeding
    ``reset(seed=s)`` draws every game's ``(12, 3, 5)`` dice stream from the env's ``np_random``, so the
    whole batch is reproducible, games started by autoreset included. ``reset(options={"dice_stream": S})``
    with ``S`` of shape ``(N, 12, 3, 5)`` plays given streams (with ``reset_mask``, only the masked rows of
    ``S`` are dealt).

    ## Rendering
    ``render()`` returns a tuple of N frames, one per game, as Gymnasium's vector envs do (``SyncVectorEnv`` over
    ``Yacht-v0`` returns the same tuple): with ``render_mode="rgb_array"`` each game's image, the very frame
    ``Yacht-v0`` draws of that game (uint8, the preset's size: 489 x 480 x 3 for ``standard``, 561 x 480 x 3 for
    ``yahtzee``; Gymnasium's vector ``RecordVideo`` tiles them); with ``"ansi"`` one score-sheet line per game.
    Another mode warns, as ``Yacht-v0`` does, and ``render()`` then returns ``None``.

    ## Arguments
    Every argument of ``Yacht-v0`` (``render_mode``: ``"ansi"`` or ``"rgb_array"``, see Rendering), plus:

    * ``num_envs``: number of games stepped together.
    * ``autoreset_mode``: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"`` (see Autoreset).

    ## Planning
    ``Yacht-v0``'s model for planners, batched (:mod:`yacht_env.chance`): ``envs.afterstate(actions)`` (one action
    per game), ``envs.outcome_probabilities(actions)`` (float64 ``(N, 252)``, a row per game over the sorted rolls;
    all 0 where nothing falls), ``envs.chance_outcomes(actions)`` (OpenSpiel's list per game),
    ``envs.step_outcome(actions, outcomes)`` (``step`` with the dice falling as ``outcomes``, a sorted roll per game)
    and ``envs.game_state()`` (a copy of the N games, the root of a batched search).

    ## The game core
    Both envs are faces on one state record and one transition, ``yacht_env.game.GameState`` (``start``
    deals games from dice streams, ``play`` applies one action per game); the envs add only API work
    (checking actions, the illegal-action policy, autoreset, observations, info, rendering). The dice
    streams live there too: ``draw_stream``, ``parse_dice_stream`` and ``game_streams(seed, games)`` (the
    numbered, seeded streams every evaluation shares).

    ## Version History
    * v0: initial release, the vector form of ``Yacht-v0`` v0 (yacht-rl 0.1.0); its changes are
      ``Yacht-v0``'s. After 0.2.0: ``render_mode="rgb_array"`` (an addition; until then ``"ansi"`` only).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        num_envs: int,
        rules: str | R.Rules = "standard",
        autoreset_mode: str | AutoresetMode = "next_step",
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        configure_from(self, options, rules=rules, observation_type="flat")
        self._setup(num_envs, autoreset_mode, render_mode)
        self._encoder = ObservationEncoder(self.rules)
        self.single_observation_space = self._encoder.space(self.observation_type, self.action_mask_dtype)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self._game = GameState(self.rules, self.num_envs, self.canonical_keeps)  # the N games: the rules' state
        self._outcomes: tuple[np.ndarray, np.ndarray] | None = None  # step_outcome's (rolls, games), for _play

    # Planning: the game's model (yacht_env.chance) from the states now ------------------------------
    def game_state(self) -> GameState:
        """A copy of the N games now (a batch :class:`yacht_env.game.GameState`), the root of a search."""
        return self._game.copy()

    def afterstate(self, actions) -> chance.Afterstate:
        """The afterstates of one legal action per game now (a game waiting for its reset: nothing falls)."""
        if not self._was_reset:
            raise ValueError("call reset() before afterstate()")
        return chance.afterstate(self._game, self._check_actions(actions))

    def chance_outcomes(self, actions) -> list[list[tuple[int, float]]]:
        """Per game, the outcomes of its action with their probabilities: ``[(sorted roll, probability), ...]``."""
        return chance.chance_outcomes(self.afterstate(actions))

    def outcome_probabilities(self, actions) -> np.ndarray:
        """The chance of each sorted roll after each game's action, float64 ``(N, 252)`` (rows of 0: nothing falls)."""
        return chance.outcome_probabilities(self.afterstate(actions))

    def step_outcome(self, actions, outcomes):
        """Plays one legal action per game as :meth:`step` does (autoreset included), the dice falling as ``outcomes``
        (a sorted-roll index per game; ignored where nothing falls) whatever the dice streams hold.

        Raises:
            ValueError: an illegal action, or an outcome the kept dice cannot reach.
        """
        after = self.afterstate(actions)
        chance.step_outcome(after, outcomes)  # checks the outcomes
        falls = np.flatnonzero(after.is_chance)
        self._outcomes = (np.asarray(outcomes)[falls].astype(np.intp), falls)
        try:
            return self.step(actions)
        finally:
            self._outcomes = None

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

    def render(self) -> tuple[str, ...] | tuple[np.ndarray, ...] | None:
        """One frame per game, a tuple of N as Gymnasium's vector envs render: with ``render_mode="rgb_array"`` each
        game's image, the very frame ``Yacht-v0`` renders for that game (:func:`yacht_env.render.game_image`); with
        ``"ansi"`` one score-sheet line per game (with the family's bonus rows where the preset has them:
        ``upper bonus 45/63  yahtzee bonus 100``, as :func:`yacht_env.render.bonus_rows`). Any other mode warns and
        returns ``None``, as ``Yacht-v0`` does.
        """
        if cannot_render(self.render_mode, self.metadata["render_modes"]):
            return None
        from yacht_env.render import bonus_rows, game_image

        game = self._game
        if self.render_mode == "rgb_array":
            return tuple(game_image(game, i) for i in range(self.num_envs))
        lines = []
        for i in range(self.num_envs):
            dice = " ".join(str(v) for v in R.ROLL_TUPLES[game.roll[i]])
            line = f"game {i}: dice {dice}  rolls left {game.rolls_left[i]}  total {game.total[i]}"
            for label, value in bonus_rows(self.rules, game.sheet[i], game.total[i], game.upper[i]):
                line += f"  {label} {value}"
            lines.append(line)
        return tuple(lines)

    # The hooks of BatchedEnv ----------------------------------------------------------------------
    def _parse_streams(self, options: dict[str, Any] | None, seed: int | None) -> np.ndarray | None:
        return parse_dice_stream(options, self.rules, (self.num_envs,))

    def _deal(self, games: np.ndarray, streams: np.ndarray | None) -> None:
        if streams is None:
            streams = draw_stream(self.np_random, self.rules, len(games))
        self._game.start(streams, games)

    def _play(self, actions: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points, finished = self._game.play(actions, legal)
        if self._outcomes is not None:  # step_outcome's dice
            self._game.set_roll(*self._outcomes)
        return points.astype(np.float64), finished

    def _state_mask(self) -> np.ndarray:
        return self._game.mask

    def _observe(self):
        game = self._game
        if self.observation_type == "dict":
            return self._encoder.structured(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        return self._encoder.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)

    def _info(self) -> dict[str, np.ndarray]:
        game = self._game
        return {
            "dice": R.ROLLS[game.roll],
            "rolls_left": game.rolls_left.astype(np.int64),
            "scores": game.sheet.copy(),
            "total": game.total.astype(np.int64),
            **bonus_info(self.rules, game),
        }

    def _final_info(self) -> dict[str, np.ndarray]:
        return {"final_total": self._game.total.astype(np.int64)}

    def _describe_illegal(self, i: int, action: int) -> str:
        game = self._game
        return R.describe_illegal(
            action, int(game.roll[i]), int(game.rolls_left[i]), self.rules.categories, int(game.open_mask[i])
        )
