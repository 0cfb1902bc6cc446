"""Legal actions and transitions (scalar or batched): :func:`legal_action_mask`, the re-roll's prefix codes,
:func:`reroll`, and :func:`describe_illegal`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence

import numpy as np

from .constants import (
    CATEGORIES,
    KEEP_ALL,
    NUM_CATEGORIES,
    NUM_DICE,
    NUM_FACES,
    NUM_KEEPS,
    NUM_ROLLS,
    PICK_OFFSET,
    ROLLS_PER_TURN,
)
from .dice import ANY_KEEP, CANONICAL_KEEPS, CODE_TO_ROLL, FACE_WEIGHT, KEEP, KEEP_BITS, ROLLS, open_bits


def _keep_words(legal: np.ndarray) -> np.ndarray:
    """``WORDS[3 * r + rolls_left]``: the legal keep-masks of a state as the low 32 bits of a uint64."""
    words = (legal.astype(np.uint64) << np.arange(NUM_KEEPS, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    table = np.zeros((NUM_ROLLS, ROLLS_PER_TURN), dtype=np.uint64)
    table[:, 1:] = words[:, None]  # keeps only while re-rolls are left
    table = table.reshape(-1)
    table.flags.writeable = False
    return table


_KEEP_WORDS = {True: _keep_words(CANONICAL_KEEPS), False: _keep_words(ANY_KEEP)}
_KEEP_ROWS = {  # row 3 * roll + rolls_left: the legal keep-masks as 32 bools
    canonical: np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1, count=NUM_KEEPS, bitorder="little").view(bool)
    for canonical, words in _KEEP_WORDS.items()
}
_KEEP_ROW_VIEWS = {canonical: list(rows) for canonical, rows in _KEEP_ROWS.items()}  # one game's rows, made once


@functools.cache
def _pick_rows(num_categories: int) -> list[np.ndarray]:
    """Per open mask, the legal actions with no re-roll left (the open categories' picks), ``(32 + n,)`` bool rows
    made once: one game's mask is a copy of its row, with the legal keeps written in while re-rolls are left.
    """
    rows = np.zeros((1 << num_categories, NUM_KEEPS + num_categories), dtype=bool)
    rows[:, NUM_KEEPS:] = open_bits(num_categories)
    return list(rows)


@functools.cache
def legal_mask_parts(canonical_keeps: bool = True, num_categories: int = NUM_CATEGORIES) -> tuple[list[bytes], ...]:
    """One state's legal actions as two halves of bytes, made once: ``keeps[3 * roll + rolls_left]`` (the 32
    keep-masks: the legal ones while re-rolls are left, none after) and ``picks[open_mask]`` (one byte per category).

    ``np.frombuffer(keeps[3 * roll + rolls_left] + picks[open_mask], dtype=bool)`` is :func:`legal_action_mask` of
    that state as a read-only array, in about half the time of its writable copy: the single game's core keeps its
    mask so (:class:`yacht_env.game.GameState`).
    """
    keeps = [row.tobytes() for row in _KEEP_ROWS[canonical_keeps]]
    picks = [row.tobytes() for row in open_bits(num_categories).astype(bool)]
    return keeps, picks


def legal_action_mask(
    roll, rolls_left, open_mask, canonical_keeps: bool = True, num_categories: int = NUM_CATEGORIES
) -> np.ndarray:
    """Legal actions of a state, shape ``(..., 32 + num_categories)`` bool (``Rules.num_actions``).

    Keep-masks are legal while re-rolls are left (never ``31``; only canonical masks unless
    ``canonical_keeps`` is False); a category pick is legal iff that category is open.
    """
    if type(roll) is int:  # the single env's fast path: a copy of a row made once, the keeps written in
        mask = _pick_rows(num_categories)[open_mask].copy()
        if rolls_left:
            mask[:NUM_KEEPS] = _KEEP_ROW_VIEWS[canonical_keeps][roll * ROLLS_PER_TURN + rolls_left]
        return mask
    # Action a is bit a of one 64-bit word per state; unpacking the words is faster than gathers.
    words = _KEEP_WORDS[canonical_keeps][np.asarray(roll) * ROLLS_PER_TURN + rolls_left] | (
        np.asarray(open_mask, dtype=np.uint64) << np.uint64(NUM_KEEPS)
    )
    words = np.asarray(words, dtype="<u8")
    shape = words.shape
    as_bytes = words.reshape(-1).view(np.uint8).reshape(*shape, 8)
    return np.unpackbits(as_bytes, axis=-1, count=NUM_KEEPS + num_categories, bitorder="little").view(bool)


# A re-roll replaces the unkept dice by the FIRST m values of a row of five fresh dice (m = number of
# dice re-rolled). Storing each row as its prefix codes makes a re-roll three table lookups.
#: ``KEPT_CODE[r, m]``: the multiset code of what keep-mask ``m`` keeps of roll ``r`` (int32, (252, 32)).
KEPT_CODE = np.array(
    [[FACE_WEIGHT[ROLLS[r][KEEP_BITS[m]]].sum() for m in range(NUM_KEEPS)] for r in range(NUM_ROLLS)],
    dtype=np.int32,
)
KEPT_CODE.flags.writeable = False
#: ``REROLLED[m]``: how many dice keep-mask ``m`` re-rolls.
REROLLED = NUM_DICE - KEEP_BITS.sum(axis=1).astype(np.intp)
REROLLED.flags.writeable = False
# The re-roll's tables as Python lists, for one game on Python ints (a list lookup costs less than a numpy scalar).
_KEPT_CODE_LISTS = KEPT_CODE.tolist()
_REROLLED_LIST = REROLLED.tolist()
_CODE_TO_ROLL_LIST = CODE_TO_ROLL.tolist()


def _prefix_table() -> np.ndarray:
    rows = np.array(list(itertools.product(range(1, NUM_FACES + 1), repeat=NUM_DICE)), dtype=np.int64)
    table = np.zeros((len(rows), NUM_DICE + 1), dtype=np.int32)
    np.cumsum(FACE_WEIGHT[rows], axis=1, out=table[:, 1:])
    table.flags.writeable = False
    return table


#: ``_ROW_PREFIX[v]``: prefix codes of the row of five dice whose base-6 digits (face - 1, die 0
#: first) spell ``v`` in 0..7775.
_ROW_PREFIX = _prefix_table()
_DIGIT_WEIGHT = NUM_FACES ** np.arange(NUM_DICE - 1, -1, -1)


def prefix_codes(fresh_dice: np.ndarray) -> np.ndarray:
    """Prefix codes of rows of five fresh dice: ``[..., j]`` is the code of the row's first ``j`` dice.

    Shape ``(..., 5)`` -> ``(..., 6)`` int32; ``[..., 5]`` is the code of the whole row.
    """
    return _ROW_PREFIX[(np.asarray(fresh_dice, dtype=np.int64) - 1) @ _DIGIT_WEIGHT]


def draw_prefix_codes(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Draws rows of five fair dice from ``rng`` as their prefix codes, shape ``shape + (6,)``.

    One draw per row: the row is the base-6 number ``rng.integers(7776)``, die 0 its leading digit;
    the result equals ``prefix_codes(rows_of_dice(number))``, so drawn and given streams play alike.
    """
    return _ROW_PREFIX[rng.integers(0, len(_ROW_PREFIX), size=shape)]


