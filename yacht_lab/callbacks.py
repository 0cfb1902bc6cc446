"""What SB3 calls during a training run: signals, speed, the entropy schedule, stops, the learning curve,
checkpoints and reports (see :func:`yacht_lab.training.train` for how they are combined, and in which order).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from yacht_lab.runs import save_atomically, write_curve
from yacht_lab.tasks import SoloTask


# --------------------------------------------------------------------------------------------------
# Signals
# --------------------------------------------------------------------------------------------------
class Abort(KeyboardInterrupt):
    """SIGINT or SIGTERM that stops at once, without saving: one before training starts, or a second one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class StopFlag:
    """SIGINT/SIGTERM handling of a run, installed for the whole of :func:`train`.

    Before :meth:`arm` (the model is being built: nothing worth saving yet) a signal raises :class:`Abort`.
    Once armed, the first signal only sets :attr:`requested`, which :class:`StopCallback` polls, so that SB3 is
    never cut mid-update and the run saves a checkpoint; a second one raises :class:`Abort` at once (the
    atomic writes leave no half-written file behind).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested = False
        self.armed = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopFlag:
        # Signal handlers belong to the main thread; elsewhere (a Ray Tune trial runs train() in a thread of its
        # worker) the owner of the thread stops the run, and nothing is installed.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def arm(self) -> None:
        """From now on a first signal only asks to stop (training has started)."""
        self.armed = True

    def _handle(self, signum: int, frame) -> None:
        if not self.armed or self.requested:
            raise Abort(signum)
        self.requested = True

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------------------------------
# Callbacks (SB3 calls them between PPO's steps and updates; see train() for how they are combined)
# --------------------------------------------------------------------------------------------------
def _say(message: str, bar=None) -> None:
    if bar is not None:
        bar.write(message, file=sys.stderr)
    else:
        print(message, file=sys.stderr, flush=True)


class SpeedCallback(BaseCallback):
    """Measures steps/s over each rollout and its update, and shows the tqdm progress bar if asked to."""

    def __init__(self, total_timesteps: int, progress: bool) -> None:
        super().__init__()
        self.total_timesteps = total_timesteps
        self.progress = progress
        self.steps_per_second = float("nan")
        self.bar = None
        self._last: tuple[float, int] = (0.0, 0)

    def _on_training_start(self) -> None:
        self._last = (time.time(), self.model.num_timesteps)
        if self.progress:
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.total_timesteps,
                initial=self.model.num_timesteps,
                unit="step",
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
            )

    def _on_step(self) -> bool:
        if self.bar is not None:
            self.bar.update(self.model.num_timesteps - self.bar.n)
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
    """Stops training on a signal (:class:`StopFlag`) or when ``max_minutes`` have passed since ``start``."""

    def __init__(self, stop: StopFlag, max_minutes: float | None, start: float, speed: SpeedCallback) -> None:
        super().__init__()
        self.stop, self.max_minutes, self.start, self.speed = stop, max_minutes, start, speed
        self.interrupted = False

    def _on_step(self) -> bool:
        if self.stop.requested:
            if not self.interrupted:
                self.interrupted = True
                _say("stopping: saving a checkpoint (interrupt again to quit at once, without saving)", self.speed.bar)
            return False
        return self.max_minutes is None or time.time() - self.start < self.max_minutes * 60


class CurveCallback(BaseCallback):
    """Evaluates the deterministic policy every ``config.eval.every_timesteps`` and writes the learning curve.

    What a row holds comes from the run's task (:mod:`yacht_lab.tasks`: solo score, or win rate at a table).
    Each evaluation rewrites ``learning_curve.csv`` atomically (a kill never leaves a torn row), logs
    ``eval/*`` to TensorBoard and prints one line.
    """

    def __init__(
        self,
        task: SoloTask,
        curve_path: Path,
        rows: list[dict[str, float]],
        start: float,
        wall_offset: float,
        speed: SpeedCallback,
    ) -> None:
        super().__init__()
        self.task, self.config, self.curve_path, self.rows = task, task.config, curve_path, rows
        self.start, self.wall_offset, self.speed = start, wall_offset, speed
        self.last_eval: int | None = None

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

    def evaluate(self) -> dict[str, float]:
        """Evaluates the model now and writes the curve's row; returns it."""
        model, task = self.model, self.task
        self.last_eval = model.num_timesteps
        row = {
            "timesteps": model.num_timesteps,
            "wall_minutes": (self.wall_offset + time.time() - self.start) / 60,
            **task.evaluate(model),
            "steps_per_second": self.speed.steps_per_second,
        }
        self.rows.append(row)
        write_curve(self.curve_path, self.rows, task.fields)
        for key in task.logged:
            self.logger.record(f"eval/{key}", row[key])
        _say(
            f"[{row['timesteps']:>10,} steps, {row['wall_minutes']:6.1f} min] {task.describe(row)}, "
            f"{row['steps_per_second']:,.0f} steps/s",
            self.speed.bar,
        )
        return row


class RunCheckpointCallback(BaseCallback):
    """Saves ``checkpoints/step_<N>.zip`` every ``every`` timesteps, between two PPO updates.

    ``on_save(timesteps)``, if given, is called after each save (the task's ``checkpoint``: a league's state).
    Not SB3's ``CheckpointCallback``: that one saves from ``_on_step``, in the middle of a rollout (so a
    checkpoint would hold a policy not yet trained on the steps it is named after), names files
    ``<prefix>_<N>_steps.zip`` and writes them in place, where a kill leaves a torn zip.
    """

    def __init__(self, folder: Path, every: int, on_save=None) -> None:
        super().__init__()
        self.folder, self.every, self.on_save = folder, every, on_save
        self.last: int | None = None
        self.last_path: Path | None = None

    def _on_training_start(self) -> None:
        self.last = self.model.num_timesteps

    def _on_rollout_start(self) -> None:
        if self.model.num_timesteps - self.last >= self.every:
            self.save()

    def _on_step(self) -> bool:
        return True

    def save(self) -> Path:
        """Saves a checkpoint of the model now; returns its path."""
        self.last = self.model.num_timesteps
        path = self.folder / f"step_{self.model.num_timesteps}.zip"
        save_atomically(self.model, path)
        if self.on_save is not None:  # what belongs beside the checkpoint (a league's state)
            self.on_save(self.model.num_timesteps)
        self.last_path = path
        return path


class ReportCallback(BaseCallback):
    """Hands each new learning-curve row to ``report(row, checkpoint)``, with the checkpoint saved at the same
    point of the run (``None`` if none was): the hook a sweep uses to tell Ray Tune how a trial is doing.

    Placed after :class:`CurveCallback` and :class:`RunCheckpointCallback`, so that at a rollout's start it sees
    the evaluation and the checkpoint made there; :func:`train` calls :meth:`flush` once more at the end.
    """

    def __init__(self, report, curve: CurveCallback, checkpoints: RunCheckpointCallback) -> None:
        super().__init__()
        self.report, self.curve, self.checkpoints = report, curve, checkpoints
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
        checkpoint = self.checkpoints.last_path
        if checkpoint == self.reported_checkpoint:
            checkpoint = None
        if checkpoint is not None and not rows and self.curve.rows:  # a checkpoint between two evaluations
            rows = [self.curve.rows[-1]]
        for i, row in enumerate(rows):
            self.report(row, checkpoint if i == len(rows) - 1 else None)
        if checkpoint is not None and rows:
            self.reported_checkpoint = checkpoint
