"""The observation encoders: :class:`ObservationEncoder` (one game: :class:`~yacht_env.YachtEnv` and the vector
env) and :class:`MultiplayerEncoder` (a seat's view of a table, and the table from no seat's: the PettingZoo and
versus envs).

Both envs build every observation with :meth:`ObservationEncoder.flat` or
:meth:`ObservationEncoder.structured` on the rules core's state integers, scalar or batched, so their
observations cannot drift apart. The values are gathered from :func:`yacht_env.rules.observation_tables`
(pure numpy), the float32 tables the JAX core gathers from too.

Flat layout for Yacht's 12 categories (``float32``, 64 values, every value in ``[0, 1]``); a preset with
``C`` categories has ``40 + 2 * C`` values in the same order (:func:`flat_layout`):

=========  =====  ==============================================================================
index      size   meaning
=========  =====  ==============================================================================
0..29      30     the five sorted dice, one-hot: ``obs[6 * i + (face - 1)] = 1`` for die ``i``
30..35     6      face counts / 5: ``obs[30 + f]`` = (number of dice showing ``f + 1``) / 5
36..38     3      rolls left, one-hot: ``obs[36 + rolls_left] = 1``
39..50     12     what each open category would score now / 50 (0 for filled categories); 50 is
                  the preset's largest category score (a Yacht), so custom rules rescale it
51..62     12     open categories: ``obs[51 + k] = 1`` iff ``CATEGORIES[k]`` is open
63         1      fraction of the 12 categories still open
=========  =====  ==============================================================================

The family's presets with bonuses (``Rules.has_bonuses``: Yahtzee, Yatzy) append what their state adds, after
the fraction open (Yacht's presets have none of it, so their 64 values stay exactly as above):

==================  =====  ====================================================================================
part                size   meaning
==================  =====  ====================================================================================
``upper``           2      with an upper bonus: the upper subtotal / the threshold (capped at 1), and 1 once
                           the bonus is earned
``armed``           1      with a Yahtzee bonus: 1 while the five-of-a-kind box holds its points (so another
                           five of a kind earns the bonus)
==================  =====  ====================================================================================

so Yahtzee's observation has ``40 + 2 * 13 + 3 = 69`` values and Yatzy's ``40 + 2 * 15 + 2 = 72``. For these
presets "what each open category would score now" is what its box would hold, joker included (bonuses are not
in it: the ``upper`` and ``armed`` parts and the dice tell them).

Structured (``observation_type="dict"``): ``{"dice": int8 (5,) sorted values 1..6,
"rolls_left": int in 0..2, "open_categories": int8 (C,) 0/1}``, plus ``"upper"`` (int, the capped subtotal)
and ``"armed"`` (int 0/1) where the preset has them.

:meth:`ObservationEncoder.decode` reads a flat observation back into its state, and
:meth:`MultiplayerEncoder.decode` a table view into a :class:`TableView`; they are part of the encoders' contract
(``decode(flat(s)) == s``), so no agent reads the layout's indices.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from yacht_env import rules as R
from yacht_env.game import GameState, TableState
from yacht_env.rules import flat_layout

# Yacht's own layout (12 categories), the table above; an encoder for another preset reads its own.
_YACHT_LAYOUT = flat_layout()
OBS_SIZE = _YACHT_LAYOUT["open_fraction"].stop
DICE_SLICE = _YACHT_LAYOUT["dice"]
COUNTS_SLICE = _YACHT_LAYOUT["counts"]
ROLLS_LEFT_SLICE = _YACHT_LAYOUT["rolls_left"]
SCORE_NOW_SLICE = _YACHT_LAYOUT["score_now"]
OPEN_SLICE = _YACHT_LAYOUT["open"]
OPEN_FRACTION_INDEX = _YACHT_LAYOUT["open_fraction"].start


@functools.cache
def chase_values(rules: str | R.Rules = "standard") -> np.ndarray:
    """``V[t, r, k]``: the expected points of category ``k`` from roll ``r`` with ``t`` re-rolls left, when the
    rest of the turn is played for ``k`` alone (each keep the best for ``k``; stopping early allowed).

    What a player sees at a glance ("three fives and two rolls left: about 19 in Fives"), from the dice odds
    and the score table only: one category and one turn, no later turn, nothing of the solver. ``V[0]`` is
    the score table. Float64, ``(3, 252, num_categories)``, read-only.
    """
    rules = R.get_rules(rules)
    return _chase_tables(rules)[0]


#: The after-keep chase values (:func:`keep_chase_values`) enter a policy's keep logits in points / 5 (the tables'
#: points / 50, times 10), so that weights of order one separate keeps by a few logits: the torch and JAX odds
#: policies share it.
KEEP_FEATURE_SCALE = 10.0


@functools.cache
def keep_chase_values(rules: str | R.Rules = "standard") -> np.ndarray:
    """``F[t, r, m, k]``: with ``t`` re-rolls left at roll ``r``, category ``k``'s :func:`chase_values` after
    keep-mask ``m`` and the re-roll (``t - 1`` re-rolls left then): the expected points of playing for ``k``
    from that keep on. Zero where the keep is not possible: ``t = 0`` and the keep-all mask 31.
    Float64, ``(3, 252, 32, num_categories)``, read-only.
    """
    rules = R.get_rules(rules)
    return _chase_tables(rules)[1]


@functools.cache
def par_chase_values(rules: str | R.Rules = "standard") -> np.ndarray:
    """``P[t, r, k]``: for an upper box ``k`` (Ones..Sixes), the chance of ending the turn with at least three of
    its face, from roll ``r`` with ``t`` re-rolls left, when the rest of the turn is played for that; 0 for the
    other boxes.

    Three of each face is par: it totals 63, the upper bonus's usual threshold, so this is the odds of a box
    keeping the bonus on course ("two fours and two rolls left: about 2 in 3 to make par"), from the dice alone like
    :func:`chase_values`. Float64, ``(3, 252, num_categories)``, read-only.
    """
    rules = R.get_rules(rules)
    return _chase_tables(rules, "par")[0]


@functools.cache
def keep_par_chase_values(rules: str | R.Rules = "standard") -> np.ndarray:
    """``G[t, r, m, k]``: :func:`par_chase_values` after keep-mask ``m`` and the re-roll, as
    :func:`keep_chase_values` is for :func:`chase_values`. Float64, ``(3, 252, 32, num_categories)``, read-only.
    """
    rules = R.get_rules(rules)
    return _chase_tables(rules, "par")[1]


def _par_table(rules: R.Rules) -> np.ndarray:
    """``(252, C)``: 1 where the roll holds at least three of an upper box's face, for that box; else 0."""
    table = np.zeros((R.NUM_ROLLS, rules.num_categories))
    for k, name in enumerate(rules.categories):
        face = R.UPPER_CATEGORIES.get(name)
        if face is not None:
            table[:, k] = R.ROLL_COUNTS[:, face - 1] >= 3
    return table


