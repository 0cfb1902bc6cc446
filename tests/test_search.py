"""The learned-value search agent (``search:PATH``) and its self-play trainer: the turn's expectimax is the solver's
turn when handed the solver's values, the model files are read within bounds, the agent sits at every table, the
trainer runs end to end and resumes bit for bit, and nothing of a solver reaches the value's inputs or targets.
"""

from __future__ import annotations

import csv
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import run_script, write_config

from yacht_agents import make_agent, parse_spec
from yacht_agents.search import (
    SearchAgent,
    TurnPlanner,
    ValueNetwork,
    ValueSpec,
    feature_size,
    features,
    layer_shapes,
    load_value,
    result,
    save_value,
)
from yacht_env import rules as R
from yacht_lab.training.config import from_dict, validate

pytest.importorskip("torch")

TINY_SEARCH = {
    "rules": "standard",
    "reward": "score",
    "total_timesteps": 1440,  # three iterations of 40 games (480 turns each)
    "max_minutes": 5,
    "eval": {"every_timesteps": 960, "games": 10, "seed": 1000},
    "checkpoint_every_timesteps": 480,
    "search": {"players": 1, "net_arch": [16], "tables": 40, "epochs": 1, "batch_size": 64},
}


def network(rules="standard", players=1, arch=(8,), seed=0, version=1, solo=None) -> ValueNetwork:
    """A small random value network (``solo``: the solo network it carries, features 2)."""
    solo_arch = solo.spec.net_arch if solo is not None else ()
    spec = ValueSpec(rules, players, tuple(arch), version, tuple(solo_arch))
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(0, 0.3, (a, b)).astype(np.float32), rng.normal(0, 0.1, b).astype(np.float32))
        for a, b in layer_shapes(spec)
    ]
    return ValueNetwork(spec, layers, solo)


def brute_picks(rules: R.Rules, players: int, value, own: tuple, opponents: tuple | None) -> np.ndarray:
    """The picks' values ``(n, 252, C)`` the long way: every roll and category of every context scored by the scalar
    rules, every afterstate valued on its own row."""
    n, c = len(own[0]), rules.num_categories
    out = np.full((n, R.NUM_ROLLS, c), -np.inf)
    for i in range(n):
        o, u, a, t = (int(x[i]) for x in own)
        theirs = None if opponents is None else tuple(np.asarray(x)[i : i + 1] for x in opponents)
        for r in range(R.NUM_ROLLS):
            legal = R.legal_picks(rules, r, o)
            for k in range(c):
                if not legal >> k & 1:
                    continue
                points, _, up, arm = R.pick_outcome(rules, r, k, o, u, a)
                after = (np.array([o & ~(1 << k)]), np.array([up]), np.array([arm]), np.array([t + points]))
                if players == 1:
                    v = points + (value.values(after)[0] if after[0][0] else 0.0)
                elif after[0][0] == 0 and (theirs[0] == 0).all():
                    v = result(after[3], theirs[3])[0]
                else:
                    v = value.values(after, theirs)[0]
                out[i, r, k] = v
    return out


def random_contexts(rules: R.Rules, players: int, n: int, seed: int):
    """``n`` contexts of a table: sheets with random open boxes (never all full for the mover), bonus progress and
    totals."""
    rng = np.random.default_rng(seed)
    uppers, armeds = rules.bonus_shape
    k = max(players - 1, 1)

    def sheets(shape, allow_full):
        open_mask = rng.integers(0 if allow_full else 1, rules.num_open_masks, shape)
        return (open_mask, rng.integers(0, uppers, shape), rng.integers(0, armeds, shape), rng.integers(0, 200, shape))

    own = sheets((n,), False)
    opponents = sheets((n, k), True) if players > 1 else None
    if players > 1:
        opponents[0][0] = 0  # a context whose opponents are done: the mover's last pick ends the game
        own[0][0] = 1 << int(rng.integers(rules.num_categories))
    return own, opponents


@pytest.mark.parametrize("preset", sorted(R.PRESETS))
@pytest.mark.parametrize("players, version", [(1, 1), (2, 1), (2, 2), (3, 2)])
def test_the_planner_values_every_pick_as_the_brute_force_does(preset, players, version):
    rules = R.get_rules(preset)
    solo = network(preset, 1, (6,), seed=4) if version == 2 else None
    value = network(preset, players, (8,), seed=2, version=version, solo=solo)
    own, opponents = random_contexts(rules, players, 3, seed=len(preset) + players)
    plan = TurnPlanner(rules, players, value).plan(own, opponents)
    # float32 networks: a row's value depends on its batch in the last bits (points: x 100)
    np.testing.assert_allclose(plan.pick, brute_picks(rules, players, value, own, opponents), rtol=1e-6, atol=2e-5)


