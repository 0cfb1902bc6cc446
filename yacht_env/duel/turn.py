"""One turn of the two-player game: the mover's chance to win over rolls and leads, from the level below.

A turn is the solo solver's turn (:mod:`yacht_env.family_solver`'s row layout and its two passes, the expected
value of each kept multiset one fresh die at a time and the best sub-multiset of each roll) with a column per
``(state, lead)`` in place of a column per state: every step is the same whole-row operation, and nothing
depends on which columns sit together, so a chunk of the build and a batch of positions an agent asks about go
through the same code.

The pick values come first. After picking box ``c`` for ``u`` points the mover's chance to win is ``1 - W(other,
mover without c, -(lead + u))``, one level down. Each box has a handful of distinct scores (``u``), so the rows
are ``(box, score)`` pairs and a roll's pick value is the best of its boxes' rows.
"""

from __future__ import annotations

import functools

import numpy as np

from yacht_env import family_solver as F
from yacht_env import rules as R
from yacht_env.duel.layout import Layout

#: Below every chance to win: the value of a closed box's rows, so a max never takes them.
CLOSED = -1.0
QUANT = 65535  # uint16 storage: value = stored / QUANT


class PickRows:
    """The ``(box, score)`` rows of a rules' pick values.

    Attributes:
        category: ``(rows,)``: each row's box.
        points: ``(rows,)`` int64: each row's score.
        start: ``(num_categories + 1,)``: box ``c``'s rows are ``start[c]:start[c + 1]``.
        of_roll: ``(252, num_categories)``: the row of roll-row ``i``'s score in box ``c`` (rolls in the turn's
            row order, :data:`yacht_env.family_solver._ROLL_ORDER`).
        of_sorted_roll: ``(252, num_categories)``: the same by roll index (:data:`yacht_env.rules.ROLLS`).
    """

    def __init__(self, rules: R.Rules):
        score = R.score_table(rules).astype(np.int64)
        category, points, start, inverse = [], [], [0], []
        for c in range(rules.num_categories):
            distinct, which = np.unique(score[:, c], return_inverse=True)
            inverse.append(start[-1] + which.ravel())
            category += [c] * len(distinct)
            points += list(distinct)
            start.append(start[-1] + len(distinct))
        self.category = np.array(category, dtype=np.intp)
        self.points = np.array(points, dtype=np.int64)
        self.start = np.array(start, dtype=np.intp)
        self.of_sorted_roll = np.stack(inverse, axis=1)
        self.of_roll = self.of_sorted_roll[F._ROLL_ORDER]


@functools.cache
def pick_rows(rules: R.Rules) -> PickRows:
    """The :class:`PickRows` of ``rules``, built once."""
    return PickRows(rules)


def after_picks(
    layout: Layout, n: int, below: np.ndarray, mover: np.ndarray, other: np.ndarray, lead: np.ndarray
) -> np.ndarray:
    """The mover's chance to win after each pick, ``(rows, columns)`` of ``below``'s float dtype (uint16 values
    are read as float32), in :class:`PickRows`' rows.

    Args:
        layout: The game's :class:`~yacht_env.duel.layout.Layout`.
        n: The level of the states (the picks lead to level ``n - 1``).
        below: Level ``n - 1``'s values, flat (:attr:`Level.offset`), P(the mover there wins; ties half).
        mover: ``(columns,)`` int64: each column's mover's open mask.
        other: ``(columns,)`` int64: the other player's open mask.
        lead: ``(columns,)`` int64: the mover's total minus the other's.

    Returns:
        Every ``(box, score)`` row; the rows of a box the column's mover has filled are :data:`CLOSED`.
    """
    rows = pick_rows(layout.rules)
    level = layout.level(n - 1)
    dtype = np.float32 if below.dtype == np.uint16 else below.dtype.type
    one, zero = dtype(1.0), dtype(0.0)
    out = np.full((len(rows.points), len(lead)), CLOSED, dtype=dtype)
    for c in range(layout.rules.num_categories):
        bit = 1 << c
        is_open = (mover & bit) != 0
        if not is_open.any():
            continue
        state = layout.rank[other] * len(level.others) + layout.rank[mover & ~bit]
        state = np.where(is_open, state, 0)
        first = -lead - level.low[state]  # the next state's lead -(lead + u) as a window position, for u = 0
        length, start = level.length[state], level.offset[state]
        points = rows.points[rows.start[c] : rows.start[c + 1], None]
        at = first[None] - points
        value = below[start + np.clip(at, 0, length - 1)]
        if value.dtype == np.uint16:
            value = value.astype(dtype) * dtype(1 / QUANT)
        value = np.where(at < 0, zero, np.where(at >= length, one, value))
        out[rows.start[c] : rows.start[c + 1]] = np.where(is_open, one - value, dtype(CLOSED))
    return out


