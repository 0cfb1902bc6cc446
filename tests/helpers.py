"""What several test files share: the repository's path, running its scripts, and tiny training configs."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A PPO run of 2,048 steps in two rollouts of 1,024 (8 games x 128 steps), evaluated and checkpointed every rollout.
TINY_PPO = {
    "rules": "standard",
    "seed": 0,
    "total_timesteps": 2048,
    "max_minutes": None,
    "n_envs": 8,
    "torch_threads": 1,
    "policy": {"net_arch": [32, 32]},
    "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 2},
    "eval": {"every_timesteps": 1024, "games": 100, "seed": 1000},
    "checkpoint_every_timesteps": 1024,
}

# A distillation of three iterations of a few hundred positions (configs/selfplay.yaml's recipe, made small).
TINY_DISTILL = {
    "opponents": ["optimal", "greedy"],
    "positions": 24,
    "tables": 8,
    "memory": 1000,
    "iterations": 3,
    "eval_every": 2,
}


def run_script(script: str, *args: str, cwd: Path = REPO, timeout: float = 120, **options):
    """``python <REPO>/<script> ARGS`` in ``cwd``, its output captured as text (``options``: ``input``, ``umask``,
    ``env``, as :func:`subprocess.run` takes them)."""
    return subprocess.run(
        [sys.executable, str(REPO / script), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, **options
    )


def merged(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` applied, nested sections merged key by key."""
    result = copy.deepcopy(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def write_config(path: Path, base: dict = TINY_PPO, **changes) -> Path:
    """Writes ``base`` (a tiny PPO run) with ``changes`` to ``path`` as YAML; returns the path."""
    import yaml  # here, not at the top: the web extra's tests import this module without pyyaml

    path.write_text(yaml.safe_dump(merged(base, changes), sort_keys=False))
    return path


def tiny_distill(**changes):
    """A validated tiny distillation config: :data:`TINY_DISTILL` with ``changes`` to its ``distill`` section."""
    from yacht_lab.training.config import DistillConfig, EvalConfig, PolicyConfig, TrainConfig, validate

    return validate(
        TrainConfig(
            reward="win",
            init="standard",
            policy=PolicyConfig(net_arch=[256, 256], chase_inputs=True, keep_head=True, bonus_odds=True),
            eval=EvalConfig(games=2, seed=5),
            distill=DistillConfig(**{**TINY_DISTILL, **changes}),
        )
    )
