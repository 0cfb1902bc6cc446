"""The exact optimal policy of solo Yacht and its family, by backward induction over the rules core's tables.

A decision state is ``(open_mask, roll, rolls_left)`` (see :mod:`yacht_env.rules`); under the family's rules
(``rules.has_bonuses``: Yahtzee, Yatzy) a turn start also carries the bonus state ``(upper, armed)``, the upper
subtotal capped at the threshold and whether the Yahtzee box holds its points. Write ``S`` for the expected
points from the start of a turn to the end of the game (``S = 0`` once every category is filled), ``P`` for
``TRANSITION``. For each turn-start state, in order of increasing number of open categories (so every state a
pick leads to is already solved):

* ``V0[r] = max over legal k of points(r, k) + S[the state after k]``: no re-rolls left, a category must be
  picked (Yacht: ``SCORE[r, k] + S[O without k]``; the family: :func:`yacht_env.rules.pick_outcome`, bonuses
  and jokers included, over the picks :func:`yacht_env.rules.legal_picks` allows);
* ``EK_t[K] = sum over r' of P[K, r'] * V_{t-1}[r']``: keeping multiset ``K`` with ``t`` re-rolls left re-rolls
  the other dice and goes on with ``t - 1``;
* ``V_t[r] = max(V0[r], max over sub-multisets K of r of EK_t[K])`` for ``t = 1, 2``;
* ``S = sum over r of P[empty, r] * V2[r]``: a turn starts with a roll of all five dice.

Keeping all five dice (mask ``31``) is never legal and never needed: it leads to the same roll with fewer
re-rolls, which cannot beat acting now.

**Yacht's presets** (no bonuses; 4,096 open masks): all masks of one popcount are solved together, ``EK_t`` as
one matrix product ``V_{t-1} @ P.T`` and the max over a roll's sub-multisets level by level (the best
sub-multiset of ``K`` is ``K`` itself or the best sub-multiset of one of its children, ``K`` less one die); about
0.05 s. :class:`Solution` keeps ``S`` ``(4096,)`` and ``EK_1``, ``EK_2`` ``(2, 4096, 210)`` (for the 210 multisets
of 0..4 dice a legal keep can keep; 14 MB); every action value is a lookup into them.

**The family** (about 0.5 M reachable turn-start states for Yahtzee, 1.4 M for Yatzy): only ``S`` is kept,
``(num_open_masks, *rules.bonus_shape)``, NaN at the states no game reaches (an upper subtotal the filled
upper boxes cannot make, an armed Yahtzee box that is not filled). A level (all reachable states with the same
number of open categories) is solved in chunks of states with the values laid out (rolls, states): ``V0`` from
pick tables built once from ``pick_outcome`` (a roll that is not five of a kind scores by its box's score
alone, so each category needs one representative roll per distinct score; the six five-of-a-kind rolls carry
the joker and the Yahtzee bonus), ``EK_t`` by adding one fresh die at a time (``EK[K]`` is the mean of
``EK[K + one die]`` over the six faces), the best sub-multisets level by level. Yahtzee solves in a few
seconds on two cores, well under 100 MB. Within-turn values are recomputed on demand for the batch of
positions a query asks about (a pick: its points plus ``S``; a keep: the same recurrence for its state).

Solutions are cached on disk (``$YACHT_RL_CACHE_DIR`` or ``~/.cache/yacht-rl``), one ``.npz`` per rules,
verified on every load, and memoised in-process.

Example:
    >>> from yacht_env.solver import solve
    >>> solution = solve("standard")
    >>> round(solution.expected_score, 2)
    166.96
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.util import load_arrays, memoised_cache, save_arrays

SOLVER_FORMAT_VERSION = 1  # bump when the recurrence or the stored arrays change; old cache files are ignored
FAMILY_FORMAT_VERSION = 1  # likewise for the family's files only (Yacht's presets keep their keys and files)
CACHE_DIR_ENV = "YACHT_RL_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/yacht-rl")

_KEPT_SIZE = np.array([len(kept) for kept in R.KEPT])
#: Kept multisets of 0..4 dice (all a legal keep can keep) come first in ``KEPT``; only they get values.
NUM_PROPER_KEPT = int((_KEPT_SIZE < R.NUM_DICE).sum())
assert (_KEPT_SIZE[:NUM_PROPER_KEPT] < R.NUM_DICE).all(), "rules.KEPT is expected to be ordered by size"
assert (np.delete(R.KEEP, R.KEEP_ALL, axis=1) < NUM_PROPER_KEPT).all()


def keep_values_shape(rules: str | R.Rules = "standard") -> tuple[int, int, int]:
    """Shape of :attr:`Solution.keep_values`: ``(2, num_open_masks, 210)``."""
    return (R.MAX_ROLLS_LEFT, R.get_rules(rules).num_open_masks, NUM_PROPER_KEPT)


#: Yacht's (12 categories): (2, 4096, 210).
KEEP_VALUES_SHAPE = keep_values_shape()


def _category_bits(rules: R.Rules) -> np.ndarray:
    return 1 << np.arange(rules.num_categories)


# KEEP with the keep-all column (never legal, and never valued) pointed at column 0, so gathers stay in bounds.
_KEEP_PROPER = R.KEEP.astype(np.intp)
_KEEP_PROPER[:, R.KEEP_ALL] = 0


def _one_die_less() -> dict[int, set[int]]:
    """The "one die less" relation between kept multisets, read off ``KEEP``: index in ``KEPT`` -> its children."""
    children: dict[int, set[int]] = {}
    for r in range(R.NUM_ROLLS):
        for m in range(R.NUM_KEEPS):
            parent = int(R.KEEP[r, m])
            children.setdefault(parent, set()).update(
                int(R.KEEP[r, m & ~(1 << i)]) for i in range(R.NUM_DICE) if m >> i & 1
            )
    return children


def _child_tables() -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """The "one die less" relation between kept multisets as padded tables.

    Returns ``levels`` and ``roll_children``. ``levels[j - 1] = (parents, children)``: the kept multisets
    of ``j`` dice and, per parent, its distinct children (``j - 1`` dice), padded to ``j`` columns by
    repeating one. ``roll_children[r]``: the multisets of four dice under roll ``r``, padded to 5.
    """
    children = _one_die_less()

    def padded(parents: np.ndarray, width: int) -> np.ndarray:
        rows = [sorted(children[int(p)]) for p in parents]
        return np.array([row + row[:1] * (width - len(row)) for row in rows], dtype=np.intp)

    levels = []
    for size in range(1, R.NUM_DICE):
        parents = np.flatnonzero(_KEPT_SIZE == size)
        levels.append((parents, padded(parents, size)))
    rolls_as_kept = R.KEEP[:, R.KEEP_ALL]  # roll r is the kept multiset of all its dice
    return levels, padded(rolls_as_kept, R.NUM_DICE)


_LEVELS, _ROLL_CHILDREN = _child_tables()


def _best_keep(keep_values: np.ndarray) -> np.ndarray:
    """``(n, 252)``: per roll, the best of ``keep_values`` (``(n, 210)``) over its proper sub-multisets."""
    best = keep_values.copy()
    for parents, children in _LEVELS:
        below = best[:, children[:, 0]]
        for c in range(1, children.shape[1]):
            np.maximum(below, best[:, children[:, c]], out=below)
        best[:, parents] = np.maximum(best[:, parents], below)
    result = best[:, _ROLL_CHILDREN[:, 0]]
    for c in range(1, _ROLL_CHILDREN.shape[1]):
        np.maximum(result, best[:, _ROLL_CHILDREN[:, c]], out=result)
    return result


def _solve_arrays(rules: R.Rules) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction: returns ``start_values`` (4096,) and ``keep_values`` (2, 4096, 210), float64
    (for Yacht's 12 categories; ``num_open_masks`` in general)."""
    score = R.score_table(rules).astype(np.float64)  # (252, num_categories)
    transition_t = np.ascontiguousarray(R.TRANSITION[:NUM_PROPER_KEPT].T)  # (252, 210)
    first_roll = R.TRANSITION[0]
    open_bits, category_bits = R.open_bits(rules.num_categories), _category_bits(rules)
    popcounts = open_bits.sum(axis=1)
    start_values = np.zeros(rules.num_open_masks)
    keep_values = np.zeros(keep_values_shape(rules))
    for popcount in range(1, rules.num_categories + 1):
        masks = np.flatnonzero(popcounts == popcount)
        # Picking k scores it now and leaves O without k, whose value is already known.
        leave = np.where(open_bits[masks], start_values[masks[:, None] & ~category_bits], -np.inf)
        value = np.full((len(masks), R.NUM_ROLLS), -np.inf)  # V0, (n, 252)
        for k in range(rules.num_categories):  # one pass per category beats one max over a short last axis
            np.maximum(value, leave[:, k, None] + score[:, k], out=value)
        pick_now = value
        for t in range(1, R.MAX_ROLLS_LEFT + 1):
            expected = value @ transition_t  # EK_t, (n, 210)
            keep_values[t - 1, masks] = expected
            value = np.maximum(pick_now, _best_keep(expected))  # V_t
        start_values[masks] = value @ first_roll
    return start_values, keep_values


