"""The exact solver on the Yacht family (Yahtzee's presets, Scandinavian Yatzy).

* Known expected scores of every preset, and NaN exactly at the turn starts no game reaches.
* yatzy-solver's values (an independent solver, PyPI ``yatzy-solver``): every reachable turn start, and every
  option of 10,000 random positions per preset (five of a kind often, every ``rolls_left``), legal options included.
* Small odd sheets against a plain backward induction written here from ``pick_outcome`` and ``legal_picks``.
* The query API (upper and armed), its bad input, the disk cache, and optimal play scoring what it expects.

Each family solution is solved once per session (the in-process memo, with a temporary cache folder: never the
user's), and each yatzy-solver table built once. Yahtzee's checks run by default; the other presets' (about 50 s of
solving, theirs and ours) are marked ``slow``.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from reference import UPPER_FACES, kept_dice

from yacht_env import rules as R
from yacht_env import solver
from yacht_env.game import GameState, draw_stream
from yacht_env.solver import solve

EXPECTED = {  # yatzy-solver's values of the same games, to 1e-7
    "yahtzee": 254.5896095,
    "yahtzee_forced_joker": 254.5877287,
    "yahtzee_no_joker": 253.9702412,
    "yahtzee_no_bonus": 245.8707745,
    "yatzy": 248.4399894,
}
THEIR_VARIANTS = {
    "yahtzee": "american",
    "yahtzee_forced_joker": "american+forced-joker",
    "yahtzee_no_joker": "american+no-joker",
    "yahtzee_no_bonus": "american+no-bonus",
    "yatzy": "yatzy-scandinavian",
}
#: Presets no solver here cross-checks, pinned to their published optimum: Nintendo's Clubhouse Games "Yacht Dice"
#: (ho94949/yacht-dice's README: 191.774369, with the upper bonus counted and Four of a Kind the sum of all five dice).
PUBLISHED = {"clubhouse": 191.774369}
PRESETS = [pytest.param(name, marks=[] if name == "yahtzee" else [pytest.mark.slow]) for name in EXPECTED]
POSITIONS = 10_000


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    """``ours(name)``: the preset's solution, solved at most once per session."""
    folder = tmp_path_factory.mktemp("solver-cache")
    return functools.cache(lambda name: solve(name, cache_dir=folder))


@pytest.fixture(scope="module")
def theirs():
    """``theirs(name)``: yatzy-solver's solved variant of the preset, built at most once."""
    ys = pytest.importorskip("yatzy_solver")
    return functools.cache(lambda name: ys.Solver.build(ys.Variant(THEIR_VARIANTS[name])))


def reachable_states(rules: R.Rules) -> np.ndarray:
    """``(num_open_masks, *bonus_shape)`` bool, from the rules' text: the upper subtotal is a sum of face x count
    (0..5 dice) over the filled upper boxes, capped at the threshold; the Yahtzee box is armed only once filled."""
    uppers, armed_states = rules.bonus_shape
    faces = {k: UPPER_FACES[name] for k, name in enumerate(rules.categories) if name in UPPER_FACES}
    five = next(k for k, name in enumerate(rules.categories) if name in ("yacht", "yahtzee", "yatzy"))

    @functools.cache
    def subtotals(filled: tuple[int, ...]) -> frozenset[int]:
        sums = {0}
        for face in filled:
            sums = {s + face * count for s in sums for count in range(6)}
        return frozenset(min(s, uppers - 1) for s in sums)

    reachable = np.zeros((rules.num_open_masks, uppers, armed_states), dtype=bool)
    for mask in range(rules.num_open_masks):
        reachable[mask, sorted(subtotals(tuple(f for k, f in faces.items() if not mask >> k & 1))), 0] = True
        if armed_states > 1 and not mask >> five & 1:
            reachable[mask, :, 1] = reachable[mask, :, 0]
    return reachable


