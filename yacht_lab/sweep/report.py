"""The aggregate statistics of a finished sweep: many seeds of each configuration, compared the way
Agarwal et al. (2021, "Deep RL at the Edge of the Statistical Precipice") recommend, with their
`rliable <https://github.com/google-research/rliable>`_ library.

A sweep trains each configuration with several seeds; every trial leaves a learning curve (the rows of
its ``learning_curve.csv``). For one metric of those curves (``percent_of_optimal`` for solo runs,
``win_rate`` for versus runs) this module reports, per configuration:

* the **final** value of each seed (the metric of the last row of its curve: a run that ASHA stopped
  early counts with its last evaluation, fewer steps than the others, which ``final_timesteps`` shows);
* their **mean** and **IQM** (interquartile mean: the mean of the middle 50% of the runs, robust to one
  seed that diverged and less noisy than the median), each with a stratified bootstrap CI over runs
  (one task here, one environment, so the bootstrap resamples seeds);
* the **probability of improvement** ``P(X > Y)`` of each pair of configurations: the chance that a run
  of ``X`` ends above a run of ``Y`` (ties count half), with its bootstrap CI;
* the **learning curve**: the IQM over seeds at each evaluation step that all its seeds reached, with a
  pointwise bootstrap CI band.

Trials that failed (status ``"error"`` or ``"pending"``, or no evaluation at all) are counted and left
out. A bootstrap of one run is meaningless, so a configuration with fewer than two final values has no
CIs and takes no part in the probabilities of improvement.

**Determinism.** The same trials, metric and seed give byte-identical JSON. rliable 1.2.0 resamples with
NumPy's global (legacy) generator, ignoring its ``random_state`` argument, so each bootstrap here runs
under a global seed derived from ``(seed, what is estimated, the configuration's name)`` and the global
state is restored afterwards: a configuration's CIs do not move when another joins the sweep. (Not
thread-safe: two summaries at once in one process would share that generator.)
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import scipy.stats
from rliable import library as rly
from rliable import metrics

from yacht_env.rules import is_int
from yacht_lab.measure.report import figure_bytes, pyplot_for

#: The statuses a trial can end in. ``"stopped early"``: ASHA ended it (its curve counts as it stands).
STATUSES = ("finished", "stopped early", "error", "pending")
#: Statuses whose trials are left out of the statistics (as is a trial with an empty curve).
FAILED_STATUSES = ("error", "pending")
#: How the table and the plot name a metric; any other metric goes by its own name.
METRIC_LABELS = {"percent_of_optimal": "% of optimal", "win_rate": "win rate"}
#: How the table writes a value of a metric (``percent_of_optimal`` is 0..100, ``win_rate`` 0..1).
METRIC_FORMATS = {"percent_of_optimal": "{:.2f}", "win_rate": "{:.3f}"}
DEFAULT_FORMAT = "{:.4g}"


@dataclass(frozen=True)
class TrialResult:
    """What one trial of a sweep left behind.

    Attributes:
        configuration: The label of the trial's configuration, e.g. ``"default"`` or ``"ppo.n_epochs=4"``.
        seed: The trial's training seed.
        run_dir: The trial's run folder, relative to the sweep folder.
        status: One of :data:`STATUSES`.
        curve: The rows of its ``learning_curve.csv`` in order; each has ``"timesteps"``,
            ``"wall_minutes"`` and the metric (numbers, or strings that read as numbers).
        node: The Ray node that ran it last.
        attempts: 1 + the times it was restarted after a failure.
    """

    configuration: str
    seed: int
    run_dir: str
    status: str
    curve: list[dict[str, float]]
    node: str | None = None
    attempts: int = 1

    @property
    def failed(self) -> bool:
        """Whether the trial is left out of the statistics: it errored, never ran, or never evaluated."""
        return self.status in FAILED_STATUSES or not self.curve


def summarise(
    trials: list[TrialResult],
    metric: str,
    configurations: list[str],
    *,
    reps: int = 50_000,
    curve_reps: int = 2_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """The sweep's statistics for ``metric`` as a JSON-able dict (see the module docstring).

    Args:
        trials: Every trial of the sweep, failed ones included (they are counted).
        metric: The curve column compared, e.g. ``"percent_of_optimal"`` or ``"win_rate"``.
        configurations: The configurations' labels in the order reported; the first is the baseline
            (the default configuration).
        reps: Bootstrap repetitions of the final values' CIs and of the probabilities of improvement.
        curve_reps: Bootstrap repetitions of the learning curves' CI bands.
        seed: A non-negative int; the same trials and seed give the same summary.
        confidence: Coverage of the CIs, in (0, 1).

    Returns:
        A dict with the keys ``metric``, ``confidence``, ``reps``, ``curve_reps``, ``seed`` and the lists
        ``configurations``, ``probability_of_improvement`` and ``curves``; each configuration entry has ``name``,
        ``seeds`` (sorted, those with a final value), ``runs`` (trials), ``final`` and ``final_timesteps``
        (per seed), ``mean``, ``iqm``, ``mean_ci95``, ``iqm_ci95``, ``stopped_early`` and ``failed``; each
        pair ``{"x", "y", "p", "ci95"}`` (``x`` before ``y`` in ``configurations``); each curve ``name``,
        ``timesteps``, ``iqm``, ``lo``, ``hi`` and ``mean``. ``None`` where there are too few runs.

    Raises:
        ValueError: no or repeated configurations, a trial of another configuration, an unknown status,
            two trials with results for one seed of a configuration, a curve row (of a trial with results)
            without ``timesteps`` or ``metric`` or with a value that is not a finite number, or bad
            ``reps``, ``curve_reps``, ``seed`` or ``confidence``.
    """
    _check_arguments(metric, configurations, reps, curve_reps, seed, confidence)
    by_configuration: dict[str, list[TrialResult]] = {name: [] for name in configurations}
    for trial in trials:
        if trial.configuration not in by_configuration:
            raise ValueError(
                f"trial {trial.run_dir!r} is of configuration {trial.configuration!r}, "
                f"not one of {', '.join(map(repr, configurations))}"
            )
        if trial.status not in STATUSES:
            raise ValueError(
                f"trial {trial.run_dir!r} has status {trial.status!r}, not one of {', '.join(map(repr, STATUSES))}"
            )
        by_configuration[trial.configuration].append(trial)

    entries, curves, finals = [], [], {}
    for name in configurations:
        group = by_configuration[name]
        _check_one_result_per_seed(name, group)
        # (timesteps, value) of each evaluation, in row order, of each seed with a result
        points = {int(trial.seed): _points(trial, metric) for trial in group if not trial.failed}
        seeds = sorted(points)
        finals[name] = np.array([points[s][-1][1] for s in seeds], dtype=np.float64)
        entries.append(
            {
                "name": name,
                "seeds": seeds,
                "runs": len(group),
                "final": finals[name].tolist(),
                "final_timesteps": [points[s][-1][0] for s in seeds],
                **_final_statistics(finals[name], reps, confidence, seed, name),
                "stopped_early": sum(trial.status == "stopped early" and not trial.failed for trial in group),
                "failed": sum(trial.failed for trial in group),
            }
        )
        curves.append({"name": name, **_curve([dict(points[s]) for s in seeds], curve_reps, confidence, seed, name)})

    improvements = []
    for x, y in itertools.combinations(configurations, 2):
        if len(finals[x]) >= 2 and len(finals[y]) >= 2:
            p, lo, hi = _probability_of_improvement(finals[x], finals[y], reps, confidence, seed, x, y)
            improvements.append({"x": x, "y": y, "p": p, "ci95": [lo, hi]})

    return {
        "metric": metric,
        "confidence": float(confidence),
        "reps": int(reps),
        "curve_reps": int(curve_reps),
        "seed": int(seed),
        "configurations": entries,
        "probability_of_improvement": improvements,
        "curves": curves,
    }


def _check_arguments(metric, configurations, reps, curve_reps, seed, confidence) -> None:
    if not configurations:
        raise ValueError("configurations must name at least one configuration (the baseline first)")
    repeated = sorted({name for name in configurations if configurations.count(name) > 1})
    if repeated:
        raise ValueError(f"configurations must be distinct, got {', '.join(map(repr, repeated))} more than once")
    if not isinstance(metric, str) or not metric:
        raise ValueError(f"metric must be the name of a learning-curve column, got {metric!r}")
    for name, value, low in (("reps", reps, 1), ("curve_reps", curve_reps, 1), ("seed", seed, 0)):
        if not is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")


def _points(trial: TrialResult, metric: str) -> list[tuple[int, float]]:
    """``(timesteps, metric)`` of each row of a trial's curve, in order."""
    points = []
    for i, row in enumerate(trial.curve):
        for column in ("timesteps", metric):
            if column not in row:
                raise ValueError(
                    f"trial {trial.run_dir!r}: row {i} of its learning curve has no {column!r} column "
                    f"(it has {', '.join(map(repr, row))})"
                )
        try:
            step, value = float(row["timesteps"]), float(row[metric])
        except (TypeError, ValueError):
            step = value = math.nan
        if not (math.isfinite(step) and math.isfinite(value)):
            raise ValueError(
                f"trial {trial.run_dir!r}: row {i} of its learning curve has timesteps {row['timesteps']!r} "
                f"and {metric} {row[metric]!r}, not two finite numbers"
            )
        points.append((int(step), value))
    return points


