"""PPO training for Yacht: a new run or a resumed one, trained by sb3-contrib's ``MaskablePPO``.

``train.py`` (``yacht-train``) is the thin script over this and over :mod:`yacht_lab.distill` (a config with a
``distill`` section). The config is :mod:`yacht_lab.config`; the network is :mod:`yacht_lab.model`; what the run
trains on and how it is measured, solo, at a table or against a league, is its task (:func:`task_for`:
:mod:`yacht_lab.tasks`, :mod:`yacht_lab.league`); the run folder and its files are :mod:`yacht_lab.runs`; what SB3
calls during training is :mod:`yacht_lab.callbacks`.

A run trains on the native vector env through the SB3 adapter (:class:`yacht_env.sb3.YachtSB3VecEnv`): solo
``Yacht-v0`` games, or, with ``opponents`` in the config, one seat at tables of ``YachtVersus-v0`` against them (a
*versus run*, whose curve is the win rate against them), or against a league's members. The agent sees only the env's
observation and (scaled) reward: the exact solver is used for reporting (``% of optimal``, regret), never in training.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import CallbackList

from yacht_lab.callbacks import (
    Abort,
    CurveCallback,
    EntropyScheduleCallback,
    ReportCallback,
    RunCheckpointCallback,
    SpeedCallback,
    StopCallback,
    StopFlag,
)
from yacht_lab.config import MAX_SEED, TrainConfig, load_config, validated
from yacht_lab.league import LeagueTask
from yacht_lab.model import linear_schedule, ppo_kwargs, start_model
from yacht_lab.runs import (
    CURVE_FILE,
    PLOT_FILE,
    claim_run_folder,
    release_run_folder,
    resumed_curve,
    run_folder_lock,
    run_folder_of,
    save_atomically,
    start_run_folder,
)
from yacht_lab.tasks import ScaledReward, SoloTask, TableTask

__all__ = ["Abort", "load_checkpoint", "make_vec_env", "resume_config", "task_for", "train"]


def task_for(config: TrainConfig) -> SoloTask:
    """The task of a PPO config: :class:`~yacht_lab.league.LeagueTask` with a league, :class:`TableTask` if it names
    opponents, else :class:`SoloTask`.
    """
    if config.league is not None:
        return LeagueTask(config)
    return TableTask(config) if config.opponents else SoloTask(config)


def make_vec_env(config: TrainConfig) -> ScaledReward:
    """The training VecEnv of a PPO config (its task's env): solo games, or the tables with opponents or a league."""
    return task_for(config).make_env()


def resume_config(checkpoint: str | os.PathLike, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The config of the run a checkpoint belongs to (its ``config.yaml``), with a new budget if given.

    Only ``total_timesteps`` and ``max_minutes`` may be overridden: a run keeps its own settings.

    Raises:
        ValueError: no such checkpoint, no run config beside it, or another override.
    """
    path = Path(checkpoint)
    if not path.is_file():
        raise ValueError(f"cannot resume: checkpoint {str(checkpoint)!r} not found")
    saved = run_folder_of(path) / "config.yaml"
    if not saved.is_file():
        raise ValueError(f"cannot resume: {str(checkpoint)!r} is not in a run folder (no {str(saved)!r})")
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    fixed = sorted(set(overrides) - {"total_timesteps", "max_minutes"})
    if fixed:
        raise ValueError(f"a resumed run keeps its own config; only the budget can change, not {fixed[0]}")
    return load_config(saved, overrides)


def load_checkpoint(checkpoint: Path, env, config: TrainConfig, tensorboard_dir: str | None):
    """A checkpoint loaded to continue its run: the run's learning-rate schedule, a reproducible seed.

    Nothing in the file is unpickled: the model is rebuilt with the run's (validated) config and the network
    the checkpoint names (one of the known policy classes, :func:`yacht_agents.ppo.build_model`), then gets the
    checkpoint's parameters and optimizer state (read with torch's ``weights_only``) and ``num_timesteps``.

    Raises:
        ValueError: not a ``MaskablePPO`` checkpoint (corrupt, or something else).
    """
    from yacht_agents.ppo import build_model  # also a checkpoint saved before 0.2 (policy class agents.policy)

    try:
        model = build_model(
            checkpoint, env, optimizer=True, device=config.device, **ppo_kwargs(config, tensorboard_dir)
        )
    except Exception as error:  # noqa: BLE001 - a corrupt file fails in many ways; one clear error
        detail = " ".join(str(error).split()) or type(error).__name__
        raise ValueError(f"cannot resume from {str(checkpoint)!r}: not a MaskablePPO checkpoint ({detail})") from None
    # The run's own schedule over its whole budget (SB3 pickles the callable; rebuild it from config).
    model.learning_rate = linear_schedule(config.ppo.learning_rate, config.ppo.learning_rate_final)
    model._setup_lr_schedule()
    # A checkpoint holds no random state: seed the continuation from (seed, step) so that resuming the same
    # checkpoint twice gives the same run (modulo numpy's 32-bit seed range).
    model.set_random_seed((config.seed + model.num_timesteps) % (MAX_SEED + 1))
    return model


# --------------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------------
def train(
    config: TrainConfig,
    output_dir: str | os.PathLike = "runs",
    resume: str | os.PathLike | None = None,
    command: str | None = None,
    progress: bool = True,
    name: str | None = None,
    report=None,
    rerun: str = "yacht-train",
) -> Path:
    """Trains a new run (or resumes one: pass :func:`resume_config`'s config) and returns its folder.

    The folder holds ``config.yaml`` (the exact config), ``command.txt``, ``model.zip``,
    ``checkpoints/step_<N>.zip``, ``learning_curve.csv``, ``learning_curve.png`` and ``tb/``
    (TensorBoard). A new run claims its folder first (created exclusively, so two runs never share one,
    and an output folder that cannot be written fails at once); if anything fails before training starts,
    the claimed folder is removed again, and a resumed run changes nothing in its folder: a bad config or a
    corrupt checkpoint leaves no trace. Ctrl-C (SIGINT) or SIGTERM saves ``checkpoints/step_<N>.zip`` and
    ``model.zip`` between two PPO updates and returns; a second one, or one before training starts, raises
    :class:`Abort` (a ``KeyboardInterrupt``) at once. ``resume=<that checkpoint>`` continues in the same
    folder with the same learning-rate schedule.

    ``name`` makes the new run's folder exactly ``output_dir/name`` (a sweep's trial) instead of a fresh
    :func:`run_name`. ``report(row, checkpoint)``, if given, is called with each learning-curve row as it is
    written and the checkpoint saved at that point, if any (see :class:`ReportCallback`). ``rerun`` is the
    command that the line printed after a stop tells to continue with (``<rerun> --resume <checkpoint>``).

    Raises:
        ValueError: a bad config, an output folder that cannot be written, a missing or corrupt
            checkpoint, no budget left.
        Abort: see above.
    """
    import torch

    validated(config)
    if config.distill is not None:
        raise ValueError("a config with a distill section trains by yacht_lab.distill.train_distill, not by PPO")
    task = task_for(config)
    with contextlib.ExitStack() as held, StopFlag() as stop:
        run_dir, claimed = _run_folder(output_dir, config, name, resume)
        env = None
        try:
            held.enter_context(run_folder_lock(run_dir))  # until the run ends: no second process trains here
            torch.set_num_threads(config.torch_threads)
            env = task.make_env()
            model, rows = _model_and_curve(config, env, run_dir, resume, task)
            task.attach(run_dir, model, resumed=resume is not None)  # a league: restored and seated
            remaining = config.total_timesteps - model.num_timesteps
            if remaining <= 0:
                raise ValueError(
                    f"the checkpoint is at {model.num_timesteps} steps, the run's budget is total_timesteps="
                    f"{config.total_timesteps}; pass a larger --total-timesteps to continue"
                )
            task.prepare()
            # Everything is in place: only now does the run folder get written.
            start_run_folder(run_dir, config, command or shlex.join(sys.argv), rows, task.fields)
        except BaseException:
            if env is not None:
                env.close()
            release_run_folder(claimed)
            raise
        try:
            run = (config, task, model, run_dir, rows, stop)
            path, interrupted = _learn(*run, remaining, resume, report, progress)
        finally:
            env.close()
    if interrupted:
        print(f"interrupted: saved {path}; continue with: {rerun} --resume {path}", file=sys.stderr)
    return run_dir


def _run_folder(output_dir, config: TrainConfig, name: str | None, resume: Path | None) -> tuple[Path, list[Path]]:
    """The run's folder and what was created for it: a new one claimed, or a resumed checkpoint's (nothing new)."""
    if resume is None:
        return claim_run_folder(output_dir, config, name)
    resume = Path(resume)
    if not resume.is_file():
        raise ValueError(f"cannot resume: checkpoint {str(resume)!r} not found")
    return run_folder_of(resume), []


def _model_and_curve(config: TrainConfig, env, run_dir: Path, resume, task) -> tuple[Any, list[dict[str, float]]]:
    """The model to train (new, from ``init``, or the checkpoint's) and the curve rows it already has."""
    tensorboard_dir = str(run_dir / "tb")
    if resume is None:
        return start_model(config, env, tensorboard_dir), []
    model = load_checkpoint(Path(resume), env, config, tensorboard_dir)
    return model, resumed_curve(run_dir / CURVE_FILE, model.num_timesteps, task.fields)


def _learn(config: TrainConfig, task, model, run_dir: Path, rows, stop, remaining: int, resume, report, progress):
    """Trains ``model`` for ``remaining`` steps with the run's callbacks, saves and plots; returns the last
    checkpoint and whether a signal stopped the run.
    """
    start = time.time()
    wall_offset = rows[-1]["wall_minutes"] * 60 if rows else 0.0
    speed = SpeedCallback(config.total_timesteps, progress)
    curve = CurveCallback(task, run_dir / CURVE_FILE, rows, start, wall_offset, speed)
    checkpoints = RunCheckpointCallback(
        run_dir / "checkpoints", config.checkpoint_every_timesteps, on_save=task.checkpoint
    )
    stopper = StopCallback(stop, config.max_minutes, start, speed)
    entropy = EntropyScheduleCallback(config.ppo.ent_coef, config.ppo.ent_coef_final, config.total_timesteps)
    # The order matters: at a rollout's start evaluate, then the task's own (a league: fold the results, take a
    # snapshot, new weights), then checkpoint, then report both; at each step update the bar, then look for a
    # stop; at a rollout's end set the coming update's entropy bonus and measure the speed.
    reporter = ReportCallback(report, curve, checkpoints) if report is not None else None
    callbacks = CallbackList(
        [curve, *task.callbacks(), checkpoints, *([reporter] if reporter else []), speed, stopper, entropy]
    )
    stop.arm()
    try:
        model.learn(remaining, callback=callbacks, reset_num_timesteps=resume is None, tb_log_name="ppo")
        path = checkpoints.save()
        if not stopper.interrupted and curve.last_eval != model.num_timesteps:
            curve.evaluate()
        task.plot(run_dir / CURVE_FILE, run_dir / PLOT_FILE)
        save_atomically(model, run_dir / "model.zip")  # last: a run folder with model.zip is a complete run
        if reporter is not None:
            reporter.flush()
    finally:
        speed.close()
    return path, stopper.interrupted
