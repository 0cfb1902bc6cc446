"""The head to head's reports: the text report (win-rate and margin matrices, pairs, agents, calibration), the
JSON and the 2-player win-rate plot of a :class:`~yacht_lab.measure.head_to_head.HeadToHead`.

Separate from the play (:mod:`yacht_lab.measure.head_to_head`): the outcome is computed once and written here in
each form ``evaluate.py --players`` asks for; the JSON is :meth:`~yacht_lab.measure.head_to_head.HeadToHead.to_dict`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from yacht_lab.measure.evaluation import game_title
from yacht_lab.measure.head_to_head import CI_METHOD, HeadToHead, pair_key
from yacht_lab.measure.ratings import Ratings
from yacht_lab.measure.report import figure_bytes, pyplot_for, short_names


def _matrices(names: list[str], pairs: dict) -> list[str]:
    """The two-player report's win-rate and margin matrices, row against column."""
    short = short_names(names, 18)
    width = 2 + max(9, *(len(label) for label in short.values()))

    def matrix(title: str, cell: Callable[[dict, bool], str]) -> list[str]:
        rows = [title, " " * width + "".join(f"{short[name]:>{width}}" for name in names)]
        for a in names:
            cells = []
            for b in names:
                if a == b:
                    cells.append("-")
                elif pair_key(a, b) in pairs:
                    cells.append(cell(pairs[pair_key(a, b)], False))
                else:
                    cells.append(cell(pairs[pair_key(b, a)], True))
            rows.append(f"{short[a]:<{width}}" + "".join(f"{c:>{width}}" for c in cells))
        return rows

    def win(pair: dict, flip: bool) -> str:
        rate = 1 - pair["win_rate_a"] if flip else pair["win_rate_a"]
        return f"{100 * rate:.1f}%"

    def margin(pair: dict, flip: bool) -> str:
        return f"{-pair['mean_margin_a'] if flip else pair['mean_margin_a']:+.2f}"

    return [
        *matrix("win rate of row against column (ties count half):", win),
        "",
        *matrix("mean margin of row over column (points):", margin),
        "",
    ]


def format_report(result: HeadToHead, ratings: Ratings | None = None) -> str:
    """The human-readable report: the win-rate and margin matrices (row against column), pairs, agents, the
    calibration and, if given, the ratings table.
    """
    report = result.to_dict()
    p, per_deal, names = result.num_players, result.games_per_deal, result.names
    pairs, agents = report["head_to_head"], report["agents"]
    tables = ""
    if p > 2 and result.num_tables > 1:  # more agents than seats (at two players the matrices show the pairs)
        tables = f" at each of its {result.num_tables:,} tables (every {p} of the {len(names)} agents)"
    lines = [
        f"{game_title(result.rules)} head to head ({result.rules.name} rules, {p} players): {result.deals:,} deals, "
        f"seed {result.seed}; "
        f"each deal played {per_deal} times per table ({p} dice rotations x {p} seat rotations){tables}, "
        f"{result.total_games:,} games in all, {result.games_per_second:,.0f} games/s",
        f"CIs: {CI_METHOD}",
        "",
    ]
    if p == 2:
        lines += _matrices(names, pairs)
    lines.append("pairs (a vs b): games, wins a / wins b / ties, win rate of a [95% CI], mean margin of a [95% CI]")
    label = max(len(key) for key in pairs)
    for key, pair in pairs.items():
        lo, hi = pair["win_rate_a_ci95"]
        mlo, mhi = pair["mean_margin_a_ci95"]
        lines.append(
            f"  {key:<{label}}  {pair['games']:>9,}  {pair['wins_a']:,} / {pair['wins_b']:,} / {pair['ties']:,}  "
            f"{100 * pair['win_rate_a']:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]  "
            f"{pair['mean_margin_a']:+.2f} [{mlo:+.2f}, {mhi:+.2f}]"
        )
    if "paired" in report:
        lines += ["", *format_paired(report["paired"])]
    lines += ["", "agents: games, mean score [95% CI], win share (ties split) [95% CI]"]
    label = max(len(name) for name in names)
    for name, stats in agents.items():
        lo, hi = stats["mean_score_ci95"]
        slo, shi = stats["win_share_ci95"]
        lines.append(
            f"  {name:<{label}}  {stats['games']:>9,}  {stats['mean_score']:.2f} [{lo:.2f}, {hi:.2f}]  "
            f"{100 * stats['win_share']:.2f}% [{100 * slo:.2f}, {100 * shi:.2f}]"
        )
    lo, hi = report["first_seat_win_rate_ci95"]
    lines += [
        "",
        f"first seat's win rate (its share of the wins, ties split; no advantage: {100 / p:.2f}%): "
        f"{100 * report['first_seat_win_rate']:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]",
    ]
    if "calibration" in report:
        lines += ["", *format_calibration(report["calibration"])]
    if ratings is not None:
        lines += ["", *ratings.format()]
    return "\n".join(lines)


