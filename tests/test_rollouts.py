"""Rollout policy improvement (``yacht_lab/rollouts.py``): positions branched on common dice, valued by playing on.

* A position's value after a move, estimated by playing it out over many fresh futures, matches the win agent's exact
  win probability when everyone plays the solver afterwards (an independent computation: score distributions).
* Branches of one future share their dice: the same move twice gets the same value in every position, exactly.
* Playing tables on to the end from their deal gives the head-to-head benchmark's totals on the same dice.
* One iteration of the trainer labels with the best branch, moves the policy toward the labels (cross-entropy) or the
  candidates' log-odds by ``step`` x their advantages, holds the earlier decisions, and is reproducible by its seed.
"""

from __future__ import annotations

import copy
import csv
from pathlib import Path

import numpy as np
import pytest
import torch

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.game import TableState, draw_stream
from yacht_lab.config import EvalConfig, PolicyConfig, RolloutsConfig, TrainConfig, load_config, validate
from yacht_lab.head_to_head import head_to_head, play_tables, seating
from yacht_lab.rollouts import (
    CURVE_FIELDS,
    ITERATION_FIELDS,
    Positions,
    RolloutImprover,
    branch_outcomes,
    exact_teacher,
    play_to_end,
)
from yacht_lab.tasks import task_for
from yacht_lab.training import make_model
from yacht_lab.warm_start import warm_start

REPO = Path(__file__).resolve().parents[1]


def dealt(n: int, players: int, seed: int) -> tuple[TableState, np.ndarray]:
    rng = np.random.default_rng(seed)
    table = TableState("standard", players, n)
    streams = draw_stream(rng, "standard", n * players).reshape(n, players, *table.players.stream.shape[1:])
    table.start(streams)
    return table, streams


def branch_values(positions, candidates, agents, futures, rng) -> np.ndarray:
    """The mean outcome of each candidate over the futures, ``-inf`` for padding."""
    outcomes = branch_outcomes(positions, candidates, agents, futures, rng)
    padding = np.isnan(outcomes)
    assert np.array_equal(padding.all(axis=1), candidates < 0) and np.array_equal(padding.any(axis=1), candidates < 0)
    return np.where(candidates >= 0, np.nan_to_num(outcomes).mean(axis=1), -np.inf)


def test_play_to_end_gives_the_head_to_head_totals_on_the_same_dice():
    agents = [make_agent("optimal"), make_agent("greedy")]
    n, p = 64, 2
    rng = np.random.default_rng(0)
    dice = rng.integers(1, 7, size=(n, p, 12, 3, 5), dtype=np.int8)
    agent_at = seating(p)[0][rng.integers(p * p, size=n)]
    expected = play_tables(agents, dice, agent_at)
    table = TableState("standard", p, n)
    table.start(R.prefix_codes(dice.reshape(n, p, -1, R.NUM_DICE)))
    assert np.array_equal(play_to_end(agents, table, agent_at), expected)
    assert (table.players.open_mask == 0).all()


def late_positions(n: int, open_left: int, seed: int) -> Positions:
    """Tables of two optimal players played on until the player on turn has ``open_left`` categories open and is
    at the start of a turn."""
    agents = [make_agent("optimal")]
    table, _ = dealt(n, 2, seed)
    agent_at = np.zeros((n, 2), dtype=np.intp)
    from yacht_env.encoding import ObservationEncoder
    from yacht_env.opponents import act_at_tables

    solo, view = ObservationEncoder("standard"), MultiplayerEncoder("standard", 2)
    opened = R.open_bits(12).sum(axis=1)
    stop = np.zeros(n, dtype=bool)
    while not stop.all():
        rows = table.on_turn
        stop |= (opened[table.players.open_mask[rows]] == open_left) & (table.players.rolls_left[rows] == 2)
        at = np.flatnonzero(~stop)
        actions = np.zeros(n, dtype=np.intp)
        actions[at] = act_at_tables(agents, agent_at[at, table.current[at]], table, at, solo, view)
        table.play(actions, ~stop)
    obs = view.observe(table, table.current)
    return Positions(table, table.current.copy(), agent_at, obs, table.mask.copy())


