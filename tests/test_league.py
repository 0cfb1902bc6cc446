"""Specification of the league: opponents drawn from a pool at each game's start, and self-play over it.

* The env (:class:`yacht_env.versus.YachtVersusVectorEnv` with ``pool=``): each opponent seat draws a member from
  the env's generator by the documented inverse-CDF rule, reproducibly and in the weights' proportions; games in
  flight keep their members; the members act in batches equal to acting table by table; a fixed lineup plays
  exactly the games it played before the pool existed.
* The lab (:mod:`yacht_lab.training.sb3.league`): PFSP's weights and the draw probabilities to the bit, results folded
  as documented, snapshots written as model files and read back by the safe loader, a league state that a resume
  restores with the same members and draws, one-line config errors, and ``train.py`` end to end with ``--init``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest
import yaml
from helpers import REPO
from scipy import stats

from yacht_agents import make_agent
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import game_streams
from yacht_env.sb3 import YachtSB3VecEnv
from yacht_env.versus import YachtVersusVectorEnv, act_at_tables
from yacht_lab.training.config import LeagueConfig, PPOConfig, TrainConfig, dataclass_from_dict, load_config, validate
from yacht_lab.training.sb3.league import League, draw_probabilities, pfsp_weights, read_league_curve


def uniform_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    return np.where(mask.astype(bool), rng.random(mask.shape), -1.0).argmax(axis=1)


def dealt(num_envs: int, players: int, seed: int = 0) -> dict:
    """Reset options dealing given dice: with a fixed seat, a reset then draws only the pool's members."""
    streams = game_streams(seed, range(num_envs * players))
    return {"dice_stream": streams.reshape(num_envs, players, *streams.shape[1:])}


def expected_draws(seed: int, weights, shape: tuple[int, int]) -> np.ndarray:
    """The documented rule, written out: the first member i with c[i] > u * c[-1], u from the env's generator."""
    p = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    c = np.cumsum(p)
    u = np.random.default_rng(seed).random(shape)
    return np.searchsorted(c, u * c[-1], side="right")


# --------------------------------------------------------------------------------------------------
# The env: drawing from a pool
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("players", "weights"), [(2, [1, 2, 3]), (3, [0.5, 0, 2, 1]), (5, [1, 1, 1, 1])])
def test_each_opponent_seat_draws_by_the_documented_rule(players, weights):
    pool = [make_agent("random", seed=i) for i in range(len(weights))]
    env = YachtVersusVectorEnv(200, pool=pool, players=players, pool_weights=weights, seat=0)
    _, info = env.reset(seed=11, options=dealt(200, players))
    np.testing.assert_array_equal(info["opponents"], expected_draws(11, weights, (200, players - 1)))
    assert info["opponents"].dtype == np.int64 and info["opponents"].shape == (200, players - 1)
    if weights[1] == 0:
        assert not (info["opponents"] == 1).any()  # weight 0: never drawn
    again = YachtVersusVectorEnv(200, pool=pool, players=players, pool_weights=weights, seat=0)
    np.testing.assert_array_equal(again.reset(seed=11, options=dealt(200, players))[1]["opponents"], info["opponents"])


def test_members_of_weight_zero_change_no_other_draw():
    a, b, c = (make_agent("random", seed=i) for i in range(3))
    with_gap = YachtVersusVectorEnv(300, pool=[a, b, c], players=3, pool_weights=[1, 0, 2], seat=0)
    without = YachtVersusVectorEnv(300, pool=[a, c], players=3, pool_weights=[1, 2], seat=0)
    drawn = with_gap.reset(seed=5, options=dealt(300, 3))[1]["opponents"]
    plain = without.reset(seed=5, options=dealt(300, 3))[1]["opponents"]
    np.testing.assert_array_equal(drawn, np.array([0, 2])[plain])


def test_draws_follow_the_weights_over_many_games():
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    pool = [make_agent("random", seed=i) for i in range(4)]
    env = YachtVersusVectorEnv(20_000, pool=pool, players=3, pool_weights=weights, seat=0)
    counts = np.bincount(env.reset(seed=0, options=dealt(20_000, 3))[1]["opponents"].ravel(), minlength=4)
    expected = weights / weights.sum() * counts.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    assert stats.chisquare(counts, np.full(4, counts.sum() / 4)).pvalue < 1e-12  # the test can tell other weights


