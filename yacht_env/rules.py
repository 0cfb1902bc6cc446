"""The rules of Yacht: presets, scoring, dice encoding, keep-masks and legal actions.

This module and :mod:`yacht_env.game` (the game state and its one transition, built on these tables) are
the only places that know how Yacht scores, how an action is encoded and how a turn advances. Both are
pure numpy and import neither gymnasium nor torch; the envs, the solver and the agents all read them.

A game's whole state between decisions is three small integers:

* ``roll``: which of the 252 sorted rolls is showing (a row of :data:`ROLLS`),
* ``rolls_left``: 0, 1 or 2 re-rolls still allowed this turn,
* ``open_mask``: a bit mask of the categories still open (bit ``k`` is ``rules.categories[k]``).

Actions (``Discrete(rules.num_actions)``, 44 for Yacht's 12 categories):

* ``a`` in ``0..31`` is a keep-mask: bit ``i`` set (``a >> i & 1``) keeps die ``i`` of the sorted dice,
  the other dice are re-rolled. ``31`` (keep everything) is never legal. By default only the canonical
  (numerically smallest) mask of each distinct kept multiset is legal.
* ``a = 32 + k`` scores the dice in category ``k`` of the preset's sheet.

Sizes that depend on the preset (categories, actions, open masks, dice-stream rows) are properties of
:class:`Rules`; the module constants ``NUM_CATEGORIES``, ``NUM_ACTIONS``, ... are Yacht's own values.
Every function that takes a state accepts plain ints or numpy arrays of any (matching) shape, so the
single env and the vector env share one code path.
"""

from __future__ import annotations

import enum
import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Literal, NamedTuple

import numpy as np

CATEGORIES: tuple[str, ...] = (
    "ones",
    "twos",
    "threes",
    "fours",
    "fives",
    "sixes",
    "full_house",
    "four_of_a_kind",
    "little_straight",
    "big_straight",
    "choice",
    "yacht",
)


class Category(enum.IntEnum):
    """The 12 categories, valued by their index in :data:`CATEGORIES` (and ``action - 32``)."""

    ONES = 0
    TWOS = 1
    THREES = 2
    FOURS = 3
    FIVES = 4
    SIXES = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    LITTLE_STRAIGHT = 8
    BIG_STRAIGHT = 9
    CHOICE = 10
    YACHT = 11


NUM_DICE = 5
NUM_FACES = 6
NUM_ROLLS = 252  # sorted rolls of five dice: C(10, 5)
NUM_KEEPS = 32  # keep-masks over five dice
KEEP_ALL = NUM_KEEPS - 1  # keeps every die, re-rolls nothing: never legal
PICK_OFFSET = NUM_KEEPS  # action 32 + k scores category k
MAX_ROLLS_LEFT = 2  # re-rolls after the automatic first roll of a turn
ROLLS_PER_TURN = MAX_ROLLS_LEFT + 1
MAX_CATEGORIES = 64 - NUM_KEEPS  # a state's legal actions are one 64-bit word (see legal_action_mask)
# Yacht's own sizes (the default preset's); code that serves any preset reads them from its Rules instead.
NUM_CATEGORIES = len(CATEGORIES)
NUM_ACTIONS = NUM_KEEPS + NUM_CATEGORIES
ALL_OPEN = (1 << NUM_CATEGORIES) - 1
NUM_OPEN_MASKS = 1 << NUM_CATEGORIES


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer (Python or numpy) and not a bool (which Python counts as an int).

    The one such check of the project (every layer imports it from here: this module loads on its own).
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


# --------------------------------------------------------------------------------------------------
# Scoring: the one place that knows what each category is worth
# --------------------------------------------------------------------------------------------------
# Each scorer maps a roll's face counts (``counts[f]`` = number of dice showing ``f + 1``) and the preset to
# the points of one category. A preset lists the categories its sheet has; :func:`score_table` tabulates them.
_FACES = np.arange(1, NUM_FACES + 1)


def _upper(face: int) -> Callable[[np.ndarray, Rules], int]:
    return lambda counts, rules: int(counts[face - 1]) * face


def _total(counts: np.ndarray) -> int:
    return int((counts * _FACES).sum())


def _full_house(counts: np.ndarray, rules: Rules) -> int:
    groups = sorted(int(c) for c in counts if c)
    if groups == [2, 3] or (groups == [NUM_DICE] and rules.yacht_is_full_house):
        return _total(counts) if rules.full_house is None else rules.full_house
    return 0