def test_branch_values_match_the_win_agents_exact_odds_when_everyone_plays_the_solver():
    positions = late_positions(4, open_left=2, seed=3)
    win = make_agent("win")
    games, rows = positions.table.players, positions.table.on_turn
    other = positions.table._first_row + 1 - positions.table.current
    exact = win.win_probabilities(
        games.roll[rows],
        games.rolls_left[rows],
        games.open_mask[rows],
        games.total[rows],
        games.open_mask[other][:, None],
        games.total[other][:, None],
    )
    candidates = np.argsort(-exact, axis=1)[:, :3]
    futures = 3000
    values = branch_values(positions, candidates, [make_agent("optimal")], futures, np.random.default_rng(1))
    expected = 2 * np.take_along_axis(exact, candidates, axis=1) - 1  # +1 a win, -1 a loss, 0 a tie
    # Each value is a mean of futures outcomes in [-1, 1]: standard error at most 1 / sqrt(futures).
    assert np.abs(values - expected).max() < 4 / np.sqrt(futures), (values, expected)
    assert np.abs(values - expected).mean() < 1.5 / np.sqrt(futures)


def test_branches_of_a_future_share_their_dice():
    positions = late_positions(32, open_left=3, seed=4)
    agents = [make_agent("greedy")]
    rng = np.random.default_rng(2)
    top = np.argmax(np.where(positions.masks, rng.random(positions.masks.shape), -1), axis=1)
    other = np.argmax(np.where(positions.masks, rng.random(positions.masks.shape), -1), axis=1)
    pad = np.full(32, -1)
    values = branch_values(positions, np.stack([top, other, top, pad], axis=1), agents, 8, np.random.default_rng(5))
    assert np.array_equal(values[:, 0], values[:, 2])  # the same move on the same dice: the same outcomes
    assert np.isneginf(values[:, 3]).all()
    assert (values[:, 0] != values[:, 1]).any()
    again = branch_values(positions, np.stack([top, top], axis=1), agents, 8, np.random.default_rng(6))
    assert (again[:, 0] != values[:, 0]).any()  # other futures, other outcomes
    same = branch_values(positions, np.stack([top, other, top, pad], axis=1), agents, 8, np.random.default_rng(5))
    assert np.array_equal(same, values)  # seeded


@pytest.fixture(scope="module")
def started():
    """A 2-player learner warm-started from the shipped model, its reference, its opponents, and its start weights."""
    config = TrainConfig(
        n_envs=2,
        opponents=["optimal"],
        reward="win",
        init=str(REPO / "models" / "ppo_standard.zip"),
        policy=PolicyConfig(net_arch=[256, 256], chase_inputs=True, keep_head=True, bonus_odds=True),
    )
    env = task_for(config).make_env()
    model, reference = make_model(config, env, None), make_model(config, env, None)
    warm_start(model, config)
    warm_start(reference, config)
    opponents = [make_agent("optimal"), make_agent("ppo:standard")]
    return model, reference, opponents, copy.deepcopy(model.policy.state_dict())


def fresh(started, seed: int = 0, **settings) -> RolloutImprover:
    """A trainer on the start's weights with a new optimizer (what a run begins with)."""
    model, reference, opponents, weights = started
    policy = model.policy
    policy.load_state_dict(weights)
    policy.optimizer = policy.optimizer_class(policy.parameters(), lr=1.0, **policy.optimizer_kwargs)
    settings = {"futures": 4, "refine": 4, "positions": 64, "tables": 16, **settings}
    return RolloutImprover(model, reference.policy, opponents, "standard", 2, seed=seed, **settings)


def test_the_positions_found_are_the_learners_late_decisions(started):
    a = fresh(started)
    found, early_obs, early_masks = a.play_games()
    assert found and len(early_obs) > 0
    opened = R.open_bits(12).sum(axis=1)
    view = MultiplayerEncoder("standard", 2)
    for positions in found:  # every position is a late decision of the learner, on turn, seen from its seat
        rows = positions.table.on_turn
        assert (opened[positions.table.players.open_mask[rows]] <= a.late_turns).all()
        assert (positions.agent_at[np.arange(len(rows)), positions.seat] == 0).all()
        assert np.array_equal(positions.seat, positions.table.current)
        assert np.array_equal(positions.obs, view.observe(positions.table, positions.seat))
        assert np.array_equal(positions.masks, positions.table.mask)
    decoded = a.solo.decode(early_obs[:, : a.solo.size])[2]  # the own game's open mask
    assert (opened[decoded] > a.late_turns).all()
    assert early_masks.shape == (len(early_obs), 44)


