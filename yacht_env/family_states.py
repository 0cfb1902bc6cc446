"""The family's turn starts and pick outcomes (the rules with an upper bonus or a Yahtzee bonus: Yahtzee, Yatzy,
Clubhouse), from the rules alone: what a pick earns and leaves (:class:`Picks`, :class:`Outcomes`), which turn starts a
game reaches (:func:`reachable_states`) and their rows in a level-by-level store (:func:`state_ids`). The solver
(:mod:`yacht_env.family_solver`) and the score distributions' recurrence (:mod:`yacht_env.family_recurrence`) read
them.
"""

from __future__ import annotations

import functools

import numpy as np

from yacht_env import rules as R
from yacht_env.turn_rows import ROLL_ORDER


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


# --------------------------------------------------------------------------------------------------
# The states and the pick outcomes
# --------------------------------------------------------------------------------------------------
@functools.cache
def state_ids(rules: R.Rules) -> np.ndarray:
    """``(num_open_masks, *bonus_shape)`` int32, read only: each reachable turn start's row in the store, -1 where no
    game goes (built once per rules).

    Rows go by the number of open boxes, then by ``(open_mask, upper, armed)``, so a level is a run of rows.
    """
    reachable = reachable_states(rules).reshape(rules.num_open_masks, -1)
    popcount = R.open_bits(rules.num_categories).sum(axis=1)
    flat = np.flatnonzero(reachable.ravel())
    order = flat[np.argsort(popcount[flat // reachable.shape[1]], kind="stable")]
    ids = np.full(reachable.size, -1, dtype=np.int32)
    ids[order] = np.arange(len(order), dtype=np.int32)
    ids = ids.reshape(rules.num_open_masks, *rules.bonus_shape)
    ids.flags.writeable = False
    return ids


class Outcomes:
    """How a pick ends a turn, as ids shared by every state of the rules (built once per rules: :func:`outcomes_for`).

    A roll that is not five of a kind scores in box ``k`` by ``SCORE[r, k]`` alone (:class:`~yacht_env.family_solver.
    Picks`' classes): its outcome is the class, ids ``0 .. classes - 1``. A five of a kind of face ``f`` in box ``k``
    is outcome ``classes + (f - 1) * C + k``: it depends on the joker's conditions too. What an outcome earns and
    leaves depends on the state (:meth:`at`).

    Attributes:
        of_pick: ``(252, C)``: the outcome of scoring roll ``r`` in box ``k``.
        count: How many outcomes there are.
        category: ``(count,)``: each outcome's box.
    """

    def __init__(self, picks: Picks):
        self.picks = picks
        rules = picks.rules
        c = rules.num_categories
        classes = len(picks.points)
        faces = R.FIVE_OF_A_KIND_FACE
        self.of_pick = picks.class_rows.copy()
        fives = np.flatnonzero(faces)
        self.of_pick[fives] = classes + (faces[fives, None] - 1) * c + np.arange(c)
        self.count = classes + R.NUM_FACES * c
        row_category = np.log2(picks.lead_bit[picks.row_lead]).astype(np.intp)
        self.category = np.concatenate([row_category, np.tile(np.arange(c), R.NUM_FACES)])
        self.bits = 1 << self.category
        self._class_leads = picks.leads[picks.row_lead]  # (classes, width)
        for array in (self.of_pick, self.category, self.bits):
            array.flags.writeable = False

    def at(self, open_mask: np.ndarray, bonus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(points, after)`` ``(count, n)`` intp of states ``(open_mask, bonus)`` ``(n,)``: what each outcome earns
        (bonuses included) and the flat state it leaves, ``(open_mask without its box) * width + bonus after``
        (meaningless where the box is closed).
        """
        picks = self.picks
        width = picks.width
        classes = len(picks.points)
        points = np.empty((self.count, len(open_mask)), dtype=np.intp)
        lead = np.empty_like(points)
        points[:classes] = picks.points[:, bonus]
        lead[:classes] = self._class_leads[:, bonus]
        variant = ((open_mask & picks.joker_bits[:, :1]) != 0) + 2 * ((open_mask & picks.joker_bits[:, 1:]) != 0)
        at = (np.arange(R.NUM_FACES)[:, None] * 4 + variant) * width + bonus  # (6, n)
        points[classes:] = picks.five_points[at].transpose(0, 2, 1).reshape(-1, len(open_mask))
        lead[classes:] = picks.five_leads[at].transpose(0, 2, 1).reshape(-1, len(open_mask))
        return points, (open_mask & ~self.bits[:, None]) * width + lead


@functools.cache
def outcomes_for(rules: R.Rules) -> Outcomes:
    """The :class:`Outcomes` of ``rules``, built once per rules."""
    return Outcomes(picks_for(rules))


def check_state_array(name: str, value: object, low: int, high: int, what: str) -> np.ndarray:
    """``value`` as an ``intp`` array of ints in ``low..high``, or one ``ValueError`` naming ``name``, the first bad
    value and ``what`` the values are.
    """
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer):
        shown = f"{value!r} of " if array.ndim == 0 else "an array of "
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {shown}dtype {array.dtype}")
    if array.size and (array.min() < low or array.max() > high):
        bad = array[(array < low) | (array > high)].ravel()[0]
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {bad}")
    return array.astype(np.intp, copy=False)


def check_bonus_states(rules: R.Rules, upper, armed) -> tuple[np.ndarray, np.ndarray]:
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
        checked.append(check_state_array(name, array, 0, size - 1, what))
    return checked[0], checked[1]


__all__ = [
    "Outcomes",
    "Picks",
    "check_bonus_states",
    "check_state_array",
    "outcomes_for",
    "picks_for",
    "reachable_states",
    "state_ids",
]
