"""PPO training for Yacht: a new run or a resumed one, trained by sb3-contrib's ``MaskablePPO``.

:func:`yacht_lab.train` runs it for a config with neither a ``distill`` nor a ``jax`` section (``train.py``,
``yacht-train``, is the thin script over that). The config is :mod:`yacht_lab.training.config`; the network is
:mod:`yacht_lab.training.sb3.model`; what the run trains on and how it is measured, solo, at a table or against a
league, is its task (:func:`task_for`: :mod:`yacht_lab.training.sb3.tasks`, :mod:`yacht_lab.training.sb3.league`); the
run folder and its files are :mod:`yacht_lab.training.runs`; what SB3 calls during training is
:mod:`yacht_lab.training.sb3.callbacks`; the run's folder, checkpoints, signals and resume are its
:class:`~yacht_lab.training.run_context.RunContext`, to which :class:`PPOState` says how to save and load the model.

A run trains on the native vector env through the SB3 adapter (:class:`yacht_env.sb3.YachtSB3VecEnv`): solo
``Yacht-v0`` games, or, with ``opponents`` in the config, one seat at tables of ``YachtVersus-v0`` against them (a
*versus run*, whose curve is the win rate against them), or against a league's members. The agent sees only the env's
observation and (scaled) reward: the exact solver is used for reporting (``% of optimal``, regret), never in training.
"""

from __future__ import annotations

import os
from pathlib import Path

from stable_baselines3.common.callbacks import CallbackList

from yacht_lab.training.config import MAX_SEED, TrainConfig, validated
from yacht_lab.training.run_context import Abort, RunContext, resume_config
from yacht_lab.training.runs import CURVE_FILE, PLOT_FILE, save_atomically
from yacht_lab.training.sb3.callbacks import (
    CurveCallback,
    EntropyScheduleCallback,
    FiniteCallback,
    ReportCallback,
    RunCheckpointCallback,
    SpeedCallback,
    StopCallback,
)
from yacht_lab.training.sb3.league import LeagueTask
from yacht_lab.training.sb3.model import linear_schedule, ppo_kwargs, start_model
from yacht_lab.training.sb3.tasks import ScaledReward, SoloTask, TableTask
from yacht_lab.training.trainers import require_trainer

__all__ = ["Abort", "PPOState", "load_checkpoint", "make_vec_env", "resume_config", "task_for", "train"]


def task_for(config: TrainConfig) -> SoloTask:
    """The task of a PPO config: :class:`~yacht_lab.training.sb3.league.LeagueTask` with a league, :class:`TableTask` if
    it names opponents, else :class:`SoloTask`.
    """
    if config.league is not None:
        return LeagueTask(config)
    return TableTask(config) if config.opponents else SoloTask(config)


def make_vec_env(config: TrainConfig) -> ScaledReward:
    """The training VecEnv of a PPO config (its task's env): solo games, or the tables with opponents or a league."""
    return task_for(config).make_env()


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