@pytest.mark.parametrize("preset, players, version", [("standard", 1, 1), ("yahtzee", 2, 2), ("standard", 3, 2)])
def test_the_agents_plan_of_a_context_depends_on_nothing_else(preset, players, version):
    from threadpoolctl import threadpool_limits

    rules = R.get_rules(preset)
    solo = network(preset, 1, (64,), seed=4) if version == 2 else None
    net = network(preset, players, (256, 256), seed=2, version=version, solo=solo)
    own, theirs = random_contexts(rules, players, 40, seed=3)
    planner = TurnPlanner(rules, players, net, exact=True)  # the agent's
    batch = planner.plan(own, theirs)
    for i in range(0, 40, 9):  # one context alone, on one thread or two: the very same values
        for threads in (1, 2):
            with threadpool_limits(threads, user_api="blas"):
                alone = planner.plan(*(None if x is None else tuple(a[i : i + 1] for a in x) for x in (own, theirs)))
            for part, whole in zip(alone, batch, strict=True):
                np.testing.assert_array_equal(part[0], whole[i])
    assert SearchAgent(net, rules, "search").planner.exact


def test_a_table_network_reads_every_seats_bonus_progress_and_points_to_come():
    rules = R.get_rules("yahtzee")
    solo = network("yahtzee", 1, (6,), seed=4)
    value = network("yahtzee", 3, (8,), version=2, solo=solo)
    c = rules.num_categories
    own = (np.array([0b11]), np.array([21]), np.array([1]), np.array([150]))
    theirs = (np.array([[0b101, 0]]), np.array([[63, 10]]), np.array([[0, 1]]), np.array([[140, 300]]))
    x = value.features(own, theirs)[0]
    come = solo.to_come(np.array([0b11, 0b101, 0]), np.array([21, 63, 10]), np.array([1, 0, 1]))
    assert come[2] == 0 and come[0] != 0  # a full sheet has nothing to come
    mine = [1, 1] + [0] * (c - 2) + [2 / c, 21 / 63, 1, 1.5, come[0] / 100]
    first = [1, 0, 1] + [0] * (c - 3) + [-0.1, 1, 0, (140 + come[1] - 150 - come[0]) / 100]
    second = [0] * c + [1.5, 10 / 63, 1, (300 - 150 - come[0]) / 100]
    np.testing.assert_allclose(x, np.array(mine + first + second, dtype=np.float32), rtol=1e-6)
    assert len(x) == feature_size(rules, 3, 2, True) == layer_shapes(value.spec)[0][0]
    # version 1 (the earlier networks): the opponents' open boxes and leads only
    assert feature_size(rules, 3, 1) == c + 3 + 1 + 2 * (c + 1)


def test_a_network_with_its_solo_network_round_trips(tmp_path):
    solo = network("yahtzee", 1, (6,), seed=4)
    net = network("yahtzee", 2, (8,), version=2, solo=solo)
    path = save_value(tmp_path / "v.npz", net)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["features"] == 2 and meta["solo_net_arch"] == [6]
    loaded = load_value(path)
    assert loaded.spec == net.spec and loaded.solo.spec == solo.spec
    own, theirs = random_contexts(R.get_rules("yahtzee"), 2, 5, seed=1)
    np.testing.assert_array_equal(loaded.values(own, theirs), net.values(own, theirs))
    bad = {**meta, "solo_net_arch": [6]}
    for change, message in (
        ({"features": 3, "solo_net_arch": []}, "features 3 \\(the race\\) needs a solo network"),
        ({"features": 4}, "features is not one of"),
        ({"players": 1}, "solo_net_arch is not"),
        ({"features": 1}, "solo_net_arch is not"),
    ):
        path.with_suffix(".json").write_text(json.dumps({**bad, **change}))
        with pytest.raises(ValueError, match=message):
            load_value(path)
    np.savez(path, **{k: v for k, v in net.arrays().items() if not k.startswith("solo_")})
    path.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="are not the spec's network's"):
        load_value(path)


class ExactValue:
    """The solver's expected points to come as a value of afterstates (the yardstick in a test, never in training)."""

    def __init__(self, rules: R.Rules) -> None:
        from yacht_env.solver import solve

        self.start = np.nan_to_num(solve(rules).start_values, nan=0.0)
        self.rules = rules

    def features(self, own, opponents=None):
        return features(self.rules, 1, own)

    def values(self, own, opponents=None, exact=False):
        open_mask, upper, armed, _ = own
        return self.start[open_mask, upper, armed] if self.rules.has_bonuses else self.start[open_mask]


