"""PPO training for Yacht: the run folder, resuming, the callbacks and the loop. ``train.py`` is the thin
script over this; the config (dataclasses, loading, validation) is :mod:`yacht_lab.config`.

A run trains sb3-contrib's ``MaskablePPO`` on the native vector env through the SB3 adapter
(:class:`yacht_env.sb3.YachtSB3VecEnv`): solo ``Yacht-v0`` games, or, with ``opponents`` in the config, one
seat at tables of ``YachtVersus-v0`` against them (a *versus run*, whose curve is the win rate against them).
The agent sees only the env's observation and (scaled) reward: the exact solver is used for reporting
(``% of optimal``, regret), never in training.

Every file of a run is written atomically (:mod:`yacht_env.util`): a kill at any moment leaves each file
whole, old or new, and at worst a hidden ``.<name>.<pid>-<hex>.tmp`` file that no glob of the real files
matches and that the next run in the folder (a resume) removes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from stable_baselines3.common.callbacks import BaseCallback, CallbackList
from stable_baselines3.common.vec_env import VecEnvWrapper

from yacht_env.util import atomic_output, atomic_write, check_writable, remove_stale_temps
from yacht_lab.config import MAX_SEED, TrainConfig, load_config, validate

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
# The pieces of a run: schedule, env, model, evaluation
# --------------------------------------------------------------------------------------------------
def linear_schedule(start: float, end: float):
    """SB3 schedule: ``start`` at the beginning of training to ``end`` at the end."""

    def schedule(progress_remaining: float) -> float:
        return end + (start - end) * progress_remaining

    return schedule


def reference_levels(rules: str, games: int, seed: int) -> dict[str, float]:
    """Mean scores of the optimal, greedy and random agents on the evaluation games (for plots)."""
    from yacht_agents import make_agent
    from yacht_lab.evaluation import evaluate

    evaluation = evaluate([make_agent("greedy", rules), make_agent("random", rules, seed=seed)], games, seed, rules)
    return {
        "optimal": evaluation.optimal_expected_score,
        "greedy": float(evaluation.results["greedy"].scores.mean()),
        "random": float(evaluation.results["random"].scores.mean()),
    }


def evaluate_model(model, rules: str, games: int, seed: int) -> dict[str, float]:
    """The deterministic policy of a live model on the evaluation games: score, CI, % of optimal, regret."""
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.evaluation import evaluate

    summary = evaluate([PPOAgent.from_model(model, rules)], games, seed, rules).to_dict()["agents"]["ppo"]
    lo, hi = summary["ci95"]
    return {**summary, "ci95_half_width": (hi - lo) / 2}


def curve_fields(config: TrainConfig) -> tuple[str, ...]:
    """The columns of a run's learning curve: :data:`CURVE_FIELDS`, or :data:`VERSUS_CURVE_FIELDS` with opponents."""
    return VERSUS_CURVE_FIELDS if config.opponents else CURVE_FIELDS


def evaluate_versus(model, rules: str, opponents: list[str], games: int, seed: int) -> dict[str, float]:
    """The deterministic policy of a live versus model against its opponents, on ``games`` deals.

    :func:`yacht_lab.head_to_head.head_to_head` with the learner first and the opponents (fresh agents of the
    specs, so that a ``random`` one draws the same at every evaluation): common dice, dice and seat rotations.
    Returns the learner's ``win_rate`` (its win share, ties split: at two players its win rate with ties
    counted half) and ``win_rate_ci95`` (the CI's half-width over deals), ``mean_score`` and
    ``score_ci95``, ``percent_of_optimal`` (its mean score over the solver's solo expectation: a yardstick
    only) and ``mean_margin`` (its mean total minus the opponents' mean total, over the same games).
    """
    from yacht_agents import make_agent
    from yacht_agents.ppo import PPOAgent
    from yacht_env.solver import solve
    from yacht_lab.head_to_head import head_to_head

    learner = PPOAgent.from_model(model, rules)
    agents = [learner]
    for i, spec in enumerate(opponents):
        agent = make_agent(spec, rules, seed=i)
        if any(agent.name == other.name for other in agents):  # head_to_head wants distinct names
            agent.name = f"{spec} #{i + 1}"
        agents.append(agent)
    report = head_to_head(agents, len(agents), games, seed, rules).to_dict()
    by_agent = report["agents"]
    me = by_agent[learner.name]
    others = [by_agent[agent.name]["mean_score"] for agent in agents[1:]]
    share_lo, share_hi = me["win_share_ci95"]
    score_lo, score_hi = me["mean_score_ci95"]
    return {
        "win_rate": me["win_share"],
        "win_rate_ci95": (share_hi - share_lo) / 2,
        "mean_score": me["mean_score"],
        "score_ci95": (score_hi - score_lo) / 2,
        "percent_of_optimal": 100.0 * me["mean_score"] / solve(rules).expected_score,
        "mean_margin": me["mean_score"] - sum(others) / len(others),
    }


