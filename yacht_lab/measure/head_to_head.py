"""Head to head: agents playing multiplayer Yacht against each other at tables, on common dice, seats rotated.

Every ``P`` of the ``K`` agents given sit at a table (:func:`lineups`: ``comb(K, P)`` tables; at two players every
pair, a round robin; with ``K = P`` one table). The highest total wins a game; tied winners share it.

**Deals, dice and seats.** Deal ``g`` is the ``P`` dice streams ``game_streams(seed, range(g * P, g * P + P))``
(stream ``j`` of the deal is solo game ``g * P + j`` of :mod:`yacht_lab.measure.evaluation`). Each deal is played
``P * P`` times, once per *dice rotation* ``d`` and *seat rotation* ``r``: the ``i``-th agent of the table
(in the order given) holds stream ``(i + d) % P`` of the deal and sits at seat ``(i + r) % P``. So an agent
keeps its dice whatever its seat (the seat rotations of one dice rotation replay the same dice from every
seat: the seat advantage cancels), and every agent plays every stream of the deal equally often (the dice
cancel: a duplicate tournament). Two copies of one deterministic agent therefore split every deal exactly at two
players; at more their win shares and margins are exactly equal, their pairwise win rates equal in expectation
(the cyclic rotations put stream ``d`` against ``d + 1``, never the reverse). The rotations and the play of a
batch of tables are in :mod:`yacht_lab.measure.tables`. Every one of the ``P * P`` plays counts as a game:
``games = deals * P * P`` per table, ``comb(K, P) * P * P`` a deal in all. A pair's results sum over every table
holding both: ``comb(K - 2, P - 2) * P * P`` games a deal (:attr:`HeadToHead.pair_games_per_deal`); an agent's over
its ``comb(K - 1, P - 1)`` tables.

**Statistics.** Games of one deal share their dice, so they are not independent; the deals are. Every mean
(win rate, margin, score, win share) is the mean over all games, and its 95% confidence interval is the
normal approximation over deals: each deal's mean over its games is one observation (``mean +- 1.96 *
sd / sqrt(deals)``). The per-deal sums are integers (a game's win share is counted in units of ``1 /
lcm(1..P)``), summed exactly: the report does not depend on the batch size (except through the ``random``
agent's draws) and the JSON is the same byte for byte for the same arguments.

Batching: the tables of a batch of deals step together on one :class:`~yacht_env.game.TableState`, a
decision at a time; each agent acts once per decision, in one batched ``act`` call, at every table where it
is on turn. An agent with ``table_players == P`` sees the table from its seat
(:class:`~yacht_env.encoding.MultiplayerEncoder`); the others see their own game as ``Yacht-v0`` shows it.

**Per deal.** Besides the sums, the result keeps each deal's outcome of every pair over all its tables
(``deal_outcomes``: uint8, or a wider unsigned int where a pair plays more than 127 games a deal), from which
:mod:`yacht_lab.measure.ratings` fits the agents' ratings and resamples deals; with ``keep_deals=True`` also each
deal's sums per agent and its margins per pair (``deal_sums``), from which :func:`merge_lineups` puts together a
head to head whose tables were played apart (on Ray: :mod:`yacht_lab.measure.head_to_head_ray`).

The win agent's model is checked against the outcomes in :mod:`yacht_lab.measure.calibration`; the reports (text, JSON,
the win-rate plot) are written by :mod:`yacht_lab.measure.head_to_head_report`.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from yacht_agents.base import Agent, check_agents
from yacht_env import rules as R
from yacht_env.distributions import score_distributions
from yacht_env.rules import is_int
from yacht_lab.measure.calibration import Calibration, predict_round_starts
from yacht_lab.measure.evaluation import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, MAX_GAMES
from yacht_lab.measure.report import Z_95, progress_bar, rounded_floats
from yacht_lab.measure.tables import play_tables, seating, table_streams

MAX_PLAYERS = 10
#: How the confidence intervals are computed (written to the JSON report).
CI_METHOD = "95% normal approximation over deals (each deal's mean over its games is one observation)"


def lineups(num_agents: int, num_players: int) -> list[tuple[int, ...]]:
    """The tables of a head to head: every ``num_players`` of the agents (indices, in the order given), in
    ``itertools.combinations`` order. At two players every pair; with as many agents as players the one table.
    """
    return list(itertools.combinations(range(num_agents), num_players))


def outcome_dtype(pair_games_per_deal: int) -> np.dtype:
    """The unsigned dtype of ``deal_outcomes`` that holds a pair's largest outcome, ``2 * pair_games_per_deal``."""
    return np.promote_types(np.uint8, np.min_scalar_type(2 * pair_games_per_deal))


