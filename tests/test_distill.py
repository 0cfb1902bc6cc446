"""Policy-iteration distillation (``yacht_lab/training/sb3/distill.py``): the learner learns the win agent's moves over
its start.

* The positions are the learner's own decisions at its seat, as it sees the table; the labels are the teacher's moves
  and the gaps its win probabilities; an update raises the labels' odds and keeps the newest positions; an iteration
  is reproducible by its seed.
* A run writes its folder (iterations, curve against each opponent, checkpoints, the model, which plays at its
  table), and ``python train.py --config configs/selfplay.yaml`` runs the recipe end to end on a tiny budget.
* The config: one error line per bad value; the old form (``rollouts: labels: exact``, as the shipped model's run
  folder saved it) reads as the ``distill`` section; the retired research options are refused in one line.
"""

from __future__ import annotations

import copy
import csv
import math

import numpy as np
import pytest
import torch
import yaml
from helpers import REPO, run_script, tiny_distill

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_lab.measure.head_to_head import head_to_head
from yacht_lab.training.config import DistillConfig, PolicyConfig, TrainConfig, from_dict, load_config, validate
from yacht_lab.training.sb3 import distill
from yacht_lab.training.sb3.distill import CURVE_FIELDS, ITERATION_FIELDS, Distiller, exact_teacher, train_distill
from yacht_lab.training.sb3.model import start_model
from yacht_lab.training.sb3.ppo import make_vec_env, train


@pytest.fixture(scope="module")
def started():
    """A 2-player learner warm-started from the shipped model, its opponents, a teacher, and its start weights."""
    config = TrainConfig(
        n_envs=2,
        opponents=["optimal"],
        reward="win",
        init=str(REPO / "models" / "ppo_standard.zip"),
        policy=PolicyConfig(net_arch=[256, 256], chase_inputs=True, keep_head=True, bonus_odds=True),
    )
    model = start_model(config, make_vec_env(config))
    opponents = [make_agent("optimal"), make_agent("ppo:standard")]
    teacher = make_agent("win")  # any agent of the table; a run's is the win agent over the start's own policy
    return model, opponents, teacher, copy.deepcopy(model.policy.state_dict())


def fresh(started, seed: int = 0, **settings) -> Distiller:
    """A trainer on the start's weights with a new optimizer (what a run begins with)."""
    model, opponents, teacher, weights = started
    policy = model.policy
    policy.load_state_dict(weights)
    policy.optimizer = policy.optimizer_class(policy.parameters(), lr=1.0, **policy.optimizer_kwargs)
    settings = {"positions": 300, "tables": 12, **settings}
    return Distiller(model, opponents, "standard", 2, teacher, seed=seed, **settings)


def test_the_positions_are_the_learners_decisions_as_it_sees_the_table(started):
    run = fresh(started)
    obs, masks = run.play_games()
    assert 200 < len(obs) < 450 and masks.shape == (len(obs), 44) and masks.any(axis=1).all()
    assert obs.shape[1] == MultiplayerEncoder("standard", 2).size
    opened = R.open_bits(12).sum(axis=1)
    decoded = run.solo.decode(obs[:, : run.solo.size])[2]  # the own game's open mask: every stage of a game
    assert set(opened[decoded]) == set(range(1, 13))


def test_the_labels_are_the_teachers_moves_and_gaps(started):
    run = fresh(started)
    data = run.label(*run.play_games())
    obs, masks, teacher = data["obs"], data["masks"], run.teacher
    assert np.array_equal(data["labels"], teacher.act(obs, masks))
    with torch.no_grad():
        top = run._logits(obs, masks).argmax(1).numpy()
    assert np.array_equal(data["top"], top)
    values = teacher.win_probabilities(*teacher.read(obs))
    rows = np.arange(len(top))
    assert np.allclose(data["gaps"], values[rows, data["labels"]] - values[rows, top])
    assert (data["gaps"] >= -1e-12).all() and (data["gaps"][data["labels"] == top] == 0).all()
    assert (data["labels"] != top).mean() > 0.02  # the start and the win agent differ on some moves