class ScaledReward(VecEnvWrapper):
    """Multiplies rewards by a constant (value targets of about unit size; the score is unchanged)."""

    def __init__(self, venv, scale: float) -> None:
        super().__init__(venv)
        self.scale = scale

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards * self.scale, dones, infos


def make_vec_env(config: TrainConfig) -> ScaledReward:
    """The training VecEnv: the native vector env through the SB3 adapter, rewards scaled.

    With ``opponents``: the versus vector env, the learner in ``seat``, rewarded by ``reward``.
    """
    from yacht_env.sb3 import YachtSB3VecEnv

    if not config.opponents:
        return ScaledReward(YachtSB3VecEnv(config.n_envs, rules=config.rules), config.reward_scale)
    env = YachtSB3VecEnv(
        config.n_envs, opponents=list(config.opponents), reward=config.reward, seat=config.seat, rules=config.rules
    )
    return ScaledReward(env, config.reward_scale)


def make_model(config: TrainConfig, env, tensorboard_dir: str | None):
    """A new ``MaskablePPO`` of the config on ``env``."""
    import torch
    from sb3_contrib import MaskablePPO

    p = config.ppo
    activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[config.policy.activation]
    policy_kwargs = {
        "net_arch": {"pi": list(config.policy.net_arch), "vf": list(config.policy.net_arch)},
        "activation_fn": activation,
    }
    policy = "MlpPolicy"
    if config.policy.chase_inputs or config.policy.keep_head:
        from yacht_agents.policy import OddsPolicy

        policy = OddsPolicy
        policy_kwargs.update(
            rules=config.rules, chase_inputs=config.policy.chase_inputs, keep_head=config.policy.keep_head
        )
    return MaskablePPO(
        policy,
        env,
        learning_rate=linear_schedule(p.learning_rate, p.learning_rate_final),
        n_steps=p.n_steps,
        batch_size=p.batch_size,
        n_epochs=p.n_epochs,
        gamma=p.gamma,
        gae_lambda=p.gae_lambda,
        clip_range=p.clip_range,
        ent_coef=p.ent_coef,
        vf_coef=p.vf_coef,
        max_grad_norm=p.max_grad_norm,
        policy_kwargs=policy_kwargs,
        tensorboard_log=tensorboard_dir,
        seed=config.seed,
        device=config.device,
        verbose=0,
    )


# --------------------------------------------------------------------------------------------------
# The run folder: claiming a new one, resuming an old one
# --------------------------------------------------------------------------------------------------
def run_name(config: TrainConfig) -> str:
    """CleanRL-style: ``Yacht-v0__<rules>__ppo__<seed>__<unix time>`` (``YachtVersus-v0__...`` with opponents)."""
    env_id = "YachtVersus-v0" if config.opponents else "Yacht-v0"
    return f"{env_id}__{config.rules}__ppo__{config.seed}__{int(time.time())}"


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


