"""The exact solver: checked against an independent brute force, known values, the env, and its cache."""

from __future__ import annotations

import gc
import itertools
import math
import os
import shutil
import stat
import subprocess
import sys
import time
import warnings
from collections import Counter
from functools import cache

import numpy as np
import pytest
from helpers import REPO
from reference import kept_dice, reference_score

from yacht_env import YachtEnv, solver
from yacht_env import rules as R
from yacht_env.solver import Solution, solve

PRESET_NAMES = ("standard", "classic")
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def solutions() -> dict[str, Solution]:
    # cache=False: the tests never read or write the user's cache folder.
    return {name: solve(name, cache=False) for name in PRESET_NAMES}


@pytest.fixture
def fresh_memo(monkeypatch):
    """An empty in-process memo for this test only."""
    monkeypatch.setattr(solver, "_MEMO", {})


# --------------------------------------------------------------------------------------------------
# An independent solver: plain Python over dice tuples, sharing no table with the rules core
# --------------------------------------------------------------------------------------------------
FACES = range(1, 7)
ALL_ROLLS = list(itertools.combinations_with_replacement(FACES, 5))


@cache
def reroll_outcomes(kept: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], int], ...]:
    """Every sorted roll reachable by re-rolling around ``kept``, with its number of ordered outcomes."""
    counts = Counter(tuple(sorted(kept + extra)) for extra in itertools.product(FACES, repeat=5 - len(kept)))
    return tuple(counts.items())


class BruteForce:
    """Optimal play of a sub-game (a set of open categories), by memoised enumeration."""

    def __init__(self, preset: str) -> None:
        self.preset = preset
        self.points = {(roll, k): reference_score(roll, k, preset) for roll in ALL_ROLLS for k in range(12)}
        self.tables: dict[frozenset[int], tuple[dict, dict]] = {}
        self.starts: dict[frozenset[int], float] = {frozenset(): 0.0}
        self.sub_multisets = {
            roll: {kept_dice(roll, m) for m in range(31)} for roll in ALL_ROLLS
        }  # what a legal keep can keep

    def start(self, open_set: frozenset[int]) -> float:
        if open_set not in self.starts:
            values, _ = self._turn(open_set)
            self.starts[open_set] = sum(n * values[2][roll] for roll, n in reroll_outcomes(())) / 6**5
        return self.starts[open_set]

    def _turn(self, open_set: frozenset[int]) -> tuple[dict, dict]:
        """``values[t][roll]`` and ``keeps[t][kept]`` of one turn, with ``t`` re-rolls left."""
        if open_set not in self.tables:
            values = {0: {roll: max(self.pick(open_set, roll, k) for k in open_set) for roll in ALL_ROLLS}}
            keeps = {}
            for t in (1, 2):
                keeps[t] = {
                    kept: sum(n * values[t - 1][roll] for roll, n in reroll_outcomes(kept)) / 6 ** (5 - len(kept))
                    for kept in {k for subs in self.sub_multisets.values() for k in subs}
                }
                values[t] = {
                    roll: max(values[0][roll], max(keeps[t][kept] for kept in self.sub_multisets[roll]))
                    for roll in ALL_ROLLS
                }
            self.tables[open_set] = (values, keeps)
        return self.tables[open_set]

    def pick(self, open_set: frozenset[int], roll: tuple[int, ...], k: int) -> float:
        return self.points[roll, k] + self.start(open_set - {k})

    def action_values(self, roll, rolls_left, open_set, canonical_keeps) -> list[float]:
        _, keeps = self._turn(open_set)
        result = [-math.inf] * 44
        first_mask: dict[tuple[int, ...], int] = {}
        for m in range(31):
            kept = kept_dice(roll, m)
            first_mask.setdefault(kept, m)
            if rolls_left > 0 and (not canonical_keeps or first_mask[kept] == m):
                result[m] = keeps[rolls_left][kept]
        for k in open_set:
            result[32 + k] = self.pick(open_set, roll, k)
        return result