def test_an_update_raises_the_labels_and_remembers_them(started):
    run = fresh(started, memory=150)
    data = run.label(*run.play_games())
    assert (data["masks"][np.arange(len(data["labels"])), data["labels"]]).all()
    rng = np.random.default_rng(0)  # labels that are often not the policy's move: the update must raise them
    data["labels"] = np.where(data["masks"], rng.random(data["masks"].shape), -1).argmax(axis=1)
    policy = run.model.policy
    obs = torch.as_tensor(data["obs"])

    def label_log_probs():
        with torch.no_grad():
            logits = policy.get_distribution(obs, action_masks=data["masks"]).distribution.logits
        return logits.log_softmax(-1)[np.arange(len(obs)), data["labels"]]

    before = label_log_probs()
    stats = run.update(data)
    assert (label_log_probs() - before).mean() > 0.1
    assert stats["memory"] == len(data["labels"])
    for _ in range(3):  # the memory: the newest iterations that hold at least 150 positions
        stats = run.update(data)
    n = len(data["labels"])
    assert stats["memory"] == n * min(4, -(-150 // n))


def test_an_update_ends_after_the_step_where_it_is_asked_to_stop(started):
    run = fresh(started, memory=150, epochs=4, batch_size=64)
    data = run.label(*run.play_games())
    asked = []
    run.should_stop = lambda: asked.append(True) or len(asked) == 3
    stats = run.update(data)
    assert len(asked) == 3 and math.isfinite(stats["cross_entropy"])  # three gradient steps of four passes


def test_a_distill_run_past_max_minutes_stops_in_its_first_update(tmp_path, monkeypatch):
    monkeypatch.setattr(
        distill, "exact_teacher", lambda init, rules, players: make_agent("win", rules, players=players)
    )
    from yacht_lab.training.run_context import RunContext

    steps = []
    step = Distiller._step
    monkeypatch.setattr(Distiller, "_step", lambda self, *batch: steps.append(1) or step(self, *batch))
    # max_minutes passes in the first gradient step (one past during an evaluation ends the run before any iteration)
    monkeypatch.setattr(RunContext, "out_of_time", property(lambda self: bool(steps)))
    config = tiny_distill(epochs=1000, batch_size=1, iterations=5)
    run = train_distill(config, tmp_path, command="python train.py --config tiny.yaml", progress=False)
    assert len(steps) == 1
    with open(run / "iterations.csv", newline="") as file:
        assert [row["iteration"] for row in csv.DictReader(file)] == ["1"]
    assert (run / "model.zip").is_file() and (run / "checkpoints" / "iteration_1.zip").is_file()


def test_an_iteration_is_reproducible_by_its_seed(started):
    stats, weights = [], []
    for seed in (7, 7, 8):
        run = fresh(started, seed, positions=100, tables=8)
        stats.append(run.iteration())
        weights.append(copy.deepcopy(run.model.policy.state_dict()))
    assert stats[0] == stats[1] and stats[2] != stats[0]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])


