"""Score distributions of the solver's policy (yacht_env/distributions.py): exact, consistent, cached."""

from __future__ import annotations

import math

import numpy as np
import pytest

from yacht_agents.optimal import OptimalAgent
from yacht_env import distributions as Dm
from yacht_env import rules as R
from yacht_env.solver import cache_path as solver_cache_path
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import play_games

YACHT = 1 << R.CATEGORIES.index("yacht")
CHOICE = 1 << R.CATEGORIES.index("choice")
# P(five of a kind within three rolls, keeping the most common face): 2,783,176 / 6^10.
P_YACHT_IN_A_TURN = 2_783_176 / 6**10


@pytest.fixture(scope="module")
def dist() -> Dm.ScoreDistributions:
    return Dm.score_distributions("standard")


def test_every_distribution_is_a_probability_distribution(dist):
    assert dist.start.shape == (4096, 298) and dist.width == Dm.max_total() + 1 == 298
    assert (dist.start >= 0).all()
    assert np.abs(dist.start.sum(axis=1) - 1).max() < 1e-9
    assert dist.start[0, 0] == 1.0  # nothing open: no more points


def test_means_are_the_solvers_start_values(dist):
    solution = solve("standard")
    assert np.abs(dist.mean() - solution.start_values).max() < 1e-6
    assert round(float(dist.mean()[4095]), 2) == 166.96


def test_support_ends_at_the_most_the_open_categories_can_score(dist):
    most = R.OPEN_BITS @ R.score_table().max(axis=0)
    last = (dist.width - 1) - np.argmax(dist.start[:, ::-1] > 0, axis=1)
    assert (last <= most).all()
    assert last[4095] == 297  # a perfect game has a positive probability under the solver's policy too


def test_yacht_only_is_the_chance_of_five_of_a_kind(dist):
    row = dist.start[YACHT]
    assert row[50] == pytest.approx(P_YACHT_IN_A_TURN, abs=1e-12)
    assert row[0] == pytest.approx(1 - P_YACHT_IN_A_TURN, abs=1e-12)
    assert np.count_nonzero(row) == 2


def test_policy_is_the_solvers_best_action(dist):
    solution = solve("standard")
    rng = np.random.default_rng(0)
    roll, t, mask = rng.integers(0, 252, 20_000), rng.integers(0, 3, 20_000), rng.integers(1, 4096, 20_000)
    assert (dist.policy[t, mask, roll] == solution.best_action(roll, t, mask)).all()


def test_action_distributions_have_the_solvers_action_values_as_means(dist):
    solution = solve("standard")
    rng = np.random.default_rng(1)
    roll, t, mask = rng.integers(0, 252, 24), rng.integers(0, 3, 24), rng.integers(1, 4096, 24)
    mask[:3] = [4095, YACHT | CHOICE, YACHT]
    out = dist.action_distributions(roll, t, mask)
    q = solution.q_values(roll, t, mask)
    legal = np.isfinite(q)
    assert out.shape == (24, 44, 298)
    assert np.abs(out.sum(axis=-1)[legal] - 1).max() < 1e-9
    assert (out[~legal] == 0).all()
    assert np.abs((out @ np.arange(298))[legal] - q[legal]).max() < 1e-6


def test_turn_tables_mix_back_to_the_start_distribution(dist):
    for mask in (4095, YACHT | CHOICE, 0b101010101010):
        turn, keep = dist.turn_tables(mask)
        assert np.abs(R.TRANSITION[0] @ turn[2] - dist.start[mask]).max() < 1e-12
        assert keep.shape == (2, 210, 298) and np.abs(keep.sum(axis=-1) - 1).max() < 1e-9


def _chi_square_p_value(statistic: float, dof: int) -> float:
    """Upper tail of chi-square (Wilson-Hilferty: accurate to ~1e-3 relative around these dof)."""
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.mark.slow  # a cross-check the README's command leaves to -m slow
def test_simulated_optimal_games_follow_the_distribution(dist):
    games = 100_000
    solution = solve("standard")
    scores = play_games(OptimalAgent(), games, seed=7, solution=solution).scores
    observed = np.bincount(scores, minlength=dist.width).astype(float)
    expected = games * dist.start[4095]
    assert observed[expected == 0].sum() == 0  # no score the distribution calls impossible
    # Merge neighbouring scores until every bin expects at least 20 games (sparse tails pooled).
    edges, total = [], 0.0
    for score, e in enumerate(expected):
        total += e
        if total >= 20:
            edges.append(score + 1)
            total = 0.0
    edges[-1] = dist.width
    bins_observed = np.add.reduceat(observed, [0, *edges[:-1]])
    bins_expected = np.add.reduceat(expected, [0, *edges[:-1]])
    statistic = float(((bins_observed - bins_expected) ** 2 / bins_expected).sum())
    dof = len(bins_expected) - 1
    assert dof > 100
    assert _chi_square_p_value(statistic, dof) > 1e-3
    # The same test rejects a distribution only a little off: the mean moved by one point.
    shifted = np.add.reduceat(np.roll(expected, 1), [0, *edges[:-1]])
    assert _chi_square_p_value(float(((bins_observed - shifted) ** 2 / shifted).sum()), dof) < 1e-6