# --------------------------------------------------------------------------------------------------
# The family (rules with bonuses): a level of turn-start states at once, values laid out (rows, states)
# --------------------------------------------------------------------------------------------------
# Within a turn every value is a (rows, states) array, so each step is a whole-row operation on a chunk of
# states. Rows follow an internal order: rolls by their number of distinct faces (most first), kept multisets
# by size and then likewise. A multiset of d distinct faces has d children (one die less), so "the rows with at
# least c + 1 children" is a prefix of the rows and the best-sub-multiset pass wastes no work on padding.
def _row_tables():
    children = _one_die_less()
    distinct = np.array([len(set(kept)) for kept in R.KEPT[:NUM_PROPER_KEPT]])
    kept_order = np.lexsort((-distinct, _KEPT_SIZE[:NUM_PROPER_KEPT]))
    roll_order = np.argsort(-(R.ROLL_COUNTS > 0).sum(axis=1), kind="stable")
    kept_row, roll_row = np.argsort(kept_order), np.argsort(roll_order)

    def subsets(parents: np.ndarray) -> tuple[np.ndarray, list[int]]:
        rows = [sorted(int(kept_row[c]) for c in children[int(p)]) for p in parents]
        width = max(len(row) for row in rows)
        table = np.array([row + row[:1] * (width - len(row)) for row in rows], dtype=np.intp)
        return table, [sum(len(row) > c for row in rows) for c in range(width)]

    sizes = _KEPT_SIZE[kept_order]
    spans = [(int((sizes < j).sum()), int((sizes <= j).sum())) for j in range(R.NUM_DICE)]
    levels = [(lo, hi, *subsets(kept_order[lo:hi])) for lo, hi in spans[1:]]
    index = {kept: i for i, kept in enumerate(R.KEPT)}
    supersets = np.array(  # the row of K plus one die of each face: a roll's row for K of four dice
        [
            [
                roll_row[R.roll_index(list(R.KEPT[k]) + [face])]
                if len(R.KEPT[k]) == R.NUM_DICE - 1
                else kept_row[index[tuple(sorted((*R.KEPT[k], face)))]]
                for face in range(1, R.NUM_FACES + 1)
            ]
            for k in kept_order
        ],
        dtype=np.intp,
    )
    return roll_order, kept_row, spans, supersets, levels, subsets(R.KEEP[roll_order, R.KEEP_ALL])