def mask_of(open_set) -> int:
    return sum(1 << k for k in open_set)


def sampled_open_sets(rng: np.random.Generator) -> list[frozenset[int]]:
    singles = [frozenset([k]) for k in range(12)]
    pairs = [frozenset(p) for p in itertools.combinations(range(12), 2)]
    triples = [frozenset(t) for t in itertools.combinations(range(12), 3)]
    picked = rng.choice(len(triples), size=24, replace=False)
    return singles + pairs + [triples[i] for i in picked]


@pytest.fixture(scope="module", params=PRESET_NAMES)
def brute(request) -> BruteForce:
    return BruteForce(request.param)


def test_independent_scorer_agrees_with_the_rules_core():
    for preset in PRESET_NAMES:
        table = R.score_table(preset)
        for roll in ALL_ROLLS:
            for k in range(12):
                assert reference_score(roll, k, preset) == table[R.roll_index(roll), k], (preset, roll, k)


def test_start_values_match_brute_force(brute, solutions):
    solution = solutions[brute.preset]
    for open_set in sampled_open_sets(np.random.default_rng(7)):
        expected = brute.start(open_set)
        assert solution.start_values[mask_of(open_set)] == pytest.approx(expected, rel=TOLERANCE, abs=TOLERANCE)


@pytest.mark.parametrize("canonical_keeps", [True, False])
def test_action_values_match_brute_force(brute, solutions, canonical_keeps):
    solution = solutions[brute.preset]
    rng = np.random.default_rng(11)
    open_sets = sampled_open_sets(rng)
    for _ in range(300):
        open_set = open_sets[rng.integers(len(open_sets))]
        roll = ALL_ROLLS[rng.integers(len(ALL_ROLLS))]
        rolls_left = int(rng.integers(3))
        shuffled = list(rng.permutation(roll))  # order must not matter
        got = solution.action_values(shuffled, rolls_left, sorted(open_set), canonical_keeps=canonical_keeps)
        expected = np.array(brute.action_values(roll, rolls_left, open_set, canonical_keeps))
        assert got.shape == (44,) and got.dtype == np.float64
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
        finite = np.isfinite(expected)
        np.testing.assert_allclose(got[finite], expected[finite], rtol=TOLERANCE, atol=TOLERANCE)


# --------------------------------------------------------------------------------------------------
# Known values and structure
# --------------------------------------------------------------------------------------------------
def single(category: str) -> int:
    return 1 << R.CATEGORIES.index(category)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_single_category_closed_forms(solutions, preset):
    start_values = solutions[preset].start_values
    # Choice alone: each die is independent; re-roll below the value of its remaining rolls
    # (3.5 with one roll, 4.25 with two, so keep 5-6 first, then 4-6): 14/3 per die.
    assert start_values[single("choice")] == pytest.approx(5 * 14 / 3, rel=TOLERANCE)
    # A number alone: keep every die showing it; each die shows it within three rolls w.p. 1 - (5/6)^3.
    for face, category in enumerate(R.CATEGORIES[:6], start=1):
        assert start_values[single(category)] == pytest.approx(face * 5 * (1 - (5 / 6) ** 3), rel=TOLERANCE)
    # Yacht alone: the classic chance of five of a kind within three rolls, 2,783,176 / 6^10.
    assert start_values[single("yacht")] == pytest.approx(50 * 2_783_176 / 6**10, rel=TOLERANCE)


def test_choice_alone_matches_brute_force():
    assert BruteForce("standard").start(frozenset([R.CATEGORIES.index("choice")])) == pytest.approx(70 / 3)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_start_values_are_finite_and_monotone(solutions, preset):
    start_values = solutions[preset].start_values
    assert start_values.shape == (4096,) and start_values.dtype == np.float64
    assert start_values[0] == 0.0
    assert np.isfinite(start_values).all()
    masks = np.arange(4096)
    for k in range(12):
        without = masks[(masks >> k & 1) == 0]
        assert (start_values[without | 1 << k] >= start_values[without]).all()
    assert solutions[preset].expected_score == start_values[R.ALL_OPEN]