def test_a_seat_drawn_at_random_and_drawn_dice_reproduce_from_the_seed():
    pool = ["greedy", "random", "optimal"]

    def run(seed):
        env = YachtVersusVectorEnv(16, pool=pool, players=3, autoreset_mode="same_step")
        _, info = env.reset(seed=seed)
        rng, seen = np.random.default_rng(0), [info["opponents"].copy()]
        for _ in range(150):
            _, _, _, _, info = env.step(uniform_legal(rng, info["action_mask"]))
            seen += [info["opponents"].copy(), info["totals"].copy()]
        return np.concatenate([s.ravel() for s in seen])

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))


def test_games_in_flight_keep_their_opponents_and_new_weights_apply_from_the_next_game():
    env = YachtVersusVectorEnv(
        32, pool=["greedy", "random"], players=2, pool_weights=[1, 0], autoreset_mode="same_step"
    )
    _, info = env.reset(seed=1)
    assert (info["opponents"] == 0).all()
    rng = np.random.default_rng(2)
    for _ in range(7):  # games under way
        _, _, terminated, _, info = env.step(uniform_legal(rng, info["action_mask"]))
    assert not terminated.any()
    env.set_weights([0, 1])
    old_games = np.ones(32, dtype=bool)
    ended = 0
    for _ in range(200):
        _, _, terminated, _, info = env.step(uniform_legal(rng, info["action_mask"]))
        if terminated.any():
            final = info["final_opponents"][terminated]
            expected = np.where(old_games[terminated], 0, 1)
            np.testing.assert_array_equal(final[:, 0], expected)  # each game ends against whom it started with
            ended += old_games[terminated].sum()
            old_games[terminated] = False
        np.testing.assert_array_equal(info["opponents"][:, 0], np.where(old_games, 0, 1))
    assert ended == 32  # every game that was under way ended against member 0, every new one drew member 1


def test_members_act_in_batches_that_equal_acting_table_by_table():
    rules = "standard"
    pool = [make_agent("greedy"), make_agent("optimal"), make_agent("win", players=3), make_agent("ppo:standard")]
    env = YachtVersusVectorEnv(32, pool=pool, players=3, seat="random")
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    solo, view = ObservationEncoder(rules), MultiplayerEncoder(rules, 3)
    compared = 0
    for _ in range(20):
        table = env._table
        tables = np.flatnonzero(~env._over)
        who = np.random.default_rng(compared).integers(0, len(pool), size=len(tables))
        batched = act_at_tables(pool, who, table, tables, solo, view)
        one_by_one = [
            act_at_tables([pool[w]], np.zeros(1, dtype=np.intp), table, tables[j : j + 1], solo, view)[0]
            for j, w in enumerate(who)
        ]
        np.testing.assert_array_equal(batched, one_by_one)
        compared += len(tables)
        env.step(uniform_legal(rng, env.action_masks()))
    assert compared > 500


class Counting:
    """An agent that counts its ``act`` calls (delegating to greedy)."""

    def __init__(self) -> None:
        self.inner, self.calls, self.rows = make_agent("greedy"), 0, 0

    def act(self, observations, action_masks):
        self.calls, self.rows = self.calls + 1, self.rows + len(observations)
        return self.inner.act(observations, action_masks)


def test_one_member_at_many_tables_acts_in_one_call_per_decision():
    member = Counting()
    env = YachtVersusVectorEnv(50, pool=[member, make_agent("random")], players=2, pool_weights=[1, 0], seat=1)
    env.reset(seed=0)
    # Every table's opponent (seat 0) takes its first turn at reset: at most 3 decisions, one call for all 50 tables.
    assert member.calls <= 3 and member.rows >= 50


