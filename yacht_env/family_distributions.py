"""The solver's policy under the family's rules (an upper bonus, a Yahtzee bonus, a joker: Yahtzee, Yatzy,
Clubhouse) as the family's score distributions' recurrence (:mod:`yacht_env.family_recurrence`) takes a policy: its
action at every roll and re-rolls left of a batch of turn starts (:func:`solver_actions`, :func:`solver_policy`).
:func:`yacht_env.distributions.score_distributions` builds and caches the distributions of that policy.
"""

from __future__ import annotations

import functools

import numpy as np

from yacht_env import rules as R
from yacht_env import solver as S
from yacht_env.family_states import Outcomes, outcomes_for
from yacht_env.turn_rows import KEEP_ROW, ROLL_ORDER, best_keeps, expected_keeps


def _keep_slots() -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """The legal keeps of every roll by slot: ``rolls`` (the rolls, most legal keeps first), ``rows[j, i]`` and
    ``masks[j, i]``, the kept row and the mask of roll ``rolls[i]``'s ``j``-th legal keep in mask order (slot 0: keep
    nothing, mask 0), and ``prefixes[j]``: how many leading rolls have a ``j``-th.
    """
    legal = R.CANONICAL_KEEPS.copy()
    legal[:, R.KEEP_ALL] = False
    counts = legal.sum(axis=1)
    rolls = np.argsort(-counts, kind="stable")
    slots = int(counts.max())
    rows = np.zeros((slots, R.NUM_ROLLS), dtype=np.intp)
    masks = np.zeros((slots, R.NUM_ROLLS, 1), dtype=np.uint8)
    for i, r in enumerate(rolls):
        legal_masks = np.flatnonzero(legal[r])
        rows[: len(legal_masks), i] = KEEP_ROW[r, legal_masks]
        masks[: len(legal_masks), i, 0] = legal_masks
    return rolls, rows, masks, [int((counts > j).sum()) for j in range(slots)]


_SLOT_ROLLS, _SLOT_ROWS, _SLOT_MASKS, _SLOT_PREFIXES = _keep_slots()
_ROLL_ROW = np.argsort(ROLL_ORDER)  # roll r is row _ROLL_ROW[r] of a turn's values
_FIVES = R.FIVE_OF_A_KIND_ROLLS


def _first_best_keep(keeps: np.ndarray, best: np.ndarray) -> np.ndarray:
    """``(252, n)`` uint8: per roll the smallest legal mask whose keep's value (``keeps`` ``(210, n)``, rows) equals
    ``best`` ``(252, n)`` (by roll; the best keep's value, so one does).
    """
    best = best[_SLOT_ROLLS]
    mask = np.zeros(best.shape, dtype=np.uint8)
    for j in range(len(_SLOT_PREFIXES) - 1, -1, -1):  # the last slot first: the first equal one is written last
        count = _SLOT_PREFIXES[j]
        np.copyto(mask[:count], _SLOT_MASKS[j, :count], where=keeps[_SLOT_ROWS[j, :count]] == best[:count])
    out = np.empty_like(mask)
    out[_SLOT_ROLLS] = mask
    return out


def solver_actions(outcomes: Outcomes, ahead: np.ndarray, open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
    """The solver's best action at every roll and re-rolls left of states ``(open_mask, bonus)`` ``(n,)``:
    ``(3, 252, n)`` uint8, indexed ``[rolls_left, roll, state]``.

    Exactly :meth:`~yacht_env.solver.Solution.best_action` (ties to the smallest action): the same action values, from
    the same float operations (a pick: its points plus ``ahead`` of the state it leaves; a keep: the turn's values of
    :func:`yacht_env.turn_rows.turn_values`, whose passes are run here one by one).

    Args:
        outcomes: The rules' :class:`Outcomes`.
        ahead: ``ahead[0] = -inf``, ``ahead[1 + flat state]``: the solver's start values (:func:`ahead_values`).
        open_mask: ``(n,)`` ints: the states' open boxes (at least one).
        bonus: ``(n,)`` ints: their bonus states, ``upper * armed_states + armed``.
    """
    rules = outcomes.picks.rules
    n = len(open_mask)
    points, after = outcomes.at(open_mask, bonus)
    is_open = (open_mask & outcomes.bits[:, None]) != 0
    value = points + ahead[(1 + after) * is_open]  # (outcomes, n); a closed box reads ahead[0] = -inf
    # An extra five of a kind goes where the forced joker's placement says (legal_picks).
    forced = R.legal_picks(rules, _FIVES[:, None], open_mask) if rules.joker == "forced" else None
    pick_now = np.full((R.NUM_ROLLS, n), -np.inf)
    best_pick = np.zeros((R.NUM_ROLLS, n), dtype=np.uint8)
    for k in range(rules.num_categories):  # strictly better only: ties go to the first box
        v = value[outcomes.of_pick[:, k]]
        if forced is not None:
            v[_FIVES] = np.where(forced >> k & 1 != 0, v[_FIVES], -np.inf)
        better = v > pick_now
        np.copyto(pick_now, v, where=better)
        best_pick[better] = k
    actions = np.empty((R.ROLLS_PER_TURN, R.NUM_ROLLS, n), dtype=np.uint8)
    actions[0] = R.PICK_OFFSET + best_pick
    pick_rows = pick_now[ROLL_ORDER]  # V0 by roll-row
    rows = pick_rows
    for t in range(1, R.ROLLS_PER_TURN):
        keeps = expected_keeps(rows)  # EK_t, as turn_values(V0, t) makes it
        best = best_keeps([keeps.copy()])[0]
        best_keep = best[_ROLL_ROW]
        chosen = _first_best_keep(keeps, best_keep)
        actions[t] = np.where(best_keep >= pick_now, chosen, R.PICK_OFFSET + best_pick)  # ties: the keep (first)
        rows = np.maximum(best, pick_rows)  # V_t, the next re-roll's values
    return actions


def ahead_values(solution: S.Solution) -> np.ndarray:
    """``(1 + states,)``: ``-inf``, then the solver's start value of every flat state ``open_mask * width + bonus``."""
    return np.concatenate([[-np.inf], solution.start_values.ravel()])


def solver_policy(solution: S.Solution):
    """The solver's policy as :func:`build` takes one: ``(open_mask, bonus) -> (3, 252, n)``
    (:func:`solver_actions`).
    """
    return functools.partial(solver_actions, outcomes_for(solution.rules), ahead_values(solution))


__all__ = ["ahead_values", "solver_actions", "solver_policy"]
