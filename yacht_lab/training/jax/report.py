"""Many seeds reported as the field reports them: the curve's aggregate over seeds, and the shipped seed measured anew.

**The aggregate** (``aggregate_curve.csv``, one row per evaluation): over the seeds' values of the run's measure
(solo: % of optimal; at a table: the win rate against the start), their median and interquartile mean (the mean of
the middle half: :func:`iqm`, rliable's ``aggregate_iqm``) with 95% stratified-bootstrap intervals from rliable
(Agarwal et al., 2021, "Deep RL at the edge of the statistical precipice") where it is installed (the ``sweep``
extra; otherwise the interval columns are empty). The bootstrap is seeded by ``eval.seed``.

**The shipped model** (``selection.json``): the seed with the best value at the last evaluation, chosen on the
curve's games, and measured again on fresh ones (as many, drawn from another key) so that the figure it ships with
is not the maximum of several noisy ones. Both figures are printed and written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from yacht_env.util import atomic_write

AGGREGATE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "seeds",
    "measure",
    "median",
    "median_low",
    "median_high",
    "iqm",
    "iqm_low",
    "iqm_high",
)
AGGREGATE_FILE = "aggregate_curve.csv"
SELECTION_FILE = "selection.json"
BOOTSTRAP_REPS = 2000


def iqm(values: Iterable[float]) -> float:
    """The interquartile mean: the mean of the values left once a quarter (rounded down) is cut from each end, as
    ``scipy.stats.trim_mean(values, 0.25)`` and rliable's ``aggregate_iqm`` of one task compute it.
    """
    ordered = np.sort(np.asarray(list(values), dtype=np.float64))
    cut = int(0.25 * len(ordered))
    return float(ordered[cut : len(ordered) - cut].mean())


def aggregate(values: Iterable[float], seed: int, reps: int = BOOTSTRAP_REPS) -> dict[str, float | str]:
    """The median and IQM of ``values`` (one per seed), with rliable's 95% intervals where rliable is installed."""
    values = np.asarray(list(values), dtype=np.float64)
    out: dict[str, float | str] = {"median": float(np.median(values)), "iqm": iqm(values)}
    try:
        from rliable import library as rly
    except ImportError:
        return {**out, **dict.fromkeys(("median_low", "median_high", "iqm_low", "iqm_high"), "")}

    def statistics(scores):  # scores: (seeds, tasks = 1)
        return np.array([np.median(scores.mean(axis=1)), iqm(scores.ravel())])

    # rliable's stratified bootstrap draws its resamples from numpy's global generator (its random_state only reaches
    # arch, which deprecates it): seed that generator for the call and give it back its state after.
    saved = np.random.get_state()  # noqa: NPY002
    try:
        np.random.seed(seed)  # noqa: NPY002
        _, intervals = rly.get_interval_estimates({"run": values[:, None]}, statistics, reps=reps)
    finally:
        np.random.set_state(saved)  # noqa: NPY002
    (median_low, iqm_low), (median_high, iqm_high) = intervals["run"]
    return {**out, "median_low": median_low, "median_high": median_high, "iqm_low": iqm_low, "iqm_high": iqm_high}


class Aggregator:
    """The aggregate curve's rows from the per-seed curve's (each evaluation's row computed once).

    Args:
        measure: The per-seed column aggregated (``percent_of_optimal``, ``win_rate``).
        seed: The bootstrap's seed.
    """

    def __init__(self, measure: str, seed: int) -> None:
        self.measure, self.seed = measure, seed
        self._done: dict[float, dict[str, float | str]] = {}

    def rows(self, curve: list[dict[str, float]]) -> list[dict[str, float | str]]:
        """One row per evaluation of ``curve`` (rows grouped by ``timesteps``, in order)."""
        groups: dict[float, list[dict[str, float]]] = {}
        for row in curve:
            groups.setdefault(row["timesteps"], []).append(row)
        out = []
        for timesteps, group in groups.items():
            if timesteps not in self._done or self._done[timesteps]["seeds"] != len(group):
                values = [row[self.measure] for row in group]
                stats = {name: _rounded(value) for name, value in aggregate(values, self.seed).items()}
                self._done[timesteps] = {
                    "timesteps": int(timesteps),
                    "wall_minutes": max(row["wall_minutes"] for row in group),
                    "seeds": len(group),
                    "measure": self.measure,
                    **stats,
                }
            out.append(self._done[timesteps])
        return out


def _rounded(value: float | str) -> float | str:
    return value if isinstance(value, str) else round(float(value), 4)


def write_selection(path, selection: dict) -> str:
    """Writes ``selection.json`` and returns the line that reports it."""
    atomic_write(path, json.dumps(selection, indent=2) + "\n")
    measure, chosen, fresh = selection["measure"], selection["chosen_on"], selection["fresh"]
    unit = "% of optimal" if measure == "percent_of_optimal" else "% against its start"
    scale = 1 if measure == "percent_of_optimal" else 100
    line = (
        f"model.npz: seed {selection['seed']}, {scale * chosen[measure]:.2f}{unit} on the curve's {chosen['games']:,} "
        f"{selection['unit']} (chosen on them), {scale * fresh[measure]:.2f}{unit} on {fresh['games']:,} fresh ones"
    )
    if selection["seeds"] > 1:
        last = selection["aggregate"]
        line += f"; over {selection['seeds']} seeds: median {scale * last['median']:.2f}, IQM {scale * last['iqm']:.2f}"
    return line
