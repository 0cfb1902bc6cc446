"""Dice encoding: the 252 sorted rolls, the multisets a keep-mask keeps, their codes, the keep tables, the
open-mask bits and the re-roll odds (:data:`TRANSITION`); reading five dice (:func:`roll_index`,
:func:`validate_dice`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numpy as np

from .constants import KEEP_ALL, NUM_CATEGORIES, NUM_DICE, NUM_FACES, NUM_KEEPS, NUM_ROLLS


def _multisets(size: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations_with_replacement(range(1, NUM_FACES + 1), size))


#: ``ROLLS[r]``: the five dice of sorted roll ``r``, ascending (int8, shape (252, 5)).
ROLLS = np.array(_multisets(NUM_DICE), dtype=np.int8)
ROLLS.flags.writeable = False
ROLL_TUPLES: tuple[tuple[int, ...], ...] = tuple(tuple(int(v) for v in row) for row in ROLLS)

#: Every multiset of 0..5 dice (462 of them): what a keep-mask can keep, ordered by size.
KEPT: tuple[tuple[int, ...], ...] = tuple(m for k in range(NUM_DICE + 1) for m in _multisets(k))
NUM_KEPT = len(KEPT)

# A multiset of dice is identified by its face counts written in base 6 (no count exceeds 5):
# code = sum over dice of 6 ** (face - 1). Order-free, so no sort is ever needed.
FACE_WEIGHT = np.array([0] + [NUM_FACES**f for f in range(NUM_FACES)], dtype=np.int32)
_MAX_CODE = NUM_DICE * NUM_FACES ** (NUM_FACES - 1)
#: ``CODE_TO_ROLL[code]``: the sorted roll (a row of :data:`ROLLS`) of five dice with that code (-1: not five dice).
CODE_TO_ROLL = np.full(_MAX_CODE + 1, -1, dtype=np.int16)
CODE_TO_ROLL[FACE_WEIGHT[ROLLS].sum(axis=1)] = np.arange(NUM_ROLLS)
CODE_TO_ROLL.flags.writeable = False
_CODE_TO_KEPT = np.full(_MAX_CODE + 1, -1, dtype=np.int16)
for _index, _kept in enumerate(KEPT):
    _CODE_TO_KEPT[FACE_WEIGHT[list(_kept)].sum()] = _index
_CODE_TO_KEPT.flags.writeable = False

#: ``ROLL_COUNTS[r, f]``: how many dice of roll ``r`` show face ``f + 1`` (int8, shape (252, 6)).
ROLL_COUNTS = np.stack([(ROLLS == f).sum(axis=1) for f in range(1, NUM_FACES + 1)], axis=1).astype(np.int8)
ROLL_COUNTS.flags.writeable = False

#: ``KEEP_BITS[m, i]``: whether keep-mask ``m`` keeps die ``i`` (bool, shape (32, 5)).
KEEP_BITS = np.array([[(m >> i) & 1 for i in range(NUM_DICE)] for m in range(NUM_KEEPS)], dtype=bool)
KEEP_BITS.flags.writeable = False


def _keep_tables() -> tuple[np.ndarray, np.ndarray]:
    kept = np.empty((NUM_ROLLS, NUM_KEEPS), dtype=np.int16)
    canonical = np.zeros((NUM_ROLLS, NUM_KEEPS), dtype=bool)
    for r, dice in enumerate(ROLLS):
        seen = set()
        for m in range(NUM_KEEPS):  # ascending, so the first mask of each multiset is the smallest
            index = _CODE_TO_KEPT[FACE_WEIGHT[dice[KEEP_BITS[m]]].sum()]
            kept[r, m] = index
            canonical[r, m] = index not in seen and m != KEEP_ALL
            seen.add(index)
    return kept, canonical


#: ``KEEP[r, m]``: the index in :data:`KEPT` of what keep-mask ``m`` keeps of roll ``r``.
#: ``CANONICAL_KEEPS[r, m]``: ``m`` is the smallest mask keeping that multiset and is not ``31``.
KEEP, CANONICAL_KEEPS = _keep_tables()
KEEP.flags.writeable = False
CANONICAL_KEEPS.flags.writeable = False
#: ``ANY_KEEP[r, m]``: every keep-mask but keep-all is legal (the envs' ``canonical_keeps=False``).
ANY_KEEP = np.ones((NUM_ROLLS, NUM_KEEPS), dtype=bool)
ANY_KEEP[:, KEEP_ALL] = False
ANY_KEEP.flags.writeable = False


@functools.cache
def open_bits(num_categories: int = NUM_CATEGORIES) -> np.ndarray:
    """``OPEN_BITS[o, k]``: whether category ``k`` is open in open mask ``o`` (bool, ``(2 ** n, n)``, read-only)."""
    table = ((np.arange(1 << num_categories)[:, None] >> np.arange(num_categories)) & 1).astype(bool)
    table.flags.writeable = False
    return table


#: :func:`open_bits` of Yacht's 12 categories, shape (4096, 12).
OPEN_BITS = open_bits(NUM_CATEGORIES)


def _transition_matrix() -> np.ndarray:
    """``P[K, r]``: the chance that keeping multiset ``KEPT[K]`` and re-rolling the rest gives roll ``r``."""
    matrix = np.zeros((NUM_KEPT, NUM_ROLLS))
    for index, kept in enumerate(KEPT):
        n_rolled = NUM_DICE - len(kept)
        outcomes = np.array(list(itertools.product(range(1, NUM_FACES + 1), repeat=n_rolled)), dtype=np.int64)
        codes = FACE_WEIGHT[list(kept)].sum() + FACE_WEIGHT[outcomes].sum(axis=1)
        np.add.at(matrix[index], CODE_TO_ROLL[codes], 1.0)
        matrix[index] /= NUM_FACES**n_rolled
    return matrix


#: ``TRANSITION[K, r]``: chance of roll ``r`` after keeping ``KEPT[K]`` (float64, shape (462, 252)).
#: ``TRANSITION[0]`` (nothing kept) is the distribution of a turn's first roll.
TRANSITION = _transition_matrix()
TRANSITION.flags.writeable = False


def roll_index(dice: np.ndarray | Sequence[int]) -> np.ndarray | int:
    """The sorted-roll index of five dice in any order; batched over leading axes.

    No validation: use :func:`validate_dice` on untrusted input.
    """
    index = CODE_TO_ROLL[FACE_WEIGHT[np.asarray(dice)].sum(axis=-1)]
    return int(index) if np.ndim(index) == 0 else index.astype(np.intp)


def validate_dice(dice: object) -> np.ndarray:
    """Returns ``dice`` as an int8 array of five values in 1..6.

    Raises:
        ValueError: ``dice`` is not five integers (not bools) in 1..6.
    """
    try:
        values = None if isinstance(dice, str) else list(dice)  # type: ignore[call-overload]
    except TypeError:
        values = None
    ok = (
        values is not None
        and len(values) == NUM_DICE
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values)
        and all(1 <= v <= NUM_FACES for v in values)
    )
    if not ok:
        shown = [v.item() if isinstance(v, np.generic) else v for v in values] if values is not None else dice
        raise ValueError(f"dice must be 5 values in 1..6, got {shown!r}")
    return np.array(values, dtype=np.int8)