def test_known_expected_scores(solutions):
    assert solutions["standard"].expected_score == pytest.approx(166.96, abs=0.01)
    assert solutions["classic"].expected_score > solutions["standard"].expected_score


@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("canonical_keeps", [True, False])
def test_finite_iff_legal_on_every_roll(solutions, preset, canonical_keeps):
    solution = solutions[preset]
    open_masks = np.concatenate([[1, R.ALL_OPEN], np.random.default_rng(3).integers(1, 4096, size=40)])
    roll, rolls_left, open_mask = np.meshgrid(np.arange(252), np.arange(3), open_masks, indexing="ij")
    q = solution.q_values(roll, rolls_left, open_mask, canonical_keeps=canonical_keeps)
    assert q.shape == (*roll.shape, 44) and q.dtype == np.float64
    legal = R.legal_action_mask(roll, rolls_left, open_mask, canonical_keeps)
    np.testing.assert_array_equal(np.isfinite(q), legal)
    assert not np.isnan(q).any()


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_values_and_best_action_agree_with_action_values(solutions, preset):
    solution = solutions[preset]
    rng = np.random.default_rng(5)
    roll, rolls_left, open_mask = rng.integers(252, size=2000), rng.integers(3, size=2000), rng.integers(1, 4096, 2000)
    q = solution.q_values(roll, rolls_left, open_mask)
    values = solution.values(roll, rolls_left, open_mask)
    best = solution.best_action(roll, rolls_left, open_mask)
    np.testing.assert_array_equal(q.max(axis=-1), values)
    np.testing.assert_array_equal(q[np.arange(2000), best], values)
    np.testing.assert_array_equal(best, (q == values[:, None]).argmax(axis=-1))  # ties: the smallest action
    assert R.legal_action_mask(roll, rolls_left, open_mask)[np.arange(2000), best].all()
    for i in range(50):  # the player-facing API gives the same numbers
        dice, open_categories = R.ROLLS[roll[i]], int(open_mask[i])
        np.testing.assert_array_equal(solution.action_values(dice, int(rolls_left[i]), open_categories), q[i])
        assert solution.values(int(roll[i]), int(rolls_left[i]), open_categories) == values[i]
        assert solution.best_action(int(roll[i]), int(rolls_left[i]), open_categories) == best[i]


def test_scalar_queries_return_python_numbers(solutions):
    solution = solutions["standard"]
    assert isinstance(solution.values(0, 2, R.ALL_OPEN), float)
    assert isinstance(solution.best_action(0, 2, R.ALL_OPEN), int)
    assert solution.q_values(0, 2, R.ALL_OPEN).shape == (44,)


def test_open_categories_forms_agree(solutions):
    solution = solutions["standard"]
    dice = [6, 2, 2, 5, 3]
    by_names = solution.action_values(dice, 1, ["twos", "choice", "yacht"])
    by_indices = solution.action_values(dice, 1, [1, 10, 11])
    by_bool_mask = solution.action_values(dice, 1, [k in (1, 10, 11) for k in range(12)])
    by_int_mask = solution.action_values(dice, 1, (1 << 1) | (1 << 10) | (1 << 11))
    for other in (by_indices, by_bool_mask, by_int_mask):
        np.testing.assert_array_equal(by_names, other)


# --------------------------------------------------------------------------------------------------
# The optimal agent in the env scores what the solver expects
# --------------------------------------------------------------------------------------------------
def play_games(solution: Solution, games: int, seed: int) -> np.ndarray:
    env = YachtEnv(rules=solution.rules, illegal_action="raise")
    finals = np.empty(games)
    for game in range(games):
        _, info = env.reset(seed=seed + game)
        total, done = 0.0, False
        while not done:
            roll = R.roll_index(info["dice"])
            open_mask = R.open_mask_from([int(points == -1) for points in info["scores"]])  # -1: open
            q = solution.q_values(roll, info["rolls_left"], open_mask)
            np.testing.assert_array_equal(np.isfinite(q), env.action_masks())
            _, reward, done, truncated, info = env.step(int(q.argmax()))
            assert not truncated
            total += reward
        assert total == info["total"]
        finals[game] = total
    return finals


