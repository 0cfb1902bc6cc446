"""Robustness of the training recipe: its runs with several seeds, side by side.

    python benchmarks/recipe_seeds.py runs/recipe/<seed 0 run> runs/recipe/<seed 1 run> runs/recipe/<seed 2 run> \
        --games 10000 --plot benchmarks/training/recipe_seeds.png --json benchmarks/training/recipe_seeds.json

For each run folder (``train.py`` output): the time and steps at which its learning curve (the deterministic
policy on ``eval.games`` fixed games) first reaches 90% and 95% of optimal, its last curve point, and its
``model.zip`` on ``evaluate.py``'s games (``--games`` games of ``--seed``: mean score with its 95% CI, % of
optimal, mean regret and the regret estimate ``E[score] = optimal - E[regret]``, whose CI is about ten times
narrower on the same games). Then the mean over seeds of the final % of optimal (the regret estimate's, and the
mean score's) with 95% Student-t intervals, and the plot of every curve against wall-clock minutes and steps
(``--reference CSV`` adds an earlier run's curve, dashed). Every figure is printed as a Markdown table.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import yaml
from scipy import stats

from yacht_agents import make_agent
from yacht_env.util import atomic_output
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.scripts.cli import OneLineParser, number, output_file
from yacht_lab.training.runs import read_curve


def first_reaching(rows: list[dict[str, float]], percent: float) -> dict[str, float] | None:
    """The first curve row at or above ``percent`` of optimal (``None`` if none)."""
    return next((row for row in rows if row["percent_of_optimal"] >= percent), None)


def describe(run: Path, games: int, seed: int) -> dict[str, object]:
    config = yaml.safe_load((run / "config.yaml").read_text())
    rows = read_curve(run / "learning_curve.csv")
    rules = config["rules"]
    evaluation = evaluate([make_agent(f"ppo:{run / 'model.zip'}", rules)], games, seed, rules)
    summary = next(iter(evaluation.to_dict()["agents"].values()))
    optimal = evaluation.optimal_expected_score
    regret_lo, regret_hi = summary["regret_ci95"]
    reach = {}
    for percent in (90, 95):
        row = first_reaching(rows, percent)
        reach[percent] = None if row is None else {"minutes": row["wall_minutes"], "timesteps": row["timesteps"]}
    return {
        "run": str(run),
        "seed": config["seed"],
        "rules": rules,
        "reach": reach,
        "last": {k: rows[-1][k] for k in ("timesteps", "wall_minutes", "percent_of_optimal")},
        "mean_score": summary["mean"],
        "ci95": summary["ci95"],
        "percent_of_optimal": summary["percent_of_optimal"],
        "mean_regret": summary["mean_regret"],
        "expected_percent_of_optimal": 100 * (optimal - summary["mean_regret"]) / optimal,
        "expected_score_ci95": [optimal - regret_hi, optimal - regret_lo],
        "optimal": optimal,
        "curve": rows,
    }


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 95% Student-t interval (``n - 1`` degrees of freedom)."""
    mean = float(np.mean(values))
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(values) - 1) * np.std(values, ddof=1) / math.sqrt(len(values)))
    return mean, mean - half, mean + half


