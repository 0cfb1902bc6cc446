"""The JAX trainer end to end: train.py with a jax section writes a run folder of data, evaluate.py seats its policy
(``jax:PATH``), the same seed gives the same run, and bad input is one clear error. Skipped without jax.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("gymnax")

from helpers import TINY_PPO, merged, run_script, write_config  # noqa: E402

from yacht_agents import make_agent, parse_spec  # noqa: E402
from yacht_env.game import game_streams  # noqa: E402
from yacht_lab.training.config import from_dict, validate  # noqa: E402

TINY_JAX = merged(TINY_PPO, {"jax": {"seeds": 2}})
# Self-play at two-seat tables on the win reward: 2,048 decisions in two updates, 20 deals (80 games) per evaluation.
TINY_TABLE = merged(
    TINY_JAX, {"reward": "win", "reward_scale": 1.0, "jax": {"seeds": 1, "players": 2}, "eval": {"games": 20}}
)


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    """One tiny JAX run through train.py (two seeds, 2,048 steps each)."""
    root = tmp_path_factory.mktemp("jax")
    config = write_config(root / "jax.yaml", TINY_JAX)
    done = run_script("train.py", "--config", str(config), "--output-dir", str(root / "runs"), timeout=600)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (root / "runs").iterdir()
    return run_dir, done


@pytest.fixture(scope="module")
def table_run(jax_run, tmp_path_factory):
    """A tiny self-play run at two-seat tables through train.py, started from the solo run's model."""
    root = tmp_path_factory.mktemp("jax_table")
    config = write_config(root / "table.yaml", TINY_TABLE)
    solo = jax_run[0] / "params" / "seed_1.npz"
    done = run_script(
        "train.py", "--config", str(config), "--init", str(solo), "--output-dir", str(root / "runs"), timeout=600
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = (root / "runs").iterdir()
    return run_dir, solo


def test_train_py_runs_the_jax_trainer_and_writes_a_run_folder_of_data(jax_run):
    run_dir, done = jax_run
    assert f"run folder: {run_dir}" in done.stdout and "__jax_ppo__" in run_dir.name
    names = {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*") if p.is_file()}
    assert names == {
        "config.yaml",
        "command.txt",
        "learning_curve.csv",
        "aggregate_curve.csv",
        "selection.json",
        "checkpoints/step_1024.npz",
        "checkpoints/step_2048.npz",
        "model.npz",
        "model.json",
        "params/seed_0.npz",
        "params/seed_0.json",
        "params/seed_1.npz",
        "params/seed_1.json",
    }
    rows = (run_dir / "learning_curve.csv").read_text().splitlines()
    assert rows[0] == "timesteps,wall_minutes,seed,mean_score,percent_of_optimal,steps_per_second"
    assert [row.split(",")[:1] + row.split(",")[2:3] for row in rows[1:]] == [
        [str(t), str(s)] for t in (0, 1024, 2048) for s in (0, 1)
    ]
    meta = json.loads((run_dir / "model.json").read_text())
    assert meta["rules"] == "standard" and meta["net_arch"] == [32, 32] and meta["obs_size"] == 64
    with np.load(run_dir / "model.npz", allow_pickle=False) as data:  # data, never pickle
        assert data["action.w"].shape == (32, 44) and all(data[name].dtype == np.float32 for name in data.files)
    saved = from_dict(__import__("yaml").safe_load((run_dir / "config.yaml").read_text()))
    assert saved.jax.seeds == 2 and saved.total_timesteps == 2048


@pytest.mark.slow
def test_the_same_config_gives_the_same_run(jax_run, tmp_path):
    run_dir, _ = jax_run
    config = write_config(tmp_path / "jax.yaml", TINY_JAX)
    done = run_script("train.py", "--config", str(config), "--output-dir", str(tmp_path / "runs"), timeout=600)
    assert done.returncode == 0, done.stderr
    (again,) = (tmp_path / "runs").iterdir()
    for name in ("seed_0.npz", "seed_1.npz"):
        with np.load(run_dir / "params" / name) as a, np.load(again / "params" / name) as b:
            assert a.files == b.files and all(np.array_equal(a[n], b[n]) for n in a.files)

    def scores(folder):
        return [row.split(",")[3] for row in (folder / "learning_curve.csv").read_text().splitlines()]

    assert scores(run_dir) == scores(again)
    with np.load(run_dir / "params" / "seed_0.npz") as a, np.load(run_dir / "params" / "seed_1.npz") as b:
        assert not all(np.array_equal(a[n], b[n]) for n in a.files)  # another seed, another run


def test_evaluate_py_seats_the_jax_policy(jax_run):
    run_dir, _ = jax_run
    done = run_script("evaluate.py", "--agents", "random", f"jax:{run_dir}", "--games", "50", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert f"jax:{run_dir}" in done.stdout


def test_the_jax_agent_plays_legal_moves_and_is_deterministic(jax_run):
    run_dir, _ = jax_run
    from yacht_env.game import GameState
    from yacht_env.rules import prefix_codes

    agent = make_agent(f"jax:{run_dir / 'model.npz'}", "standard")
    assert parse_spec(f"jax:{run_dir}") == ("jax", str(run_dir))
    game = GameState("standard", 30)
    game.start(prefix_codes(game_streams(0, range(30)).reshape(30, -1, 5)))
    for _ in range(40):
        obs = agent.encoder.flat(game.roll, game.rolls_left, game.open_mask)
        actions = agent.act(obs, game.mask)
        assert game.mask[np.arange(30), actions].all() and np.array_equal(actions, agent.act(obs, game.mask))
        game.play(actions, legal=game.open_mask != 0)
    assert (game.open_mask == 0).all()


def test_a_bad_jax_policy_is_one_clear_error(jax_run, tmp_path):
    run_dir, _ = jax_run
    with pytest.raises(ValueError, match="no JAX policy"):
        make_agent(f"jax:{tmp_path / 'missing.npz'}")
    with pytest.raises(ValueError, match="plays the 'standard' rules, not 'classic'"):
        make_agent(f"jax:{run_dir}", "classic")
    (tmp_path / "bad.npz").write_bytes(b"not an npz")
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="cannot read the JAX policy"):
        make_agent(f"jax:{tmp_path / 'bad.npz'}")
    done = run_script("evaluate.py", "--agents", f"jax:{tmp_path / 'missing.npz'}", "--games", "10")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "no JAX policy" in done.stderr


def test_a_bad_jax_section_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown config key jax.seedz"):
        from_dict(merged(TINY_JAX, {"jax": {"seedz": 2}}))
    for changes, message in (
        ({"jax": {"seeds": 0}}, "jax.seeds"),
        ({"opponents": ["greedy"]}, "plays itself"),
        ({"policy": {"activation": "tanh"}}, "relu"),
    ):
        with pytest.raises(ValueError, match=message):
            validate(from_dict(merged(TINY_JAX, changes)))
    config = write_config(tmp_path / "bad.yaml", TINY_JAX, jax={"seeds": 1000})
    done = run_script("train.py", "--config", str(config), "--output-dir", str(tmp_path / "runs"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "jax.seeds" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_solo_network_widened_to_a_table_plays_exactly_as_before():
    import jax
    import jax.numpy as jnp

    from yacht_agents.jax_policy import NetworkSpec, apply, init_params, odds_tables, table_params
    from yacht_env.jax import YachtGame

    game, solo_game = YachtGame("standard", 2), YachtGame("standard", 1)
    spec = NetworkSpec("standard", solo_game.observation_size, 44, (32, 32))
    odds, where = odds_tables(game.rules, spec.bonus_odds)
    params = jax.tree.map(lambda x: x + 0.1, init_params(jax.random.key(3), spec, odds.chase.shape[-1]))
    wide, wide_spec = table_params(params, spec, 2, game.observation_size)
    assert wide_spec == spec._replace(obs_size=79, players=2) and wide["pi"][0]["w"].shape == (79 + 12, 32)
    state, states = game.init(jax.random.key(0)), []
    for key in jax.random.split(jax.random.key(1), 60):  # both seats, every part of a turn
        states.append(state)
        state = game.step(state, jnp.argmax(game.legal_action_mask(state)), key)[0]
    states = jax.tree.map(lambda *x: jnp.stack(x), *states)
    table_obs, masks = jax.vmap(game.observe)(states), jax.vmap(game.legal_action_mask)(states)
    seat = states.current_player
    solo_obs = jax.vmap(solo_game.observe_solo)(
        *(x[jnp.arange(60), seat] for x in (states.roll, states.rolls_left, states.open_mask))
    )
    assert np.array_equal(table_obs[:, :64], solo_obs)
    logits, values = apply(wide, wide_spec, odds, where, table_obs, masks)
    solo_logits, _ = apply(params, spec, odds, where, solo_obs, masks)
    # The same moves; the logits to float32 rounding (a wider matrix product sums in another order).
    assert np.array_equal(logits.argmax(1), solo_logits.argmax(1)) and not np.any(values)
    np.testing.assert_allclose(logits, solo_logits, rtol=1e-5)
    with pytest.raises(ValueError, match="widens a solo network"):
        table_params(wide, wide_spec, 2, 79)


def test_gae_runs_along_each_seats_own_decisions():
    import jax.numpy as jnp

    from yacht_lab.training.jax.learner import Transition, advantages
    from yacht_lab.training.schema import PPOConfig

    # One table of two seats: a game ends at step 3 (seat 1's last pick; seat 0 wins +1), the next one runs on.
    seat = jnp.array([0, 0, 1, 1, 0, 1])[:, None]
    value = jnp.array([0.1, 0.2, -0.3, -0.4, 0.5, 0.6])[:, None]
    done = jnp.array([0, 0, 0, 1, 0, 0], dtype=jnp.float32)[:, None]
    reward = jnp.zeros((6, 1, 2)).at[3, 0].set(jnp.array([1.0, -1.0]))
    traj = Transition(value, value, seat, value, value, reward, done, seat)
    last = jnp.array([[0.7, 0.8]])  # each seat's value where the rollout stops
    monte_carlo, _ = advantages(traj, last, PPOConfig(gamma=1.0, gae_lambda=1.0))
    np.testing.assert_allclose(monte_carlo[:, 0], [0.9, 0.8, -0.7, -0.6, 0.2, 0.2], atol=1e-6)
    one_step, returns = advantages(traj, last, PPOConfig(gamma=1.0, gae_lambda=0.0))
    # Seat 0: 0.2 - 0.1, then its last decision of the game earns its +1; seat 1: -0.4 - (-0.3), then -1 - (-0.4).
    np.testing.assert_allclose(one_step[:, 0], [0.1, 0.8, -0.1, -0.6, 0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(returns, one_step + value, atol=0)
    solo = Transition(value, value, seat * 0, value, value, value[:, :, None], done, seat * 0)
    plain, _ = advantages(solo, last[:, :1], PPOConfig(gamma=1.0, gae_lambda=0.5))
    expected, gae = [], 0.0  # the usual GAE of one seat
    for t in reversed(range(6)):
        next_value = 0.7 if t == 5 else float(value[t + 1, 0])
        delta = float(value[t, 0]) + next_value * (1 - float(done[t, 0])) - float(value[t, 0])
        gae = delta + 0.5 * (1 - float(done[t, 0])) * gae
        expected.insert(0, gae)
    np.testing.assert_allclose(plain[:, 0], expected, atol=1e-6)


def test_the_self_play_trainer_writes_a_table_model_from_a_solo_one(table_run):
    run_dir, _ = table_run
    header, *lines = (run_dir / "learning_curve.csv").read_text().splitlines()
    assert header == "timesteps,wall_minutes,seed,win_rate,win_rate_ci95,mean_score,mean_margin,steps_per_second"
    rows = [header.split(","), *(line.split(",") for line in lines)]
    assert [(row[0], row[2]) for row in rows[1:]] == [("0", "0"), ("1024", "0"), ("2048", "0")]
    assert rows[1][3:5] == ["0.5", "0.0"] and rows[1][6] == "0.0"  # before any update it is its start: every deal split
    meta = json.loads((run_dir / "model.json").read_text())
    assert (meta["players"], meta["obs_size"], meta["net_arch"]) == (2, 79, [32, 32])
    with np.load(run_dir / "model.npz", allow_pickle=False) as data:
        assert data["pi.0.w"].shape == (79 + 12, 32)


def test_the_self_play_model_sits_at_a_two_player_table(table_run):
    run_dir, _ = table_run
    agent = make_agent(f"jax:{run_dir}", "standard")
    assert agent.table_players == 2 and agent.observation_size == 79
    done = run_script(
        "evaluate.py", "--agents", f"jax:{run_dir}", "greedy", "--players", "2", "--games", "10", "--no-progress"
    )
    assert done.returncode == 0, done.stderr
    assert f"jax:{run_dir}" in done.stdout


def test_a_table_run_refuses_what_it_does_not_train(table_run, tmp_path):
    from yacht_lab.training.jax.init import start_params
    from yacht_lab.training.jax.learner import network_spec

    for changes, message in (
        ({"reward": "score"}, "at a table on reward: win"),
        ({"jax": {"players": 11}}, "jax.players"),
        ({"jax": {"players": 1}}, "a solo game has no winner"),
        ({"opponents": ["greedy"]}, "no opponents"),
    ):
        with pytest.raises(ValueError, match=message):
            validate(from_dict(merged(TINY_TABLE, changes)))
    run_dir, _ = table_run
    wider = validate(from_dict(merged(TINY_TABLE, {"jax": {"players": 3}, "init": str(run_dir)})))
    with pytest.raises(ValueError, match="init: .* a table model, runs at a table of its size"):
        start_params(wider, network_spec(wider))
    other = validate(from_dict(merged(TINY_TABLE, {"policy": {"net_arch": [16]}, "init": str(run_dir)})))
    with pytest.raises(ValueError, match="init: .*net_arch"):
        start_params(other, network_spec(other))
    missing = validate(from_dict(merged(TINY_TABLE, {"init": str(tmp_path / "none.npz")})))
    with pytest.raises(ValueError, match="init: no JAX policy"):
        start_params(missing, network_spec(missing))


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_a_shipped_ppo_model_starts_a_jax_run_as_the_same_network(rules):
    import jax.numpy as jnp

    from yacht_agents.jax_policy import apply, odds_tables
    from yacht_env.game import GameState
    from yacht_env.rules import get_rules, prefix_codes
    from yacht_lab.training.jax.init import sb3_params, start_params
    from yacht_lab.training.jax.learner import network_spec

    pytest.importorskip("torch")
    params, spec = sb3_params(rules)
    odds, where = odds_tables(get_rules(rules), spec.bonus_odds)
    agent = make_agent(f"ppo:{rules}", rules)
    game = GameState(rules, 20)
    game.start(prefix_codes(game_streams(0, range(20), rules).reshape(20, -1, 5)))
    while (game.open_mask != 0).any():  # every decision of 20 games: the same moves
        live = game.open_mask != 0
        obs = agent.encoder.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        actions = agent.act(obs, game.mask)
        logits = apply(params, spec, odds, where, jnp.asarray(obs), jnp.asarray(game.mask))[0]
        assert np.array_equal(np.asarray(logits.argmax(1))[live], actions[live])
        game.play(actions, legal=live)
    table = validate(from_dict(merged(TINY_TABLE, {"rules": rules, "policy": {"net_arch": [256, 256]}, "init": rules})))
    assert (
        start_params(table, network_spec(table))["pi"][0]["w"].shape[0]
        == network_spec(table).obs_size + odds.chase.shape[-1]
    )


def test_a_multi_seed_run_reports_the_seeds_median_and_iqm_and_measures_its_choice_on_fresh_games(jax_run):
    import csv

    run_dir, done = jax_run
    curve = list(csv.DictReader((run_dir / "learning_curve.csv").read_text().splitlines()))
    aggregate = list(csv.DictReader((run_dir / "aggregate_curve.csv").read_text().splitlines()))
    assert [row["timesteps"] for row in aggregate] == ["0", "1024", "2048"]
    for row in aggregate:
        values = sorted(float(r["percent_of_optimal"]) for r in curve if r["timesteps"] == row["timesteps"])
        assert row["seeds"] == "2" and row["measure"] == "percent_of_optimal"
        assert float(row["median"]) == float(row["iqm"]) == round(sum(values) / 2, 4)  # two seeds: both the mean
        if importlib.util.find_spec("rliable"):
            assert float(row["median_low"]) <= float(row["median"]) <= float(row["median_high"])
    selection = json.loads((run_dir / "selection.json").read_text())
    last = {int(r["seed"]): r for r in curve if r["timesteps"] == "2048"}
    best = max(last, key=lambda seed: float(last[seed]["mean_score"]))
    assert selection["seed"] == best and selection["chosen_on"]["mean_score"] == float(last[best]["mean_score"])
    assert selection["fresh"]["key"] == "fold_in(key(1000), 1)" and selection["fresh"]["games"] == 100
    with np.load(run_dir / "model.npz") as a, np.load(run_dir / "params" / f"seed_{best}.npz") as b:
        assert all(np.array_equal(a[n], b[n]) for n in a.files)
    fresh = selection["fresh"]["percent_of_optimal"]
    assert f"on the curve's 100 games (chosen on them), {fresh:.2f}% of optimal on 100 fresh ones" in done.stderr


def test_iqm_is_the_mean_of_the_middle_half():
    from yacht_lab.training.jax.report import aggregate, iqm

    assert iqm([1, 2, 3, 4]) == 2.5 and iqm([5, 1, 100, 2, 3, 4, 6, 7]) == 4.5  # cuts 2 from each end of 8
    assert iqm([1, 2, 3, 4, 100]) == 3.0 and iqm([7]) == 7.0
    stats = aggregate([1.0, 2.0, 3.0, 4.0, 100.0], seed=0, reps=200)
    assert (stats["median"], stats["iqm"]) == (3.0, 3.0)
    if importlib.util.find_spec("rliable"):
        assert stats["median_low"] <= 3.0 <= stats["median_high"] and stats == aggregate([1, 2, 3, 4, 100], 0, 200)


def test_a_jax_run_stopped_by_sigint_resumes_to_the_same_parameters(tmp_path, monkeypatch, capsys):
    import os
    import signal

    from yacht_lab.training.jax.ppo import train_jax
    from yacht_lab.training.run_context import RunContext, resume_config

    # Four updates of 1,024 steps, a checkpoint after each; one seed; evaluated at the start and the end.
    config = validate(
        from_dict(merged(TINY_JAX, {"jax": {"seeds": 1}, "total_timesteps": 4096, "eval": {"every_timesteps": 4096}}))
    )
    straight = train_jax(config, tmp_path / "straight", progress=False)
    checkpoint_if_due = RunContext.checkpoint_if_due

    def interrupted_after_the_first(self, state):
        saved = checkpoint_if_due(self, state)
        if saved is not None and not self.stop_requested:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, through the run's own handler
        return saved

    monkeypatch.setattr(RunContext, "checkpoint_if_due", interrupted_after_the_first)
    stopped = train_jax(config, tmp_path / "stopped", progress=False)
    monkeypatch.undo()
    assert sorted(p.name for p in (stopped / "checkpoints").iterdir()) == ["step_1024.npz"]
    checkpoint = stopped / "checkpoints" / "step_1024.npz"
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == f"interrupted: saved {checkpoint}; continue with: yacht-train --resume {checkpoint}"
    with np.load(checkpoint, allow_pickle=False) as data:  # arrays only: parameters, Adam, games, keys, the update
        assert int(data["update"]) == 1 and {"params/pi/0/w", "start/pi/0/w", "env_state/game/roll", "obs"} <= set(
            data.files
        )
        assert data["key"].dtype == np.uint32 and data["opt_state/1/hyperparams/learning_rate"].shape == (1,)
    resumed = train_jax(resume_config(stopped), resume=stopped, progress=False)
    assert resumed == stopped
    with np.load(straight / "model.npz") as a, np.load(resumed / "model.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[n], b[n]) for n in a.files)  # bit for bit
    rows = (resumed / "learning_curve.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["0", "1024", "4096"]  # the stop's row, then the end's
    assert (stopped / "command.txt").read_text().count("\n") == 2


def test_resuming_a_jax_run_without_a_checkpoint_is_one_line(jax_run, tmp_path):
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(jax_run[0], run_dir)
    shutil.rmtree(run_dir / "checkpoints")
    done = run_script("train.py", "--resume", str(run_dir))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "has no checkpoint to resume from: start a new run" in done.stderr
    (run_dir / "checkpoints").mkdir()
    np.savez(run_dir / "checkpoints" / "step_1024.npz", update=np.int64(1))
    done = run_script("train.py", "--resume", str(run_dir))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "cannot resume from" in done.stderr and "yacht-rl jax checkpoint 1" in done.stderr


def test_a_three_seat_table_trains_and_its_start_splits_every_deal_evenly():
    import jax
    import jax.numpy as jnp

    from yacht_lab.training.jax.ppo import make_trainer

    config = validate(
        from_dict(merged(TINY_TABLE, {"n_envs": 4, "ppo": {"n_steps": 64, "batch_size": 128}, "jax": {"players": 3}}))
    )
    init, update, evaluate, spec = make_trainer(config)
    assert (spec.players, spec.obs_size) == (3, 64 + 2 * 13 + 2)
    runners = init(jnp.stack([jax.random.key(0)]), None)
    start = evaluate(runners.params, runners.start, jax.random.key(5))
    # Three copies of one greedy policy, dice and seats rotated: each holds a third of every deal's wins.
    assert abs(float(start["win_rate"][0]) - 1 / 3) < 1e-6 and abs(float(start["mean_margin"][0])) < 1e-4
    after, _ = update(runners, 0)
    changed = jax.tree.map(lambda a, b: bool(jnp.any(a != b)), after.params, runners.params)
    assert all(jax.tree.leaves(changed)) and after.env_state.total.shape == (1, 4, 3)
