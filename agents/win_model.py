"""The win agent's two sums, shared by its model under Yacht's rules (:mod:`yacht_agents.win`) and under the
family's (:mod:`yacht_agents.win_family`): the chance of finishing first on a final total, and a turn's keeps valued
one re-rolled die at a time.
"""

from __future__ import annotations

import numpy as np

from yacht_env import rules as R
from yacht_env.turn_rows import NUM_PROPER_KEPT


def _die_children() -> list[tuple[np.ndarray, np.ndarray]]:
    """Per number of kept dice ``j = 4, 3, .., 0``: the kept multisets of ``j`` dice and, per face, the one
    with that face added (indices into ``KEPT``, whose last 252 entries are the rolls).
    """
    index = {kept: i for i, kept in enumerate(R.KEPT)}
    levels = []
    for size in range(R.NUM_DICE - 1, -1, -1):
        parents = [i for i, kept in enumerate(R.KEPT) if len(kept) == size]
        children = [[index[tuple(sorted((*R.KEPT[i], face)))] for face in range(1, R.NUM_FACES + 1)] for i in parents]
        levels.append((np.array(parents, dtype=np.intp), np.array(children, dtype=np.intp)))
    return levels


_DIE_CHILDREN = _die_children()


def after_keeps(roll_values: np.ndarray, roll_as_kept: np.ndarray) -> np.ndarray:
    """``(n, 210)``: ``roll_values @ TRANSITION[:210].T`` (the expected value after each keep), by rolling the
    re-rolled dice one at a time: the value of keeping ``K`` is the mean over a die's faces of keeping ``K``
    and that die. 1,260 additions per row instead of a 252 x 210 product (the transition rows are sparse).

    Args:
        roll_values: ``(n, 252)``: the value of each roll.
        roll_as_kept: ``(252,)``: each roll's index in ``KEPT`` (``KEEP[:, KEEP_ALL]``).
    """
    values = np.empty((len(roll_values), len(R.KEPT)))
    values[:, roll_as_kept] = roll_values
    for parents, children in _DIE_CHILDREN:
        values[:, parents] = values[:, children].sum(axis=2) / R.NUM_FACES
    return values[:, :NUM_PROPER_KEPT]


def first_place(less: list[np.ndarray], equal: list[np.ndarray]) -> np.ndarray:
    """The probability of finishing first (ties split) on a final total, from each opponent's chances ``a_j`` of
    finishing below it and ``b_j`` of finishing on it (equal-shape arrays, one per opponent): the integral over ``u``
    in ``[0, 1]`` of ``prod_j (a_j + b_j u)`` (``a + b / 2`` for one opponent).
    """
    if len(less) == 1:  # the common case, without the polynomial
        return less[0] + 0.5 * equal[0]
    coefficients = np.ones((*less[0].shape, 1))  # of prod_j (a_j + b_j u), lowest degree first
    for a, b in zip(less, equal, strict=True):
        grown = np.zeros((*a.shape, coefficients.shape[-1] + 1))
        grown[..., :-1] += coefficients * a[..., None]
        grown[..., 1:] += coefficients * b[..., None]
        coefficients = grown
    return coefficients @ (1.0 / np.arange(1, coefficients.shape[-1] + 1))
