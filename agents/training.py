"""PPO training for Yacht: config, run folder, callbacks. ``train.py`` is the thin script over this.

A run trains sb3-contrib's ``MaskablePPO`` on the native vector env through the SB3 adapter
(:class:`yacht_env.sb3.YachtSB3VecEnv`). The agent sees only the env's observation and (scaled) reward:
the exact solver is used for reporting (``% of optimal``, regret), never in training.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from yacht_env import rules as R

CURVE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "mean_score",
    "score_ci95",
    "percent_of_optimal",
    "mean_regret",
    "steps_per_second",
)


@dataclass
class PolicyConfig:
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of the policy MLP and of the (separate) value MLP."""
    activation: str = "relu"
    """``relu`` or ``tanh``."""


@dataclass
class PPOConfig:
    n_steps: int = 256
    """Steps per env per rollout (rollout size = n_steps x n_envs)."""
    batch_size: int = 4096
    """Minibatch size."""
    n_epochs: int = 8
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Initial learning rate; decays linearly to ``learning_rate_final`` over ``total_timesteps``."""
    learning_rate_final: float = 0.0
    """Learning rate at the end of training."""
    ent_coef: float = 0.04
    """Initial entropy bonus; decays linearly to ``ent_coef_final`` over ``total_timesteps``."""
    ent_coef_final: float = 0.0
    """Entropy bonus at the end of training."""
    gamma: float = 1.0
    """Discount: a game is short and its score undiscounted."""
    gae_lambda: float = 0.9
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""


@dataclass
class EvalConfig:
    every_timesteps: int = 500_000
    """Evaluate the deterministic policy every this many timesteps (and at the end)."""
    games: int = 2000
    """Evaluation games: ``game_streams(seed, range(games))``, the same at every evaluation."""
    seed: int = 1000
    """Seed of the evaluation games."""


@dataclass
class TrainConfig:
    rules: str = "standard"
    """Rules preset: ``standard`` or ``classic``."""
    seed: int = 0
    """Seed of the env, the policy initialisation and PPO's sampling."""
    total_timesteps: int = 24_000_000
    """Environment steps to train for (the learning-rate schedule spans this)."""
    max_minutes: float | None = 60.0
    """Stop after this many minutes of training and save (``None``: no limit)."""
    n_envs: int = 64
    """Games stepped together by the native vector env."""
    device: str = "cpu"
    """Torch device."""
    torch_threads: int = 2
    """Torch CPU threads."""
    reward_scale: float = 0.02
    """Rewards are multiplied by this inside training only (the env's reward stays the score)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint_every_timesteps: int = 2_000_000
    """Save ``checkpoints/step_<N>.zip`` this often."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _from_dict(cls: type, data: Any, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'config'} must be a mapping, got {data!r}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown config key {where + '.' if where else ''}{unknown[0]}; accepted: {sorted(known)}")
    kwargs = {}
    for name, value in data.items():
        sub = {"policy": PolicyConfig, "ppo": PPOConfig, "eval": EvalConfig}.get(name) if cls is TrainConfig else None
        kwargs[name] = _from_dict(sub, value, name) if sub else value
    return cls(**kwargs)


def _check_number(name: str, value: Any, kind: type, low: float, low_inclusive: bool = True) -> None:
    ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    ok = ok and math.isfinite(value) and (value >= low if low_inclusive else value > low)
    if not ok:
        bound = f">= {low}" if low_inclusive else f"> {low}"
        raise ValueError(f"{name} must be {'a number' if kind is float else 'an int'} {bound}, got {value!r}")


def _is_torch_device(name: str) -> bool:
    import torch

    try:
        torch.device(name)
    except (RuntimeError, ValueError):
        return False
    return True