#: The text report lists the paired differences up to this many lines (the JSON always has all of them).
MAX_PAIRED_LINES = 30


def format_paired(paired: dict[str, dict[str, dict]]) -> list[str]:
    """The paired differences against each common opponent (:meth:`HeadToHead.paired_differences`)."""
    count = sum(len(rows) for rows in paired.values())
    title = (
        "paired on the same deals: how much more often a beats c than b does "
        "(win rates, ties half; percentage points) [95% CI]"
    )
    if count > MAX_PAIRED_LINES:
        return [f'{title}: {count} comparisons, in the JSON\'s "paired"']
    lines = [f"{title}:"]
    label = max(len(key) for rows in paired.values() for key in rows)
    for against, rows in paired.items():
        for key, row in rows.items():
            lo, hi = row["difference_ci95"]
            lines.append(
                f"  {key:<{label}}  against {against}: "
                f"{100 * row['difference']:+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]"
            )
    return lines


def format_calibration(calibration: dict) -> list[str]:
    """The calibration section of the report: per agent, then the pooled reliability table."""
    rounds = calibration["rounds"]
    lines = [
        f"calibration of the win agent's model (P(first) at the start of each of the {rounds} rounds, every player "
        "at a turn start; final total = total + the solver's score distribution, independent players):",
        f"  agent: mean predicted P(first) / observed win share, Brier score; mean predicted in rounds 1, 4, 7, 10, "
        f"{rounds}",
    ]
    agents = calibration["agents"]
    label = max(len(name) for name in agents)
    for name, stats in agents.items():
        by_round = " ".join(f"{100 * stats['mean_predicted_by_round'][k]:.1f}" for k in (0, 3, 6, 9, rounds - 1))
        lines.append(
            f"  {name:<{label}}  {100 * stats['mean_predicted']:.2f}% / {100 * stats['observed_win_share']:.2f}%  "
            f"Brier {stats['brier']:.4f}  rounds: {by_round}"
        )
    lines.append(
        f"  pooled: {calibration['predictions']:,} predictions, Brier {calibration['brier']:.4f} "
        f"(always 1/P: {calibration['brier_constant']:.4f})"
    )
    lines.append("  reliability (pooled): predicted bin, count, mean predicted, observed frequency")
    for row in calibration["reliability"]:
        lo, hi = row["bin"]
        if row["count"]:
            lines.append(
                f"    [{lo:.1f}, {hi:.1f}{']' if hi == 1 else ')'}  {row['count']:>10,}  "
                f"{100 * row['mean_predicted']:6.2f}%  {100 * row['observed']:6.2f}%"
            )
    return lines


def render_json(result: HeadToHead, ratings: Ratings | None = None) -> bytes:
    """:meth:`HeadToHead.to_dict` as indented JSON (UTF-8), with ``"ratings"`` (:meth:`Ratings.to_dict`) if given."""
    report = result.to_dict()
    if ratings is not None:
        report["ratings"] = ratings.to_dict()
    return (json.dumps(report, indent=2) + "\n").encode()


def render_plot(result: HeadToHead, fmt: str = "png") -> bytes:
    """The 2-player win-rate matrix (row against column) as a heatmap.

    Raises:
        ValueError: more than two players, another format, or no matplotlib.
    """
    if result.num_players != 2:
        raise ValueError("the plot is the 2-player win-rate matrix; there is none for more players")
    plt = pyplot_for(fmt)

    names, pairs = result.names, result.to_dict()["head_to_head"]
    n = len(names)
    rates = np.full((n, n), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if pair_key(a, b) in pairs:
                rates[i, j] = pairs[pair_key(a, b)]["win_rate_a"]
                rates[j, i] = 1 - rates[i, j]
    fig, ax = plt.subplots(figsize=(1.6 * n + 2.5, 1.3 * n + 1.5))
    try:
        image = ax.imshow(rates, cmap="RdBu", vmin=0, vmax=1)
        for i in range(n):
            for j in range(n):
                text = "-" if i == j else f"{100 * rates[i, j]:.1f}%"
                ax.text(j, i, text, ha="center", va="center", fontsize=9)
        labels = list(short_names(names).values())
        ax.set_xticks(range(n), labels, rotation=20, ha="right", fontsize=8)
        ax.set_yticks(range(n), labels, fontsize=8)
        ax.set_title(f"win rate of row against column ({result.deals:,} deals, {result.rules.name} rules)", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.046)
        return figure_bytes(fig, fmt)
    finally:
        plt.close(fig)
