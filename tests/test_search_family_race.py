"""The search agent's race under the family's rules (an upper bonus, a Yahtzee bonus, a joker): its solo network's own
play evaluated by the family's recurrence, every seat's chance of finishing first under it, and a table network that
plays for its placing with it.
"""

from __future__ import annotations

import functools
import itertools
import json

import numpy as np
import pytest
from test_family_distributions import LEVELS, TINY, recursion_over_the_turn
from test_search import network

from yacht_agents.search import TurnPlanner, ValueNetwork, load_value, save_value
from yacht_agents.search_turn import decide, family_policy
from yacht_agents.win_family import FamilyModel
from yacht_env import distributions as Dm
from yacht_env import family_recurrence as FR
from yacht_env import rules as R
from yacht_env.family_states import reachable_states, state_ids
from yacht_lab.training.config import from_dict, validate

pytest.importorskip("torch")


@functools.cache
def solo(rules: R.Rules) -> ValueNetwork:
    """A small random solo network of ``rules`` (a poor player: its own policy, not the solver's)."""
    return network(rules, 1, (10,), seed=3)


@functools.cache
def agent_act(rules: R.Rules):
    """The search agent's action, one turn start at a time: its exact plan, then :func:`decide` over the env's mask."""
    planner = TurnPlanner(rules, 1, solo(rules), exact=True)

    def act(rolls, t, mask, upper, armed):
        plan = planner.plan(tuple(np.array([x]) for x in (mask, upper, armed, 0)))
        left = np.full(len(rolls), t)
        legal = R.legal_action_mask(rolls, left, np.full(len(rolls), mask), True, rules.num_categories)
        return decide(plan, np.zeros(len(rolls), dtype=np.intp), rolls, left, legal)

    return act


def states(rules: R.Rules) -> np.ndarray:
    return np.flatnonzero(state_ids(rules).ravel() >= 0)


@pytest.fixture(scope="module", params=TINY, ids=[rules.name for rules in TINY])
def own(request):
    """The rules, the distributions of a small solo network's own play, and the recursion over its turns."""
    rules = request.param
    dist = FR.build_in_memory(rules, family_policy(solo(rules), states(rules)))
    return rules, dist, recursion_over_the_turn(rules, LEVELS[rules.name], agent_act(rules))


def test_the_policy_is_the_agents_own_play_at_every_turn_start(own):
    rules, dist, _ = own
    mask, upper, armed = np.nonzero(reachable_states(rules))
    act = agent_act(rules)
    for m, u, a in zip(mask, upper, armed, strict=True):
        if m:
            row = dist.actions(dist.rows(m, u, a))
            for t in range(R.ROLLS_PER_TURN):
                np.testing.assert_array_equal(row[t], act(np.arange(R.NUM_ROLLS), t, m, u, a))


def test_every_row_of_the_agents_play_equals_the_recursion_over_its_turns(own):
    rules, dist, expected = own
    solver = Dm.score_distributions(rules, cache=False)
    differs = 0
    for (mask, upper, armed), row in expected.items():
        stored = dist.cdf_at(dist.rows(mask, upper, armed), np.arange(dist.width))
        assert np.abs(stored - np.minimum(np.cumsum(row), 1.0)).max() <= 2.0**-24, (mask, upper, armed)
        differs += np.abs(stored - solver.cdf_at(solver.rows(mask, upper, armed), np.arange(dist.width))).max() > 1e-3
    assert len(expected) > 30 and differs > 0  # its own play, not the solver's
    assert dist.solution is None


def test_a_family_policy_is_a_solo_networks_under_bonuses():
    with pytest.raises(ValueError, match="solo network's, under rules with bonuses"):
        family_policy(network("standard", 1, (4,)), np.arange(3))
    with pytest.raises(ValueError, match="solo network's, under rules with bonuses"):
        family_policy(network("yahtzee", 2, (4,)), np.arange(3))


