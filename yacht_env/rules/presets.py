"""Rule presets: :class:`Rules` (the data that tells two variants apart, and the sizes that follow), the preset
tables (``PRESETS``), :func:`get_rules`; reading a preset's categories and open masks
(:func:`category_index`, :func:`open_mask_from`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from .constants import CATEGORIES, MAX_CATEGORIES, NUM_DICE, NUM_KEEPS, ROLLS_PER_TURN, Category, is_int
from .scoring import CATEGORY_SCORERS, FAMILY_DEFAULTS, FIVE_OF_A_KIND_CATEGORIES, UPPER_CATEGORIES


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
        self._check_values()
        self._check_categories()

    def _check_values(self) -> None:
        """The options and the points: each of its allowed values (``ValueError`` naming the first that is not)."""
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

    def _check_categories(self) -> None:
        """The categories, and what the bonuses and the joker need of them."""
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
        Yahtzee bonus or a joker): the family's rules, never Yacht's presets.
        """
        return bool(self.upper_bonus or self.yahtzee_bonus or self.joker != "none")

    @property
    def bonus_shape(self) -> tuple[int, int]:
        """How many values the state's ``upper`` and ``armed`` take: ``(threshold + 1, 2)`` for Yahtzee, ``(64,
        1)`` for Yatzy, ``(1, 1)`` for Yacht (which tracks neither).
        """
        return (self.upper_bonus_threshold + 1 if self.upper_bonus else 1, 2 if self.yahtzee_bonus else 1)

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
#: Nintendo Clubhouse Games' "Yacht Dice" sheet (and the Korean game's), in the order of its score card.
CLUBHOUSE_CATEGORIES = (
    *UPPER_CATEGORIES,
    "choice",
    "four_of_a_kind",
    "full_house",
    "small_straight",
    "large_straight",
    "yacht",
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
    # Nintendo's Clubhouse Games (51 Worldwide Classics) and the Korean "Yacht Dice", as ho94949/yacht-dice plays
    # them: Yacht's twelve boxes with Yahtzee's run straights (15 and 30), an upper bonus of 35 at 63, Four of a
    # Kind and Full House the sum of all five dice, and five of a kind a Full House too. No Yacht bonus, no joker.
    "clubhouse": Rules(
        "clubhouse",
        categories=CLUBHOUSE_CATEGORIES,
        four_of_a_kind="all_dice",
        yacht_is_full_house=True,
        small_straight=15,
        large_straight=30,
        upper_bonus=35,
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
# A preset's categories and open masks, by name, index or mask
# --------------------------------------------------------------------------------------------------
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