@pytest.mark.parametrize("preset", ["standard", pytest.param("classic", marks=pytest.mark.slow)])
def test_optimal_play_in_the_env_scores_the_expected_score(solutions, preset):
    solution = solutions[preset]
    finals = play_games(solution, games=2000, seed=1000)
    standard_error = finals.std(ddof=1) / np.sqrt(len(finals))
    assert abs(finals.mean() - solution.expected_score) < 4 * standard_error


# --------------------------------------------------------------------------------------------------
# The disk cache and the memo
# --------------------------------------------------------------------------------------------------
def test_second_solve_loads_from_disk(tmp_path, fresh_memo, solutions):
    first = solve("standard", cache_dir=tmp_path)
    assert first.source == "solved" and solver.cache_path("standard", tmp_path).is_file()
    assert solve("standard", cache_dir=tmp_path) is first  # the memo
    solver.clear_memo()
    second = solve("standard", cache_dir=tmp_path)
    assert second.source == "disk"
    np.testing.assert_array_equal(second.start_values, first.start_values)
    np.testing.assert_array_equal(second.keep_values, first.keep_values)
    np.testing.assert_array_equal(second.start_values, solutions["standard"].start_values)
    assert second.expected_score == first.expected_score


def test_cache_dir_from_the_environment(tmp_path, fresh_memo, monkeypatch):
    monkeypatch.setenv(solver.CACHE_DIR_ENV, str(tmp_path))
    assert solver.cache_path("classic").parent == tmp_path
    solve("classic")
    assert solver.cache_path("classic").is_file()
    assert [p.suffix for p in tmp_path.iterdir()] == [".npz"]  # no temporary file left behind


def test_cache_key_depends_on_rules_and_format(monkeypatch):
    keys = {solver.cache_key(name) for name in PRESET_NAMES}
    keys.add(solver.cache_key(R.Rules("standard", yacht=40)))
    monkeypatch.setattr(solver, "SOLVER_FORMAT_VERSION", solver.SOLVER_FORMAT_VERSION + 1)
    keys.add(solver.cache_key("standard"))
    assert len(keys) == 4


def _corrupt(path, how: str, tmp_path) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif how == "tampered":
        with np.load(path) as stored:
            arrays = dict(stored)
        arrays["keep_values"] = arrays["keep_values"].copy()
        arrays["keep_values"][1, 100, 7] += 1.0
        np.savez(path, **arrays)
    elif how == "wrong_key":  # a valid file, but of other rules
        other_dir = tmp_path / "other"
        solve("classic", cache=True, cache_dir=other_dir)
        shutil.copyfile(solver.cache_path("classic", other_dir), path)
    elif how == "wrong_shape":
        with np.load(path) as stored:
            arrays = dict(stored)
        arrays["start_values"] = arrays["start_values"][:100]
        np.savez(path, **arrays)


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage", "tampered", "wrong_key", "wrong_shape"])
def test_a_damaged_cache_file_is_rebuilt_never_trusted(tmp_path, fresh_memo, solutions, how):
    solve("standard", cache_dir=tmp_path)
    path = solver.cache_path("standard", tmp_path)
    _corrupt(path, how, tmp_path)
    solver.clear_memo()
    rebuilt = solve("standard", cache_dir=tmp_path)
    assert rebuilt.source == "solved"
    np.testing.assert_array_equal(rebuilt.start_values, solutions["standard"].start_values)
    np.testing.assert_array_equal(rebuilt.keep_values, solutions["standard"].keep_values)
    solver.clear_memo()
    reloaded = solve("standard", cache_dir=tmp_path)  # the file was overwritten with a good one
    assert reloaded.source == "disk"
    np.testing.assert_array_equal(reloaded.keep_values, solutions["standard"].keep_values)