def test_a_fixed_lineup_plays_the_games_it_played_before_the_pool():
    env = YachtVersusVectorEnv(16, opponents=["greedy", "random", "optimal"], reward="win", autoreset_mode="same_step")
    _, info = env.reset(seed=7)
    assert "opponents" not in info
    rng, digest = np.random.default_rng(0), hashlib.sha256()
    for _ in range(300):
        actions = uniform_legal(rng, info["action_mask"])
        _, rewards, terminated, _, info = env.step(actions)
        for array in (actions, np.round(rewards * 60), info["totals"], info["seat"]):
            digest.update(np.asarray(array, dtype=np.int64).tobytes())
        if terminated.any():
            digest.update(np.asarray(info["final_totals"][terminated], dtype=np.int64).tobytes())
            assert "final_opponents" not in info
    # The digest of the same games played by yacht_env/versus.py as it was before the pool (commit 0ef02b5).
    assert digest.hexdigest()[:20] == PINNED_FIXED_LINEUP


PINNED_FIXED_LINEUP = "0aead24349e91fe576d1"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pool": []}, "pool must be a non-empty list"),
        ({"pool": "greedy"}, "pool must be a non-empty list"),
        ({"pool": ["greedy"], "opponents": ["greedy"]}, "not both"),
        ({"pool": ["greedy"], "players": 11}, r"players must be an int in 2..10"),
        ({"opponents": ["greedy"], "players": 2}, "players and pool_weights go with a pool"),
        ({"pool": ["greedy", "random"], "pool_weights": [1]}, "pool weights must be 2 finite numbers"),
        ({"pool": ["greedy", "random"], "pool_weights": [0, 0]}, "not all zero"),
        ({"pool": ["greedy", "random"], "pool_weights": [1, -1]}, ">= 0"),
        ({"pool": ["greedy", "random"], "pool_weights": [True, 1]}, "finite numbers"),
        ({"pool": ["greedy", "win"], "players": 3}, "pool member 1 acts at a table of 2 players; this table has 3"),
        ({"pool": ["greedy", object()]}, "pool member 1 must be an agent"),
    ],
)
def test_bad_pools_are_one_clear_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        YachtVersusVectorEnv(2, **kwargs)


def test_retired_members_are_let_go_once_no_table_seats_them():
    env = YachtVersusVectorEnv(8, pool=["greedy", "random"], players=2, autoreset_mode="same_step")
    _, info = env.reset(seed=0)
    assert {0, 1} <= set(info["opponents"].ravel().tolist())
    env.retire_members([1])
    assert env.pool[1] is not None  # still seated
    with pytest.raises(ValueError, match="pool member 1 is retired"):
        env.set_weights([1, 1])
    rng = np.random.default_rng(0)
    for _ in range(120):
        _, _, _, _, info = env.step(uniform_legal(rng, info["action_mask"]))
    assert (info["opponents"] == 0).all()
    env.set_weights([1, 0])
    assert env.pool[1] is None and env.pool_weights.tolist() == [1.0, 0.0]
    assert env.add_members(["optimal"]) == [2] and env.pool_weights.tolist() == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="a fixed lineup has no pool"):
        YachtVersusVectorEnv(2, opponents=["greedy"]).set_weights([1])


def test_the_sb3_adapter_reports_whom_each_finished_game_was_against():
    env = YachtSB3VecEnv(8, pool=["greedy", "random"], players=3)
    fixed = YachtSB3VecEnv(8, opponents=["greedy", "random"])
    rng, finished = np.random.default_rng(0), 0
    for venv in (env, fixed):
        venv.seed(0)
        venv.reset()
    for _ in range(120):
        _, _, dones, infos = env.step(uniform_legal(rng, env.action_masks()))
        _, _, fixed_dones, fixed_infos = fixed.step(uniform_legal(rng, fixed.action_masks()))
        for i in np.flatnonzero(dones):
            info = infos[i]
            assert info["opponents"].shape == (2,) and set(info["opponents"].tolist()) <= {0, 1}
            assert info["score"] == info["totals"][info["seat"]]
            finished += 1
        assert all("opponents" not in fixed_infos[i] for i in np.flatnonzero(fixed_dones))
    assert finished >= 8


