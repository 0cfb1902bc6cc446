"""Specification of the agents' ratings (``yacht_lab.measure.ratings``: a Bradley-Terry fit on the Elo scale, intervals
from a bootstrap over deals), ``evaluate.py --ratings``, and the head to head's tables played apart and put back
together
(``merge_lineups``; on Ray with ``--address``: ``yacht_lab.measure.head_to_head_ray``)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import math

import numpy as np
import pytest
from helpers import run_script

from yacht_agents import make_agent
from yacht_agents.greedy import GreedyAgent
from yacht_lab.measure.head_to_head import Tally, head_to_head, merge_lineups, pair_key
from yacht_lab.measure.head_to_head_report import format_report, render_json
from yacht_lab.measure.ratings import CENTER, ELO, bradley_terry, fit, fit_ratings

RATING_KEYS = {"rank", "rating", "rating_ci95", "games", "above_next", "above_next_ci95", "never_beat"}


@pytest.fixture(scope="module")
def league():
    """random, greedy, a copy of greedy and optimal, 200 deals: every pair 800 games."""
    agents = [make_agent("random", seed=0), make_agent("greedy"), GreedyAgent(name="greedy_2"), make_agent("optimal")]
    result = head_to_head(agents, 2, 200, seed=0)
    return result, fit_ratings(result)


def test_a_stronger_agent_rates_above_with_disjoint_intervals(league):
    result, ratings = league
    table = ratings.to_dict()["agents"]
    assert list(table) == ["optimal", "greedy", "greedy_2", "random"]  # rank order
    assert [row["rank"] for row in table.values()] == [1, 2, 2, 4]
    assert all(set(row) == RATING_KEYS and row["games"] == 2400 for row in table.values())
    optimal, greedy, random = table["optimal"], table["greedy"], table["random"]
    assert random["rating_ci95"][1] < greedy["rating_ci95"][0] and greedy["rating_ci95"][1] < optimal["rating_ci95"][0]
    for row in table.values():
        assert row["rating_ci95"][0] < row["rating"] < row["rating_ci95"][1]
    # Optimal wins about two games in three against greedy: some 120 Elo points.
    above, (lo, hi) = optimal["above_next"], optimal["above_next_ci95"]
    assert 80 < lo < above < hi < 200
    assert sum(row["rating"] for row in table.values()) == pytest.approx(4 * CENTER, abs=0.03)


def test_copies_of_one_deterministic_agent_rate_exactly_equal(league):
    """Two copies split every deal and score alike against every other agent on the same dice: equal ratings and
    intervals in every resample, and the interval of their difference is 0."""
    _, ratings = league
    table = ratings.to_dict()["agents"]
    assert table["greedy"]["rating"] == table["greedy_2"]["rating"]
    assert table["greedy"]["rating_ci95"] == table["greedy_2"]["rating_ci95"]
    difference, (lo, hi) = ratings.difference("greedy", "greedy_2")
    assert abs(difference) < 1e-9 and -1e-9 < lo <= 0 <= hi < 1e-9
    assert table["greedy"]["above_next"] == 0.0 and table["greedy"]["above_next_ci95"] == [0.0, 0.0]


def test_bradley_terry_recovers_the_strengths_that_made_the_scores():
    """Expected scores of known strengths (no prior) give those strengths back, in a batch too."""
    truth = np.array([[0.0, 0.4, -1.3, 2.0], [0.5, 0.5, 0.0, -1.0]])
    truth -= truth.mean(axis=1, keepdims=True)
    first, second = np.array(list(itertools.combinations(range(4), 2))).T
    games = np.array([100.0, 40.0, 7.0, 1000.0, 3.0, 50.0])
    score = games / (1 + np.exp(truth[:, second] - truth[:, first]))
    np.testing.assert_allclose(bradley_terry(first, second, score, games, 4), truth, atol=1e-9)
    np.testing.assert_allclose(bradley_terry(first, second, score[0], games, 4), truth[0], atol=1e-9)


def test_the_intervals_cover_the_truth_when_games_come_in_duplicates():
    """A simulated league of known strengths (Elo 0, +60 and +150) whose deals play every pair's game twice (as a
    deterministic agent replays a seat rotation): the 95% intervals of the differences cover the truth in 90-99%
    of 200 leagues, and the strongest agent is ranked first in nearly all. Resampling the games as if each were
    its own deal covers under 90% (the duplicates look like independent evidence)."""
    truth = np.array([0.0, 60.0, 150.0]) / ELO
    first, second = np.array([0, 0, 1]), np.array([1, 2, 2])
    p = 1 / (1 + np.exp(truth[second] - truth[first]))
    rng = np.random.default_rng(2024)
    covered, naive, first_place, leagues = np.zeros(2), np.zeros(2), 0, 200
    for league in range(leagues):
        games = np.repeat(rng.random((300, 2, 3)) < p, 2, axis=1)  # 2 independent games per deal and pair, twice
        by_deal = fit(["a", "b", "c"], first, second, 2 * games.sum(axis=1), 4, [2400] * 3, league, resamples=300)
        by_game = fit(["a", "b", "c"], first, second, 2 * games.reshape(1200, 3), 1, [2400] * 3, league, 300)
        for k, (x, y) in enumerate(((1, 0), (2, 1))):
            true = ELO * (truth[x] - truth[y])
            _, (lo, hi) = by_deal.difference("abc"[x], "abc"[y])
            covered[k] += lo <= true <= hi
            _, (lo, hi) = by_game.difference("abc"[x], "abc"[y])
            naive[k] += lo <= true <= hi
        first_place += by_deal.ranking()[0] == 2
    assert (0.90 * leagues <= covered).all() and (covered <= 0.99 * leagues).all(), covered
    assert (naive < 0.90 * leagues).all(), naive
    assert first_place >= 0.97 * leagues


def test_an_agent_that_never_won_is_finite_and_flagged():
    result = head_to_head([make_agent("random", seed=0), make_agent("optimal")], 2, 20, seed=0)
    assert result.pairs["random vs optimal"].wins_a == result.pairs["random vs optimal"].ties == 0
    ratings = fit_ratings(result)
    table = ratings.to_dict()["agents"]
    assert table["random"]["never_beat"] == ["optimal"] and table["optimal"]["never_beat"] == []
    gap = table["optimal"]["rating"] - table["random"]["rating"]
    # One virtual tie per pair: P(random ahead) = 0.5 / 81, the gap its Elo.
    assert gap == pytest.approx(ELO * math.log(80.5 / 0.5), abs=0.02)
    assert "random never beat optimal, not even through another agent" in format_report(result, ratings)


def test_a_table_of_three_is_rated_from_its_pairwise_results():
    agents = [make_agent(spec, seed=0) for spec in ("random", "greedy", "optimal")]
    result = head_to_head(agents, 3, 60, seed=0)
    assert result.deal_outcomes.shape == (60, 3) and int(result.deal_outcomes.max()) <= 18
    for k, pair in enumerate(result.pairs.values()):
        assert int(result.deal_outcomes[:, k].sum()) == 2 * pair.wins_a + pair.ties
    table = fit_ratings(result).to_dict()["agents"]
    assert list(table) == ["optimal", "greedy", "random"]
    assert all(row["games"] == 60 * 9 for row in table.values())


def test_the_same_head_to_head_gives_the_same_ratings_byte_for_byte(league):
    result, ratings = league
    again = fit_ratings(result)
    assert render_json(result, again) == render_json(result, ratings)
    report = json.loads(render_json(result, ratings))
    assert report.pop("ratings") == json.loads(json.dumps(ratings.to_dict()))
    assert json.dumps(report, indent=2) + "\n" == render_json(result).decode()  # the head to head's JSON unchanged


def test_fit_refuses_what_it_cannot_rate():
    with pytest.raises(ValueError, match="one outcome per pair"):
        fit(["a", "b"], [0], [1], np.zeros((0, 1)), 4, [0, 0])
    with pytest.raises(ValueError, match="connect"):
        fit(["a", "b", "c"], [0], [1], np.zeros((5, 1)), 4, [20, 20, 0])


# --------------------------------------------------------------------------------------------------
# Tables played apart: merge_lineups (and Ray)
# --------------------------------------------------------------------------------------------------
def test_pairs_played_apart_merge_into_the_round_robin_byte_for_byte():
    specs = ["greedy", "optimal", "win"]
    whole = head_to_head([make_agent(spec) for spec in specs], 2, 12, seed=5, batch_size=20)
    parts = [
        head_to_head([make_agent(specs[i]), make_agent(specs[j])], 2, 12, seed=5, batch_size=20, keep_deals=True)
        for i, j in itertools.combinations(range(3), 2)
    ]
    merged = merge_lineups(parts, specs)
    assert render_json(merged, fit_ratings(merged)) == render_json(whole, fit_ratings(whole))
    assert np.array_equal(merged.deal_outcomes, whole.deal_outcomes)
    with pytest.raises(ValueError, match="not the tables"):
        merge_lineups(parts[::-1], specs)


@pytest.fixture(scope="module")
def three_of_four():
    """greedy, optimal, a copy of optimal and win:3 at tables of three: the head to head of every three of them, and
    its four tables played apart (with each deal's sums), on the same seed."""
    agents = [make_agent(spec) for spec in ("greedy", "optimal", "optimal#2", "win:3")]
    whole = head_to_head(agents, 3, 8, seed=4, batch_size=27)
    parts = [
        head_to_head([agents[k] for k in lineup], 3, 8, seed=4, batch_size=27, keep_deals=True)
        for lineup in itertools.combinations(range(4), 3)
    ]
    return whole, parts


def over_tables(parts, key: str, which: str = "outcomes") -> np.ndarray:
    """Per deal, a pair's outcomes (or margins) summed over the tables played apart that hold it."""
    columns = [
        (part.deal_outcomes if which == "outcomes" else part.deal_sums["margins"])[:, list(part.pairs).index(key)]
        for part in parts
        if key in part.pairs
    ]
    return np.sum(columns, axis=0, dtype=np.int64)


def test_every_three_of_four_agents_sum_their_four_tables_deal_by_deal(three_of_four):
    whole, parts = three_of_four
    assert whole.num_tables == 4 and whole.tables_per_deal == 36 and whole.pair_games_per_deal == 2 * 9
    assert list(whole.pairs) == [pair_key(a, b) for a, b in itertools.combinations(whole.names, 2)]
    assert whole.deal_outcomes.dtype == np.uint8
    for k, (key, pair) in enumerate(whole.pairs.items()):
        held = [part for part in parts if key in part.pairs]  # the two tables holding both
        assert len(held) == 2
        for count in ("games", "wins_a", "wins_b", "ties"):
            assert getattr(pair, count) == sum(getattr(part.pairs[key], count) for part in held), (key, count)
        assert pair.games == 8 * 18
        outcomes = over_tables(parts, key)
        assert np.array_equal(whole.deal_outcomes[:, k], outcomes)
        for tally, per_deal in ((pair.outcome, outcomes), (pair.margin, over_tables(parts, key, "margins"))):
            expected = Tally()
            expected.add(per_deal)  # one observation per deal, its tables summed
            assert (tally.n, tally.total, tally.total_sq) == (expected.n, expected.total, expected.total_sq)
        assert pair.outcome.n == 8 and pair.outcome.total > 0
    for name in whole.names:  # every agent sits at three of the four tables
        assert whole.games[name] == sum(part.games.get(name, 0) for part in parts) == 8 * 27
        scores = sum(part.deal_sums["scores"][:, part.names.index(name)] for part in parts if name in part.names)
        assert whole.scores[name].total == int(scores.sum())
        shares = sum(part.deal_sums["shares"][:, part.names.index(name)] for part in parts if name in part.names)
        assert whole.shares[name].total == int(shares.sum())
    report = whole.to_dict()
    assert report["head_to_head"]["greedy vs optimal"]["games"] == 144
    assert all(stats["games"] == 216 for stats in report["agents"].values())


def test_every_three_of_four_are_rated_from_their_summed_tables(three_of_four):
    """The fit reads each pair's outcomes summed over its two tables, of 2 * 9 games a deal; the tables played apart
    merge into the same head to head and ratings, byte for byte."""
    whole, parts = three_of_four
    names = whole.names
    first, second = zip(*itertools.combinations(range(4), 2), strict=True)
    summed = np.stack([over_tables(parts, key) for key in whole.pairs], axis=1)
    expected = fit(names, first, second, summed, 18, [216] * 4, seed=4)
    ratings = fit_ratings(whole)
    assert np.array_equal(ratings.rating, expected.rating) and np.array_equal(ratings.samples, expected.samples)
    assert ratings.games == [216] * 4
    merged = merge_lineups(parts, names)
    assert render_json(merged, fit_ratings(merged)) == render_json(whole, ratings)
    assert np.array_equal(merged.deal_outcomes, whole.deal_outcomes) and merged.deal_outcomes.dtype == np.uint8
    with pytest.raises(ValueError, match="not the tables"):
        merge_lineups(parts[:3], names)


def test_copies_at_tables_of_three_score_alike_and_rate_equal_within_their_interval(three_of_four):
    """A copy of a deterministic agent plays the same games at the tables where the other is not and scores alike
    where both sit; but at a table of both and a third agent their results (against each other and the third) are
    equal only in expectation (the cyclic rotations), so their ratings are equal within the interval of their
    difference, not exactly as at two players."""
    whole, _ = three_of_four
    agents = whole.to_dict()["agents"]
    assert agents["optimal"]["mean_score"] == agents["optimal#2"]["mean_score"]
    copies = whole.to_dict()["head_to_head"]["optimal vs optimal#2"]
    assert copies["mean_margin_a_ci95"] == [0.0, 0.0]  # each holds every stream equally often
    difference, (lo, hi) = fit_ratings(whole).difference("optimal", "optimal#2")
    assert lo <= 0 <= hi and lo < difference < hi


@pytest.mark.slow
def test_the_round_robin_on_ray_is_the_local_one():
    ray = pytest.importorskip("ray")
    from yacht_lab.measure.head_to_head_ray import head_to_head_on_ray

    specs = ["greedy", "optimal", "win"]
    local = head_to_head([make_agent(spec) for spec in specs], 2, 16, seed=3, batch_size=40)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = head_to_head_on_ray(specs, 2, 16, seed=3, batch_size=40)
        with pytest.raises(ValueError, match="games must be an int >= 1"):
            head_to_head_on_ray(["greedy", "optimal"], 2, 0)
    finally:
        ray.shutdown()
    assert render_json(on_ray, fit_ratings(on_ray)) == render_json(local, fit_ratings(local))


@pytest.mark.slow
def test_tables_of_three_on_ray_are_the_local_ones():
    ray = pytest.importorskip("ray")
    from yacht_lab.measure.head_to_head_ray import head_to_head_on_ray

    specs = ["greedy", "optimal", "greedy#2", "optimal#2"]
    local = head_to_head([make_agent(spec) for spec in specs], 3, 6, seed=1, batch_size=27)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        on_ray = head_to_head_on_ray(specs, 3, 6, seed=1, batch_size=27)
        with pytest.raises(ValueError, match="a 3-player head to head needs at least 3 agents, got 2"):
            head_to_head_on_ray(["greedy", "optimal"], 3, 6)
    finally:
        ray.shutdown()
    assert on_ray.num_tables == 4
    assert render_json(on_ray, fit_ratings(on_ray)) == render_json(local, fit_ratings(local))


def test_ray_is_not_started_behind_the_callers_back():
    pytest.importorskip("ray")
    from yacht_lab.measure.head_to_head_ray import head_to_head_on_ray

    with pytest.raises(ValueError, match="no Ray to run on"):
        head_to_head_on_ray(["greedy", "optimal"], 2, 5)


# --------------------------------------------------------------------------------------------------
# evaluate.py --ratings, --address
# --------------------------------------------------------------------------------------------------


def test_script_prints_the_ratings_and_writes_them_to_the_json_byte_for_byte(tmp_path):
    outputs = []
    for name in ("a.json", "b.json"):
        path = str(tmp_path / name)
        done = run_script(
            "evaluate.py",
            "--no-progress",
            "--players",
            "2",
            "--agents",
            "greedy",
            "optimal",
            "--games",
            "30",
            "--ratings",
            "--json",
            path,
        )
        assert done.returncode == 0, done.stderr
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    assert "ratings (Bradley-Terry fit" in done.stdout and "above the next [95% CI]" in done.stdout
    ratings = json.loads(outputs[0])["ratings"]
    assert list(ratings["agents"]) == ["optimal", "greedy"] and ratings["resamples"] == 1000


def test_script_rates_every_three_of_four_agents_at_tables_of_three(tmp_path):
    path = tmp_path / "tables.json"
    done = run_script(
        "evaluate.py",
        "--no-progress",
        *("--players", "3", "--agents", "random", "greedy", "optimal", "win:3", "--games", "4", "--ratings"),
        *("--json", str(path)),
    )
    assert done.returncode == 0, done.stderr
    assert "at each of its 4 tables (every 3 of the 4 agents), 144 games in all" in done.stdout
    assert "ratings (Bradley-Terry fit" in done.stdout
    report = json.loads(path.read_bytes())
    assert (report["players"], report["deals"], report["games_per_deal"]) == (3, 4, 9)
    names = ["random", "greedy", "optimal", "win:3"]
    assert list(report["head_to_head"]) == [f"{a} vs {b}" for a, b in itertools.combinations(names, 2)]
    for pair in report["head_to_head"].values():  # each pair at the two tables holding both
        assert pair["games"] == 4 * 2 * 9 == pair["wins_a"] + pair["wins_b"] + pair["ties"]
    assert list(report["agents"]) == names and all(stats["games"] == 4 * 3 * 9 for stats in report["agents"].values())
    # Each table's win shares sum to 1; an agent sits at 3 of the 4 tables: its shares, averaged, sum to 4 / 3.
    assert sum(stats["win_share"] for stats in report["agents"].values()) == pytest.approx(4 / 3, abs=1e-5)
    ratings = report["ratings"]
    assert set(ratings["agents"]) == set(names) and ratings["resamples"] == 1000
    assert all(set(row) == RATING_KEYS and row["games"] == 108 for row in ratings["agents"].values())
    assert list(ratings["agents"])[-1] == "random"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ratings"], "argument --ratings: ratings come from a head to head"),
        (["--address", "auto"], "argument --address: Ray plays a head to head's tables"),
        (["--players", "2", "--address", "nohost"], "--address must be 'auto' or HOST:PORT"),
        (["--players", "2", "--address", "127.0.0.1:1"], "cannot reach Ray at 127.0.0.1:1"),
    ],
)
def test_script_bad_ratings_or_address_is_one_error_line_exit_2(tmp_path, args, message):
    if "--players" in args and importlib.util.find_spec("ray") is None:
        pytest.skip("needs Ray")
    done = run_script(
        "evaluate.py",
        "--no-progress",
        "--agents",
        "greedy",
        "optimal",
        "--games",
        "5",
        *args,
        "--json",
        str(tmp_path / "out.json"),
    )
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate.py: error: ") and message in lines[0], done.stderr
    assert list(tmp_path.iterdir()) == []


def test_script_without_ray_says_which_extra_brings_it(monkeypatch, capsys):
    import evaluate

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    assert evaluate.main(["--players", "2", "--agents", "greedy", "optimal", "--address", "auto"]) == 2
    assert capsys.readouterr().err == (
        "evaluate.py: error: --address needs Ray, in the sweep extra (pip install 'yacht-rl[sweep]')\n"
    )