def run_folder_of(checkpoint: Path) -> Path:
    """The run folder of ``<run>/checkpoints/step_N.zip`` or ``<run>/model.zip``."""
    return checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else checkpoint.parent


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

    Raises:
        ValueError: not a ``MaskablePPO`` checkpoint (corrupt, or something else).
    """
    from sb3_contrib import MaskablePPO

    try:
        model = MaskablePPO.load(str(checkpoint), env=env, device=config.device, tensorboard_log=tensorboard_dir)
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


def resumed_curve(curve_path: Path, timesteps: int, fields: tuple[str, ...] = CURVE_FIELDS) -> list[dict[str, float]]:
    """The learning-curve rows a run resumed at ``timesteps`` keeps: those up to that step.

    Raises:
        ValueError: the curve is damaged before its last row (see :func:`read_curve`).
    """
    if not curve_path.is_file():
        return []
    return [row for row in read_curve(curve_path, fields) if row["timesteps"] <= timesteps]


def start_run_folder(run_dir: Path, config: TrainConfig, command: str, rows: list[dict[str, float]]) -> None:
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
    write_curve(run_dir / CURVE_FILE, rows, curve_fields(config))
    commands = run_dir / "command.txt"
    previous = commands.read_text() if commands.is_file() else ""
    if previous and not previous.endswith("\n"):
        previous += "\n"
    atomic_write(commands, previous + command + "\n")


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

    Each evaluation rewrites ``learning_curve.csv`` atomically (a kill never leaves a torn row), logs
    ``eval/*`` to TensorBoard and prints one line.
    """

    def __init__(
        self,
        config: TrainConfig,
        curve_path: Path,
        rows: list[dict[str, float]],
        start: float,
        wall_offset: float,
        speed: SpeedCallback,
    ) -> None:
        super().__init__()
        self.config, self.curve_path, self.rows = config, curve_path, rows
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
        if self.config.opponents:
            return self.evaluate_versus()
        model, config = self.model, self.config
        self.last_eval = model.num_timesteps
        result = evaluate_model(model, config.rules, config.eval.games, config.eval.seed)
        row = {
            "timesteps": model.num_timesteps,
            "wall_minutes": (self.wall_offset + time.time() - self.start) / 60,
            "mean_score": result["mean"],
            "score_ci95": result["ci95_half_width"],
            "percent_of_optimal": result["percent_of_optimal"],
            "mean_regret": result["mean_regret"],
            "steps_per_second": self.speed.steps_per_second,
        }
        self.rows.append(row)
        write_curve(self.curve_path, self.rows)
        for key in ("mean_score", "percent_of_optimal", "mean_regret"):
            self.logger.record(f"eval/{key}", row[key])
        _say(
            f"[{row['timesteps']:>10,} steps, {row['wall_minutes']:6.1f} min] eval {row['mean_score']:.2f}"
            f" +- {row['score_ci95']:.2f} ({row['percent_of_optimal']:.2f}% of optimal), "
            f"regret {row['mean_regret']:.2f}, {row['steps_per_second']:,.0f} steps/s",
            self.speed.bar,
        )
        return row

    def evaluate_versus(self) -> dict[str, float]:
        model, config = self.model, self.config
        self.last_eval = model.num_timesteps
        result = evaluate_versus(model, config.rules, config.opponents, config.eval.games, config.eval.seed)
        row = {
            "timesteps": model.num_timesteps,
            "wall_minutes": (self.wall_offset + time.time() - self.start) / 60,
            **{key: result[key] for key in VERSUS_CURVE_FIELDS[2:-1]},
            "steps_per_second": self.speed.steps_per_second,
        }
        self.rows.append(row)
        write_curve(self.curve_path, self.rows, VERSUS_CURVE_FIELDS)
        for key in ("win_rate", "mean_score", "mean_margin", "percent_of_optimal"):
            self.logger.record(f"eval/{key}", row[key])
        _say(
            f"[{row['timesteps']:>10,} steps, {row['wall_minutes']:6.1f} min] eval win rate "
            f"{100 * row['win_rate']:.1f}% +- {100 * row['win_rate_ci95']:.1f} against {', '.join(config.opponents)}, "
            f"score {row['mean_score']:.2f} +- {row['score_ci95']:.2f}, margin {row['mean_margin']:+.2f}, "
            f"{row['steps_per_second']:,.0f} steps/s",
            self.speed.bar,
        )
        return row