def exact_value(rules: R.Rules):
    value = ExactValue(rules)
    return value, value.start


def test_the_turn_over_the_solvers_values_is_the_solvers_turn():
    rules = R.get_rules("standard")
    value, start = exact_value(rules)
    masks = np.arange(1, rules.num_open_masks, 7)
    zero = np.zeros_like(masks)
    plan = TurnPlanner(rules, 1, value).plan((masks, zero, zero, zero))
    np.testing.assert_allclose(plan.start, start[masks], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_the_family_turn_over_the_solvers_values_is_the_solvers_turn():
    rules = R.get_rules("yahtzee")
    value, start = exact_value(rules)
    from yacht_env.family_states import reachable_states

    masks, upper, armed = np.nonzero(reachable_states(rules))
    pick = np.random.default_rng(0).choice(len(masks), 400, replace=False)
    plan = TurnPlanner(rules, 1, value).plan((masks[pick], upper[pick], armed[pick], np.zeros(400, dtype=np.intp)))
    np.testing.assert_allclose(plan.start, start[masks[pick], upper[pick], armed[pick]], rtol=0, atol=1e-9)


def test_an_agent_over_the_solvers_values_plays_without_regret():
    from yacht_lab.measure.evaluation import evaluate

    rules = R.get_rules("standard")
    agent = SearchAgent(network(), rules, "exact")
    agent.planner = TurnPlanner(rules, 1, exact_value(rules)[0])
    result_ = evaluate([agent], 60, seed=3, rules=rules).results["exact"]
    assert result_.regret.max() < 1e-9


def test_a_table_result_splits_ties():
    total = np.array([10, 10, 5, 7])
    others = np.array([[9, 3], [10, 2], [6, 1], [7, 7]])
    np.testing.assert_array_equal(result(total, others), [1.0, 0.5, 0.0, 1 / 3])


def test_the_model_files_round_trip_and_the_spec_parses(tmp_path):
    net = network(players=2)
    path = save_value(tmp_path / "v.npz", net)
    loaded = load_value(path)
    assert loaded.spec == net.spec
    x = np.random.default_rng(1).random((5, feature_size(R.get_rules("standard"), 2)), dtype=np.float32)
    np.testing.assert_array_equal(loaded(x), net(x))
    assert parse_spec(f"search:{path}") == ("search", str(path))
    (tmp_path / "run").mkdir()
    save_value(tmp_path / "run" / "model.npz", net)
    agent = make_agent(f"search:{tmp_path / 'run'}", players=2)
    assert agent.table_players == 2 and agent.name == f"search:{tmp_path / 'run'}"
    with pytest.raises(ValueError, match="plays at a table of 2 players; this one has 3"):
        make_agent(f"search:{path}", players=3)
    with pytest.raises(ValueError, match="plays the 'standard' rules, not 'yahtzee'"):
        make_agent(f"search:{path}", "yahtzee")


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.with_suffix(".json").unlink(), "has no v.json beside it"),
        (lambda p: p.with_suffix(".json").write_text("[]"), "is not a 'yacht-rl search value 1' file"),
        (lambda p: p.write_bytes(b"not a zip"), "not a readable .npz"),
        (
            lambda p: np.savez(p, w0=np.zeros((3, 8), np.float32)),
            "are not the spec's network's",
        ),
        (
            lambda p: np.savez(p, **{**network().arrays(), "w0": np.full(network().layers[0][0].shape, np.nan, "f4")}),
            "'w0' is not a finite",
        ),
        (
            lambda p: p.with_suffix(".json").write_text(
                json.dumps(
                    {"format": "yacht-rl search value 1", "rules": "standard", "players": 1, "net_arch": [10**6]}
                )
            ),
            "net_arch is not",
        ),
    ],
)
def test_a_bad_model_file_is_one_line(tmp_path, damage, message):
    path = save_value(tmp_path / "v.npz", network())
    damage(path)
    with pytest.raises(ValueError, match=message):
        SearchAgent(path)


def test_a_missing_model_is_one_line(tmp_path):
    with pytest.raises(ValueError, match="no search model at"):
        make_agent(f"search:{tmp_path / 'nothing.npz'}")
    with pytest.raises(ValueError, match="no search model at 'nosuchmodel'"):
        make_agent("search:nosuchmodel")


