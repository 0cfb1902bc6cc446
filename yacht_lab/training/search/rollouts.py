"""The search trainer's games: batches of tables played by the search agent's own turn, and their TD(lambda) targets.

Every seat of every table plays the exact expectimax of its turn over the current value ``V``
(:class:`yacht_agents.search.TurnPlanner`): the planner is asked once per turn for all tables, and the turn's three
decisions read its plan. The dice fall from the rules' odds (``rules.TRANSITION``), drawn from the run's own
generator; the picks score by :func:`yacht_env.rules.pick_outcome`. Nothing of a solver enters.

The targets of a seat's afterstates ``a_0 .. a_T`` (one per turn), with ``S_t`` the value of its turn ``t`` before
its first roll under ``V`` (the plan's exact expectation of the turn: its points plus ``V`` of what follows, solo;
the mover's win chance at a table) and ``r_t`` the points of turn ``t`` (0 at a table):

* ``G_T``: the end: solo 0 (not trained: ``V`` of a full sheet is 0 by the rules); at a table the seat's share of the
  win, the game's result;
* ``G_t = (1 - lambda) S_{t+1} + lambda (r_{t+1} + G_{t+1})``: TD(lambda) with the one-turn expectation as its
  bootstrap. ``lambda = 0`` is fitted value iteration (each target is ``V``'s own exact one-turn backup); ``lambda =
  1`` is the game's result (Monte Carlo).

At a table the last seat's last afterstate (every sheet full) is the result itself and is not trained. With ``aux``,
each afterstate also has every seat's points still to come in its games (the mover's first, then the seats after
it): the final totals less the totals at the afterstate, the auxiliary outputs' targets.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from yacht_agents.search import TurnPlanner, decide, result
from yacht_env import rules as R
from yacht_env.turn_rows import KEEP_PROPER, NUM_PROPER_KEPT

#: ``CUMULATIVE[K, r]``: the chance of a roll at or before ``r`` after keeping ``KEPT[K]`` (a draw is one search).
CUMULATIVE = np.cumsum(R.TRANSITION[:NUM_PROPER_KEPT], axis=1)


class Batch(NamedTuple):
    """What one batch of games gives the learner, and what it says about the play.

    Fields:
        x: ``(m, F)`` float32: the afterstates' features (:func:`yacht_agents.search.features`).
        y: ``(m,)`` float64: their targets (points to come solo, a win share at a table).
        scores: ``(tables, P)`` ints: the final totals.
        turns: The turns played (``tables x P x C``).
        aux: ``(m, P)`` float64: every seat's points still to come after each afterstate (the mover's first), or None.
    """

    x: np.ndarray
    y: np.ndarray
    scores: np.ndarray
    turns: int
    aux: np.ndarray | None = None


def draw(rng: np.random.Generator, kept: np.ndarray) -> np.ndarray:
    """Sorted rolls after keeping ``KEPT[kept]`` (``(n,)``; 0: a turn's first roll), from the rules' odds."""
    u = rng.random(len(kept))
    return np.minimum((CUMULATIVE[kept] < u[:, None]).sum(axis=1), R.NUM_ROLLS - 1)


def play(planner: TurnPlanner, tables: int, rng: np.random.Generator, td_lambda: float, aux: bool = False) -> Batch:
    """Plays ``tables`` games (of ``planner.players`` seats each) and returns their afterstates and targets (and
    with ``aux`` every seat's points to come after each).
    """
    rules, p = planner.rules, planner.players
    c = rules.num_categories
    open_mask = np.full((tables, p), rules.all_open, dtype=np.intp)
    upper, armed, total = (np.zeros((tables, p), dtype=np.intp) for _ in range(3))
    network = planner.value
    x = None  # (C, P, tables, F): made once the first rows give F
    start = np.zeros((c, p, tables))
    reward = np.zeros((c, p, tables))
    totals = np.zeros((c, p, tables, p), dtype=np.intp) if aux else None  # at each afterstate, the mover's first
    for turn in range(c):
        for seat in range(p):
            others = [(seat + j) % p for j in range(1, p)]
            own = (open_mask[:, seat], upper[:, seat], armed[:, seat], total[:, seat])
            theirs = tuple(a[:, others] for a in (open_mask, upper, armed, total)) if p > 1 else None
            plan = planner.plan(own, theirs)
            start[turn, seat] = plan.start
            roll = draw(rng, np.zeros(tables, dtype=np.intp))
            roll, category = _play_turn(plan, roll, open_mask[:, seat], rng, c)
            points, _, up, arm = R.pick_outcome(
                rules, roll, category, open_mask[:, seat], upper[:, seat], armed[:, seat]
            )
            open_mask[:, seat] &= ~(1 << category)
            upper[:, seat], armed[:, seat] = up, arm
            total[:, seat] += points
            reward[turn, seat] = points
            after = (open_mask[:, seat], upper[:, seat], armed[:, seat], total[:, seat])
            theirs = tuple(a[:, others] for a in (open_mask, upper, armed, total)) if p > 1 else None
            rows = network.features(after, theirs)
            if totals is not None:
                totals[turn, seat] = total[:, [seat, *others]]
            if x is None:
                x = np.zeros((c, p, tables, rows.shape[1]), dtype=np.float32)
            x[turn, seat] = rows
    # TD(lambda) targets, backwards: per seat, from its last afterstate.
    target = np.zeros((c, p, tables))
    solo = p == 1
    for seat in range(p):
        g = np.zeros(tables) if solo else result(total[:, seat], total[:, [(seat + j) % p for j in range(1, p)]])
        target[c - 1, seat] = g
        for turn in range(c - 2, -1, -1):
            g = (1 - td_lambda) * start[turn + 1, seat] + td_lambda * (reward[turn + 1, seat] * solo + g)
            target[turn, seat] = g
    keep = np.ones((c, p), dtype=bool)
    keep[c - 1, p - 1] = False  # every sheet full: the result itself (solo: 0), never trained
    to_come = None
    if totals is not None:
        final = np.stack([total[:, [(seat + j) % p for j in range(p)]] for seat in range(p)])  # (P, tables, P)
        to_come = (final[None] - totals)[keep].reshape(-1, p).astype(np.float64)
    return Batch(x[keep].reshape(-1, x.shape[-1]), target[keep].reshape(-1), total, tables * p * c, to_come)


def _play_turn(plan, roll: np.ndarray, open_mask: np.ndarray, rng: np.random.Generator, c: int):
    """One turn of every table's mover under its plan: ``(final roll, category picked)``."""
    n = len(roll)
    index = np.arange(n)
    category = np.full(n, -1, dtype=np.intp)
    for rolls_left in (2, 1, 0):
        playing = np.flatnonzero(category < 0)
        if len(playing) == 0:
            break
        r = roll[playing]
        t = np.full(len(playing), rolls_left)
        legal = R.legal_action_mask(r, t, open_mask[playing], True, c)
        action = decide(plan, index[playing], r, t, legal)
        picks = action >= R.PICK_OFFSET
        category[playing[picks]] = action[picks] - R.PICK_OFFSET
        keeping = playing[~picks]
        roll[keeping] = draw(rng, KEEP_PROPER[roll[keeping], action[~picks]])
    return roll, category