def _check_one_result_per_seed(name: str, group: list[TrialResult]) -> None:
    seen: dict[int, str] = {}
    for trial in group:
        if not trial.failed:
            if trial.seed in seen:
                raise ValueError(
                    f"configuration {name!r} has two trials with results for seed {trial.seed}: "
                    f"{seen[trial.seed]!r} and {trial.run_dir!r}"
                )
            seen[trial.seed] = trial.run_dir


# --------------------------------------------------------------------------------------------------
# Estimates (rliable's stratified bootstrap)
# --------------------------------------------------------------------------------------------------
@contextmanager
def _global_seed(seed: int, *labels: str) -> Iterator[None]:
    """NumPy's global generator seeded from ``seed`` and ``labels``, its former state restored afterwards.

    rliable 1.2.0's bootstraps draw their resamples from ``np.random`` (``random_state`` reaches only arch,
    which does not draw them), so this is what makes them repeatable; the labels give every estimate its
    own stream.
    """
    state = np.random.get_state()  # noqa: NPY002 - the generator rliable draws from
    entropy = [seed, *(zlib.crc32(label.encode()) for label in labels)]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(8))  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def _interval_estimates(
    scores: np.ndarray | list[np.ndarray],
    func: Callable[..., np.ndarray],
    reps: int,
    confidence: float,
    seed: int,
    *labels: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(point, lo, hi)`` of ``func`` by :func:`rly.get_interval_estimates` (percentile method)."""
    with _global_seed(seed, *labels):
        point, interval = rly.get_interval_estimates({"": scores}, func, reps=reps, confidence_interval_size=confidence)
    return np.asarray(point[""], dtype=np.float64).reshape(-1), interval[""][0], interval[""][1]


def _iqm_and_mean(scores: np.ndarray) -> np.ndarray:
    return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_mean(scores)])


def _final_statistics(finals: np.ndarray, reps: int, confidence: float, seed: int, name: str) -> dict:
    """``mean``, ``iqm`` and their CIs over the final values (``None`` where there are too few)."""
    if len(finals) < 2:
        value = float(finals[0]) if len(finals) else None
        return {"mean": value, "iqm": value, "mean_ci95": None, "iqm_ci95": None}
    scores = finals[:, np.newaxis]  # (runs, 1 task)
    (iqm, mean), lo, hi = _interval_estimates(scores, _iqm_and_mean, reps, confidence, seed, "final", name)
    return {
        "mean": float(mean),
        "iqm": float(iqm),
        "mean_ci95": [float(lo[1]), float(hi[1])],
        "iqm_ci95": [float(lo[0]), float(hi[0])],
    }


def _iqm_per_step(scores: np.ndarray) -> np.ndarray:
    """The IQM over runs at each step of ``(runs, 1 task, steps)`` scores.

    What ``metrics.aggregate_iqm(scores[..., step])`` gives at each step (the 25% trimmed mean), for all
    steps in one call: the per-step loop of rliable's examples is some 15 times slower.
    """
    return scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=0).reshape(-1)


def _curve(points: list[dict[int, float]], reps: int, confidence: float, seed: int, name: str) -> dict:
    """The IQM curve over seeds (with its pointwise CI band) at the steps every seed evaluated."""
    steps = sorted(set.intersection(*(set(p) for p in points))) if points else []
    if len(points) < 2 or not steps:
        values = [points[0][step] for step in steps]  # one seed (or none): the band is the curve itself
        return {"timesteps": steps, "iqm": values, "lo": values, "hi": values, "mean": values}
    scores = np.array([[[p[step] for step in steps]] for p in points], dtype=np.float64)  # (runs, 1 task, steps)
    iqm, lo, hi = _interval_estimates(scores, _iqm_per_step, reps, confidence, seed, "curve", name)
    return {
        "timesteps": steps,
        "iqm": iqm.tolist(),
        "lo": lo.tolist(),
        "hi": hi.tolist(),
        "mean": np.asarray(metrics.aggregate_mean(scores), dtype=np.float64).tolist(),
    }


def _probability_of_improvement(
    x: np.ndarray, y: np.ndarray, reps: int, confidence: float, seed: int, x_name: str, y_name: str
) -> tuple[float, float, float]:
    """``P(X > Y)`` (ties count half) and its CI, the two samples resampled independently."""
    scores = [x[:, np.newaxis], y[:, np.newaxis]]
    labels = ("improvement", x_name, y_name)
    (p,), lo, hi = _interval_estimates(scores, metrics.probability_of_improvement, reps, confidence, seed, *labels)
    return float(p), float(lo[0]), float(hi[0])


# --------------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------------
def metric_label(metric: str) -> str:
    """How the table and the plot name ``metric``: ``"% of optimal"``, ``"win rate"`` or the name itself."""
    return METRIC_LABELS.get(metric, metric)


def format_table(summary: dict) -> str:
    """The human-readable table of :func:`summarise`'s summary: a row per configuration, then ``P(X > Y)``."""
    fmt = METRIC_FORMATS.get(summary["metric"], DEFAULT_FORMAT)
    entries = summary["configurations"]

    def number(value: float | None) -> str:
        return "-" if value is None else fmt.format(value)

    def interval(bounds: list[float] | None) -> str:
        return "-" if bounds is None else f"[{number(bounds[0])}, {number(bounds[1])}]"

    percent = f"{100 * summary['confidence']:g}%"
    header = ("configuration", "seeds", "mean", "IQM", f"IQM {percent} CI", "stopped early", "failed")
    rows = [
        (
            e["name"],
            f"{len(e['seeds'])}/{e['runs']}",
            number(e["mean"]),
            number(e["iqm"]),
            interval(e["iqm_ci95"]),
            str(e["stopped_early"]),
            str(e["failed"]),
        )
        for e in entries
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        first = f"{cells[0]:<{widths[0]}}"
        return first + "".join(f"  {cell:>{width}}" for cell, width in zip(cells[1:], widths[1:], strict=True))

    runs = sum(e["runs"] for e in entries)
    lines = [
        f"final {metric_label(summary['metric'])} ({summary['metric']}): {len(entries)} configurations, "
        f"{runs} runs; mean and IQM over seeds, {percent} stratified bootstrap CI "
        f"({summary['reps']:,} reps, seed {summary['seed']})",
        "",
        line(header),
        *(line(row) for row in rows),
    ]
    pairs = summary["probability_of_improvement"]
    if pairs:
        lines += ["", f"probability of improvement: P(X > Y) over final values, ties count half, {percent} CI"]
        labels = [f"P({p['x']} > {p['y']})" for p in pairs]
        width = max(map(len, labels))
        for label, p in zip(labels, pairs, strict=True):
            lines.append(f"  {label:<{width}} = {p['p']:.2f} [{p['ci95'][0]:.2f}, {p['ci95'][1]:.2f}]")
    elif len(entries) > 1:
        lines += ["", "probability of improvement: needs 2 or more seeds with a final value in each configuration"]
    return "\n".join(lines)


def render_curves(summary: dict, fmt: str = "png") -> bytes:
    """The IQM learning curve of each configuration with its CI band, on one axes.

    Args:
        summary: What :func:`summarise` returned.
        fmt: One of :data:`yacht_lab.measure.report.PLOT_FORMATS`.

    Raises:
        ValueError: another format, or no matplotlib.
    """
    plt = pyplot_for(fmt)
    fig, ax = plt.subplots(figsize=(9, 5.5))
    try:
        for i, (entry, curve) in enumerate(zip(summary["configurations"], summary["curves"], strict=True)):
            if not curve["timesteps"]:
                continue
            steps = np.asarray(curve["timesteps"], dtype=np.float64) / 1e6
            seeds = len(entry["seeds"])
            label = f"{entry['name']} ({seeds} seed{'' if seeds == 1 else 's'})"
            marker = "o" if len(steps) == 1 else None  # a lone evaluation is a point, not a line
            ax.plot(steps, curve["iqm"], color=f"C{i}", marker=marker, label=label)
            ax.fill_between(steps, curve["lo"], curve["hi"], color=f"C{i}", alpha=0.2, linewidth=0)
        ax.set_xlabel("environment steps (millions)")
        ax.set_ylabel(metric_label(summary["metric"]))
        ax.set_title(f"IQM over seeds, {100 * summary['confidence']:g}% stratified bootstrap CI")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        return figure_bytes(fig, fmt)
    finally:
        plt.close(fig)