# --------------------------------------------------------------------------------------------------
# A run
# --------------------------------------------------------------------------------------------------
def test_a_distill_run_writes_its_folder(tmp_path, monkeypatch):
    """The run's folder, with a quick teacher (the exact one reads the start's whole policy: a minute; the slow set
    runs it)."""
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.training.runs import read_curve

    monkeypatch.setattr(
        distill, "exact_teacher", lambda init, rules, players: make_agent("win", rules, players=players)
    )
    config = tiny_distill()
    run = train_distill(config, tmp_path, command="python train.py --config tiny.yaml", progress=False)
    names = sorted(p.name for p in run.iterdir())
    assert names == ["checkpoints", "command.txt", "config.yaml", "iterations.csv", "learning_curve.csv", "model.zip"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["iteration_2.zip", "iteration_3.zip"]
    assert load_config(run / "config.yaml").distill == config.distill  # the exact config, read back
    rows = read_curve(run / "iterations.csv", ITERATION_FIELDS)
    assert [row["iteration"] for row in rows] == [1, 2, 3]
    assert all(row["positions"] > 0 and 0 <= row["changed"] <= 1 for row in rows)
    assert run.name.startswith("YachtVersus-v0__standard__distill__0__")
    with open(run / "learning_curve.csv", newline="") as file:
        curve = list(csv.DictReader(file))
    assert tuple(curve[0]) == CURVE_FIELDS
    assert [(row["iteration"], row["member"], row["games"]) for row in curve] == [
        (str(i), member, "8") for i in (0, 2, 3) for member in ("optimal", "greedy")
    ]
    assert all(0 <= float(row["win_rate"]) <= 1 for row in curve)
    agent = PPOAgent(run / "model.zip")  # a model like any other: the safe loader reads it, at a 2-player table
    assert agent.table_players == 2
    with pytest.raises(ValueError, match="init must be a solo \\(Yacht-v0\\) model, and '.*' sees a table of 2"):
        exact_teacher(str(run / "model.zip"), "standard", 2)
    again = train_distill(config, tmp_path, command="again", progress=False)  # the same seed: the same model
    a, b = (
        PPOAgent(run / "model.zip").model.policy.state_dict(),
        PPOAgent(again / "model.zip").model.policy.state_dict(),
    )
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow  # the exact teacher reads the start's whole policy (about a minute)
def test_train_py_runs_the_selfplay_recipe_end_to_end_on_a_tiny_budget(tmp_path):
    """``configs/selfplay.yaml`` with only its budget made small: the distillation, its exact teacher, the run
    folder; the policy's moves differ from the teacher's less after its updates."""
    from yacht_lab.training.runs import read_curve

    recipe = yaml.safe_load((REPO / "configs" / "selfplay.yaml").read_text())
    recipe["distill"].update(positions=8000, tables=300, iterations=3, eval_every=3, epochs=4, learning_rate=3e-4)
    recipe["eval"]["games"] = 2
    path = tmp_path / "selfplay.yaml"
    path.write_text(yaml.safe_dump(recipe))
    done = run_script("train.py", "--config", str(path), "--output-dir", str(tmp_path / "runs"), timeout=600)
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("YachtVersus-v0__standard__distill__4__") and (run / "model.zip").is_file()
    rows = read_curve(run / "iterations.csv", ITERATION_FIELDS)
    # `changed`: the share of positions where the teacher's move is not the policy's, before that iteration's update.
    assert len(rows) == 3 and all(row["positions"] > 6000 for row in rows)
    assert rows[0]["changed"] > 0.1 and rows[-1]["changed"] < rows[0]["changed"] - 0.01
    assert exact_teacher("standard", "standard", 2).distributions.solution is None  # the start's play, no solver


# --------------------------------------------------------------------------------------------------
# The config
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"init": None}, "distill needs init"),
        ({"reward": "score"}, "reward must be 'win'"),
        ({"opponents": ["greedy"]}, "leave opponents empty"),
        ({"distill": {"opponents": []}}, "distill.opponents must be a list of 1.."),
        ({"distill": {"opponents": ["optimal", "optimal"]}}, "lists 'optimal' twice"),
        ({"distill": {"opponents": ["nobody"]}}, "unknown agent 'nobody'"),
        ({"distill": {"players": 1}}, "distill.players must be an int in 2..10"),
        ({"distill": {"learning_rate": 0}}, "distill.learning_rate must be a number > 0"),
        ({"distill": {"positions": 0}}, "distill.positions must be an int >= 1"),
        ({"distill": {"memory": 0.5}}, "distill.memory must be an int >= 1"),
        # Sizes without a bound exhausted memory (tables, positions at 10**9) or ignored max_minutes (epochs).
        ({"distill": {"tables": 10**9}}, "distill.tables must be an int >= 1 and <= 100,000, got 1000000000"),
        ({"distill": {"positions": 10**9}}, "distill.positions must be an int >= 1 and <= 1,000,000"),
        ({"distill": {"memory": 10**9}}, "distill.memory must be an int >= 1 and <= 2,000,000"),
        ({"distill": {"epochs": 10**9}}, "distill.epochs must be an int >= 1 and <= 1,000"),
        ({"distill": {"batch_size": 10**9}}, "distill.batch_size must be an int >= 1 and <= 2,000,000"),
        ({"distill": {"iterations": 10**9}}, "distill.iterations must be an int >= 1 and <= 100,000"),
        ({"eval": {"games": 10**7}}, "eval.games must be at most 250,000 deals at a table of 2"),
        ({"rules": "yahtzee", "init": "yahtzee"}, "distill needs the start's exact score distributions"),
    ],
)
def test_a_bad_distill_config_is_one_error(change, message):
    config = tiny_distill()
    for key, value in change.items():
        if key in ("distill", "eval"):
            for name, setting in value.items():
                setattr(getattr(config, key), name, setting)
        else:
            setattr(config, key, value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        validate(config)


def test_the_recipes_read_from_yaml_and_a_distill_run_is_not_resumed_nor_trained_by_ppo(tmp_path):
    for path, players in (("configs/selfplay.yaml", 2), ("benchmarks/training/selfplay_exact_3p.yaml", 3)):
        config = load_config(REPO / path)
        assert config.distill.players == players and config.init == "standard" and config.reward == "win"
        assert config.distill.opponents == ["optimal", "ppo:standard"] and config.env_id == "YachtVersus-v0"
    path = tmp_path / "bad.yaml"
    path.write_text("reward: win\ninit: standard\ndistill:\n  sideways: 1\n")
    with pytest.raises(ValueError, match="unknown config key distill.sideways"):
        load_config(path)
    with pytest.raises(ValueError, match="trains by yacht_lab.training.sb3.distill.train_distill, not by PPO"):
        train(tiny_distill(), tmp_path)
    checkpoint = tmp_path / "run" / "checkpoints" / "iteration_2.zip"  # a distill run's folder
    checkpoint.parent.mkdir(parents=True)
    checkpoint.write_bytes(b"")
    (tmp_path / "run" / "config.yaml").write_text((REPO / "configs" / "selfplay.yaml").read_text())
    done = run_script("train.py", "--resume", str(checkpoint), "--output-dir", str(tmp_path / "runs"))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "train.py: error: a distill run is not resumed: start a new run from its model (init)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml", "run"]