def validate(config: TrainConfig) -> TrainConfig:
    """Checks every field; raises ``ValueError`` naming the first bad one."""
    R.get_rules(config.rules)
    if not isinstance(config.rules, str):
        raise ValueError(f"rules must be a preset name, got {config.rules!r}")
    _check_number("seed", config.seed, int, 0)
    _check_number("total_timesteps", config.total_timesteps, int, 1)
    if config.max_minutes is not None:
        _check_number("max_minutes", config.max_minutes, float, 0, low_inclusive=False)
    _check_number("n_envs", config.n_envs, int, 1)
    _check_number("torch_threads", config.torch_threads, int, 1)
    _check_number("reward_scale", config.reward_scale, float, 0, low_inclusive=False)
    _check_number("checkpoint_every_timesteps", config.checkpoint_every_timesteps, int, 1)
    if not isinstance(config.device, str) or not _is_torch_device(config.device):
        raise ValueError(f"device must be a torch device name such as 'cpu' or 'cuda', got {config.device!r}")
    arch = config.policy.net_arch
    if not isinstance(arch, list) or not arch or not all(type(n) is int and n > 0 for n in arch):
        raise ValueError(f"policy.net_arch must be a non-empty list of positive ints, got {arch!r}")
    if config.policy.activation not in ("relu", "tanh"):
        raise ValueError(f"policy.activation must be 'relu' or 'tanh', got {config.policy.activation!r}")
    p = config.ppo
    _check_number("ppo.n_steps", p.n_steps, int, 1)
    _check_number("ppo.batch_size", p.batch_size, int, 2)
    _check_number("ppo.n_epochs", p.n_epochs, int, 1)
    _check_number("ppo.learning_rate", p.learning_rate, float, 0, low_inclusive=False)
    _check_number("ppo.learning_rate_final", p.learning_rate_final, float, 0)
    _check_number("ppo.ent_coef", p.ent_coef, float, 0)
    _check_number("ppo.ent_coef_final", p.ent_coef_final, float, 0)
    _check_number("ppo.clip_range", p.clip_range, float, 0, low_inclusive=False)
    _check_number("ppo.vf_coef", p.vf_coef, float, 0)
    _check_number("ppo.max_grad_norm", p.max_grad_norm, float, 0, low_inclusive=False)
    for name in ("gamma", "gae_lambda"):
        value = getattr(p, name)
        _check_number(f"ppo.{name}", value, float, 0)
        if value > 1:
            raise ValueError(f"ppo.{name} must be in 0..1, got {value!r}")
    if p.batch_size > p.n_steps * config.n_envs:
        raise ValueError(
            f"ppo.batch_size ({p.batch_size}) must not exceed the rollout size n_steps x n_envs "
            f"({p.n_steps * config.n_envs})"
        )
    _check_number("eval.every_timesteps", config.eval.every_timesteps, int, 1)
    _check_number("eval.games", config.eval.games, int, 1)
    _check_number("eval.seed", config.eval.seed, int, 0)
    return config


