"""The search agent's race (features 3): a solo network's own play evaluated exactly, every seat's chance of finishing
first under it, and a table network that starts from that chance and learns what to add to it.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from test_search import TINY_SEARCH, network, random_contexts

from yacht_agents import make_agent
from yacht_agents.search import (
    RACE_CLIP,
    SearchAgent,
    TurnPlanner,
    ValueNetwork,
    ValueSpec,
    feature_size,
    layer_shapes,
    load_value,
    save_value,
    solo_policy_table,
)
from yacht_env import rules as R
from yacht_lab.training.config import from_dict, validate

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def solo() -> ValueNetwork:
    """A small solo network whose play's distributions are made once for the module."""
    net = network("standard", 1, (12,), seed=5)
    net.distributions()
    return net


def race_network(solo: ValueNetwork, players: int, seed: int = 0, zero: bool = False) -> ValueNetwork:
    """A table network of features 3 over ``solo`` (``zero``: its last layer zeros, so its value is the race's)."""
    spec = ValueSpec("standard", players, (8,), 3, solo.spec.net_arch)
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(0, 0.3, (a, b)).astype(np.float32), rng.normal(0, 0.1, b).astype(np.float32))
        for a, b in layer_shapes(spec)
    ]
    if zero:
        layers[-1] = (np.zeros_like(layers[-1][0]), np.zeros_like(layers[-1][1]))
    return ValueNetwork(spec, layers, solo)


def yacht_contexts(players: int, n: int, seed: int):
    """``n`` contexts of a Yacht table (random open boxes, each total at most what its filled boxes can score)."""
    own, theirs = random_contexts(R.get_rules("standard"), players, n, seed)
    best = R.score_table("standard").max(axis=0)

    def sheet(open_mask):
        filled = (R.open_bits(12)[4095 & ~np.asarray(open_mask)] * best).sum(axis=-1)
        totals = np.floor(np.random.default_rng(seed).random(filled.shape) * (filled + 1)).astype(np.intp)
        return (open_mask, 0 * open_mask, 0 * open_mask, totals)

    return sheet(own[0]), sheet(theirs[0])


@pytest.mark.slow
def test_the_solo_policy_table_is_the_agents_own_play(solo):
    from yacht_agents.win import policy_table

    table = solo_policy_table(solo)
    np.testing.assert_array_equal(table, policy_table(SearchAgent(solo, "standard", "tiny")))
    with pytest.raises(ValueError, match="solo network's, under rules without bonuses"):
        solo_policy_table(network("yahtzee", 1, (4,)))
    with pytest.raises(ValueError, match="solo network's"):
        race_network(solo, 2).distributions()


def test_the_distributions_are_the_policys_exact_evaluation(solo):
    """The recurrence over the agent's table gives what :func:`policy_distributions` (the win agent's) gives, and
    its means are the policy's exact expected points: the one-turn relation under the table, computed forwards."""
    from yacht_env.distributions import policy_distributions, turn_outcomes

    dist = solo.distributions()
    table = solo_policy_table(solo)
    np.testing.assert_array_equal(dist.start, policy_distributions("standard", table).start)
    np.testing.assert_allclose(dist.start.sum(axis=1), 1.0, atol=1e-12)
    ends = turn_outcomes("standard", table)  # (O, k, s): how each turn ends
    mean = dist.mean()
    bits = 1 << np.arange(12)
    masks = np.arange(1, 4096)
    expected = np.einsum("oks,s->o", ends[masks], np.arange(ends.shape[2])) + np.einsum(
        "ok,ok->o", ends[masks].sum(axis=2), mean[masks[:, None] & ~bits]
    )
    np.testing.assert_allclose(mean[masks], expected, atol=1e-9)
    assert abs(mean[4095] - 166.96) > 1  # a poor tiny network's own play, not the solver's


def brute_race(start: np.ndarray, open_masks, totals) -> float:
    """The first seat's share of the win by summing over every combination of final totals (ties split)."""
    supports = [np.flatnonzero(start[o]) for o in open_masks]
    share = 0.0
    for points in itertools.product(*supports):
        finals = [t + x for t, x in zip(totals, points, strict=True)]
        chance = np.prod([start[o, x] for o, x in zip(open_masks, points, strict=True)])
        best = max(finals)
        if finals[0] == best:
            share += chance / finals.count(best)
    return share


