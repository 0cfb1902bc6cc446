"""Seed and hyperparameter sweeps of PPO training on Ray Tune; ``sweep.py`` is the thin script over this.

A sweep file (``configs/sweep.yaml`` documents every key) holds a base training config (the keys of
``configs/ppo.yaml``), a search space (a grid over any config keys, plus optional random samples), the seeds
and the per-trial budget. Every configuration runs with every seed: each (configuration, seed) is one Tune
trial, and each trial is :func:`yacht_lab.training.sb3.ppo.train`, the function ``train.py`` runs, writing a normal run
folder (``config.yaml``, ``learning_curve.csv``, ``checkpoints/``, ``model.zip``) that ``evaluate.py`` and
``train.py --resume`` accept.

The sweep folder ``<storage>/<name>/`` is Tune's experiment folder, and also holds ``sweep.yaml`` (the sweep
as run), ``runs/<configuration>__seed<k>/`` (the trials' run folders) and, at the end, ``results.json``,
``results.png`` and ``results.txt`` (:mod:`yacht_lab.sweep.report`: mean, IQM and stratified-bootstrap CIs over
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

The sweep file is read and checked by :mod:`yacht_lab.sweep.spec` (:func:`~yacht_lab.sweep.spec.load_sweep`,
without Ray); this module runs it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from yacht_env.util import atomic_write
from yacht_lab.ray_cluster import check_ray_address, restore_signals
from yacht_lab.sweep.spec import Sweep, parse_sweep
from yacht_lab.training.config import TrainConfig, dataclass_from_dict, validate
from yacht_lab.training.runs import CURVE_FILE, read_curve
from yacht_lab.training.sb3.tasks import curve_fields
from yacht_lab.training.yaml_reader import read_yaml

#: The file the sweep is saved in, inside its folder (what ``--resume`` reads).
SWEEP_FILE = "sweep_spec.yaml"
#: The trials' run folders, inside the sweep folder.
RUNS = "runs"
#: The results, inside the sweep folder.
RESULTS_JSON, RESULTS_PNG, RESULTS_TXT = "results.json", "results.png", "results.txt"
#: Provenance of a trial, inside its run folder: the Tune trial, and each attempt's node and process.
TRIAL_FILE = "trial.json"


def run_folder_name(configuration: str, seed: int) -> str:
    """The run folder of a trial: its configuration's name made safe for a path, and its seed."""
    return f"{re.sub(r'[^A-Za-z0-9._=,+-]', '_', configuration)}__seed{seed}"


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
    folder's ``trial.json``.
    """
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
    lacks it (another machine's folder, or a lost file).
    """
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
    """The Tune trainable: one (configuration, seed) of a sweep, trained by :func:`yacht_lab.training.sb3.ppo.train`.

    ``params["trial"]`` holds the run folder's name (``run``), the ``configuration``, the ``seed``, the full training
    ``config`` and the ``sweep_dir``. Each curve row is reported to Tune (its metrics, the node) and each
    checkpoint with it; a restarted trial resumes from its newest checkpoint (see the module's "Fault
    tolerance").
    """
    from ray import tune

    from yacht_lab.training.sb3.ppo import train

    spec = params["trial"]
    trial = {key: spec[key] for key in ("run", "configuration", "seed")}
    sweep_dir = Path(spec["sweep_dir"])
    config = validate(dataclass_from_dict(TrainConfig, copy.deepcopy(spec["config"]), ""))
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
        """Whether the sweep was stopped before every trial finished."""
        return any(status == "pending" for status in self.statuses.values())

    @property
    def failed(self) -> list[str]:
        """The trials that failed."""
        return [run for run, status in self.statuses.items() if status == "error"]


def _progress_callback(metric: str, total_timesteps: int | None, say):
    from ray import tune

    class ProgressLines(tune.Callback):
        """One line per evaluation of a trial, and one when a trial ends, fails or restarts.

        A checkpoint saved between two evaluations is reported with the last row again: that row is not printed twice.
        """

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
    text = yaml.dump({"sweep": sweep.source, "settings": settings}, Dumper=_PlainDumper, sort_keys=False)
    atomic_write(folder / SWEEP_FILE, text)


class _PlainDumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that writes a value shared twice out twice: the reader refuses aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        """Every value is written out."""
        return True


def load_saved_sweep(folder: Path) -> tuple[Sweep, dict[str, Any]]:
    """The sweep and settings saved in a sweep folder.

    Raises:
        ValueError: not a sweep folder.
    """
    path = folder / SWEEP_FILE
    if not path.is_file():
        raise ValueError(f"cannot resume: {str(folder)!r} is not a sweep folder (no {SWEEP_FILE})")
    try:
        data = read_yaml(path, "saved sweep")
    except ValueError as error:
        raise ValueError(f"cannot resume: {str(path)!r} is damaged ({error})") from None
    try:
        return parse_sweep(data["sweep"], str(path)), dict(data["settings"])
    except (KeyError, TypeError) as error:
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

    check_ray_address(address)  # before Ray is imported: a wrong address is said in seconds
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
    # Ray installs SIGINT/SIGTERM handlers in this process and leaves them after shutdown: put them back then, so
    # the caller's process is as it was (the CLI exits anyway; a program that runs a sweep and goes on does not).
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if address is None:
            ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as error:  # Ray's start-up failures (connection, timeouts, its own errors): one line each
        restore_signals(handlers)
        where = f" at {address}" if address else ""
        raise ValueError(f"cannot start Ray{where}: {' '.join(str(error).split()) or type(error).__name__}") from None
    try:
        callback = _progress_callback(sweep.metric, sweep.total_timesteps, say)
        if resume is not None:
            try:
                tuner = tune.Tuner.restore(str(folder), trainable, resume_unfinished=True, resume_errored=True)
            except Exception as error:  # a damaged or foreign tuner.pkl: Ray's own pickles, see docs/security.md
                raise ValueError(
                    f"cannot resume '{folder}': Ray Tune cannot read its saved state (tuner.pkl): "
                    f"{' '.join(str(error).split())[:300] or type(error).__name__}"
                ) from None
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
        restore_signals(handlers)
    return collect(sweep, folder)


def tune_trial_dirname(trial) -> str:
    """Tune's own folder of a trial (its results and checkpoints): ``tune__<run folder>``."""
    return f"tune__{trial.config['trial']['run']}"


def trial_statuses(folder: Path) -> dict[str, str]:
    """Each trial's status, by run folder: ``finished``, ``stopped early`` (ASHA), ``error`` or ``pending``
    (not ended: an interrupted sweep), from Tune's saved state and the run folders.
    """
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
    ``results.txt`` in the sweep folder (written atomically).
    """
    from yacht_lab.sweep.report import TrialResult, format_table, render_curves, summarise

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
