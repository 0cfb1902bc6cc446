"""The two-player yardstick: any agent against perfect play (the equilibrium, ``duel``) and against the solver
(``optimal``), on common dice, seats rotated.

**Games.** :func:`seat_games` plays an agent against an opponent at a two-player table: deal ``g`` is the two dice
streams ``game_streams(seed, [2g, 2g + 1])`` (the head to head's deal ``g``, :mod:`yacht_lab.measure.head_to_head`),
played twice, the agent in the first seat and then in the second, each seat keeping its stream. Every agent measured
meets every opponent on the same deals.

**Statistics.** A game scores 1 for a win, 1/2 for a tie, 0 for a loss. A deal's two games are one observation; the
95% intervals are the normal approximation over deals (:func:`yacht_lab.measure.report.mean_ci`).

**The two scales.** Against the equilibrium 50% is perfect play: no agent wins more on average over the two seats,
so an agent's shortfall there is what it leaves on the table against the best opponent. Against the solver the
ceiling is the best response to it (:func:`yacht_env.duel.solve` ``(rules, "optimal")``: 51.915% for ``standard``);
an agent's *share of the edge* is ``(win rate - 50%) / (ceiling - 50%)``: 0% plays as well as the solver, 100% takes
all any player can take from it.

Nothing here builds a solution: a missing one is a ``ValueError`` naming the command that builds it
(:func:`build_command`). ``benchmarks/two_players.py`` is the command.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from yacht_agents import make_agent, parse_spec
from yacht_agents.base import Agent, check_agents
from yacht_env import duel
from yacht_env import rules as R
from yacht_env.game import game_streams
from yacht_lab.measure.report import mean_ci, progress_bar, rounded_floats, short_names
from yacht_lab.measure.tables import play_tables

#: The opponents every agent meets, by spec: the equilibrium (50% is perfect play) and the solver.
REFERENCES = ("duel", "optimal")
#: How the intervals are computed (written to the JSON report).
CI_METHOD = "95% normal approximation over deals (a deal: the same two dice streams played in both seats)"


@dataclass
class SeatGames:
    """An agent against an opponent on ``deals`` deals, each played in both seats (:func:`seat_games`).

    Attributes:
        agent: The agent's name.
        opponent: The opponent's name.
        wins: ``(2, deals)``: the agent's result in each seat (row 0: it moves first) of each deal: 1, 1/2 or 0.
        seconds: The wall-clock time the games took.
    """

    agent: str
    opponent: str
    wins: np.ndarray
    seconds: float = 0.0

    @property
    def deals(self) -> int:
        """Deals played (each twice)."""
        return self.wins.shape[1]

    @property
    def games(self) -> int:
        """Games played."""
        return 2 * self.deals

    @property
    def games_per_second(self) -> float:
        """Games played per second of wall-clock time."""
        return self.games / self.seconds if self.seconds > 0 else float("inf")

    def win_rate(self) -> tuple[float, list[float]]:
        """The agent's win rate over the two seats (ties half) and its 95% interval over deals."""
        mean, low, high = mean_ci(self.wins.mean(axis=0))
        return mean, [low, high]

    def seat_win_rates(self) -> tuple[list[float], list[list[float]]]:
        """The agent's win rate in each seat and their 95% intervals over deals."""
        rates = [mean_ci(seat) for seat in self.wins]
        return [m for m, _, _ in rates], [[low, high] for _, low, high in rates]

    def summary(self) -> dict[str, object]:
        """The result as JSON-ready data (no timings: the same for the same agents, deals and seed)."""
        rate, ci = self.win_rate()
        seats, seat_cis = self.seat_win_rates()
        return rounded_floats(
            {
                "games": self.games,
                "mean_win_rate": rate,
                "mean_ci95": ci,
                "seat_win_rates": seats,
                "seat_ci95": seat_cis,
            }
        )


def seat_games(
    agent: Agent,
    opponent: Agent,
    rules: str | R.Rules,
    deals: int,
    seed: int = 0,
    batch: int = 4096,
    progress: bool = False,
) -> SeatGames:
    """``agent`` against ``opponent`` on ``deals`` deals, each in both seats on the same two dice streams.

    An agent may meet itself (the same object): a deterministic one then wins exactly 1/2 of every deal.

    Raises:
        ValueError: an agent of other rules or of another table than two players, or ``deals`` below 1.
    """
    rules = R.get_rules(rules)
    check_agents([agent, opponent], rules, 2, distinct_names=False)
    if not isinstance(deals, int) or deals < 1:
        raise ValueError(f"deals must be an int >= 1, got {deals!r}")
    wins = np.zeros((2, deals))
    bar = progress_bar(2 * deals) if progress else None
    start = time.perf_counter()
    try:
        for first in range(0, deals, batch):
            count = min(batch, deals - first)
            streams = range(2 * first, 2 * (first + count))
            dice = game_streams(seed, streams, rules).reshape(count, 2, *rules.stream_shape)
            for seat in (0, 1):
                agent_at = np.tile([0, 1] if seat == 0 else [1, 0], (count, 1))
                totals = play_tables([agent, opponent], dice, agent_at, rules)
                mine, theirs = totals[:, seat], totals[:, 1 - seat]
                wins[seat, first : first + count] = (mine > theirs) + 0.5 * (mine == theirs)
                if bar is not None:
                    bar.update(count)
    finally:
        if bar is not None:
            bar.close()
    return SeatGames(agent.name, opponent.name, wins, time.perf_counter() - start)