# --------------------------------------------------------------------------------------------------
# The lab: weights, results, snapshots, state
# --------------------------------------------------------------------------------------------------
def test_pfsp_weights_and_draw_probabilities_are_the_documented_formulas():
    weights = pfsp_weights(np.array([3.0, 0.0, 10.0, 1.5]), np.array([4.0, 0.0, 10.0, 4.0]), power=2.0, floor=0.05)
    # p = 4/6, 1/2, 11/12, 2.5/6: (1 - p)^2 = 1/9, 1/4, 1/144 (floored to 0.05), (3.5/6)^2
    np.testing.assert_allclose(weights, [1 / 9, 1 / 4, 0.05, (3.5 / 6) ** 2], rtol=0, atol=1e-15)
    assert pfsp_weights(np.array([5.0]), np.array([5.0]), power=0.0, floor=0.01).tolist() == [1.0]
    snapshot = np.array([False, False, True, True])
    np.testing.assert_allclose(draw_probabilities(weights, snapshot, None), weights / weights.sum(), atol=1e-15)
    shared = draw_probabilities(weights, snapshot, 0.3)
    np.testing.assert_allclose(shared[:2], 0.7 * weights[:2] / weights[:2].sum(), atol=1e-15)
    np.testing.assert_allclose(shared[2:], 0.3 * weights[2:] / weights[2:].sum(), atol=1e-15)
    np.testing.assert_allclose(draw_probabilities(weights[:2], snapshot[:2], 0.3), weights[:2] / weights[:2].sum())


def league_config(**league) -> TrainConfig:
    settings = {"fixed": ["greedy", "random"], "snapshot_every_timesteps": 100, "max_snapshots": 2, **league}
    ppo = PPOConfig(n_steps=16, batch_size=64)
    return validate(TrainConfig(n_envs=4, reward="win", reward_scale=1.0, ppo=ppo, league=LeagueConfig(**settings)))


def test_results_are_pairwise_and_folded_with_the_decay(tmp_path):
    league = League(league_config(players=3, pfsp_decay=0.5), tmp_path)
    league._env_index = [0, 1]
    league.record(np.array([0, 1]), np.array([150, 120, 150]), seat=0)  # beats member 0's 120, ties member 1
    league.record(np.array([1, 1]), np.array([100, 90, 180]), seat=1)  # loses to 100 and 180: both member 1
    league.fold(10)
    assert [(m.wins, m.games) for m in league.members] == [(1.0, 1.0), (0.5, 3.0)]
    league.fold(10)  # once per step count
    league.record(np.array([0, 0]), np.array([10, 20, 30]), seat=2)
    league.fold(20)
    assert [(m.wins, m.games) for m in league.members] == [(2.5, 2.5), (0.25, 1.5)]
    weights = np.maximum((1 - np.array([3.5 / 4.5, 1.25 / 3.5])) ** 2, 0.05)  # member 0's (1/4.5)^2 is floored
    assert weights[0] == 0.05
    np.testing.assert_allclose(league.probabilities(), weights / weights.sum(), atol=1e-15)


def started_league(tmp_path, **league):
    from yacht_lab.training.sb3.model import make_model
    from yacht_lab.training.sb3.ppo import task_for

    config = league_config(**league)
    task = task_for(config)
    env = task.make_env()
    model = make_model(config, env, None)
    task.attach(tmp_path, model, resumed=False)
    return task, model


def test_snapshots_are_saved_as_model_files_read_back_as_data_and_join_the_league(tmp_path, monkeypatch):
    import sb3_contrib

    from yacht_agents.ppo import PPOAgent, read_model

    task, model = started_league(tmp_path, max_snapshots=2)
    league, env = task.league, task.league.env
    monkeypatch.setattr(sb3_contrib.MaskablePPO, "load", None)  # SB3's unpickling loader is never used
    for steps in (100, 200, 300):
        assert league.snapshot_due(steps)
        league.snapshot(model, steps)
        league.push_weights()
        assert not league.snapshot_due(steps + 99)
    assert [m.name for m in league.members] == ["greedy", "random", "snapshot_200", "snapshot_300"]
    assert league.retired == ["snapshot_100"]
    for steps in (100, 200, 300):
        assert read_model(tmp_path / "league" / f"snapshot_{steps}.zip").observation_size == 79  # the table's view
    assert len(env.pool) == 5 and isinstance(env.pool[4], PPOAgent) and env.pool[4].table_players == 2
    assert env.pool_weights[2] == 0 and env._pool.retired.tolist() == [False, False, True, False, False]
    np.testing.assert_allclose(env.pool_weights[[0, 1, 3, 4]], 0.25)  # no games yet: p = 1/2 for everyone


