"""The JAX trainer end to end: train.py with a jax section writes a run folder of data, evaluate.py seats its policy
(``jax:PATH``), the same seed gives the same run, and bad input is one clear error. Skipped without jax.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

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
        ({"jax": {"players": 1}}, r"trains solo on reward: score \(jax.players: 1\)"),
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


# --------------------------------------------------------------------------------------------------
# Hardening: damaged checkpoints, NaN, bounds before anything is written, many seeds on two cores
# --------------------------------------------------------------------------------------------------
def _rewritten(source, target, **changes):
    """A copy of the checkpoint ``source`` at ``target`` with ``changes`` (name -> function of the array)."""
    with np.load(source, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    for name, change in changes.items():
        arrays[name] = change(arrays[name])
    np.savez(target, **arrays)
    return target


def _written(path, data: bytes):
    path.write_bytes(data)
    return path


def _npz_declaring(target, shape):
    """An .npz whose first parameter's header declares ``shape`` of float32, holding 16 bytes."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr("params/pi/0/w.npy", header.getvalue() + bytes(16))
    return target


def _zip_bomb(target):
    """An .npz of one member that inflates to 256 MB of zeros (about 250 KB on disk)."""
    import zipfile

    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("update.npy", "w") as member:
        for _ in range(256):
            member.write(bytes(1 << 20))
    return target


@pytest.fixture(scope="module")
def jax_state(jax_run):
    """A fresh :class:`JaxState` of the tiny run's config, to load checkpoints into."""
    import jax
    import jax.numpy as jnp

    from yacht_lab.training.config import load_config
    from yacht_lab.training.jax.ppo import JaxState, make_trainer

    config = load_config(jax_run[0] / "config.yaml")
    init = make_trainer(config)[0]
    keys = jnp.stack([jax.random.key(s) for s in (0, 1)])
    return lambda: JaxState(init(keys, None), config.n_envs * config.ppo.n_steps, config)