def random_positions(rules: R.Rules, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """``(roll, rolls_left, open_mask, upper, armed)`` of ``n`` positions in reachable states; a third of the
    rolls five of a kind (the joker's and the Yahtzee bonus's cases)."""
    rng = np.random.default_rng(seed)
    masks, upper, armed = np.nonzero(reachable_states(rules)[1:])
    pick = rng.integers(len(masks), size=n)
    roll = rng.integers(R.NUM_ROLLS, size=n)
    five = rng.random(n) < 1 / 3
    roll[five] = R.FIVE_OF_A_KIND_ROLLS[rng.integers(6, size=five.sum())]
    return roll, rng.integers(R.ROLLS_PER_TURN, size=n), masks[pick] + 1, upper[pick], armed[pick]


def their_filled(rules: R.Rules, open_mask: np.ndarray) -> np.ndarray:
    return (~np.asarray(open_mask) & rules.all_open).astype(np.uint32)


# --------------------------------------------------------------------------------------------------
# Known values and the shape of the solution
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", PRESETS)
def test_expected_scores_and_shape(ours, name):
    solution, rules = ours(name), R.get_rules(name)
    assert solution.expected_score == pytest.approx(EXPECTED[name], abs=1e-6)
    values = solution.start_values
    assert values.shape == (rules.num_open_masks, *rules.bonus_shape) and values.dtype == np.float64
    assert solution.expected_score == values[rules.all_open, 0, 0]
    assert (values[0] == 0).all() and solution.keep_values is None
    np.testing.assert_array_equal(np.isfinite(values), reachable_states(rules))  # NaN where no game goes


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_optima(ours, name):
    solution, rules = ours(name), R.get_rules(name)
    assert solution.expected_score == pytest.approx(PUBLISHED[name], abs=1e-6)
    assert solution.start_values.shape == (rules.num_open_masks, *rules.bonus_shape)
    np.testing.assert_array_equal(np.isfinite(solution.start_values), reachable_states(rules))


def test_clubhouse_is_yacht_with_the_upper_bonus_and_run_straights():
    clubhouse = R.get_rules("clubhouse")
    assert clubhouse.categories == (
        *R.UPPER_CATEGORIES,
        "choice",
        "four_of_a_kind",
        "full_house",
        "small_straight",
        "large_straight",
        "yacht",
    )
    assert (clubhouse.num_actions, clubhouse.bonus_shape, clubhouse.upper_bonus) == (44, (64, 1), 35)
    assert clubhouse.has_bonuses and not clubhouse.yahtzee_bonus and clubhouse.joker == "none"
    # Without its upper bonus the sheet is worth 176.119621: the published optimum counts the bonus.
    no_bonus = dataclasses.replace(clubhouse, name="clubhouse_no_bonus", upper_bonus=0)
    assert solve(no_bonus, cache=False).expected_score == pytest.approx(176.119621, abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reading", "expected"),
    [
        ({"four_of_a_kind": "four_dice"}, 190.041486),  # Four of a Kind as 4 x the face
        ({"yacht_is_full_house": False}, 191.760880),  # five of a kind not a Full House
    ],
)
def test_other_readings_of_the_clubhouse_rules_miss_the_published_optimum(reading, expected):
    rules = dataclasses.replace(R.get_rules("clubhouse"), name="clubhouse_reading", **reading)
    value = solve(rules, cache=False).expected_score
    assert value == pytest.approx(expected, abs=1e-6) and abs(value - PUBLISHED["clubhouse"]) > 1e-3


def test_yacht_presets_keep_their_shape_and_cache_key():
    solution = solve("standard", cache=False)
    assert solution.start_values.shape == (4096,) and solution.keep_values.shape == (2, 4096, 210)
    assert solver.SOLVER_FORMAT_VERSION == 1  # the Yacht presets' cache files stay valid


# --------------------------------------------------------------------------------------------------
# yatzy-solver's values
# --------------------------------------------------------------------------------------------------
def test_their_sheet_and_filled_bits_follow_ours(theirs):
    ys = pytest.importorskip("yatzy_solver")
    for name, variant in THEIR_VARIANTS.items():
        rules, theirs_variant = R.get_rules(name), ys.Variant(variant)
        assert [{"yahtzee": "five_of_a_kind"}.get(c, c) for c in rules.categories] == theirs_variant.categories
        chance = rules.categories.index("chance")  # last on Yahtzee's sheet, second to last on Yatzy's
        situation = "dice 1 2 3 4 6 | rolls 0 | upper 0 | filled ones,chance"
        assert theirs_variant.situation_arrays([situation])["filled"][0] == 1 | 1 << chance


@pytest.mark.parametrize("name", PRESETS)
def test_turn_start_values_equal_theirs(ours, theirs, name):
    solution, rules, other = ours(name), R.get_rules(name), theirs(name)
    open_mask, upper, armed = np.nonzero(reachable_states(rules)[1:])
    open_mask += 1
    expected = other.state_values(their_filled(rules, open_mask), upper.astype(np.uint16), armed.astype(bool))
    np.testing.assert_allclose(solution.start_values[open_mask, upper, armed], expected, rtol=1e-9, atol=1e-6)
    assert solution.expected_score == pytest.approx(other.state_value("upper 0 | filled -"), abs=1e-6)


@functools.cache
def their_actions(name: str) -> np.ndarray:
    """``(252, num_action_codes)``: our action for each of yatzy-solver's action codes at each roll (a keep: the
    canonical keep-mask of that multiset of the sorted dice; -1 where the roll does not hold it)."""
    ys = pytest.importorskip("yatzy_solver")
    variant = ys.Variant(THEIR_VARIANTS[name])
    canonical: dict[tuple[int, tuple[int, ...]], int] = {}
    for r, dice in enumerate(R.ROLL_TUPLES):
        for mask in range(R.KEEP_ALL):
            canonical.setdefault((r, kept_dice(dice, mask)), mask)
    table = np.full((R.NUM_ROLLS, variant.num_action_codes), -1, dtype=np.intp)
    for code in range(variant.num_action_codes):
        kind, _, rest = variant.action_notation(code).partition(" ")
        if kind == "score":
            table[:, code] = R.PICK_OFFSET + variant.categories.index(rest)
        else:
            kept = () if rest == "-" else tuple(int(face) for face in rest.split())
            table[:, code] = [canonical.get((r, kept), -1) for r in range(R.NUM_ROLLS)]
    return table


@pytest.mark.parametrize("name", PRESETS)
def test_option_values_and_legal_options_equal_theirs(ours, theirs, name):
    solution, rules, other = ours(name), R.get_rules(name), theirs(name)
    roll, rolls_left, open_mask, upper, armed = random_positions(rules, POSITIONS, seed=11)
    codes, values, counts = other.option_values_batch(
        their_filled(rules, open_mask),
        upper.astype(np.uint16),
        armed.astype(bool),
        R.ROLLS[roll].astype(np.uint8),
        rolls_left.astype(np.uint8),
    )
    listed = np.arange(codes.shape[1]) < counts[:, None]
    actions = their_actions(name)[roll[:, None], np.maximum(codes, 0)]
    assert (actions[listed] >= 0).all()  # each of their options is one of our actions
    expected = np.full((POSITIONS, rules.num_actions), -np.inf)
    expected[np.nonzero(listed)[0], actions[listed]] = values[listed]
    assert (np.isfinite(expected).sum(axis=1) == counts).all()  # ... and a different one
    q = solution.q_values(roll, rolls_left, open_mask, upper, armed)
    np.testing.assert_array_equal(np.isfinite(q), np.isfinite(expected))  # the same legal options
    legal = np.isfinite(q)
    np.testing.assert_allclose(q[legal], expected[legal], rtol=1e-9, atol=1e-6)


# --------------------------------------------------------------------------------------------------
# Odd sheets against a plain backward induction from the rules core
# --------------------------------------------------------------------------------------------------
UPPER_SIX = tuple(UPPER_FACES)
ODD_RULES = [
    R.Rules(  # a low threshold, the free joker, no chance box
        "odd_free",
        categories=(*UPPER_SIX, "yahtzee"),
        upper_bonus=35,
        upper_bonus_threshold=12,
        yahtzee_bonus=100,
        joker="free",
    ),
    R.Rules(  # the forced joker and nothing else: bonus_shape (1, 1)
        "odd_forced", categories=(*UPPER_SIX, "full_house", "large_straight", "yahtzee"), full_house=25, joker="forced"
    ),
    R.Rules(  # two upper boxes and Yatzy's lower boxes, an upper bonus only
        "odd_yatzy", categories=("ones", "twos", "one_pair", "yatzy"), upper_bonus=10, upper_bonus_threshold=6
    ),
]

ODD = {rules.name: rules for rules in ODD_RULES}


def reference_solve(rules: R.Rules) -> tuple[np.ndarray, np.ndarray]:
    """``(start_values, reachable)`` over every ``(open_mask, upper, armed)``: V0 from ``pick_outcome`` over every
    roll and the picks ``legal_picks`` allows, keeps by ``TRANSITION`` and each roll's list of kept multisets; the
    reachable states by playing every roll and legal pick forward from the first turn."""
    uppers, armed_states = rules.bonus_shape
    c = rules.num_categories
    rolls, categories = np.arange(R.NUM_ROLLS), np.arange(c)
    subsets = [sorted({int(R.KEEP[r, m]) for m in range(R.KEEP_ALL)}) for r in rolls]
    subsets = np.array([row + row[:1] * (R.KEEP_ALL - len(row)) for row in subsets])  # (252, 31)
    popcount = np.array([bin(mask).count("1") for mask in range(rules.num_open_masks)])

    def outcomes(mask, upper, armed):  # (n, 252, C) each: legal, points, next state index
        words = np.broadcast_to(R.legal_picks(rules, rolls[None], mask[:, None]), (len(mask), R.NUM_ROLLS))
        legal = words[..., None] >> categories & 1
        points, _, upper, armed = R.pick_outcome(
            rules, rolls[None, :, None], categories, mask[:, None, None], upper[:, None, None], armed[:, None, None]
        )
        after = ((mask[:, None, None] & ~(1 << categories)) * uppers + upper) * armed_states + armed
        return legal.astype(bool), points, after

    reachable = np.zeros(rules.num_open_masks * uppers * armed_states, dtype=bool)
    reachable[rules.all_open * uppers * armed_states] = True
    for level in range(c, 0, -1):
        states = np.flatnonzero(reachable & (np.repeat(popcount, uppers * armed_states) == level))
        mask, upper, armed = np.unravel_index(states, (rules.num_open_masks, uppers, armed_states))
        legal, _, after = outcomes(mask, upper, armed)
        reachable[after[legal]] = True
    values = np.zeros((rules.num_open_masks, uppers, armed_states))
    for level in range(1, c + 1):
        mask, upper, armed = (
            a.ravel()
            for a in np.meshgrid(np.flatnonzero(popcount == level), range(uppers), range(armed_states), indexing="ij")
        )
        legal, points, after = outcomes(mask, upper, armed)
        pick_now = np.where(legal, points + values.ravel()[after], -np.inf).max(axis=-1)  # (n, 252)
        value = pick_now
        for _ in range(R.MAX_ROLLS_LEFT):
            keeps = value @ R.TRANSITION[: solver.NUM_PROPER_KEPT].T
            value = np.maximum(pick_now, keeps[:, subsets].max(axis=-1))
        values[mask, upper, armed] = value @ R.TRANSITION[0]
    return values, reachable.reshape(values.shape)


@pytest.mark.parametrize("rules", ODD_RULES, ids=[rules.name for rules in ODD_RULES])
def test_odd_sheets_equal_a_plain_backward_induction(rules):
    solution = solve(rules, cache=False)
    expected, reachable = reference_solve(rules)
    np.testing.assert_array_equal(np.isfinite(solution.start_values), reachable)
    np.testing.assert_allclose(solution.start_values[reachable], expected[reachable], rtol=1e-12, atol=1e-9)
    # Picks: points plus the start values where they lead; the keeps' values are the reference's own recurrence
    # through its start values (checked above), so legal actions and picks are checked here.
    roll, rolls_left, open_mask, upper, armed = random_positions_of(reachable, 2000, seed=3)
    q = solution.q_values(roll, rolls_left, open_mask, upper, armed)
    words = R.legal_picks(rules, roll, open_mask)
    np.testing.assert_array_equal(
        np.isfinite(q), R.legal_action_mask(roll, rolls_left, words, True, rules.num_categories)
    )
    for i in range(50):
        for k in np.flatnonzero(np.isfinite(q[i, R.PICK_OFFSET :])):
            points, _, up, arm = R.pick_outcome(
                rules, int(roll[i]), int(k), int(open_mask[i]), int(upper[i]), int(armed[i])
            )
            after = expected[int(open_mask[i]) & ~(1 << int(k)), up, arm]
            assert q[i, R.PICK_OFFSET + k] == pytest.approx(points + after, abs=1e-9)


def random_positions_of(reachable: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    masks, upper, armed = np.nonzero(reachable[1:])
    pick = rng.integers(len(masks), size=n)
    roll = rng.integers(R.NUM_ROLLS, size=n)
    roll[: n // 3] = R.FIVE_OF_A_KIND_ROLLS[rng.integers(6, size=n // 3)]
    return roll, rng.integers(R.ROLLS_PER_TURN, size=n), masks[pick] + 1, upper[pick], armed[pick]


# --------------------------------------------------------------------------------------------------
# The query API
# --------------------------------------------------------------------------------------------------
def test_values_best_action_and_action_values_agree_with_q_values(ours):
    solution, rules = ours("yahtzee"), R.get_rules("yahtzee")
    roll, rolls_left, open_mask, upper, armed = random_positions(rules, 2000, seed=5)
    q = solution.q_values(roll, rolls_left, open_mask, upper, armed)
    assert q.shape == (2000, rules.num_actions) and q.dtype == np.float64 and not np.isnan(q).any()
    values = solution.values(roll, rolls_left, open_mask, upper, armed)
    best = solution.best_action(roll, rolls_left, open_mask, upper, armed)
    np.testing.assert_array_equal(q.max(axis=-1), values)
    np.testing.assert_array_equal(best, (q == values[:, None]).argmax(axis=-1))  # ties: the smallest action
    for i in range(30):  # one at a time, and as the player sees it
        state = (int(roll[i]), int(rolls_left[i]), int(open_mask[i]), int(upper[i]), int(armed[i]))
        np.testing.assert_array_equal(solution.q_values(*state), q[i])
        assert solution.values(*state) == values[i] and isinstance(solution.values(*state), float)
        assert solution.best_action(*state) == best[i] and isinstance(solution.best_action(*state), int)
        dice = R.ROLLS[roll[i]][::-1]
        by_player = solution.action_values(dice, state[1], state[2], upper=state[3], armed=bool(state[4]))
        np.testing.assert_array_equal(by_player, q[i])
    # A turn's start value is the mean over the first roll of the best action's value.
    first = np.arange(R.NUM_ROLLS)
    assert solution.values(first, 2, rules.all_open) @ R.TRANSITION[0] == pytest.approx(solution.expected_score)


def test_optimal_play_scores_the_expected_score(ours):
    """Batched optimal play through the game core: every action legal, the mean score what the solver expects."""
    solution = ours("yahtzee")
    game = GameState("yahtzee", num_games=1000)
    game.start(draw_stream(np.random.default_rng(0), "yahtzee", 1000))
    while (playing := np.flatnonzero(game.open_mask)).size:
        state = (game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        action = solution.best_action(*(field[playing] for field in state))
        assert game.mask[playing, action].all()
        game.play(action, games=playing)
    standard_error = game.total.std(ddof=1) / np.sqrt(len(game.total))
    assert abs(game.total.mean() - solution.expected_score) < 4 * standard_error


@pytest.mark.parametrize(
    ("name", "upper", "armed", "message"),
    [
        ("yahtzee", 64, 0, r"upper must be int\(s\) in 0..63 \(the upper subtotal"),
        ("yahtzee", -1, 0, r"upper must be int\(s\) in 0..63"),
        ("yahtzee", 1.5, 0, r"upper must be int\(s\) in 0..63 .*dtype float64"),
        ("yahtzee", 0, 2, r"armed must be int\(s\) in 0..1 \(whether the Yahtzee box holds its points"),
        ("odd_yatzy", 0, 1, "armed must be 0: rules 'odd_yatzy' have no Yahtzee bonus, got 1"),
        ("odd_forced", 1, 0, "upper must be 0: rules 'odd_forced' have no upper bonus, got 1"),
        ("standard", 3, 0, "upper must be 0: rules 'standard' have no upper bonus, got 3"),
        ("standard", 0, np.array([0, 1]), "armed must be 0: rules 'standard' have no Yahtzee bonus, got 1"),
        ("yahtzee", 5, 0, "no game reaches open_mask=8191, upper=5, armed=0"),  # no upper box filled yet
        ("yahtzee", 0, 1, "no game reaches open_mask=8191, upper=0, armed=1"),  # the Yahtzee box still open
    ],
)
def test_batched_queries_reject_bad_bonus_states(ours, name, upper, armed, message):
    solution = ours(name) if name == "yahtzee" else solve(ODD.get(name, name), cache=False)
    all_open = solution.rules.all_open
    for query in (solution.q_values, solution.values, solution.best_action):
        with pytest.raises(ValueError, match=message):
            query(0, 2, all_open, upper, armed)


@pytest.mark.parametrize(
    ("name", "upper", "armed", "message"),
    [
        ("yahtzee", 64, False, r"upper must be an int in 0..63 \(the upper subtotal, capped at the bonus threshold\)"),
        ("yahtzee", True, False, "upper must be an int in 0..63"),
        ("yahtzee", 3.0, False, "upper must be an int in 0..63"),
        ("yahtzee", 0, 2, "armed must be True or False"),
        ("yahtzee", 0, "yes", "armed must be True or False"),
        ("odd_yatzy", 0, True, "armed must be False: rules 'odd_yatzy' have no Yahtzee bonus"),
        ("standard", 1, False, "upper must be 0: rules 'standard' have no upper bonus, got 1"),
    ],
)
def test_action_values_rejects_bad_bonus_states(ours, name, upper, armed, message):
    solution = ours(name) if name == "yahtzee" else solve(ODD.get(name, name), cache=False)
    with pytest.raises(ValueError, match=message):
        solution.action_values([1, 2, 3, 4, 5], 1, solution.rules.all_open, upper=upper, armed=armed)


def test_yacht_queries_take_zero_bonus_states():
    solution = solve("standard", cache=False)
    zeros = np.zeros(3, dtype=np.intp)
    states = (np.array([0, 100, 251]), np.array([0, 1, 2]), np.array([1, 77, 4095]))
    np.testing.assert_array_equal(solution.q_values(*states, zeros, zeros), solution.q_values(*states))
    np.testing.assert_array_equal(solution.best_action(*states, zeros, zeros), solution.best_action(*states))


# --------------------------------------------------------------------------------------------------
# The disk cache
# --------------------------------------------------------------------------------------------------
def test_the_cache_file_holds_the_reachable_start_values(tmp_path, monkeypatch, ours):
    rules = R.get_rules("yahtzee")
    solved = ours("yahtzee")
    monkeypatch.setattr(solver, "_MEMO", {})
    solver._save(solver.cache_path(rules, tmp_path), solved)
    loaded = solve(rules, cache_dir=tmp_path)
    assert loaded.source == "disk" and loaded.keep_values is None
    np.testing.assert_array_equal(loaded.start_values, solved.start_values)  # NaN where no game goes, too
    with np.load(solver.cache_path(rules, tmp_path)) as data:
        assert data["start_values"].shape == (reachable_states(rules).sum(),)
    assert solver.cache_path(rules, tmp_path).name.startswith("yahtzee-")
    assert solver.cache_key("standard") != solver.cache_key(rules)