def test_a_restored_league_has_the_same_members_weights_and_draws(tmp_path):
    task, model = started_league(tmp_path, max_snapshots=2, snapshot_share=0.4)
    league = task.league
    rng = np.random.default_rng(0)
    for steps in (100, 200, 300):
        league.snapshot(model, steps)
        for _ in range(50):
            league.record(rng.integers(0, len(league.env.pool), size=1), rng.integers(50, 250, size=2), seat=0)
        league.fold(steps)
        league.push_weights()
    league.save(300)
    state = json.loads((tmp_path / "league" / "state_300.json").read_text())
    assert [m["name"] for m in state["members"]] == ["greedy", "random", "snapshot_200", "snapshot_300"]

    again, model_again = started_league(tmp_path, max_snapshots=2, snapshot_share=0.4)
    restored = League(again.config, tmp_path)
    restored.restore(300)
    restored.connect(again._env, snapshots_from_disk=True)
    assert [vars(m) for m in restored.members] == [vars(m) for m in league.members]
    assert (restored.last_snapshot, restored.folded_at) == (300, 300)
    np.testing.assert_array_equal(restored.probabilities(), league.probabilities())
    live = league._env_index
    np.testing.assert_array_equal(restored.env.pool_weights, league.env.pool_weights[live])
    # The uninterrupted env (a retired member in its pool) and the restored one draw the same members.
    first = league.env.reset(seed=9, options=dealt(4, 2))[1]["opponents"]
    second = restored.env.reset(seed=9, options=dealt(4, 2))[1]["opponents"]
    names = np.array([m.name for m in league.members])
    by_env = {index: i for i, index in enumerate(live)}
    np.testing.assert_array_equal(names[[by_env[int(m)] for m in first.ravel()]], names[second.ravel()])
    # a state of another config, or none at all, is one line
    with pytest.raises(ValueError, match=r"^cannot resume: the league state of step 400 .* is missing$"):
        restored.restore(400)
    other = League(league_config(fixed=["greedy"]), tmp_path)
    with pytest.raises(ValueError, match=r"^cannot resume: .*state_300.json' is not this run's league state$"):
        other.restore(300)


# --------------------------------------------------------------------------------------------------
# The config
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("league", "changes", "message"),
    [
        ({}, {"opponents": ["greedy"]}, "opponents must be empty with a league"),
        ({"players": 1}, {}, r"league.players must be an int in 2..10, got 1"),
        ({"fixed": []}, {}, r"league.fixed must be a list of 1..16 agent specs"),
        ({"fixed": ["nobody"]}, {}, r"league.fixed\[0\] is an unknown agent 'nobody'"),
        ({"fixed": ["greedy", "greedy"]}, {}, "league.fixed lists 'greedy' twice"),
        ({"fixed": ["win:3"]}, {}, r"league.fixed\[0\]: 'win:3' plays at a table of 3 players; this one has 2"),
        ({"fixed": ["ppo:models/nope.zip"]}, {}, r"league.fixed\[0\]: cannot load PPO model"),
        ({"sampling": "elo"}, {}, "league.sampling must be 'uniform' or 'pfsp'"),
        ({"pfsp_power": -1}, {}, "league.pfsp_power must be a number >= 0"),
        ({"pfsp_decay": 0}, {}, "league.pfsp_decay must be a number > 0"),
        ({"pfsp_floor": 1.5}, {}, r"league.pfsp_floor must be in \(0, 1\]"),
        ({"snapshot_every_timesteps": 0}, {}, "league.snapshot_every_timesteps must be an int >= 1"),
        ({"max_snapshots": 101}, {}, "league.max_snapshots must be an int >= 0 and <= 100"),
        ({"snapshot_share": 2}, {}, "league.snapshot_share must be null or in 0..1"),
        ({"players": 3}, {"seat": 3}, r"seat must be 'random' or an int in 0..2 \(league.players: 3\)"),
    ],
)
def test_league_config_errors_are_one_line(league, changes, message):
    config = TrainConfig(reward="win", league=LeagueConfig(**league), **changes)
    with pytest.raises(ValueError, match=message) as error:
        validate(config)
    assert "\n" not in str(error.value)