def test_the_shipped_runs_old_config_reads_as_the_selfplay_recipe():
    """``models/ppo_selfplay_standard_run/config.yaml`` was saved with ``rollouts: labels: exact`` and the five
    research keys of ``ppo`` at their inert values: it loads, quietly, as ``configs/selfplay.yaml``."""
    saved = load_config(REPO / "models" / "ppo_selfplay_standard_run" / "config.yaml")
    assert saved.to_dict() == load_config(REPO / "configs" / "selfplay.yaml").to_dict()
    assert saved.distill == DistillConfig(opponents=["optimal", "ppo:standard"], iterations=112)
    assert "rollouts" not in saved.to_dict() and "kl_to_init" not in saved.to_dict()["ppo"]


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ({"ppo": {"kl_to_init": 0.1}}, "ppo.kl_to_init is a retired research option"),
        ({"ppo": {"explore_temperature": 2.0}}, "ppo.explore_temperature is a retired research option"),
        ({"ppo": {"critic_warmup_timesteps": 1000}}, "ppo.critic_warmup_timesteps is a retired research option"),
        ({"rollouts": {"labels": "race"}}, "rollouts labelled by a race, or only on the last turns, is a retired"),
        ({"rollouts": {"labels": "exact", "late_turns": 4}}, "or only on the last turns, is a retired"),
        ({"rollouts": {"labels": "exact", "late_turns": 12}, "distill": {}}, "a distill section or the old rollouts"),
    ],
)
def test_an_old_config_running_a_retired_option_is_refused_in_one_line(old, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        from_dict({"reward": "win", "init": "standard", **old})


def test_an_old_rollouts_section_keeps_its_old_defaults():
    old = from_dict({"rollouts": {"labels": "exact", "late_turns": 12, "anchor": 10.0, "futures": 64}})
    assert old.distill == DistillConfig(
        positions=2048, tables=1024, memory=200_000, epochs=4, iterations=1000, eval_every=4
    )
    assert from_dict({"ppo": {"kl_to_init": 0.0, "n_steps": 64}}).ppo.n_steps == 64


def test_a_ppo_runs_default_config_has_no_research_key():
    """configs/ppo.yaml and the built-in defaults hold what a user of the PPO recipe tunes, nothing of the tries."""
    retired = {"kl_to_init", "learn_last_turns", "kl_to_init_last_turns", "explore_temperature"}
    retired |= {"critic_warmup_timesteps", "rollouts", "distill", "anchor", "late_turns"}
    defaults = TrainConfig().to_dict()
    shipped = yaml.safe_load((REPO / "configs" / "ppo.yaml").read_text())

    def keys(data):
        return {key for section in data.values() if isinstance(section, dict) for key in section} | set(data)

    assert not keys(defaults) & retired and not keys(shipped) & retired
    assert load_config(REPO / "configs" / "ppo.yaml").to_dict() == defaults


def test_the_shipped_self_play_model_sits_at_two_player_tables_and_beats_its_start():
    """models/ppo_selfplay_standard.zip (``configs/selfplay.yaml``): a table model of two players, read by the safe
    loader, which wins more than half of its games against the model it started from (200,000 games: 51.31% [51.11,
    51.50]; these 6,000: 51.50% [50.36, 52.64])."""
    from yacht_agents.ppo import PPOAgent

    model = make_agent("ppo:selfplay_standard")
    assert isinstance(model, PPOAgent) and model.table_players == 2 and model.observation_size == 79
    result = head_to_head([model, make_agent("ppo:standard")], 2, 1_500, seed=0, calibration=False)
    pair = result.to_dict()["head_to_head"]["ppo:selfplay_standard vs ppo:standard"]
    assert pair["games"] == 6_000 and pair["win_rate_a_ci95"][0] > 0.5