def load_config(path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Reads a YAML config, applies top-level ``overrides`` (CLI flags), validates.

    Raises:
        ValueError: missing or unreadable file, bad YAML, unknown key, bad value.
    """
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise ValueError(f"cannot read config {str(path)!r}: {error.strerror or error}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        first = str(error).splitlines()[0] if str(error) else "invalid YAML"
        raise ValueError(f"config {str(path)!r} is not valid YAML: {first}") from None
    if data is None:
        data = {}
    config = _from_dict(TrainConfig, data, "")
    for name, value in (overrides or {}).items():
        if value is not None:
            setattr(config, name, value)
    return validate(config)


# --------------------------------------------------------------------------------------------------
def linear_schedule(start: float, end: float):
    """SB3 schedule: ``start`` at the beginning of training to ``end`` at the end."""

    def schedule(progress_remaining: float) -> float:
        return end + (start - end) * progress_remaining

    return schedule


def reference_levels(rules: str, games: int, seed: int) -> dict[str, float]:
    """Mean scores of the optimal, greedy and random agents on the evaluation games (for plots)."""
    from agents import make_agent
    from agents.evaluation import evaluate

    evaluation = evaluate([make_agent("greedy", rules), make_agent("random", rules, seed=seed)], games, seed, rules)
    return {
        "optimal": evaluation.optimal_expected_score,
        "greedy": float(evaluation.results["greedy"].scores.mean()),
        "random": float(evaluation.results["random"].scores.mean()),
    }


def evaluate_model(model, rules: str, games: int, seed: int) -> dict[str, float]:
    """The deterministic policy of a live model on the evaluation games: score, CI, % of optimal, regret."""
    from agents.evaluation import evaluate
    from agents.ppo import PPOAgent

    summary = evaluate([PPOAgent.from_model(model, rules)], games, seed, rules).to_dict()["agents"]["ppo"]
    lo, hi = summary["ci95"]
    return {**summary, "ci95_half_width": (hi - lo) / 2}


def make_vec_env(config: TrainConfig):
    """The training VecEnv: the native vector env through the SB3 adapter, rewards scaled."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    from yacht_env.sb3 import YachtSB3VecEnv

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

    return ScaledReward(YachtSB3VecEnv(config.n_envs, rules=config.rules), config.reward_scale)


def make_model(config: TrainConfig, env, tensorboard_dir: str | None):
    import torch
    from sb3_contrib import MaskablePPO

    p = config.ppo
    activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[config.policy.activation]
    return MaskablePPO(
        "MlpPolicy",
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
        policy_kwargs={
            "net_arch": {"pi": list(config.policy.net_arch), "vf": list(config.policy.net_arch)},
            "activation_fn": activation,
        },
        tensorboard_log=tensorboard_dir,
        seed=config.seed,
        device=config.device,
        verbose=0,
    )


def run_name(config: TrainConfig) -> str:
    """CleanRL-style: ``Yacht-v0__<rules>__ppo__<seed>__<unix time>``."""
    return f"Yacht-v0__{config.rules}__ppo__{config.seed}__{int(time.time())}"


class Interrupted(Exception):
    """Raised inside training when SIGINT/SIGTERM asks it to stop (after a checkpoint is saved)."""


class _StopFlag:
    """Turns SIGINT/SIGTERM into a flag the training callback polls, so SB3 is never cut mid-update."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: dict[int, Any] = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested:  # a second Ctrl-C falls through to the default behaviour
            signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))
        self.requested = True

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


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


def run_folder_of(checkpoint: Path) -> Path:
    """The run folder of ``<run>/checkpoints/step_N.zip`` or ``<run>/model.zip``."""
    return checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else checkpoint.parent


def train(
    config: TrainConfig,
    output_dir: str | os.PathLike = "runs",
    resume: str | os.PathLike | None = None,
    command: str | None = None,
    progress: bool = True,
) -> Path:
    """Trains a new run (or resumes one: pass :func:`resume_config`'s config) and returns its folder.

    The folder holds ``config.yaml`` (the exact config), ``command.txt``, ``model.zip``,
    ``checkpoints/step_<N>.zip``, ``learning_curve.csv``, ``learning_curve.png`` and ``tb/``
    (TensorBoard). Nothing is written before the model is built or loaded, so a bad config or a
    corrupt checkpoint leaves no trace. Ctrl-C (SIGINT) or SIGTERM saves ``checkpoints/step_<N>.zip``
    and ``model.zip`` between two PPO updates and returns; ``resume=<that checkpoint>`` continues in
    the same folder with the same learning-rate schedule.
    """
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    validate(config)
    with _StopFlag() as stop:
        torch.set_num_threads(config.torch_threads)
        if resume is not None:
            if not Path(resume).is_file():
                raise ValueError(f"cannot resume: checkpoint {str(resume)!r} not found")
            run_dir = run_folder_of(Path(resume))
        else:
            run_dir = Path(output_dir) / run_name(config)
            if run_dir.exists():
                raise ValueError(f"run folder {str(run_dir)!r} already exists")
        env = make_vec_env(config)
        tensorboard_dir = str(run_dir / "tb")
        if resume is not None:
            try:
                model = MaskablePPO.load(str(resume), env=env, device=config.device, tensorboard_log=tensorboard_dir)
            except Exception as error:  # noqa: BLE001 - a corrupt file fails in many ways; one clear error
                detail = " ".join(str(error).split()) or type(error).__name__
                raise ValueError(
                    f"cannot resume from {str(resume)!r}: not a MaskablePPO checkpoint ({detail})"
                ) from None
            # The run's own schedule over its whole budget (SB3 pickles the callable; rebuild it from config).
            model.learning_rate = linear_schedule(config.ppo.learning_rate, config.ppo.learning_rate_final)
            model._setup_lr_schedule()
            # A checkpoint holds no random state: seed the continuation from (seed, step) so that
            # resuming the same checkpoint twice gives the same run.
            model.set_random_seed(config.seed + model.num_timesteps)
        else:
            model = make_model(config, env, tensorboard_dir)
        remaining = config.total_timesteps - model.num_timesteps
        if remaining <= 0:
            raise ValueError(
                f"the checkpoint is at {model.num_timesteps} steps, the run's budget is total_timesteps="
                f"{config.total_timesteps}; pass a larger --total-timesteps to continue"
            )
        levels = reference_levels(config.rules, config.eval.games, config.eval.seed)

        # Everything is in place: only now does the run folder get written.
        (run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
        with open(run_dir / "command.txt", "a") as f:
            f.write((command or shlex.join(sys.argv)) + "\n")
        curve_path = run_dir / "learning_curve.csv"
        wall_offset = 0.0
        if resume is not None and curve_path.is_file():
            rows = [row for row in read_curve(curve_path) if row["timesteps"] <= model.num_timesteps]
            wall_offset = rows[-1]["wall_minutes"] * 60 if rows else 0.0
            write_curve(curve_path, rows)
        else:
            write_curve(curve_path, [])

        class RunCallback(BaseCallback):
            """Evaluates and checkpoints between PPO updates; stops on a signal or the time limit."""

            def __init__(self) -> None:
                super().__init__()
                self.start = time.time()
                self.last_eval = model.num_timesteps
                self.last_checkpoint = model.num_timesteps
                self.last_progress = (time.time(), model.num_timesteps)
                self.steps_per_second = float("nan")
                self.bar = None

            def _on_training_start(self) -> None:
                if resume is None:  # the untrained policy is the curve's first point
                    self.evaluate()
                if progress:
                    from tqdm import tqdm

                    self.bar = tqdm(
                        total=config.total_timesteps,
                        initial=model.num_timesteps,
                        unit="step",
                        unit_scale=True,
                        dynamic_ncols=True,
                        file=sys.stderr,
                    )

            def _on_rollout_start(self) -> None:
                # Called after the previous rollout's update: the policy evaluated and saved here is
                # the one trained on every step counted so far.
                if model.num_timesteps - self.last_eval >= config.eval.every_timesteps:
                    self.evaluate()
                if model.num_timesteps - self.last_checkpoint >= config.checkpoint_every_timesteps:
                    self.checkpoint()

            def _on_step(self) -> bool:
                if self.bar is not None:
                    self.bar.update(model.num_timesteps - self.bar.n)
                if stop.requested:
                    raise Interrupted
                return config.max_minutes is None or time.time() - self.start < config.max_minutes * 60

            def _on_rollout_end(self) -> None:
                # The entropy bonus of the coming update (SB3 has no schedule for it): high early to keep
                # exploring keeps, decaying with the learning rate.
                progress = min(model.num_timesteps / config.total_timesteps, 1.0)
                model.ent_coef = config.ppo.ent_coef + (config.ppo.ent_coef_final - config.ppo.ent_coef) * progress
                self.logger.record("train/ent_coef", model.ent_coef)
                now = time.time()
                then, steps = self.last_progress
                if now > then:
                    self.steps_per_second = (model.num_timesteps - steps) / (now - then)
                self.last_progress = (now, model.num_timesteps)
                self.logger.record("time/steps_per_second", self.steps_per_second)
                if self.bar is not None:
                    self.bar.set_postfix_str(f"{self.steps_per_second:,.0f} steps/s", refresh=False)

            def evaluate(self) -> dict[str, float]:
                self.last_eval = model.num_timesteps
                result = evaluate_model(model, config.rules, config.eval.games, config.eval.seed)
                row = {
                    "timesteps": model.num_timesteps,
                    "wall_minutes": (wall_offset + time.time() - self.start) / 60,
                    "mean_score": result["mean"],
                    "score_ci95": result["ci95_half_width"],
                    "percent_of_optimal": result["percent_of_optimal"],
                    "mean_regret": result["mean_regret"],
                    "steps_per_second": self.steps_per_second,
                }
                append_curve(curve_path, row)
                for key in ("mean_score", "percent_of_optimal", "mean_regret"):
                    self.logger.record(f"eval/{key}", row[key])
                message = (
                    f"[{row['timesteps']:>10,} steps, {row['wall_minutes']:6.1f} min] eval {row['mean_score']:.2f}"
                    f" +- {row['score_ci95']:.2f} ({row['percent_of_optimal']:.2f}% of optimal), "
                    f"regret {row['mean_regret']:.2f}, {row['steps_per_second']:,.0f} steps/s"
                )
                if self.bar is not None:
                    self.bar.write(message, file=sys.stderr)
                else:
                    print(message, file=sys.stderr, flush=True)
                return row

            def checkpoint(self) -> Path:
                self.last_checkpoint = model.num_timesteps
                path = run_dir / "checkpoints" / f"step_{model.num_timesteps}.zip"
                save_atomically(model, path)
                return path

        callback = RunCallback()
        interrupted = False
        try:
            model.learn(remaining, callback=callback, reset_num_timesteps=resume is None, tb_log_name="ppo")
        except Interrupted:
            interrupted = True
        finally:
            if callback.bar is not None:
                callback.bar.close()
        path = callback.checkpoint()
        if not interrupted and callback.last_eval != model.num_timesteps:
            callback.evaluate()
        save_atomically(model, run_dir / "model.zip")
        plot_curve(curve_path, run_dir / "learning_curve.png", levels, config.rules)
    env.close()
    if interrupted:
        print(f"interrupted: saved {path}; continue with: python train.py --resume {path}", file=sys.stderr)
    return run_dir


def save_atomically(model, path: Path) -> None:
    """Saves an SB3 model so that ``path`` is never half-written."""
    tmp = path.with_name(path.stem + ".tmp.zip")
    model.save(str(tmp))
    os.replace(tmp, path)


def write_curve(path: Path, rows: list[dict[str, float]]) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CURVE_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def append_curve(path: Path, row: dict[str, float]) -> None:
    with open(path, "a", newline="") as f:
        csv.DictWriter(f, fieldnames=CURVE_FIELDS).writerow(row)


def read_curve(path: Path) -> list[dict[str, float]]:
    with open(path, newline="") as f:
        return [{k: (int(v) if k == "timesteps" else float(v)) for k, v in row.items()} for row in csv.DictReader(f)]


def plot_curve(curve_path: Path, png_path: Path, levels: dict[str, float], rules: str) -> None:
    """Learning curve PNG: score vs wall-clock minutes and vs timesteps; optimal/greedy/random marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_curve(curve_path)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, x_key, x_label in (
        (axes[0], "wall_minutes", "wall-clock minutes"),
        (axes[1], "timesteps", "environment steps"),
    ):
        if rows:
            x = np.array([row[x_key] for row in rows])
            y = np.array([row["mean_score"] for row in rows])
            ci = np.array([row["score_ci95"] for row in rows])
            ax.plot(x, y, marker="o", markersize=3, label="PPO (deterministic)")
            ax.fill_between(x, y - ci, y + ci, alpha=0.25)
        for name, style in (("optimal", "-"), ("greedy", "--"), ("random", ":")):
            ax.axhline(levels[name], color="k", linestyle=style, linewidth=1, label=f"{name} {levels[name]:.1f}")
        ax.set_xlabel(x_label)
        ax.set_ylabel("mean score")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="lower right")
    optimal = levels["optimal"]
    secondary = axes[0].secondary_yaxis("right", functions=(lambda s: s / optimal * 100, lambda p: p * optimal / 100))
    secondary.set_ylabel("% of optimal")
    fig.suptitle(f"MaskablePPO on Yacht-v0 ({rules})")
    fig.tight_layout()
    tmp = png_path.with_name(png_path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, png_path)