@functools.cache
def _chase_tables(rules: R.Rules, target: str = "points") -> tuple[np.ndarray, np.ndarray]:
    score = R.score_table(rules).astype(np.float64) if target == "points" else _par_table(rules)  # (252, C)
    values = np.empty((R.ROLLS_PER_TURN, *score.shape))
    after_keep = np.zeros((R.ROLLS_PER_TURN, R.NUM_ROLLS, R.NUM_KEEPS, score.shape[1]))
    values[0] = score
    for t in range(1, R.ROLLS_PER_TURN):
        kept = R.TRANSITION @ values[t - 1]  # (462, C): expected value after keeping each multiset
        after_keep[t] = kept[R.KEEP]
        after_keep[t, :, R.KEEP_ALL] = 0.0
        values[t] = np.maximum(score, after_keep[t].max(axis=1))  # score now, or the best keep
    values.flags.writeable = False
    after_keep.flags.writeable = False
    return values, after_keep


class State(NamedTuple):
    """A decision state of the rules core: ``(roll, rolls_left, open_mask, upper, armed)``, ints or ``np.intp``
    arrays (``upper`` and ``armed`` are 0 unless the preset has an upper / a Yahtzee bonus).
    """

    roll: Any
    rolls_left: Any
    open_mask: Any
    upper: Any = 0
    armed: Any = 0