def _four_of_a_kind(counts: np.ndarray, rules: Rules) -> int:
    if counts.max() < 4:
        return 0
    return 4 * int(_FACES[counts.argmax()]) if rules.four_of_a_kind == "four_dice" else _total(counts)


def _three_of_a_kind(counts: np.ndarray, rules: Rules) -> int:
    if counts.max() < 3:
        return 0
    return 3 * int(_FACES[counts.argmax()]) if rules.three_of_a_kind == "three_dice" else _total(counts)


def _one_pair(counts: np.ndarray, rules: Rules) -> int:
    pairs = np.flatnonzero(counts >= 2)
    return 2 * int(_FACES[pairs[-1]]) if len(pairs) else 0


def _two_pairs(counts: np.ndarray, rules: Rules) -> int:
    pairs = np.flatnonzero(counts >= 2)  # two different faces; five of a kind is one face, so not two pairs
    return 2 * int(_FACES[pairs].sum()) if len(pairs) == 2 else 0


def _longest_run(counts: np.ndarray) -> int:
    run = best = 0
    for c in counts:
        run = run + 1 if c else 0
        best = max(best, run)
    return best


def _small_straight(counts: np.ndarray, rules: Rules) -> int:
    if rules.straights == "exact":
        return rules.small_straight if list(counts) == [1, 1, 1, 1, 1, 0] else 0
    return rules.small_straight if _longest_run(counts) >= 4 else 0


def _large_straight(counts: np.ndarray, rules: Rules) -> int:
    if rules.straights == "exact":
        return rules.large_straight if list(counts) == [0, 1, 1, 1, 1, 1] else 0
    return rules.large_straight if _longest_run(counts) == NUM_DICE else 0


def _five_of_a_kind(counts: np.ndarray, rules: Rules) -> int:
    return rules.yacht if counts.max() == NUM_DICE else 0


CATEGORY_SCORERS: dict[str, Callable[[np.ndarray, Rules], int]] = {
    "ones": _upper(1),
    "twos": _upper(2),
    "threes": _upper(3),
    "fours": _upper(4),
    "fives": _upper(5),
    "sixes": _upper(6),
    "full_house": _full_house,
    "four_of_a_kind": _four_of_a_kind,
    "little_straight": lambda counts, rules: rules.little_straight if list(counts) == [1, 1, 1, 1, 1, 0] else 0,
    "big_straight": lambda counts, rules: rules.big_straight if list(counts) == [0, 1, 1, 1, 1, 1] else 0,
    "choice": lambda counts, rules: _total(counts),
    "yacht": _five_of_a_kind,
    # The rest of the family's sheets (Yahtzee, Scandinavian Yatzy); see the presets below.
    "three_of_a_kind": _three_of_a_kind,
    "one_pair": _one_pair,
    "two_pairs": _two_pairs,
    "small_straight": _small_straight,
    "large_straight": _large_straight,
    "chance": lambda counts, rules: _total(counts),
    "yahtzee": _five_of_a_kind,
    "yatzy": _five_of_a_kind,
}
"""Every category a preset's sheet may list, by name: ``scorer(face_counts, rules) -> points``."""

#: The upper section: category name -> the face it counts.
UPPER_CATEGORIES: dict[str, int] = {"ones": 1, "twos": 2, "threes": 3, "fours": 4, "fives": 5, "sixes": 6}
#: The names the five-of-a-kind box goes by on the family's sheets (at most one per sheet).
FIVE_OF_A_KIND_CATEGORIES = ("yacht", "yahtzee", "yatzy")
#: Boxes a joker scores in full (an extra five of a kind counts as a full house and as every straight).
JOKER_CATEGORIES = ("full_house", "little_straight", "big_straight", "small_straight", "large_straight")
#: The family's fields of :class:`Rules` (not in Yacht's presets) with their defaults, which are Yacht's rules.
FAMILY_DEFAULTS: dict[str, object] = {
    "three_of_a_kind": "all_dice",
    "full_house": None,
    "small_straight": 30,
    "large_straight": 40,
    "straights": "run",
    "upper_bonus": 0,
    "upper_bonus_threshold": 63,
    "yahtzee_bonus": 0,
    "joker": "none",
}