@pytest.mark.parametrize("players", [2, 3])
def test_the_race_is_the_chance_of_finishing_first_by_brute_force(solo, players):
    rng = np.random.default_rng(players)
    start = solo.distributions().start
    few = [m for m in range(1, 4096) if bin(m).count("1") <= 2]  # supports small enough to sum over
    rows_open, rows_total = [], []
    for _ in range(12):
        masks = [int(rng.choice(few)) for _ in range(players)]
        masks[1] = masks[1] if rng.random() < 0.8 else 0  # now and then a finished sheet
        totals = [int(rng.integers(0, 40)) for _ in range(players)]
        rows_open.append(masks)
        rows_total.append(totals)
    rows_open[0], rows_total[0] = [1 << 11] * players, [20] * players  # even: the same sheet everywhere
    chances = solo.race(np.array(rows_open), np.array(rows_total))
    expected = [brute_race(start, o, t) for o, t in zip(rows_open, rows_total, strict=True)]
    np.testing.assert_allclose(chances, expected, atol=1e-12)
    np.testing.assert_allclose(chances[0], 1 / players, atol=1e-12)


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_the_first_seats_chance_is_the_tables_first_column(solo, players):
    """:func:`first_seat_chances` (opponents summed once per distinct set) equals the win agent's symmetric sum,
    rows sharing their opponents as a turn's afterstates do, in every order."""
    from yacht_agents.win_model import first_seat_chances, table_win_probabilities

    own, theirs = yacht_contexts(players, 300, seed=players)
    shared = np.random.default_rng(players).integers(0, 20, 300)  # 20 sets of opponents, each in two orders
    theirs = tuple(x[shared] for x in theirs)
    flip = shared % 2 == 1
    theirs = tuple(np.where(flip[:, None], x[:, ::-1], x) for x in theirs)
    masks, totals = np.column_stack([own[0], theirs[0]]), np.column_stack([own[3], theirs[3]])
    dist = solo.distributions()
    np.testing.assert_allclose(
        first_seat_chances(dist, masks, totals), table_win_probabilities(dist, masks, totals)[:, 0], atol=1e-13
    )


@pytest.mark.parametrize(("columns", "radix"), [(1, 7), (3, 5), (3, 1 << 21), (4, 1 << 21), (6, 1 << 40)])
def test_distinct_rows_are_numpys_unique_rows(columns, radix):
    """:func:`distinct_rows` (columns packed into words: one, or several compared in turn) gives numpy's unique
    rows: the first occurrence of each and every row's index among them, in ascending order."""
    from yacht_agents.win_model import distinct_rows

    rng = np.random.default_rng(columns)
    pool = rng.integers(0, radix, (40, columns))  # few distinct rows, repeated in a random order
    rows = pool[rng.integers(0, 40, 2000)]
    rows[:3] = [0] * columns, [radix - 1] * columns, [radix - 1] * columns  # the radix's extremes
    first, inverse = distinct_rows(list(rows.T), radix)
    unique, expected_first, expected_inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    np.testing.assert_array_equal(first, expected_first)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    np.testing.assert_array_equal(rows[first], unique)


