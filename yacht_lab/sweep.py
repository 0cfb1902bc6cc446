"""Seed and hyperparameter sweeps of PPO training on Ray Tune; ``sweep.py`` is the thin script over this.

A sweep file (``configs/sweep.yaml`` documents every key) holds a base training config (the keys of
``configs/ppo.yaml``), a search space (a grid over any config keys, plus optional random samples), the seeds
and the per-trial budget. Every configuration runs with every seed: each (configuration, seed) is one Tune
trial, and each trial is :func:`yacht_lab.training.train`, the function ``train.py`` runs, writing a normal run
folder (``config.yaml``, ``learning_curve.csv``, ``checkpoints/``, ``model.zip``) that ``evaluate.py`` and
``train.py --resume`` accept.

The sweep folder ``<storage>/<name>/`` is Tune's experiment folder, and also holds ``sweep.yaml`` (the sweep
as run), ``runs/<configuration>__seed<k>/`` (the trials' run folders) and, at the end, ``results.json``,
``results.png`` and ``results.txt`` (:mod:`yacht_lab.sweep_report`: mean, IQM and stratified-bootstrap CIs over
seeds, probability of improvement, learning curves with CI bands).

**Fault tolerance.** Each evaluation is reported to Tune; each training checkpoint goes with it as a Tune
checkpoint. A trial whose worker dies is started again (``retries`` times), and :func:`run_trial` resumes its
run folder from the newest whole checkpoint, Tune's last one or a newer one in the run folder (saved just
before the worker died, not yet reported): ``train(resume=...)``, so the curve keeps its rows up to that step
and evaluates on at the steps it would have. A run that had finished (``model.zip``, written last) is
reported as it is, never trained again. An interrupted sweep (Ctrl-C) saves Tune's state;
:func:`run_sweep` with ``resume=<folder>`` (``sweep.py --resume``) continues the unfinished trials from their
checkpoints and leaves the finished ones.

**Several machines.** ``address`` joins a running Ray cluster. Every machine needs the project installed
(``pip install -e '.[sweep]'``) and ``storage`` must be a folder that all of them see at the same path (NFS or
similar): the run folders are written there directly.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from yacht_env.rules import is_int
from yacht_env.util import atomic_write
from yacht_lab.config import MAX_SEED, TrainConfig, _from_dict, read_yaml, validate
from yacht_lab.training import CURVE_FILE, curve_fields, read_curve

#: The file the sweep is saved in, inside its folder (what ``--resume`` reads).
SWEEP_FILE = "sweep_spec.yaml"
#: The trials' run folders, inside the sweep folder.
RUNS = "runs"
#: The results, inside the sweep folder.
RESULTS_JSON, RESULTS_PNG, RESULTS_TXT = "results.json", "results.png", "results.txt"
#: Provenance of a trial, inside its run folder: the Tune trial, and each attempt's node and process.
TRIAL_FILE = "trial.json"
#: Keys the sweep sets itself and a search may not: the seed (``seeds``), the budget (``budget``) and the torch
#: threads (``--cpus-per-trial``).
RESERVED_KEYS = ("seed", "total_timesteps", "max_minutes", "torch_threads")
#: Random-search distributions: the name in the YAML and the Ray Tune sampler it stands for.
DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")
#: Trials in one sweep (configurations x seeds): a bound on what one YAML can ask for by mistake.
MAX_TRIALS = 10_000
TOP_KEYS = ("name", "base", "search", "seeds", "budget", "retries", "early_stopping", "statistics")


# --------------------------------------------------------------------------------------------------
# The sweep file
# --------------------------------------------------------------------------------------------------
@dataclass
class Configuration:
    """One point of the search space: its label and the config keys it sets (dotted: ``ppo.n_epochs``)."""

    name: str
    overrides: dict[str, Any]


@dataclass
class Sweep:
    """A validated sweep file (see ``configs/sweep.yaml``)."""

    name: str | None
    base: dict[str, Any]
    configurations: list[Configuration]
    seeds: list[int]
    total_timesteps: int
    max_minutes: float | None
    retries: int = 2
    early_stopping: dict[str, Any] | None = None
    statistics: dict[str, int] = field(default_factory=lambda: {"reps": 10_000, "seed": 0})
    source: dict[str, Any] = field(default_factory=dict)
    """The sweep file as read (saved in the sweep folder)."""

    def trial_config(self, configuration: Configuration, seed: int, cpus_per_trial: int) -> TrainConfig:
        """The training config of one trial: the base, the configuration's keys, the seed, the budget and
        ``torch_threads = cpus_per_trial``."""
        data = copy.deepcopy(self.base)
        for key, value in configuration.overrides.items():
            _set_dotted(data, key, copy.deepcopy(value))
        data.update(seed=seed, total_timesteps=self.total_timesteps, max_minutes=self.max_minutes)
        data["torch_threads"] = cpus_per_trial
        return validate(_from_dict(TrainConfig, data, ""))

    @property
    def metric(self) -> str:
        """What a trial is judged by: ``percent_of_optimal`` solo, ``win_rate`` with opponents."""
        return "win_rate" if self.base.get("opponents") else "percent_of_optimal"


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    for part in parts[:-1]:
        data = data.setdefault(part, {})
    data[parts[-1]] = value


def _get_dotted(data: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        data = data[part]
    return data


def _check_key(key: Any, where: str) -> str:
    """A dotted config key that exists in :class:`TrainConfig` and is not reserved."""
    defaults = TrainConfig().to_dict()
    if not isinstance(key, str):
        raise ValueError(f"{where}: keys must be config keys such as ppo.n_epochs, got {key!r}")
    try:
        value = _get_dotted(defaults, key)
    except (KeyError, TypeError):
        raise ValueError(f"{where}: {key!r} is not a training config key (see configs/ppo.yaml)") from None
    if isinstance(value, dict):
        raise ValueError(f"{where}: {key!r} is a section; name one of its keys, such as {key}.{next(iter(value))}")
    if key in RESERVED_KEYS:
        raise ValueError(f"{where}: {key!r} is set by the sweep itself (seeds, budget, --cpus-per-trial), not searched")
    return key


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "x".join(_format_value(v) for v in value)
    return str(value)


def configuration_name(overrides: dict[str, Any]) -> str:
    """``key=value,...`` of a configuration (``base`` when it sets nothing); lists are joined by ``x``."""
    if not overrides:
        return "base"
    return ",".join(f"{key.split('.')[-1]}={_format_value(value)}" for key, value in overrides.items())


def run_folder_name(configuration: str, seed: int) -> str:
    """The run folder of a trial: its configuration's name made safe for a path, and its seed."""
    return f"{re.sub(r'[^A-Za-z0-9._=,+-]', '_', configuration)}__seed{seed}"