def test_an_unwritable_cache_dir_only_warns(tmp_path, fresh_memo):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    with pytest.warns(RuntimeWarning, match="could not write the solver cache"):
        solution = solve("standard", cache_dir=not_a_dir)
    assert solution.expected_score == pytest.approx(166.96, abs=0.01)


@pytest.mark.parametrize("what", ["directory", "fifo", "link to /dev/null", "read-only file"])
def test_a_non_file_at_the_cache_path_only_warns(tmp_path, fresh_memo, what):
    path = solver.cache_path("standard", tmp_path)
    if what == "directory":
        path.mkdir()
    elif what == "fifo":
        os.mkfifo(path)
    elif what == "link to /dev/null":
        path.symlink_to("/dev/null")
    else:
        path.write_bytes(b"not a cache")
        path.chmod(0o444)
    with pytest.warns(RuntimeWarning, match="could not write the solver cache .*: cannot write"):
        solution = solve("standard", cache_dir=tmp_path)
    assert solution.source == "solved"
    assert solution.expected_score == pytest.approx(166.96, abs=0.01)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # left as it was, no temporary file either


def test_a_cache_dir_of_an_unknown_user_is_a_value_error(fresh_memo, monkeypatch):
    monkeypatch.setenv(solver.CACHE_DIR_ENV, "~nosuchuser_yacht/x")
    message = "cache folder '~nosuchuser_yacht/x' \\(from \\$YACHT_RL_CACHE_DIR\\): '~nosuchuser_yacht' names no user"
    with pytest.raises(ValueError, match=message):
        solver.cache_path("standard")
    with pytest.raises(ValueError, match=message):
        solve("standard")


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate.py", "--agents", "optimal", "--games", "2"],
        ["play.py", "--players", "optimal", "greedy", "--delay", "0"],
        pytest.param(  # torch's import: 5 s
            ["train.py", "--total-timesteps", "64", "--n-envs", "16", "--no-progress", "--opponents", "optimal"],
            marks=pytest.mark.slow,
        ),
    ],
    ids=["evaluate.py", "play.py", "train.py"],
)
def test_the_clis_say_a_cache_dir_of_an_unknown_user_in_one_line(tmp_path, argv):
    import subprocess
    import sys

    script = REPO / argv[0]
    env = {**os.environ, solver.CACHE_DIR_ENV: "~nosuchuser_yacht/x"}
    out = subprocess.run(
        [sys.executable, str(script), *argv[1:], *(["--output-dir", str(tmp_path)] if argv[0] == "train.py" else [])],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        f"{argv[0]}: error: cannot use the cache folder '~nosuchuser_yacht/x' (from $YACHT_RL_CACHE_DIR): "
        "'~nosuchuser_yacht' names no user's home directory\n"
    )