class RunCheckpointCallback(BaseCallback):
    """Saves ``checkpoints/step_<N>.zip`` every ``every`` timesteps, between two PPO updates.

    Not SB3's ``CheckpointCallback``: that one saves from ``_on_step``, in the middle of a rollout (so a
    checkpoint would hold a policy not yet trained on the steps it is named after), names files
    ``<prefix>_<N>_steps.zip`` and writes them in place, where a kill leaves a torn zip.
    """

    def __init__(self, folder: Path, every: int) -> None:
        super().__init__()
        self.folder, self.every = folder, every
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
        self.last = self.model.num_timesteps
        path = self.folder / f"step_{self.model.num_timesteps}.zip"
        save_atomically(self.model, path)
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
    written and the checkpoint saved at that point, if any (see :class:`ReportCallback`).

    Raises:
        ValueError: a bad config, an output folder that cannot be written, a missing or corrupt
            checkpoint, no budget left.
        Abort: see above.
    """
    import torch

    validate(config)
    with StopFlag() as stop:
        if resume is not None:
            resume = Path(resume)
            if not resume.is_file():
                raise ValueError(f"cannot resume: checkpoint {str(resume)!r} not found")
            run_dir, claimed = run_folder_of(resume), []
        else:
            run_dir, claimed = claim_run_folder(output_dir, config, name)
        env = None
        try:
            torch.set_num_threads(config.torch_threads)
            env = make_vec_env(config)
            tensorboard_dir = str(run_dir / "tb")
            if resume is not None:
                model = load_checkpoint(resume, env, config, tensorboard_dir)
                rows = resumed_curve(run_dir / CURVE_FILE, model.num_timesteps, curve_fields(config))
            else:
                model, rows = make_model(config, env, tensorboard_dir), []
            remaining = config.total_timesteps - model.num_timesteps
            if remaining <= 0:
                raise ValueError(
                    f"the checkpoint is at {model.num_timesteps} steps, the run's budget is total_timesteps="
                    f"{config.total_timesteps}; pass a larger --total-timesteps to continue"
                )
            # A versus plot needs no levels (its reference is the even win rate, 1 / players).
            levels = None if config.opponents else reference_levels(config.rules, config.eval.games, config.eval.seed)
            # Everything is in place: only now does the run folder get written.
            start_run_folder(run_dir, config, command or shlex.join(sys.argv), rows)
        except BaseException:
            if env is not None:
                env.close()
            release_run_folder(claimed)
            raise

        start = time.time()
        wall_offset = rows[-1]["wall_minutes"] * 60 if rows else 0.0
        speed = SpeedCallback(config.total_timesteps, progress)
        curve = CurveCallback(config, run_dir / CURVE_FILE, rows, start, wall_offset, speed)
        checkpoints = RunCheckpointCallback(run_dir / "checkpoints", config.checkpoint_every_timesteps)
        stopper = StopCallback(stop, config.max_minutes, start, speed)
        entropy = EntropyScheduleCallback(config.ppo.ent_coef, config.ppo.ent_coef_final, config.total_timesteps)
        # The order matters: at a rollout's start evaluate, then checkpoint, then report both; at each step update
        # the bar, then look for a stop; at a rollout's end set the coming update's entropy bonus and measure the
        # speed.
        reporter = ReportCallback(report, curve, checkpoints) if report is not None else None
        callbacks = CallbackList([curve, checkpoints, *([reporter] if reporter else []), speed, stopper, entropy])
        stop.arm()
        try:
            model.learn(remaining, callback=callbacks, reset_num_timesteps=resume is None, tb_log_name="ppo")
            path = checkpoints.save()
            if not stopper.interrupted and curve.last_eval != model.num_timesteps:
                curve.evaluate()
            if config.opponents:
                plot_versus_curve(run_dir / CURVE_FILE, run_dir / PLOT_FILE, config)
            else:
                plot_curve(run_dir / CURVE_FILE, run_dir / PLOT_FILE, levels, config.rules)
            save_atomically(model, run_dir / "model.zip")  # last: a run folder with model.zip is a complete run
            if reporter is not None:
                reporter.flush()
        finally:
            speed.close()
            env.close()
    if stopper.interrupted:
        print(f"interrupted: saved {path}; continue with: python train.py --resume {path}", file=sys.stderr)
    return run_dir


# --------------------------------------------------------------------------------------------------
# Files: the model, the learning curve and its plot, all written atomically (util.atomic_output)
# --------------------------------------------------------------------------------------------------
def save_atomically(model, path: Path) -> None:
    """Saves an SB3 model so that ``path`` is never half-written (and has the usual file mode)."""
    with atomic_output(path) as temp, open(temp, "wb") as file:
        model.save(file)  # a file object: SB3 would add ".zip" to a path that ends in ".tmp"


def write_curve(path: Path, rows: list[dict[str, float]], fields: tuple[str, ...] = CURVE_FIELDS) -> None:
    """Writes the whole learning curve atomically (a header of ``fields`` and one row per evaluation)."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, text.getvalue())