def test_the_race_labels_the_best_move_that_survives_it(started, monkeypatch):
    """Four positions, the stage-1 and stage-2 outcomes given: the race's rules, case by case."""
    a = fresh(started, futures=4, refine=2, candidates=3)
    positions = late_positions(4, open_left=2, seed=5)
    rows = positions.table.on_turn
    assert (positions.table.players.rolls_left[rows] == 2).all()  # a turn's start: keeps and picks, many legal
    w, lose, tie = 1.0, -1.0, 0.0
    first = np.array(
        [
            [[w, w, lose]] * 4,  # 1: the same as the first move in every future (never matters); 2: always worse
            [[lose, w, lose], [lose, w, lose], [w, w, w], [lose, lose, lose]],  # 1 better, 2 never differs
            [[w, lose, tie], [lose, w, lose], [w, lose, w], [lose, w, lose]],  # both even: both race on
            [[lose, w, w], [lose, w, w], [lose, w, w], [lose, w, w]],  # both better in every future
        ]
    )
    second = {  # stage 2, for the positions that raced (1, 2, 3), their dead moves padded with -1
        1: [[lose, w, np.nan], [lose, w, np.nan]],  # 1 better again: chosen
        2: [[w, lose, lose], [w, lose, lose]],  # 1 and 2 now behind over 6 futures: the first move stays
        3: [[lose, w, w], [lose, w, w]],  # a tie between 1 and 2: the more likely (1)
    }
    calls = []

    def outcomes(part, candidates, futures):
        calls.append((len(candidates), futures, candidates.copy()))
        if futures == 4:
            return first
        return np.array([second[i] for i in (1, 2, 3)])

    monkeypatch.setattr(a, "_outcomes", outcomes)
    data = a.label([positions])
    candidates = data["candidates"]
    assert (candidates >= 0).all()
    assert [c[:2] for c in calls] == [(4, 4), (3, 2)]
    assert np.array_equal(calls[1][2][:, 0], candidates[1:, 0])
    assert np.array_equal(calls[1][2][0], [candidates[1, 0], candidates[1, 1], -1])  # position 1: move 2 dropped
    assert np.array_equal(calls[1][2][1:], candidates[2:])
    assert np.array_equal(data["labels"], [candidates[0, 0], candidates[1, 1], candidates[2, 0], candidates[3, 1]])
    assert np.array_equal(data["raced"], [False, True, True, True])
    assert np.allclose(data["values"][1], [-4 / 6, 4 / 6, -np.inf])
    assert np.allclose(data["gaps"], [0.0, 8 / 6, 0.0, 2.0])