def test_a_damaged_checkpoint_is_one_line_and_never_read_whole(jax_run, jax_state, tmp_path):
    good = jax_run[0] / "checkpoints" / "step_1024.npz"
    data = good.read_bytes()
    counts = [name for name in np.load(good).files if name.endswith("count")]
    assert counts  # Adam's and the schedule's step counts
    cases = {
        "truncated": (lambda p: _written(p, data[: len(data) // 2]), "File is not a zip file"),
        "empty": (lambda p: _written(p, b""), "File is not a zip file"),
        "corrupted": (
            lambda p: _written(p, data[:2000] + bytes(200) + data[2200:]),
            "",  # whatever the zip's own error is: one line
        ),
        "4 GiB": (lambda p: _npz_declaring(p, (2**30,)), "declares a (1073741824,) array of float32"),
        "8 TiB": (lambda p: _npz_declaring(p, (2**41,)), "declares a (2199023255552,) array of float32"),
        "zip bomb": (_zip_bomb, "it expands to 268435456 bytes, more than this run's checkpoint may"),
        "a folder": (lambda p: p.mkdir() or p, "it is not a regular file"),
        "negative update": (lambda p: _rewritten(good, p, update=lambda a: np.int64(-1)), "update index is -1"),
        "rolls_left 99": (
            lambda p: _rewritten(good, p, **{"env_state/game/rolls_left": lambda a: a * 0 + 99}),
            "its games' rolls_left is outside 0..2",
        ),
        "a roll out of range": (
            lambda p: _rewritten(good, p, **{"env_state/game/roll": lambda a: a * 0 + 999}),
            "its games' roll is outside 0..251",
        ),
        "inf observation": (
            lambda p: _rewritten(good, p, obs=lambda a: np.where(a == a.max(), np.inf, a).astype(a.dtype)),
            "its obs is not finite (NaN or inf)",
        ),
        "a mask of another game": (
            lambda p: _rewritten(good, p, mask=lambda a: ~a),
            "its observations or masks are not those of its games",
        ),
        "NaN parameters": (
            lambda p: _rewritten(good, p, **{"params/pi/0/w": lambda a: a * np.nan}),
            "its params/pi/0/w is not finite (NaN or inf)",
        ),
        "an optimizer count of -1": (
            lambda p: _rewritten(good, p, **{counts[-1]: lambda a: a * 0 - 1}),
            "is not the 8 steps of 1 updates",
        ),
    }
    for name, (make, message) in cases.items():
        path = make(tmp_path / f"{name.replace(' ', '_')}.npz")
        with pytest.raises(ValueError) as raised:
            jax_state().load_checkpoint(path)
        text = str(raised.value)
        assert text.startswith(f"cannot resume from {str(path)!r}: ") and "\n" not in text, (name, text)
        assert message in text, (name, text)
    state = jax_state()
    state.load_checkpoint(good)  # the undamaged one loads
    assert state.progress() == 1024


def test_resuming_a_truncated_checkpoint_through_train_py_is_one_line_exit_2(jax_run, tmp_path):
    import shutil

    run_dir = Path(shutil.copytree(jax_run[0], tmp_path / "run"))
    checkpoint = run_dir / "checkpoints" / "step_2048.npz"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    done = run_script("train.py", "--resume", str(checkpoint), "--total-timesteps", "4096", timeout=300)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"train.py: error: cannot resume from {str(checkpoint)!r}: ")
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


def test_a_jax_run_whose_parameters_stop_being_finite_ends_in_one_line(tmp_path, monkeypatch):
    import jax
    import jax.numpy as jnp

    from yacht_lab.training.jax import ppo as jax_ppo

    real = jax_ppo.make_update

    def diverging(config, network, rollout):
        update = real(config, network, rollout)

        def poisoned(runner, u):  # from the second update on: as a learning rate far too large would
            runner, metrics = update(runner, u)
            return runner._replace(
                params=jax.tree.map(lambda x: jnp.where(u >= 1, x * jnp.nan, x), runner.params)
            ), metrics

        return poisoned

    monkeypatch.setattr(jax_ppo, "make_update", diverging)
    config = validate(from_dict(merged(TINY_JAX, {"jax": {"seeds": 1}, "total_timesteps": 4096})))
    with pytest.raises(
        ValueError, match=r"^training diverged at step 2,048: seed 0's parameters or loss are no longer"
    ):
        jax_ppo.train_jax(config, tmp_path / "runs", progress=False)
    (run,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_1024.npz"]  # the last finite one
    assert not (run / "model.npz").exists()


@pytest.mark.parametrize("seeds", [4, pytest.param(8, marks=pytest.mark.slow)])
def test_many_seeds_train_on_a_two_core_cpu(tmp_path, seeds):
    # jax.seeds: 4 once hung for ever on 2 cores (the orthogonal initialisation's QRs waiting on one thread pool).
    config = write_config(
        tmp_path / "seeds.yaml",
        merged(TINY_JAX, {"jax": {"seeds": seeds}, "total_timesteps": 1024, "eval": {"games": 20}}),
    )
    done = run_script("train.py", "--config", str(config), "--output-dir", str(tmp_path / "runs"), timeout=600)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in (run_dir / "params").glob("*.npz")) == [f"seed_{s}.npz" for s in range(seeds)]


def test_a_jax_init_names_its_model_and_its_networks_as_they_are(jax_run, tmp_path):
    from yacht_lab.training.jax.init import start_params
    from yacht_lab.training.jax.learner import network_spec

    solo = jax_run[0] / "params" / "seed_1.npz"
    table = validate(from_dict(merged(TINY_TABLE, {"init": f"jax:{solo}"})))  # evaluate.py's spec form
    assert start_params(table, network_spec(table)) is not None
    other = validate(from_dict(merged(TINY_TABLE, {"init": str(solo), "policy": {"net_arch": [16]}})))
    with pytest.raises(ValueError, match=r"is the network rules 'standard', obs_size 64, .* players 1, this run's"):
        start_params(other, network_spec(other))


def test_the_jax_budget_is_rounded_up_to_whole_updates():
    from yacht_lab.training.config import load_config
    from yacht_lab.training.jax.learner import num_updates

    config = load_config("jax_ppo")
    config.total_timesteps = 100_000  # 6.1 updates of 16,384 steps: 7 (114,688 steps), as SB3 trains
    assert num_updates(config) == 7


def test_the_shipped_jax_model_is_ppo_standards_network_and_loads_without_torch():
    pytest.importorskip("sb3_contrib")
    from yacht_agents.jax_policy import load_params, resolve_params, shipped_params
    from yacht_lab.training.jax.init import sb3_params

    assert set(shipped_params()) == {"standard", "selfplay_standard"}
    assert resolve_params("standard") == shipped_params()["standard"]  # jax:standard names it
    params, spec = load_params(shipped_params()["standard"])
    expected, expected_spec = sb3_params("standard")
    assert spec == expected_spec
    import jax

    assert len(jax.tree.leaves(params)) == len(jax.tree.leaves(expected))
    assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(expected), strict=True))
    # configs/jax_selfplay.yaml's init: standard, in a process where torch cannot be imported
    code = """
import importlib.abc, sys

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "stable_baselines3", "sb3_contrib"):
            raise ModuleNotFoundError(name)
        return None

sys.meta_path.insert(0, Blocked())
from yacht_lab.training.config import load_config
from yacht_lab.training.jax.init import start_params
from yacht_lab.training.jax.learner import network_spec
config = load_config("jax_selfplay")
params = start_params(config, network_spec(config))
config.init = "classic"  # a PPO model only: one line naming the extra
try:
    start_params(config, network_spec(config))
except ValueError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "reading a PPO model needs the train extra (pip install -e '.[train]'" in done.stdout
