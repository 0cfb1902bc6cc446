"""The search agent's turn (:mod:`yacht_agents.search`): the exact expectimax over the mover's own dice from a value of
the turn's end, for batches of contexts at once.

A pick is worth its points plus ``V`` of its afterstate (solo) or ``V`` of its afterstate (at a table), and a keep the
mean over the re-rolled dice of the best that follows (:func:`yacht_env.turn_rows.turn_values`' passes). Everything
the turn's decisions read depends only on the turn's *context* (the sheets and totals, fixed for a whole turn), so
:class:`TurnPlanner` computes it once per distinct context of a batch: ``V`` once per distinct afterstate of the
batch, never per roll, then the whole turn's keeps. ``V`` is any object with ``values(own, opponents, exact)``
(:class:`yacht_agents.search_value.ValueNetwork`); nothing here reads a solver.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from yacht_agents.win_model import distinct_rows
from yacht_env import rules as R
from yacht_env.turn_rows import FIRST_ROLL, KEEP_PROPER, KEPT_ROW, ROLL_ORDER, best_keeps, expected_keeps

_CHUNK = 1024  # contexts planned together: bounds the (contexts, 252, C) pick arrays to ~30 MB


# --------------------------------------------------------------------------------------------------
# The turn: what every decision of a context reads
# --------------------------------------------------------------------------------------------------
class Plan(NamedTuple):
    """A turn's values for ``n`` contexts.

    Fields:
        pick: ``(n, 252, C)``: a pick's value (``-inf`` where it is not legal), by roll and category.
        keep: ``(n, 2, 210)``: a keep's value with 1 or 2 re-rolls left, by kept multiset (``rules.KEPT``).
        start: ``(n,)``: the turn's value before its first roll (what the afterstate before it is worth).
    """

    pick: np.ndarray
    keep: np.ndarray
    start: np.ndarray


class TurnPlanner:
    """The turn's exact expectimax for batches of contexts, from a value of afterstates.

    Args:
        rules, players: The game and the table (1: solo).
        value: A :class:`ValueNetwork` (its ``values(own, opponents, exact) -> (m,)`` float64 is called once per
            :meth:`plan`; a finished table is valued by :func:`result`, with the ``placing`` of its ``spec`` if it
            has one).
        exact: Plan as the agent plays: ``V`` in float64 rounded to float32 (:meth:`ValueNetwork.__call__`) and the
            keeps' values rounded to float32, so that a decision does not depend on the thread count nor on the other
            contexts of the batch (the expectimax's sums differ in their last float64 bits with them); ties go to the
            first action (:func:`decide`). The trainer's games plan in float32 (faster), not exactly.
    """

    def __init__(self, rules: R.Rules, players: int, value, exact: bool = False) -> None:
        self.rules, self.players, self.value, self.exact = rules, players, value, exact
        self.placing = getattr(getattr(value, "spec", None), "placing", 0.0)
        c = rules.num_categories
        self._bits = (1 << np.arange(c)).astype(np.intp)
        tables = R.pick_tables(rules)
        # A pick's outcome and legality depend on the roll only through the category's score and, under the jokers
        # and the Yahtzee bonus, the face of a five of a kind (pick_outcome, legal_picks): a category's rolls fall in
        # classes of one (score, face), each valued once per context from one roll of its own.
        face = R.FIVE_OF_A_KIND_FACE if rules.joker != "none" or rules.yahtzee_bonus else 0 * R.FIVE_OF_A_KIND_FACE
        shape = (R.NUM_ROLLS, c)
        keys = np.stack(
            [np.broadcast_to(np.arange(c), shape), tables.score, np.broadcast_to(face[:, None], shape)], axis=-1
        ).reshape(-1, 3)
        classes, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        self._class_category = classes[:, 0].astype(np.intp)
        self._class_roll = (first // c).astype(np.intp)
        self._class_of = inverse.reshape(shape)
        uppers, armeds = rules.bonus_shape
        self._totals = R.max_total(rules) + 1 if players > 1 else 1
        self._sheet_keys = (1 << c) * uppers * armeds * self._totals  # the distinct sheets

    def _sheet_key(self, sheet: tuple) -> np.ndarray:
        """One integer per sheet ``(open_mask, upper, armed, total)`` (solo the total is left out)."""
        open_mask, upper, armed, total = sheet
        uppers, armeds = self.rules.bonus_shape
        key = (open_mask.astype(np.int64) * uppers + upper) * armeds + armed
        return key * self._totals + total if self._totals > 1 else key

    def plan(self, own: tuple, opponents: tuple | None = None) -> Plan:
        """The turn of each context: ``own`` ``(open_mask, upper, armed, total)`` ``(n,)`` each, at a table
        ``opponents`` ``(open_masks, uppers, armeds, totals)`` ``(n, P - 1)`` each (as :func:`features`).
        """
        n = len(own[0])
        parts = []
        for first in range(0, n, _CHUNK):
            at = slice(first, first + _CHUNK)
            them = None if opponents is None else tuple(np.asarray(x)[at] for x in opponents)
            parts.append(self._plan(tuple(np.asarray(x, dtype=np.intp)[at] for x in own), them))
        if len(parts) == 1:
            return parts[0]
        return Plan(*(np.concatenate(p) for p in zip(*parts, strict=True)))

    def _plan(self, own: tuple, opponents: tuple | None) -> Plan:
        pick = self._picks(own, opponents)
        # The turn, rows (252 rolls, n contexts): V0 the best pick, then keeps with 1 and 2 re-rolls left.
        now = pick.max(axis=2).T[ROLL_ORDER]
        keep1 = expected_keeps(now)
        (best,) = best_keeps([keep1.copy()])
        keep2 = expected_keeps(np.maximum(best, now))
        (best,) = best_keeps([keep2.copy()])
        start = FIRST_ROLL @ np.maximum(best, now)
        keep = np.stack([keep1.T, keep2.T], axis=1)[:, :, KEPT_ROW]  # (n, 2, 210) by KEPT index
        if self.exact:
            keep, start = (x.astype(np.float32).astype(np.float64) for x in (keep, start))
        return Plan(pick, keep, start)

    def _picks(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """The picks' values ``(n, 252, C)``: each legal class of each context scored once by
        :func:`yacht_env.rules.pick_outcome` from its roll, its afterstate valued by :meth:`afterstate_values`, and
        spread to the class's rolls; solo a pick is worth its points plus ``V``, at a table ``V`` alone.
        """
        open_mask, upper, armed, total = own
        category, roll = self._class_category, self._class_roll
        legal = (R.legal_picks(self.rules, roll[None, :], open_mask[:, None]) >> category & 1).astype(bool)
        g, j = np.nonzero(legal)
        points, _, up, arm = R.pick_outcome(self.rules, roll[j], category[j], open_mask[g], upper[g], armed[g])
        after = (open_mask[g] & ~self._bits[category[j]], up, arm, total[g] + points)
        theirs = None if opponents is None else tuple(x[g] for x in opponents)
        values = np.full(legal.shape, -np.inf)
        values[g, j] = self.afterstate_values(after, theirs) + (points if self.players == 1 else 0)
        return values[:, self._class_of]

    def afterstate_values(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """``V`` of afterstates (:func:`features`' arguments), each distinct one valued once; exact where nothing is
        left to play: solo, every box filled (0); at a table, every sheet filled (the result, ties split).
        """
        own = tuple(np.asarray(x, dtype=np.intp) for x in own)
        table = self.players > 1
        opponents = tuple(np.asarray(x, dtype=np.intp) for x in opponents) if table else ()
        done = own[0] == 0
        if table:
            done &= (opponents[0] == 0).all(axis=1)
        values = np.zeros(len(done))
        if table and done.any():
            values[done] = result(own[3][done], opponents[3][done], self.placing)
        playing = np.flatnonzero(~done)
        if len(playing):
            # The distinct afterstates: each seat's sheet (solo without its total, which is not read) one integer.
            seats = [self._sheet_key(tuple(x[playing] for x in own))]
            seats += [self._sheet_key(tuple(x[playing, j] for x in opponents)) for j in range(self.players - 1)]
            first, inverse = distinct_rows(seats, self._sheet_keys)
            at = playing[first]
            mine = tuple(x[at] for x in own)
            theirs = tuple(x[at] for x in opponents) if table else None
            values[playing] = self.value.values(mine, theirs, self.exact)[inverse]
        return values


def result(total: np.ndarray, opponent_total: np.ndarray, placing: float = 0.0) -> np.ndarray:
    """The mover's share of the win at a finished table: 1 / (number of leaders) if it leads, else 0; with
    ``placing`` ``w``, that share weighs ``1 - w`` and the fraction of the opponents it finished ahead of (ties half)
    weighs ``w``.
    """
    best = np.maximum(total, opponent_total.max(axis=1))
    leaders = (total == best) + (opponent_total == best[:, None]).sum(axis=1)
    share = np.where(total == best, 1.0 / np.maximum(leaders, 1), 0.0)
    if not placing:
        return share
    ahead = ((total[:, None] > opponent_total) + 0.5 * (total[:, None] == opponent_total)).mean(axis=1)
    return (1.0 - placing) * share + placing * ahead


def decide(plan: Plan, index: np.ndarray, roll: np.ndarray, rolls_left: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``(N,)`` actions: the best of ``legal`` ``(N, num_actions)`` under each game's plan (row ``index``); a tie goes
    to the first best action (a keep before a pick: the turn's values are the same either way).
    """
    n, c = len(roll), plan.pick.shape[2]
    values = np.full((n, R.PICK_OFFSET + c), -np.inf)
    values[:, R.PICK_OFFSET :] = plan.pick[index, roll]
    re_roll = np.flatnonzero(rolls_left > 0)
    kept = KEEP_PROPER[roll[re_roll]]  # (m, 32) kept-multiset indices
    values[re_roll, : R.NUM_KEEPS] = plan.keep[index[re_roll, None], rolls_left[re_roll, None] - 1, kept]
    values = np.where(legal, values, -np.inf)
    return values.argmax(axis=1)


_KEEPS_LEGAL = R.legal_action_mask(np.arange(R.NUM_ROLLS), 1, 0)[:, : R.NUM_KEEPS]  # (252, 32): re-rolls left


def turn_actions(plan: Plan) -> np.ndarray:
    """``(3, 252, n)`` uint8: the action :func:`decide` takes at every roll and re-rolls left of each context's plan
    (``[rolls_left, roll, context]``; the keeps the env's mask allows, the picks the plan values).
    """
    best_pick = plan.pick.argmax(axis=2)  # the first best pick
    pick_value = np.take_along_axis(plan.pick, best_pick[..., None], axis=2)[..., 0]
    actions = np.empty((R.ROLLS_PER_TURN, *best_pick.shape[::-1]), dtype=np.uint8)
    actions[0] = (R.PICK_OFFSET + best_pick).T
    for t in range(1, R.ROLLS_PER_TURN):
        keeps = np.where(_KEEPS_LEGAL, plan.keep[:, t - 1][:, KEEP_PROPER], -np.inf)  # (n, 252, 32)
        best_keep = keeps.argmax(axis=2)
        keep_value = np.take_along_axis(keeps, best_keep[..., None], axis=2)[..., 0]
        actions[t] = np.where(keep_value >= pick_value, best_keep, R.PICK_OFFSET + best_pick).T  # a tie: the keep
    return actions


def solo_policy_table(network) -> np.ndarray:
    """A solo network's whole policy as the agent plays it: uint8 ``(3, num_open_masks, 252)``, the action at every
    ``(rolls_left, open_mask, roll)`` (open mask 0 holds 0), from one plan of every open mask (rules without bonuses:
    a turn's context is its open mask).

    Raises:
        ValueError: a table network, or rules with bonuses.
    """
    rules = network.rules
    if network.spec.players != 1 or rules.has_bonuses:
        raise ValueError("a policy table is a solo network's, under rules without bonuses")
    masks = np.arange(1, rules.num_open_masks)
    zeros = np.zeros_like(masks)
    plan = TurnPlanner(rules, 1, network, exact=True).plan((masks, zeros, zeros, zeros))
    policy = np.zeros((R.ROLLS_PER_TURN, rules.num_open_masks, R.NUM_ROLLS), dtype=np.uint8)
    for at in range(0, len(masks), 512):  # the keeps' (n, 252, 32) values a chunk at a time
        policy[:, masks[at : at + 512]] = turn_actions(Plan(*(x[at : at + 512] for x in plan))).transpose(0, 2, 1)
    return policy


class _SheetValues:
    """A solo network's values of sheets read from its memo (:meth:`ValueNetwork.to_come`), every sheet asked for
    valued first: then reading them computes nothing, so two threads may plan at once.
    """

    def __init__(self, network, open_mask: np.ndarray, upper: np.ndarray, armed: np.ndarray) -> None:
        self.network = network
        for at in range(0, len(open_mask), 1 << 16):
            network.to_come(*(x[at : at + (1 << 16)] for x in (open_mask, upper, armed)))

    def values(self, own: tuple, opponents=None, exact: bool = False) -> np.ndarray:
        return self.network.to_come(own[0], own[1], own[2])


def family_policy(network, states: np.ndarray):
    """A solo network's policy under a family's rules as :func:`yacht_env.family_recurrence.build` takes one:
    ``(open_mask, bonus) -> (3, 252, n)`` (``bonus = upper * armed_states + armed``), the agent's own actions
    (:func:`turn_actions` of its exact plans), from its values of ``states`` (flat ``open_mask * width + bonus``:
    every turn start a game reaches, which holds every afterstate of theirs), computed first.

    Raises:
        ValueError: a table network, or rules without bonuses (whose policy :func:`solo_policy_table` reads).
    """
    rules = network.rules
    if network.spec.players != 1 or not rules.has_bonuses:
        raise ValueError("a family policy is a solo network's, under rules with bonuses")
    uppers, armeds = rules.bonus_shape
    open_mask, bonus = np.divmod(np.asarray(states, dtype=np.intp), uppers * armeds)
    planner = TurnPlanner(rules, 1, _SheetValues(network, open_mask, *np.divmod(bonus, armeds)), exact=True)

    def policy(open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
        upper, armed = np.divmod(np.asarray(bonus, dtype=np.intp), armeds)
        return turn_actions(planner.plan((np.asarray(open_mask), upper, armed, np.zeros_like(upper))))

    return policy


__all__ = ["Plan", "TurnPlanner", "decide", "family_policy", "result", "solo_policy_table", "turn_actions"]