def table(results: list[dict[str, object]]) -> str:
    def reached(result, percent):
        hit = result["reach"][percent]
        return "not reached" if hit is None else f"{hit['minutes']:.1f} min ({hit['timesteps'] / 1e6:.1f} M steps)"

    lines = [
        "| seed | 90% of optimal at | 95% at | last curve point | `evaluate.py` mean [95% CI] | % of optimal | "
        "mean regret | optimal - regret [95% CI] | its % of optimal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        last = r["last"]
        lo, hi = r["ci95"]
        elo, ehi = r["expected_score_ci95"]
        lines.append(
            f"| {r['seed']} | {reached(r, 90)} | {reached(r, 95)} | {last['percent_of_optimal']:.1f}% at "
            f"{last['wall_minutes']:.1f} min ({last['timesteps'] / 1e6:.1f} M) | {r['mean_score']:.2f} "
            f"[{lo:.2f}, {hi:.2f}] | {r['percent_of_optimal']:.1f}% | {r['mean_regret']:.2f} | "
            f"{r['optimal'] - r['mean_regret']:.2f} [{elo:.2f}, {ehi:.2f}] | {r['expected_percent_of_optimal']:.2f}% |"
        )
    return "\n".join(lines)


def plot(results: list[dict[str, object]], path: Path, reference: Path | None = None, label: str = "") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for r in results:
        minutes = [row["wall_minutes"] for row in r["curve"]]
        steps = [row["timesteps"] / 1e6 for row in r["curve"]]
        percent = [row["percent_of_optimal"] for row in r["curve"]]
        axes[0].plot(minutes, percent, marker=".", label=f"seed {r['seed']}")
        axes[1].plot(steps, percent, marker=".", label=f"seed {r['seed']}")
    if reference is not None:
        rows = read_curve(reference)
        percent = [row["percent_of_optimal"] for row in rows]
        style = {"color": "grey", "linestyle": "--", "label": label or f"earlier: {reference}"}
        axes[0].plot([row["wall_minutes"] for row in rows], percent, **style)
        axes[1].plot([row["timesteps"] / 1e6 for row in rows], percent, **style)
    for ax, xlabel in zip(axes, ("wall-clock minutes", "environment steps (M)"), strict=True):
        for level in (90, 95, 97):
            ax.axhline(level, color="grey", linewidth=0.6, linestyle="--")
        ax.set_ylim(70, 100)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("% of optimal (2,000 evaluation games)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"The recipe, {len(results)} seeds ({results[0]['rules']} rules)")
    fig.tight_layout()
    with atomic_output(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip("."))
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="train.py run folders")
    parser.add_argument("--games", type=number(int, 1), default=10_000, help="evaluate.py games per model")
    parser.add_argument("--seed", type=number(int, 0), default=0, help="evaluate.py seed (default: 0)")
    parser.add_argument("--plot", type=output_file, help="write the curves to this .png/.svg/.pdf")
    parser.add_argument("--json", type=output_file, help="write the figures as JSON")
    parser.add_argument("--reference", type=Path, help="an earlier run's learning_curve.csv to plot beside them")
    parser.add_argument("--reference-label", default="", help="its legend (default: its path)")
    args = parser.parse_args(argv)
    for run in args.runs:
        if not (run / "model.zip").is_file() or not (run / "learning_curve.csv").is_file():
            parser.error(f"{run} is not a finished train.py run folder (no model.zip or learning_curve.csv)")
    try:
        results = [describe(run, args.games, args.seed) for run in args.runs]
    except ValueError as error:  # a model that does not load, a damaged curve, bad --games or --seed
        parser.error(str(error))
    print(table(results))
    mean, lo, hi = t_interval([r["expected_percent_of_optimal"] for r in results])
    smean, slo, shi = t_interval([r["percent_of_optimal"] for r in results])
    print(f"\nfinal % of optimal over {len(results)} seeds, mean [95% t-interval]:")
    print(f"  by optimal - regret: {mean:.2f}% [{lo:.2f}, {hi:.2f}]")
    print(f"  by the mean score:   {smean:.2f}% [{slo:.2f}, {shi:.2f}]")
    minutes = [r["reach"][90]["minutes"] for r in results if r["reach"][90] is not None]
    if minutes:
        print(f"time to 90%: mean {np.mean(minutes):.1f} min (min {min(minutes):.1f}, max {max(minutes):.1f})")
    if args.plot:
        plot(results, args.plot, args.reference, args.reference_label)
    if args.json:
        report = {"runs": [{k: v for k, v in r.items() if k != "curve"} for r in results]}
        report["final_percent_of_optimal"] = {
            "optimal_minus_regret": {"mean": mean, "ci95": [lo, hi]},
            "mean_score": {"mean": smean, "ci95": [slo, shi]},
        }
        with atomic_output(args.json) as tmp:
            Path(tmp).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