class Tally:
    """Exact sums over deals of an integer per-deal quantity: count, sum and sum of squares (Python ints)."""

    def __init__(self) -> None:
        self.n = self.total = self.total_sq = 0

    def add(self, values: np.ndarray) -> None:
        """Counts a batch of values."""
        values = np.asarray(values, dtype=np.int64)
        self.n += len(values)
        self.total += int(values.sum())
        largest = int(np.abs(values).max()) if len(values) else 0
        if largest * largest * len(values) < 2**63:  # the int64 dot product cannot overflow
            self.total_sq += int(np.dot(values, values))
        else:  # many tables a deal: Python's ints, exact whatever the size
            self.total_sq += sum(value * value for value in values.tolist())

    def mean_ci(self, scale: float, low: float = -math.inf, high: float = math.inf) -> tuple[float, list[float]]:
        """The mean of ``value / scale`` per deal and its 95% normal-approximation CI over deals, clipped to the
        quantity's range ``[low, high]`` (a win rate's is [0, 1]: the normal approximation alone can leave it).
        """
        n = self.n
        mean = self.total / (n * scale)
        # Sample variance of the per-deal values: (n * sum_sq - sum^2) / (n (n - 1)), exact in integers.
        spread = n * self.total_sq - self.total**2 if n > 1 else 0
        half = Z_95 * math.sqrt(spread / (n * n * (n - 1))) / scale if n > 1 else 0.0
        return mean, [max(mean - half, low), min(mean + half, high)]


@dataclass
class PairResult:
    """Agent ``a`` against agent ``b`` (``a`` given first) over all the games where both sat."""

    a: str
    b: str
    games: int = 0
    wins_a: int = 0
    wins_b: int = 0
    ties: int = 0
    outcome: Tally = field(default_factory=Tally)  # per deal: 2 * (wins of a) + ties
    margin: Tally = field(default_factory=Tally)  # per deal: sum of total_a - total_b

    def summary(self, games_per_deal: int) -> dict[str, object]:
        """The pair's result as JSON-ready data."""
        win_rate, win_ci = self.outcome.mean_ci(2 * games_per_deal, 0.0, 1.0)
        margin, margin_ci = self.margin.mean_ci(games_per_deal)
        return rounded_floats(
            {
                "games": self.games,
                "wins_a": self.wins_a,
                "wins_b": self.wins_b,
                "ties": self.ties,
                "win_rate_a": win_rate,
                "win_rate_a_ci95": win_ci,
                "mean_margin_a": margin,
                "mean_margin_a_ci95": margin_ci,
            }
        )


