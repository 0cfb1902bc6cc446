"""The rules of Yacht: presets, scoring, dice encoding, keep-masks and legal actions.

This package and :mod:`yacht_env.game` (the game state and its one transition, built on these tables) are
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
:class:`Rules`, and the bounds its scores set are functions (:func:`max_total`, :func:`max_pick_points`); the module
constants ``NUM_CATEGORIES``, ``NUM_ACTIONS``, ... are Yacht's own values.
Every function that takes a state accepts plain ints or numpy arrays of any (matching) shape, so the
single env and the vector env share one code path.

The rules are one package cut along their concerns, each submodule standing only on those before it:
:mod:`~yacht_env.rules.constants` (the sheet's categories and the sizes), :mod:`~yacht_env.rules.dice` (the dice
encoding and keep tables), :mod:`~yacht_env.rules.scoring` (what each category is worth),
:mod:`~yacht_env.rules.presets` (:class:`Rules` and the presets), :mod:`~yacht_env.rules.picks` (the score tables,
bonuses and jokers), :mod:`~yacht_env.rules.actions` (legal actions and re-rolls) and
:mod:`~yacht_env.rules.observation` (the observation's layout and the float32 tables the numpy and JAX encoders
gather it from). Every name is imported here:
code reads ``yacht_env.rules.<name>`` (``from yacht_env import rules as R``), never a submodule.
"""

from __future__ import annotations

from .actions import (
    KEPT_CODE,
    REROLLED,
    describe_illegal,
    draw_prefix_codes,
    legal_action_mask,
    legal_mask_parts,
    prefix_codes,
    reroll,
    roll_from_code,
    rows_of_dice,
)
from .constants import (
    ALL_OPEN,
    CATEGORIES,
    KEEP_ALL,
    MAX_CATEGORIES,
    MAX_ROLLS_LEFT,
    NUM_ACTIONS,
    NUM_CATEGORIES,
    NUM_DICE,
    NUM_FACES,
    NUM_KEEPS,
    NUM_OPEN_MASKS,
    NUM_ROLLS,
    PICK_OFFSET,
    ROLLS_PER_TURN,
    Category,
    as_int,
    is_int,
)
from .dice import (
    ANY_KEEP,
    CANONICAL_KEEPS,
    CODE_TO_ROLL,
    FACE_WEIGHT,
    KEEP,
    KEEP_BITS,
    KEPT,
    NUM_KEPT,
    OPEN_BITS,
    ROLL_COUNTS,
    ROLL_TUPLES,
    ROLLS,
    TRANSITION,
    open_bits,
    roll_index,
    validate_dice,
)
from .observation import ObservationTables, flat_layout, observation_tables
from .picks import (
    FIVE_OF_A_KIND_FACE,
    FIVE_OF_A_KIND_ROLLS,
    PickTables,
    legal_picks,
    max_pick_points,
    max_total,
    pick_outcome,
    pick_tables,
    score,
    score_table,
)
from .presets import (
    CLUBHOUSE_CATEGORIES,
    PRESETS,
    YACHT_PRESETS,
    YAHTZEE_CATEGORIES,
    YATZY_CATEGORIES,
    Rules,
    category_index,
    get_rules,
    open_mask_from,
)
from .scoring import CATEGORY_SCORERS, FAMILY_DEFAULTS, FIVE_OF_A_KIND_CATEGORIES, JOKER_CATEGORIES, UPPER_CATEGORIES

__all__ = [
    "ALL_OPEN",
    "ANY_KEEP",
    "CANONICAL_KEEPS",
    "CATEGORIES",
    "CATEGORY_SCORERS",
    "CLUBHOUSE_CATEGORIES",
    "CODE_TO_ROLL",
    "Category",
    "FACE_WEIGHT",
    "FAMILY_DEFAULTS",
    "FIVE_OF_A_KIND_CATEGORIES",
    "FIVE_OF_A_KIND_FACE",
    "FIVE_OF_A_KIND_ROLLS",
    "JOKER_CATEGORIES",
    "KEEP",
    "KEEP_ALL",
    "KEEP_BITS",
    "KEPT",
    "KEPT_CODE",
    "MAX_CATEGORIES",
    "MAX_ROLLS_LEFT",
    "NUM_ACTIONS",
    "NUM_CATEGORIES",
    "NUM_DICE",
    "NUM_FACES",
    "NUM_KEEPS",
    "NUM_KEPT",
    "NUM_OPEN_MASKS",
    "NUM_ROLLS",
    "OPEN_BITS",
    "ObservationTables",
    "PICK_OFFSET",
    "PRESETS",
    "PickTables",
    "REROLLED",
    "ROLLS",
    "ROLLS_PER_TURN",
    "ROLL_COUNTS",
    "ROLL_TUPLES",
    "Rules",
    "TRANSITION",
    "UPPER_CATEGORIES",
    "YACHT_PRESETS",
    "YAHTZEE_CATEGORIES",
    "YATZY_CATEGORIES",
    "category_index",
    "describe_illegal",
    "draw_prefix_codes",
    "flat_layout",
    "get_rules",
    "as_int",
    "is_int",
    "legal_action_mask",
    "legal_mask_parts",
    "legal_picks",
    "max_pick_points",
    "max_total",
    "open_bits",
    "observation_tables",
    "open_mask_from",
    "pick_outcome",
    "pick_tables",
    "prefix_codes",
    "reroll",
    "roll_from_code",
    "roll_index",
    "rows_of_dice",
    "score",
    "score_table",
    "validate_dice",
]
