"""The observation's layout and the float32 tables it is gathered from, for the numpy encoder and the JAX core.

:func:`flat_layout` says where each part of a solo observation lies; :func:`observation_tables` holds every value an
observation can take, as rows of float32 tables, so that building one is a few gathers.
:class:`yacht_env.encoding.ObservationEncoder` (the envs), :class:`yacht_env.encoding.MultiplayerEncoder` (the table
view) and :mod:`yacht_env.jax.tables` read these same arrays: their observations are equal bit for bit by
construction. Pure numpy, like the rest of the rules.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from .constants import NUM_CATEGORIES, NUM_DICE, NUM_FACES, NUM_ROLLS, ROLLS_PER_TURN
from .dice import ROLL_COUNTS, ROLLS, open_bits
from .picks import max_total, pick_tables, score_table
from .presets import Rules, get_rules


def flat_layout(num_categories: int | Rules = NUM_CATEGORIES) -> dict[str, slice]:
    """Where each part of the flat observation lies, for a sheet of ``num_categories`` categories (or for a
    :class:`~yacht_env.rules.Rules`, whose bonuses add their parts).

    Keys in order: ``dice``, ``counts``, ``rolls_left``, ``score_now``, ``open``, ``open_fraction``, then
    ``upper`` and ``armed`` where the rules have an upper / a Yahtzee bonus; the last slice's stop is the
    observation's size (64 for Yacht's 12 categories).
    """
    rules = num_categories if isinstance(num_categories, Rules) else None
    n = rules.num_categories if rules is not None else num_categories
    sizes = {
        "dice": NUM_DICE * NUM_FACES,
        "counts": NUM_FACES,
        "rolls_left": ROLLS_PER_TURN,
        "score_now": n,
        "open": n,
        "open_fraction": 1,
    }
    if rules is not None and rules.upper_bonus:
        sizes["upper"] = 2
    if rules is not None and rules.yahtzee_bonus:
        sizes["armed"] = 1
    layout, start = {}, 0
    for name, size in sizes.items():
        layout[name] = slice(start, start + size)
        start += size
    return layout


class ObservationTables(NamedTuple):
    """A preset's observation values as float32 tables (:func:`observation_tables`); ``C`` categories.

    Fields:

    * ``by_roll``: ``(756, 39)``: row ``3 * roll + rolls_left``, the ``dice``, ``counts`` and ``rolls_left`` parts.
    * ``score_now``: ``(252, C)``: each category's points with that roll / ``score_scale`` (the score table's;
      with a joker a box may hold more: :meth:`score_fraction` of its points).
    * ``by_open``: ``(2 ** C, C + 1)``: per open mask, the ``open`` and ``open_fraction`` parts.
    * ``upper``: ``(U, 2)``: per capped upper subtotal ``0..U-1``, the ``upper`` part (one row without an upper
      bonus).
    * ``total_fraction``: ``(max_total + 1,)``: a total / ``max_total`` (the table view's totals).
    * ``margin``: ``(2 max_total + 1,)``: at ``own - best + max_total``, the table view's margin
      ``(own - best) / (2 max_total) + 1/2``.
    * ``score_scale``: the preset's largest box score (50 for Yacht), which keeps ``score_now`` in ``[0, 1]``.

    Every value is the float32 nearest to its exact quotient (one division of integers), however it is gathered.
    """

    by_roll: np.ndarray
    score_now: np.ndarray
    by_open: np.ndarray
    upper: np.ndarray
    total_fraction: np.ndarray
    margin: np.ndarray
    score_scale: float

    def score_fraction(self, points) -> np.ndarray:
        """``points`` (a box's, any shape) / :attr:`score_scale`, float32: as ``score_now`` is made."""
        return _fraction(points, self.score_scale)


def _fraction(numerator, denominator: float) -> np.ndarray:
    """The float32 nearest to ``numerator / denominator`` (integers): float64's quotient, rounded once more to
    float32, is that (a quotient rounded to 53 bits, then to 24, is rounded correctly: 53 >= 2 * 24 + 2).
    """
    return (np.asarray(numerator) / denominator).astype(np.float32)


@functools.cache
def observation_tables(rules: str | Rules = "standard") -> ObservationTables:
    """The :class:`ObservationTables` of a preset, built once and read-only."""
    rules = get_rules(rules)
    n = rules.num_categories
    dice_one_hot = np.zeros((NUM_ROLLS, NUM_DICE, NUM_FACES), dtype=np.float32)
    for r, dice in enumerate(ROLLS):
        dice_one_hot[r, np.arange(NUM_DICE), dice - 1] = 1.0
    roll_part = np.concatenate([dice_one_hot.reshape(NUM_ROLLS, -1), _fraction(ROLL_COUNTS, NUM_DICE)], axis=1)
    by_roll = np.concatenate(
        [
            np.repeat(roll_part, ROLLS_PER_TURN, axis=0),
            np.tile(np.eye(ROLLS_PER_TURN, dtype=np.float32), (NUM_ROLLS, 1)),
        ],
        axis=1,
    )
    # The largest box score (a Yacht's 50 in every preset; a joker's fixed points could pass it in custom rules).
    scale = float(max(score_table(rules).max(), pick_tables(rules).joker_score.max(), 1))
    bits = open_bits(n)
    by_open = np.concatenate([bits, _fraction(bits.sum(axis=1, keepdims=True), n)], axis=1, dtype=np.float32)
    threshold = rules.upper_bonus_threshold
    subtotal = np.arange(rules.bonus_shape[0])
    upper = np.stack([_fraction(np.minimum(subtotal, threshold), threshold), subtotal >= threshold], axis=1)
    top = max_total(rules)
    tables = ObservationTables(
        by_roll=by_roll,
        score_now=_fraction(score_table(rules), scale),
        by_open=by_open,
        upper=upper.astype(np.float32),
        total_fraction=_fraction(np.arange(top + 1), top),
        margin=_fraction(np.arange(2 * top + 1), 2 * top),
        score_scale=scale,
    )
    for table in tables[:-1]:
        table.flags.writeable = False
    return tables
