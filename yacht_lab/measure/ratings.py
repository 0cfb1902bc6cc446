"""Ratings of the agents of a head to head: a Bradley-Terry fit of every game's pairwise results, on the Elo
scale, with 95% intervals from a bootstrap over deals.

**The model.** Agent ``i`` has a strength ``t_i``; in a game it finishes ahead of agent ``j`` with probability
``1 / (1 + exp(t_j - t_i))`` (Bradley-Terry), a tie counting as half a win each, as the head to head's win rates
count it. At two players every game of the round robin is one such comparison; at ``P``-player tables each game's
order is broken into its ``P (P - 1) / 2`` pairwise results (the rank-breaking estimate of the Plackett-Luce
model), which the head to head already counts per pair. The fit maximises the likelihood of all of them times a
prior of one virtual tie per pair (:data:`PRIOR_TIES`; BayesElo's device), which keeps an agent that never won
(``random`` against the solver) finite: the likelihood alone would send it to minus infinity. The ratings are on
the Elo scale (:data:`ELO`: an agent ``d`` points above another finishes ahead with probability
``1 / (1 + 10 ** (-d / 400))``), their mean set to :data:`CENTER`: only differences mean anything.

**Why not openskill (or TrueSkill, Glicko).** Those update the ratings one game at a time, for players whose skill
drifts: the result depends on the order of the games, and their sigma counts every game as independent news.
Here the agents are fixed and every game is known at once: the maximum-likelihood fit of the same model
(openskill's ``BradleyTerryFull`` at two players) is free of any order, and the games of a deal are not
independent (they share their dice; a deterministic agent replays a seat rotation's game exactly), so a sigma
that counts games overstates the evidence.

**The intervals.** The deals are the independent units (:mod:`yacht_lab.measure.head_to_head`): the fit is repeated on
:data:`RESAMPLES` resamples of the deals, drawn with replacement, each deal carrying all its games of every
pair (:attr:`~yacht_lab.measure.head_to_head.HeadToHead.deal_outcomes`), and an interval is the 2.5th to 97.5th
percentile of the resampled values (the percentile bootstrap): for each agent's rating, and for the difference between
each agent and the next in the ranking (on common dice a difference is known far better than the two ratings). The
resampling is seeded with the head to head's seed: the same head to head gives the same table, byte for byte.

**Caveats.** The model is a summary: agents need not be transitive, and the win-rate matrix is the fuller
picture. A bootstrap cannot see what no deal showed: when an agent never beat another (nor tied), not even
through a third, no finite fit exists; its rating then rests on the prior (the most it can be: an upper bound)
and its interval is too narrow. The table and the JSON (``never_beat``) say so. The intervals are approximate
with few deals; a few hundred deals is the least for a table worth reading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from yacht_lab.measure.head_to_head import HeadToHead
from yacht_lab.measure.report import short_names

#: Elo points per unit of log-odds: 400 points are odds of 10 to 1.
ELO = 400 / math.log(10)
#: The mean of the agents' ratings.
CENTER = 1500.0
#: Virtual tied games added to every pair (the prior): negligible against the hundreds of games of a deal's pair
#: once each side has won some.
PRIOR_TIES = 1
#: Bootstrap resamples of the deals.
RESAMPLES = 1000
RATINGS_METHOD = (
    "Bradley-Terry maximum a posteriori fit of every game's pairwise results (ties half; at P > 2 each game's "
    f"order broken into its pairs), with {PRIOR_TIES} virtual tie per pair; Elo scale (400 points: odds of 10 "
    f"to 1), mean {CENTER:g}; 95% intervals: percentile bootstrap over deals (each deal with all its games)"
)
_MAX_STEP = 2.0  # Newton steps capped at this many log-odds units per agent: a far optimum is reached safely
_MAX_ITERATIONS = 200
_TOLERANCE = 1e-10
_CHUNK = 1 << 22  # resample weights held at once (resamples x distinct deals)


def bradley_terry(first: np.ndarray, second: np.ndarray, score: np.ndarray, games: np.ndarray, agents: int):
    """Maximum-likelihood Bradley-Terry strengths, batched.

    Args:
        first: int ``(pairs,)``: the first agent of each pair.
        second: int ``(pairs,)``: the second agent of each pair.
        score: float ``(..., pairs)``: the wins of ``first`` over ``second``, ties counting half (the prior's
            virtual games included).
        games: float ``(pairs,)`` or ``(..., pairs)``: the games of each pair.
        agents: The number of agents.

    Returns:
        float ``(..., agents)``: the strengths in log-odds units, mean 0 (Newton's method on the concave
        log-likelihood; every pair needs a score strictly between 0 and its games, as the prior makes it).
    """
    incidence = np.zeros((len(first), agents))
    incidence[np.arange(len(first)), first] = 1.0
    incidence[np.arange(len(first)), second] = -1.0
    strengths = np.zeros((*score.shape[:-1], agents))
    # The likelihood does not change when every strength moves together: the constant direction is added to the
    # curvature, and Newton's steps (whose gradient sums to 0) keep the mean at 0.
    level = np.full((agents, agents), 1.0 / agents)
    for _ in range(_MAX_ITERATIONS):
        expected = games / (1.0 + np.exp(strengths[..., second] - strengths[..., first]))
        gradient = (score - expected) @ incidence
        weight = expected * (1.0 - expected / games)
        curvature = np.einsum("...p,pi,pj->...ij", weight, incidence, incidence) + level
        step = np.linalg.solve(curvature, gradient[..., None])[..., 0]
        largest = np.abs(step).max(axis=-1, keepdims=True)
        strengths += step * np.minimum(1.0, _MAX_STEP / np.maximum(largest, _TOLERANCE))
        if largest.max() < _TOLERANCE:
            break
    return strengths - strengths.mean(axis=-1, keepdims=True)


@dataclass
class Ratings:
    """The agents' ratings (:func:`fit_ratings`): Elo points, mean :data:`CENTER`, with bootstrap samples."""

    names: list[str]
    games: list[int]  # games each agent played
    rating: np.ndarray  # float (agents,)
    samples: np.ndarray  # float (resamples, agents): the ratings fitted to each resample of the deals
    never_beat: list[list[str]]  # per agent: the agents it never beat nor tied, not even through another

    def interval(self, values: np.ndarray) -> list[float]:
        """The 95% percentile interval of resampled ``values`` (a column of, or a difference of, ``samples``)."""
        return [float(v) for v in np.percentile(values, [2.5, 97.5])]

    def difference(self, a: str, b: str) -> tuple[float, list[float]]:
        """The rating of ``a`` minus that of ``b``, and its 95% interval."""
        i, j = self.names.index(a), self.names.index(b)
        return float(self.rating[i] - self.rating[j]), self.interval(self.samples[:, i] - self.samples[:, j])

    def ranking(self) -> list[int]:
        """The agents' indices from the highest rating down (the order given among equals)."""
        return sorted(range(len(self.names)), key=lambda k: -_points(self.rating[k]))

    def to_dict(self) -> dict[str, object]:
        """The JSON: per agent in rank order its rank, rating, interval, games, the difference to the next
        (``null`` for the last) and the agents it never beat; ratings in Elo points to 0.01.
        """
        order = self.ranking()
        rounded = [_points(value) for value in self.rating]
        agents = {}
        for place, k in enumerate(order):
            above = None
            if place + 1 < len(order):
                above = self.difference(self.names[k], self.names[order[place + 1]])
            agents[self.names[k]] = {
                "rank": 1 + sum(value > rounded[k] for value in rounded),
                "rating": rounded[k],
                "rating_ci95": [_points(v) for v in self.interval(self.samples[:, k])],
                "games": self.games[k],
                "above_next": None if above is None else _points(above[0]),
                "above_next_ci95": None if above is None else [_points(v) for v in above[1]],
                "never_beat": self.never_beat[k],
            }
        return {"method": RATINGS_METHOD, "resamples": len(self.samples), "agents": agents}

    def format(self) -> list[str]:
        """The ratings table of the text report: rank, agent, rating [95% CI], games, above the next [95% CI]."""
        report = self.to_dict()
        agents = report["agents"]
        short = short_names(list(agents), 24)
        width = max(5, *(len(label) for label in short.values()))
        lines = [
            f"ratings (Bradley-Terry fit of every game's pairwise results, ties half, {PRIOR_TIES} virtual tie per "
            f"pair; Elo points, mean {CENTER:g}; 95% CIs: percentile bootstrap over deals, "
            f"{report['resamples']:,} resamples):",
            f"  rank  {'agent':<{width}}  {'rating [95% CI]':<26}  {'games':>9}  above the next [95% CI]",
        ]
        for name, row in agents.items():
            lo, hi = row["rating_ci95"]
            rating = f"{row['rating']:.1f} [{lo:.1f}, {hi:.1f}]"
            above = "-"
            if row["above_next"] is not None:
                alo, ahi = row["above_next_ci95"]
                above = f"{row['above_next']:+.1f} [{alo:+.1f}, {ahi:+.1f}]"
            lines.append(f"  {row['rank']:>4}  {short[name]:<{width}}  {rating:<26}  {row['games']:>9,}  {above}")
        for name, row in agents.items():
            if row["never_beat"]:
                lines.append(
                    f"  {name} never beat {', '.join(row['never_beat'])}, not even through another agent: its rating "
                    f"rests on the prior (it is at most that) and its interval is too narrow; more deals narrow it"
                )
        return lines