def test_the_agent_sits_at_tables_and_in_the_envs(tmp_path):
    import gymnasium as gym

    from yacht_env.multiplayer import env as aec_env
    from yacht_lab.measure.head_to_head import head_to_head

    solo = save_value(tmp_path / "solo.npz", network())
    duo = save_value(tmp_path / "duo.npz", network(players=2, seed=1))
    agents = [make_agent(f"search:{duo}", players=2), make_agent(f"search:{solo}", players=2), make_agent("greedy")]
    outcome = head_to_head(agents, 2, 4, seed=0, calibration=False)
    assert sum(pair.games for pair in outcome.pairs.values()) == 3 * 4 * 4
    env = gym.make("YachtVersus-v0", opponents=[f"search:{duo}"])
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    game = aec_env(num_players=2)
    game.reset(seed=2)
    players = {name: make_agent(f"search:{duo}", players=2) for name in game.possible_agents}
    for name in game.agent_iter():
        obs, _, term, trunc, _ = game.last()
        action = None if term or trunc else players[name].act(obs["observation"], obs["action_mask"])
        game.step(action)


@pytest.mark.slow
def test_evaluate_and_play_seat_the_agent(tmp_path):
    solo = save_value(tmp_path / "solo.npz", network())
    duo = save_value(tmp_path / "duo.npz", network(players=2))
    done = run_script("evaluate.py", "--agents", f"search:{solo}", "greedy", "--games", "20", "--seed", "0")
    assert done.returncode == 0, done.stderr
    assert f"search:{solo}" in done.stdout
    done = run_script(
        "evaluate.py", "--players", "2", "--agents", f"search:{duo}", "optimal", "--games", "3", "--seed", "0"
    )
    assert done.returncode == 0, done.stderr
    done = run_script("play.py", "--players", f"search:{duo}", "greedy", "--seed", "5", "--delay", "0", input="")
    assert done.returncode == 0, done.stderr


def test_the_value_code_never_reads_a_solver():
    """V's inputs and targets come from the rules alone: the agent, the games and the learner import no solver module
    (walked through every module they import, transitively).
    """
    from test_layout import imports

    graph = imports()
    forbidden = {
        "yacht_env.solver",
        "yacht_env.family_solver",
        "yacht_env.distributions",
        "yacht_env.family_distributions",
        "yacht_agents.win",
        "yacht_agents.optimal",
        "yacht_agents.duel",
    }
    forbidden |= {name for name in graph if name.startswith("yacht_env.duel")}
    for root in ("yacht_agents.search", "yacht_lab.training.search.rollouts", "yacht_lab.training.search.learner"):
        seen, todo = set(), [root]
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(graph.get(module, ()))
        assert not seen & forbidden, (root, sorted(seen & forbidden))
    assert "yacht_lab.training.search.rollouts" in graph["yacht_lab.training.search.trainer"]
    assert "yacht_agents.search_value" in graph["yacht_agents.search"]


def test_a_search_section_is_checked():
    good = validate(from_dict(TINY_SEARCH))
    assert good.trainer == "search" and good.players == 1
    for change, message in [
        ({"search": {"players": 2}}, "reward: win"),
        ({"search": {"net_arch": []}}, "search.net_arch"),
        ({"search": {"tables": 0}}, "search.tables"),
        ({"search": {"td_lambda": 1.5}}, "search.td_lambda"),
        ({"search": {"learning_rate_final": 1.0}}, "search.learning_rate_final"),
        ({"init": "standard"}, "fresh weights"),
        ({"search": {"aux_weight": 1.0}}, "search.aux_weight weighs a table's auxiliary outputs: leave it out solo"),
        ({"reward": "win", "search": {"players": 2, "aux_weight": -0.5}}, r"search.aux_weight must be a number >= 0"),
        ({"reward": "win", "search": {"players": 2, "aux_weight": 101.0}}, r"and <= 100.0, got 101.0"),
        ({"reward": "win", "search": {"players": 2, "aux_weight": float("nan")}}, "search.aux_weight must be"),
        ({"opponents": ["greedy"]}, "plays itself"),
        ({"search": {"bogus": 1}}, "unknown config key search.bogus"),
    ]:
        data = {**TINY_SEARCH, **{k: v for k, v in change.items() if k != "search"}}
        data["search"] = {**TINY_SEARCH["search"], **change.get("search", {})}
        with pytest.raises(ValueError, match=message):
            validate(from_dict(data))


@pytest.fixture(scope="module")
def search_run(tmp_path_factory):
    """One tiny solo search run through train.py."""
    root = tmp_path_factory.mktemp("search")
    config = write_config(root / "search.yaml", TINY_SEARCH)
    done = run_script("train.py", "--config", str(config), "--output-dir", str(root / "runs"), timeout=300)
    assert done.returncode == 0, done.stderr
    (run_dir,) = (root / "runs").iterdir()
    return run_dir