def _sampler(key: str, spec: Any):
    """A Ray Tune sampler from ``{loguniform: [low, high]}`` and its kind."""
    from ray import tune

    where = f"search.random.{key}"
    if not (isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in DISTRIBUTIONS):
        raise ValueError(f"{where} must be one of {{{': ..., '.join(DISTRIBUTIONS)}: ...}}, got {spec!r}")
    kind, args = next(iter(spec.items()))
    if kind == "choice":
        if not isinstance(args, list) or not args:
            raise ValueError(f"{where}: choice needs a non-empty list of values, got {args!r}")
        return tune.choice(args)
    ok = isinstance(args, list) and len(args) == 2 and all(isinstance(a, int | float) for a in args)
    if not ok or not args[0] < args[1] or (kind == "loguniform" and args[0] <= 0):
        raise ValueError(f"{where}: {kind} needs [low, high] with low < high{' and low > 0' * (kind == 'loguniform')}")
    if kind == "randint":
        if not all(is_int(a) for a in args):
            raise ValueError(f"{where}: randint needs integer bounds, got {args!r}")
        return tune.randint(args[0], args[1] + 1)  # both bounds included, as written
    return {"uniform": tune.uniform, "loguniform": tune.loguniform}[kind](float(args[0]), float(args[1]))