@dataclass
class HeadToHead:
    """The outcome of :func:`head_to_head`."""

    rules: R.Rules
    num_players: int
    deals: int
    seed: int
    names: list[str]
    pairs: dict[str, PairResult]
    scores: dict[str, Tally]  # per deal: the agent's summed totals over its games
    shares: dict[str, Tally]  # per deal: its summed win shares, in units of 1 / share_unit
    games: dict[str, int]  # games each agent played
    first_seat: Tally  # per deal: seat 0's summed win shares over all games
    tables_per_deal: int  # games per deal over all tables (P * P per table)
    share_unit: int
    calibration: Calibration | None = None
    seconds: float = 0.0
    #: ``(deals, len(pairs))`` (:func:`outcome_dtype`): per deal and pair (in ``pairs``' order), over all the pair's
    #: tables, 2 * wins of ``a`` + ties.
    deal_outcomes: np.ndarray | None = None
    #: With ``keep_deals``: per deal, ``"scores"`` and ``"shares"`` (int64 ``(deals, len(names))``, each agent's
    #: summed totals and win shares over its games), ``"first_seat"`` (int64 ``(deals,)``) and ``"margins"`` (int64
    #: ``(deals, len(pairs))``, each pair's summed margins of ``a``).
    deal_sums: dict[str, np.ndarray] | None = None

    @property
    def games_per_deal(self) -> int:
        """Games of each deal at each table: its dice and seat rotations."""
        return self.num_players**2

    @property
    def num_tables(self) -> int:
        """Tables of the head to head: every ``P`` of the ``K`` agents, ``comb(K, P)``."""
        return math.comb(len(self.names), self.num_players)

    @property
    def pair_games_per_deal(self) -> int:
        """Games of each deal of a pair: at each of the ``comb(K - 2, P - 2)`` tables holding both, ``P * P``."""
        return math.comb(len(self.names) - 2, self.num_players - 2) * self.games_per_deal

    @property
    def total_games(self) -> int:
        """Games played in all."""
        return self.deals * self.tables_per_deal

    @property
    def games_per_second(self) -> float:
        """Games played per second of wall-clock time."""
        return self.total_games / self.seconds if self.seconds > 0 else math.inf

    def agent_summary(self, name: str) -> dict[str, object]:
        """One agent's result as JSON-ready data."""
        per_deal = self.games[name] // self.deals
        score, score_ci = self.scores[name].mean_ci(per_deal)
        share, share_ci = self.shares[name].mean_ci(per_deal * self.share_unit, 0.0, 1.0)
        return rounded_floats(
            {
                "games": self.games[name],
                "mean_score": score,
                "mean_score_ci95": score_ci,
                "win_share": share,
                "win_share_ci95": share_ci,
            }
        )

    def paired_difference(self, a: str, b: str, against: str) -> tuple[float, list[float]]:
        """How much more often ``a`` beats ``against`` than ``b`` does (win rates, ties count half), on the same
        deals: the mean over deals of the difference of the two pairs' outcomes, with its 95% CI over deals.

        Pairing removes the dice's common share of the spread (a deal that is hard to win against ``against`` is
        hard for both), so the interval is narrower than the two win rates' unpaired one, and much narrower for
        agents that play alike (a model and its fine-tuned self).

        Raises:
            ValueError: names that are not three different agents of the head to head, or no per-deal outcomes.
        """
        if len({a, b, against}) != 3 or not {a, b, against} <= set(self.names):
            raise ValueError(f"paired_difference needs three different agents of {self.names}, got {a}, {b}, {against}")
        if self.deal_outcomes is None:
            raise ValueError("this head to head kept no per-deal outcomes")
        keys = list(self.pairs)
        full = 2 * self.pair_games_per_deal

        def outcomes(x: str) -> np.ndarray:  # per deal: 2 * (wins of x against `against`) + ties
            if pair_key(x, against) in self.pairs:
                return self.deal_outcomes[:, keys.index(pair_key(x, against))].astype(np.int64)
            return full - self.deal_outcomes[:, keys.index(pair_key(against, x))].astype(np.int64)

        tally = Tally()
        tally.add(outcomes(a) - outcomes(b))
        return tally.mean_ci(full, -1.0, 1.0)

    def paired_differences(self) -> dict[str, dict[str, dict[str, object]]]:
        """At two players with three agents or more: :meth:`paired_difference` of every pair of agents (in the
        order given) against every other agent, ``{against: {"a - b": {"difference", "difference_ci95"}}}``.
        """
        if self.num_players != 2 or len(self.names) < 3 or self.deal_outcomes is None:
            return {}
        table: dict[str, dict[str, dict[str, object]]] = {}
        for against in self.names:
            others = [name for name in self.names if name != against]
            for a, b in itertools.combinations(others, 2):
                difference, ci = self.paired_difference(a, b, against)
                table.setdefault(against, {})[f"{a} - {b}"] = rounded_floats(
                    {"difference": difference, "difference_ci95": ci}
                )
        return table

    def to_dict(self) -> dict[str, object]:
        """The JSON report: deterministic for given agents, deals, seed and rules (no timings in it)."""
        first, first_ci = self.first_seat.mean_ci(self.tables_per_deal * self.share_unit, 0.0, 1.0)
        paired = self.paired_differences()
        return {
            "rules": self.rules.name,
            "players": self.num_players,
            "seed": self.seed,
            "deals": self.deals,
            "games_per_deal": self.games_per_deal,
            "ci": CI_METHOD,
            "head_to_head": {key: pair.summary(self.pair_games_per_deal) for key, pair in self.pairs.items()},
            "agents": {name: self.agent_summary(name) for name in self.names},
            "first_seat_win_rate": round(first, 6),
            "first_seat_win_rate_ci95": rounded_floats(first_ci),
            **({"paired": paired} if paired else {}),
            **({"calibration": self.calibration.to_dict()} if self.calibration is not None else {}),
        }