def read_curve(path: Path, fields: tuple[str, ...] = CURVE_FIELDS) -> list[dict[str, float]]:
    """The rows of a learning curve of columns ``fields`` (:data:`VERSUS_CURVE_FIELDS` for a versus run).

    A torn last row (one without its line end, or with too few fields: a run of an older version killed
    while appending it) is dropped.

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
            rows.append({k: (int(v) if k == "timesteps" else float(v)) for k, v in zip(fields, values, strict=True)})
        except ValueError:
            if last:
                break
            raise ValueError(f"'{path}' line {number} is not a learning-curve row: {','.join(values)!r}") from None
    return rows


def _plot_curves(png_path: Path, rows: list[dict[str, float]], y_key: str, ci_key: str, y_label: str, decorate) -> None:
    """The learning-curve PNG both kinds of run draw: ``y_key`` (with its CI band) against wall-clock minutes
    and against timesteps; ``decorate(fig, axes)`` adds the reference lines and titles."""
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


def plot_curve(curve_path: Path, png_path: Path, levels: dict[str, float], rules: str) -> None:
    """Learning curve PNG: score vs wall-clock minutes and vs timesteps; optimal/greedy/random marked."""

    def decorate(fig, axes) -> None:
        for ax in axes:
            for name, style in (("optimal", "-"), ("greedy", "--"), ("random", ":")):
                ax.axhline(levels[name], color="k", linestyle=style, linewidth=1, label=f"{name} {levels[name]:.1f}")
        axes[0].legend(loc="lower right")
        optimal = levels["optimal"]
        secondary = axes[0].secondary_yaxis(
            "right", functions=(lambda s: s / optimal * 100, lambda p: p * optimal / 100)
        )
        secondary.set_ylabel("% of optimal")
        fig.suptitle(f"MaskablePPO on Yacht-v0 ({rules})")

    _plot_curves(png_path, read_curve(curve_path), "mean_score", "score_ci95", "mean score", decorate)


def plot_versus_curve(curve_path: Path, png_path: Path, config: TrainConfig) -> None:
    """Versus learning curve PNG: win rate (95% CI band) vs wall-clock minutes and vs timesteps, the even
    win rate ``1 / players`` marked."""
    from yacht_lab.evaluation import _short

    even = 1 / (len(config.opponents) + 1)

    def decorate(fig, axes) -> None:
        for ax in axes:
            ax.axhline(even, color="k", linestyle="--", linewidth=1, label=f"even {even:.2f}")
            ax.set_ylim(0, 1)
        axes[0].legend(loc="lower right")
        seat = "a random seat" if config.seat == "random" else f"seat {config.seat}"
        fig.suptitle(
            f"MaskablePPO on YachtVersus-v0 ({config.rules}, reward {config.reward}, {seat}) "
            f"against {', '.join(_short(spec, 32) for spec in config.opponents)}",
            fontsize=10,
        )

    rows = read_curve(curve_path, VERSUS_CURVE_FIELDS)
    _plot_curves(png_path, rows, "win_rate", "win_rate_ci95", "win rate (ties split)", decorate)
