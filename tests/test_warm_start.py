"""Specification of a run started from a trained model (``init``, ``train.py --init MODEL``).

A solo model starting a run at a table acts exactly as it did (the table's columns start at zero) on every
observation of real games; the value head's output starts at zero and every other parameter is the model's;
what does not fit is refused in one line, before anything is written.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
import yaml
from helpers import REPO

from yacht_agents.ppo import build_model
from yacht_env.sb3 import YachtSB3VecEnv
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.sb3.model import make_model
from yacht_lab.training.sb3.ppo import make_vec_env
from yacht_lab.training.sb3.warm_start import warm_start

STANDARD = REPO / "models" / "ppo_standard.zip"


def started(**changes) -> tuple[TrainConfig, object]:
    config = TrainConfig(n_envs=4, init=str(STANDARD), **changes)
    model = make_model(config, make_vec_env(config), None)
    warm_start(model, config)
    return config, model


def table_observations(players: int = 2, steps: int = 120) -> np.ndarray:
    """Table views of real games against greedy, from the learner's seat (random actions among the legal)."""
    env = YachtSB3VecEnv(16, opponents=["greedy"] * (players - 1))
    env.seed(3)
    rng = np.random.default_rng(0)
    seen, obs = [], env.reset()
    for _ in range(steps):
        seen.append(obs)
        masks = env.action_masks()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, *_ = env.step(actions)
    return np.concatenate(seen)


@pytest.mark.parametrize("players", [2, 3])
def test_a_solo_model_starts_a_table_run_acting_exactly_as_it_did(players):
    _, model = started(opponents=["greedy"] * (players - 1), reward="win", reward_scale=1.0)
    source = build_model(STANDARD, device="cpu")
    obs = table_observations(players)
    solo = obs[:, :64]
    assert obs.shape[1] > 64 and np.ptp(obs[:, 64:], axis=0).max() > 0  # the table's part varies
    with torch.no_grad():
        new = model.policy.get_distribution(torch.from_numpy(obs)).distribution.logits
        old = source.policy.get_distribution(torch.from_numpy(solo)).distribution.logits
        values = model.policy.predict_values(torch.from_numpy(obs))
    torch.testing.assert_close(new, old, rtol=1e-5, atol=1e-5)
    assert torch.count_nonzero(values) == 0  # the critic's output starts at zero: its scale was the old reward's
    first = model.policy.mlp_extractor.policy_net[0].weight
    assert not first[:, 64 : obs.shape[1]].any() and first[:, :64].abs().sum() > 0


def test_every_parameter_is_the_models_but_the_value_output():
    _, model = started()
    source = build_model(STANDARD, device="cpu").policy.state_dict()
    for name, value in model.policy.state_dict().items():
        if name.startswith("value_net."):
            assert not value.any(), name
        else:
            torch.testing.assert_close(value, source[name], rtol=0, atol=0, msg=name)


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"policy": {"net_arch": [64, 64]}}, "has policy.net_arch {'pi': [256, 256], 'vf': [256, 256]}, this run's"),
        ({"rules": "classic"}, "has rules 'standard', this run's config has 'classic'"),
        ({"policy": {"keep_head": False}}, "has policy.keep_head True, this run's config has False"),
        ({"policy": {"chase_inputs": False, "keep_head": False}}, "has policy class 'OddsPolicy'"),
        ({"init": "models/nope.zip"}, "init: cannot load PPO model 'models/nope.zip': file not found"),
        ({"init": "nope"}, "init: cannot load PPO model 'nope': no shipped model of that name"),
    ],
)
def test_what_does_not_fit_is_refused_in_one_line(changes, fragment):
    config = TrainConfig(n_envs=4, init=str(STANDARD))
    for key, value in changes.items():
        if key == "policy":
            for name, setting in value.items():
                setattr(config.policy, name, setting)
        else:
            setattr(config, key, value)
    model = make_model(config, make_vec_env(config), None)
    with pytest.raises(ValueError, match="init: ") as error:
        warm_start(model, config)
    assert fragment in str(error.value) and "\n" not in str(error.value)


def test_a_table_model_starts_only_a_table_of_its_size(tmp_path):
    _, table_model = started(opponents=["greedy"], reward="win", reward_scale=1.0)
    path = tmp_path / "table2.zip"
    table_model.save(path)
    config = TrainConfig(n_envs=4, init=str(path), opponents=["greedy", "greedy"])
    model = make_model(config, make_vec_env(config), None)
    with pytest.raises(ValueError, match=r"saw observations of 79 values: neither this run's \(92\)"):
        warm_start(model, config)
    same = TrainConfig(n_envs=4, init=str(path), opponents=["random"])
    model = make_model(same, make_vec_env(same), None)
    warm_start(model, same)
    torch.testing.assert_close(
        model.policy.mlp_extractor.policy_net[0].weight, table_model.policy.mlp_extractor.policy_net[0].weight
    )


@pytest.mark.slow  # an end-to-end training run: python -m pytest -m slow (CI runs it)
def test_train_py_init_runs_at_a_table_and_records_its_start(tmp_path):
    config = tmp_path / "init.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "total_timesteps": 1024,
                "n_envs": 8,
                "reward_scale": 1.0,
                "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 1},
                "eval": {"every_timesteps": 1024, "games": 20},
                "checkpoint_every_timesteps": 1024,
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "train.py", "--config", str(config), "--init", "standard", "--opponents", "greedy"]
        + ["--reward", "win", "--output-dir", str(tmp_path / "runs"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert yaml.safe_load((run / "config.yaml").read_text())["init"] == "standard"
    assert "--init standard" in (run / "command.txt").read_text()
    # The first curve row is the start model's play: it wins games against greedy from the first evaluation.
    first = (run / "learning_curve.csv").read_text().splitlines()[1].split(",")
    assert float(first[2]) > 0.5


@pytest.mark.slow
def test_train_py_refuses_a_bad_init_in_one_line_and_writes_nothing(tmp_path):
    output = tmp_path / "runs"
    done = subprocess.run(
        [sys.executable, "train.py", "--init", "classic", "--output-dir", str(output), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"train.py: error: init: {str(REPO / 'models' / 'ppo_classic.zip')!r} has rules 'classic', "
        "this run's config has 'standard' (the network must be the one the config describes)"
    ]
    assert not output.exists() or not any(output.iterdir())
