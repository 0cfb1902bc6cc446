"""The backward induction of the family's presets (the rules with an upper bonus or a Yahtzee bonus: Yahtzee,
Yatzy), a level of turn-start states at once.

:mod:`yacht_env.solver` states the recurrence, solves Yacht's presets and holds the
:class:`~yacht_env.solver.Solution` and its cache; this module solves the family (:func:`solve_family`) and gives
the solution's queries the family's within-turn values of the positions they ask about (:func:`turn`).

About 0.5 M reachable turn-start states for Yahtzee, 1.4 M for Yatzy
(:func:`yacht_env.family_states.reachable_states`). A level (all reachable states with the same number of open
categories) is solved in chunks of states with the values laid out (rows, states) of :mod:`yacht_env.turn_rows`:
``V0`` from pick tables built once from ``pick_outcome`` (:class:`yacht_env.family_states.Picks`: a roll that is not
five of a kind scores by its box's score alone, so each category needs one representative roll per distinct score;
the six five-of-a-kind rolls carry the joker and the Yahtzee bonus), then the turn of
:func:`yacht_env.turn_rows.turn_values` (``EK_t`` by adding one fresh die at a time, the best sub-multisets level by
level). Yahtzee solves in a few seconds on two cores, well under 100 MB.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from yacht_env import rules as R
from yacht_env.family_states import Picks, picks_for, reachable_states
from yacht_env.turn_rows import turn_values

# --------------------------------------------------------------------------------------------------
# The family (rules with bonuses): a level of turn-start states at once, values laid out (rows, states)
# --------------------------------------------------------------------------------------------------
_CHUNK = 256  # states per chunk: a (252, 256) float64 array is 0.5 MB, so a chunk's work stays in cache
_THREADS = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


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