def test_an_update_raises_the_labels_and_remembers_them(started):
    a = fresh(started, memory=150)
    found, early_obs, early_masks = a.play_games()
    data = a.label(found)
    assert (data["masks"][np.arange(len(data["labels"])), data["labels"]]).all()
    rng = np.random.default_rng(0)  # labels that are often not the policy's move: the update must raise them
    data["labels"] = np.where(data["masks"], rng.random(data["masks"].shape), -1).argmax(axis=1)
    policy = a.model.policy
    obs = torch.as_tensor(data["obs"])

    def label_log_probs():
        with torch.no_grad():
            logits = policy.get_distribution(obs, action_masks=data["masks"]).distribution.logits
        return logits.log_softmax(-1)[np.arange(len(obs)), data["labels"]]

    before = label_log_probs()
    stats = a.update(data, early_obs, early_masks)
    assert (label_log_probs() - before).mean() > 0.1
    assert stats["kl_early"] > 0 and stats["memory"] == len(data["labels"])
    for _ in range(3):  # the memory: the newest iterations that hold at least 150 positions
        stats = a.update(data, early_obs, early_masks)
    n = len(data["labels"])
    assert n < 150 and stats["memory"] == n * min(4, -(-150 // n))


def test_exact_labels_are_the_teachers_moves_and_gaps(started):
    teacher = make_agent("win")  # any agent of the table; a run's is the win agent over the start's own policy
    run = fresh(started, teacher=teacher, late_turns=12, positions=300, tables=12)
    found, early_obs, _ = run.play_games()
    assert len(early_obs) == 0  # every decision is a labelled one
    data = run.label(found)
    obs, masks = data["obs"], data["masks"]
    assert len(obs) > 200 and not data["raced"].any()
    assert np.array_equal(data["labels"], teacher.act(obs, masks))
    with torch.no_grad():
        top = run._logits(run.model.policy, obs, masks).argmax(1).numpy()
    assert np.array_equal(data["top"], top)
    values = teacher.win_probabilities(*teacher.read(obs))
    rows = np.arange(len(top))
    assert np.allclose(data["gaps"], values[rows, data["labels"]] - values[rows, top])
    assert (data["gaps"] >= -1e-12).all() and (data["gaps"][data["labels"] == top] == 0).all()
    assert (data["labels"] != top).mean() > 0.02  # the start and the win agent differ on some moves
    before = run.model.policy.state_dict()["action_net.weight"].clone()
    stats = run.update(data, early_obs, np.zeros((0, 44), bool))
    assert stats["kl_early"] == 0.0 and not torch.equal(before, run.model.policy.state_dict()["action_net.weight"])


def test_an_iteration_is_reproducible_by_its_seed(started):
    stats, weights = [], []
    for seed in (7, 7, 8):
        run = fresh(started, seed)
        stats.append(run.iteration())
        weights.append(copy.deepcopy(run.model.policy.state_dict()))
    assert stats[0] == stats[1] and stats[2] != stats[0]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    assert not all(torch.equal(weights[0][k], weights[2][k]) for k in weights[0])


def tiny(**changes) -> TrainConfig:
    settings = {
        "opponents": ["optimal", "greedy"],
        "futures": 2,
        "refine": 2,
        "positions": 24,
        "tables": 8,
        "iterations": 3,
        "eval_every": 2,
        **changes,
    }
    return TrainConfig(
        reward="win",
        init="standard",
        policy=PolicyConfig(net_arch=[256, 256], chase_inputs=True, keep_head=True, bonus_odds=True),
        eval=EvalConfig(games=2, seed=5),
        rollouts=RolloutsConfig(**settings),
    )


def test_a_rollouts_run_writes_its_folder(tmp_path):
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.runs import read_curve
    from yacht_lab.training import train

    config = validate(tiny())
    run = train(config, tmp_path, command="python train.py --config tiny.yaml", progress=False)
    names = sorted(p.name for p in run.iterdir())
    assert names == ["checkpoints", "command.txt", "config.yaml", "iterations.csv", "learning_curve.csv", "model.zip"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["iteration_2.zip", "iteration_3.zip"]
    assert load_config(run / "config.yaml").rollouts == config.rollouts  # the exact config, read back
    rows = read_curve(run / "iterations.csv", ITERATION_FIELDS)
    assert [row["iteration"] for row in rows] == [1, 2, 3]
    assert all(row["positions"] > 0 and 0 <= row["changed"] <= row["raced"] <= 1 for row in rows)
    assert run.name.startswith("YachtVersus-v0__standard__rollouts__0__")
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
    again = train(config, tmp_path, command="again", progress=False)  # the same seed: the same model
    for name in ("model.zip",):
        a, b = PPOAgent(run / name).model.policy.state_dict(), PPOAgent(again / name).model.policy.state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"init": None}, "rollouts needs init"),
        ({"reward": "score"}, "reward must be 'win'"),
        ({"opponents": ["greedy"]}, "leave opponents empty"),
        ({"rollouts": {"opponents": []}}, "rollouts.opponents must be a list of 1.."),
        ({"rollouts": {"opponents": ["optimal", "optimal"]}}, "lists 'optimal' twice"),
        ({"rollouts": {"opponents": ["nobody"]}}, "unknown agent 'nobody'"),
        ({"rollouts": {"players": 1}}, "rollouts.players must be an int in 2..10"),
        ({"rollouts": {"late_turns": 13}}, "rollouts.late_turns must be an int >= 1 and <= 12"),
        ({"rollouts": {"candidates": 1}}, "rollouts.candidates must be an int >= 2"),
        ({"rollouts": {"futures": 1}}, "rollouts.futures must be an int >= 2"),
        ({"rollouts": {"futures": 20000}}, "at most 65,536 branches"),
        ({"rollouts": {"z": -1.0}}, "rollouts.z must be a number >= 0"),
        ({"rollouts": {"learning_rate": 0}}, "rollouts.learning_rate must be a number > 0"),
        ({"rollouts": {"positions": 0}}, "rollouts.positions must be an int >= 1"),
        ({"rollouts": {"labels": "oracle"}}, "rollouts.labels must be one of race, exact, got 'oracle'"),
        ({"rules": "yahtzee", "init": "yahtzee", "rollouts": {"labels": "exact"}}, "rollouts.labels exact needs"),
    ],
)
def test_a_bad_rollouts_config_is_one_error(change, message):
    config = tiny()
    for key, value in change.items():
        if key == "rollouts":
            for name, setting in value.items():
                setattr(config.rollouts, name, setting)
        else:
            setattr(config, key, value)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        validate(config)