def _configurations(search: Any) -> list[Configuration]:
    if search is None:
        search = {}
    if not isinstance(search, dict):
        raise ValueError(f"search must be a mapping with grid, random, samples, sample_seed; got {search!r}")
    unknown = sorted(set(search) - {"grid", "random", "samples", "sample_seed"})
    if unknown:
        raise ValueError(f"unknown key search.{unknown[0]}; accepted: grid, random, samples, sample_seed")
    grid = search.get("grid") or {}
    if not isinstance(grid, dict):
        raise ValueError(f"search.grid must map config keys to lists of values, got {grid!r}")
    for key, values in grid.items():
        _check_key(key, "search.grid")
        if not isinstance(values, list) or not values:
            raise ValueError(f"search.grid.{key} must be a non-empty list of values, got {values!r}")
    points = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
    random_space = search.get("random") or {}
    samples = search.get("samples", 0)
    if not (is_int(samples) and 0 <= samples <= MAX_TRIALS):
        raise ValueError(f"search.samples must be an int in 0..{MAX_TRIALS}, got {samples!r}")
    if not isinstance(random_space, dict):
        raise ValueError(f"search.random must map config keys to distributions, got {random_space!r}")
    if bool(random_space) != bool(samples):
        raise ValueError("search.random and search.samples go together: a space to draw from and how many draws")
    sample_seed = search.get("sample_seed", 0)
    if not (is_int(sample_seed) and 0 <= sample_seed <= MAX_SEED):
        raise ValueError(f"search.sample_seed must be an int in 0..{MAX_SEED}, got {sample_seed!r}")
    samplers = {}
    for key, spec in random_space.items():
        _check_key(key, "search.random")
        if key in grid:
            raise ValueError(f"search: {key!r} is both in the grid and random")
        samplers[key] = _sampler(key, spec)
    if samplers:
        import numpy as np

        rng = np.random.default_rng(sample_seed)
        draws = []
        for _ in range(samples):
            draw = {}
            for key, sampler in samplers.items():
                value = sampler.sample(random_state=rng)
                draw[key] = value.item() if hasattr(value, "item") else value
            draws.append(draw)
        points = [{**point, **draw} for point in points for draw in draws]
    configurations = [Configuration(configuration_name(point), point) for point in points]
    names = [c.name for c in configurations]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"search: two configurations are both {duplicate!r}; give the grid distinct values")
    return configurations


