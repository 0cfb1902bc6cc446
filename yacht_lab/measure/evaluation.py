"""Benchmarking agents on common dice: scores, per-category scores, bonuses and regret against the exact solver.

Every agent plays the same games: game ``g`` rolls the dice of ``game_streams(seed, [g])``, whatever the
batch it is played in, so two agents meet the same dice as far as their choices allow and their scores
can be compared game by game (paired differences).

**Regret.** Before each decision the solver values every action of the state (:meth:`q_values`: expected
points from here to the end of the game if that action is taken, then optimal play). A decision's regret
is ``max q - q[chosen]``; a game's regret is the sum over its decisions. Because optimal values telescope,

    E[score] = optimal expected score - E[regret]

for any policy (the solver's values telescope along every game), so ``optimal - mean regret`` is a second
estimate of an agent's expected score: a check of the identity and of the solver, and a measure of how
much each agent gives away. The optimal agent's regret is exactly 0 in every game.

Every preset is benchmarked the same way: the sheet's categories are the preset's (12 for Yacht, 13 for Yahtzee,
15 for Yatzy), and the solver values the family's whole state (its upper subtotal and Yahtzee box too), so the
identity holds there as well. Presets with bonuses add them to the report (the share of games that earn the upper
bonus, the mean Yahtzee bonus); Yacht's presets have none, and their report is exactly what it always was.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from yacht_agents.base import Agent, check_agents
from yacht_env import rules as R
from yacht_env.game import game_streams
from yacht_env.rules import is_int
from yacht_env.solver import Solution, solve
from yacht_env.vector import YachtVectorEnv
from yacht_lab.measure.report import (
    figure_bytes,
    mean_ci,
    progress_bar,
    pyplot_for,
    rounded_floats,
    sample_std,
    short_names,
)
from yacht_lab.table.record import MAX_RECORD_GAMES, open_record, record_header

DEFAULT_BATCH_SIZE = 10_000
#: At most this many games stepped together: a batch holds some 4-6 KB per game (env arrays, observations, masks,
#: the solver's Q-values; measured with the random, greedy and optimal agents) and up to ~27 KB with the win agent
#: at a table, so the largest batch stays well under 1 GB (about 0.1 GB, at worst 0.55 GB); larger batches are no
#: faster.
MAX_BATCH_SIZE = 20_000
#: At most this many games per agent: each game keeps 224 bytes of results per agent (2.2 GB per agent
#: here; 281 bytes for Yatzy's 15 categories and bonus) and plays in about 0.1 ms (optimal Yatzy in 0.6 ms), so
#: 10 million games take some 20 minutes per agent on two cores (optimal Yatzy about 100).
MAX_GAMES = 10_000_000


@dataclass
class AgentResult:
    """What one agent did in the games, game by game (arrays indexed by game number).

    Attributes:
        name: The agent's name (its spec).
        scores: Final score of each game, int ``(G,)``, bonuses included.
        category_scores: Points of each category in each game, int ``(G, C)`` (what the sheet's boxes hold,
            ``C = rules.num_categories``: 12 for Yacht).
        regret: Summed regret of each game's decisions, float64 ``(G,)``.
        category_regret: Regret of each game's turns by the category each turn was scored in, float64
            ``(G, C)``: a turn's keeps and pick are charged to the category it ends in (rows sum to
            ``regret``), which shows where an agent loses its points.
        decisions: Number of decisions (keeps and picks) of each game, int ``(G,)``.
        seconds: Wall-clock time of the agent's games.
        rules: The rules played (the sheet's category names).
        upper_bonus: Rules with an upper bonus: whether each game earned it, bool ``(G,)``; else ``None``.
        yahtzee_bonus: Rules with a Yahtzee bonus: the Yahtzee bonus points of each game, int ``(G,)``; else
            ``None``. ``scores`` is ``category_scores`` summed plus both bonuses.
    """

    name: str
    scores: np.ndarray
    category_scores: np.ndarray
    regret: np.ndarray
    category_regret: np.ndarray
    decisions: np.ndarray
    seconds: float
    rules: R.Rules = field(default_factory=R.get_rules)
    upper_bonus: np.ndarray | None = None
    yahtzee_bonus: np.ndarray | None = None

    @property
    def games_per_second(self) -> float:
        """Games played per second of wall-clock time."""
        return len(self.scores) / self.seconds if self.seconds > 0 else math.inf

    def summary(self, optimal_expected_score: float) -> dict[str, object]:
        """The statistics written to the JSON report (floats rounded to 6 decimals).

        ``yacht_rate`` is the share of games whose five-of-a-kind box (Yacht, Yahtzee, Yatzy) holds points; rules with
        bonuses add ``upper_bonus_rate`` (the share of games that earn the upper bonus) and ``yahtzee_bonus_mean``
        (the mean Yahtzee bonus points of a game) after it.
        """
        mean, lo, hi = mean_ci(self.scores)
        regret, regret_lo, regret_hi = mean_ci(self.regret, low=0.0)  # no decision gives away less than nothing
        categories = self.rules.categories
        five = self.rules.five_of_a_kind_category
        bonuses = {}
        if five is not None:
            bonuses["yacht_rate"] = float((self.category_scores[:, five] > 0).mean())
        if self.upper_bonus is not None:
            bonuses["upper_bonus_rate"] = float(self.upper_bonus.mean())
        if self.yahtzee_bonus is not None:
            bonuses["yahtzee_bonus_mean"] = float(self.yahtzee_bonus.mean())
        stats = {
            "mean": mean,
            "std": sample_std(self.scores),
            "ci95": [lo, hi],
            "median": float(np.median(self.scores)),
            "p5": float(np.percentile(self.scores, 5)),
            "p95": float(np.percentile(self.scores, 95)),
            "percent_of_optimal": 100.0 * mean / optimal_expected_score,
            "mean_regret": regret,
            "regret_ci95": [regret_lo, regret_hi],
            **bonuses,
            "category_means": dict(zip(categories, self.category_scores.mean(axis=0).tolist(), strict=True)),
            "category_regret": dict(zip(categories, self.category_regret.mean(axis=0).tolist(), strict=True)),
        }
        return rounded_floats(stats)


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`: every agent's games on the same dice."""

    rules: R.Rules
    games: int
    seed: int
    optimal_expected_score: float
    results: dict[str, AgentResult] = field(default_factory=dict)

    def paired_differences(self) -> list[dict[str, object]]:
        """For each pair of agents, ``a - b`` per game (``a`` the later one given): mean and its 95% CI."""
        pairs = []
        for b, a in itertools.combinations(self.results.values(), 2):
            mean, lo, hi = mean_ci(a.scores.astype(np.float64) - b.scores)
            pairs.append({"a": a.name, "b": b.name, "mean_diff": mean, "ci95": [lo, hi]})
        return rounded_floats(pairs)

    def to_dict(self) -> dict[str, object]:
        """The JSON report: deterministic for given agents, games, seed and rules (no timings in it)."""
        return {
            "rules": self.rules.name,
            "games": self.games,
            "seed": self.seed,
            "optimal_expected_score": round(self.optimal_expected_score, 6),
            "agents": {name: result.summary(self.optimal_expected_score) for name, result in self.results.items()},
            "paired_differences": self.paired_differences(),
        }


# --------------------------------------------------------------------------------------------------
# Playing
# --------------------------------------------------------------------------------------------------
def play_games(
    agent: Agent,
    games: int,
    seed: int,
    solution: Solution,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_games_done: Callable[[int], None] | None = None,
    recorder=None,
    on_turns_done: Callable[[int], None] | None = None,
) -> AgentResult:
    """Plays games ``0..games-1`` under ``seed`` with ``agent``, scoring each decision's regret.

    Args:
        agent: The agent; it must play the rules of ``solution``.
        games: Number of games.
        seed: Game ``g`` rolls the dice of ``game_streams(seed, [g])``.
        solution: The solved rules the games are played under (for regret).
        batch_size: Games stepped together in one :class:`YachtVectorEnv`. It changes the speed, not the
            dice; only an agent with its own randomness (``random``) draws differently with another size.
        on_games_done: Called with the number of games each time some finish.
        recorder: Where every decision goes as it is valued (:class:`yacht_lab.table.record.Recorder`: its
            ``decisions`` and ``finished`` methods are given the very arrays the regret is summed from), or ``None``.
        on_turns_done: Called with the number of turns that ended (picks made) at each step that ends some: progress
            within a batch, whose games all end together (for a progress bar).

    Raises:
        ValueError: the agent chose an illegal action.
    """
    rules = solution.rules
    scores = np.zeros(games, dtype=np.int64)
    category_scores = np.zeros((games, rules.num_categories), dtype=np.int64)
    regret = np.zeros(games, dtype=np.float64)
    category_regret = np.zeros((games, rules.num_categories), dtype=np.float64)
    turn_regret = np.zeros(games, dtype=np.float64)  # regret of the current turn so far
    decisions = np.zeros(games, dtype=np.int64)
    upper_bonus = np.zeros(games, dtype=bool) if rules.upper_bonus else None
    yahtzee_bonus = np.zeros(games, dtype=np.int64) if rules.yahtzee_bonus else None
    turns_done = on_turns_done if on_turns_done is not None else _nothing
    start = time.perf_counter()
    for first in range(0, games, batch_size):
        batch = range(first, min(first + batch_size, games))
        env = YachtVectorEnv(len(batch), rules=rules, autoreset_mode="next_step")
        obs, info = env.reset(options={"dice_stream": game_streams(seed, batch, rules)})
        playing = np.ones(len(batch), dtype=bool)  # not yet finished its (first) game
        while playing.any():
            index = np.flatnonzero(playing)
            all_masks = env.action_masks()
            masks = all_masks[index]
            # The agent gets its own copy: what it writes there cannot change what its action is checked against.
            chosen = np.asarray(agent.act(obs[index], masks.copy()), dtype=np.intp)
            if not masks[np.arange(len(index)), chosen].all():
                bad = int(np.flatnonzero(~masks[np.arange(len(index)), chosen])[0])
                raise ValueError(
                    f"agent {agent.name!r} chose illegal action {int(chosen[bad])} in game {first + index[bad]}"
                )
            state = (env.roll[index], env.rolls_left[index], env.open_mask[index])
            if rules.has_bonuses:  # the family's state: the upper subtotal and the Yahtzee box
                state += tuple(info[key][index].astype(np.intp) if key in info else 0 for key in ("upper", "armed"))
            q = solution.q_values(*state)
            decision_regret = q.max(axis=1) - q[np.arange(len(index)), chosen]
            if recorder is not None:
                recorder.decisions(
                    first + index, state, info["total"][index], chosen, q.argmax(axis=1), decision_regret
                )
            regret[first + index] += decision_regret
            turn_regret[first + index] += decision_regret
            picks = chosen >= R.PICK_OFFSET
            turns_done(int(picks.sum()))
            picked_games = first + index[picks]
            category_regret[picked_games, chosen[picks] - R.PICK_OFFSET] += turn_regret[picked_games]
            turn_regret[picked_games] = 0.0
            decisions[first + index] += 1
            actions = all_masks.argmax(axis=1)  # a legal filler for the games already counted (and restarted)
            actions[index] = chosen
            obs, _, terminated, truncated, info = env.step(actions)
            done = playing & (terminated | truncated)
            if done.any():
                games_done = first + np.flatnonzero(done)
                scores[games_done] = info["total"][done]
                category_scores[games_done] = info["scores"][done]
                earned = np.zeros(int(done.sum()), dtype=bool)
                if upper_bonus is not None:
                    earned = info["upper"][done] >= rules.upper_bonus_threshold
                    upper_bonus[games_done] = earned
                if yahtzee_bonus is not None:  # the rest of the total: what the boxes and the upper bonus leave
                    boxes = info["scores"][done].sum(axis=1, dtype=np.int64)
                    yahtzee_bonus[games_done] = info["total"][done] - boxes - rules.upper_bonus * earned
                playing &= ~done
                if recorder is not None:
                    recorder.finished(games_done, scores[games_done])
                if on_games_done is not None:
                    on_games_done(int(done.sum()))
        if recorder is not None:
            recorder.flush()
    seconds = time.perf_counter() - start
    return AgentResult(
        agent.name,
        scores,
        category_scores,
        regret,
        category_regret,
        decisions,
        seconds,
        rules,
        upper_bonus,
        yahtzee_bonus,
    )


def _nothing(_: int) -> None:
    """A callback that does nothing."""


def _check_sizes(games, seed, batch_size, recording: bool) -> None:
    for name, value, low in (("games", games, 1), ("seed", seed, 0), ("batch_size", batch_size, 1)):
        if not is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if games > MAX_GAMES:  # refused before anything is allocated, not a MemoryError later
        raise ValueError(f"games must be an int >= 1 and <= {MAX_GAMES:,}, got {games!r}")
    if batch_size > MAX_BATCH_SIZE:
        raise ValueError(f"batch_size must be an int >= 1 and <= {MAX_BATCH_SIZE:,}, got {batch_size!r}")
    if recording and games > MAX_RECORD_GAMES:
        raise ValueError(f"a record keeps at most {MAX_RECORD_GAMES:,} games per agent, got {games:,}")


def evaluate(
    agents: Sequence[Agent],
    games: int,
    seed: int = 0,
    rules: str | R.Rules = "standard",
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: bool = False,
    record: str | os.PathLike | None = None,
) -> Evaluation:
    """Plays ``games`` seeded games with each agent on the same dice; see the module docstring.

    Args:
        agents: Agents with distinct names, all for ``rules``.
        games: Games per agent (a positive int).
        seed: A non-negative int; game ``g``'s dice depend only on ``(seed, g)``.
        rules: A preset name or :class:`~yacht_env.rules.Rules`.
        batch_size: Games stepped together.
        progress: Show a tqdm progress bar on stderr (only on a terminal).
        record: Write every decision of the games to this path as JSON Lines (:mod:`yacht_lab.table.record`),
        atomically:
            on an error nothing is left there. At most :data:`~yacht_lab.table.record.MAX_RECORD_GAMES` games.

    Raises:
        ValueError: bad games (more than :data:`MAX_GAMES` too; with ``record``, more than
            :data:`~yacht_lab.table.record.MAX_RECORD_GAMES`), seed, batch size (more than
            :data:`MAX_BATCH_SIZE` too), duplicate names, an
            agent for other rules or for a table of players (``win``), or an agent choosing an illegal action.
    """
    rules = R.get_rules(rules)
    _check_sizes(games, seed, batch_size, record is not None)
    check_agents(agents, rules)
    for agent in agents:
        table = getattr(agent, "table_players", None)
        if table is not None:  # it reads a table's view: alone it would fail on its first observation
            raise ValueError(
                f"agent {agent.name!r} plays at a table of {table} players, and evaluating plays each agent alone: "
                f"seat it in a head to head of {table} players (evaluate.py --players {table})"
            )
    solution = solve(rules)
    evaluation = Evaluation(rules, int(games), int(seed), solution.expected_score)
    with contextlib.ExitStack() as stack:
        recorder = None
        if record is not None:
            header = record_header(rules, seed, games, [agent.name for agent in agents], solution.expected_score)
            recorder = open_record(stack, record, header)
        for i, agent in enumerate(agents, 1):
            # A bar per agent, moved turn by turn: its own speed from its first turns, never the previous agent's.
            bar = progress_bar(games, rules.num_turns, f"{agent.name} ({i}/{len(agents)})") if progress else None
            if recorder is not None:
                recorder.start_agent(agent.name)
            try:
                turns_done = bar.update if bar is not None else None
                result = play_games(agent, games, seed, solution, batch_size, None, recorder, turns_done)
            finally:
                if bar is not None:
                    bar.close()
            evaluation.results[agent.name] = result
    return evaluation


# --------------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------------
def game_title(rules: R.Rules) -> str:
    """The game a report names: its five-of-a-kind box's (``Yacht``, ``Yahtzee``, ``Yatzy``), else ``Yacht``."""
    five = rules.five_of_a_kind_category
    return "Yacht" if five is None else rules.categories[five].capitalize()


def format_report(evaluation: Evaluation) -> str:
    """The human-readable report: one column per agent, then the paired differences."""
    results = list(evaluation.results.values())
    optimal = evaluation.optimal_expected_score
    summaries = [result.summary(optimal) for result in results]

    def interval(lo: float, hi: float) -> str:
        return f"[{lo:.2f}, {hi:.2f}]"

    rules = evaluation.rules
    five = rules.five_of_a_kind_category
    bonus_rows: list[tuple[str, list[str]] | str] = []
    if five is not None:
        label = f"{rules.categories[five].capitalize()} rate"
        bonus_rows.append((label, [f"{100 * s['yacht_rate']:.1f}%" for s in summaries]))
    if rules.upper_bonus:
        bonus_rows.append(("upper bonus rate", [f"{100 * s['upper_bonus_rate']:.1f}%" for s in summaries]))
    if rules.yahtzee_bonus:
        bonus_rows.append(("Yahtzee bonus / game", [f"{s['yahtzee_bonus_mean']:.2f}" for s in summaries]))
    rows: list[tuple[str, list[str]] | str] = [
        ("", list(short_names([result.name for result in results]).values())),
        ("mean score", [f"{s['mean']:.2f}" for s in summaries]),
        ("  95% CI", [interval(*s["ci95"]) for s in summaries]),
        ("std", [f"{s['std']:.2f}" for s in summaries]),
        ("median", [f"{s['median']:g}" for s in summaries]),
        ("5th / 95th percentile", [f"{s['p5']:g} / {s['p95']:g}" for s in summaries]),
        ("% of optimal", [f"{s['percent_of_optimal']:.1f}%" for s in summaries]),
        *bonus_rows,
        ("mean regret / game", [f"{s['mean_regret']:.2f}" for s in summaries]),
        ("  95% CI", [interval(*s["regret_ci95"]) for s in summaries]),
        ("optimal - mean regret", [f"{optimal - s['mean_regret']:.2f}" for s in summaries]),
        ("decisions / game", [f"{result.decisions.mean():.1f}" for result in results]),
        ("games / s", [f"{result.games_per_second:,.0f}" for result in results]),
        "mean points per category:",
        *((f"  {c}", [f"{s['category_means'][c]:.2f}" for s in summaries]) for c in rules.categories),
        "mean regret per category (each turn charged to the category it was scored in):",
        *((f"  {c}", [f"{s['category_regret'][c]:.2f}" for s in summaries]) for c in rules.categories),
    ]
    width = 2 + max(len(cell) for entry in rows if isinstance(entry, tuple) for cell in entry[1])
    lines = [
        f"{game_title(rules)} ({rules.name} rules): {evaluation.games:,} games per agent, seed {evaluation.seed}; "
        f"optimal expected score {optimal:.3f}",
        "",
    ]
    for entry in rows:
        if isinstance(entry, str):
            lines.append(entry)
        else:
            label, cells = entry
            lines.append(f"{label:<24}" + "".join(f"{cell:>{width}}" for cell in cells))
    lines += [
        "",
        f"E[score] = optimal expected score - E[regret] = {optimal:.3f} - E[regret] for every agent; "
        "'optimal - mean regret' is that estimate of the mean score (regret = points given away by each "
        "decision, valued by the exact solver).",
    ]
    pairs = evaluation.paired_differences()
    if pairs:
        lines += ["", "paired differences (same dice, game by game): mean of a - b, 95% CI"]
        label = max(len(f"{p['a']} - {p['b']}") for p in pairs)
        for p in pairs:
            lines.append(f"  {p['a'] + ' - ' + p['b']:<{label}}  {p['mean_diff']:+8.2f}  {interval(*p['ci95'])}")
    return "\n".join(lines)


def render_json(evaluation: Evaluation) -> bytes:
    """:meth:`Evaluation.to_dict` as indented JSON (UTF-8)."""
    return (json.dumps(evaluation.to_dict(), indent=2) + "\n").encode()


def render_plot(evaluation: Evaluation, fmt: str = "png") -> bytes:
    """Each agent's score distribution (optimal expected score marked) and mean points per category.

    Args:
        evaluation: What to plot.
        fmt: One of :data:`~yacht_lab.measure.report.PLOT_FORMATS`.

    Raises:
        ValueError: another format, or no matplotlib.
    """
    plt = pyplot_for(fmt)

    results = list(evaluation.results.values())
    names = [result.name for result in results]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [1, 1.6]})
    try:
        violins = left.violinplot([result.scores for result in results], showmedians=True)
        for i, body in enumerate(violins["bodies"]):
            body.set_facecolor(f"C{i}")  # the agent's colour in the category chart
        left.axhline(
            evaluation.optimal_expected_score,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"optimal expected score {evaluation.optimal_expected_score:.2f}",
        )
        left.legend(fontsize=8, loc="lower right")
        left.set_xticks(range(1, len(names) + 1), names, rotation=15, fontsize=8)
        left.set_ylabel("final score")
        left.set_title(f"score distribution ({evaluation.games:,} games, {evaluation.rules.name} rules)")

        x = np.arange(evaluation.rules.num_categories)
        bar_width = 0.8 / len(results)
        for i, result in enumerate(results):
            offset = (i - (len(results) - 1) / 2) * bar_width
            right.bar(x + offset, result.category_scores.mean(axis=0), bar_width, label=result.name, color=f"C{i}")
        right.set_xticks(x, evaluation.rules.categories, rotation=35, ha="right", fontsize=8)
        right.set_ylabel("mean points")
        right.set_title("mean points per category")
        right.legend(fontsize=8)
        return figure_bytes(fig, fmt)
    finally:
        plt.close(fig)