@pytest.mark.slow
def test_train_py_writes_a_search_run_that_evaluate_py_plays(search_run):
    files = {p.name for p in search_run.iterdir()}
    assert {
        "config.yaml",
        "command.txt",
        "learning_curve.csv",
        "learning_curve.png",
        "model.npz",
        "model.json",
    } <= files
    assert sorted(p.name for p in (search_run / "checkpoints").iterdir()) == [
        "step_1440.npz",
        "step_480.npz",
        "step_960.npz",
    ]
    rows = (search_run / "learning_curve.csv").read_text().splitlines()
    assert rows[0].startswith("timesteps,wall_minutes,mean_score,mean_score_ci95,percent_of_optimal,mean_regret")
    assert [row.split(",")[0] for row in rows[1:]] == ["0", "960", "1440"]
    done = run_script("evaluate.py", "--agents", f"search:{search_run}", "--games", "10")
    assert done.returncode == 0, done.stderr


def test_a_stopped_search_run_resumed_ends_bit_for_bit(tmp_path, monkeypatch, capsys):
    from yacht_lab.training.run_context import RunContext, resume_config
    from yacht_lab.training.search.trainer import train_search

    data = {**TINY_SEARCH, "eval": {**TINY_SEARCH["eval"], "every_timesteps": 1440}}
    config = validate(from_dict(data))
    straight = train_search(config, tmp_path / "straight", progress=False)
    checkpoint_if_due = RunContext.checkpoint_if_due

    def interrupted_after_the_first(self, state):
        saved = checkpoint_if_due(self, state)
        if saved is not None and not self.stop_requested:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, through the run's own handler
        return saved

    monkeypatch.setattr(RunContext, "checkpoint_if_due", interrupted_after_the_first)
    stopped = train_search(config, tmp_path / "stopped", progress=False)
    monkeypatch.undo()
    checkpoint = stopped / "checkpoints" / "step_480.npz"
    assert sorted(p.name for p in (stopped / "checkpoints").iterdir()) == ["step_480.npz"]
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == f"interrupted: saved {checkpoint}; continue with: yacht-train --resume {checkpoint}"
    resumed = train_search(resume_config(stopped), resume=stopped, progress=False)
    assert resumed == stopped
    with np.load(straight / "model.npz") as a, np.load(resumed / "model.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[n], b[n]) for n in a.files)  # bit for bit
    with (
        np.load(straight / "checkpoints" / "step_1440.npz") as a,
        np.load(resumed / "checkpoints" / "step_1440.npz") as b,
    ):
        assert a.files == b.files and all(np.array_equal(a[n], b[n]) for n in a.files)  # Adam and the generators too


def test_a_search_budget_rounds_up_to_whole_iterations(tmp_path):
    from yacht_lab.training.run_context import resume_config
    from yacht_lab.training.search.trainer import budget_turns, train_search

    config = validate(from_dict({**TINY_SEARCH, "total_timesteps": 1000}))  # 2.08 iterations of 480 turns
    assert budget_turns(config) == 1440
    run = train_search(config, tmp_path, name="run", progress=False)
    with open(run / "learning_curve.csv") as file:
        assert [row["timesteps"] for row in csv.DictReader(file)][-1] == "1440"
    with pytest.raises(ValueError, match=r"the checkpoint is at 1440 steps, the run's budget is 1440"):
        train_search(resume_config(run), resume=run, progress=False)


def test_a_search_run_that_diverges_ends_in_one_line_and_saves_nothing(tmp_path, monkeypatch):
    import torch

    from yacht_lab.training.search.learner import Learner
    from yacht_lab.training.search.trainer import train_search

    fit = Learner.fit

    def diverging(self, *args, **kwargs):
        loss = fit(self, *args, **kwargs)
        with torch.no_grad():
            next(self.model.parameters()).fill_(float("nan"))
        return loss

    monkeypatch.setattr(Learner, "fit", diverging)
    with pytest.raises(ValueError, match=r"^training diverged at iteration 1: .* no longer finite") as error:
        train_search(validate(from_dict(TINY_SEARCH)), tmp_path, name="run", progress=False)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "run" / "model.npz").exists() and not list((tmp_path / "run").glob("checkpoints/*"))