_ROLL_ORDER, _KEPT_ROW, _SIZE_SPANS, _SUPERSETS, _SUBSETS, _ROLL_SUBSETS = _row_tables()
#: ``_KEEP_ROW[r, m]``: the row of what keep-mask ``m`` keeps of roll ``r`` (keep-all: row 0, never legal).
_KEEP_ROW = _KEPT_ROW[_KEEP_PROPER]
_FIRST_ROLL = np.ascontiguousarray(R.TRANSITION[0][_ROLL_ORDER])
_CHUNK = 256  # states per chunk: a (252, 256) float64 array is 0.5 MB, so a chunk's work stays in cache
_THREADS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _expected_keeps(values: np.ndarray) -> np.ndarray:
    """``EK`` ``(210, n)`` from ``V`` ``(252, n)`` (rows): re-rolling around ``K`` adds one fresh die at a time,
    so ``EK[K]`` is the mean over the six faces of ``EK[K + face]`` (of ``V`` for ``K`` of four dice)."""
    keeps = np.empty((NUM_PROPER_KEPT, values.shape[1]))
    for size in range(R.NUM_DICE - 1, -1, -1):
        lo, hi = _SIZE_SPANS[size]
        source = values if size == R.NUM_DICE - 1 else keeps
        total = source[_SUPERSETS[lo:hi, 0]]
        for face in range(1, R.NUM_FACES):
            total += source[_SUPERSETS[lo:hi, face]]
        np.multiply(total, 1 / R.NUM_FACES, out=keeps[lo:hi])
    return keeps


def _best_keeps(keeps: np.ndarray) -> np.ndarray:
    """``(252, n)``: per roll, the best of ``keeps`` ``(210, n)`` over its proper sub-multisets (rows; ``keeps``
    is overwritten with the best over each multiset's sub-multisets)."""
    for lo, hi, children, prefixes in _SUBSETS:
        below = keeps[children[:, 0]]
        for c, count in enumerate(prefixes[1:], 1):
            np.maximum(below[:count], keeps[children[:count, c]], out=below[:count])
        np.maximum(keeps[lo:hi], below, out=keeps[lo:hi])
    children, prefixes = _ROLL_SUBSETS
    best = keeps[children[:, 0]]
    for c, count in enumerate(prefixes[1:], 1):
        np.maximum(best[:count], keeps[children[:count, c]], out=best[:count])
    return best


