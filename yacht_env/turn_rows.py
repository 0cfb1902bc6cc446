"""A turn's values as rows: the kept-multiset tables and the two passes every exact solver's turn is made of.

Within a turn every value is a ``(rows, columns)`` array: a row per roll (252) or per kept multiset of at most four
dice (210), a column per position (a turn-start state of the family's solver, a ``(state, lead)`` of the
two-player solve), so each step is one whole-row operation on a chunk of columns. Rows follow an internal order:
rolls by their number of distinct faces (most first, :data:`ROLL_ORDER`), kept multisets by size and then
likewise (:data:`KEPT_ROW`). A multiset of ``d`` distinct faces has ``d`` children (one die less), so "the rows
with at least ``c + 1`` children" is a prefix of the rows and the best-sub-multiset pass wastes no work on padding.

The turn (:func:`turn_values`) from the value of stopping on each roll ``V0`` (the best pick):

* :func:`expected_keeps`: ``EK[K]``, the value of keeping ``K`` and re-rolling the rest, adds one fresh die at a
  time: the mean over the six faces of ``EK[K + face]`` (of ``V`` for ``K`` of four dice);
* :func:`best_keeps`: per roll, the best ``EK`` over its kept sub-multisets, level by level;
* ``V_t = max(best_keeps(EK_t), V0)``, ``t`` re-rolls left, and the turn's start is the first roll's mean of
  ``V_2`` (:data:`FIRST_ROLL`).

Every pass runs on an array backend, :class:`Arrays`: numpy's in place (``out=``) by default; a device's (torch,
:mod:`yacht_env.duel.accel`) offers the same few operations and uploads the tables once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from yacht_env import rules as R

# --------------------------------------------------------------------------------------------------
# The array backend: the few operations the passes and the two-player kernels need
# --------------------------------------------------------------------------------------------------


class Arrays:
    """numpy as the turn's kernels use it: the default backend (a device's subclass overrides every method).

    The kernels index arrays with ``[]`` and multiply them with ``@`` and arithmetic operators, which numpy and torch
    share; everything else goes through these methods.
    """

    name = "numpy"
    float32 = np.float32

    def table(self, array: np.ndarray, dtype=None):
        """A constant table (built once on the host, e.g. :data:`SUPERSETS`) where the kernels compute, as ``dtype``
        if given.
        """
        return array if dtype is None else array.astype(dtype, copy=False)

    def asarray(self, array: np.ndarray, dtype=None):
        """Host data of one call (e.g. a level's values) where the kernels compute, as ``dtype`` if given."""
        return array if dtype is None else np.asarray(array, dtype=dtype)

    def host(self, array) -> np.ndarray:
        """A result as a numpy array."""
        return array

    def empty(self, shape: tuple[int, ...], dtype):
        """As ``numpy.empty``."""
        return np.empty(shape, dtype=dtype)

    def full(self, shape: tuple[int, ...], fill: float, dtype):
        """As ``numpy.full``."""
        return np.full(shape, fill, dtype=dtype)

    def maximum(self, a, b, out=None):
        """As ``numpy.maximum``."""
        return np.maximum(a, b, out=out)

    def multiply(self, a, b, out=None):
        """As ``numpy.multiply``."""
        return np.multiply(a, b, out=out)

    def where(self, condition, a, b):
        """As ``numpy.where``."""
        return np.where(condition, a, b)

    def copyto(self, out, source, where) -> None:
        """``out[where] = source[where]``, in place."""
        np.copyto(out, source, where=where)

    def clip(self, a, low, high):
        """As ``numpy.clip``."""
        return np.clip(a, low, high)

    def astype(self, a, dtype):
        """``a`` as ``dtype``, not copied if it is one already."""
        return a.astype(dtype, copy=False)

    def is_float(self, a) -> bool:
        """Whether ``a`` holds floats (not stored integers)."""
        return np.issubdtype(a.dtype, np.floating)

    def arange(self, start: int, stop: int):
        """As ``numpy.arange``."""
        return np.arange(start, stop)

    def repeat(self, a, counts):
        """Each ``a[i]`` ``counts[i]`` times."""
        return np.repeat(a, counts)


#: The default backend.
NUMPY = Arrays()

# --------------------------------------------------------------------------------------------------
# Kept multisets
# --------------------------------------------------------------------------------------------------
KEPT_SIZE = np.array([len(kept) for kept in R.KEPT])
#: Kept multisets of 0..4 dice (all a legal keep can keep) come first in ``KEPT``; only they get values.
NUM_PROPER_KEPT = int((KEPT_SIZE < R.NUM_DICE).sum())
assert (KEPT_SIZE[:NUM_PROPER_KEPT] < R.NUM_DICE).all(), "rules.KEPT is expected to be ordered by size"
assert (np.delete(R.KEEP, R.KEEP_ALL, axis=1) < NUM_PROPER_KEPT).all()

#: ``rules.KEEP`` with the keep-all column (never legal, and never valued) pointed at column 0, so gathers
#: stay in bounds.
KEEP_PROPER = R.KEEP.astype(np.intp)
KEEP_PROPER[:, R.KEEP_ALL] = 0


def one_die_less() -> dict[int, set[int]]:
    """The "one die less" relation between kept multisets, read off ``KEEP``: index in ``KEPT`` -> its children."""
    children: dict[int, set[int]] = {}
    for r in range(R.NUM_ROLLS):
        for m in range(R.NUM_KEEPS):
            parent = int(R.KEEP[r, m])
            children.setdefault(parent, set()).update(
                int(R.KEEP[r, m & ~(1 << i)]) for i in range(R.NUM_DICE) if m >> i & 1
            )
    return children


def _row_tables():
    children = one_die_less()
    distinct = np.array([len(set(kept)) for kept in R.KEPT[:NUM_PROPER_KEPT]])
    kept_order = np.lexsort((-distinct, KEPT_SIZE[:NUM_PROPER_KEPT]))
    roll_order = np.argsort(-(R.ROLL_COUNTS > 0).sum(axis=1), kind="stable")
    kept_row, roll_row = np.argsort(kept_order), np.argsort(roll_order)

    def subsets(parents: np.ndarray) -> tuple[np.ndarray, list[int]]:
        rows = [sorted(int(kept_row[c]) for c in children[int(p)]) for p in parents]
        width = max(len(row) for row in rows)
        table = np.array([row + row[:1] * (width - len(row)) for row in rows], dtype=np.intp)
        return table, [sum(len(row) > c for row in rows) for c in range(width)]

    sizes = KEPT_SIZE[kept_order]
    spans = [(int((sizes < j).sum()), int((sizes <= j).sum())) for j in range(R.NUM_DICE)]
    levels = [(lo, hi, *subsets(kept_order[lo:hi])) for lo, hi in spans[1:]]
    index = {kept: i for i, kept in enumerate(R.KEPT)}
    supersets = np.array(  # the row of K plus one die of each face: a roll's row for K of four dice
        [
            [
                roll_row[R.roll_index(list(R.KEPT[k]) + [face])]
                if len(R.KEPT[k]) == R.NUM_DICE - 1
                else kept_row[index[tuple(sorted((*R.KEPT[k], face)))]]
                for face in range(1, R.NUM_FACES + 1)
            ]
            for k in kept_order
        ],
        dtype=np.intp,
    )
    return roll_order, kept_row, spans, supersets, levels, subsets(R.KEEP[roll_order, R.KEEP_ALL])


#: ``ROLL_ORDER[i]``: the roll (index in ``rules.ROLLS``) of roll-row ``i``.
#: ``KEPT_ROW[k]``: the row of kept multiset ``k`` (index in ``rules.KEPT``, at most four dice).
#: ``SIZE_SPANS[j]``: ``(lo, hi)``, the rows of the multisets of ``j`` dice.
#: ``SUPERSETS[row, face - 1]``: the row of that multiset plus one die of ``face`` (a roll-row for four dice).
#: ``SUBSETS``: per size ``j`` of 1..4, ``(lo, hi, children, prefixes)``: each multiset's rows of one die less
#: (padded by repeating one) and, per column ``c``, how many leading rows have a ``c``-th child.
#: ``ROLL_SUBSETS``: ``(children, prefixes)`` likewise of each roll-row: its multisets of four dice.
ROLL_ORDER, KEPT_ROW, SIZE_SPANS, SUPERSETS, SUBSETS, ROLL_SUBSETS = _row_tables()
#: ``KEEP_ROW[r, m]``: the row of what keep-mask ``m`` keeps of roll ``r`` (keep-all: row 0, never legal).
KEEP_ROW = KEPT_ROW[KEEP_PROPER]
#: ``FIRST_ROLL[i]``: the chance of roll-row ``i`` when all five dice are rolled.
FIRST_ROLL = np.ascontiguousarray(R.TRANSITION[0][ROLL_ORDER])


# --------------------------------------------------------------------------------------------------
# The passes
# --------------------------------------------------------------------------------------------------
def expected_keeps(values, xp: Arrays = NUMPY):
    """``EK`` ``(210, n)`` from ``V`` ``(252, n)`` (rows): re-rolling around ``K`` adds one fresh die at a time,
    so ``EK[K]`` is the mean over the six faces of ``EK[K + face]`` (of ``V`` for ``K`` of four dice).
    """
    keeps = xp.empty((NUM_PROPER_KEPT, values.shape[1]), values.dtype)
    supersets = xp.table(SUPERSETS)
    for size in range(R.NUM_DICE - 1, -1, -1):
        lo, hi = SIZE_SPANS[size]
        source = values if size == R.NUM_DICE - 1 else keeps
        total = source[supersets[lo:hi, 0]]
        for face in range(1, R.NUM_FACES):
            total += source[supersets[lo:hi, face]]
        xp.multiply(total, 1 / R.NUM_FACES, out=keeps[lo:hi])
    return keeps


def take_better(into: Sequence, other: Sequence, xp: Arrays = NUMPY) -> None:
    """Where ``other`` is better than ``into``, takes it, in place: ``[values]``: the max; ``[decide, value]``:
    where ``other``'s ``decide`` beats ``into``'s (strictly: a tie keeps ``into``), both of ``other``'s arrays.
    """
    if len(into) == 1:
        xp.maximum(into[0], other[0], out=into[0])
        return
    better = other[0] > into[0]
    for mine, theirs in zip(into, other, strict=True):
        xp.copyto(mine, theirs, better)


def best_of(values: Sequence, rows, prefixes: Sequence[int], xp: Arrays = NUMPY) -> list:
    """Per row ``i`` of ``rows``, the best of ``values``' rows ``rows[i, c]`` (:func:`take_better`: ``[values]``
    or ``[decide, value]``), where ``prefixes[c]`` rows have a ``c``-th (the rows with fewer come last).
    """
    best = [v[rows[:, 0]] for v in values]
    for c, count in enumerate(prefixes[1:], 1):
        take_better([b[:count] for b in best], [v[rows[:count, c]] for v in values], xp)
    return best


def best_keeps(keeps: Sequence, xp: Arrays = NUMPY) -> list:
    """Per roll ``(252, n)``, the best of ``keeps`` ``(210, n)`` over its proper sub-multisets (rows; ``keeps``
    is overwritten with the best over each multiset's sub-multisets).

    Args:
        keeps: ``[values]``, or ``[decide, value]``: the best by ``decide``, carrying ``value`` along
            (:func:`take_better`).
        xp: The array backend.
    """
    for lo, hi, children, prefixes in SUBSETS:
        take_better([k[lo:hi] for k in keeps], best_of(keeps, xp.table(children), prefixes, xp), xp)
    children, prefixes = ROLL_SUBSETS
    return best_of(keeps, xp.table(children), prefixes, xp)


def turn_values(pick_value: Sequence, rolls_left: int, xp: Arrays = NUMPY):
    """``EK_t`` ``(210, n)`` (rows) for ``t = rolls_left`` re-rolls left (1 or 2), or the turn's start ``(n,)`` for
    ``rolls_left = 3`` (:data:`yacht_env.rules.ROLLS_PER_TURN`: a roll of all five dice, then two re-rolls).

    Args:
        pick_value: ``[V0]``: the value of stopping on each roll-row ``(252, n)``; or ``[decide, value]``: the turn
            played by ``decide``'s ``V0`` (a tie re-rolls, as an agent's first best action: keeps come first) and
            valued by ``value``, the same picks' values under another table.
        rolls_left: 1, 2 or 3.
        xp: The array backend.

    Returns:
        The values of ``pick_value``'s last array.
    """
    value = pick_value
    for _ in range(rolls_left - 1):
        best = best_keeps([expected_keeps(v, xp) for v in value], xp)
        if len(best) == 1:  # a new array: in place, the family solver's threads page-faulted twice as often
            best = [xp.maximum(best[0], pick_value[0])]
        else:
            take_better(best, pick_value, xp)
        value = best
    if rolls_left > R.MAX_ROLLS_LEFT:
        return xp.table(FIRST_ROLL, value[-1].dtype) @ value[-1]
    return expected_keeps(value[-1], xp)