def parse_sweep(data: Any, where: str = "sweep") -> Sweep:
    """Validates a sweep file's contents (see ``configs/sweep.yaml``); every trial's config is checked here,
    before Ray starts.

    Raises:
        ValueError: one line naming the first problem.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping of {', '.join(TOP_KEYS)}, got {data!r}")
    unknown = sorted(str(key) for key in set(data) - set(TOP_KEYS))
    if unknown:
        raise ValueError(f"unknown sweep key {unknown[0]}; accepted: {', '.join(TOP_KEYS)}")
    name = data.get("name")
    if name is not None and not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name)):
        raise ValueError(f"name must be a folder name of letters, digits, '.', '_', '-', got {name!r}")
    base = data.get("base") or {}
    if not isinstance(base, dict):
        raise ValueError(f"base must be a mapping of training config keys (see configs/ppo.yaml), got {base!r}")
    for key in RESERVED_KEYS:
        if key in base:
            raise ValueError(f"base.{key} is set by the sweep itself (seeds, budget, --cpus-per-trial)")
    _from_dict(TrainConfig, copy.deepcopy(base), "")  # unknown keys name themselves
    seeds = data.get("seeds", [0, 1, 2])
    if is_int(seeds) and 1 <= seeds <= MAX_TRIALS:
        seeds = list(range(seeds))
    if not (isinstance(seeds, list) and seeds and all(is_int(s) and 0 <= s <= MAX_SEED for s in seeds)):
        raise ValueError(f"seeds must be a count or a non-empty list of ints in 0..{MAX_SEED}, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds!r}")
    budget = data.get("budget")
    if not isinstance(budget, dict) or set(budget) - {"total_timesteps", "max_minutes"} or not budget:
        raise ValueError(f"budget must be a mapping of total_timesteps and/or max_minutes, got {budget!r}")
    retries = data.get("retries", 2)
    if not (is_int(retries) and 0 <= retries <= 100):
        raise ValueError(f"retries must be an int in 0..100, got {retries!r}")
    sweep = Sweep(
        name=name,
        base=base,
        configurations=_configurations(data.get("search")),
        seeds=seeds,
        total_timesteps=budget.get("total_timesteps", TrainConfig.total_timesteps),
        max_minutes=budget.get("max_minutes"),
        retries=retries,
        early_stopping=_early_stopping(data.get("early_stopping")),
        statistics=_statistics(data.get("statistics")),
        source=copy.deepcopy(data),
    )
    trials = len(sweep.configurations) * len(seeds)
    if trials > MAX_TRIALS:
        raise ValueError(f"the sweep has {trials:,} trials (configurations x seeds); at most {MAX_TRIALS:,}")
    for configuration in sweep.configurations:
        try:
            sweep.trial_config(configuration, seeds[0], 1)
        except ValueError as error:
            raise ValueError(f"configuration {configuration.name!r}: {error}") from None
    if sweep.early_stopping and sweep.total_timesteps is None:
        raise ValueError("early_stopping needs budget.total_timesteps (ASHA's rungs are in timesteps)")
    return sweep


def _early_stopping(spec: Any) -> dict[str, Any] | None:
    if spec is None or spec is False:
        return None
    if not isinstance(spec, dict) or set(spec) - {"grace_timesteps", "reduction_factor"}:
        raise ValueError(f"early_stopping must be null or a mapping of grace_timesteps, reduction_factor; got {spec!r}")
    grace = spec.get("grace_timesteps")
    factor = spec.get("reduction_factor", 2)
    if not (is_int(grace) and grace >= 1):
        raise ValueError(f"early_stopping.grace_timesteps must be an int >= 1, got {grace!r}")
    if not (isinstance(factor, int | float) and math.isfinite(factor) and factor > 1):
        raise ValueError(f"early_stopping.reduction_factor must be a number > 1, got {factor!r}")
    return {"grace_timesteps": grace, "reduction_factor": factor}


def _statistics(spec: Any) -> dict[str, int]:
    spec = {"reps": 10_000, "seed": 0, **(spec or {})}
    if set(spec) - {"reps", "seed"}:
        raise ValueError(f"statistics must be a mapping of reps, seed; got {spec!r}")
    if not (is_int(spec["reps"]) and 1 <= spec["reps"] <= 1_000_000):
        raise ValueError(f"statistics.reps must be an int in 1..1,000,000, got {spec['reps']!r}")
    if not (is_int(spec["seed"]) and 0 <= spec["seed"] <= MAX_SEED):
        raise ValueError(f"statistics.seed must be an int in 0..{MAX_SEED}, got {spec['seed']!r}")
    return spec


def load_sweep(path: str | os.PathLike) -> Sweep:
    """Reads and validates a sweep file.

    Raises:
        ValueError: missing or unreadable file, bad YAML, or any bad key or value (see :func:`parse_sweep`).
    """
    return parse_sweep(read_yaml(path, "sweep"), f"sweep {str(path)!r}")


# --------------------------------------------------------------------------------------------------
# A trial (runs in a Ray worker)
# --------------------------------------------------------------------------------------------------
def _node() -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    return {"node_id": context.get_node_id(), "hostname": socket.gethostname(), "pid": os.getpid()}


def _read_record(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / TRIAL_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _metrics(row: dict[str, float], run: str, node: dict[str, Any]) -> dict[str, Any]:
    """What a trial reports to Tune: a curve row, its run folder and the node that ran it."""
    return {**row, "run": run, "node_id": node["node_id"], "hostname": node["hostname"]}


def _record_attempt(run_dir: Path, record: dict[str, Any], resumed_from: int) -> None:
    """Appends this attempt (node, process, the step it starts from) to ``record`` and writes it to the run
    folder's ``trial.json``."""
    record["attempts"].append({**_node(), "from_timesteps": resumed_from, "started": time.time()})
    atomic_write(run_dir / TRIAL_FILE, json.dumps(record, indent=2) + "\n")


def _step(checkpoint: Path) -> int:
    return int(checkpoint.stem.split("_")[1])


def _latest_checkpoint(run_dir: Path) -> Path | None:
    """The run folder's checkpoint of the most steps (each is whole: written atomically), if any."""
    checkpoints = list((run_dir / "checkpoints").glob("step_*.zip"))
    return max(checkpoints, key=_step) if checkpoints else None


def _restore(checkpoint, run_dir: Path) -> Path:
    """The run-folder checkpoint a Tune checkpoint stands for, put back from the Tune copy if the run folder
    lacks it (another machine's folder, or a lost file)."""
    with checkpoint.as_directory() as folder:
        folder = Path(folder)
        zips = sorted(folder.glob("step_*.zip"))
        if len(zips) != 1:
            raise RuntimeError(f"Tune checkpoint {folder} holds {len(zips)} step_*.zip files, expected 1")
        target = run_dir / "checkpoints" / zips[0].name
        target.parent.mkdir(parents=True, exist_ok=True)
        for name in ("config.yaml", "command.txt", CURVE_FILE):
            if not (run_dir / name).is_file() and (folder / name).is_file():
                atomic_write(run_dir / name, (folder / name).read_bytes())
        if not target.is_file():
            atomic_write(target, zips[0].read_bytes())
    return target


