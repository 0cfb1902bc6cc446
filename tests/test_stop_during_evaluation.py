"""A stop asked while a trainer evaluates (Ctrl-C, SIGTERM or ``max_minutes`` passing during it) ends the run there:
every trainer reads its stop flag again after each evaluation, so no iteration and no evaluation more is run.
"""

from __future__ import annotations

import csv

import pytest
from helpers import TINY_PPO, merged, tiny_distill

from yacht_lab.training.config import from_dict, validate
from yacht_lab.training.run_context import RunContext

pytest.importorskip("torch")

SEARCH = {
    "rules": "standard",
    "reward": "score",
    "total_timesteps": 1440,  # three iterations of 480 turns
    "eval": {"every_timesteps": 960, "games": 4, "seed": 1000},
    "checkpoint_every_timesteps": 480,
    "search": {"players": 1, "net_arch": [16], "tables": 40, "epochs": 1, "batch_size": 64},
}


@pytest.fixture
def time_runs_out_in(monkeypatch):
    """``time_runs_out_in(module, name, call)``: ``max_minutes`` passes during the ``call``-th call of
    ``module.name`` (an evaluation); returns how many calls there were.
    """
    out = []
    monkeypatch.setattr(RunContext, "out_of_time", property(lambda self: bool(out)))

    def arrange(module, name: str, call: int) -> list[int]:
        calls = []
        original = getattr(module, name)

        def evaluating(*args, **kwargs):
            calls.append(1)
            result = original(*args, **kwargs)
            if len(calls) == call:
                out.append(True)
            return result

        monkeypatch.setattr(module, name, evaluating)
        return calls

    return arrange


def curve(run_dir, key: str = "timesteps") -> list[str]:
    with open(run_dir / "learning_curve.csv", newline="") as file:
        return [row[key] for row in csv.DictReader(file)]


def checkpoints(run_dir) -> list[str]:
    return sorted(p.name for p in (run_dir / "checkpoints").iterdir())


def test_the_search_trainer_stops_after_the_evaluation(tmp_path, time_runs_out_in):
    from yacht_lab.training.search import trainer

    calls = time_runs_out_in(trainer, "_evaluate", 2)  # the evaluation at 960 turns
    run = trainer.train_search(validate(from_dict(SEARCH)), tmp_path, name="run", progress=False)
    assert len(calls) == 2 and curve(run) == ["0", "960"]
    assert checkpoints(run) == ["step_480.npz", "step_960.npz"] and (run / "model.npz").is_file()


def test_the_jax_trainer_stops_after_the_evaluation(tmp_path, time_runs_out_in):
    pytest.importorskip("jax")
    from yacht_lab.training.jax import ppo

    config = validate(from_dict(merged(TINY_PPO, {"jax": {"seeds": 1}})))  # two updates, evaluated at each
    calls = time_runs_out_in(ppo, "_rows", 1)  # the first evaluation, before any update
    run = ppo.train_jax(config, tmp_path, name="run", progress=False)
    assert len(calls) == 1 and sorted(set(curve(run))) == ["0"]
    assert checkpoints(run) == ["step_0.npz"] and (run / "model.npz").is_file()


def test_sb3_ppo_stops_after_the_evaluation(tmp_path, time_runs_out_in):
    from yacht_lab.training.sb3 import callbacks
    from yacht_lab.training.sb3.ppo import train

    calls = time_runs_out_in(callbacks.CurveCallback, "evaluate", 2)  # at the second rollout's start
    run = train(validate(from_dict(TINY_PPO)), tmp_path, name="run", progress=False)
    assert len(calls) == 2 and curve(run) == ["0", "1024"]  # not a second row of the same policy
    assert (run / "model.zip").is_file()


def test_the_distillation_stops_after_the_evaluation(tmp_path, monkeypatch, time_runs_out_in):
    from yacht_agents import make_agent
    from yacht_lab.training.sb3 import distill

    monkeypatch.setattr(
        distill, "exact_teacher", lambda init, rules, players: make_agent("win", rules, players=players)
    )
    calls = time_runs_out_in(distill, "evaluate_against", 2)  # the start's evaluation, against both opponents
    run = distill.train_distill(tiny_distill(), tmp_path, name="run", progress=False)
    assert len(calls) == 2 and curve(run, "iteration") == ["0", "0"]
    assert checkpoints(run) == ["iteration_0.zip"] and not (run / "iterations.csv").exists()
