"""The run context every trainer runs in: its folder, its lock, its files, its checkpoints, Ctrl-C and resume.

A trainer (:mod:`yacht_lab.training.sb3.ppo`'s SB3 PPO, :mod:`yacht_lab.training.sb3.distill`,
:mod:`yacht_lab.training.jax.ppo`) opens a :class:`RunContext` and supplies only how to save and load its own state
(:class:`TrainerState`); the context owns the rest of the run-folder contract (:mod:`yacht_lab.training.runs`):

- the folder: a new run claims ``<output_dir>/<run name>`` exclusively
  (:func:`~yacht_lab.training.runs.claim_run_folder`), a resumed one reuses its checkpoint's; either is locked
  (:func:`~yacht_lab.training.runs.run_folder_lock`) until the run ends, so a second process never trains in it;
- nothing is written before :meth:`RunContext.start`: if anything fails before (a bad checkpoint, a build that
  fails, a Ctrl-C), a new run's claimed folder is removed again and a resumed run's folder is left as it was;
- :meth:`~RunContext.start` writes ``config.yaml`` (the exact config), appends the command to ``command.txt`` and
  writes the curve kept so far; :meth:`~RunContext.add_rows` rewrites ``learning_curve.csv`` atomically;
- checkpoints are ``checkpoints/<unit>_<N><suffix>`` (``step_4096.zip``, ``step_4096.npz``, ``iteration_3.zip``),
  saved every ``checkpoint_every`` units (:meth:`~RunContext.checkpoint_if_due`) and at the run's end or stop
  (:meth:`~RunContext.end`); the newest ``keep_checkpoints`` of the config are kept, older ones removed;
- Ctrl-C (SIGINT) or SIGTERM (:mod:`yacht_lab.training.signals`: the handlers only take note, and the context acts
  at its safe points: entering, :meth:`~RunContext.restore`, :meth:`~RunContext.start`, every poll of
  :attr:`~RunContext.should_stop`, :meth:`~RunContext.add_rows`, :meth:`~RunContext.checkpoint_if_due`, leaving, and
  :meth:`~RunContext.check_signals`): before :meth:`~RunContext.start`, :class:`Abort` at the next safe point; after
  it, a first signal only asks the trainer to stop (:attr:`~RunContext.should_stop`, polled between updates), the
  trainer then calls :meth:`~RunContext.end`, which saves a checkpoint, and the context prints one line on its way
  out: where the checkpoint is and the command that continues it, or, for a trainer that cannot checkpoint, that the
  run saved none (and calls ``on_stop``: the command line exits 130 or 143); a second signal raises :class:`Abort` at
  the next safe point. One that must end the run and meets no safe point within two seconds (a compilation, a
  compiled update, a native call that does not return) ends the process in one line (:class:`StopFlag`);
- resume: :func:`resume_config` reads a checkpoint's run config (``--resume`` takes a checkpoint or a run folder, whose
  newest checkpoint it continues: :func:`resume_checkpoint`); a config other than the run's but for its budget is
  refused (:func:`check_resumed_config`), and :meth:`~RunContext.restore` hands the checkpoint
  to the trainer's state and keeps the curve's rows up to its step.

A trainer, top to bottom (see :func:`yacht_lab.training.jax.ppo.train_jax` for a whole one)::

    with RunContext(config, output_dir, fields=CURVE_FIELDS, **options) as run:   # resume, command, progress, ...
        state = MyState(config)              # a TrainerState: fresh, or ...
        rows = run.restore(state)            # ... the checkpoint's state, and the curve rows it keeps
        run.start(rows)                      # config.yaml, command.txt, the curve; signals now ask to stop
        while state.progress() < config.total_timesteps and not run.should_stop:
            ...                              # one update
            run.add_rows(evaluation_rows)    # when the trainer evaluates
            run.checkpoint_if_due(state)
        run.end(state)                       # the last checkpoint (at the end, or on a stop)
        save the model files                 # last: a run folder with its model is a complete run
    return run.dir
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from yacht_lab.training.config import TrainConfig, load_config
from yacht_lab.training.runs import (
    BUDGET_KEYS,
    CURVE_FIELDS,
    CURVE_FILE,
    check_free_space,
    check_resumed_config,
    claim_run_folder,
    release_run_folder,
    resumed_curve,
    run_folder_lock,
    run_folder_of,
    start_run_folder,
    write_curve,
)
from yacht_lab.training.schema import budget_steps
from yacht_lab.training.signals import Abort, StopFlag

__all__ = [
    "Abort",
    "RunContext",
    "StopFlag",
    "TrainerState",
    "resume_checkpoint",
    "resume_config",
]


# --------------------------------------------------------------------------------------------------
# What a trainer supplies
# --------------------------------------------------------------------------------------------------
@runtime_checkable
class TrainerState(Protocol):
    """How a trainer saves and loads its state: the one thing it gives its :class:`RunContext`.

    The context names the files, decides when to save (every ``checkpoint_every`` units, at the end, on Ctrl-C or
    SIGTERM), finds the checkpoint to resume from, and keeps the curve; the state only reads and writes itself.

    Attributes:
        checkpoint_suffix: The checkpoint file's suffix, with its dot (``".zip"`` for SB3, ``".npz"`` for JAX): the
            context saves ``checkpoints/<unit>_<N><suffix>`` and resumes only from files of this suffix. ``None``: the
            trainer cannot checkpoint (yet); a stop then says in one line that the run saved no checkpoint, and
            ``--resume`` is refused.

    A trainer whose checkpoint is several files (say an ``.npz`` of arrays and a ``.json`` of metadata) names the
    others from ``path`` (``path.with_suffix(".json")``); the context only ever passes and globs the main one.
    """

    checkpoint_suffix: str | None

    def progress(self) -> int:
        """How far the run is, in the context's unit (environment steps, or a distillation's iterations): the
        ``N`` of the checkpoint saved now, and, on resume, the step up to which the curve's rows are kept.
        """
        ...

    def save_checkpoint(self, path: Path) -> None:
        """Writes everything the run needs to go on to ``path`` (parent folder exists), atomically
        (:func:`yacht_env.util.atomic_output`: a kill leaves the old file or the new one, never a torn one), as data
        rather than pickle where it can. Called between two updates, never in the middle of one.
        """
        ...

    def load_checkpoint(self, path: Path) -> None:
        """Restores the state from a file :meth:`save_checkpoint` wrote (the run's config is the one saved beside it,
        and the state was built from it). Writes nothing.

        Raises:
            ValueError: not such a checkpoint (corrupt, another trainer's, another network), in one line.
        """
        ...


# --------------------------------------------------------------------------------------------------
# Resume lookup
# --------------------------------------------------------------------------------------------------
def checkpoint_number(path: Path) -> int:
    """The ``N`` of ``<unit>_<N>.<suffix>`` (-1: not a checkpoint's name)."""
    digits = path.stem.rpartition("_")[2]
    return int(digits) if digits.isdigit() else -1


def checkpoints_of(run_dir: Path) -> list[Path]:
    """The checkpoints of a run folder, oldest first (by their number): ``checkpoints/<unit>_<N>.<suffix>``."""
    found = [p for p in (run_dir / "checkpoints").glob("*_*.*") if p.is_file() and checkpoint_number(p) >= 0]
    return sorted(found, key=lambda p: (checkpoint_number(p), p.name))


def resume_checkpoint(path: str | os.PathLike) -> Path:
    """The checkpoint ``--resume`` names: a checkpoint file, or a run folder (its newest checkpoint).

    Raises:
        ValueError: no such file or folder, or a run folder without a checkpoint (a run stopped before its first).
    """
    path = Path(path)
    if path.is_dir():
        if not (path / "config.yaml").is_file():
            raise ValueError(
                f"cannot resume: {str(path)!r} is a folder but not a run folder (no config.yaml): give a run folder or "
                "one of its checkpoint files"
            )
        found = checkpoints_of(path)
        if not found:
            raise ValueError(
                f"cannot resume: run folder {str(path)!r} has no checkpoint to resume from: start a new run"
            )
        return found[-1]
    if path.exists() and not path.is_file():
        raise ValueError(f"cannot resume: {str(path)!r} is not a regular file (a checkpoint is one)")
    if not path.is_file():
        raise ValueError(f"cannot resume: checkpoint {str(path)!r} not found")
    return path


def resume_config(checkpoint: str | os.PathLike, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config of the run a checkpoint (or a run folder: :func:`resume_checkpoint`) belongs to, its
    ``config.yaml``, with a new budget if given.

    Only ``total_timesteps`` and ``max_minutes`` may be overridden: a run keeps its own settings.

    Raises:
        ValueError: no such checkpoint, no run config beside it, or another override.
    """
    path = resume_checkpoint(checkpoint)
    saved = run_folder_of(path) / "config.yaml"
    if not saved.is_file():
        raise ValueError(f"cannot resume: {str(checkpoint)!r} is not in a run folder (no {str(saved)!r})")
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    fixed = sorted(set(overrides) - set(BUDGET_KEYS))
    if fixed:
        raise ValueError(f"a resumed run keeps its own config; only the budget can change, not {fixed[0]}")
    return load_config(saved, overrides)


# --------------------------------------------------------------------------------------------------
# The context
# --------------------------------------------------------------------------------------------------
class RunContext:
    """A run's folder, lock, files, checkpoints and signals, for the length of a ``with`` block (module docstring).

    Args:
        config: The run's (validated) config; ``config.yaml`` is written from it.
        output_dir: Where a new run's folder is claimed (made if missing).
        resume: A checkpoint, or a run folder (its newest checkpoint), to continue in its own folder.
        name: A new run's folder is exactly ``output_dir/name`` (a sweep's trial) instead of a fresh run name.
        command: The line appended to ``command.txt`` (default: this process's command line).
        fields: The columns of ``learning_curve.csv``.
        rerun: The command the line printed after a stop tells to continue with (``<rerun> --resume <checkpoint>``).
        unit: What ``TrainerState.progress`` counts and checkpoints are named by (``step``, ``iteration``).
        checkpoint_every: Units between two checkpoints (default: ``config.checkpoint_every_timesteps``).
        budget: The units the run trains for (default: ``config.total_timesteps`` rounded up to whole updates,
            :func:`yacht_lab.training.schema.budget_steps`): a resumed checkpoint at or past it is refused.
        resumable: ``False`` for a trainer whose runs are not continued (the distillation): its checkpoints are
            models, and the line after a stop does not offer ``--resume``.
        progress: Show progress (:meth:`progress_bar`, and the trainer's own lines).
        on_stop: Called with the signal's number when a signal stopped the run (after its checkpoint is saved): the
            command line exits 128 + that number (130 for Ctrl-C) rather than 0.

    Raises:
        ValueError: on creating or entering it: an output folder that cannot be written, a missing checkpoint, a
            config that is not the resumed run's (:func:`check_resumed_config`), a folder another process trains in.
        Abort: a signal before :meth:`start`.
    """

    def __init__(
        self,
        config: TrainConfig,
        output_dir: str | os.PathLike = "runs",
        *,
        resume: str | os.PathLike | None = None,
        name: str | None = None,
        command: str | None = None,
        fields: tuple[str, ...] = CURVE_FIELDS,
        rerun: str = "yacht-train",
        unit: str = "step",
        checkpoint_every: int | None = None,
        budget: int | None = None,
        resumable: bool = True,
        progress: bool = True,
        on_stop=None,
    ) -> None:
        self.config, self.output_dir, self.name = config, output_dir, name
        self.command = command if command is not None else shlex.join(sys.argv)
        self.fields, self.rerun, self.unit, self.resumable = fields, rerun, unit, resumable
        self.show_progress = progress
        self.checkpoint_every = checkpoint_every if checkpoint_every is not None else config.checkpoint_every_timesteps
        self.budget = budget if budget is not None else budget_steps(config)
        #: The checkpoint this run continues from (``None``: a new run).
        self.checkpoint: Path | None = resume_checkpoint(resume) if resume is not None else None
        if self.checkpoint is not None:
            check_resumed_config(config, self.checkpoint)
        self.on_stop = on_stop
        #: The run folder (set on entering).
        self.dir: Path = Path()
        #: The curve's rows so far (:meth:`restore`'s, then :meth:`add_rows`').
        self.rows: list[dict[str, float]] = []
        #: The newest checkpoint saved by this process, and the progress of the newest checkpoint of the run (a
        #: resumed run's: its checkpoint's; a new run counts from 0).
        self.last_checkpoint: Path | None = None
        self.last_saved = 0
        self.stop = StopFlag(on_abort=self._abandon)
        self.started_at: float | None = None
        self._wall_offset = 0.0
        self._ended_without_checkpoint: int | None = None
        self._claimed: list[Path] = []
        self._held = contextlib.ExitStack()

    # -- entering and leaving -------------------------------------------------------------------------
    def __enter__(self) -> RunContext:
        self._held.enter_context(self.stop)
        try:
            self.stop.check()  # a signal noted before (train.py's own handlers, while it imported the trainer)
            if self.checkpoint is None:
                self.dir, self._claimed = claim_run_folder(self.output_dir, self.config, self.name)
            else:
                self.dir = run_folder_of(self.checkpoint)
            self._held.enter_context(run_folder_lock(self.dir))  # until the run ends: no second process trains here
        except BaseException:
            self._leave(failed=True)
            raise
        return self

    def __exit__(self, kind, error, trace) -> None:
        aborting = kind is None and self._aborting()
        self._leave(failed=kind is not None or aborting)
        if aborting:  # a signal that asked to quit at once, never met at a safe point inside the block: met here
            raise Abort(aborting)
        if kind is None and self.stop.requested:
            print(self.stopped_line(), file=sys.stderr, flush=True)
            if self.on_stop is not None:
                self.on_stop(self.stop.signum)

    def _aborting(self) -> int | None:
        """The signal of an abort not raised yet (:meth:`check_signals` would raise it), or ``None``."""
        try:
            self.stop.check()
        except Abort as abort:
            return abort.signum
        return None

    def check_signals(self) -> None:
        """A safe point (module docstring): raises the abort a signal asked for, if any; a trainer calls it between
        the long steps of its start (building, compiling).

        Raises:
            Abort: a signal before :meth:`start`, or a second one.
        """
        self.stop.check()

    def _abandon(self) -> None:
        """What the stop watchdog does before it ends the process: a new run that never started leaves no trace."""
        if self.started_at is None:
            release_run_folder(self._claimed)

    def _leave(self, failed: bool) -> None:
        try:
            self._held.close()  # the trainer's resources (callback), the lock, the signal handlers
        finally:
            if failed and self.started_at is None:
                release_run_folder(self._claimed)  # a new run that never started leaves no trace

    def callback(self, function, *args, **kwargs) -> None:
        """Calls ``function(*args, **kwargs)`` when the run ends, however it ends (an env's ``close``)."""
        self._held.callback(function, *args, **kwargs)

    # -- before training --------------------------------------------------------------------------------
    def restore(self, state: TrainerState) -> list[dict[str, float]]:
        """A resumed run: loads the checkpoint into ``state`` and returns the curve's rows up to its progress. A new
        run: nothing to do, no rows. Writes nothing.

        Raises:
            ValueError: the trainer cannot resume, the checkpoint is not its kind (suffix) or not a checkpoint (the
                state's ``load_checkpoint``), no budget left, a damaged curve.
        """
        self.stop.check()
        if self.checkpoint is None:
            return []
        suffix = state.checkpoint_suffix
        if not self.resumable or suffix is None:
            raise ValueError(f"cannot resume {str(self.checkpoint)!r}: this trainer's runs are not resumed")
        if self.checkpoint.suffix != suffix:
            raise ValueError(
                f"cannot resume from {str(self.checkpoint)!r}: this run's checkpoints are {self.unit}_<N>{suffix} files"
            )
        state.load_checkpoint(self.checkpoint)
        progress = state.progress()
        if progress >= self.budget:
            raise ValueError(
                f"the checkpoint is at {progress} steps, the run's budget is {self.budget} (total_timesteps="
                f"{self.config.total_timesteps}); pass a larger --total-timesteps to continue"
            )
        self.last_saved = progress
        return resumed_curve(self.dir / CURVE_FILE, progress, self.fields)

    def start(self, rows: list[dict[str, float]] | None = None) -> None:
        """Writes the run's start, once nothing can fail any more but the writes: ``config.yaml``, ``command.txt``
        (this command appended), the curve so far; from now on a first signal asks to stop (:attr:`should_stop`),
        and :meth:`wall_minutes` counts on from the curve's last row.

        Raises:
            ValueError: the folder cannot be written (checked by a real write before any file changes).
        """
        self.stop.check()  # the last moment a signal aborts a run: nothing is written yet
        self.rows = list(rows or [])
        start_run_folder(self.dir, self.config, self.command, self.rows, self.fields)
        self._wall_offset = 60 * self.rows[-1]["wall_minutes"] if self.rows and "wall_minutes" in self.fields else 0.0
        self.started_at = time.time()
        self.stop.arm()

    # -- while training -------------------------------------------------------------------------------
    def wall_minutes(self) -> float:
        """Minutes of training of the whole run: the resumed curve's last ``wall_minutes``, plus this process's."""
        return (self._wall_offset + time.time() - (self.started_at or time.time())) / 60

    @property
    def stop_requested(self) -> bool:
        """A signal asked the run to stop (a safe point: a second one raises :class:`Abort`)."""
        self.stop.check()
        return self.stop.requested

    @property
    def out_of_time(self) -> bool:
        """``max_minutes`` have passed since :meth:`start` (the limit is per process: a resumed run gets it anew)."""
        limit = self.config.max_minutes
        return limit is not None and self.started_at is not None and time.time() - self.started_at >= 60 * limit

    @property
    def should_stop(self) -> bool:
        """The trainer should end after this update: a signal, or ``max_minutes``."""
        return self.stop_requested or self.out_of_time

    def add_rows(self, *rows: dict[str, float]) -> None:
        """Appends rows to the learning curve and rewrites ``learning_curve.csv`` atomically."""
        self.stop.check()
        self.rows.extend(rows)
        write_curve(self.dir / CURVE_FILE, self.rows, self.fields)

    def checkpoint_path(self, progress: int, suffix: str) -> Path:
        """``checkpoints/<unit>_<progress><suffix>``."""
        return self.dir / "checkpoints" / f"{self.unit}_{progress}{suffix}"

    def save_checkpoint(self, state: TrainerState) -> Path | None:
        """Saves ``state`` now as ``checkpoints/<unit>_<N><suffix>``; returns the path (``None``: the trainer cannot
        checkpoint).
        """
        if state.checkpoint_suffix is None:
            return None
        progress = state.progress()
        path = self.checkpoint_path(progress, state.checkpoint_suffix)
        self.check_free_space(state, f"checkpoints/{path.name}")
        state.save_checkpoint(path)
        self.last_checkpoint, self.last_saved = path, progress
        self._prune(path)
        return path

    def check_free_space(self, state: TrainerState, what: str) -> None:
        """Refuses, in one ``ValueError`` line, to write ``what`` into the run folder (a checkpoint, or the model, which
        a checkpoint holds) where too little space is free (:func:`~yacht_lab.training.runs.check_free_space`): about
        the run's newest checkpoint, or what the state says its checkpoint takes (``checkpoint_bytes()``, if it has
        one), and the margin kept free.
        """
        suffix = state.checkpoint_suffix
        sizes = [path.stat().st_size for path in checkpoints_of(self.dir)[-1:] if path.suffix == suffix]
        estimate = getattr(state, "checkpoint_bytes", None)
        check_free_space(self.dir, max([*sizes, estimate() if estimate is not None else 0]), what)

    def _prune(self, saved: Path) -> None:
        """Keeps the newest ``config.keep_checkpoints`` checkpoints up to ``saved`` (``None``: all); a checkpoint of a
        later step (a run resumed from an older one) is left alone.
        """
        keep = getattr(self.config, "keep_checkpoints", None)
        if keep is None:
            return
        step = checkpoint_number(saved)
        older = [
            path
            for path in checkpoints_of(self.dir)
            if path.suffix == saved.suffix
            and path.name.startswith(f"{self.unit}_")
            and path != saved
            and checkpoint_number(path) < step
        ]
        for path in older[: max(len(older) - (keep - 1), 0)]:
            path.unlink(missing_ok=True)

    def checkpoint_if_due(self, state: TrainerState) -> Path | None:
        """Saves a checkpoint if ``checkpoint_every`` units have passed since the last one (or the run's start);
        returns it, or ``None``.
        """
        self.stop.check()
        if state.progress() - self.last_saved >= self.checkpoint_every:
            return self.save_checkpoint(state)
        return None

    def end(self, state: TrainerState) -> Path | None:
        """The run's last checkpoint, at its end or its stop (unless one was saved at this progress); returns it.

        Raises:
            Abort: a second signal came while it saved (a safe point: the checkpoint is whole).
        """
        progress = state.progress()
        if state.checkpoint_suffix is None:
            self._ended_without_checkpoint = progress
            return None
        if self.last_checkpoint is not None and self.last_saved == progress:
            return self.last_checkpoint
        saved = self.save_checkpoint(state)
        self.stop.check()  # a second signal while it saved: quit now, before the model files
        return saved

    def stopped_line(self) -> str:
        """The one line printed after a stop on a signal: where the run was saved and how to continue it."""
        path = self.last_checkpoint
        if path is None:
            at = self._ended_without_checkpoint
            where = f" at {self.unit} {at:,}" if at is not None else ""
            return f"interrupted{where}: this run saved no checkpoint, so it cannot be resumed (start a new run)"
        if not self.resumable:
            return f"interrupted: saved {path}; this trainer's runs are not resumed (start a new run from its model)"
        return f"interrupted: saved {path}; continue with: {self.rerun} --resume {path}"

    # -- progress -------------------------------------------------------------------------------------
    def progress_bar(self, initial: int = 0):
        """A tqdm bar over the run's budget (steps/s and the time left) from ``initial``, on stderr; ``None`` without
        ``progress``.
        """
        if not self.show_progress:
            return None
        from tqdm import tqdm

        # One speed: the trainer's (set as the postfix, whole updates counted), not tqdm's rate of its own calls.
        return tqdm(
            total=self.budget,
            initial=min(initial, self.budget),
            unit=self.unit,
            unit_scale=True,
            dynamic_ncols=True,
            file=sys.stderr,
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]",
        )


def say(message: str, bar=None) -> None:
    """Prints one line on stderr, through the progress bar if there is one (so that the bar stays whole)."""
    if bar is not None:
        bar.write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr, flush=True)