# --------------------------------------------------------------------------------------------------
# Rule presets
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rules:
    """A rules preset: the data that tells two Yacht variants apart, and the sizes that follow from it.

    Attributes:
        name: The preset's name.
        four_of_a_kind: ``"four_dice"`` scores 4 x the face (the fifth die never counts);
            ``"all_dice"`` scores the sum of all five dice.
        little_straight: Points for exactly 1-2-3-4-5.
        big_straight: Points for exactly 2-3-4-5-6.
        yacht: Points for five of a kind.
        yacht_is_full_house: Whether five of a kind also counts as a Full House (Reiner Knizia's rules, as
            OpenSpiel's ``yacht`` plays them); Yacht's own rules say it does not.
        categories: The rows of the score sheet, in order (names from :data:`CATEGORY_SCORERS`); a game
            has one turn per category. Defaults to Yacht's 12 (:data:`CATEGORIES`).

    The family's fields (Yahtzee, Scandinavian Yatzy; their defaults are Yacht's rules, :data:`FAMILY_DEFAULTS`):

    Attributes:
        three_of_a_kind: ``"all_dice"`` (Yahtzee: the sum of all five dice) or ``"three_dice"`` (Yatzy: 3 x the
            face); ``four_of_a_kind`` likewise.
        full_house: Fixed points for a full house (Yahtzee: 25); ``None`` scores the sum of the dice.
        small_straight: Points of the ``small_straight`` box; large_straight: of ``large_straight``.
        straights: ``"run"`` (Yahtzee: any four / five faces in sequence) or ``"exact"`` (Yatzy: 1-2-3-4-5 and
            2-3-4-5-6), for the ``small_straight`` and ``large_straight`` boxes.
        upper_bonus: Points once Ones..Sixes total at least ``upper_bonus_threshold`` (0: no upper bonus).
        yahtzee_bonus: Points for every five of a kind rolled while the five-of-a-kind box already holds its
            points, wherever it is scored (0: none).
        joker: When the five-of-a-kind box is filled (with its points or 0), an extra five of a kind scores in
            full in the full house and straight boxes: ``"free"`` once the face's upper box is filled too, and
            any open box may take it (Verhoeff's rules); ``"forced"``: always, but it must go in the face's
            upper box if open, else in an open box outside the upper section, else in an open upper box
            (the official placement); ``"none"``: no joker.

    Every size the envs, the encoder and the solver use comes from here (:attr:`num_categories`,
    :attr:`num_actions`, :attr:`stream_shape`, :attr:`bonus_shape`, ...), so a variant is a new preset, not
    edits elsewhere.
    """

    name: str
    four_of_a_kind: Literal["four_dice", "all_dice"] = "four_dice"
    little_straight: int = 30
    big_straight: int = 30
    yacht: int = 50
    yacht_is_full_house: bool = False
    categories: tuple[str, ...] = CATEGORIES
    three_of_a_kind: Literal["three_dice", "all_dice"] = "all_dice"
    full_house: int | None = None
    small_straight: int = 30
    large_straight: int = 40
    straights: Literal["run", "exact"] = "run"
    upper_bonus: int = 0
    upper_bonus_threshold: int = 63
    yahtzee_bonus: int = 0
    joker: Literal["none", "free", "forced"] = "none"

    def __post_init__(self) -> None:
        choices = {
            "four_of_a_kind": ("four_dice", "all_dice"),
            "three_of_a_kind": ("three_dice", "all_dice"),
            "straights": ("run", "exact"),
            "joker": ("none", "free", "forced"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                listed = " or ".join((", ".join(map(repr, allowed[:-1])), repr(allowed[-1])))
                raise ValueError(f"{name} must be {listed}, got {getattr(self, name)!r}")
        points = ("little_straight", "big_straight", "yacht", "small_straight", "large_straight", "upper_bonus")
        for name in (*points, "yahtzee_bonus"):
            value = getattr(self, name)
            if not is_int(value) or not 0 <= value <= 1000:
                raise ValueError(f"{name} must be an int in 0..1000, got {value!r}")
        if self.full_house is not None and (not is_int(self.full_house) or not 0 <= self.full_house <= 1000):
            raise ValueError(
                f"full_house must be None (the sum of the dice) or an int in 0..1000, got {self.full_house!r}"
            )
        if not is_int(self.upper_bonus_threshold) or not 1 <= self.upper_bonus_threshold <= 105:
            raise ValueError(
                f"upper_bonus_threshold must be an int in 1..105 (Ones..Sixes total at most 105), "
                f"got {self.upper_bonus_threshold!r}"
            )
        if not isinstance(self.yacht_is_full_house, bool):
            raise ValueError(f"yacht_is_full_house must be True or False, got {self.yacht_is_full_house!r}")
        categories = self.categories
        if (
            not isinstance(categories, tuple)
            or not 1 <= len(categories) <= MAX_CATEGORIES
            or len(set(categories)) != len(categories)
            or not all(isinstance(c, str) and c in CATEGORY_SCORERS for c in categories)
        ):
            raise ValueError(
                f"categories must be a tuple of 1..{MAX_CATEGORIES} distinct names from {sorted(CATEGORY_SCORERS)}, "
                f"got {categories!r}"
            )
        if sum(c in FIVE_OF_A_KIND_CATEGORIES for c in categories) > 1:
            raise ValueError(f"categories may list at most one of {FIVE_OF_A_KIND_CATEGORIES}, got {categories!r}")
        if (self.yahtzee_bonus or self.joker != "none") and self.five_of_a_kind_category is None:
            raise ValueError(
                f"a yahtzee_bonus or a joker needs a five-of-a-kind box ({' / '.join(FIVE_OF_A_KIND_CATEGORIES)}) "
                f"among the categories, got {categories!r}"
            )
        if self.joker != "none" and not set(UPPER_CATEGORIES) <= set(categories):
            raise ValueError(f"a joker needs the six upper boxes {tuple(UPPER_CATEGORIES)} among the categories")
        if self.upper_bonus and not set(UPPER_CATEGORIES) & set(categories):
            raise ValueError(
                f"an upper_bonus needs at least one upper box {tuple(UPPER_CATEGORIES)} among the categories"
            )

    @property
    def num_categories(self) -> int:
        """Rows of the score sheet, and so turns in a game (12 for Yacht)."""
        return len(self.categories)

    @property
    def num_turns(self) -> int:
        """Turns in a solo game: one per category."""
        return len(self.categories)

    @property
    def num_actions(self) -> int:
        """Size of the action space: the 32 keep-masks, then one pick per category (44 for Yacht)."""
        return NUM_KEEPS + len(self.categories)

    @property
    def all_open(self) -> int:
        """The open mask of a new game: every category's bit set."""
        return (1 << len(self.categories)) - 1

    @property
    def num_open_masks(self) -> int:
        """How many open masks there are (``2 ** num_categories``)."""
        return 1 << len(self.categories)

    @property
    def stream_shape(self) -> tuple[int, int, int]:
        """Shape of a game's dice stream: ``(turn, roll of the turn, die)``, ``(12, 3, 5)`` for Yacht."""
        return (len(self.categories), ROLLS_PER_TURN, NUM_DICE)

    @property
    def stream_rows(self) -> int:
        """Rows of five dice in a game's dice stream: row ``3 * turn + j`` is roll ``j`` of the turn."""
        return len(self.categories) * ROLLS_PER_TURN

    @property
    def five_of_a_kind_category(self) -> int | None:
        """The index of the five-of-a-kind box (``yacht``, ``yahtzee`` or ``yatzy``), ``None`` if the sheet has none."""
        for k, name in enumerate(self.categories):
            if name in FIVE_OF_A_KIND_CATEGORIES:
                return k
        return None

    @property
    def has_bonuses(self) -> bool:
        """Whether a pick's points can depend on more than the dice and the category (an upper bonus, a
        Yahtzee bonus or a joker): the family's rules, never Yacht's presets."""
        return bool(self.upper_bonus or self.yahtzee_bonus or self.joker != "none")

    @property
    def bonus_shape(self) -> tuple[int, int]:
        """How many values the state's ``upper`` and ``armed`` take: ``(threshold + 1, 2)`` for Yahtzee, ``(64,
        1)`` for Yatzy, ``(1, 1)`` for Yacht (which tracks neither)."""
        return (self.upper_bonus_threshold + 1 if self.upper_bonus else 1, 2 if self.yahtzee_bonus else 1)

    @property
    def max_pick_points(self) -> int:
        """The most one pick can earn, bonuses included (50 for Yacht; 185 for Yahtzee: 50 ... plus both bonuses)."""
        return int(score_table(self).max()) + self.upper_bonus + self.yahtzee_bonus

    @property
    def max_total(self) -> int:
        """A bound on the final score: each box's best score, the upper bonus, and a Yahtzee bonus on every turn
        after the first; the largest possible total for Yacht's presets and Yahtzee's jokers (297 for
        ``standard``, 1575 for ``yahtzee``)."""
        best = score_table(self).max(axis=0).astype(int)
        joker = pick_tables(self).joker_score
        return int(np.maximum(best, joker).sum()) + self.upper_bonus + self.yahtzee_bonus * (self.num_categories - 1)

    def as_dict(self) -> dict[str, object]:
        """The preset's fields, e.g. to key a cache or write a run's config.

        The family's fields (:data:`FAMILY_DEFAULTS`) are listed only where they differ from their defaults, so
        Yacht's presets keep the keys (and cache files) they always had.
        """
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in FAMILY_DEFAULTS or getattr(self, f.name) != FAMILY_DEFAULTS[f.name]
        }


#: Yahtzee's sheet, in the order of the official score card.
YAHTZEE_CATEGORIES = (
    *UPPER_CATEGORIES,
    "three_of_a_kind",
    "four_of_a_kind",
    "full_house",
    "small_straight",
    "large_straight",
    "yahtzee",
    "chance",
)
#: Scandinavian Yatzy's sheet, in the order of its score card.
YATZY_CATEGORIES = (
    *UPPER_CATEGORIES,
    "one_pair",
    "two_pairs",
    "three_of_a_kind",
    "four_of_a_kind",
    "small_straight",
    "large_straight",
    "full_house",
    "chance",
    "yatzy",
)
_YAHTZEE = {"categories": YAHTZEE_CATEGORIES, "four_of_a_kind": "all_dice", "full_house": 25, "upper_bonus": 35}

PRESETS: dict[str, Rules] = {
    "standard": Rules("standard", four_of_a_kind="four_dice"),
    "classic": Rules("classic", four_of_a_kind="all_dice"),
    # Reiner Knizia's description, as OpenSpiel's `yacht` game plays it (the cross-check's preset).
    "knizia": Rules("knizia", four_of_a_kind="all_dice", yacht_is_full_house=True),
    # The family (RULES in the README; yatzy-solver's `american`, `american+forced-joker`, `american+no-joker`,
    # `american+no-bonus` and `yatzy-scandinavian`).
    "yahtzee": Rules("yahtzee", **_YAHTZEE, yahtzee_bonus=100, joker="free"),
    "yahtzee_forced_joker": Rules("yahtzee_forced_joker", **_YAHTZEE, yahtzee_bonus=100, joker="forced"),
    "yahtzee_no_joker": Rules("yahtzee_no_joker", **_YAHTZEE, yahtzee_bonus=100),
    "yahtzee_no_bonus": Rules("yahtzee_no_bonus", **_YAHTZEE),
    "yatzy": Rules(
        "yatzy",
        categories=YATZY_CATEGORIES,
        three_of_a_kind="three_dice",
        small_straight=15,
        large_straight=20,
        straights="exact",
        upper_bonus=50,
    ),
}
#: Yacht's own presets (12 categories, no bonus): the ones the shipped models and OpenSpiel's game play.
YACHT_PRESETS = ("standard", "classic", "knizia")


def get_rules(rules: str | Rules = "standard") -> Rules:
    """Returns the :class:`Rules` for a preset name, or ``rules`` itself if it already is one.

    Raises:
        ValueError: ``rules`` is neither a preset name nor a :class:`Rules`.
    """
    if isinstance(rules, Rules):
        return rules
    if isinstance(rules, str) and rules in PRESETS:
        return PRESETS[rules]
    raise ValueError(f"unknown rules {rules!r}; expected one of {sorted(PRESETS)} or a Rules object")


# --------------------------------------------------------------------------------------------------
# Dice encoding
# --------------------------------------------------------------------------------------------------
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
_CODE_TO_ROLL = np.full(_MAX_CODE + 1, -1, dtype=np.int16)
_CODE_TO_ROLL[FACE_WEIGHT[ROLLS].sum(axis=1)] = np.arange(NUM_ROLLS)
_CODE_TO_ROLL.flags.writeable = False
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
_ANY_KEEP = np.ones((NUM_ROLLS, NUM_KEEPS), dtype=bool)
_ANY_KEEP[:, KEEP_ALL] = False
_ANY_KEEP.flags.writeable = False


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
        np.add.at(matrix[index], _CODE_TO_ROLL[codes], 1.0)
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
    index = _CODE_TO_ROLL[FACE_WEIGHT[np.asarray(dice)].sum(axis=-1)]
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


def category_index(category: int | str | Category, rules: str | Rules = "standard") -> int:
    """The index of a category of ``rules``' sheet given by name, index or :class:`Category`.

    Raises:
        ValueError: not one of the preset's categories.
    """
    categories = get_rules(rules).categories
    if isinstance(category, str):
        if category in categories:
            return categories.index(category)
    elif is_int(category):
        if 0 <= category < len(categories):
            return int(category)
    raise ValueError(
        f"unknown category {category!r}; expected a name in {categories}, an index 0..{len(categories) - 1} "
        f"or a Category"
    )


def open_mask_from(open_categories: object, rules: str | Rules = "standard") -> int:
    """An open mask (bit ``k``: category ``k``) from category names/indices, a 0/1 or boolean mask with one
    entry per category, or an int mask.

    Raises:
        ValueError: the argument cannot be read as a set of ``rules``' categories.
    """
    rules = get_rules(rules)
    n = rules.num_categories
    if is_int(open_categories):
        if 0 <= open_categories <= rules.all_open:
            return int(open_categories)
        raise ValueError(f"an open mask must be an int in 0..{rules.all_open}, got {open_categories!r}")
    if isinstance(open_categories, str):
        open_categories = [open_categories]
    try:
        items = list(open_categories)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(
            f"open categories must be names/indices, a {n}-long boolean mask or an int mask, got {open_categories!r}"
        ) from None
    # A run of 0/1 as long as the sheet (bools or ints, e.g. a slice of an action mask) is a mask, not indices.
    if len(items) == n and all(isinstance(v, (bool, np.bool_, int, np.integer)) and v in (0, 1) for v in items):
        return sum(1 << k for k, is_open in enumerate(items) if is_open)
    mask = 0
    for item in items:
        mask |= 1 << category_index(item, rules)
    return mask


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


def legal_picks(rules: Rules, roll, open_mask):
    """The categories a pick may take, as an open-mask-like word: ``open_mask`` itself, except under the forced
    joker, where an extra five of a kind must go where the official placement says. Scalar or batched."""
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
        roll, category: The sorted roll and the (open, legal) category picked.
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


# --------------------------------------------------------------------------------------------------
# Legal actions and transitions (scalar or batched)
# --------------------------------------------------------------------------------------------------
def _keep_words(legal: np.ndarray) -> np.ndarray:
    """``WORDS[3 * r + rolls_left]``: the legal keep-masks of a state as the low 32 bits of a uint64."""
    words = (legal.astype(np.uint64) << np.arange(NUM_KEEPS, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    table = np.zeros((NUM_ROLLS, ROLLS_PER_TURN), dtype=np.uint64)
    table[:, 1:] = words[:, None]  # keeps only while re-rolls are left
    table = table.reshape(-1)
    table.flags.writeable = False
    return table


_KEEP_WORDS = {True: _keep_words(CANONICAL_KEEPS), False: _keep_words(_ANY_KEEP)}
_KEEP_ROWS = {  # row 3 * roll + rolls_left: the legal keep-masks as 32 bools
    canonical: np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1, count=NUM_KEEPS, bitorder="little").view(bool)
    for canonical, words in _KEEP_WORDS.items()
}
_KEEP_ROW_VIEWS = {canonical: list(rows) for canonical, rows in _KEEP_ROWS.items()}  # one game's rows, made once


@functools.cache
def _pick_rows(num_categories: int) -> list[np.ndarray]:
    """Per open mask, the legal actions with no re-roll left (the open categories' picks), ``(32 + n,)`` bool rows
    made once: one game's mask is a copy of its row, with the legal keeps written in while re-rolls are left."""
    rows = np.zeros((1 << num_categories, NUM_KEEPS + num_categories), dtype=bool)
    rows[:, NUM_KEEPS:] = open_bits(num_categories)
    return list(rows)


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
_CODE_TO_ROLL_LIST = _CODE_TO_ROLL.tolist()


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
    index = _CODE_TO_ROLL[code]
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
    to tell an open box the forced joker's placement rules out from a filled one."""
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
