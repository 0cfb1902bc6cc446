"""The rules tables of one preset, as the JAX core reads them: built once by the numpy rules, exported as arrays.

Nothing here scores: every number is read off :mod:`yacht_env.rules` (the score table, :func:`~yacht_env.rules.
pick_outcome` for the bonuses and jokers, the keep tables, the re-roll codes, the forced joker's placement) and laid
out so that the JAX transition is a few gathers. The observation tables are the rules' own
(:func:`yacht_env.rules.observation_tables`, which :class:`yacht_env.encoding.ObservationEncoder` and
``MultiplayerEncoder`` gather from too), so the observations are the numpy encoders' float32 values by construction;
this package imports neither gymnasium nor torch.

The pick table ``pick[r, k, j, u, a]`` holds what picking category ``k`` with roll ``r`` earns and leaves, for each
joker context ``j`` (bit 1: the five-of-a-kind box is open, bit 0: the face's upper box is open; one context only
for rules without a joker), each upper subtotal ``u`` (capped at the threshold) and each ``armed`` flag ``a``: the
whole of :func:`~yacht_env.rules.pick_outcome` as one table.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from yacht_env import rules as R


class Tables(NamedTuple):
    """A preset's tables as numpy arrays (:func:`numpy_tables`); :func:`device_tables` puts them on the device.

    Fields:

    * ``canonical``, ``any_keep``: ``(252, 32)`` bool, the legal keep-masks of a roll (canonical ones or any but 31).
    * ``kept_code``: ``(252, 32)``: the multiset code of what keep-mask ``m`` keeps of roll ``r``.
    * ``rerolled``: ``(32,)``: dice a keep-mask re-rolls. ``face_weight``: ``(7,)``: a die's weight in a code.
    * ``code_to_roll``: a multiset code of five dice to its sorted roll.
    * ``five_face``: ``(252,)``: the face of a five of a kind (0: not one). ``upper_box``: ``(7,)``: face -> box.
    * ``forced``: ``(7, 2 ** C)``: the forced joker's legal picks (one row of the open mask itself otherwise).
    * ``points``, ``box``, ``upper``, ``armed``: ``(252, C, J, U, A)``: the pick table (module docstring).
    * ``by_roll``, ``by_open``, ``upper_obs``, ``total_fraction``, ``margin``: the rules' observation tables
      (:class:`~yacht_env.rules.ObservationTables`: ``by_roll``, ``by_open``, ``upper``, ...), the very arrays the
      numpy encoders gather from.
    * ``score_now``: ``(252, J, C)`` float32: what each box would hold now, / the score scale (joker included).
    * ``keep``: ``(252, 32)``: the kept multiset (an index of ``yacht_env.rules.KEPT``) of each keep-mask of a roll.
    * ``outcome_probability``: ``(463, 252)`` float32: the chance of each sorted roll after keeping each multiset
      (:data:`yacht_env.rules.TRANSITION`, which :mod:`yacht_env.chance` gives as exact counts), and a last row of
      zeros: nothing falls.
    """

    canonical: np.ndarray
    any_keep: np.ndarray
    kept_code: np.ndarray
    rerolled: np.ndarray
    face_weight: np.ndarray
    code_to_roll: np.ndarray
    five_face: np.ndarray
    upper_box: np.ndarray
    forced: np.ndarray
    points: np.ndarray
    box: np.ndarray
    upper: np.ndarray
    armed: np.ndarray
    by_roll: np.ndarray
    by_open: np.ndarray
    score_now: np.ndarray
    upper_obs: np.ndarray
    total_fraction: np.ndarray
    margin: np.ndarray
    keep: np.ndarray
    outcome_probability: np.ndarray


def joker_contexts(rules: R.Rules) -> int:
    """How many joker contexts the pick table has: 4 with a joker (the two open bits it reads), else 1."""
    return 4 if rules.joker != "none" else 1


def _context_masks(rules: R.Rules) -> np.ndarray:
    """``(252, J)``: an open mask per roll and joker context, with the bits the context names cleared or set."""
    tables = R.pick_tables(rules)
    masks = np.full((R.NUM_ROLLS, joker_contexts(rules)), rules.all_open, dtype=np.int64)
    if rules.joker == "none":
        return masks
    face = R.FIVE_OF_A_KIND_FACE
    for j in range(4):
        if not j >> 1 & 1:
            masks[:, j] &= ~(1 << tables.five_box)
        if not j & 1:
            boxes = tables.upper_box[face]
            clear = np.where((face != 0) & (boxes >= 0), np.int64(1) << np.maximum(boxes, 0), 0)
            masks[:, j] &= ~clear
    return masks


def _pick_table(rules: R.Rules) -> tuple[np.ndarray, ...]:
    """``pick_outcome`` over every roll, category, joker context, capped subtotal and armed flag."""
    num_upper, num_armed = rules.bonus_shape
    shape = (R.NUM_ROLLS, rules.num_categories, joker_contexts(rules), num_upper, num_armed)
    roll = np.arange(R.NUM_ROLLS).reshape(-1, 1, 1, 1, 1)
    category = np.arange(rules.num_categories).reshape(1, -1, 1, 1, 1)
    open_mask = _context_masks(rules)[:, None, :, None, None]
    upper = np.arange(num_upper).reshape(1, 1, 1, -1, 1)
    armed = np.arange(num_armed).reshape(1, 1, 1, 1, -1)
    outcome = R.pick_outcome(rules, roll, category, open_mask, upper, armed)
    return tuple(np.broadcast_to(np.asarray(part), shape).astype(np.int32) for part in outcome)


def _score_now(rules: R.Rules, box: np.ndarray) -> np.ndarray:
    """``(252, J, C)`` float32: what each box would hold now / the score scale, per joker context (the rules'
    ``score_now`` without a joker; the pick table's boxes, scaled as the encoder scales them, with one).
    """
    observation = R.observation_tables(rules)
    if not rules.has_bonuses:
        return np.ascontiguousarray(observation.score_now[:, None, :])
    return np.ascontiguousarray(observation.score_fraction(box[:, :, :, 0, 0]).transpose(0, 2, 1))


@functools.cache
def numpy_tables(rules: R.Rules) -> Tables:
    """The :class:`Tables` of a preset as numpy arrays, built once."""
    picks = R.pick_tables(rules)
    code_to_roll = np.asarray(R.roll_from_code(np.arange(R.NUM_DICE * R.NUM_FACES ** (R.NUM_FACES - 1) + 1)))
    any_keep = np.ones((R.NUM_ROLLS, R.NUM_KEEPS), dtype=bool)
    any_keep[:, R.KEEP_ALL] = False
    forced = np.tile(np.arange(rules.num_open_masks), (R.NUM_FACES + 1, 1))  # row f: a five of a kind of face f
    if rules.joker == "forced":
        forced[1:] = picks.forced[1:]  # row 0 (not a five of a kind) stays the open mask itself
    points, box, upper, armed = _pick_table(rules)
    observation = R.observation_tables(rules)
    return Tables(
        canonical=np.asarray(R.CANONICAL_KEEPS, dtype=bool),
        any_keep=any_keep,
        kept_code=R.KEPT_CODE.astype(np.int32),
        rerolled=R.REROLLED.astype(np.int32),
        face_weight=R.FACE_WEIGHT.astype(np.int32),
        code_to_roll=code_to_roll.astype(np.int32),
        five_face=R.FIVE_OF_A_KIND_FACE.astype(np.int32),
        upper_box=picks.upper_box.astype(np.int32),
        forced=np.asarray(forced, dtype=np.int32),
        points=points,
        box=box,
        upper=upper,
        armed=armed,
        by_roll=observation.by_roll,
        by_open=observation.by_open,
        score_now=_score_now(rules, box),
        upper_obs=observation.upper,
        total_fraction=observation.total_fraction,
        margin=observation.margin,
        keep=R.KEEP.astype(np.int32),
        outcome_probability=np.concatenate([R.TRANSITION, np.zeros((1, R.NUM_ROLLS))]).astype(np.float32),
    )


def observation_size(rules: R.Rules) -> int:
    """The solo flat observation's length (:func:`yacht_env.rules.flat_layout`'s): ``40 + 2 C`` plus the bonus parts."""
    return max(part.stop for part in R.flat_layout(rules).values())


def device_tables(rules: R.Rules) -> Tables:
    """:func:`numpy_tables` as JAX arrays on the default device (made at each call: cache the result per game)."""
    import jax.numpy as jnp

    return Tables(*(jnp.asarray(array) for array in numpy_tables(rules)))