def brute_chances(dist, seats: list[tuple[int, int, int, int]]) -> tuple[float, float]:
    """The first seat's share of the win (ties split) and the fraction of the opponents it finishes ahead of (ties
    half), by summing over every combination of final totals."""
    pmfs = [dist.distribution(m, u, a) for m, u, a, _ in seats]
    supports = [np.flatnonzero(p) for p in pmfs]
    share = ahead = 0.0
    for points in itertools.product(*supports):
        finals = [s[3] + x for s, x in zip(seats, points, strict=True)]
        chance = np.prod([p[x] for p, x in zip(pmfs, points, strict=True)])
        best = max(finals)
        share += chance * (finals[0] == best) / finals.count(best)
        ahead += chance * np.mean([(finals[0] > f) + 0.5 * (finals[0] == f) for f in finals[1:]])
    return share, ahead


@pytest.mark.parametrize("players", [2, 3])
def test_the_start_chances_are_the_race_by_brute_force(own, players):
    rules, dist, _ = own
    model = FamilyModel(dist)
    rng = np.random.default_rng(players)
    popcount = R.open_bits(rules.num_categories).sum(axis=1)
    few = np.argwhere(reachable_states(rules) & (popcount <= 2)[:, None, None])  # supports small enough to sum over
    tables = []
    for _ in range(10):
        seats = [(*(int(x) for x in few[rng.integers(len(few))]), int(rng.integers(0, 60))) for _ in range(players)]
        tables.append(seats)
    tables.append([(*(int(x) for x in few[-1]), 30)] * players)  # even: the same sheet everywhere
    rows = np.array([[dist.rows(m, u, a) for m, u, a, _ in seats] for seats in tables])
    totals = np.array([[s[3] for s in seats] for seats in tables])
    brute = np.array([brute_chances(dist, seats) for seats in tables])
    np.testing.assert_allclose(model.start_chances(rows, totals), brute[:, 0], atol=1e-6)  # float32 rows
    np.testing.assert_allclose(model.start_chances(rows, totals, placing=1.0), brute[:, 1], atol=1e-6)
    mixed = model.start_chances(rows, totals, placing=0.3)
    np.testing.assert_allclose(mixed, 0.7 * brute[:, 0] + 0.3 * brute[:, 1], atol=1e-6)
    assert abs(model.start_chances(rows, totals)[-1] - 1 / players) < 1e-6
    assert 0.05 < brute[:, 0].std()  # tables that differ


def test_a_solo_networks_family_distributions_are_cached_by_its_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    rules = TINY[0]
    net = network(rules, 1, (10,), seed=3)
    built = net.distributions()
    assert isinstance(built, FR.FamilyDistributions) and built.source == "computed"
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 3 and all("-search-dist-" in name for name in files)
    assert network(rules, 1, (10,), seed=3).distributions() is built  # the same weights: made once in a process
    from yacht_agents import search_value

    search_value._DISTRIBUTIONS.clear()  # a new process: the files
    again = network(rules, 1, (10,), seed=3)
    assert again.distributions().source == "disk"
    np.testing.assert_array_equal(np.asarray(again.distributions().cdf), np.asarray(built.cdf))
    expected = FR.build_in_memory(rules, family_policy(solo(rules), states(rules)))
    np.testing.assert_array_equal(np.asarray(built.cdf), expected.cdf)
    network(rules, 1, (10,), seed=4).distributions()  # other weights: files of their own
    assert len(list(tmp_path.iterdir())) == 6


def two_seat_tables(alone: ValueNetwork, n: int, seed: int):
    """``n`` two-seat tables of reachable sheets and random totals: ``(own, opponents)`` as :func:`features` takes them,
    and the race of ``alone``'s play at them (:meth:`ValueNetwork.race`)."""
    reach = np.argwhere(reachable_states(alone.rules))
    rng = np.random.default_rng(seed)
    mine, theirs = reach[rng.integers(len(reach), size=n)], reach[rng.integers(len(reach), size=n)]
    totals = rng.integers(0, 80, (n, 2))
    own = (*mine.T, totals[:, 0])
    opponents = tuple(np.column_stack([x]) for x in (*theirs.T, totals[:, 1]))
    seats = [np.column_stack([mine[:, i], theirs[:, i]]) for i in range(3)]
    return own, opponents, alone.race(seats[0], totals, uppers=seats[1], armeds=seats[2])


