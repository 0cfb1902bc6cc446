"""What a pick earns: the score tables (:func:`score_table`, :func:`score`), the family's bonuses and jokers
(:func:`pick_tables`, :func:`legal_picks`, :func:`pick_outcome`) and the bounds they set (:func:`max_pick_points`,
:func:`max_total`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .constants import NUM_DICE, NUM_FACES, Category
from .dice import ROLL_COUNTS, roll_index, validate_dice
from .presets import Rules, category_index, get_rules
from .scoring import CATEGORY_SCORERS, UPPER_CATEGORIES


# --------------------------------------------------------------------------------------------------
# Score tables
# --------------------------------------------------------------------------------------------------
@functools.cache
def score_table(rules: str | Rules = "standard") -> np.ndarray:
    """``SCORE[r, k]``: points for scoring sorted roll ``r`` in category ``k`` (int16, ``(252, num_categories)``).

    Built once per preset from :data:`CATEGORY_SCORERS` and read-only.
    """
    rules = get_rules(rules)
    scorers = [CATEGORY_SCORERS[name] for name in rules.categories]
    table = np.array([[scorer(counts, rules) for scorer in scorers] for counts in ROLL_COUNTS], dtype=np.int16)
    table.flags.writeable = False
    return table


def score(dice: Sequence[int], category: int | str | Category, rules: str | Rules = "standard") -> int:
    """Points for scoring ``dice`` (five ints 1..6, any order) in ``category``.

    Args:
        dice: Five dice values in 1..6, in any order.
        category: A name from the preset's categories (:data:`CATEGORIES`), its index or a :class:`Category`.
        rules: A preset name (``"standard"``, ``"classic"``) or a :class:`Rules`.

    Raises:
        ValueError: bad dice, category or rules; the message says what is accepted.

    Example:
        >>> score([4, 4, 4, 4, 1], "four_of_a_kind"), score([4, 4, 4, 4, 1], 7, rules="classic")
        (16, 17)
    """
    values = validate_dice(dice)
    rules = get_rules(rules)
    return int(score_table(rules)[roll_index(values), category_index(category, rules)])


# --------------------------------------------------------------------------------------------------
# The family's picks: bonuses and jokers (Yacht's presets score from the score table alone)
# --------------------------------------------------------------------------------------------------
#: ``FIVE_OF_A_KIND_FACE[r]``: the face (1..6) of roll ``r`` if all five dice show it, else 0.
FIVE_OF_A_KIND_FACE = np.where(ROLL_COUNTS.max(axis=1) == NUM_DICE, ROLL_COUNTS.argmax(axis=1) + 1, 0).astype(np.intp)
FIVE_OF_A_KIND_FACE.flags.writeable = False
#: The six five-of-a-kind rolls, face 1 first.
FIVE_OF_A_KIND_ROLLS = np.flatnonzero(FIVE_OF_A_KIND_FACE)
FIVE_OF_A_KIND_ROLLS.flags.writeable = False


class PickTables(NamedTuple):
    """What a pick needs beyond the score table, per preset (read-only arrays; :func:`pick_tables`).

    Fields:

    * ``score``: :func:`score_table` as ``intp``.
    * ``joker_score``: ``(C,)``: what an extra five of a kind scores in each box when it is a joker (the full house
      and straight boxes score in full; the others as usual, taken from ``score``).
    * ``upper_face``: ``(C,)``: the face an upper box counts (1..6), 0 for the other boxes.
    * ``upper_box``: ``(7,)``: ``upper_box[f]`` is the index of face ``f``'s upper box (-1: not on the sheet).
    * ``five_box``: The five-of-a-kind box's index (-1: not on the sheet).
    * ``upper_bits``: The open-mask bits of the upper boxes.
    * ``forced``: ``(7, 2 ** C)`` int64 (forced joker only, else empty): the legal picks of a five of a kind of face
      ``f`` (row ``f``; row 0 unused) at open mask ``o`` when the joker is in force.
    """

    score: np.ndarray
    joker_score: np.ndarray
    upper_face: np.ndarray
    upper_box: np.ndarray
    five_box: int
    upper_bits: int
    forced: np.ndarray


@functools.cache
def pick_tables(rules: str | Rules = "standard") -> PickTables:
    """The :class:`PickTables` of a preset, built once."""
    rules = get_rules(rules)
    names = rules.categories
    full = {
        "full_house": rules.full_house,
        "little_straight": rules.little_straight,
        "big_straight": rules.big_straight,
        "small_straight": rules.small_straight,
        "large_straight": rules.large_straight,
    }
    joker_score = np.array([full.get(name) or 0 for name in names], dtype=np.intp)
    upper_face = np.array([UPPER_CATEGORIES.get(name, 0) for name in names], dtype=np.intp)
    upper_box = np.full(NUM_FACES + 1, -1, dtype=np.intp)
    for k, face in enumerate(upper_face):
        if face:
            upper_box[face] = k
    upper_bits = int(sum(1 << k for k in np.flatnonzero(upper_face)))
    five_box = -1 if rules.five_of_a_kind_category is None else rules.five_of_a_kind_category
    forced = np.zeros((0, 0), dtype=np.int64)
    if rules.joker == "forced":
        masks = np.arange(rules.num_open_masks, dtype=np.int64)
        forced = np.zeros((NUM_FACES + 1, len(masks)), dtype=np.int64)
        lower = masks & ~upper_bits
        for face in range(1, NUM_FACES + 1):
            own = np.int64(1) << int(upper_box[face])
            forced[face] = np.where(masks & own, own, np.where(lower != 0, lower, masks))
        boxed = (masks >> five_box & 1).astype(bool)  # the box still open: no joker, every open box is legal
        forced[:, boxed] = masks[boxed]
    tables = PickTables(
        score_table(rules).astype(np.intp), joker_score, upper_face, upper_box, five_box, upper_bits, forced
    )
    for array in (tables.score, tables.joker_score, tables.upper_face, tables.upper_box, tables.forced):
        array.flags.writeable = False
    return tables


def max_pick_points(rules: str | Rules = "standard") -> int:
    """The most one pick can earn, bonuses included (50 for Yacht; 185 for Yahtzee: 50 for a Yahtzee, plus both
    bonuses).
    """
    rules = get_rules(rules)
    return int(score_table(rules).max()) + rules.upper_bonus + rules.yahtzee_bonus


def max_total(rules: str | Rules = "standard") -> int:
    """A bound on the final score: each box's best score, the upper bonus, and a Yahtzee bonus on every turn after
    the first; the largest possible total for Yacht's presets and Yahtzee's jokers (297 for ``standard``, 1575 for
    ``yahtzee``).
    """
    rules = get_rules(rules)
    best = np.maximum(score_table(rules).max(axis=0), pick_tables(rules).joker_score)
    return int(best.sum()) + rules.upper_bonus + rules.yahtzee_bonus * (rules.num_categories - 1)


def legal_picks(rules: Rules, roll, open_mask):
    """The categories a pick may take, as an open-mask-like word: ``open_mask`` itself, except under the forced
    joker, where an extra five of a kind must go where the official placement says. Scalar or batched.
    """
    if rules.joker != "forced":
        return open_mask
    tables = pick_tables(rules)
    face = FIVE_OF_A_KIND_FACE[roll]
    if type(roll) is int:
        return int(tables.forced[face, open_mask]) if face else open_mask
    return np.where(face != 0, tables.forced[face, open_mask], open_mask)


def pick_outcome(rules: Rules, roll, category, open_mask, upper=0, armed=0):
    """What picking ``category`` with ``roll`` showing earns and leaves: the one place bonuses and jokers are scored.

    Args:
        rules: The preset.
        roll: The sorted roll.
        category: The (open, legal) category picked.
        open_mask: The open categories before the pick.
        upper: The upper section's subtotal before the pick, capped at ``rules.upper_bonus_threshold`` (always 0
            without an upper bonus).
        armed: Whether the five-of-a-kind box holds its points, so that another five of a kind earns the
            Yahtzee bonus (always 0 without one).

    Returns:
        ``(points, box, upper, armed)``: the points the pick earns (the box's points and any bonus it earns
        now), what the box itself holds (the sheet's entry), and the state's ``upper`` and ``armed`` after it.
        Python ints for scalar inputs, else broadcast arrays.
    """
    tables = pick_tables(rules)
    box = tables.score[roll, category]
    face = FIVE_OF_A_KIND_FACE[roll]
    if rules.joker != "none":
        joker = (face != 0) & ((open_mask >> tables.five_box & 1) == 0)
        if rules.joker == "free":
            joker = joker & ((open_mask >> np.maximum(tables.upper_box[face], 0) & 1) == 0)
        box = np.where(joker, np.maximum(box, tables.joker_score[category]), box)
    points = box
    if rules.yahtzee_bonus:
        points = points + rules.yahtzee_bonus * ((face != 0) & (armed != 0))
        armed = (armed != 0) | ((category == tables.five_box) & (box == rules.yacht) & (rules.yacht > 0))
    if rules.upper_bonus:
        threshold = rules.upper_bonus_threshold
        is_upper = tables.upper_face[category] != 0
        raised = np.where(is_upper, np.minimum(upper + box, threshold), upper)
        points = points + rules.upper_bonus * ((upper < threshold) & (raised >= threshold))
        upper = raised
    if np.ndim(points) == 0:
        return int(points), int(box), int(upper), int(armed)
    shape = np.shape(points)
    return (
        np.asarray(points),
        np.broadcast_to(box, shape).copy(),
        np.broadcast_to(upper, shape).astype(np.intp),
        np.broadcast_to(armed, shape).astype(np.intp),
    )
