"""What SB3 calls during a training run: speed, the entropy schedule, stops, the learning curve, checkpoints and
reports, each over the run's :class:`~yacht_lab.training.run_context.RunContext` (which owns the signals, the files and
the checkpoints' names; see :func:`yacht_lab.training.sb3.ppo.train` for how they are combined, and in which order).
"""

from __future__ import annotations

import time
from pathlib import Path

from stable_baselines3.common.callbacks import BaseCallback

from yacht_lab.training.run_context import Abort, RunContext, StopFlag, TrainerState, say
from yacht_lab.training.sb3.tasks import SoloTask

__all__ = [
    "Abort",
    "CurveCallback",
    "EntropyScheduleCallback",
    "FiniteCallback",
    "ReportCallback",
    "RunCheckpointCallback",
    "SpeedCallback",
    "StopCallback",
    "StopFlag",
]


# --------------------------------------------------------------------------------------------------
# Callbacks (SB3 calls them between PPO's steps and updates; see train() for how they are combined)
# --------------------------------------------------------------------------------------------------
class SpeedCallback(BaseCallback):
    """Measures steps/s over each rollout and its update, and shows the run's progress bar if asked to."""

    def __init__(self, run: RunContext) -> None:
        super().__init__()
        self.run = run
        self.steps_per_second = 0.0  # none measured yet (the untrained policy's row): as the JAX trainer's
        self.bar = None
        self._last: tuple[float, int] = (0.0, 0)

    def _on_training_start(self) -> None:
        self._last = (time.time(), self.model.num_timesteps)
        self.bar = self.run.progress_bar(initial=self.model.num_timesteps)

    def _on_step(self) -> bool:
        if self.bar is not None:
            self.bar.update(min(self.model.num_timesteps, self.bar.total) - self.bar.n)
        return True

    def _on_rollout_end(self) -> None:
        now, steps = time.time(), self.model.num_timesteps
        then, steps_then = self._last
        if now > then:
            self.steps_per_second = (steps - steps_then) / (now - then)
        self._last = (now, steps)
        self.logger.record("time/steps_per_second", self.steps_per_second)
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.steps_per_second:,.0f} steps/s", refresh=False)

    def close(self) -> None:
        """Closes the progress bar."""
        if self.bar is not None:
            self.bar.close()


class FiniteCallback(BaseCallback):
    """Ends the run with one ``ValueError`` line when an update leaves the policy's parameters not finite (NaN or inf:
    a learning rate far too large, say): checked at each rollout's start, before anything evaluates or saves them.
    """

    def _on_rollout_start(self) -> None:
        self.check()

    def check(self) -> None:
        """Raises ``ValueError`` if a parameter of the policy is not finite."""
        import torch

        for name, value in self.model.policy.named_parameters():
            if not bool(torch.isfinite(value).all()):
                raise ValueError(
                    f"training diverged at step {self.model.num_timesteps:,}: the policy's {name} is no longer finite "
                    "(NaN or inf); nothing of it was saved (lower ppo.learning_rate, or resume an earlier checkpoint)"
                )

    def _on_step(self) -> bool:
        return True


class EntropyScheduleCallback(BaseCallback):
    """Sets the entropy bonus of each coming update: linear from ``start`` to ``end`` over the budget.

    SB3 has no schedule for ``ent_coef``; a high bonus early keeps exploring keeps, and it decays with the
    learning rate.
    """

    def __init__(self, start: float, end: float, total_timesteps: int) -> None:
        super().__init__()
        self.start, self.end, self.total_timesteps = start, end, total_timesteps

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        progress = min(self.model.num_timesteps / self.total_timesteps, 1.0)
        self.model.ent_coef = self.start + (self.end - self.start) * progress
        self.logger.record("train/ent_coef", self.model.ent_coef)


class StopCallback(BaseCallback):
    """Stops training when the run should stop (:attr:`RunContext.should_stop`: a signal, or ``max_minutes``)."""

    def __init__(self, run: RunContext, speed: SpeedCallback) -> None:
        super().__init__()
        self.run, self.speed = run, speed
        self.interrupted = False

    def _on_step(self) -> bool:
        if self.run.stop_requested:
            if not self.interrupted:
                self.interrupted = True
                say("stopping: saving a checkpoint (interrupt again to quit at once, without saving)", self.speed.bar)
            return False
        return not self.run.out_of_time


