"""Yacht's sheet and the sizes the rules build on: ``CATEGORIES``, :class:`Category`, the dice, keep and
action counts (Yacht's own where they depend on the preset), and :func:`is_int`.
"""

from __future__ import annotations

import enum

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

    The one such check of the project (every layer imports it from :mod:`yacht_env.rules`, which loads on its own).
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def as_int(value: object) -> int | None:
    """``value`` as an int where it is one: an integer (:func:`is_int`) or a 0-d integer array (``np.array(3)``, as
    some wrappers pass an action); ``None`` for anything else (a bool, a float, an array of another shape).

    The one rule for an action or an outcome given alone: every env's ``step`` and :mod:`yacht_env.chance` read it so.
    """
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    return int(value) if is_int(value) else None