class PPOState:
    """SB3 PPO's :class:`~yacht_lab.training.run_context.TrainerState`: the ``MaskablePPO`` model, saved as its zip (and
    the task's own state beside it: a league's), loaded by :func:`load_checkpoint`.
    """

    checkpoint_suffix = ".zip"

    def __init__(self, config: TrainConfig, env, tensorboard_dir: str, task: SoloTask) -> None:
        self.config, self.env, self.tensorboard_dir, self.task = config, env, tensorboard_dir, task
        self.model = None

    def progress(self) -> int:
        """The model's environment steps."""
        return self.model.num_timesteps

    def save_checkpoint(self, path: Path) -> None:
        """The model's zip, then what the task keeps beside it."""
        save_atomically(self.model, path)
        self.task.checkpoint(self.model.num_timesteps)

    def load_checkpoint(self, path: Path) -> None:
        """The model of a checkpoint, to continue its run (:func:`load_checkpoint`)."""
        self.model = load_checkpoint(path, self.env, self.config, self.tensorboard_dir)


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
    on_stop=None,
) -> Path:
    """Trains a new run (or resumes one: pass :func:`resume_config`'s config) and returns its folder.

    The folder holds ``config.yaml`` (the exact config), ``command.txt``, ``model.zip``,
    ``checkpoints/step_<N>.zip``, ``learning_curve.csv``, ``learning_curve.png`` and ``tb/``
    (TensorBoard). The run's :class:`~yacht_lab.training.run_context.RunContext` claims a new run's folder first
    (created exclusively, so two runs never share one, and an output folder that cannot be written fails at once) and
    locks it; if anything fails before training starts, the claimed folder is removed again, and a resumed run changes
    nothing in its folder: a bad config or a corrupt checkpoint leaves no trace. Ctrl-C (SIGINT) or SIGTERM saves
    ``checkpoints/step_<N>.zip`` and ``model.zip`` between two PPO updates and returns; a second one, or one before
    training starts, raises :class:`Abort` (a ``KeyboardInterrupt``) at the next safe point of the run
    (:mod:`yacht_lab.training.signals`), or ends the process within two seconds. ``resume=<that checkpoint>`` (or its
    run folder) continues in the same folder with the same learning-rate schedule.

    ``name`` makes the new run's folder exactly ``output_dir/name`` (a sweep's trial) instead of a fresh
    :func:`run_name`. ``report(row, checkpoint)``, if given, is called with each learning-curve row as it is
    written and the checkpoint saved at that point, if any (see :class:`ReportCallback`). ``rerun`` is the
    command that the line printed after a stop tells to continue with (``<rerun> --resume <checkpoint>``);
    ``on_stop(signum)``, if given, is called when a signal stopped the run (after it saved). A run whose parameters
    stop being finite (NaN or inf: a learning rate far too large) ends with one ``ValueError`` line, without saving
    them.

    Raises:
        ValueError: a bad config (or another trainer's: :func:`yacht_lab.train` chooses), an output folder that
            cannot be written, a missing or corrupt checkpoint, no budget left.
        Abort: see above.
    """
    import torch

    validated(config)
    require_trainer(config, "ppo")
    task = task_for(config)
    options = {"resume": resume, "name": name, "command": command, "rerun": rerun, "progress": progress}
    options["on_stop"] = on_stop
    with RunContext(config, output_dir, fields=task.fields, **options) as run:
        torch.set_num_threads(config.torch_threads)
        env = task.make_env()
        run.callback(env.close)
        state = PPOState(config, env, str(run.dir / "tb"), task)
        rows = run.restore(state)
        if run.checkpoint is None:
            state.model = start_model(config, env, state.tensorboard_dir)
        run.check_signals()  # a safe point after the build (a signal is only noted in its handler)
        task.attach(run.dir, state.model, resumed=run.checkpoint is not None)  # a league: restored and seated
        task.prepare()
        run.start(rows)  # everything is in place: only now does the run folder get written
        _learn(config, task, state, run, report)
    return run.dir


def _learn(config: TrainConfig, task, state: PPOState, run: RunContext, report) -> None:
    """Trains the model to the end of the run's budget with the run's callbacks (or until it should stop), then saves
    the last checkpoint, the plot and ``model.zip``.
    """
    model = state.model
    speed = SpeedCallback(run)
    curve = CurveCallback(task, run, speed)
    checkpoints = RunCheckpointCallback(run, state)
    finite = FiniteCallback()
    stopper = StopCallback(run, speed)
    entropy = EntropyScheduleCallback(config.ppo.ent_coef, config.ppo.ent_coef_final, config.total_timesteps)
    # The order matters: at a rollout's start evaluate, then the task's own (a league: fold the results, take a
    # snapshot, new weights), then checkpoint, then report both; at each step update the bar, then look for a
    # stop; at a rollout's end set the coming update's entropy bonus and measure the speed.
    reporter = ReportCallback(report, curve) if report is not None else None
    callbacks = CallbackList(
        [finite, curve, *task.callbacks(), checkpoints, *([reporter] if reporter else []), speed, stopper, entropy]
    )
    remaining = config.total_timesteps - model.num_timesteps
    try:
        model.learn(remaining, callback=callbacks, reset_num_timesteps=run.checkpoint is None, tb_log_name="ppo")
        finite.check()  # the last update's parameters, before they are saved
        run.end(state)
        if not stopper.interrupted and not curve.evaluated:  # a stop during an evaluation: not a second one
            curve.evaluate()
        task.plot(run.dir / CURVE_FILE, run.dir / PLOT_FILE)
        run.check_free_space(state, "model.zip")
        save_atomically(model, run.dir / "model.zip")  # last: a run folder with model.zip is a complete run
        if reporter is not None:
            reporter.flush()
    finally:
        speed.close()