def test_cache_false_always_solves(fresh_memo, monkeypatch, tmp_path):
    monkeypatch.setenv(solver.CACHE_DIR_ENV, str(tmp_path))
    first, second = solve("standard", cache=False), solve("standard", cache=False)
    assert first is not second and first.source == second.source == "solved"
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------
# Bad inputs
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dice", "rolls_left", "open_categories", "message"),
    [
        ([1, 2, 3], 2, "choice", "dice must be 5 values in 1..6"),
        ([0, 1, 2, 3, 4], 2, "choice", "dice must be 5 values in 1..6"),
        ([1, 2, 3, 4, 7], 2, "choice", "dice must be 5 values in 1..6"),
        ([1, 2, 3, 4, 5.5], 2, "choice", "dice must be 5 values in 1..6"),
        ([1, 2, 3, 4, 5], 3, "choice", "rolls_left must be an int in 0..2"),
        ([1, 2, 3, 4, 5], -1, "choice", "rolls_left must be an int in 0..2"),
        ([1, 2, 3, 4, 5], 1.0, "choice", "rolls_left must be an int in 0..2"),
        ([1, 2, 3, 4, 5], True, "choice", "rolls_left must be an int in 0..2"),
        ([1, 2, 3, 4, 5], 2, [], "at least one open category"),
        ([1, 2, 3, 4, 5], 2, 0, "at least one open category"),
        ([1, 2, 3, 4, 5], 2, "bonus", "unknown category 'bonus'"),
        ([1, 2, 3, 4, 5], 2, 4096, "an open mask must be an int in 0..4095"),
        ([1, 2, 3, 4, 5], 2, 12, None),  # an int is a mask (threes + fours), not category 12: valid
    ],
)
def test_action_values_rejects_bad_input(solutions, dice, rolls_left, open_categories, message):
    solution = solutions["standard"]
    if message is None:
        assert np.isfinite(solution.action_values(dice, rolls_left, open_categories)[[34, 35]]).all()
        return
    with pytest.raises(ValueError, match=message):
        solution.action_values(dice, rolls_left, open_categories)


@pytest.mark.parametrize(
    ("roll", "rolls_left", "open_mask", "message"),
    [
        (252, 0, 1, r"roll must be int\(s\) in 0..251"),
        (np.array([0, -1]), 0, 1, r"roll must be int\(s\) in 0..251 .*got -1"),
        (1.0, 0, 1, r"roll must be int\(s\) in 0..251 .*got 1.0 of dtype float64"),
        (0, 3, 1, r"rolls_left must be int\(s\) in 0..2"),
        (0, 0, 0, r"open_mask must be int\(s\) in 1..4095"),
        (0, 0, 4096, r"open_mask must be int\(s\) in 1..4095"),
        (np.zeros(3, int), np.zeros(2, int), 1, "equal .* shapes"),
    ],
)
def test_batched_queries_reject_bad_states(solutions, roll, rolls_left, open_mask, message):
    solution = solutions["standard"]
    for query in (solution.q_values, solution.values, solution.best_action):
        with pytest.raises(ValueError, match=message):
            query(roll, rolls_left, open_mask)


@pytest.mark.parametrize("rules", ["kniffel", 3, None])
def test_unknown_rules(rules):
    with pytest.raises(ValueError, match="unknown rules"):
        solve(rules, cache=False)


def test_a_cache_file_gets_the_usual_mode(tmp_path, fresh_memo):
    previous = os.umask(0o022)
    try:
        solve("standard", cache_dir=tmp_path)
    finally:
        os.umask(previous)
    path = solver.cache_path("standard", tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's private 0600
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("how", ["truncated", "empty", "garbage"])
def test_a_damaged_cache_file_leaves_no_file_open(tmp_path, fresh_memo, how):
    solve("standard", cache_dir=tmp_path)
    path = solver.cache_path("standard", tmp_path)
    _corrupt(path, how, tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert solver._load(path, R.get_rules("standard")) is None
        gc.collect()  # an unclosed file warns when it is collected
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_a_killed_writers_temp_file_is_cleaned_up(tmp_path, fresh_memo):
    path = solver.cache_path("standard", tmp_path)
    tmp_path.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = path.with_name(f".{path.name}.{int(done.stdout)}-0123abcd.tmp")  # its writer was killed (kill -9)
    live = path.with_name(f".{path.name}.{os.getppid()}-0123abcd.tmp")  # another process writing now
    old_style = path.with_name(f"{path.name}k2j4h1x0.tmp")  # named by mkstemp before this version, an hour old
    for temp in (stale, live, old_style):
        temp.write_bytes(b"\x00" * 1000)
    os.utime(old_style, (time.time() - 3601,) * 2)
    assert solve("standard", cache_dir=tmp_path).source == "solved"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, live.name])
    solver.clear_memo()
    stale.write_bytes(b"")  # also when the cache file is good and only read
    assert solve("standard", cache_dir=tmp_path).source == "disk"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, live.name])
