"""One turn of the two-player game: the mover's chance to win over rolls and leads, from the level below.

A turn is the solo solver's turn (:mod:`yacht_env.turn_rows`: its row layout and its two passes, the expected
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
from collections.abc import Sequence

import numpy as np

from yacht_env import rules as R
from yacht_env.duel.layout import Layout
from yacht_env.turn_rows import NUMPY, ROLL_ORDER, Arrays, best_of

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
            row order, :data:`yacht_env.turn_rows.ROLL_ORDER`).
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
        self.of_roll = self.of_sorted_roll[ROLL_ORDER]


@functools.cache
def pick_rows(rules: R.Rules) -> PickRows:
    """The :class:`PickRows` of ``rules``, built once."""
    return PickRows(rules)


def after_picks(layout: Layout, n: int, below, mover, other, lead, xp: Arrays = NUMPY):
    """The mover's chance to win after each pick, ``(rows, columns)`` of ``below``'s float dtype (stored uint16
    values are read as float32, ``stored / QUANT``), in :class:`PickRows`' rows.

    Args:
        layout: The game's :class:`~yacht_env.duel.layout.Layout`.
        n: The level of the states (the picks lead to level ``n - 1``).
        below: Level ``n - 1``'s values, flat (:attr:`Level.offset`), P(the mover there wins; ties half).
        mover: ``(columns,)`` int64: each column's mover's open mask.
        other: ``(columns,)`` int64: the other player's open mask.
        lead: ``(columns,)`` int64: the mover's total minus the other's.
        xp: The array backend of every array here (:class:`~yacht_env.turn_rows.Arrays`).

    Returns:
        Every ``(box, score)`` row; the rows of a box the column's mover has filled are :data:`CLOSED`.
    """
    rows = pick_rows(layout.rules)
    level = layout.level(n - 1)
    stored = not xp.is_float(below)
    dtype = xp.float32 if stored else below.dtype
    rank, low, length, offset, points = (
        xp.table(a) for a in (layout.rank, level.low, level.length, level.offset, rows.points)
    )
    out = xp.full((len(rows.points), len(lead)), CLOSED, dtype)
    for c in range(layout.rules.num_categories):
        bit = 1 << c
        is_open = (mover & bit) != 0
        if not is_open.any():
            continue
        state = xp.where(is_open, rank[other] * len(level.others) + rank[mover & ~bit], 0)
        first = -lead - low[state]  # the next state's lead -(lead + u) as a window position, for u = 0
        size, start = length[state], offset[state]
        at = first[None] - points[rows.start[c] : rows.start[c + 1], None]
        value = below[start + xp.clip(at, 0, size - 1)]
        if stored:
            value = xp.astype(value, dtype) * (1 / QUANT)
        value = xp.where(at < 0, 0.0, xp.where(at >= size, 1.0, value))
        out[rows.start[c] : rows.start[c + 1]] = xp.where(is_open, 1.0 - value, CLOSED)
    return out


def best_of_rows(picks: Sequence, of_roll, xp: Arrays = NUMPY) -> list:
    """``V0`` ``(252, columns)``: per roll (row order), the best of its rows ``of_roll[i]`` of ``picks``: ``[values]``
    or ``[decide, value]``, the best by ``decide`` carrying ``value`` along (:func:`~yacht_env.turn_rows.best_of`).
    """
    return best_of(picks, of_roll, [len(of_roll)] * of_roll.shape[1], xp)