def test_a_family_placing_network_mixes_its_value_with_the_race(tmp_path, monkeypatch):
    """Two seats of the family: ``(1 - w) V + w`` race over the solo network's own play, a finished table its
    result; a Yahtzee table network with a placing saves, loads and is configured."""
    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    rules = TINY[0]
    alone = network(rules, 1, (10,), seed=3)
    plain = network(rules, 2, (8,), seed=5, version=2, solo=alone)
    placed = ValueNetwork(plain.spec._replace(placing=0.4), plain.layers, alone)
    own, opponents, race = two_seat_tables(alone, 40, seed=9)
    dist = alone.distributions()
    rows = np.column_stack([dist.rows(*own[:3]), dist.rows(*(x[:, 0] for x in opponents[:3]))])
    totals = np.column_stack([own[3], opponents[3][:, 0]])
    np.testing.assert_array_equal(race, FamilyModel(dist).start_chances(rows, totals))
    assert 0.2 < race.std()
    expected = 0.6 * plain.values(own, opponents, exact=True) + 0.4 * race
    np.testing.assert_array_equal(placed.values(own, opponents, exact=True), expected)
    planner = TurnPlanner(rules, 2, placed, exact=True)
    done = tuple(np.array([0, 0]) for _ in range(3)) + (np.array([50, 49]),)
    full = tuple(np.array([[0], [0]]) for _ in range(3)) + (np.array([[49], [49]]),)
    np.testing.assert_array_equal(planner.afterstate_values(done, full), [1.0, 0.5])
    with pytest.raises(ValueError, match="no game reaches"):
        alone.race(np.array([[15, 15]]), np.array([[0, 0]]), uppers=np.array([[4, 0]]), armeds=np.array([[0, 0]]))


def test_a_yahtzee_placing_model_and_config_are_accepted(tmp_path):
    alone = network("yahtzee", 1, (6,), seed=1)
    plain = network("yahtzee", 2, (6,), seed=2, version=2, solo=alone)
    path = save_value(tmp_path / "placed.npz", ValueNetwork(plain.spec._replace(placing=0.5), plain.layers, alone))
    assert json.loads(path.with_suffix(".json").read_text())["placing"] == 0.5
    assert load_value(path).spec.placing == 0.5
    from test_search import TINY_SEARCH

    table = {**TINY_SEARCH, "reward": "win", "rules": "yahtzee"}
    table["search"] = {**TINY_SEARCH["search"], "players": 2, "solo": "yahtzee", "placing": 0.5}
    assert validate(from_dict(table)).search.placing == 0.5


def test_a_family_race_network_starts_as_the_race(tmp_path, monkeypatch):
    """Features 3 under the family's rules: the input's last columns are the race over the solo network's own play
    (its chance and logit), and a network whose last layer is zero values an afterstate at the race itself."""
    from yacht_agents.search import RACE_CLIP, layer_shapes
    from yacht_agents.search_value import ValueSpec

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    rules = TINY[0]
    alone = network(rules, 1, (10,), seed=3)
    spec = ValueSpec(rules, 2, (8,), 3, alone.spec.net_arch)
    rng = np.random.default_rng(2)
    layers = [(rng.normal(0, 0.3, (a, b)).astype(np.float32), np.zeros(b, np.float32)) for a, b in layer_shapes(spec)]
    layers[-1] = (np.zeros_like(layers[-1][0]), np.zeros_like(layers[-1][1]))
    net = ValueNetwork(spec, layers, alone)
    own, opponents, race = two_seat_tables(alone, 30, seed=2)
    x = net.features(own, opponents)
    chance = np.clip(race, RACE_CLIP, 1 - RACE_CLIP)
    np.testing.assert_allclose(x[:, -2], chance, rtol=1e-6)
    np.testing.assert_allclose(x[:, -1], np.log(chance / (1 - chance)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(net.values(own, opponents), chance, rtol=1e-5)
    assert 0.2 < race.std()