def _points(value: float) -> float:
    """Elo points to 0.01 (never -0.0)."""
    return round(float(value), 2) + 0.0


def fit(
    names: Sequence[str],
    first: Sequence[int],
    second: Sequence[int],
    outcomes: np.ndarray,
    games_per_deal: int,
    games: Sequence[int],
    seed: int = 0,
    resamples: int = RESAMPLES,
) -> Ratings:
    """Ratings from per-deal pairwise outcomes (see the module docstring).

    Args:
        names: The agents.
        first: The first agent (an index into ``names``) of each pair.
        second: The second agent of each pair.
        outcomes: int ``(deals, pairs)``: per deal and pair, 2 * wins of ``first`` + ties.
        games_per_deal: The games each pair plays per deal.
        games: Games each agent played (shown in the table).
        seed: Seed of the resampling.
        resamples: Bootstrap resamples of the deals.

    Raises:
        ValueError: no deals, no resamples, or pairs that do not connect the agents.
    """
    outcomes = np.asarray(outcomes, dtype=np.int64)
    first, second = np.asarray(first, dtype=np.intp), np.asarray(second, dtype=np.intp)
    deals, k = len(outcomes), len(names)
    if deals < 1 or resamples < 1 or outcomes.shape != (deals, len(first)):
        raise ValueError(f"ratings need deals, resamples and one outcome per pair, got {outcomes.shape} outcomes")
    reach = np.eye(k, dtype=bool)
    reach[first, second] = True  # every pair played: a prior tie joins them (the fit is finite)
    reach[second, first] = True
    for via in range(k):
        reach |= reach[:, via, None] & reach[None, via, :]
    if not reach.all():
        raise ValueError("the pairs do not connect every agent with every other: no common scale")

    def strengths(halves: np.ndarray) -> np.ndarray:  # halves: (..., pairs) 2 * wins + ties
        played = deals * games_per_deal + PRIOR_TIES
        return CENTER + ELO * bradley_terry(first, second, (halves + PRIOR_TIES) / 2, np.full(len(first), played), k)

    totals = outcomes.sum(axis=0)
    rating = strengths(totals.astype(float))
    # The resamples draw each distinct deal outcome a multinomial number of times (the same as drawing deals).
    rows, counts = np.unique(outcomes, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    samples = np.empty((resamples, k))
    chunk = max(1, _CHUNK // len(rows))
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        weights = rng.multinomial(deals, counts / deals, size=size)
        samples[start : start + size] = strengths((weights @ rows).astype(float))
    beat = np.eye(k, dtype=bool)  # i beat (or tied) j in some game
    beat[first[totals > 0], second[totals > 0]] = True
    full = totals < 2 * deals * games_per_deal
    beat[second[full], first[full]] = True
    for via in range(k):
        beat |= beat[:, via, None] & beat[None, via, :]
    never_beat = [[names[j] for j in range(k) if not beat[i, j]] for i in range(k)]
    return Ratings(list(names), list(games), rating, samples, never_beat)


def fit_ratings(result: HeadToHead, resamples: int = RESAMPLES) -> Ratings:
    """The ratings of a head to head's agents (every pair, over all the tables holding both: its
    :attr:`~yacht_lab.measure.head_to_head.HeadToHead.pair_games_per_deal` games a deal), the resampling seeded with
    its seed.
    """
    column = {name: k for k, name in enumerate(result.names)}
    first = [column[pair.a] for pair in result.pairs.values()]
    second = [column[pair.b] for pair in result.pairs.values()]
    games = [result.games[name] for name in result.names]
    outcomes, per_deal = result.deal_outcomes, result.pair_games_per_deal
    return fit(result.names, first, second, outcomes, per_deal, games, result.seed, resamples)