def test_a_rollouts_config_reads_from_yaml_and_refuses_a_resume(tmp_path):
    from yacht_lab.training import train

    for name in ("selfplay_rollouts", "selfplay_rollouts_3p", "selfplay_exact", "selfplay_exact_3p"):
        config = load_config(REPO / "benchmarks" / "training" / f"{name}.yaml")
        assert config.rollouts.players == (3 if "3p" in name else 2)
        assert config.rollouts.labels == ("exact" if "exact" in name else "race")
    path = tmp_path / "bad.yaml"
    path.write_text("reward: win\ninit: standard\nrollouts:\n  sideways: 1\n")
    with pytest.raises(ValueError, match="unknown config key rollouts.sideways"):
        load_config(path)
    with pytest.raises(ValueError, match="not resumed"):
        train(validate(tiny()), tmp_path, resume=tmp_path / "x.zip")
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.slow
def test_a_rollouts_run_plays_a_thirteen_box_family_preset(tmp_path):
    """Yahtzee's sheet (13 boxes, the upper and Yahtzee bonuses): positions, branches and the update run, and the
    model saved plays at its table."""
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.training import train

    config = validate(tiny(opponents=["optimal"], late_turns=2, iterations=1, eval_every=1))
    config.rules, config.init = "yahtzee", "yahtzee"
    config = validate(config)
    run = train(config, tmp_path, command="tiny yahtzee", progress=False)
    assert PPOAgent(run / "model.zip", rules="yahtzee").table_players == 2
    with open(run / "iterations.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 1 and int(rows[0]["positions"]) > 0


@pytest.mark.slow
def test_a_run_with_exact_labels_learns_the_teachers_moves(tmp_path):
    """labels: exact end to end: the teacher is the win agent over the start's own policy (read whole: about a
    minute), and on each iteration's fresh positions the policy's moves differ from the teacher's less and less."""
    from yacht_lab.runs import read_curve
    from yacht_lab.training import train

    config = tiny(labels="exact", late_turns=12, positions=8000, tables=300, iterations=3, learning_rate=3e-4)
    run = train(validate(config), tmp_path, command="tiny exact", progress=False)
    rows = read_curve(run / "iterations.csv", ITERATION_FIELDS)
    assert all(row["raced"] == 0 and row["positions"] > 6000 for row in rows)
    # `changed`: the share of positions where the teacher's move is not the policy's, before that iteration's update.
    assert rows[0]["changed"] > 0.1 and rows[-1]["changed"] < rows[0]["changed"] - 0.01
    assert exact_teacher("standard", "standard", 2).distributions.solution is None  # the start's play, no solver


def test_the_shipped_self_play_model_sits_at_two_player_tables_and_beats_its_start():
    """models/ppo_selfplay_standard.zip (the ninth try, `benchmarks/training/selfplay_exact.yaml`): a table model of
    two players, read by the safe loader, which wins more than half of its games against the model it started from
    (200,000 games: 51.31% [51.11, 51.50]; these 6,000: 51.50% [50.36, 52.64])."""
    from yacht_agents.ppo import PPOAgent

    model = make_agent("ppo:selfplay_standard")
    assert isinstance(model, PPOAgent) and model.table_players == 2 and model.observation_size == 79
    result = head_to_head([model, make_agent("ppo:standard")], 2, 1_500, seed=0, calibration=False)
    pair = result.to_dict()["head_to_head"]["ppo:selfplay_standard vs ppo:standard"]
    assert pair["games"] == 6_000 and pair["win_rate_a_ci95"][0] > 0.5