def pair_key(a: str, b: str) -> str:
    """The key of a pair's result: ``'a vs b'``."""
    return f"{a} vs {b}"


def _checked_table(agents, num_players, games, seed, batch_size, rules: R.Rules) -> tuple[int, list]:
    """The table size and the agents of a head to head, checked (``ValueError`` as :func:`head_to_head` says)."""
    if not is_int(num_players) or not 2 <= num_players <= MAX_PLAYERS:
        raise ValueError(f"num_players must be an int in 2..{MAX_PLAYERS}, got {num_players!r}")
    for name, value, low in (("games", games, 1), ("seed", seed, 0), ("batch_size", batch_size, 1)):
        if not is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if games > MAX_GAMES:
        raise ValueError(f"games must be an int >= 1 and <= {MAX_GAMES:,}, got {games!r}")
    if batch_size > MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be an int >= 1 and <= {MAX_BATCH_SIZE:,}, got {batch_size!r}")
    p, agents = int(num_players), list(agents)
    if len(agents) < p:
        raise ValueError(f"a {p}-player head to head needs at least {p} agents, got {len(agents)}")
    check_agents(agents, rules, p)
    return p, agents


def _count_pairs(counts: dict[str, np.ndarray], names: list[str], totals: np.ndarray) -> None:
    """Adds one lineup's games of a batch of deals to its pairs' per-deal counts (``totals``: ``(deal, game,
    agent)``, the agents ``names`` in order; ``counts``: per pair int64 ``(3, deals)``, the wins of ``a``, the
    wins of ``b`` and the summed margins of ``a``, over the batch's tables so far).
    """
    for i, j in itertools.combinations(range(totals.shape[2]), 2):
        a, b = totals[:, :, i], totals[:, :, j]
        count = counts[pair_key(names[i], names[j])]
        count[0] += (a > b).sum(axis=1)
        count[1] += (a < b).sum(axis=1)
        count[2] += (a - b).sum(axis=1)