# --------------------------------------------------------------------------------------------------
# The solutions the yardstick reads
# --------------------------------------------------------------------------------------------------
def build_command(rules: R.Rules, opponent: str | None = None, cache_dir: str | os.PathLike | None = None) -> str:
    """The command that builds a two-player solution of a preset: ``python -m yacht_env.duel build --rules R``."""
    command = f"python -m yacht_env.duel build --rules {rules.name}"
    command += " --opponent optimal" if opponent == "optimal" else ""
    return command + (f" --cache-dir {os.fspath(cache_dir)}" if cache_dir is not None else "")


def _manifest(rules: R.Rules, opponent: str | None, cache_dir) -> dict | None:
    """A finished solution's manifest (its values, without loading its levels), or ``None`` where none is built."""
    manifest = duel.read_manifest(duel.solution_folder(rules, opponent, cache_dir=cache_dir))
    return manifest if manifest is not None and manifest.get("complete") else None


def check_built(rules: str | R.Rules, opponent: str | None = None, cache_dir: str | os.PathLike | None = None) -> None:
    """Raises ``ValueError`` (one line, with the command that builds it) unless the solution of ``rules`` (the
    equilibrium, or the best response to ``opponent``) is built: nothing here starts a build (for ``standard``:
    29 minutes on 2 cores and 2.5 GB for the equilibrium).
    """
    rules = R.get_rules(rules)
    reason = duel.unsupported(rules)
    if reason is not None:
        raise ValueError(reason)
    if _manifest(rules, opponent, cache_dir) is None:
        kind = "the equilibrium" if opponent is None else f"the best response to {opponent}"
        raise ValueError(
            f"the two-player solution of {rules.name!r} ({kind}) is not built in "
            f"{duel.solution_folder(rules, opponent, cache_dir=cache_dir)}: build it with "
            f"{build_command(rules, opponent, cache_dir)}"
        )


def best_response_value(rules: str | R.Rules, cache_dir: str | os.PathLike | None = None) -> float | None:
    """The best response to the solver's exact win rate over the two seats (the ceiling of the edge), read from its
    finished solution's manifest (its levels are not loaded), or ``None`` where it is not built.
    """
    manifest = _manifest(R.get_rules(rules), "optimal", cache_dir)
    try:  # the responder's first-seat value, and the solver's first-seat value against it (DuelSolution's order)
        first, second = float(manifest["values"]["A"]), 1.0 - float(manifest["values"]["B"])
    except (KeyError, TypeError, ValueError):  # none built, or a damaged manifest
        return None
    return (first + second) / 2


# --------------------------------------------------------------------------------------------------
# The yardstick
# --------------------------------------------------------------------------------------------------
@dataclass
class Yardstick:
    """Every agent against each reference (:data:`REFERENCES`) on the same deals (:func:`measure`)."""

    rules: R.Rules
    deals: int
    seed: int
    best_response: float
    games: dict[str, dict[str, SeatGames]]  # agent -> reference -> its games
    baseline: str | None = None  # an agent the others are compared with, paired on the same deals

    def edge_share(self, name: str) -> tuple[float, list[float]]:
        """``name``'s share of the edge over the solver (0 = the solver, 1 = the best response) and its interval."""
        rate, ci = self.games[name]["optimal"].win_rate()
        edge = self.best_response - 0.5
        return (rate - 0.5) / edge, [(bound - 0.5) / edge for bound in ci]

    def paired(self, name: str, reference: str) -> tuple[float, list[float]]:
        """``name``'s win rate minus the baseline's against ``reference``, deal by deal on the same deals, and the 95%
        interval of that mean difference over deals (tighter than the two intervals apart: the dice are common).
        """
        if self.baseline is None:
            raise ValueError("the yardstick has no baseline agent to compare with")
        deal = self.games[name][reference].wins.mean(axis=0) - self.games[self.baseline][reference].wins.mean(axis=0)
        mean, low, high = mean_ci(deal)
        return mean, [low, high]

    def to_dict(self) -> dict[str, object]:
        """The JSON report: deterministic for given agents, deals, seed and rules (no timings in it)."""
        agents = {}
        for name, against in self.games.items():
            share, share_ci = self.edge_share(name)
            agents[name] = {
                "against": {reference: games.summary() for reference, games in against.items()},
                **rounded_floats({"edge_share": share, "edge_share_ci95": share_ci}),
            }
            if self.baseline is not None and name != self.baseline:
                agents[name]["minus_baseline"] = {
                    reference: rounded_floats(
                        dict(zip(("difference", "ci95"), self.paired(name, reference), strict=True))
                    )
                    for reference in REFERENCES
                }
        return {
            "rules": self.rules.name,
            "seed": self.seed,
            "deals": self.deals,
            "games_per_deal": 2,
            "ci": CI_METHOD,
            "best_response_to_optimal": round(self.best_response, 6),
            "baseline": self.baseline,
            "agents": agents,
        }

    def format(self) -> str:
        """The report as a table, one agent a row."""
        short = short_names(list(self.games), 28)
        lines = [
            f"{self.rules.name}: {self.deals:,} deals, each in both seats on the same dice (seed {self.seed}); 95% "
            "intervals over deals",
            f"against duel 50% is perfect play; the share of the edge over optimal: 0% is optimal, 100% the best "
            f"response ({100 * self.best_response:.3f}%)",
            f"{'agent':<28} {'against duel':>24} {'against optimal':>24} {'share of the edge':>20}",
        ]
        for name, against in self.games.items():
            cells = []
            for reference in REFERENCES:
                rate, (low, high) = against[reference].win_rate()
                cells.append(f"{100 * rate:.2f}% [{100 * low:.2f}, {100 * high:.2f}]")
            share, (low, high) = self.edge_share(name)
            cells.append(f"{100 * share:.0f}% [{100 * low:.0f}, {100 * high:.0f}]")
            lines.append(f"{short[name]:<28} {cells[0]:>24} {cells[1]:>24} {cells[2]:>20}")
        if self.baseline is not None:
            lines.append(f"minus {self.baseline}, paired on the same deals (points of win rate):")
            for name in self.games:
                if name != self.baseline:
                    cells = []
                    for reference in REFERENCES:
                        mean, (low, high) = self.paired(name, reference)
                        cells.append(f"{100 * mean:+.2f} [{100 * low:+.2f}, {100 * high:+.2f}]")
                    lines.append(f"{short[name]:<28} {cells[0]:>24} {cells[1]:>24}")
        return "\n".join(lines)