def test_league_keys_read_from_yaml_and_a_config_without_one_is_saved_as_before(tmp_path):
    with pytest.raises(ValueError, match=r"unknown config key league.size"):
        dataclass_from_dict(TrainConfig, {"league": {"size": 2}}, "")
    with pytest.raises(ValueError, match="league must be a mapping"):
        validate(TrainConfig(league="yes"))
    assert "league" not in TrainConfig().to_dict()
    assert dataclass_from_dict(TrainConfig, {"league": None}, "").league is None
    path = tmp_path / "league.yaml"
    path.write_text(yaml.safe_dump({"reward": "win", "league": {"fixed": ["greedy", "win"], "players": 2}}))
    config = load_config(path)
    assert config.league == LeagueConfig(fixed=["greedy", "win"]) and config.env_id == "YachtVersus-v0"
    assert config.players == 2 and config.to_dict()["league"]["sampling"] == "pfsp"


# --------------------------------------------------------------------------------------------------
# train.py end to end
# --------------------------------------------------------------------------------------------------
@pytest.mark.slow  # an end-to-end training run: python -m pytest -m slow (CI runs it)
def test_train_py_trains_against_a_league_from_init_and_resumes_it(tmp_path):
    config = tmp_path / "league.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "reward": "win",
                "reward_scale": 1.0,
                "total_timesteps": 2048,
                "n_envs": 8,
                "ppo": {"n_steps": 128, "batch_size": 256, "n_epochs": 1, "learning_rate": 1e-4, "ent_coef": 0.001},
                "eval": {"every_timesteps": 1024, "games": 8},
                "checkpoint_every_timesteps": 1024,
                "league": {"fixed": ["greedy", "win"], "snapshot_every_timesteps": 1024, "max_snapshots": 1},
            }
        )
    )
    command = [sys.executable, "train.py", "--config", str(config), "--init", "standard"]
    done = subprocess.run(
        [*command, "--output-dir", str(tmp_path / "runs"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name.startswith("YachtVersus-v0__standard__ppo__0__")
    rows = read_league_curve(run / "league_curve.csv")
    assert [(r["timesteps"], r["member"]) for r in rows] == [(t, m) for t in (0, 1024, 2048) for m in ("greedy", "win")]
    assert all(r["games"] == 32 and 0 <= r["win_rate"] <= 1 for r in rows)
    curve = (run / "learning_curve.csv").read_text().splitlines()
    assert [float(line.split(",")[2]) for line in curve[1:]] == [r["win_rate"] for r in rows if r["member"] == "greedy"]
    league = sorted(path.name for path in (run / "league").iterdir())
    assert league == ["snapshot_1024.zip", "state_1024.json", "state_2048.json"]  # snapshots at rollout starts
    state = json.loads((run / "league" / "state_2048.json").read_text())
    assert [m["name"] for m in state["members"]] == ["greedy", "win", "snapshot_1024"]
    assert state["last_snapshot"] == 1024 and sum(m["games"] for m in state["members"]) > 0
    assert (run / "league_curve.png").stat().st_size > 0
    assert load_config(run / "config.yaml").league == load_config(config).league

    resumed = subprocess.run(
        [sys.executable, "train.py", "--resume", str(run / "checkpoints" / "step_1024.zip"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr
    rows = read_league_curve(run / "league_curve.csv")
    assert [(r["timesteps"], r["member"]) for r in rows] == [(t, m) for t in (0, 1024, 2048) for m in ("greedy", "win")]
    (run / "league" / "state_1024.json").unlink()
    failed = subprocess.run(
        [sys.executable, "train.py", "--resume", str(run / "checkpoints" / "step_1024.zip"), "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failed.returncode == 2 and failed.stderr.splitlines() == [
        f"train.py: error: cannot resume: the league state of step 1024 "
        f"({str(run / 'league' / 'state_1024.json')!r}) is missing"
    ]