def _add_pairs(result: HeadToHead, counts: dict[str, np.ndarray], deals: range) -> None:
    """Adds a batch of deals' per-deal counts of every pair (:func:`_count_pairs`, over all its tables) to the
    pairs' results and ``deal_outcomes``: each deal is one observation of a pair's Tallies, whatever its tables.
    """
    per_deal, nd = result.pair_games_per_deal, len(deals)
    for k, (key, (wins_a, wins_b, margin)) in enumerate(counts.items()):
        pair = result.pairs[key]
        pair.games += nd * per_deal
        pair.wins_a += int(wins_a.sum())
        pair.wins_b += int(wins_b.sum())
        pair.ties += int(nd * per_deal - wins_a.sum() - wins_b.sum())
        outcome = wins_a + (per_deal - wins_b)  # 2 * wins + ties
        pair.outcome.add(outcome)
        result.deal_outcomes[deals.start : deals.stop, k] = outcome
        pair.margin.add(margin)
        if result.deal_sums is not None:
            result.deal_sums["margins"][deals.start : deals.stop, k] = margin


def _keep_deal_sums(result: HeadToHead, deals: range, scores: dict, shares: dict, first_seat: np.ndarray) -> None:
    """Writes a batch of deals' sums per agent (``keep_deals``) into ``result.deal_sums``."""
    result.deal_sums["first_seat"][deals.start : deals.stop] = first_seat
    for k, name in enumerate(result.names):
        result.deal_sums["scores"][deals.start : deals.stop, k] = scores[name]
        result.deal_sums["shares"][deals.start : deals.stop, k] = shares[name]


