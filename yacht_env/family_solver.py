"""The backward induction of the family's presets (the rules with an upper bonus or a Yahtzee bonus: Yahtzee,
Yatzy), a level of turn-start states at once.

:mod:`yacht_env.solver` states the recurrence, solves Yacht's presets and holds the
:class:`~yacht_env.solver.Solution` and its cache; this module solves the family (:func:`solve_family`) and gives
the solution's queries the family's within-turn values of the positions they ask about (:func:`turn`).

About 0.5 M reachable turn-start states for Yahtzee, 1.4 M for Yatzy (:func:`reachable_states`). A level (all
reachable states with the same number of open categories) is solved in chunks of states with the values laid out
(rows, states) of :mod:`yacht_env.turn_rows`: ``V0`` from pick tables built once from ``pick_outcome``
(:class:`Picks`: a roll that is not five of a kind scores by its box's score alone, so each category needs one
representative roll per distinct score; the six five-of-a-kind rolls carry the joker and the Yahtzee bonus), then
the turn of :func:`yacht_env.turn_rows.turn_values` (``EK_t`` by adding one fresh die at a time, the best
sub-multisets level by level). Yahtzee solves in a few seconds on two cores, well under 100 MB.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from yacht_env import rules as R
from yacht_env.turn_rows import ROLL_ORDER, turn_values

# --------------------------------------------------------------------------------------------------
# The family (rules with bonuses): a level of turn-start states at once, values laid out (rows, states)
# --------------------------------------------------------------------------------------------------
_CHUNK = 256  # states per chunk: a (252, 256) float64 array is 0.5 MB, so a chunk's work stays in cache
_THREADS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


class Picks:
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

    Attributes:
        class_rows: ``(252, C)``: the class (row of ``points``) of each roll that is not five of a kind in each
            category, -1 for the five-of-a-kind rolls (tabulated apart, by face).
        points: ``(classes, width)``: what a class earns at each bonus state; ``leads[row_lead[row]]`` the bonus state
            it leads to, ``lead_bit[row_lead[row]]`` its category's bit.
        five_points, five_leads: ``(6 * 4 * width, C)``: the same for the five-of-a-kind rolls, at row ``(face - 1) *
            4 + variant`` of each bonus state (variant: bit 0 the five-of-a-kind box open, bit 1 the face's box open).
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
        self.class_rows = np.full((R.NUM_ROLLS, rules.num_categories), -1, dtype=np.intp)
        for k in range(rules.num_categories):
            scores, first, cls = np.unique(tables.score[plain, k], return_index=True, return_inverse=True)
            outcome = R.pick_outcome(rules, plain[first][:, None], k, rules.all_open, upper, armed)
            got, _, up, arm = np.broadcast_arrays(*outcome, np.empty((len(scores), width)))[:4]
            lead = up * armed_states + arm  # (classes, width): the bonus state each class leads to
            distinct, which = np.unique(lead, axis=0, return_inverse=True)
            row = len(row_lead)
            self.class_rows[plain, k] = row + cls.ravel()
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
        self.to_rows = position[ROLL_ORDER]  # row i of the turn's values is row to_rows[i] here
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
def picks_for(rules: R.Rules) -> Picks:
    """The :class:`Picks` of ``rules``, built once per rules."""
    return Picks(rules)


@functools.cache
def reachable_states(rules: R.Rules) -> np.ndarray:
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


def in_chunks(function, open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """``function(open_mask, bonus)`` over chunks of states (on all cores: numpy lets go of the GIL), joined
    along the last axis.
    """
    starts = range(0, len(open_mask), _CHUNK)
    work = lambda s: function(open_mask[s : s + _CHUNK], bonus[s : s + _CHUNK])  # noqa: E731
    if len(starts) <= 1 or _THREADS == 1:
        return np.concatenate([work(s) for s in starts], axis=-1)
    with ThreadPoolExecutor(min(_THREADS, len(starts))) as pool:
        return np.concatenate(list(pool.map(work, starts)), axis=-1)


def turn(picks: Picks, ahead: np.ndarray, open_mask: np.ndarray, bonus: np.ndarray, rolls_left: int) -> np.ndarray:
    """Within a turn of states ``(open_mask, bonus)``: ``EK_t`` ``(210, n)`` (rows) for ``t = rolls_left`` re-rolls
    left; ``rolls_left = 3`` gives ``S`` ``(n,)``, the turn's start (a roll of all five dice, then two re-rolls).
    """
    return turn_values((picks.values(ahead, open_mask, bonus),), rolls_left)


def solve_family(rules: R.Rules) -> np.ndarray:
    """Backward induction over the reachable turn-start states: ``start_values`` ``(num_open_masks,
    *bonus_shape)`` float64, NaN where no game goes.
    """
    picks, reachable = picks_for(rules), reachable_states(rules)
    width = picks.width
    ahead = np.full(1 + reachable.size, np.nan)
    ahead[0] = -np.inf
    ahead[1 : 1 + width] = 0.0  # every category filled: nothing more to score
    popcounts = R.open_bits(rules.num_categories).sum(axis=1)
    for popcount in range(1, rules.num_categories + 1):
        masks = np.flatnonzero(popcounts == popcount)
        rows, bonus = np.nonzero(reachable[masks].reshape(len(masks), width))
        open_mask = masks[rows]
        solved = in_chunks(lambda o, b: turn(picks, ahead, o, b, R.ROLLS_PER_TURN), open_mask, bonus)
        ahead[1 + open_mask * width + bonus] = solved
    return ahead[1:].reshape(rules.num_open_masks, *rules.bonus_shape)