def test_a_table_run_trains_and_measures_against_its_start_and_the_solver(tmp_path):
    from yacht_lab.training.search.trainer import train_search

    data = {
        **TINY_SEARCH,
        "reward": "win",
        "total_timesteps": 480,
        "eval": {"every_timesteps": 480, "games": 3, "seed": 0},
        "search": {**TINY_SEARCH["search"], "players": 2, "tables": 20},
    }
    run = train_search(validate(from_dict(data)), tmp_path, progress=False)
    rows = (run / "learning_curve.csv").read_text().splitlines()
    assert rows[0].split(",")[:6] == [
        "timesteps",
        "wall_minutes",
        "win_rate_vs_start",
        "win_rate_vs_start_ci95",
        "win_rate_vs_optimal",
        "win_rate_vs_optimal_ci95",
    ]
    assert len(rows) == 3
    assert make_agent(f"search:{run}", players=2).table_players == 2
    assert load_value(run / "model.npz").spec.features == 2


def test_a_table_run_reads_its_own_solo_network(tmp_path):
    from yacht_lab.training.search.trainer import train_search

    solo = save_value(tmp_path / "solo.npz", network("standard", 1, (6,), seed=4))
    data = {
        **TINY_SEARCH,
        "reward": "win",
        "total_timesteps": 480,
        "eval": {"every_timesteps": 480, "games": 2, "seed": 0},
        "search": {**TINY_SEARCH["search"], "players": 2, "tables": 20, "solo": str(solo)},
    }
    run = train_search(validate(from_dict(data)), tmp_path / "runs", progress=False)
    model = load_value(run / "model.npz")
    assert model.spec.solo_net_arch == (6,)
    np.testing.assert_array_equal(model.solo.layers[0][0], load_value(solo).layers[0][0])
    table = save_value(tmp_path / "table.npz", network("standard", 2))
    for name, message in ((str(table), "not a solo network"), ("nope", "no search model at 'nope'")):
        bad = validate(from_dict({**data, "search": {**data["search"], "solo": name}}))
        with pytest.raises(ValueError, match=message):
            train_search(bad, tmp_path / "bad", progress=False)
    with pytest.raises(ValueError, match="leave it out solo"):
        validate(from_dict({**TINY_SEARCH, "search": {**TINY_SEARCH["search"], "solo": "standard"}}))


def test_the_browser_seats_a_search_model_only_where_its_server_allowed_it():
    from yacht_lab.table.web.games import WebError, check_spec

    check_spec("search:runs/x", ("search:runs/x",))
    check_spec("search:standard")  # a shipped model (tests/test_web_seats.py)
    with pytest.raises(WebError, match="the table seats the shipped models .* and those the server was started with"):
        check_spec("search:runs/x")


def test_the_games_targets_are_td_lambda_of_their_own_turns():
    from yacht_lab.training.search.rollouts import play

    rules = R.get_rules("standard")
    planner = TurnPlanner(rules, 1, network())
    # lambda = 1: each afterstate's target is the points its game still scored after it (Monte Carlo).
    batch = play(planner, 8, np.random.default_rng(5), 1.0)
    assert batch.x.shape == (11 * 8, feature_size(rules, 1)) and batch.turns == 96
    first = batch.y[:8]  # the first turn's afterstates, game by game
    assert (first > 0).all() and (first < batch.scores[:, 0]).all()
    again = play(planner, 8, np.random.default_rng(5), 1.0)  # seeded: the same games
    np.testing.assert_array_equal(again.y, batch.y)
    # lambda = 0: the target is the next turn's exact expectation under V, whatever the dice did.
    exact = TurnPlanner(rules, 1, exact_value(rules)[0])
    batch = play(exact, 8, np.random.default_rng(5), 0.0)
    masks = (batch.x[:, :12] > 0.5).astype(np.int64) @ (1 << np.arange(12))
    np.testing.assert_allclose(batch.y, exact_value(rules)[1][masks], atol=1e-9)


