"""What ``train.py`` and the config reader say about input they cannot take: a key written twice, a reward or a flag
that the config's trainer does not take, a reward scale that could only diverge, and ``--help`` in plain words; each
one line (exit status 2), nothing written.
"""

from __future__ import annotations

import pytest
from helpers import REPO, TINY_PPO, run_script, write_config

from yacht_lab.training.config import from_dict, load_config, validate

SEARCH = {
    "rules": "standard",
    "reward": "score",
    "total_timesteps": 480,
    "eval": {"every_timesteps": 480, "games": 10, "seed": 1000},
    "checkpoint_every_timesteps": 480,
    "search": {"players": 1, "net_arch": [16], "tables": 40, "epochs": 1, "batch_size": 64},
}


def one_line_error(done, fragment: str, runs) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("train.py: error: "), done.stderr
    assert fragment in done.stderr, done.stderr
    assert not runs.exists() or not any(runs.iterdir())


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("seed: 1\nn_envs: 8\nseed: 2\n", "seed", 3),
        ("ppo:\n  n_steps: 128\n  n_epochs: 2\n  n_steps: 256\n", "n_steps", 4),
        ("eval: {games: 10, games: 20}\n", "games", 1),
    ],
)
def test_a_key_written_twice_is_refused_in_one_line(tmp_path, text, key, line):
    path = tmp_path / "twice.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"the key '{key}' is written twice; keep one \(line {line}\)$"):
        load_config(path)


def test_train_py_refuses_a_key_written_twice(tmp_path):
    path = write_config(tmp_path / "c.yaml")
    path.write_text(path.read_text() + "seed: 7\nseed: 8\n")
    done = run_script("train.py", "--config", str(path), "--output-dir", str(tmp_path / "runs"))
    one_line_error(done, "the key 'seed' is written twice", tmp_path / "runs")


def test_win_on_a_search_config_speaks_of_its_table_not_of_opponents():
    with pytest.raises(ValueError, match=r"the search trainer trains solo on reward: score \(search.players: 1\)") as e:
        validate(from_dict({**SEARCH, "reward": "win"}))
    assert "opponents" not in str(e.value)


@pytest.mark.parametrize("scale", [1e30, 101.0])
def test_a_reward_scale_that_could_only_diverge_is_refused(scale):
    with pytest.raises(ValueError, match=r"reward_scale must be a number > 0 and <= 100"):
        validate(from_dict({**TINY_PPO, "reward_scale": scale}))
    validate(from_dict({**TINY_PPO, "reward_scale": 100.0}))


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--n-envs", "8"], "n_envs (--n-envs) does not apply"),
        (["--opponents", "greedy"], "the search trainer plays itself"),
    ],
)
def test_a_search_config_refuses_flags_it_cannot_take(tmp_path, flags, fragment):
    config = write_config(tmp_path / "search.yaml", SEARCH)
    done = run_script("train.py", "--config", str(config), *flags, "--output-dir", str(tmp_path / "runs"))
    one_line_error(done, fragment, tmp_path / "runs")


def test_help_names_every_trainer_in_plain_text():
    done = run_script("train.py", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "search section" in text and "jax section" in text and "distill section" in text
    for markup in (":func:", ":class:", ":mod:", "`"):
        assert markup not in done.stdout


def test_a_model_cards_run_folder_says_where_its_model_is():
    from yacht_agents import make_agent

    with pytest.raises(ValueError) as error:
        make_agent(f"search:{REPO / 'models' / 'search_standard_run'}")
    message = str(error.value)
    assert "a folder without a model.npz" in message and "run folder or a shipped name" not in message
    assert f"give {REPO / 'models' / 'search_standard.npz'} or search:standard" in message