def rows_of_dice(values: np.ndarray) -> np.ndarray:
    """The five dice (values 1..6, shape ``(..., 5)``) of row numbers in 0..7775 (die 0 leading digit)."""
    values = np.asarray(values, dtype=np.int64)
    return (values[..., None] // _DIGIT_WEIGHT % NUM_FACES + 1).astype(np.int8)


def roll_from_code(code) -> np.ndarray | int:
    """The sorted-roll index of a five-dice multiset code (e.g. ``prefix_codes(dice)[..., 5]``)."""
    if type(code) is int:  # one game on Python ints: a list lookup
        return _CODE_TO_ROLL_LIST[code]
    index = CODE_TO_ROLL[code]
    return int(index) if isinstance(index, np.generic) else index.astype(np.intp)


def reroll(roll, keep_mask, fresh_codes) -> np.ndarray | int:
    """The roll after keeping ``keep_mask`` of ``roll`` and re-rolling the other dice.

    Args:
        roll: Sorted-roll index (or array of them).
        keep_mask: Keep-mask 0..30 over the sorted dice.
        fresh_codes: :func:`prefix_codes` of a row of five fresh dice, shape ``(..., 6)``; the
            ``m`` re-rolled dice take the row's first ``m`` values. One game may pass the row as a list of
            Python ints (with ``roll`` and ``keep_mask`` ints): then the result comes from list lookups.
    """
    if type(fresh_codes) is list:  # one game on Python ints (GameState's): the same tables as lists
        return _CODE_TO_ROLL_LIST[_KEPT_CODE_LISTS[roll][keep_mask] + fresh_codes[_REROLLED_LIST[keep_mask]]]
    fresh_codes = np.asarray(fresh_codes)
    m = REROLLED[keep_mask]
    if fresh_codes.ndim == 1:
        fresh = fresh_codes[m]
    else:
        fresh = np.take_along_axis(fresh_codes, np.asarray(m)[..., None], axis=-1)[..., 0]
    return roll_from_code(KEPT_CODE[roll, keep_mask] + fresh)


def describe_illegal(
    action: int, roll: int, rolls_left: int, categories: Sequence[str] = CATEGORIES, open_mask: int | None = None
) -> str:
    """Why ``action`` is illegal in a state (assumes it is, under the env's legality rules); give ``open_mask``
    to tell an open box the forced joker's placement rules out from a filled one.
    """
    if action >= PICK_OFFSET:
        name = categories[action - PICK_OFFSET]
        if open_mask is not None and open_mask >> (action - PICK_OFFSET) & 1:
            return (
                f"action {action} scores {name!r}, which the joker's placement rules out: an extra five of a kind "
                f"goes in its face's upper box if open, else in an open box outside the upper section"
            )
        return f"action {action} scores {name!r}, which is already filled"
    if rolls_left == 0:
        return f"action {action} is a keep-mask but no re-rolls are left this turn"
    if action == KEEP_ALL:
        return "action 31 keeps all five dice and re-rolls nothing"
    canonical = int(np.flatnonzero(KEEP[roll] == KEEP[roll, action])[0])
    return (
        f"action {action} keeps the same dice as mask {canonical}; with canonical_keeps=True only the "
        f"smallest mask of each kept multiset is legal"
    )
