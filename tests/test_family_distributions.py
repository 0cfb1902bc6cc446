"""Score distributions of the solver's policy under the family's rules (yacht_env/family_recurrence.py over
yacht_env/family_distributions.py's policy): equal to
a recursion over the turn with whole distributions, the solver's own policy, cached as checked files."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from yacht_env import distributions as Dm
from yacht_env import family_distributions as FD
from yacht_env import family_recurrence as FR
from yacht_env import rules as R
from yacht_env.family_states import reachable_states
from yacht_env.solver import solve

UPPER_SIX = ("ones", "twos", "threes", "fours", "fives", "sixes")
TINY = [
    # an upper bonus and a Yahtzee bonus, no joker: every state
    R.Rules(
        "tiny_bonus",
        categories=("ones", "twos", "yahtzee", "chance"),
        upper_bonus=20,
        upper_bonus_threshold=5,
        yahtzee_bonus=100,
    ),
    # Yatzy's boxes with an upper bonus only
    R.Rules("tiny_yatzy", categories=("ones", "twos", "one_pair", "yatzy"), upper_bonus=10, upper_bonus_threshold=6),
    # the free joker with both bonuses: the states with up to three boxes open (where the joker is in play)
    R.Rules(
        "tiny_free",
        categories=(*UPPER_SIX, "yahtzee"),
        upper_bonus=35,
        upper_bonus_threshold=12,
        yahtzee_bonus=100,
        joker="free",
    ),
    # the forced joker's placement and the Yahtzee bonus, no upper bonus
    R.Rules(
        "tiny_forced",
        categories=(*UPPER_SIX, "full_house", "large_straight", "yahtzee"),
        full_house=25,
        yahtzee_bonus=100,
        joker="forced",
    ),
]
LEVELS = {"tiny_bonus": 4, "tiny_yatzy": 4, "tiny_free": 3, "tiny_forced": 2}


def turn_distributions(rules: R.Rules, dist: dict, mask: int, upper: int, armed: int, act=None) -> list[np.ndarray]:
    """``[V_0, V_1, V_2]``, ``(252, width)`` each: the distribution of the points to come from each roll with ``t``
    re-rolls left in the turn from ``(mask, upper, armed)``, under a policy, by recursion over the turn with whole
    distributions: at each roll the policy's action (``act(rolls, t, mask, upper, armed)``; by default the solver's
    ``Solution.best_action``); a pick is its points (``pick_outcome``, bonuses and jokers included) plus the
    distribution of the turn start it leaves (``dist``); a keep mixes the rolls it can lead to (``TRANSITION``) with
    one re-roll fewer."""
    act = act or solve(rules).best_action
    width = R.max_total(rules) + 1
    rolls = np.arange(R.NUM_ROLLS)
    turn = []
    for t in range(R.ROLLS_PER_TURN):
        best = np.asarray(act(rolls, t, mask, upper, armed))
        here = np.zeros((R.NUM_ROLLS, width))
        if turn:  # a keep: the mixture of the rolls it can lead to, one re-roll fewer
            keeps = np.flatnonzero(best < R.PICK_OFFSET)
            kept, which = np.unique(R.KEEP[keeps, best[keeps]], return_inverse=True)
            row, roll = np.nonzero(R.TRANSITION[kept])  # the rows in order: a kept multiset's rolls together
            terms = R.TRANSITION[kept[row], roll][:, None] * turn[-1][roll]
            starts = np.flatnonzero(np.diff(row, prepend=-1))
            here[keeps] = np.add.reduceat(terms, starts, axis=0)[which.reshape(-1)]
        picks = np.flatnonzero(best >= R.PICK_OFFSET)
        k = best[picks] - R.PICK_OFFSET
        n = len(picks)
        points, _, next_upper, next_armed = R.pick_outcome(
            rules, picks, k, np.full(n, mask), np.full(n, upper), np.full(n, armed)
        )
        outcomes = np.stack([k, points, next_upper, next_armed], axis=1)
        for outcome in np.unique(outcomes, axis=0):  # the rolls of one pick and outcome share their distribution
            box, got, up, arm = (int(x) for x in outcome)
            here[picks[(outcomes == outcome).all(axis=1)], got:] = dist[(mask & ~(1 << box), up, arm)][: width - got]
        turn.append(here)
    return turn


@functools.cache
def recursion_over_the_turn(rules: R.Rules, levels: int, act=None) -> dict[tuple[int, int, int], np.ndarray]:
    """Every reachable turn start with at most ``levels`` boxes open -> the distribution of the points to come under
    a policy (:func:`turn_distributions`' ``act``: by default the solver's; a turn start mixes the first roll's). Kept
    for the session: ``tests/test_family_win.py`` reads the same rules' (the dict is never written to).
    """
    width = R.max_total(rules) + 1
    reachable = reachable_states(rules)
    popcount = R.open_bits(rules.num_categories).sum(axis=1)
    dist = {(0, int(u), int(a)): np.eye(width)[0] for u, a in zip(*np.nonzero(reachable[0]), strict=True)}
    for level in range(1, levels + 1):
        for mask, upper, armed in zip(*np.nonzero(reachable & (popcount == level)[:, None, None]), strict=True):
            state = (int(mask), int(upper), int(armed))
            dist[state] = R.TRANSITION[0] @ turn_distributions(rules, dist, *state, act)[-1]
    return dist


@pytest.fixture(scope="module", params=TINY, ids=[rules.name for rules in TINY])
def tiny(request):
    rules = request.param
    return rules, Dm.score_distributions(rules, cache=False), recursion_over_the_turn(rules, LEVELS[rules.name])


def test_every_stored_row_equals_the_recursion_over_the_turn(tiny):
    rules, dist, expected = tiny
    assert isinstance(dist, FR.FamilyDistributions) and dist.source == "computed"
    for (mask, upper, armed), row in expected.items():
        stored = dist.cdf_at(dist.rows(mask, upper, armed), np.arange(dist.width))
        exact = np.minimum(np.cumsum(row), 1.0)
        assert np.abs(stored - exact).max() <= 2.0**-24, (mask, upper, armed)  # float32, trimmed at 2^-25
    assert len(expected) > 30


def test_means_are_the_solvers_start_values(tiny):
    rules, dist, _ = tiny
    solution = solve(rules, cache=False)
    reached = reachable_states(rules)
    mean = dist.mean()
    assert np.array_equal(np.isnan(mean), ~reached)
    assert np.abs(mean[reached] - solution.start_values[reached]).max() < 1e-5


def test_the_stored_policy_is_the_solvers_best_action(tiny):
    rules, dist, _ = tiny
    solution = solve(rules, cache=False)
    mask, upper, armed = np.nonzero(reachable_states(rules))
    live = mask > 0
    mask, upper, armed = mask[live], upper[live], armed[live]
    rows = dist.rows(mask, upper, armed)
    for t in range(R.ROLLS_PER_TURN):
        best = solution.best_action(np.arange(R.NUM_ROLLS)[None], t, mask[:, None], upper[:, None], armed[:, None])
        assert np.array_equal(dist.actions(rows)[:, t], best)


def test_a_state_no_game_reaches_is_one_error():
    dist = Dm.score_distributions(TINY[0], cache=False)
    with pytest.raises(ValueError, match="no game reaches open_mask=15, upper=3, armed=0"):
        dist.rows(15, 3, 0)  # nothing filled, yet an upper subtotal
    with pytest.raises(ValueError, match=r"open_mask must be int\(s\) in 0..15"):
        dist.rows(16)


def test_disk_cache_round_trip_memory_map_and_damage(tmp_path):
    rules = TINY[0]
    Dm.clear_memo()
    try:
        first = Dm.score_distributions(rules, cache_dir=tmp_path)
        index = Dm.cache_path(rules, tmp_path)
        cdf_file, policy_file = index.with_suffix(".cdf"), index.with_suffix(".policy")
        assert first.source == "computed" and index.is_file() and cdf_file.is_file() and policy_file.is_file()
        assert cdf_file.stat().st_size == first.cdf.nbytes and policy_file.stat().st_size == first.policy.nbytes
        expected = np.array(first.cdf)  # a copy: the damage below writes into the files first maps
        Dm.clear_memo()
        again = Dm.score_distributions(rules, cache_dir=tmp_path)
        assert again.source == "disk" and isinstance(again.cdf, np.memmap) and isinstance(again.policy, np.memmap)
        assert np.array_equal(again.cdf, first.cdf) and np.array_equal(again.policy, first.policy)
        for path, damage in [
            (cdf_file, "flip"),
            (policy_file, "flip"),
            (cdf_file, "truncate"),
            (index, "flip"),
            (policy_file, "remove"),
        ]:
            if damage == "remove":
                path.unlink()
            else:
                data = bytearray(path.read_bytes())
                if damage == "flip":
                    data[len(data) // 2] ^= 0xFF
                path.write_bytes(bytes(data if damage == "flip" else data[:-4]))
            Dm.clear_memo()
            rebuilt = Dm.score_distributions(rules, cache_dir=tmp_path)
            assert rebuilt.source == "computed", (path.suffix, damage)  # refused, rebuilt, rewritten
            assert np.array_equal(rebuilt.cdf, expected)
        assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no temporary file left
    finally:
        Dm.clear_memo()


def test_an_index_that_reads_past_its_data_is_refused(tmp_path):
    """An index whose rows would read past the data files (a bound the checksums alone would not give) is refused, as
    is an index of other rules."""
    from yacht_env.util import load_arrays, save_arrays

    rules = TINY[0]
    solution = solve(rules, cache=False)
    path, key = Dm.cache_path(rules, tmp_path), Dm.cache_key(rules)
    FR.build_to_disk(path, key, rules, FD.solver_policy(solution))
    assert FR.load(path, key, rules) is not None
    assert FR.load(path, Dm.cache_key(TINY[1]), rules) is None
    arrays = load_arrays(path, key, FR.index_specs(rules))
    arrays["length"] = arrays["length"].copy()
    arrays["length"][0] += 1  # one value more than the data file holds
    save_arrays(path, key, arrays)
    assert FR.load(path, key, rules) is None


def test_the_family_is_covered_a_policy_table_and_a_huge_sheet_are_refused():
    assert Dm.unsupported("yahtzee") is None and Dm.unsupported("yatzy") is None
    assert Dm.cache_key("yahtzee") != Dm.cache_key("yahtzee_forced_joker")
    with pytest.raises(ValueError, match="exact score distributions cover rules without bonuses for a policy table"):
        Dm.policy_distributions("yahtzee", np.zeros((3, 8192, 252), dtype=np.uint8))
    names = tuple(name for name in R.CATEGORY_SCORERS if name not in ("yacht", "yatzy"))
    huge = R.Rules("huge", categories=names, upper_bonus=35, yahtzee_bonus=100)
    with pytest.raises(ValueError, match=r"^the exact score distributions cover rules with bonuses up to 16 GB"):
        Dm.score_distributions(huge)


@pytest.mark.slow  # a cross-check the README's command leaves to -m slow
def test_clubhouse_means_and_policy_equal_the_solvers():
    """The smallest preset, end to end: 178,816 turn starts, every row a distribution, means to 1e-5."""
    dist = Dm.score_distributions("clubhouse")
    solution = solve("clubhouse")
    reached = reachable_states(dist.rules)
    assert np.abs(dist.mean()[reached] - solution.start_values[reached]).max() < 1e-5
    ends = dist.cdf[dist.start + dist.length - 1]
    assert (ends == 1.0).all() and (dist.offset + dist.length <= dist.width).all()
    rng = np.random.default_rng(0)
    states = np.transpose(np.nonzero(reached[1:]))[rng.choice(int(reached[1:].sum()), 2_000)]
    mask, upper, armed = states[:, 0] + 1, states[:, 1], states[:, 2]
    roll, t = rng.integers(0, R.NUM_ROLLS, 2_000), rng.integers(0, R.ROLLS_PER_TURN, 2_000)
    stored = dist.actions(dist.rows(mask, upper, armed))[np.arange(2_000), t, roll]
    assert np.array_equal(stored, solution.best_action(roll, t, mask, upper, armed))
