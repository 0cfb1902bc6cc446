"""The win agent's model, shared by the agent under Yacht's rules (:mod:`yacht_agents.win`), under the family's
(:mod:`yacht_agents.win_family`) and by the search agent's race (:mod:`yacht_agents.search_value`): the chance of
finishing first on a final total, every seat's chance of finishing first from a table of turn starts when each plays
a given solo policy to the end, and a turn's keeps valued one re-rolled die at a time. It reads score distributions
(any object with ``start``, ``(num_open_masks, width)`` probabilities, and ``width``: the solver's policy's or an
agent's own, :mod:`yacht_env.score_recurrence`), never a solver.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from yacht_env import rules as R
from yacht_env.turn_rows import NUM_PROPER_KEPT

_TABLE_ROWS = 512  # tables of table_win_probabilities evaluated together: (rows, width) arrays of ~1 MB


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
    if len(less) == 2:  # (a_1 + b_1 u)(a_2 + b_2 u) integrated
        (a1, a2), (b1, b2) = less, equal
        return a1 * a2 + 0.5 * (a1 * b2 + a2 * b1) + b1 * b2 / 3.0
    coefficients = np.ones((*less[0].shape, 1))  # of prod_j (a_j + b_j u), lowest degree first
    for a, b in zip(less, equal, strict=True):
        grown = np.zeros((*a.shape, coefficients.shape[-1] + 1))
        grown[..., :-1] += coefficients * a[..., None]
        grown[..., 1:] += coefficients * b[..., None]
        coefficients = grown
    return coefficients @ (1.0 / np.arange(1, coefficients.shape[-1] + 1))


def distinct_rows(keys: list[np.ndarray], radix: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of integer columns ``keys`` (each in ``[0, radix)``): ``(first, inverse)``, the index of
    each distinct row's first occurrence and each row's distinct row, as :func:`numpy.unique` gives them (the distinct
    rows in ascending order of their columns). Columns are packed into 63-bit words, several to a word where they fit.
    """
    per_word = max(1, int(63 // max(radix - 1, 1).bit_length()))
    words = []
    for start in range(0, len(keys), per_word):
        word = np.asarray(keys[start], dtype=np.int64)
        for key in keys[start + 1 : start + per_word]:
            word = word * radix + key
        words.append(word)
    if len(words) == 1:
        _, first, inverse = np.unique(words[0], return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    order = np.lexsort(words[::-1])
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any([w[order][1:] != w[order][:-1] for w in words], axis=0)
    inverse = np.empty(len(order), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def cdf_before(distributions) -> np.ndarray:
    """``(4096, width + 1)``: ``P(points to come <= x - 1)`` at column ``x`` under open mask ``O`` (row ``O``).

    Column 0 is 0 and the last column exactly 1, whatever the float rounding; one gather gives both ``<`` and ``<=``.
    """
    cdf = np.minimum(np.cumsum(distributions.start, axis=1), 1.0)
    cdf[:, -1] = 1.0  # exactly 1 past the support
    return np.concatenate([np.zeros((len(cdf), 1)), cdf], axis=1)


@functools.lru_cache(maxsize=4)
def _model_tables(distributions) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cdf_before` and ``(4096, 3 * width)``: at column ``width + s``, ``P(X < s) + P(X = s) / 2`` for
    ``X ~ D[O]`` (0 for ``s < 0``, 1 past the support): the probability of finishing first with a lead of ``s``
    over an opponent with open mask ``O`` still to play (and, shifted, the midpoint ``m`` of
    :func:`table_win_probabilities`).
    """
    cdf = cdf_before(distributions)
    width = distributions.width
    half = 0.5 * (cdf[:, :-1] + cdf[:, 1:])
    pad = np.concatenate([np.zeros((len(cdf), width)), half, np.ones((len(cdf), width))], axis=1)
    return cdf, pad


@functools.lru_cache(maxsize=4)
def _padded_pmf(distributions) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(4096, 3 * width)``: ``D[O][s]`` at column ``width + s`` (0 outside ``0..width-1``), and ``(4096,)`` each:
    the first and the last ``s`` with ``D[O][s] > 0`` (the fewest and the most points still to come).
    """
    start, width = distributions.start, distributions.width
    pmf = np.zeros((len(start), 3 * width))
    pmf[:, width : 2 * width] = start
    positive = start > 0
    return pmf, np.argmax(positive, axis=1), width - 1 - np.argmax(positive[:, ::-1], axis=1)


def table_win_probabilities(distributions, open_masks: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Every player's probability of finishing first (ties split) from a table where all are at a turn start.

    The model of the win agent: player ``i`` finishes on ``totals[i] + X_i`` with ``X_i ~ D[open_masks[i]]``
    (the solver's policy to the end), independent across players.

    Args:
        distributions: The :class:`~yacht_env.distributions.ScoreDistributions` of the rules played.
        open_masks: ``(N, P)`` ints, ``P >= 2``: each player's open mask.
        totals: ``(N, P)`` ints: each player's total (at most what its filled categories can score).

    Returns:
        ``(N, P)`` float64, each row summing to 1 (up to rounding).

    Raises:
        ValueError: for ``P > 2``, a total below 0 or above what its filled categories can score (a final total
            past the rules' largest).
    """
    open_masks = np.asarray(open_masks, dtype=np.intp)
    totals = np.asarray(totals, dtype=np.intp)
    n, p = open_masks.shape
    if p > 2:
        return _many_players(distributions, open_masks, totals)
    _, pad = _model_tables(distributions)
    width = distributions.width
    result = np.empty((n, p))
    for first in range(0, n, _TABLE_ROWS):  # one gather: P(X_0 + lead > X_1) + P(= ) / 2
        rows = slice(first, first + _TABLE_ROWS)  # = sum_x D[O_0][x] pad[O_1, width + lead + x]
        start = open_masks[rows, 1] * pad.shape[1] + width + totals[rows, 0] - totals[rows, 1]
        chances = distributions.start[open_masks[rows, 0]] * pad.reshape(-1)[start[:, None] + np.arange(width)]
        result[rows, 0] = chances.sum(axis=1)
    result[:, 1] = 1.0 - result[:, 0]
    return result


def _many_players(distributions, open_masks: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """:func:`table_win_probabilities` for ``P > 2`` players, from one set of per-player rows.

    With ``b_j(v) = P(player j ends on v)`` and ``m_j(v) = P(ends below v) + b_j(v) / 2``, player ``j``'s factor
    ``a_j + b_j u`` of the win probability on ``v`` is ``m_j + b_j w`` with ``w = u - 1/2`` uniform on
    ``[-1/2, 1/2]``, so ``P_i = sum_v b_i E[prod_{j != i} (m_j + b_j w)]``. Expanding the product, the odd powers
    of ``w`` vanish and ``E[w^k] = 2^-k / (k + 1)``: ``P_i = sum over the player sets B with i in B and |B| odd of
    E[w^(|B| - 1)] t_B``, with ``t_B = sum_v prod_{j in B} b_j prod_{j not in B} m_j`` shared by the players of
    ``B`` (three players: ``P_0 = sum_v b_0 m_1 m_2 + (1/12) sum_v b_0 b_1 b_2``). Only the final totals ``v``
    from the second-highest total (below it every player has an opponent already past ``v``) to the highest total
    reachable (past it every ``b`` is 0) are summed; the model is symmetric in the players, so each distinct table
    (its players sorted) is computed once: round starts repeat (every first round; seats rotated around solver
    players).
    """
    n, p = open_masks.shape
    width = distributions.width
    _, mid = _model_tables(distributions)
    pmf, _, end = _padded_pmf(distributions)
    if (totals < 0).any() or (totals + end[open_masks] >= width).any():
        raise ValueError(f"totals must be >= 0 and at most what the filled categories can score (< {width})")
    codes = open_masks * width + totals  # a player's state as one int (below 2^21 for Yacht's 12 categories)
    order = np.argsort(codes, axis=1, kind="stable")
    codes = np.take_along_axis(codes, order, axis=1)
    first, inverse = distinct_rows(list(codes.T), int(codes.max()) + 1)
    tables = codes[first]
    masks, points = np.divmod(tables, width)
    low = np.sort(points, axis=1)[:, -2]
    size = (points + end[masks]).max(axis=1) + 1 - low  # final totals low .. low + size - 1
    by_size = np.argsort(size, kind="stable")  # chunks of similar sizes: each sums over its own largest
    sets = [
        (list(players), 0.5 ** (len(players) - 1) / len(players))
        for count in range(1, p + 1, 2)
        for players in itertools.combinations(range(p), count)
    ]
    values = np.empty((len(tables), p))
    for first in range(0, len(tables), _TABLE_ROWS):
        at = by_size[first : first + _TABLE_ROWS]
        span = int(size[at[-1]])
        mids, pmfs = sliding_window_view(mid, span, axis=1), sliding_window_view(pmf, span, axis=1)
        column = width + low[at, None] - points[at]  # (rows, P): where each player's row reaches v = low
        m = [mids[masks[at, j], column[:, j]] for j in range(p)]  # (rows, span) each
        b = [pmfs[masks[at, j], column[:, j]] for j in range(p)]
        chunk = np.zeros((len(at), p))
        for players, moment in sets:
            factors = [b[j] if j in players else m[j] for j in range(p)]
            product = factors[0] * factors[1]
            for factor in factors[2:-1]:
                product *= factor
            chunk[:, players] += moment * np.einsum("nv,nv->n", product, factors[-1])[:, None]
        values[at] = chunk
    result = np.empty((n, p))
    np.put_along_axis(result, order, values[inverse.reshape(-1)], axis=1)
    return result


def final_win_probability(
    cdf: np.ndarray, opponent_open: np.ndarray, opponent_total: np.ndarray, placing: float = 0.0
) -> np.ndarray:
    """``(N, width)``: the probability of finishing first (ties split) on a final total ``v = 0..width-1``.

    Args:
        cdf: :func:`cdf_before` of the score distributions.
        opponent_open: ``(N, P - 1)`` ints: each opponent's open mask (at a turn start); the opponents play the
            distributions' policy to the end, their dice independent.
        opponent_total: ``(N, P - 1)`` ints: each opponent's total.
        placing: ``w`` in ``[0, 1]``: ``(1 - w)`` times that probability plus ``w`` times the expected fraction of the
            opponents finished ahead of (ties half): :func:`first_seat_chances`' ``placing``.
    """
    width = cdf.shape[1] - 1
    columns = cdf.shape[1]
    opponents = opponent_open.shape[1]
    flat = cdf.reshape(-1)
    less, equal = [], []
    for j in range(opponents):
        # Opponent j's final total is below v iff its points to come are <= v - 1 - total_j.
        start = opponent_open[:, j, None] * columns
        shift = np.arange(width) - opponent_total[:, j, None]  # v - total_j
        below = flat[start + np.clip(shift, 0, columns - 1)]
        at_most = flat[start + np.clip(shift + 1, 0, columns - 1)]
        less.append(below)
        equal.append(at_most - below)
    first = first_place(less, equal) if placing < 1 else 0.0
    if not placing:
        return first
    ahead = sum(a + 0.5 * b for a, b in zip(less, equal, strict=True)) / opponents
    return (1.0 - placing) * first + placing * ahead


def first_seat_chances(
    distributions, open_masks: np.ndarray, totals: np.ndarray, cdf: np.ndarray | None = None, placing: float = 0.0
) -> np.ndarray:
    """``(N,)``: :func:`table_win_probabilities`' first column, the first seat's chance of finishing first (ties
    split), by another sum: its final total's distribution against :func:`final_win_probability` of its opponents, each
    distinct set of opponents (as a multiset) summed once. Cheaper where many rows share their opponents (the
    afterstates of one turn): a row costs one pass over the first seat's possible points to come (rounded up to a
    multiple of :data:`_SPAN_STEP`: a row's sum reads nothing of the rows beside it).

    Args:
        distributions: As :func:`table_win_probabilities`.
        open_masks: ``(N, P)`` ints, ``P >= 2``: each seat's open mask, the first seat's first.
        totals: ``(N, P)`` ints: each seat's total (at most what its filled categories can score).
        cdf: :func:`cdf_before` of ``distributions``, if the caller keeps it.
        placing: ``w`` in ``[0, 1]``: the chance weighs ``1 - w``, and the expected fraction of the opponents the first
            seat finishes ahead of (ties half; each opponent's pairwise race) weighs ``w``.
    """
    open_masks = np.asarray(open_masks, dtype=np.intp)
    totals = np.asarray(totals, dtype=np.intp)
    width = distributions.width
    cdf = cdf_before(distributions) if cdf is None else cdf
    codes = np.sort(open_masks[:, 1:] * width + totals[:, 1:], axis=1)
    first, inverse = distinct_rows(list(codes.T), len(cdf) * width)
    beaten = np.zeros((len(first), 2 * width + _SPAN_STEP))  # past the support: no weight reads it
    beaten[:, :width] = final_win_probability(cdf, *np.divmod(codes[first], width), placing)
    pmf, low, high = _padded_pmf(distributions)
    mine, lows = open_masks[:, 0], low[open_masks[:, 0]]
    steps = -(-(high - low + 1) // _SPAN_STEP)  # each open mask's support, rounded up to whole steps
    sizes = np.minimum(steps * _SPAN_STEP, 2 * width - low)[mine]  # within the padded rows (binds below 32 totals)
    out = np.empty(len(open_masks))
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        for at in np.array_split(rows, -(-len(rows) // _TABLE_ROWS)):
            chances = sliding_window_view(pmf, size, axis=1)[mine[at], width + lows[at]]
            won = sliding_window_view(beaten, size, axis=1)[inverse[at], totals[at, 0] + lows[at]]
            out[at] = np.einsum("nv,nv->n", chances, won)
    return out


#: :func:`first_seat_chances` sums each row over its first seat's support rounded up to a multiple of this.
_SPAN_STEP = 32