def test_the_solvers_policy_as_a_table_gives_the_solvers_distributions(dist):
    again = Dm.policy_distributions("standard", dist.policy.astype(np.int64))  # any int dtype
    assert again.solution is None and again.source == "policy" and again.rules == dist.rules
    assert np.array_equal(again.start, dist.start) and np.array_equal(again.policy, dist.policy)


def test_another_policys_distribution_is_what_its_games_score():
    """The greedy agent's whole policy, read as a table and evaluated exactly, against 20,000 of its games."""
    from yacht_agents import make_agent
    from yacht_agents.win import policy_table

    greedy = make_agent("greedy")
    table = policy_table(greedy)
    rng = np.random.default_rng(3)
    roll, t, mask = rng.integers(0, 252, 5_000), rng.integers(0, 3, 5_000), rng.integers(1, 4096, 5_000)
    legal = R.legal_action_mask(roll, t, mask)
    assert (table[t, mask, roll] == greedy.act(greedy.encoder.flat(roll, t, mask), legal)).all()
    greedy_dist = Dm.policy_distributions("standard", table)
    assert np.abs(greedy_dist.start.sum(axis=1) - 1).max() < 1e-9 and (greedy_dist.start >= 0).all()
    games = 20_000
    scores = play_games(greedy, games, seed=11, solution=solve("standard")).scores
    row = greedy_dist.start[4095]
    mean = float(row @ np.arange(len(row)))
    assert abs(scores.mean() - mean) < 4 * scores.std() / math.sqrt(games)
    assert mean < 166.96 - 10  # greedy scores far less than the solver: not the solver's distribution
    # Kolmogorov-Smirnov at the 0.1% level (discrete: conservative), and the same test rejects a shift of 2 points.
    empirical = np.cumsum(np.bincount(scores, minlength=len(row))) / games
    assert np.abs(empirical - np.cumsum(row)).max() < 1.95 / math.sqrt(games)
    assert np.abs(empirical - np.cumsum(np.roll(row, 2))).max() > 1.95 / math.sqrt(games)


def test_a_bad_policy_table_is_one_error(dist):
    with pytest.raises(ValueError, match=r"shape \(3, 4096, 252\)"):
        Dm.policy_distributions("standard", dist.policy[:, :100])
    with pytest.raises(ValueError, match="an int array"):
        Dm.policy_distributions("standard", dist.policy.astype(float))
    bad = dist.policy.copy()
    bad[0, 1, 5] = R.PICK_OFFSET + 1  # with only category 0 open, category 1 is filled
    with pytest.raises(ValueError, match="action 33 is illegal at rolls_left=0, open_mask=1, roll=5 \\(1 illegal"):
        Dm.policy_distributions("standard", bad)
    bad = dist.policy.astype(np.int64)
    bad[2, 4095, 0] = 44  # no such action
    with pytest.raises(ValueError, match="action 44 is illegal"):
        Dm.policy_distributions("standard", bad)
    with pytest.raises(ValueError, match="exact score distributions cover rules without bonuses"):
        Dm.policy_distributions("yahtzee", dist.policy)


def test_disk_cache_round_trip_and_damage(tmp_path, dist):
    Dm.clear_memo()
    try:
        first = Dm.score_distributions("standard", cache_dir=tmp_path)
        path = Dm.cache_path("standard", tmp_path)
        assert path.is_file() and path.parent == tmp_path and "-dist-" in path.name
        assert first.source == "computed"
        Dm.clear_memo()
        again = Dm.score_distributions("standard", cache_dir=tmp_path)
        assert again.source == "disk"
        assert np.array_equal(again.start, dist.start) and np.array_equal(again.policy, dist.policy)
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF  # one damaged byte: fails the checksum (or the zip), never trusted
        path.write_bytes(bytes(data))
        Dm.clear_memo()
        rebuilt = Dm.score_distributions("standard", cache_dir=tmp_path)
        assert rebuilt.source == "computed" and np.array_equal(rebuilt.start, dist.start)
        assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no temporary file left
    finally:
        Dm.clear_memo()


def test_cache_key_depends_on_rules():
    assert Dm.cache_key("standard") != Dm.cache_key("classic")
    assert Dm.cache_path("standard").parent == solver_cache_path("standard").parent


def test_other_presets_are_consistent():
    dist = Dm.score_distributions("classic", cache=False)
    solution = solve("classic")
    assert np.abs(dist.start.sum(axis=1) - 1).max() < 1e-9
    assert np.abs(dist.mean() - solution.start_values).max() < 1e-6
