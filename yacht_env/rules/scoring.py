"""Scoring: the one place that knows what each category is worth.

Every category a sheet may list (:data:`CATEGORY_SCORERS`), the sheet's groups of boxes, and the family's
defaults of :class:`~yacht_env.rules.presets.Rules`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .constants import NUM_DICE, NUM_FACES

# Each scorer maps a roll's face counts (``counts[f]`` = number of dice showing ``f + 1``) and the preset to
# the points of one category. A preset lists the categories its sheet has; :func:`score_table` tabulates them.
# The preset is a ``Rules``, read by its fields; presets.py, which defines it, stands on this module, so the
# type is not imported here (``Preset``).
Preset = Any
_FACES = np.arange(1, NUM_FACES + 1)


def _upper(face: int) -> Callable[[np.ndarray, Preset], int]:
    return lambda counts, rules: int(counts[face - 1]) * face


def _total(counts: np.ndarray) -> int:
    return int((counts * _FACES).sum())


def _full_house(counts: np.ndarray, rules: Preset) -> int:
    groups = sorted(int(c) for c in counts if c)
    if groups == [2, 3] or (groups == [NUM_DICE] and rules.yacht_is_full_house):
        return _total(counts) if rules.full_house is None else rules.full_house
    return 0


def _four_of_a_kind(counts: np.ndarray, rules: Preset) -> int:
    if counts.max() < 4:
        return 0
    return 4 * int(_FACES[counts.argmax()]) if rules.four_of_a_kind == "four_dice" else _total(counts)


def _three_of_a_kind(counts: np.ndarray, rules: Preset) -> int:
    if counts.max() < 3:
        return 0
    return 3 * int(_FACES[counts.argmax()]) if rules.three_of_a_kind == "three_dice" else _total(counts)


def _one_pair(counts: np.ndarray, rules: Preset) -> int:
    pairs = np.flatnonzero(counts >= 2)
    return 2 * int(_FACES[pairs[-1]]) if len(pairs) else 0


def _two_pairs(counts: np.ndarray, rules: Preset) -> int:
    pairs = np.flatnonzero(counts >= 2)  # two different faces; five of a kind is one face, so not two pairs
    return 2 * int(_FACES[pairs].sum()) if len(pairs) == 2 else 0


def _longest_run(counts: np.ndarray) -> int:
    run = best = 0
    for c in counts:
        run = run + 1 if c else 0
        best = max(best, run)
    return best


def _small_straight(counts: np.ndarray, rules: Preset) -> int:
    if rules.straights == "exact":
        return rules.small_straight if list(counts) == [1, 1, 1, 1, 1, 0] else 0
    return rules.small_straight if _longest_run(counts) >= 4 else 0


def _large_straight(counts: np.ndarray, rules: Preset) -> int:
    if rules.straights == "exact":
        return rules.large_straight if list(counts) == [0, 1, 1, 1, 1, 1] else 0
    return rules.large_straight if _longest_run(counts) == NUM_DICE else 0


def _five_of_a_kind(counts: np.ndarray, rules: Preset) -> int:
    return rules.yacht if counts.max() == NUM_DICE else 0


CATEGORY_SCORERS: dict[str, Callable[[np.ndarray, Preset], int]] = {
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
    # The rest of the family's sheets (Yahtzee, Scandinavian Yatzy); see the presets (presets.py).
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