def test_a_race_network_starts_as_the_race_and_adds_its_output_to_the_races_logit(solo):
    rules = R.get_rules("standard")
    own, theirs = yacht_contexts(3, 40, seed=2)
    start = race_network(solo, 3, zero=True)
    x = start.features(own, theirs)
    assert x.shape == (40, feature_size(rules, 3, 3, True)) == (40, feature_size(rules, 3, 2, True) + 2)
    race = solo.race(np.column_stack([own[0], theirs[0]]), np.column_stack([own[3], theirs[3]]))
    chance = np.clip(race, RACE_CLIP, 1 - RACE_CLIP)
    np.testing.assert_allclose(x[:, -2], chance, rtol=1e-6)
    np.testing.assert_allclose(x[:, -1], np.log(chance / (1 - chance)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(start.values(own, theirs, exact=True), chance, rtol=1e-6)
    trained = race_network(solo, 3, seed=1)
    h = np.maximum(x.astype(np.float64) @ trained.layers[0][0] + trained.layers[0][1], 0)
    logit = (h @ trained.layers[1][0] + trained.layers[1][1])[:, 0] + x[:, -1]
    np.testing.assert_allclose(trained.values(own, theirs), 1 / (1 + np.exp(-logit)), rtol=1e-5)
    # the planner plays a finished table exactly, as for every network
    planner = TurnPlanner(rules, 3, trained, exact=True)
    done = (np.array([0]), np.array([0]), np.array([0]), np.array([150]))
    full = (np.array([[0, 0]]), np.array([[0, 0]]), np.array([[0, 0]]), np.array([[150, 149]]))
    assert planner.afterstate_values(done, full)[0] == 0.5


def test_a_race_network_round_trips_and_its_file_is_checked(solo, tmp_path):
    net = race_network(solo, 2, seed=3)
    path = save_value(tmp_path / "race.npz", net)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["features"] == 3 and meta["solo_net_arch"] == [12]
    loaded = load_value(path)
    assert loaded.solo.distributions() is solo.distributions()  # the same weights: made once in a process
    own, theirs = yacht_contexts(2, 6, seed=4)
    np.testing.assert_array_equal(loaded.values(own, theirs, exact=True), net.values(own, theirs, exact=True))
    agent = make_agent(f"search:{path}", players=2)
    assert agent.network.spec.features == 3
    for change, message in (
        ({"solo_net_arch": []}, "features 3 \\(the race\\) needs a solo network"),
        ({"features": 4}, "features is not one of"),
    ):
        path.with_suffix(".json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(ValueError, match=message):
            load_value(path)
    with pytest.raises(ValueError, match="encoding 3 reads the race"):
        from yacht_agents.search import features

        features(R.get_rules("standard"), 2, own, theirs, 3, solo.to_come)


def test_the_learner_starts_at_the_race_and_fits_the_value_with_it(solo):
    import torch

    from yacht_lab.training.search.learner import Learner
    from yacht_lab.training.search.rollouts import play

    rules = R.get_rules("standard")
    spec = ValueSpec("standard", 2, (16,), 3, solo.spec.net_arch)
    learner = Learner(spec, 0, 3e-3, solo=solo)
    fresh = learner.network()
    batch = play(TurnPlanner(rules, 2, fresh), 24, np.random.default_rng(1), 0.0)
    chance = batch.x[:, -2].astype(np.float64)
    np.testing.assert_allclose(fresh(batch.x), chance, rtol=1e-6)  # the fresh value is the race's
    learner.fit(batch.x, batch.y, 3, 64, 3e-3)
    moved = learner.network()
    with torch.no_grad():
        logit = learner.model(torch.from_numpy(batch.x))[:, 0].double().numpy() + batch.x[:, -1]
    np.testing.assert_allclose(moved(batch.x), 1 / (1 + np.exp(-logit)), rtol=1e-5)
    assert np.abs(moved(batch.x) - chance).max() > 1e-4  # it learned something to add


def test_a_race_section_is_checked():
    table = {**TINY_SEARCH, "reward": "win", "search": {**TINY_SEARCH["search"], "players": 2}}
    for change, message in [
        ({"race": True}, "name that network in search.solo"),
        ({"race": "yes", "solo": "standard"}, "search.race must be true or false"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate(from_dict({**table, "search": {**table["search"], **change}}))
    yahtzee = {**table, "rules": "yahtzee", "search": {**table["search"], "race": True, "solo": "yahtzee"}}
    assert validate(from_dict(yahtzee)).search.race  # the family's race (tests/test_search_family_race.py)
    assert validate(from_dict({**table, "search": {**table["search"], "race": True, "solo": "standard"}})).search.race


def test_a_race_agents_plan_of_a_context_depends_on_nothing_else(solo):
    """The race's sums (each row over its own span) and the placing keep the agent's plans row by row."""
    from threadpoolctl import threadpool_limits

    rules = R.get_rules("standard")
    net = race_network(solo, 3, seed=8)
    net = ValueNetwork(net.spec._replace(placing=0.2), net.layers, solo)
    own, theirs = yacht_contexts(3, 30, seed=9)
    planner = TurnPlanner(rules, 3, net, exact=True)
    batch = planner.plan(own, theirs)
    for i in range(0, 30, 7):
        for threads in (1, 2):
            with threadpool_limits(threads, user_api="blas"):
                alone = planner.plan(tuple(a[i : i + 1] for a in own), tuple(a[i : i + 1] for a in theirs))
            for part, whole in zip(alone, batch, strict=True):
                np.testing.assert_array_equal(part[0], whole[i])


@pytest.mark.slow
@pytest.mark.parametrize("players, placing", [(2, 0.0), (3, 0.2)])
def test_a_race_run_trains_saves_and_its_model_plays(solo, tmp_path, players, placing):
    from yacht_lab.measure.head_to_head import head_to_head
    from yacht_lab.training.search.trainer import train_search

    path = save_value(tmp_path / "solo.npz", solo)
    data = {
        **TINY_SEARCH,
        "reward": "win",
        "total_timesteps": 480,
        "eval": {"every_timesteps": 480, "games": 2, "seed": 0},
        "search": {
            **TINY_SEARCH["search"],
            **{"players": players, "tables": 20, "solo": str(path), "race": True, "placing": placing},
        },
    }
    run = train_search(validate(from_dict(data)), tmp_path / "runs", progress=False)
    model = load_value(run / "model.npz")
    assert model.spec.features == 3 and model.spec.solo_net_arch == (12,) and model.spec.placing == placing
    agent = make_agent(f"search:{run}", players=players)
    seats = [agent, *(make_agent(f"greedy#{j}") for j in range(1, players))]
    result = head_to_head(seats, players, 2, 0, calibration=False).to_dict()
    assert result["agents"][agent.name]["games"] == 2 * players * players


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_placing_race_is_the_mean_of_the_pairwise_races(solo, players):
    """``placing`` 1: the mean over the opponents of each pairwise race (the two-seat table's first column);
    ``placing`` ``w``: the linear mix of that and the chance of finishing first."""
    from yacht_agents.win_model import first_seat_chances, table_win_probabilities

    own, theirs = yacht_contexts(players, 200, seed=10 + players)
    masks, totals = np.column_stack([own[0], theirs[0]]), np.column_stack([own[3], theirs[3]])
    dist = solo.distributions()
    pairwise = [table_win_probabilities(dist, masks[:, [0, j]], totals[:, [0, j]])[:, 0] for j in range(1, players)]
    placing = first_seat_chances(dist, masks, totals, placing=1.0)
    np.testing.assert_allclose(placing, np.mean(pairwise, axis=0), atol=1e-13)
    first = table_win_probabilities(dist, masks, totals)[:, 0]
    np.testing.assert_allclose(first_seat_chances(dist, masks, totals, placing=0.3), 0.7 * first + 0.3 * placing)
    assert (placing >= first - 1e-12).all()  # finishing first beats every opponent


def test_the_result_with_placing_weighs_the_opponents_finished_ahead_of():
    from yacht_agents.search import result

    total = np.array([10, 10, 4, 12])
    opponents = np.array([[10, 5], [12, 5], [4, 4], [3, 12]])
    np.testing.assert_array_equal(result(total, opponents), [0.5, 0.0, 1 / 3, 0.5])
    ahead = np.array([0.75, 0.5, 0.5, 0.75])
    np.testing.assert_allclose(result(total, opponents, 0.2), 0.8 * np.array([0.5, 0.0, 1 / 3, 0.5]) + 0.2 * ahead)


def test_a_placing_network_plays_its_value_mixed_with_the_placing_race(solo, tmp_path):
    rules = R.get_rules("standard")
    net = race_network(solo, 3, seed=6)
    placed = ValueNetwork(net.spec._replace(placing=0.25), net.layers, solo)
    own, theirs = yacht_contexts(3, 30, seed=7)
    masks, totals = np.column_stack([own[0], theirs[0]]), np.column_stack([own[3], theirs[3]])
    expected = 0.75 * net.values(own, theirs, exact=True) + 0.25 * solo.race(masks, totals, placing=1.0)
    np.testing.assert_array_equal(placed.values(own, theirs, exact=True), expected)
    planner = TurnPlanner(rules, 3, placed, exact=True)  # a finished table: the result with its placing
    done = (np.array([0]), np.array([0]), np.array([0]), np.array([150]))
    full = (np.array([[0, 0]]), np.array([[0, 0]]), np.array([[0, 0]]), np.array([[160, 149]]))
    assert planner.afterstate_values(done, full)[0] == 0.25 * 0.5
    path = save_value(tmp_path / "placed.npz", placed)
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["placing"] == 0.25 and "placing" not in json.loads(
        save_value(tmp_path / "plain.npz", net).with_suffix(".json").read_text()
    )
    assert load_value(path).spec.placing == 0.25
    np.testing.assert_array_equal(load_value(path).values(own, theirs, exact=True), expected)
    for change in ({"placing": 1.0}, {"placing": -0.1}, {"placing": True}, {"placing": "0.1"}):
        path.with_suffix(".json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(ValueError, match="placing is not a number in \\[0, 1\\)"):
            load_value(path)
    for change in ({"players": 1, "features": 1, "solo_net_arch": []}, {"features": 2, "solo_net_arch": []}):
        path.with_suffix(".json").write_text(json.dumps({**meta, **change}))
        with pytest.raises(ValueError, match="placing weighs the race of a table network's solo network"):
            load_value(path)
    alone = network("standard", 1, (8,), seed=1)
    with pytest.raises(ValueError, match="placing weighs the race of a table network's solo network"):
        ValueNetwork(alone.spec._replace(placing=0.1), alone.layers)


def test_at_two_seats_the_placing_mixes_the_value_with_the_race(solo):
    """Two seats: the placing's race is the race itself, and a network that does not read it (features 2) plays
    ``(1 - w) V + w`` race; a finished table is its result."""
    rules = R.get_rules("standard")
    plain = network("standard", 2, (8,), seed=3, version=2, solo=solo)
    placed = ValueNetwork(plain.spec._replace(placing=0.15), plain.layers, solo)
    own, theirs = yacht_contexts(2, 30, seed=11)
    masks, totals = np.column_stack([own[0], theirs[0]]), np.column_stack([own[3], theirs[3]])
    race = solo.race(masks, totals)
    np.testing.assert_array_equal(solo.race(masks, totals, placing=1.0), race)
    expected = 0.85 * plain.values(own, theirs, exact=True) + 0.15 * race
    np.testing.assert_array_equal(placed.values(own, theirs, exact=True), expected)
    planner = TurnPlanner(rules, 2, placed, exact=True)
    done = (np.array([0, 0]), np.array([0, 0]), np.array([0, 0]), np.array([150, 149]))
    full = (np.array([[0], [0]]), np.array([[0], [0]]), np.array([[0], [0]]), np.array([[149, 149]]).T)
    np.testing.assert_array_equal(planner.afterstate_values(done, full), [1.0, 0.5])


def test_a_placing_setting_is_checked():
    table = {**TINY_SEARCH, "reward": "win", "search": {**TINY_SEARCH["search"], "players": 3, "solo": "standard"}}
    for change, message in [
        ({"solo": None, "placing": 0.1}, "name it in search.solo"),
        ({"race": True, "placing": 1.0}, "search.placing must be a number in \\[0, 1\\)"),
        ({"race": True, "placing": "0.1"}, "search.placing must be a number"),
        ({"race": True, "placing": float("nan")}, "search.placing must be a number"),
        ({"race": True, "placing": True}, "search.placing must be a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            validate(from_dict({**table, "search": {**table["search"], **change}}))
    placed = validate(from_dict({**table, "search": {**table["search"], "race": True, "placing": 0.1}}))
    assert placed.search.placing == 0.1
    two = {**table, "search": {**table["search"], "players": 2, "placing": 0.15}}  # the race without reading it
    assert validate(from_dict(two)).search.placing == 0.15