class CurveCallback(BaseCallback):
    """Evaluates the deterministic policy every ``config.eval.every_timesteps`` and writes the learning curve.

    What a row holds comes from the run's task (:mod:`yacht_lab.training.sb3.tasks`: solo score, or win rate at a
    table). Each evaluation rewrites ``learning_curve.csv`` atomically (a kill never leaves a torn row), logs
    ``eval/*`` to TensorBoard and prints one line.
    """

    def __init__(self, task: SoloTask, run: RunContext, speed: SpeedCallback) -> None:
        super().__init__()
        self.task, self.config, self.run, self.speed = task, task.config, run, speed
        self.last_eval: int | None = None
        #: Updates (whole rollouts, each followed by one) of this process, and how many the last evaluation had seen:
        #: a stop asked during an evaluation leaves the policy as evaluated, with steps of a cut rollout counted.
        self.updates, self.evaluated_updates = 0, None

    @property
    def rows(self) -> list[dict[str, float]]:
        """The curve's rows (the run's)."""
        return self.run.rows

    def _on_training_start(self) -> None:
        if not self.rows:  # a new run: the untrained policy is the curve's first point
            self.evaluate()
        # A resumed run keeps the schedule of its curve (every eval.every_timesteps from its last row), so that
        # it evaluates at the steps the run would have evaluated at without the interruption.
        self.last_eval = self.rows[-1]["timesteps"]

    def _on_rollout_start(self) -> None:
        # Called after the previous rollout's update: the policy evaluated here is the one trained on every
        # step counted so far.
        if self.model.num_timesteps - self.last_eval >= self.config.eval.every_timesteps:
            self.evaluate()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.updates += 1  # a whole rollout: its update follows

    @property
    def evaluated(self) -> bool:
        """The policy now is the one the last evaluation measured (no update since)."""
        return self.last_eval == self.model.num_timesteps or self.evaluated_updates == self.updates

    def evaluate(self) -> dict[str, float]:
        """Evaluates the model now and writes the curve's row; returns it."""
        model, task = self.model, self.task
        self.last_eval, self.evaluated_updates = model.num_timesteps, self.updates
        row = {
            "timesteps": model.num_timesteps,
            "wall_minutes": self.run.wall_minutes(),
            **task.evaluate(model),
            "steps_per_second": self.speed.steps_per_second,
        }
        self.run.add_rows(row)
        for key in task.logged:
            self.logger.record(f"eval/{key}", row[key])
        say(
            f"[{row['timesteps']:>10,} steps, {row['wall_minutes']:6.1f} min] {task.describe(row)}, "
            f"{row['steps_per_second']:,.0f} steps/s",
            self.speed.bar,
        )
        return row


class RunCheckpointCallback(BaseCallback):
    """Saves the run's checkpoints (:meth:`RunContext.checkpoint_if_due`: ``checkpoints/step_<N>.zip`` every
    ``checkpoint_every_timesteps``) between two PPO updates.

    Not SB3's ``CheckpointCallback``: that one saves from ``_on_step``, in the middle of a rollout (so a
    checkpoint would hold a policy not yet trained on the steps it is named after), names files
    ``<prefix>_<N>_steps.zip`` and writes them in place, where a kill leaves a torn zip.
    """

    def __init__(self, run: RunContext, state: TrainerState) -> None:
        super().__init__()
        self.run, self.state = run, state

    def _on_rollout_start(self) -> None:
        self.run.checkpoint_if_due(self.state)

    def _on_step(self) -> bool:
        return True


class ReportCallback(BaseCallback):
    """Hands each new learning-curve row to ``report(row, checkpoint)``, with the checkpoint saved at the same
    point of the run (``None`` if none was): the hook a sweep uses to tell Ray Tune how a trial is doing.

    Placed after :class:`CurveCallback` and :class:`RunCheckpointCallback`, so that at a rollout's start it sees
    the evaluation and the checkpoint made there; :func:`train` calls :meth:`flush` once more at the end.
    """

    def __init__(self, report, curve: CurveCallback) -> None:
        super().__init__()
        self.report, self.curve = report, curve
        self.reported_rows = len(curve.rows)
        self.reported_checkpoint: Path | None = None

    def _on_rollout_start(self) -> None:
        self.flush()

    def _on_step(self) -> bool:
        return True

    def flush(self) -> None:
        """Reports the rows not reported yet."""
        rows = self.curve.rows[self.reported_rows :]
        self.reported_rows = len(self.curve.rows)
        checkpoint = self.curve.run.last_checkpoint
        if checkpoint == self.reported_checkpoint:
            checkpoint = None
        if checkpoint is not None and not rows and self.curve.rows:  # a checkpoint between two evaluations
            rows = [self.curve.rows[-1]]
        for i, row in enumerate(rows):
            self.report(row, checkpoint if i == len(rows) - 1 else None)
        if checkpoint is not None and rows:
            self.reported_checkpoint = checkpoint