def head_to_head(
    agents: Sequence[Agent],
    num_players: int,
    games: int,
    seed: int = 0,
    rules: str | R.Rules = "standard",
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
    on_games_done: Callable[[int], None] | None = None,
    calibration: bool = True,
    keep_deals: bool = False,
) -> HeadToHead:
    """Plays ``games`` deals of every table; see the module docstring.

    Args:
        agents: At least ``num_players`` agents with distinct names, all for ``rules``: every ``num_players`` of
            them play at a table (:func:`lineups`; at two players every pair).
        num_players: Players at a table, 2..:data:`MAX_PLAYERS`.
        games: Deals (a positive int, at most :data:`~yacht_lab.measure.evaluation.MAX_GAMES`); each is played
            ``num_players ** 2`` times at each table (dice rotations x seat rotations), ``comb(K, P) * P * P``
            games a deal in all.
        seed: A non-negative int; deal ``g``'s dice depend only on ``(seed, g, num_players)``.
        rules: A preset name or :class:`~yacht_env.rules.Rules`.
        batch_size: Games stepped together (rounded down to whole deals, at least one). It changes the speed,
            not the dice; only an agent with its own randomness (``random``) draws differently with another size.
        progress: Show a tqdm progress bar on stderr (only on a terminal).
        on_games_done: Called with a number of games each time some finish.
        calibration: Record the win agent's model's predicted win probabilities at every round start against
            the outcomes (:class:`~yacht_lab.measure.calibration.Calibration`; loads the rules' score distributions).
            Under rules with bonuses (the family's) a round start's state includes the bonus states, which the
            recorded round starts do not keep: there the report has no calibration.
        keep_deals: Keep each deal's sums per agent and margins per pair (``deal_sums``), for :func:`merge_lineups`.

    Raises:
        ValueError: bad players, deals, seed or batch size (more than
            :data:`~yacht_lab.measure.evaluation.MAX_BATCH_SIZE` too); fewer agents than ``num_players``; duplicate
            names; an agent for other rules or for another table size; an agent choosing an illegal action.
    """
    rules = R.get_rules(rules)
    p, agents = _checked_table(agents, num_players, games, seed, batch_size, rules)
    names = [agent.name for agent in agents]

    tables = lineups(len(agents), p)
    per_deal = p * p
    share_unit = math.lcm(*range(1, p + 1))
    pairs = {pair_key(a, b): PairResult(a, b) for a, b in itertools.combinations(names, 2)}
    result = HeadToHead(
        rules=rules,
        num_players=p,
        deals=int(games),
        seed=int(seed),
        names=names,
        pairs=pairs,
        scores={name: Tally() for name in names},
        shares={name: Tally() for name in names},
        games={name: 0 for name in names},
        first_seat=Tally(),
        tables_per_deal=len(tables) * per_deal,
        share_unit=share_unit,
    )
    result.deal_outcomes = np.zeros((games, len(pairs)), dtype=outcome_dtype(result.pair_games_per_deal))
    if keep_deals:
        result.deal_sums = {
            "scores": np.zeros((games, len(names)), dtype=np.int64),
            "shares": np.zeros((games, len(names)), dtype=np.int64),
            "first_seat": np.zeros(games, dtype=np.int64),
            "margins": np.zeros((games, len(pairs)), dtype=np.int64),
        }
    rounds = rules.num_categories
    # The family's round starts carry bonus states the recorded tables do not keep: no calibration there (yet).
    calibration = calibration and not rules.has_bonuses
    if calibration:
        distributions = score_distributions(rules)
        result.calibration = Calibration(names, rounds, p, share_unit)
    agent_at, _ = seating(p)
    seat_of = np.argsort(agent_at, axis=1)  # seat of each agent of the table, per game of a deal
    deals_per_batch = max(1, batch_size // per_deal)

    # Moved turn by turn (a game is every seat's turns): the tables of a batch all end together, at their last turn.
    bar = progress_bar(result.total_games, rules.num_turns * p) if progress else None
    start = time.perf_counter()
    try:
        for first in range(0, games, deals_per_batch):
            deals = range(first, min(first + deals_per_batch, games))
            nd = len(deals)
            dice = table_streams(seed, deals, p, rules)
            seats = np.tile(agent_at, (nd, 1))
            scores = {name: np.zeros(nd, dtype=np.int64) for name in names}
            shares = {name: np.zeros(nd, dtype=np.int64) for name in names}
            first_seat = np.zeros(nd, dtype=np.int64)
            counts = {key: np.zeros((3, nd), dtype=np.int64) for key in pairs}  # summed over the batch's tables
            for lineup in tables:
                table_agents = [agents[i] for i in lineup]
                starts = np.empty((nd * per_deal, rounds, 2, p), dtype=np.int64) if calibration else None
                turns_done = bar.update if bar is not None else None
                by_seat = play_tables(table_agents, dice, seats, rules, starts, turns_done).reshape(nd, per_deal, p)
                totals = np.take_along_axis(by_seat, seat_of[None], axis=2)  # (deal, game, agent of the table)
                winners = totals == totals.max(axis=2, keepdims=True)
                share = winners * (share_unit // winners.sum(axis=2, keepdims=True))
                if calibration:
                    by_seat = predict_round_starts(distributions, starts).reshape(nd, per_deal, rounds, p)
                    predicted = np.take_along_axis(by_seat, seat_of[None, :, None, :], axis=3)
                    result.calibration.add(
                        [names[k] for k in lineup], predicted.reshape(-1, rounds, p), share.reshape(-1, p)
                    )
                first_seat += share[:, np.arange(per_deal), agent_at[:, 0]].sum(axis=1)
                for i, k in enumerate(lineup):
                    scores[names[k]] += totals[:, :, i].sum(axis=1)
                    shares[names[k]] += share[:, :, i].sum(axis=1)
                    result.games[names[k]] += nd * per_deal
                _count_pairs(counts, [names[k] for k in lineup], totals)
                if on_games_done is not None:
                    on_games_done(nd * per_deal)
            _add_pairs(result, counts, deals)
            for name in names:
                result.scores[name].add(scores[name])
                result.shares[name].add(shares[name])
            result.first_seat.add(first_seat)
            if keep_deals:
                _keep_deal_sums(result, deals, scores, shares, first_seat)
    finally:
        if bar is not None:
            bar.close()
    result.seconds = time.perf_counter() - start
    return result


def merge_lineups(parts: Sequence[HeadToHead], names: Sequence[str]) -> HeadToHead:
    """The head to head of ``names`` put together from its tables played apart (on Ray, say).

    Args:
        parts: One :func:`head_to_head` per table of the head to head, in its order (:func:`lineups`: every
            ``P`` of ``names``, in the order given, in ``itertools.combinations`` order; at two players every pair,
            with ``P`` agents the one table), all of the same players, deals, seed and rules, played with
            ``keep_deals=True``.
        names: The agents, in the order given.

    Returns:
        What :func:`head_to_head` of the agents of ``names`` returns (the JSON byte for byte, when no agent has its
        own randomness: a ``random`` agent playing its tables apart draws other dice than one playing them in turn).

    Raises:
        ValueError: parts that are not the tables of ``names``, or that do not fit together.
    """
    first = parts[0]
    p, deals = first.num_players, first.deals
    setting = (p, deals, first.seed, first.rules.name, first.calibration is None)
    if [part.names for part in parts] != [[names[k] for k in lineup] for lineup in lineups(len(names), p)] or any(
        (part.num_players, part.deals, part.seed, part.rules.name, part.calibration is None) != setting
        or part.deal_sums is None
        for part in parts
    ):
        raise ValueError(f"the parts are not the tables of a {p}-player head to head of {', '.join(names)}")
    names = list(names)
    column = {name: k for k, name in enumerate(names)}
    pairs = {pair_key(a, b): PairResult(a, b) for a, b in itertools.combinations(names, 2)}
    pair_column = {key: k for k, key in enumerate(pairs)}
    sums = {
        "scores": np.zeros((deals, len(names)), dtype=np.int64),
        "shares": np.zeros((deals, len(names)), dtype=np.int64),
        "first_seat": np.zeros(deals, dtype=np.int64),
        "margins": np.zeros((deals, len(pairs)), dtype=np.int64),
    }
    outcomes = np.zeros((deals, len(pairs)), dtype=np.int64)
    games = {name: 0 for name in names}
    calibration = (
        None if first.calibration is None else Calibration(names, first.rules.num_categories, p, first.share_unit)
    )
    for part in parts:
        at = [column[name] for name in part.names]
        sums["scores"][:, at] += part.deal_sums["scores"]
        sums["shares"][:, at] += part.deal_sums["shares"]
        sums["first_seat"] += part.deal_sums["first_seat"]
        for name in part.names:
            games[name] += part.games[name]
        for k, (key, played) in enumerate(part.pairs.items()):  # a pair's tables add up, deal by deal
            pair = pairs[key]
            pair.games += played.games
            pair.wins_a += played.wins_a
            pair.wins_b += played.wins_b
            pair.ties += played.ties
            outcomes[:, pair_column[key]] += part.deal_outcomes[:, k]
            sums["margins"][:, pair_column[key]] += part.deal_sums["margins"][:, k]
        if calibration is not None:
            calibration.merge(part.calibration)
    result = HeadToHead(
        rules=first.rules,
        num_players=p,
        deals=deals,
        seed=first.seed,
        names=names,
        pairs=pairs,
        scores={name: Tally() for name in names},
        shares={name: Tally() for name in names},
        games=games,
        first_seat=Tally(),
        tables_per_deal=sum(part.tables_per_deal for part in parts),
        share_unit=first.share_unit,
        calibration=calibration,
        deal_sums=sums,
    )
    result.deal_outcomes = outcomes.astype(outcome_dtype(result.pair_games_per_deal))
    for k, name in enumerate(names):  # the same exact integer sums as the deals' batches add
        result.scores[name].add(sums["scores"][:, k])
        result.shares[name].add(sums["shares"][:, k])
    for k, pair in enumerate(pairs.values()):
        pair.outcome.add(outcomes[:, k])
        pair.margin.add(sums["margins"][:, k])
    result.first_seat.add(sums["first_seat"])
    return result