def test_the_games_auxiliary_targets_are_every_seats_points_to_come():
    from yacht_lab.training.search.rollouts import play

    rules, c, p, t = R.get_rules("standard"), 12, 3, 6
    planner = TurnPlanner(rules, p, network("standard", p, version=2))
    plain = play(planner, t, np.random.default_rng(9), 0.0)
    batch = play(planner, t, np.random.default_rng(9), 0.0, aux=True)
    assert plain.aux is None and batch.aux.shape == (len(batch.y), p)
    np.testing.assert_array_equal(batch.x, plain.x)  # the same games, the same targets
    np.testing.assert_array_equal(batch.y, plain.y)
    np.testing.assert_array_equal(batch.scores, plain.scores)
    # aux[turn, seat, table, j]: seat (seat + j) % P's points still to come after seat's afterstate of that turn; the
    # last seat's last one (every sheet full: nothing to come) is not trained.
    aux = np.concatenate([batch.aux.reshape(c * p - 1, t, p), np.zeros((1, t, p))]).reshape(c, p, t, p)
    own = aux[..., 0]
    assert (np.diff(own, axis=0) <= 0).all() and (own[-1] == 0).all() and (own >= 0).all()
    assert (own[0] <= batch.scores.T).all() and (own[0] < batch.scores.T).any()  # less the first turns
    for turn in range(c):
        for seat in range(p):
            for j in range(1, p):
                other = (seat + j) % p
                if other < seat:  # it has played this round: its own afterstate of this turn
                    expected = own[turn, other]
                else:  # not yet: its last turn's, or its whole total before its first turn
                    expected = own[turn - 1, other] if turn else batch.scores[:, other]
                np.testing.assert_array_equal(aux[turn, seat, :, j], expected)


def test_auxiliary_outputs_learn_the_points_to_come_and_the_model_keeps_the_value_alone():
    import torch

    from yacht_lab.training.search.learner import Learner
    from yacht_lab.training.search.rollouts import play

    rules, p = R.get_rules("standard"), 2
    spec = ValueSpec("standard", p, (32,), 2, ())
    learner = Learner(spec, 0, 3e-3, aux_outputs=p)
    batch = play(TurnPlanner(rules, p, learner.network()), 64, np.random.default_rng(1), 0.0, aux=True)
    inputs = torch.from_numpy(batch.x)

    def aux_error() -> float:
        with torch.no_grad():
            return float(((learner.model(inputs)[:, 1:].numpy() * 100 - batch.aux) ** 2).mean())

    before = aux_error()
    learner.fit(batch.x, batch.y, 30, 128, 3e-3, batch.aux, 1.0)
    assert aux_error() < 0.2 * before
    saved = learner.network()
    assert [w.shape for w, _ in saved.layers] == [shape for shape in layer_shapes(spec)]  # the value's output only
    last = learner.model[-1]
    np.testing.assert_array_equal(saved.layers[-1][0][:, 0], last.weight.detach().numpy()[0])
    np.testing.assert_array_equal(saved.layers[-1][1], last.bias.detach().numpy()[:1])


def test_a_table_run_with_auxiliary_outputs_saves_and_resumes(tmp_path):
    from yacht_lab.training.search.trainer import train_search

    data = {
        **TINY_SEARCH,
        "reward": "win",
        "total_timesteps": 960,
        "eval": {"every_timesteps": 960, "games": 2, "seed": 0},
        "search": {**TINY_SEARCH["search"], "players": 2, "tables": 20, "aux_weight": 0.5},
    }
    run = train_search(validate(from_dict(data)), tmp_path, name="run", progress=False)
    assert load_value(run / "model.npz").layers[-1][0].shape == (16, 1)
    with np.load(run / "checkpoints" / "step_480.npz") as checkpoint:  # the auxiliary outputs go on with the run
        assert checkpoint["model/2.weight"].shape == (3, 16)
    again = {**data, "total_timesteps": 1440}
    with pytest.raises(ValueError, match="config"):
        train_search(validate(from_dict({**again, "search": {**data["search"], "aux_weight": 0.0}})), resume=run)
    resumed = train_search(validate(from_dict(again)), resume=run, progress=False)
    with open(resumed / "learning_curve.csv") as file:
        assert [row["timesteps"] for row in csv.DictReader(file)][-1] == "1440"