class _Picks:
    """``V0`` of chunks of turn-start states under a family's rules: tables built once from the rules core.

    Every point value comes from :func:`~yacht_env.rules.pick_outcome` and every legal pick from
    :func:`~yacht_env.rules.legal_picks`, evaluated on compact domains. A roll that is not five of a kind scores by
    its box's score alone (no joker, no Yahtzee bonus), whatever is open: the outcome of picking ``k`` depends on
    the roll through ``SCORE[r, k]`` only, and on the state through its bonus state. So each category gets one
    representative roll per distinct score (a *class*), valued at every bonus state. A five of a kind also depends
    on whether the five-of-a-kind box and the face's upper box are open (the joker's two conditions, from
    :func:`~yacht_env.rules.pick_tables`), and its legal picks on the whole open mask.

    States are ``(open_mask, bonus)`` with ``bonus = upper * armed_states + armed``; ``ahead[0] = -inf`` and
    ``ahead[1 + open_mask * width + bonus]`` is ``S`` of each state already solved.
    """

    def __init__(self, rules: R.Rules):
        self.rules = rules
        tables = R.pick_tables(rules)
        uppers, armed_states = rules.bonus_shape
        self.width = width = uppers * armed_states
        upper, armed = np.divmod(np.arange(width), armed_states)
        plain = np.flatnonzero(R.FIVE_OF_A_KIND_FACE == 0)
        points, leads, lead_bit, row_lead, floors = [], [], [], [], []
        entries: list[list[int]] = [[] for _ in range(R.NUM_ROLLS)]
        for k in range(rules.num_categories):
            scores, first, cls = np.unique(tables.score[plain, k], return_index=True, return_inverse=True)
            outcome = R.pick_outcome(rules, plain[first][:, None], k, rules.all_open, upper, armed)
            got, _, up, arm = np.broadcast_arrays(*outcome, np.empty((len(scores), width)))[:4]
            lead = up * armed_states + arm  # (classes, width): the bonus state each class leads to
            distinct, which = np.unique(lead, axis=0, return_inverse=True)
            row = len(row_lead)
            points.append(got.astype(np.float64))
            row_lead += list(len(leads) + which.ravel())
            leads += list(distinct)
            lead_bit += [1 << k] * len(distinct)
            # The lowest class (np.unique sorts) is every roll's fallback when all classes lead to the same state
            # and score at least as much: then it joins one shared row, the max of such fallbacks, and a roll
            # needs a row of its own only for the classes above it.
            floor = len(distinct) == 1 and bool((got >= got[0]).all())
            floors += [row] if floor else []
            for r, j in zip(plain, cls.ravel(), strict=True):
                if j or not floor:
                    entries[r].append(row + j)
        self.points, self.row_lead = np.concatenate(points), np.array(row_lead, dtype=np.intp)
        self.floors = np.array(floors, dtype=np.intp)
        self.leads, self.lead_bit = np.array(leads, dtype=np.intp), np.array(lead_bit)
        # Rolls with the most rows first (five of a kind last, filled apart), so each column is a prefix.
        counts = np.array([len(e) if R.FIVE_OF_A_KIND_FACE[r] == 0 else -1 for r, e in enumerate(entries)])
        order = np.argsort(-counts, kind="stable")
        width_e = int(counts.max())
        self.entries = np.array([entries[r] + [0] * (width_e - len(entries[r])) for r in order], dtype=np.intp)
        self.prefixes = [int((counts > c).sum()) for c in range(width_e)]
        position = np.argsort(order)
        self.to_rows = position[_ROLL_ORDER]  # row i of the turn's values is row to_rows[i] here
        self.five_at = position[R.FIVE_OF_A_KIND_ROLLS]
        # Five of a kind: per face, category, variant (bit 0: five-of-a-kind box open, bit 1: the face's box open)
        # and bonus state. A representative open mask has every other box open.
        bit = lambda box: 1 << int(box) if box >= 0 else 0  # noqa: E731
        self.joker_bits = np.array([[bit(tables.five_box), bit(tables.upper_box[f])] for f in range(1, 7)])
        variant = np.arange(4)
        cleared = self.joker_bits[:, :1] * (variant & 1 == 0) | self.joker_bits[:, 1:] * (variant >> 1 == 0)
        self.category_bits = 1 << np.arange(rules.num_categories)
        outcome = R.pick_outcome(
            rules,
            R.FIVE_OF_A_KIND_ROLLS[:, None, None, None],
            np.arange(rules.num_categories),
            (rules.all_open & ~cleared)[:, :, None, None],
            upper[:, None],
            armed[:, None],
        )
        shape = (R.NUM_FACES, 4, width, rules.num_categories)  # face, variant, bonus state, category
        got, _, up, arm = np.broadcast_arrays(*outcome, np.empty(shape))[:4]
        self.five_points = got.reshape(-1, rules.num_categories).astype(np.float64)
        self.five_leads = (up * armed_states + arm).reshape(-1, rules.num_categories)

    def values(self, ahead: np.ndarray, open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
        """``V0`` ``(252, n)`` (rows) of states ``(open_mask, bonus)`` ``(n,)``, from ``ahead``."""
        width = self.width
        # Every class's value: its points plus S where it leads (ahead[0] = -inf where the category is closed).
        is_open = (open_mask & self.lead_bit[:, None]) != 0
        lead = ((open_mask & ~self.lead_bit[:, None]) * width + 1 + self.leads.take(bonus, axis=1)) * is_open
        rows = self.points.take(bonus, axis=1)  # take keeps rows contiguous (fancy indexing would not)
        rows += ahead[lead][self.row_lead]
        pick_now = np.empty((R.NUM_ROLLS, len(open_mask)))
        pick_now[:] = rows[self.floors].max(axis=0) if len(self.floors) else -np.inf
        for c, count in enumerate(self.prefixes):
            np.maximum(pick_now[:count], rows[self.entries[:count, c]], out=pick_now[:count])
        # Five of a kind, face by face: the tabulated outcome of every category, where legal_picks allows it.
        variant = ((open_mask & self.joker_bits[:, :1]) != 0) + 2 * ((open_mask & self.joker_bits[:, 1:]) != 0)
        at = (np.arange(R.NUM_FACES)[:, None] * 4 + variant) * width + bonus
        legal = R.legal_picks(self.rules, R.FIVE_OF_A_KIND_ROLLS[:, None], open_mask)[..., None] & self.category_bits
        lead = ((open_mask[:, None] & ~self.category_bits) * width + 1 + self.five_leads[at]) * (legal != 0)
        pick_now[self.five_at] = (self.five_points[at] + ahead[lead]).max(axis=-1)
        return pick_now[self.to_rows]


@functools.cache
def _picks(rules: R.Rules) -> _Picks:
    return _Picks(rules)


@functools.cache
def _reachable(rules: R.Rules) -> np.ndarray:
    """``(num_open_masks, *bonus_shape)`` bool: the family's turn-start states some game reaches.

    The upper subtotal is one the filled upper boxes can make (as :func:`~yacht_env.rules.pick_outcome` raises
    it, capped); the Yahtzee box is armed only once it is filled. Every pick from such a state leads to one.
    """
    uppers, armed_states = rules.bonus_shape
    tables = R.pick_tables(rules)
    boxes = np.flatnonzero(tables.upper_face)
    rolls, subtotal = np.arange(R.NUM_ROLLS)[:, None], np.arange(uppers)[None]
    raised = [R.pick_outcome(rules, rolls, k, rules.all_open, subtotal, 0)[2] for k in boxes]  # (252, uppers)
    subtotals = np.zeros((1 << len(boxes), uppers), dtype=bool)  # by the set of filled upper boxes (bit i: box i)
    subtotals[0, 0] = True
    for filled in range(1, len(subtotals)):
        for i in range(len(boxes)):
            if filled >> i & 1:
                subtotals[filled, raised[i][:, subtotals[filled & ~(1 << i)]].ravel()] = True
    masks = np.arange(rules.num_open_masks)
    filled = np.zeros(len(masks), dtype=np.intp)
    for i, k in enumerate(boxes):
        filled |= (~masks >> k & 1) << i
    reachable = np.repeat(subtotals[filled][:, :, None], armed_states, axis=2)
    if armed_states > 1:
        reachable[:, :, 1] &= (masks >> tables.five_box & 1 == 0)[:, None]
    reachable.flags.writeable = False
    return reachable


def _in_chunks(function, open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """``function(open_mask, bonus)`` over chunks of states (on all cores: numpy lets go of the GIL), joined
    along the last axis."""
    starts = range(0, len(open_mask), _CHUNK)
    work = lambda s: function(open_mask[s : s + _CHUNK], bonus[s : s + _CHUNK])  # noqa: E731
    if len(starts) <= 1 or _THREADS == 1:
        return np.concatenate([work(s) for s in starts], axis=-1)
    with ThreadPoolExecutor(min(_THREADS, len(starts))) as pool:
        return np.concatenate(list(pool.map(work, starts)), axis=-1)


def _turn(picks: _Picks, ahead: np.ndarray, open_mask: np.ndarray, bonus: np.ndarray, rolls_left: int) -> np.ndarray:
    """Within a turn of states ``(open_mask, bonus)``: ``EK_t`` ``(210, n)`` (rows) for ``t = rolls_left`` re-rolls
    left; ``rolls_left = 3`` gives ``S`` ``(n,)``, the turn's start (a roll of all five dice, then two re-rolls)."""
    pick_now = value = picks.values(ahead, open_mask, bonus)
    for _ in range(rolls_left - 1):
        value = np.maximum(_best_keeps(_expected_keeps(value)), pick_now)
    return _FIRST_ROLL @ value if rolls_left > R.MAX_ROLLS_LEFT else _expected_keeps(value)


def _solve_family(rules: R.Rules) -> np.ndarray:
    """Backward induction over the reachable turn-start states: ``start_values`` ``(num_open_masks,
    *bonus_shape)`` float64, NaN where no game goes."""
    picks, reachable = _picks(rules), _reachable(rules)
    width = picks.width
    ahead = np.full(1 + reachable.size, np.nan)
    ahead[0] = -np.inf
    ahead[1 : 1 + width] = 0.0  # every category filled: nothing more to score
    popcounts = R.open_bits(rules.num_categories).sum(axis=1)
    for popcount in range(1, rules.num_categories + 1):
        masks = np.flatnonzero(popcounts == popcount)
        rows, bonus = np.nonzero(reachable[masks].reshape(len(masks), width))
        open_mask = masks[rows]
        solved = _in_chunks(lambda o, b: _turn(picks, ahead, o, b, R.ROLLS_PER_TURN), open_mask, bonus)
        ahead[1 + open_mask * width + bonus] = solved
    return ahead[1:].reshape(rules.num_open_masks, *rules.bonus_shape)


# --------------------------------------------------------------------------------------------------
# The solution and its queries
# --------------------------------------------------------------------------------------------------
def _check_state_array(name: str, value: object, low: int, high: int, what: str) -> np.ndarray:
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer):
        shown = f"{value!r} of " if array.ndim == 0 else "an array of "
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {shown}dtype {array.dtype}")
    if array.size and (array.min() < low or array.max() > high):
        bad = array[(array < low) | (array > high)].ravel()[0]
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {bad}")
    return array.astype(np.intp, copy=False)


def _check_states(rules: R.Rules, roll, rolls_left, open_mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    roll = _check_state_array("roll", roll, 0, R.NUM_ROLLS - 1, "a sorted-roll index, see rules.roll_index")
    rolls_left = _check_state_array("rolls_left", rolls_left, 0, R.MAX_ROLLS_LEFT, "re-rolls left this turn")
    open_mask = _check_state_array(
        "open_mask",
        open_mask,
        1,
        rules.all_open,
        f"a {rules.num_categories}-bit mask of the open categories, at least one open",
    )
    try:
        return tuple(np.broadcast_arrays(roll, rolls_left, open_mask))  # type: ignore[return-value]
    except ValueError:
        raise ValueError(
            f"roll, rolls_left and open_mask must have equal (or broadcastable) shapes, got "
            f"{roll.shape}, {rolls_left.shape} and {open_mask.shape}"
        ) from None


def _check_bonus_states(rules: R.Rules, upper, armed) -> tuple[np.ndarray, np.ndarray]:
    """``upper`` and ``armed`` as intp arrays, always 0 where the rules do not track them (``rules.bonus_shape``)."""
    uppers, armed_states = rules.bonus_shape
    checked = []
    for name, value, size, what, absent in (
        ("upper", upper, uppers, "the upper subtotal, capped at the bonus threshold", "no upper bonus"),
        ("armed", armed, armed_states, "whether the Yahtzee box holds its points", "no Yahtzee bonus"),
    ):
        array = np.asarray(value)
        array = array.astype(np.intp) if array.dtype == bool else array
        if size == 1 and np.issubdtype(array.dtype, np.integer) and array.any():
            bad = array[array != 0].ravel()[0]
            raise ValueError(f"{name} must be 0: rules {rules.name!r} have {absent}, got {bad}")
        checked.append(_check_state_array(name, array, 0, size - 1, what))
    return checked[0], checked[1]


def _scalar_or_array(result: np.ndarray, kind: type):
    return kind(result) if result.ndim == 0 else result


class Solution:
    """The optimal policy of one rules preset: state values and action values of every decision state.

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules` solved.
        expected_score: The expected final score of optimal play from the start of a game.
        start_values: Expected points from the start of a turn to the end of the game, bonuses included
            (0 once every category is filled). Yacht's presets: ``(4096,)`` float64 by open mask (``(2 **
            num_categories,)`` in general). The family (``rules.has_bonuses``): ``(num_open_masks,
            *rules.bonus_shape)`` float64 by ``(open_mask, upper, armed)``, ``(8192, 64, 2)`` for Yahtzee, NaN
            at the states no game reaches (an upper subtotal the filled upper boxes cannot make, an armed
            Yahtzee box that is not filled).
        keep_values: Yacht's presets: ``(2, 4096, 210)`` float64: ``keep_values[t - 1, O, K]`` is the expected
            points to the end of the game after keeping ``KEPT[K]`` (0..4 dice) with ``t`` re-rolls left, open
            mask ``O``. ``None`` for the family, whose within-turn values (gigabytes) are computed on demand for
            the positions a query asks about.
        source: ``"solved"`` if computed in this process, ``"disk"`` if loaded from the disk cache.

    States are the rules core's integers: ``roll`` 0..251, ``rolls_left`` 0..2, ``open_mask`` 1..2 **
    num_categories - 1, and for the family ``upper`` (0..threshold) and ``armed`` (0/1; only with a Yahtzee
    bonus). The batched methods take ints or broadcastable int arrays and do no Python loop per state.
    """

    def __init__(
        self, rules: R.Rules, start_values: np.ndarray, keep_values: np.ndarray | None = None, source: str = "solved"
    ):
        self.rules = rules
        self.start_values = np.asarray(start_values, dtype=np.float64)
        self.start_values.flags.writeable = False
        self.keep_values = None if keep_values is None else np.asarray(keep_values, dtype=np.float64)
        if self.keep_values is not None:
            self.keep_values.flags.writeable = False
        self.expected_score = float(self.start_values[(rules.all_open, 0, 0) if rules.has_bonuses else rules.all_open])
        self.source = source
        self._score = R.score_table(rules).astype(np.float64)
        self._category_bits = _category_bits(rules)
        if rules.has_bonuses:  # ahead[1 + flat state]: S of every turn start, -inf in front (see _Picks)
            self._ahead = np.concatenate([[-np.inf], self.start_values.ravel()])

    def __repr__(self) -> str:
        return f"Solution(rules={self.rules.name!r}, expected_score={self.expected_score:.4f})"

    def q_values(self, roll, rolls_left, open_mask, upper=0, armed=0, canonical_keeps: bool = True) -> np.ndarray:
        """Action values of states, shape ``(..., num_actions)`` float64, ``-inf`` for illegal actions.

        The value of an action is the expected points from this decision to the end of the game (a pick
        includes its own points, bonuses included) if it is taken and optimal play follows. Legality is exactly
        :func:`yacht_env.rules.legal_action_mask` with ``canonical_keeps`` over the picks
        :func:`yacht_env.rules.legal_picks` allows.

        Raises:
            ValueError: a state out of range, ``upper`` or ``armed`` other than 0 for rules without them, or a
                family state no game reaches.
        """
        rules = self.rules
        roll, rolls_left, open_mask = _check_states(rules, roll, rolls_left, open_mask)
        upper, armed = _check_bonus_states(rules, upper, armed)
        try:
            roll, rolls_left, open_mask, upper, armed = np.broadcast_arrays(roll, rolls_left, open_mask, upper, armed)
        except ValueError:
            raise ValueError(
                f"upper and armed must broadcast with the states' shape {roll.shape}, got {upper.shape} and "
                f"{armed.shape}"
            ) from None
        if rules.has_bonuses:
            return self._family_q_values(roll, rolls_left, open_mask, upper, armed, canonical_keeps)
        legal = R.legal_action_mask(roll, rolls_left, open_mask, canonical_keeps, rules.num_categories)
        picks = self._score[roll] + self.start_values[open_mask[..., None] & ~self._category_bits]
        # Row (t - 1) * 4096 + O of the flattened keep values; rolls_left 0 reads row O (masked out anyway).
        row = np.maximum(rolls_left - 1, 0)[..., None] * rules.num_open_masks + open_mask[..., None]
        keeps = self.keep_values.reshape(-1, NUM_PROPER_KEPT)[row, _KEEP_PROPER[roll]]
        return np.where(legal, np.concatenate([keeps, picks], axis=-1), -np.inf)

    def _family_q_values(self, roll, rolls_left, open_mask, upper, armed, canonical_keeps: bool) -> np.ndarray:
        rules = self.rules
        armed_states = rules.bonus_shape[1]
        reachable = _reachable(rules)[open_mask, upper, armed]
        if not reachable.all():
            i = np.unravel_index(np.flatnonzero(~reachable.ravel())[0], reachable.shape)
            raise ValueError(
                f"no game reaches open_mask={open_mask[i]}, upper={upper[i]}, armed={armed[i]}: upper must be a "
                f"subtotal the filled upper boxes can make and armed needs the Yahtzee box filled"
            )
        picks_word = R.legal_picks(rules, roll, open_mask)
        legal = R.legal_action_mask(roll, rolls_left, picks_word, canonical_keeps, rules.num_categories)
        # A pick: its points (pick_outcome) plus the start of the next turn in the state it leaves.
        categories = np.arange(rules.num_categories)
        state = (roll[..., None], categories, open_mask[..., None], upper[..., None], armed[..., None])
        points, _, next_upper, next_armed = R.pick_outcome(rules, *state)
        after = (open_mask[..., None] & ~self._category_bits) * rules.bonus_shape[0] + next_upper
        picks = points + self._ahead[1 + after * armed_states + next_armed]
        # A keep: the recurrence for just the states with re-rolls left, each distinct state once.
        keeps = np.zeros((*roll.shape, R.NUM_KEEPS))
        picks_table = _picks(rules)
        width = picks_table.width
        for t in range(1, R.MAX_ROLLS_LEFT + 1):
            at = rolls_left == t
            if at.any():
                states, column = np.unique(
                    open_mask[at] * width + upper[at] * armed_states + armed[at], return_inverse=True
                )
                values = _in_chunks(
                    lambda o, b, t=t: _turn(picks_table, self._ahead, o, b, t), *np.divmod(states, width)
                )
                keeps[at] = values[_KEEP_ROW[roll[at]], column.reshape(-1, 1)]
        return np.where(legal, np.concatenate([keeps, picks], axis=-1), -np.inf)

    def values(self, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray | float:
        """The optimal value of states (the largest action value), shape of the inputs, float64."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask, upper, armed).max(axis=-1), float)

    def best_action(self, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray | int:
        """The optimal action of states (canonical keeps; ties go to the smallest action index)."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask, upper, armed).argmax(axis=-1), int)

    def action_values(
        self, dice, rolls_left: int, open_categories, canonical_keeps: bool = True, *, upper: int = 0, armed=False
    ) -> np.ndarray:
        """Action values of one state given as the player sees it, shape ``(num_actions,)`` float64.

        Args:
            dice: Five values in 1..6, in any order. Keep-mask bits refer to the dice sorted ascending.
            rolls_left: Re-rolls left this turn, an int in 0..2.
            open_categories: The open categories: names/indices, a boolean mask (one entry per category) or an
                int mask.
            canonical_keeps: Whether only the canonical mask of each kept multiset is legal (as the env).
            upper: The family's rules with an upper bonus: the upper subtotal so far, capped at the threshold
                (an int in ``0..bonus_shape[0] - 1``); 0 otherwise.
            armed: Rules with a Yahtzee bonus: whether the Yahtzee box holds its points (a bool, or 0 / 1).

        Returns:
            Per action (0..31 keep-masks, ``32 + k`` pick category ``k``) the expected points from this
            decision to the end of the game if taken and followed by optimal play; ``-inf`` if illegal.

        Raises:
            ValueError: bad dice, rolls_left, open categories, upper or armed (or a state no game reaches); the
                message says what is accepted.
        """
        values = R.validate_dice(dice)
        if not isinstance(rolls_left, (int, np.integer)) or isinstance(rolls_left, bool):
            raise ValueError(f"rolls_left must be an int in 0..{R.MAX_ROLLS_LEFT}, got {rolls_left!r}")
        if not 0 <= rolls_left <= R.MAX_ROLLS_LEFT:
            raise ValueError(f"rolls_left must be an int in 0..{R.MAX_ROLLS_LEFT}, got {rolls_left!r}")
        open_mask = R.open_mask_from(open_categories, self.rules)
        if open_mask == 0:
            raise ValueError(
                f"open_categories must name at least one open category (the game is over otherwise), "
                f"got {open_categories!r}"
            )
        uppers, armed_states = self.rules.bonus_shape
        if not R.is_int(upper) or not 0 <= upper < uppers:
            raise ValueError(
                f"upper must be an int in 0..{uppers - 1} (the upper subtotal, capped at the bonus threshold), "
                f"got {upper!r}"
                if uppers > 1
                else f"upper must be 0: rules {self.rules.name!r} have no upper bonus, got {upper!r}"
            )
        if not (isinstance(armed, (bool, np.bool_)) or R.is_int(armed)) or not 0 <= armed < armed_states:
            raise ValueError(
                f"armed must be True or False (whether the Yahtzee box holds its points), got {armed!r}"
                if armed_states > 1
                else f"armed must be False: rules {self.rules.name!r} have no Yahtzee bonus, got {armed!r}"
            )
        roll = R.roll_index(values)
        return self.q_values(roll, int(rolls_left), open_mask, int(upper), int(armed), canonical_keeps)


# --------------------------------------------------------------------------------------------------
# Solving, the disk cache and the in-process memo
# --------------------------------------------------------------------------------------------------
_MEMO: dict[R.Rules, Solution] = {}


def cache_key(rules: str | R.Rules = "standard") -> str:
    """The hex digest identifying a solution: the rules' fields and :data:`SOLVER_FORMAT_VERSION` (and, for rules
    with bonuses, :data:`FAMILY_FORMAT_VERSION`)."""
    rules = R.get_rules(rules)
    payload = {"rules": rules.as_dict(), "solver_format_version": SOLVER_FORMAT_VERSION}
    if rules.has_bonuses:
        payload["family_format_version"] = FAMILY_FORMAT_VERSION
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_path(rules: str | R.Rules = "standard", cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache file of a rules preset: ``<cache_dir>/<name>-<key prefix>.npz``.

    ``cache_dir`` defaults to ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``.

    Raises:
        ValueError: unknown rules, or a folder whose ``~`` or ``~user`` cannot be expanded (no such user, no home).
    """
    rules = R.get_rules(rules)
    source = ""
    if cache_dir is None:
        source = f" (from ${CACHE_DIR_ENV})" if os.environ.get(CACHE_DIR_ENV) else ""
        cache_dir = os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", rules.name)[:40]
    try:
        folder = Path(cache_dir).expanduser()
    except RuntimeError:  # "~nosuchuser/x", or "~" without a home directory
        home = os.fspath(cache_dir).split("/", 1)[0]
        raise ValueError(
            f"cannot use the cache folder '{os.fspath(cache_dir)}'{source}: '{home}' names no user's home directory"
        ) from None
    return folder / f"{name}-{cache_key(rules)[:16]}.npz"


def _save(path: Path, solution: Solution) -> None:
    """Writes the solution's arrays with their key and checksum, atomically (:func:`yacht_env.util.save_arrays`).

    The family's file holds only the start values of the reachable states (the rest are NaN, by rule)."""
    rules = solution.rules
    if rules.has_bonuses:
        arrays = {"start_values": solution.start_values[_reachable(rules)]}
    else:
        arrays = {"start_values": solution.start_values, "keep_values": solution.keep_values}
    save_arrays(path, cache_key(rules), arrays)


def _load(path: Path, rules: R.Rules) -> Solution | None:
    """The cached solution at ``path``, or ``None`` if it is missing or fails any check."""
    if rules.has_bonuses:
        reachable = _reachable(rules)
        arrays = load_arrays(path, cache_key(rules), {"start_values": ((int(reachable.sum()),), np.float64)})
        if arrays is None:
            return None
        start_values = np.full(reachable.shape, np.nan)
        start_values[reachable] = arrays["start_values"]
        return Solution(rules, start_values, source="disk") if (start_values[0] == 0.0).all() else None
    specs = {
        "start_values": ((rules.num_open_masks,), np.float64),
        "keep_values": (keep_values_shape(rules), np.float64),
    }
    arrays = load_arrays(path, cache_key(rules), specs)
    if arrays is None or arrays["start_values"][0] != 0.0:
        return None
    return Solution(rules, arrays["start_values"], arrays["keep_values"], source="disk")


def _solution(rules: R.Rules) -> Solution:
    return Solution(rules, _solve_family(rules)) if rules.has_bonuses else Solution(rules, *_solve_arrays(rules))


def clear_memo() -> None:
    """Forgets the in-process solutions, so the next :func:`solve` reads the disk cache (or solves)."""
    _MEMO.clear()


def solve(
    rules: str | R.Rules = "standard", *, cache: bool = True, cache_dir: str | os.PathLike | None = None
) -> Solution:
    """The exact optimal policy of solo Yacht (or a game of its family) under ``rules``.

    Args:
        rules: A preset name (``"standard"``, ``"yahtzee"``, ...) or a :class:`~yacht_env.rules.Rules`.
        cache: Use the in-process memo and the disk cache: return a memoised solution, else load a
            verified cache file, else solve and write one. ``False`` always solves and stores nothing.
        cache_dir: The cache folder; defaults to ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``.

    Raises:
        ValueError: unknown rules, or a cache folder whose ``~user`` cannot be expanded (see :func:`cache_path`).

    A cache file that is missing, damaged, of another rules or solver version, or fails its checksum is
    rebuilt and overwritten; a cache folder that cannot be written, or a directory, FIFO, device or read-only
    file at the cache file's path, only warns.
    """
    rules = R.get_rules(rules)
    if not cache:
        return _solution(rules)
    compute = lambda: _solution(rules)  # noqa: E731
    load = lambda path: _load(path, rules)  # noqa: E731
    return memoised_cache(_MEMO, "solver cache", rules, cache_path(rules, cache_dir), load, compute, _save)
