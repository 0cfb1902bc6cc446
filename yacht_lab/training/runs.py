"""A training run's folder and its files: claiming a new folder, resuming an old one, the learning curve.

A run folder holds ``config.yaml`` (the exact config), ``command.txt``, ``model.zip``, ``checkpoints/step_<N>.zip``,
``learning_curve.csv``, ``learning_curve.png`` and ``tb/`` (TensorBoard). Every file is written atomically
(:mod:`yacht_env.util`): a kill at any moment leaves each file whole, old or new, and at worst a hidden
``.<name>.<pid>-<hex>.tmp`` file that no glob of the real files matches and that the next run in the folder (a
resume) removes. The trainer that fills it is :mod:`yacht_lab.training.sb3.ppo`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from yacht_env.util import atomic_output, atomic_write, check_writable, folder_lock, remove_stale_temps
from yacht_lab.training.config import TrainConfig, from_dict
from yacht_lab.training.yaml_reader import read_yaml

#: The learning curve of a solo run: its mean score (95% CI half-width), % of the optimal expectation, mean
#: regret against the solver, and the training speed.
CURVE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "mean_score",
    "score_ci95",
    "percent_of_optimal",
    "mean_regret",
    "steps_per_second",
)
#: The learning curve of a versus run: the learner's win rate against its opponents (ties split, with its 95% CI
#: half-width over deals), its mean score (CI half-width, % of the optimal solo expectation) and its mean margin
#: over the mean opponent. No regret column: the solver's regret is that of solo games.
VERSUS_CURVE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "win_rate",
    "win_rate_ci95",
    "mean_score",
    "score_ci95",
    "percent_of_optimal",
    "mean_margin",
    "steps_per_second",
)
CURVE_FILE = "learning_curve.csv"
PLOT_FILE = "learning_curve.png"
#: Temporary files of versions before util's naming ("step_N.tmp.zip" even matched ``step_*.zip``).
LEGACY_TEMPS = ("*.tmp.zip", "learning_curve.tmp", "learning_curve.tmp.png")


# --------------------------------------------------------------------------------------------------
# The folder: claiming a new one, resuming an old one
# --------------------------------------------------------------------------------------------------
def run_name(config: TrainConfig) -> str:
    """CleanRL-style: ``Yacht-v0__<rules>__ppo__<seed>__<unix time>`` (``YachtVersus-v0__...`` at a table,
    ``...__distill__...`` for the policy-iteration distillation, ``...__jax_ppo__...`` for the JAX trainer).
    """
    return f"{config.env_id}__{config.rules}__{config.trainer}__{config.seed}__{int(time.time())}"


def claim_run_folder(
    output_dir: str | os.PathLike, config: TrainConfig, name: str | None = None
) -> tuple[Path, list[Path]]:
    """Creates a new, empty run folder in ``output_dir`` (made if missing) and returns it.

    The folder is created exclusively (``mkdir`` without ``exist_ok``): a second run started in the same
    second gets ``<name>-2`` (then ``-3``, ...), never the same folder. Creating it is also the check that
    ``output_dir`` can be written, made before any slow work. An explicit ``name`` (a sweep's trial) is that
    folder exactly, and an existing one is an error.

    Returns:
        The run folder, and every folder created for it (outermost first), for :func:`release_run_folder`.

    Raises:
        ValueError: ``output_dir`` is a file, under a file, or not writable.
    """
    output_dir = Path(output_dir)
    created: list[Path] = []
    folder = output_dir
    try:
        for folder in [*reversed(output_dir.parents), output_dir]:
            if not folder.is_dir():
                folder.mkdir()
                created.append(folder)
        if name is not None:
            folder = output_dir / name
            try:
                folder.mkdir()
            except FileExistsError:
                release_run_folder(created)
                raise ValueError(f"cannot create run folder '{folder}': it exists") from None
            return folder, [*created, folder]
        name = run_name(config)
        for attempt in range(1, 1000):
            folder = output_dir / (name if attempt == 1 else f"{name}-{attempt}")
            with contextlib.suppress(FileExistsError):
                folder.mkdir()
                return folder, [*created, folder]
        raise ValueError(f"cannot create a run folder in '{output_dir}': {name} and 998 more names are taken")
    except OSError as error:
        release_run_folder(created)
        problem = f"'{folder}' is a file" if isinstance(error, FileExistsError) else error.strerror or str(error)
        raise ValueError(f"cannot create a run folder in --output-dir '{output_dir}': {problem}") from None


def release_run_folder(created: list[Path]) -> None:
    """Removes the folders :func:`claim_run_folder` created, innermost first, as long as they are empty."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:  # not empty (something else writes there now): leave it and its parents
            return


def run_folder_lock(run_dir: Path):
    """Holds the run folder exclusively while a run trains in it (a new run or a resumed one), with
    :func:`yacht_env.util.folder_lock`.

    Two ``train.py --resume`` of the same run (or a resume of a run still training) would otherwise overwrite each
    other's checkpoints, model and curve. Where ``fcntl`` does not exist (Windows), runs are not locked.

    Raises:
        ValueError: another process trains in the folder now.
    """
    return folder_lock(
        run_dir,
        f"run folder '{run_dir}' is in use: another training process is running in it now (wait for it to stop, or "
        "resume from a copy of the folder)",
    )


def run_folder_of(checkpoint: Path) -> Path:
    """The run folder of ``<run>/checkpoints/step_N.zip`` or ``<run>/model.zip``."""
    return checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else checkpoint.parent


#: What a resumed run may change of its config: its budget.
BUDGET_KEYS = ("total_timesteps", "max_minutes")


def check_resumed_config(config: TrainConfig, checkpoint: Path) -> None:
    """A resumed run trains its own config: ``config`` must be the run's ``config.yaml`` but for its budget
    (:data:`BUDGET_KEYS`), as :func:`resume_config` gives it.

    Raises:
        ValueError: the run config beside the checkpoint is unreadable, or ``config`` differs from it (naming the first
            key).
    """
    saved = run_folder_of(checkpoint) / "config.yaml"
    if not saved.is_file():  # a checkpoint outside a run folder: no record to keep, its loader checks the file
        return
    run, given = _flat(from_dict(read_yaml(saved, "run config")).to_dict()), _flat(config.to_dict())
    for key in sorted(set(run) | set(given)):
        if key not in BUDGET_KEYS and run.get(key) != given.get(key):
            raise ValueError(
                f"cannot resume {str(checkpoint)!r} with another config: the run's {key} is {run.get(key)!r}, this "
                f"config's {given.get(key)!r}; a resumed run keeps its own config (resume_config gives it), only the "
                "budget can change"
            )


def _flat(data: dict[str, Any]) -> dict[str, Any]:
    """A config's data with its sections' keys as ``section.key``."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{inner}": item for inner, item in value.items()})
        else:
            flat[key] = value
    return flat


def resumed_curve(curve_path: Path, timesteps: int, fields: tuple[str, ...]) -> list[dict[str, float]]:
    """The learning-curve rows a run resumed at ``timesteps`` keeps: those up to that step.

    Raises:
        ValueError: the curve is damaged before its last row (see :func:`read_curve`).
    """
    if not curve_path.is_file():
        return []
    return [row for row in read_curve(curve_path, fields) if row["timesteps"] <= timesteps]


def start_run_folder(
    run_dir: Path, config: TrainConfig, command: str, rows: list[dict[str, float]], fields: tuple[str, ...]
) -> None:
    """Writes the start of a run (new or resumed): ``config.yaml``, ``command.txt``, the curve so far.

    Called once nothing can fail any more but the writes themselves: a resume that cannot start changes
    nothing. Also removes the temporary files of an earlier process killed in this folder.

    Raises:
        ValueError: the folder cannot be written (checked by a real write before any file changes).
    """
    check_writable(run_dir / "config.yaml")
    for folder in (run_dir, run_dir / "checkpoints"):
        remove_stale_temps(folder, legacy=LEGACY_TEMPS)
    (run_dir / "checkpoints").mkdir(exist_ok=True)
    atomic_write(run_dir / "config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False))
    write_curve(run_dir / CURVE_FILE, rows, fields)
    commands = run_dir / "command.txt"
    previous = commands.read_text() if commands.is_file() else ""
    if previous and not previous.endswith("\n"):
        previous += "\n"
    atomic_write(commands, previous + command + "\n")


# --------------------------------------------------------------------------------------------------
# Files: the model, the learning curve and its plot, all written atomically (util.atomic_output)
# --------------------------------------------------------------------------------------------------
#: What a checkpoint or model write must leave free on its disk: one that would leave less is refused, not written
#: (checkpoints are kept by count, ``keep_checkpoints``, whatever their size).
MIN_FREE_BYTES = 64 * 2**20


def check_free_space(folder: Path, needed: int, what: str) -> None:
    """Refuses to write ``what`` (about ``needed`` bytes) into ``folder`` where less than ``needed`` +
    :data:`MIN_FREE_BYTES` is free (:func:`shutil.disk_usage`; a disk it cannot ask is left to the write itself).

    Raises:
        ValueError: too little space, in one line.
    """
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < needed + MIN_FREE_BYTES:
        mib = 2**20
        raise ValueError(
            f"not enough free space to write {what} in {str(folder)!r}: {free / mib:,.1f} MiB free, about "
            f"{needed / mib:,.1f} MiB needed and {MIN_FREE_BYTES // mib} MiB kept free; free some space (or keep fewer "
            "checkpoints, keep_checkpoints) and resume"
        )


def save_atomically(model, path: Path) -> None:
    """Saves an SB3 model so that ``path`` is never half-written (and has the usual file mode)."""
    with atomic_output(path) as temp, open(temp, "wb") as file:
        model.save(file)  # a file object: SB3 would add ".zip" to a path that ends in ".tmp"


def write_curve(path: Path, rows: list[dict[str, float]], fields: tuple[str, ...]) -> None:
    """Writes the whole learning curve atomically (a header of ``fields`` and one row per evaluation)."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, text.getvalue())


def read_curve(path: Path, fields: tuple[str, ...] = CURVE_FIELDS) -> list[dict[str, float]]:
    """The rows of a learning curve of columns ``fields`` (:data:`VERSUS_CURVE_FIELDS` for a versus run).

    A torn last row (one without its line end, or with too few fields: a run of an older version killed
    while appending it) is dropped. ``timesteps`` and ``seed`` read as ints, the rest as floats.

    Raises:
        ValueError: not a learning curve (another header), or a bad row before the last.
    """
    text = Path(path).read_text()
    lines = list(csv.reader(io.StringIO(text, newline="")))
    if not lines:
        return []
    if tuple(lines[0]) != fields:
        raise ValueError(f"'{path}' is not a learning curve: its header is {','.join(lines[0])!r}")
    rows = []
    for number, values in enumerate(lines[1:], start=2):
        last = number == len(lines)
        try:
            if len(values) != len(fields) or (last and not text.endswith("\n")):
                raise ValueError
            rows.append({k: _value(k, v) for k, v in zip(fields, values, strict=True)})
        except ValueError:
            if last:
                break
            raise ValueError(f"'{path}' line {number} is not a learning-curve row: {','.join(values)!r}") from None
    return rows


def _value(field: str, text: str) -> float:
    """A curve cell: ``timesteps`` and ``seed`` as ints (as they were written; an older curve's ``0.0`` seed too), the
    rest as floats.
    """
    if field == "timesteps":
        return int(text)
    if field == "seed":
        value = float(text)
        if not value.is_integer():
            raise ValueError
        return int(value)
    return float(text)


def plot_curves(png_path: Path, rows: list[dict[str, float]], y_key: str, ci_key: str, y_label: str, decorate) -> None:
    """The learning-curve PNG every kind of run draws: ``y_key`` (with its CI band) against wall-clock minutes
    and against timesteps; ``decorate(fig, axes)`` adds the reference lines and titles.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    try:
        for ax, x_key, x_label in (
            (axes[0], "wall_minutes", "wall-clock minutes"),
            (axes[1], "timesteps", "environment steps"),
        ):
            if rows:
                x = np.array([row[x_key] for row in rows])
                y = np.array([row[y_key] for row in rows])
                ci = np.array([row[ci_key] for row in rows])
                ax.plot(x, y, marker="o", markersize=3, label="PPO (deterministic)")
                ax.fill_between(x, y - ci, y + ci, alpha=0.25)
            ax.set_xlabel(x_label)
            ax.set_ylabel(y_label)
            ax.grid(alpha=0.3)
        decorate(fig, axes)
        fig.tight_layout()
        with atomic_output(png_path) as temp:
            fig.savefig(temp, format="png", dpi=110)  # the format named: the temporary file ends in ".tmp"
    finally:
        plt.close(fig)