def run_trial(params: dict[str, Any]) -> None:
    """The Tune trainable: one (configuration, seed) of a sweep, trained by :func:`yacht_lab.training.train`.

    ``params["trial"]`` holds the run folder's name (``run``), the ``configuration``, the ``seed``, the full training
    ``config`` and the ``sweep_dir``. Each curve row is reported to Tune (its metrics, the node) and each
    checkpoint with it; a restarted trial resumes from its newest checkpoint (see the module's "Fault
    tolerance").
    """
    from ray import tune

    from yacht_lab.training import train

    spec = params["trial"]
    trial = {key: spec[key] for key in ("run", "configuration", "seed")}
    sweep_dir = Path(spec["sweep_dir"])
    config = validate(_from_dict(TrainConfig, copy.deepcopy(spec["config"]), ""))
    run_dir = sweep_dir / RUNS / trial["run"]
    if (run_dir / "model.zip").is_file():
        # The run finished (train() writes model.zip last) but Tune did not hear of it: the attempt died, or the
        # sweep was interrupted, between the run's end and its last report. Report the end; train nothing again.
        final = read_curve(run_dir / CURVE_FILE, curve_fields(config))[-1]
        tune.report(_metrics(final, trial["run"], _node()))
        return
    # Resume from the newest whole checkpoint: Tune's last one, or a newer one in the run folder (the attempt
    # died between saving it and reporting it); with none, start afresh, keeping the record of the attempts.
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        _restore(checkpoint, run_dir)
    resume = _latest_checkpoint(run_dir)
    record = _read_record(run_dir) or {"trial_id": tune.get_context().get_trial_id(), **trial, "attempts": []}
    if resume is None and run_dir.exists():
        shutil.rmtree(run_dir)
    step = _step(resume) if resume is not None else 0
    node = _node()
    state = {"recorded": False}

    def report(row: dict[str, float], saved: Path | None) -> None:
        if not state["recorded"]:  # the folder exists now (train() made it for a new run)
            _record_attempt(run_dir, record, step)
            state["recorded"] = True
        metrics = _metrics(row, trial["run"], node)
        if saved is None:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory() as folder:
            shutil.copy2(saved, folder)
            for name in ("config.yaml", "command.txt", CURVE_FILE):
                if (run_dir / name).is_file():
                    shutil.copy2(run_dir / name, folder)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))

    command = f"sweep.py trial {trial['run']} of {sweep_dir}" + (f", resumed from {resume.name}" if resume else "")
    train(config, sweep_dir / RUNS, resume=resume, command=command, progress=False, name=trial["run"], report=report)


# --------------------------------------------------------------------------------------------------
# The sweep (the driver)
# --------------------------------------------------------------------------------------------------
@dataclass
class SweepOutcome:
    """What :func:`run_sweep` ends with: the folder, each trial's status, and the summary if the sweep is over."""

    folder: Path
    statuses: dict[str, str]
    summary: dict[str, Any] | None
    table: str | None

    @property
    def interrupted(self) -> bool:
        return any(status == "pending" for status in self.statuses.values())

    @property
    def failed(self) -> list[str]:
        return [run for run, status in self.statuses.items() if status == "error"]


def _progress_callback(metric: str, total_timesteps: int | None, say):
    from ray import tune

    class ProgressLines(tune.Callback):
        """One line per evaluation of a trial, and one when a trial ends, fails or restarts. (A checkpoint saved
        between two evaluations is reported with the last row again: that row is not printed twice.)"""

        def __init__(self) -> None:
            self.printed: dict[str, int] = {}

        def on_trial_result(self, iteration, trials, trial, result, **info):
            run = trial.config["trial"]["run"]
            if self.printed.get(run) == result["timesteps"]:
                return
            self.printed[run] = result["timesteps"]
            value = result.get(metric)
            shown = f"{value:.2f}% of optimal" if metric == "percent_of_optimal" else f"win rate {value:.3f}"
            budget = f"/{total_timesteps:,}" if total_timesteps else ""
            say(
                f"[{run}] {int(result['timesteps']):,}{budget} steps, {result['wall_minutes']:.1f} min: {shown} "
                f"(node {result.get('hostname', '?')}:{str(result.get('node_id', '?'))[:8]})"
            )

        def on_trial_complete(self, iteration, trials, trial, **info):
            say(f"[{trial.config['trial']['run']}] done")

        def on_trial_recover(self, iteration, trials, trial, **info):
            say(f"[{trial.config['trial']['run']}] its worker failed: restarting from its last checkpoint")

        def on_trial_error(self, iteration, trials, trial, **info):
            say(f"[{trial.config['trial']['run']}] failed for good: see {trial.path}/error.txt")

    return ProgressLines()