@pytest.mark.slow
def test_the_trainer_speed_benchmark_prints_every_table_config(tmp_path):
    out = tmp_path / "speed.json"
    done = run_script("benchmarks/search_trainer_speed.py", "--repeats", "1", "--json", str(out), timeout=900)
    assert done.returncode == 0, done.stderr
    rows = json.loads(out.read_text())["rows"]
    configs = {row["config"] for row in rows}
    assert {"search_selfplay", "search_selfplay_yahtzee", "search_selfplay3_standard"} <= configs
    assert all(row["self_play_turns_per_second"] > row["iteration_turns_per_second"] > 0 for row in rows)
    assert "self-play turns per CPU second" in done.stdout
    bad = run_script("benchmarks/search_trainer_speed.py", "--configs", "nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "no shipped config 'nope'" in bad.stderr


@pytest.mark.parametrize(
    "name, config, rules, players, version, placing",
    [
        ("selfplay3_standard", "search_selfplay3_standard", "standard", 3, 3, 0.35),
        ("selfplay4_standard", "search_selfplay4_standard", "standard", 4, 3, 0.35),
        ("selfplay5_standard", "search_selfplay5_standard", "standard", 5, 3, 0.35),
        ("selfplay_standard", "search_selfplay", "standard", 2, 2, 0.15),
        pytest.param("selfplay_yahtzee", "search_selfplay_yahtzee", "yahtzee", 2, 2, 0.9, marks=pytest.mark.slow),
    ],
)
def test_each_shipped_table_model_plays_in_the_versus_env_the_pettingzoo_env_and_a_head_to_head(
    name, config, rules, players, version, placing
):
    import gymnasium as gym

    from yacht_env.multiplayer import env as aec_env
    from yacht_lab.measure.head_to_head import head_to_head

    agent = make_agent(f"search:{name}")  # the rules its .json names
    assert agent.rules.name == rules and agent.table_players == players
    assert agent.network.spec.features == version and agent.network.solo is not None  # 3: the race
    section = yaml.safe_load((Path(__file__).parents[1] / "configs" / f"{config}.yaml").read_text())["search"]
    assert agent.network.spec.placing == section.get("placing", 0.0) == placing  # its config's search.placing
    others = [make_agent("optimal" if i == 0 else f"optimal#{i + 1}", rules) for i in range(players - 1)]
    outcome = head_to_head([agent, *others], players, 1, seed=0, rules=rules, calibration=False)
    assert outcome.games[agent.name] == players * players
    env = gym.make("YachtVersus-v0", rules=rules, opponents=[f"search:{name}"] * (players - 1))
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        obs, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    game = aec_env(rules=rules, num_players=players)
    game.reset(seed=2)
    for _seat in game.agent_iter():
        obs, _, term, trunc, _ = game.last()
        game.step(None if term or trunc else agent.act(obs["observation"], obs["action_mask"]))


@pytest.mark.parametrize(
    "name, config",
    [(f"selfplay{p}_standard", f"search_selfplay{p}_standard") for p in (3, 4, 5)]
    + [("selfplay_standard", "search_selfplay"), ("selfplay_yahtzee", "search_selfplay_yahtzee")],
)
def test_each_shipped_table_model_carries_its_configs_placing(name, config):
    """What the slow test above plays, read without playing (the Yahtzee model's race builds 1.4 GB of files)."""
    spec = load_value(name).spec
    section = yaml.safe_load((Path(__file__).parents[1] / "configs" / f"{config}.yaml").read_text())["search"]
    assert spec.placing == section.get("placing", 0.0) > 0 and spec.players == section["players"]
    assert spec.features == (3 if section.get("race") else 2) and spec.net_arch == tuple(section["net_arch"])


@pytest.mark.slow
def test_the_look_benchmark_plays_both_looks_and_refuses_a_solo_model(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("search_look", "benchmarks/search_look.py")
    look = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(look)
    # Where the opponent has nothing left to play (the second seat's last pick), the look is V itself: the plain
    # agent's pick; everywhere its picks are legal.
    agent, plain = look.LookAgent("selfplay_standard", "standard", "picks"), make_agent("search:selfplay_standard")
    import gymnasium as gym

    env = gym.make("YachtVersus-v0", rules="standard", opponents=["search:selfplay_standard"], seat=1)
    rng = np.random.default_rng(5)
    last_picks = 0
    for game in range(4):
        obs, info = env.reset(seed=game)
        done = False
        while not done:
            mask = info["action_mask"]
            action = int(agent.act(obs, mask))
            assert mask[action]
            if bin(int(agent.view.decode(obs[None]).open_mask[0])).count("1") == 1:
                assert action == int(plain.act(obs, mask))
                last_picks += 1
            action = action if rng.random() < 0.7 else int(rng.choice(np.flatnonzero(mask)))
            obs, _, done, _, info = env.step(action)
    assert last_picks >= 4
    out = tmp_path / "look.json"
    done = run_script("benchmarks/search_look.py", "--deals", "1", "--look", "turn", "--json", str(out), timeout=600)
    assert done.returncode == 0, done.stderr
    pairs = json.loads(out.read_text())["pairs"]
    assert [(row["a"], row["b"], row["games"]) for row in pairs] == [
        ("search:selfplay_standard+look:turn", "search:selfplay_standard", 4),
        ("search:selfplay_standard+look:turn", "optimal", 4),
        ("search:selfplay_standard", "optimal", 4),
    ]
    assert "decisions/s" in done.stdout
    bad = run_script("benchmarks/search_look.py", "--model", "standard", "--deals", "1")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "needs a two-seat model" in bad.stderr