def make_agents(
    specs: list[str], rules: str | R.Rules, seed: int = 0, cache_dir: str | os.PathLike | None = None
) -> list[Agent]:
    """The agents of ``specs`` at a two-player table (:func:`yacht_agents.make_agent`; ``duel`` specs read their
    solution from ``cache_dir``).

    Raises:
        ValueError: a bad or repeated spec, or an agent that does not sit at a two-player table of ``rules``.
    """
    from yacht_agents.duel import DuelAgent

    rules = R.get_rules(rules)
    agents = []
    for spec in specs:
        kind, argument = parse_spec(spec)
        if kind == "duel":  # make_agent reads the default cache folder only
            agents.append(DuelAgent(rules, argument, name=spec, cache_dir=cache_dir))
        else:
            agents.append(make_agent(spec, rules, seed=seed, players=2))
    check_agents(agents, rules, 2)
    return agents


def measure(
    agents: list[Agent],
    rules: str | R.Rules,
    deals: int,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    best_response: float | None = None,
    progress: bool = False,
    baseline: str | None = None,
) -> Yardstick:
    """Plays each of ``agents`` against the equilibrium and the solver on ``deals`` deals (see the module docstring).

    Args:
        agents: Agents with distinct names for ``rules`` (solo, or seeing a two-player table).
        rules: Rules without bonuses.
        deals: Deals a pair (each played in both seats).
        seed: The dice's seed: deal ``g``'s dice depend only on ``(seed, g)``.
        cache_dir: Where the solutions lie (the solver's cache folder by default).
        best_response: The best response to the solver's exact win rate; by default read from its built solution.
        progress: Show a progress bar on stderr (only on a terminal).
        baseline: The name of one of ``agents``: every other agent's win rate minus its own, deal by deal
            (:meth:`Yardstick.paired`).

    Raises:
        ValueError: the equilibrium, or the best response (without ``best_response``), not built (naming the command
            that builds it); rules with bonuses; agents that do not fit.
    """
    from yacht_agents.duel import DuelAgent
    from yacht_agents.optimal import OptimalAgent

    rules = R.get_rules(rules)
    check_built(rules, cache_dir=cache_dir)
    if best_response is None:
        best_response = best_response_value(rules, cache_dir)
        if best_response is None:
            raise ValueError(
                f"the best response to optimal of {rules.name!r} (the 100% of the edge) is not built: build it with "
                f"{build_command(rules, 'optimal', cache_dir)}"
            )
    check_agents(agents, rules, 2)
    if baseline is not None and baseline not in [agent.name for agent in agents]:
        raise ValueError(f"the baseline {baseline!r} is not one of the agents measured")
    references = {"duel": DuelAgent(rules, cache_dir=cache_dir), "optimal": OptimalAgent(rules)}
    games = {
        agent.name: {
            name: seat_games(agent, reference, rules, deals, seed, progress=progress)
            for name, reference in references.items()
        }
        for agent in agents
    }
    return Yardstick(rules, deals, seed, float(best_response), games, baseline)


__all__ = [
    "CI_METHOD",
    "REFERENCES",
    "SeatGames",
    "Yardstick",
    "best_response_value",
    "build_command",
    "check_built",
    "make_agents",
    "measure",
    "seat_games",
]