def _trial_params(sweep: Sweep, folder: Path, cpus_per_trial: int) -> list[dict[str, Any]]:
    params = []
    for configuration in sweep.configurations:
        for seed in sweep.seeds:
            run = run_folder_name(configuration.name, seed)
            config = sweep.trial_config(configuration, seed, cpus_per_trial)
            params.append(
                {
                    "run": run,
                    "configuration": configuration.name,
                    "seed": seed,
                    "config": config.to_dict(),
                    "sweep_dir": str(folder),
                }
            )
    return params


def save_sweep(folder: Path, sweep: Sweep, settings: dict[str, Any]) -> None:
    """``sweep_spec.yaml``: the sweep file as read and the settings it runs with (what ``--resume`` reads)."""
    atomic_write(folder / SWEEP_FILE, yaml.safe_dump({"sweep": sweep.source, "settings": settings}, sort_keys=False))


def load_saved_sweep(folder: Path) -> tuple[Sweep, dict[str, Any]]:
    """The sweep and settings saved in a sweep folder.

    Raises:
        ValueError: not a sweep folder.
    """
    path = folder / SWEEP_FILE
    if not path.is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} is not a sweep folder (no {SWEEP_FILE})")
    try:
        data = yaml.safe_load(path.read_text())
        return parse_sweep(data["sweep"], str(path)), dict(data["settings"])
    except (yaml.YAMLError, KeyError, TypeError) as error:
        detail = f"no {error}" if isinstance(error, KeyError) else " ".join(str(error).split())
        raise ValueError(f"cannot resume: {str(path)!r} is damaged ({detail})") from None


def run_sweep(
    sweep: Sweep,
    storage: str | os.PathLike,
    *,
    address: str | None = None,
    cpus_per_trial: int = 1,
    max_concurrent: int | None = None,
    resume: str | os.PathLike | None = None,
    say=None,
) -> SweepOutcome:
    """Runs (or, with ``resume=<sweep folder>``, continues) a sweep on Ray Tune and writes its results.

    Starts a local Ray (no dashboard), or joins ``address`` (``auto`` or ``HOST:PORT``). A new sweep's folder
    is ``<storage>/<name>`` (``name`` from the sweep, else ``sweep__<unix time>``). ``say(line)`` shows the
    progress lines (default: printed and flushed at once).

    Returns:
        The outcome. When every trial has ended (finished, stopped early by ASHA, or failed for good) the
        results are written; an interrupted sweep (Ctrl-C: Tune saves its state) writes none.

    Raises:
        ValueError: the folder exists (a new sweep) or is not a sweep folder (resume), Ray cannot start or
            connect.
    """
    if say is None:  # progress lines as they come, even into a file or a pipe

        def say(line: str) -> None:
            print(line, flush=True)

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    import ray
    from ray import tune

    if resume is not None:
        folder = Path(resume).resolve()
    else:
        folder = (Path(storage) / (sweep.name or f"sweep__{int(time.time())}")).resolve()
        if folder.exists():
            raise ValueError(f"sweep folder '{folder}' exists: continue it with --resume, or choose another name")
    settings = {"cpus_per_trial": cpus_per_trial, "max_concurrent": max_concurrent}
    params = _trial_params(sweep, folder, cpus_per_trial)
    trainable = tune.with_resources(run_trial, {"cpu": cpus_per_trial})
    try:
        if address is None:
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        where = f" at {address}" if address else ""
        raise ValueError(f"cannot start Ray{where}: {' '.join(str(error).split())}") from None
    try:
        callback = _progress_callback(sweep.metric, sweep.total_timesteps, say)
        if resume is not None:
            tuner = tune.Tuner.restore(str(folder), trainable, resume_unfinished=True, resume_errored=True)
        else:
            folder.mkdir(parents=True)
            save_sweep(folder, sweep, settings)
            scheduler = None
            if sweep.early_stopping:
                from ray.tune.schedulers import ASHAScheduler

                scheduler = ASHAScheduler(
                    time_attr="timesteps",
                    max_t=sweep.total_timesteps,
                    grace_period=sweep.early_stopping["grace_timesteps"],
                    reduction_factor=sweep.early_stopping["reduction_factor"],
                )
            tuner = tune.Tuner(
                trainable,
                param_space={"trial": tune.grid_search(params)},  # one grid point per trial, in order
                tune_config=tune.TuneConfig(
                    metric=sweep.metric,
                    mode="max",
                    scheduler=scheduler,
                    max_concurrent_trials=max_concurrent,
                    trial_dirname_creator=tune_trial_dirname,
                ),
                run_config=tune.RunConfig(
                    name=folder.name,
                    storage_path=str(folder.parent),
                    failure_config=tune.FailureConfig(max_failures=sweep.retries),
                    checkpoint_config=tune.CheckpointConfig(num_to_keep=2),
                    callbacks=[callback],
                    verbose=0,
                ),
            )
        tuner.fit()
    finally:
        ray.shutdown()
    return collect(sweep, folder)