def best_of_rows(picks: np.ndarray, of_roll: np.ndarray) -> np.ndarray:
    """``V0`` ``(252, columns)``: per roll (row order), the best of its rows ``of_roll[i]`` of ``picks``."""
    value = picks[of_roll[:, 0]]
    for j in range(1, of_roll.shape[1]):
        np.maximum(value, picks[of_roll[:, j]], out=value)
    return value


def keep_values(pick_value: np.ndarray, rolls_left: int) -> np.ndarray:
    """``EK_t`` ``(210, columns)`` for ``t = rolls_left`` (1 or 2): the value of each kept multiset (the turn's
    row order, :data:`yacht_env.family_solver.KEEP_ROW`), from ``V0`` ``(252, columns)``.
    """
    value = pick_value
    for _ in range(rolls_left - 1):
        value = np.maximum(F._best_keeps(F._expected_keeps(value)), pick_value)
    return F._expected_keeps(value)


def turn_start(pick_value: np.ndarray) -> np.ndarray:
    """``(columns,)``: the chance to win at the start of the turn (a roll of all five dice, two re-rolls)."""
    value = pick_value
    for _ in range(R.MAX_ROLLS_LEFT):
        value = np.maximum(F._best_keeps(F._expected_keeps(value)), pick_value)
    return F._FIRST_ROLL.astype(value.dtype) @ value


# --------------------------------------------------------------------------------------------------
# A turn played by one table's decisions and valued by another's (the exact evaluation of a strategy)
# --------------------------------------------------------------------------------------------------
def _follow(decide: np.ndarray, value: np.ndarray, decide_other: np.ndarray, value_other: np.ndarray) -> None:
    """Where ``decide_other`` beats ``decide`` (strictly: a tie keeps the first), takes it and its value, in place."""
    better = decide_other > decide
    np.copyto(decide, decide_other, where=better)
    np.copyto(value, value_other, where=better)


def follow_best_of_rows(decide: np.ndarray, value: np.ndarray, of_roll: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`best_of_rows` by ``decide``'s picks: ``(V0 of decide, the value of the same picks)``."""
    best, worth = decide[of_roll[:, 0]], value[of_roll[:, 0]]
    for j in range(1, of_roll.shape[1]):
        _follow(best, worth, decide[of_roll[:, j]], value[of_roll[:, j]])
    return best, worth


def _follow_best_keeps(decide: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`yacht_env.family_solver._best_keeps` by ``decide``'s keeps, carrying ``value`` along."""
    for lo, hi, children, prefixes in F._SUBSETS:
        below, worth = decide[children[:, 0]], value[children[:, 0]]
        for c, count in enumerate(prefixes[1:], 1):
            _follow(below[:count], worth[:count], decide[children[:count, c]], value[children[:count, c]])
        _follow(decide[lo:hi], value[lo:hi], below, worth)
    children, prefixes = F._ROLL_SUBSETS
    best, worth = decide[children[:, 0]], value[children[:, 0]]
    for c, count in enumerate(prefixes[1:], 1):
        _follow(best[:count], worth[:count], decide[children[:count, c]], value[children[:count, c]])
    return best, worth


def follow_turn_start(decide: np.ndarray, value: np.ndarray) -> np.ndarray:
    """``(columns,)``: the value at the turn's start of the turn :func:`turn_start` plays by ``decide`` (its pick
    values ``V0``), valued by ``value`` (the same picks' values under another table).
    """
    best, worth = decide, value
    for _ in range(R.MAX_ROLLS_LEFT):
        best, worth = _follow_best_keeps(F._expected_keeps(best), F._expected_keeps(worth))
        _follow(best, worth, decide, value)  # a tie re-rolls, as the agent's first best action (keeps come first)
    return F._FIRST_ROLL.astype(worth.dtype) @ worth