class ObservationEncoder:
    """Builds observations from ``(roll, rolls_left, open_mask)``, one state or a batch, and reads them back.

    Attributes:
        rules: The preset; the layout's size follows from its number of categories.
        size: Length of the flat observation (64 for Yacht).
        layout: :func:`flat_layout` of the preset.
        flat_space, dict_space: The observation spaces of the two observation types.

    The contract, tested exhaustively: ``decode(flat(s)) == s`` for every state ``s``. Agents that need
    the state behind an observation (``greedy``, ``optimal``) call :meth:`decode`; nothing else reads the
    layout's indices.
    """

    def __init__(self, rules: str | R.Rules = "standard") -> None:
        self.rules = R.get_rules(rules)
        n = self.rules.num_categories
        self.layout = flat_layout(self.rules)
        self.size = max(part.stop for part in self.layout.values())
        self._bonuses = self.rules.has_bonuses
        self._categories = np.arange(n)
        self._score_now = self.layout["score_now"]
        self._open = self.layout["open"]
        # Two tables cover the whole observation (the rules' observation tables, shared with the JAX core): one row
        # per (roll, rolls_left) with the dice, counts, rolls left and every category's score now; one row per open
        # mask with the open bits and fraction. The score-now part is then zeroed for filled categories by one multiply.
        self._tables = R.observation_tables(self.rules)
        self.score_scale = self._tables.score_scale
        self._by_roll = np.concatenate(
            [self._tables.by_roll, np.repeat(self._tables.score_now, R.ROLLS_PER_TURN, axis=0)], axis=1
        )  # row 3 * roll + rolls_left: the observation up to the open bits, before zeroing filled categories
        self._roll_part = self._by_roll.shape[1]
        self._by_open = self._tables.by_open
        self._base_size = self._roll_part + self._by_open.shape[1]
        self._rows: tuple[list[np.ndarray], ...] | None = None  # _flat_one's rows, made on its first call
        self.flat_space = spaces.Box(0.0, 1.0, shape=(self.size,), dtype=np.float32)
        parts = {
            "dice": spaces.Box(1, R.NUM_FACES, shape=(R.NUM_DICE,), dtype=np.int8),
            "rolls_left": spaces.Discrete(R.ROLLS_PER_TURN),
            "open_categories": spaces.MultiBinary(n),
        }
        upper_states, armed_states = self.rules.bonus_shape
        if self.rules.upper_bonus:
            parts["upper"] = spaces.Discrete(upper_states)
        if self.rules.yahtzee_bonus:
            parts["armed"] = spaces.Discrete(armed_states)
        self.dict_space = spaces.Dict(parts)

    def flat(self, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray:
        """The flat ``float32`` observation, shape ``(..., size)`` (``upper`` and ``armed``: the family's state)."""
        if not self._bonuses:
            if type(roll) is int:  # the single env's fast path: same tables, fewer numpy calls
                return self._flat_one(roll, rolls_left, open_mask)
            roll = np.asarray(roll)
            out = np.empty((*roll.shape, self.size), dtype=np.float32)
            # Gathers straight into the output: much faster than concatenating gathered pieces.
            cut = self._roll_part
            np.take(self._by_roll, roll * R.ROLLS_PER_TURN + rolls_left, axis=0, out=out[..., :cut], mode="clip")
            np.take(self._by_open, open_mask, axis=0, out=out[..., cut:], mode="clip")
            out[..., self._score_now] *= out[..., self._open]
            return out
        roll, rolls_left, open_mask, upper, armed = np.broadcast_arrays(roll, rolls_left, open_mask, upper, armed)
        out = np.empty((*roll.shape, self.size), dtype=np.float32)
        cut, base = self._roll_part, self._base_size
        out[..., :cut] = self._by_roll[roll * R.ROLLS_PER_TURN + rolls_left]
        out[..., cut:base] = self._by_open[open_mask]
        # What each box would hold now, the joker included (its points depend on the sheet, not only the dice).
        box = R.pick_outcome(self.rules, roll[..., None], self._categories, open_mask[..., None])[1]
        out[..., self._score_now] = self._tables.score_fraction(box) * out[..., self._open]
        if self.rules.upper_bonus:
            out[..., self.layout["upper"]] = self._tables.upper[np.minimum(upper, self.rules.upper_bonus_threshold)]
        if self.rules.yahtzee_bonus:
            out[..., self.layout["armed"].start] = armed != 0
        return out

    def _flat_one(self, roll: int, rolls_left: int, open_mask: int, *tail: np.ndarray) -> np.ndarray:
        """:meth:`flat` of one state of rules without bonuses, followed by ``tail`` in the same array: the tables'
        rows (views made once, read from lists) and the score-now part (the scores times the open bits) joined in
        one call, the same float32 values as the batched path.
        """
        before, scores, open_bits, by_open = self._rows or self._make_rows()
        return np.concatenate(
            (
                before[roll * R.ROLLS_PER_TURN + rolls_left],
                scores[roll] * open_bits[open_mask],
                by_open[open_mask],
                *tail,
            )
        )

    def flat_then(self, roll: int, rolls_left: int, open_mask: int, rest: np.ndarray) -> np.ndarray:
        """One state's flat observation up to its score-now part, then ``rest`` (rules without bonuses): ``rest`` is
        the observation from the open bits on, which a caller keeps between picks (:meth:`MultiplayerEncoder.pick_part`)
        and joins here in one call.
        """
        before, scores, open_bits, _ = self._rows or self._make_rows()
        return np.concatenate((before[roll * R.ROLLS_PER_TURN + rolls_left], scores[roll] * open_bits[open_mask], rest))

    def _make_rows(self) -> tuple[list[np.ndarray], ...]:
        n = self.rules.num_categories
        before = self._by_roll[:, : self._score_now.start]  # per (roll, rolls left): the dice, counts, rolls left
        scores = self._by_roll[:: R.ROLLS_PER_TURN, self._score_now]  # per roll: every category's score now
        self._rows = tuple(list(table) for table in (before, scores, self._by_open[:, :n], self._by_open))
        return self._rows

    def decode(self, obs: np.ndarray) -> State:
        """The state behind flat observations: :meth:`flat`'s inverse.

        Args:
            obs: One flat observation ``(size,)`` or a batch ``(..., size)``.

        Returns:
            ``State(roll, rolls_left, open_mask)``: ints for one observation, ``np.intp`` arrays for a batch.

        Raises:
            ValueError: ``obs`` does not end in an axis of this encoder's size.
        """
        obs = np.asarray(obs)
        if obs.ndim == 0 or obs.shape[-1] != self.size:
            raise ValueError(f"expected flat observations of shape (..., {self.size}), got {obs.shape}")
        layout = self.layout
        dice = obs[..., layout["dice"]].reshape(*obs.shape[:-1], R.NUM_DICE, R.NUM_FACES).argmax(axis=-1) + 1
        roll = np.asarray(R.roll_index(dice), dtype=np.intp)
        rolls_left = obs[..., layout["rolls_left"]].argmax(axis=-1).astype(np.intp)
        bits = np.left_shift(1, np.arange(self.rules.num_categories), dtype=np.intp)
        open_mask = (obs[..., self._open] > 0.5) @ bits
        upper = armed = np.zeros(obs.shape[:-1], dtype=np.intp)
        if self.rules.upper_bonus:
            threshold = self.rules.upper_bonus_threshold
            upper = np.rint(obs[..., layout["upper"].start].astype(np.float64) * threshold).astype(np.intp)
        if self.rules.yahtzee_bonus:
            armed = (obs[..., layout["armed"].start] > 0.5).astype(np.intp)
        if obs.ndim == 1:
            return State(int(roll), int(rolls_left), int(open_mask), int(upper), int(armed))
        return State(roll, rolls_left, open_mask, upper, armed)

    def space(self, observation_type: str = "flat", action_mask_dtype: str = "int8") -> spaces.Space:
        """The observation space of one game: ``"flat"``, ``"dict"`` or ``"masked"`` (flat + action mask)."""
        if observation_type == "flat":
            return self.flat_space
        if observation_type == "dict":
            return self.dict_space
        mask = spaces.Box(0, 1, shape=(self.rules.num_actions,), dtype=np.dtype(action_mask_dtype))
        return spaces.Dict({"observation": self.flat_space, "action_mask": mask})

    def observe(self, game: GameState, observation_type: str = "flat", action_mask: np.ndarray | None = None):
        """The observation of every game of a :class:`~yacht_env.game.GameState` (or of its one game).

        ``"masked"`` observations carry ``action_mask`` as given (the env's mask, in the dtype of its space).
        """
        state = (game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        if observation_type == "flat":
            return self.flat(*state)
        if observation_type == "dict":
            return self.structured(*state)
        return {"observation": self.flat(*state), "action_mask": action_mask}

    def structured(self, roll, rolls_left, open_mask, upper=0, armed=0) -> dict[str, np.ndarray]:
        """The ``Dict`` observation; batched arrays gain a leading axis."""

        def as_int(value):
            return np.int64(value) if np.ndim(value) == 0 else np.array(value, dtype=np.int64)

        out = {
            "dice": R.ROLLS[roll].copy(),
            "rolls_left": as_int(rolls_left),
            "open_categories": R.open_bits(self.rules.num_categories)[open_mask].astype(np.int8),
        }
        if self.rules.upper_bonus:
            out["upper"] = as_int(upper)
        if self.rules.yahtzee_bonus:
            out["armed"] = as_int(armed)
        return out


@functools.cache
def _open_bit_lists(num_categories: int) -> list[list[float]]:
    """Per open mask, its open bits as Python floats (1.0 = open): a table part is built from them in one call."""
    return R.open_bits(num_categories).astype(float).tolist()


@functools.cache
def _float_lists(rules: R.Rules) -> tuple[list[float], list[float]]:
    """The rules' ``total_fraction`` and ``margin`` tables as lists of Python floats (the float32 values, exactly)."""
    tables = R.observation_tables(rules)
    return tables.total_fraction.tolist(), tables.margin.tolist()


class TableView(NamedTuple):
    """What a table observation holds (:meth:`MultiplayerEncoder.decode`): the player's own state, its total, and
    each opponent's open mask, total and bonus progress (``upper``, ``armed``: 0 for rules without them), in seat
    order after it (the margin follows from the totals). The opponents' bonus fields come last, so the first six
    fields stay where they were.
    """

    roll: Any
    rolls_left: Any
    open_mask: Any
    upper: Any
    armed: Any
    total: Any
    opponent_open: np.ndarray
    opponent_total: np.ndarray
    opponent_upper: np.ndarray
    opponent_armed: np.ndarray


class MultiplayerEncoder:
    """Observations of a multiplayer table from one player's point of view (the PettingZoo and versus envs).

    Layout (``float32``, every value in ``[0, 1]``; ``C`` categories, ``P`` players, ``S`` the solo size, ``B`` the
    solo layout's bonus values, ``O = C + B + 1`` an opponent's):

    ===============================  =========  ==========================================================
    index                            size       meaning
    ===============================  =========  ==========================================================
    ``0 .. S-1``                     ``S``      the player's own game, exactly :class:`ObservationEncoder`'s
                                                flat observation (64 values for Yacht)
    per opponent ``j = 1 .. P-1``    ``O``      the opponent ``j`` seats after the player (in seat order,
    (from ``S + (j-1) O``)                      wrapping): its open categories (1 = open), its bonus progress
                                                (the family's ``upper`` and ``armed`` parts, as in its own
                                                solo observation), then its total / ``max_total``
    ``S + (P-1) O``                  1          the player's own total / ``max_total``
    ``S + (P-1) O + 1``              1          the margin to the best opponent, ``(own - best) /
                                                (2 max_total) + 1/2`` (0.5: level; 1/2 with no opponent)
    ===============================  =========  ==========================================================

    ``B`` is 0 for Yacht's presets (``O = C + 1 = 13``), 3 for Yahtzee's (``upper``: the subtotal / the threshold
    and 1 once the bonus is earned; ``armed``), 2 for ``yatzy``, ``yahtzee_no_bonus`` and ``clubhouse`` (``upper``
    only): an opponent's part is its :meth:`state` part without the fraction open, which its open bits tell.

    ``max_total`` is the preset's largest possible total (:func:`~yacht_env.rules.max_total`: 297 for
    ``standard``, 1575 for ``yahtzee``). Turns left are the open fractions (own: the ``open_fraction`` part;
    an opponent's: its open bits).

    The totals and the margin are the float32 nearest to their exact quotients, one table or a batch alike;
    :meth:`decode` reads a view back into a :class:`TableView`.

    :meth:`state` is the table from no seat's viewpoint (PettingZoo's ``state()``, for centralised critics), the
    same pieces (``float32``, every value in ``[0, 1]``; ``D = S - K`` with ``K`` the solo layout's values from its
    open bits on: ``D = 39 + C``, 51 for Yacht):

    ===============================  =========  ==========================================================
    index                            size       meaning
    ===============================  =========  ==========================================================
    ``0 .. D-1``                     ``D``      the seat on turn's dice, face counts, rolls left and what each
                                                of its open boxes would score now: the first ``D`` values of
                                                its observation
    per seat ``p = 0 .. P-1``        ``K + 1``  seat ``p``'s game from its open bits on (open bits, fraction
    (from ``D + p (K + 1)``)                    open, the family's ``upper`` and ``armed``), then its total /
                                                ``max_total``; in seat order, whoever is on turn
    the last ``P``                   ``P``      whose turn, one-hot (all zeros once the game is over)
    ===============================  =========  ==========================================================

    Attributes:
        size: The observation's length, ``S + (P - 1) O + 2`` (79 for Yacht with 2 players, 88 for Yahtzee).
        opponent_size: ``O``, an opponent's part.
        state_size: The state's length, ``D + P (K + 1) + P`` (81 for Yacht with 2 players).
        state_space: ``Box(0, 1, (state_size,), float32)``.
    """

    def __init__(self, rules: str | R.Rules = "standard", num_players: int = 2) -> None:
        self.rules = R.get_rules(rules)
        self.num_players = num_players
        self.solo = ObservationEncoder(self.rules)
        n = self.rules.num_categories
        self.max_total = float(R.max_total(self.rules))
        # Each opponent's bonus progress: the solo layout's parts after the fraction open (none for Yacht's presets),
        # gathered per (upper, armed) from the solo encoder's own tables, so both show the same float32 values.
        self._bonus = self.solo.size - self.solo.layout["open_fraction"].stop
        self.opponent_size = n + self._bonus + 1
        self.size = self.solo.size + (num_players - 1) * self.opponent_size + 2
        self.space = spaces.Box(0.0, 1.0, shape=(self.size,), dtype=np.float32)
        self._dice_size = self.solo.layout["open"].start  # the state's dice part: the solo layout up to its open bits
        self.state_size = self._dice_size + num_players * (self.solo.size - self._dice_size + 1) + num_players
        self.state_space = spaces.Box(0.0, 1.0, shape=(self.state_size,), dtype=np.float32)
        self._open_bits = R.open_bits(n).astype(np.float32)
        # Per seat: the opponents in seat order after it, and where each one's part of the observation lies.
        self._order = [[(seat + j) % num_players for j in range(1, num_players)] for seat in range(num_players)]
        self._open_lists = _open_bit_lists(n)
        # The totals and the margin are gathered from the rules' tables (Python floats for one table), so one table,
        # a batch and the JAX core show the same float32 values.
        tables = R.observation_tables(self.rules)
        self._total_fraction, self._margin = tables.total_fraction, tables.margin
        self._fraction_list, self._margin_list = _float_lists(self.rules)
        self._by_open_lists: list[list[float]] | None = None  # pick_part's rows, made on its first call
        upper, armed = np.meshgrid(*map(np.arange, self.rules.bonus_shape), indexing="ij")
        self._bonus_rows = self.solo.flat(0, 0, 0, upper, armed)[..., self.solo.size - self._bonus :]  # (U, A, B)
        self._bonus_lists = self._bonus_rows.astype(float).tolist() if self._bonus else None

    def table_part(self, table: TableState, seat: int) -> np.ndarray:
        """One table: the observation of the player at ``seat`` after its own game (the opponents' open categories,
        bonus progress and totals, its own total, the margin), ``(size - solo size,)`` float32: it changes only when
        someone picks.
        """
        return np.array(self._table_values([], table, seat), dtype=np.float32)

    def pick_part(self, table: TableState, seat: int) -> np.ndarray:
        """One table: the observation of the player at ``seat`` from its own open categories on (the open bits and
        fraction, the family's upper and armed parts, then :meth:`table_part`), float32: all of it changes only when
        someone picks, so a caller can keep it between picks and pass it to :meth:`observe`.
        """
        own = table.players[seat]
        if not self.solo._bonuses:  # the open bits and fraction (a row of the solo encoder's table), then the table
            if self._by_open_lists is None:
                self._by_open_lists = self.solo._by_open.astype(float).tolist()  # float32 values, exact as floats
            values = self._table_values(self._by_open_lists[own.open_mask].copy(), table, seat)
            return np.array(values, dtype=np.float32)
        solo = self.solo.flat(0, 0, own.open_mask, own.upper, own.armed)[self.solo.layout["open"].start :]
        return np.concatenate((solo, self.table_part(table, seat)))

    def _table_values(self, values: list[float], table: TableState, seat: int) -> list[float]:
        """``values``, extended in place by :meth:`table_part`'s as Python floats (made float32 at once by the caller,
        as assigning each would round it): one array from one list.
        """
        games, fraction, open_bits, bonus = table.players, self._fraction_list, self._open_lists, self._bonus_lists
        own = games[seat]
        best = None
        for opponent in self._order[seat]:
            game = games[opponent]
            values += open_bits[game.open_mask]
            if bonus is not None:
                values += bonus[game.upper][game.armed]
            values.append(fraction[game.total])
            best = game.total if best is None else max(best, game.total)
        best = own.total if best is None else best
        values += (fraction[own.total], self._margin_list[own.total - best + len(fraction) - 1])
        return values

    def state(self, table: TableState, on_turn: bool = True) -> np.ndarray:
        """One table from no seat's viewpoint, ``(state_size,)`` float32 (the layout above): the dice part is the game
        of seat ``table.current``, which the turn part marks unless ``on_turn`` is False (the game is over).

        Raises:
            ValueError: ``table`` is a batch of tables.
        """
        if table.num_tables is not None:
            raise ValueError("state() takes one table (num_tables=None)")
        games, cut = table.players, self._dice_size
        roll, rolls_left, open_mask, upper, armed, total = np.array(
            [(g.roll, g.rolls_left, g.open_mask, g.upper, g.armed, g.total) for g in games], dtype=np.intp
        ).T
        solo = self.solo.flat(roll, rolls_left, open_mask, upper, armed)  # (P, S): each seat's own game
        seats = np.concatenate((solo[:, cut:], self._total_fraction[total][:, None]), axis=1)
        turn = np.zeros(self.num_players, dtype=np.float32)
        turn[table.current] = on_turn
        return np.concatenate((solo[table.current, :cut], seats.reshape(-1), turn))

    def decode(self, obs: np.ndarray) -> TableView:
        """The state behind table observations: :meth:`observe`'s inverse, as far as the view shows it.

        Args:
            obs: One table observation ``(size,)`` or a batch ``(..., size)``.

        Returns:
            A :class:`TableView`: the own game's fields and ``total`` are ints for one observation and ``np.intp``
            arrays ``(...)`` for a batch; the opponents' fields are ``np.intp`` ``(..., P - 1)`` (``opponent_upper``
            and ``opponent_armed`` zeros for rules without an upper / a Yahtzee bonus).

        Raises:
            ValueError: ``obs`` does not end in an axis of this encoder's size.
        """
        obs = np.asarray(obs)
        if obs.ndim == 0 or obs.shape[-1] != self.size:
            raise ValueError(f"expected table observations of shape (..., {self.size}), got {obs.shape}")
        n, solo, at = self.rules.num_categories, self.solo.size, self.size - 2  # at: the own total
        own = self.solo.decode(obs[..., :solo])
        opponents = obs[..., solo:at].reshape(*obs.shape[:-1], self.num_players - 1, self.opponent_size)
        opponent_open = (opponents[..., :n] > 0.5) @ np.left_shift(1, np.arange(n), dtype=np.intp)
        opponent_total = np.rint(opponents[..., -1] * self.max_total).astype(np.intp)
        upper = armed = np.zeros(opponent_total.shape, dtype=np.intp)
        if self.rules.upper_bonus:  # the subtotal / threshold, read as the solo decode reads its own
            threshold = self.rules.upper_bonus_threshold
            upper = np.rint(opponents[..., n].astype(np.float64) * threshold).astype(np.intp)
        if self.rules.yahtzee_bonus:
            armed = (opponents[..., -2] > 0.5).astype(np.intp)
        total = np.rint(obs[..., at] * self.max_total).astype(np.intp)
        return TableView(*own, total if obs.ndim > 1 else int(total), opponent_open, opponent_total, upper, armed)

    def observe(
        self, table: TableState, seat, table_part: np.ndarray | None = None, *, pick_part: np.ndarray | None = None
    ) -> np.ndarray:
        """The observation of the player at ``seat``: ``(size,)`` for one table, ``(num_tables, size)`` for a
        batch (``seat`` an int, or an array ``(num_tables,)``).

        One table only: ``table_part``, if given, is :meth:`table_part` of this table and seat, or ``pick_part``
        :meth:`pick_part`'s (a caller that keeps either between picks, when it cannot change, builds only the rest).
        """
        p = self.num_players
        if table.num_tables is None:  # one table: the player's own game, then the rest of the table
            own = table.players[seat]
            if pick_part is not None:
                if not self.solo._bonuses:
                    return self.solo.flat_then(own.roll, own.rolls_left, own.open_mask, pick_part)
                solo = self.solo.flat(own.roll, own.rolls_left, own.open_mask, own.upper, own.armed)
                return np.concatenate((solo[: self.solo.layout["open"].start], pick_part))
            if table_part is None:
                table_part = self.table_part(table, seat)
            if not self.solo._bonuses:  # one array: the own game's table rows and the table part
                return self.solo._flat_one(own.roll, own.rolls_left, own.open_mask, table_part)
            solo = self.solo.flat(own.roll, own.rolls_left, own.open_mask, own.upper, own.armed)
            return np.concatenate((solo, table_part))
        order = (np.asarray(seat)[..., None] + np.arange(1, p)) % p  # opponents in seat order after the player
        games = table.players
        rows = np.arange(table.num_tables) * p
        own_rows = rows + seat
        solo = self.solo.flat(
            games.roll[own_rows],
            games.rolls_left[own_rows],
            games.open_mask[own_rows],
            games.upper[own_rows],
            games.armed[own_rows],
        )
        totals = games.total.reshape(-1, p)

        def of_opponents(values):
            return np.take_along_axis(values.reshape(-1, p), order, axis=-1)

        own_total = np.take_along_axis(totals, np.asarray(seat)[..., None], axis=-1)[..., 0]
        opponent_totals = np.take_along_axis(totals, order, axis=-1)
        parts = [self._open_bits[of_opponents(games.open_mask)]]
        if self._bonus:
            parts.append(self._bonus_rows[of_opponents(games.upper), of_opponents(games.armed)])
        opponents = np.concatenate([*parts, self._total_fraction[opponent_totals][..., None]], axis=-1)
        best = opponent_totals.max(axis=-1) if p > 1 else own_total
        margin = self._margin[own_total - best + len(self._total_fraction) - 1]
        return np.concatenate(
            [solo, opponents.reshape(*solo.shape[:-1], -1), np.stack([self._total_fraction[own_total], margin], -1)],
            axis=-1,
        )