def tune_trial_dirname(trial) -> str:
    """Tune's own folder of a trial (its results and checkpoints): ``tune__<run folder>``."""
    return f"tune__{trial.config['trial']['run']}"


def trial_statuses(folder: Path) -> dict[str, str]:
    """Each trial's status, by run folder: ``finished``, ``stopped early`` (ASHA), ``error`` or ``pending``
    (not ended: an interrupted sweep), from Tune's saved state and the run folders."""
    from ray.tune import ExperimentAnalysis

    statuses = {}
    for trial in ExperimentAnalysis(str(folder)).trials:
        run = trial.config["trial"]["run"]
        if trial.status == "ERROR":
            statuses[run] = "error"
        elif trial.status == "TERMINATED":
            statuses[run] = "finished" if (folder / RUNS / run / "model.zip").is_file() else "stopped early"
        else:
            statuses[run] = "pending"
    return statuses


def collect(sweep: Sweep, folder: Path) -> SweepOutcome:
    """The trials' statuses; once every trial has ended, the results: ``results.json``, ``results.png`` and
    ``results.txt`` in the sweep folder (written atomically)."""
    from yacht_lab.sweep_report import TrialResult, format_table, render_curves, summarise

    statuses = trial_statuses(folder)
    if any(status == "pending" for status in statuses.values()):
        return SweepOutcome(folder, statuses, None, None)
    trials, listing = [], []
    for configuration in sweep.configurations:
        for seed in sweep.seeds:
            run = run_folder_name(configuration.name, seed)
            run_dir = folder / RUNS / run
            curve_path = run_dir / CURVE_FILE
            config = sweep.trial_config(configuration, seed, 1)
            curve = read_curve(curve_path, curve_fields(config)) if curve_path.is_file() else []
            record_path = run_dir / TRIAL_FILE
            record = json.loads(record_path.read_text()) if record_path.is_file() else {"attempts": []}
            attempts = record["attempts"]
            node = f"{attempts[-1]['hostname']}:{attempts[-1]['node_id'][:8]}" if attempts else None
            status = statuses.get(run, "pending")
            trials.append(
                TrialResult(configuration.name, seed, f"{RUNS}/{run}", status, curve, node, max(len(attempts), 1))
            )
            listing.append(
                {
                    "run": f"{RUNS}/{run}",
                    "configuration": configuration.name,
                    "seed": seed,
                    "status": status,
                    "final": curve[-1] if curve else None,
                    "attempts": attempts,
                }
            )
    summary = summarise(
        trials,
        sweep.metric,
        [c.name for c in sweep.configurations],
        reps=sweep.statistics["reps"],
        seed=sweep.statistics["seed"],
    )
    summary["sweep"] = {
        "name": folder.name,
        "configurations": [dataclasses.asdict(c) for c in sweep.configurations],
        "seeds": sweep.seeds,
        "budget": {"total_timesteps": sweep.total_timesteps, "max_minutes": sweep.max_minutes},
        "base": sweep.base,
    }
    summary["trials"] = listing
    table = format_table(summary)
    atomic_write(folder / RESULTS_JSON, json.dumps(summary, indent=2) + "\n")
    atomic_write(folder / RESULTS_PNG, render_curves(summary, "png"))
    atomic_write(folder / RESULTS_TXT, table + "\n")
    return SweepOutcome(folder, statuses, summary, table)
