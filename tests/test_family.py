"""The Yacht family (Yahtzee and Scandinavian Yatzy): its rules as data, and every env face on its state.

* The score table, legal picks, bonuses and jokers, checked by hand on the rule texts' cases and against
  ``yatzy-solver``'s rules engine (a Rust implementation no one here wrote): every roll x box, and whole games
  pick by pick through ``Yacht-v0`` (legal keeps and picks, points with bonuses, totals), with dice streams rich
  in five of a kinds so that every joker and bonus case comes up.
* The encoder's contract on the family's state: ``decode(flat(s)) == s`` with ``upper`` and ``armed``.
* The PettingZoo env and the versus env on the family's presets.

The solver's cross-checks against yatzy-solver live in ``tests/test_solver_family.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.game import GameState, draw_stream

FAMILY = ("yahtzee", "yahtzee_forced_joker", "yahtzee_no_joker", "yahtzee_no_bonus", "yatzy")
#: yatzy-solver's variant of each preset (its `Variant` ids).
VARIANTS = {
    "yahtzee": "american",
    "yahtzee_forced_joker": "american+forced-joker",
    "yahtzee_no_joker": "american+no-joker",
    "yahtzee_no_bonus": "american+no-bonus",
    "yatzy": "yatzy-scandinavian",
}
UPPER = ("ones", "twos", "threes", "fours", "fives", "sixes")


def their_names(rules: R.Rules) -> list[str]:
    """Our box names in yatzy-solver's words (its five-of-a-kind box on the American card is `five_of_a_kind`)."""
    return ["five_of_a_kind" if name == "yahtzee" else name for name in rules.categories]


# --------------------------------------------------------------------------------------------------
# 1. The rules, by hand
# --------------------------------------------------------------------------------------------------
def test_the_presets_sheets_and_sizes():
    yahtzee, yatzy = R.get_rules("yahtzee"), R.get_rules("yatzy")
    assert yahtzee.categories == (
        *UPPER,
        "three_of_a_kind",
        "four_of_a_kind",
        "full_house",
        "small_straight",
        "large_straight",
        "yahtzee",
        "chance",
    )
    assert yatzy.categories == (
        *UPPER,
        "one_pair",
        "two_pairs",
        "three_of_a_kind",
        "four_of_a_kind",
        "small_straight",
        "large_straight",
        "full_house",
        "chance",
        "yatzy",
    )
    assert (yahtzee.num_actions, yatzy.num_actions) == (45, 47)
    assert (yahtzee.bonus_shape, yatzy.bonus_shape, R.get_rules("yahtzee_no_bonus").bonus_shape) == (
        (64, 2),
        (64, 1),
        (64, 1),
    )
    assert [R.get_rules(name).joker for name in FAMILY] == ["free", "forced", "none", "none", "none"]
    assert [R.get_rules(name).yahtzee_bonus for name in FAMILY] == [100, 100, 100, 0, 0]
    assert [R.get_rules(name).upper_bonus for name in FAMILY] == [35, 35, 35, 35, 50]
    assert ObservationEncoder("yahtzee").size == 69 and ObservationEncoder("yatzy").size == 72


@pytest.mark.parametrize(
    ("dice", "category", "rules", "points"),
    [
        # Yahtzee: the lower section (RULES in the README).
        ((3, 3, 3, 5, 5), "full_house", "yahtzee", 25),
        ((3, 3, 3, 3, 3), "full_house", "yahtzee", 0),  # a five of a kind is a full house only as a joker
        ((2, 2, 2, 4, 6), "three_of_a_kind", "yahtzee", 16),  # the sum of all five dice
        ((6, 6, 6, 6, 1), "four_of_a_kind", "yahtzee", 25),
        ((1, 2, 3, 4, 6), "small_straight", "yahtzee", 30),  # any four in sequence
        ((3, 4, 5, 6, 6), "small_straight", "yahtzee", 30),
        ((1, 2, 3, 5, 6), "small_straight", "yahtzee", 0),
        ((1, 2, 3, 4, 5), "large_straight", "yahtzee", 40),
        ((2, 3, 4, 5, 6), "large_straight", "yahtzee", 40),
        ((1, 2, 3, 4, 6), "large_straight", "yahtzee", 0),
        ((4, 4, 4, 4, 4), "yahtzee", "yahtzee", 50),
        ((1, 3, 4, 5, 6), "chance", "yahtzee", 19),
        # Scandinavian Yatzy.
        ((6, 6, 5, 5, 1), "one_pair", "yatzy", 12),  # the highest pair
        ((6, 6, 5, 5, 1), "two_pairs", "yatzy", 22),
        ((3, 3, 3, 5, 5), "two_pairs", "yatzy", 16),  # a full house holds two pairs
        ((4, 4, 4, 4, 1), "two_pairs", "yatzy", 0),  # four of a kind is one face, not two pairs
        ((5, 5, 5, 5, 5), "two_pairs", "yatzy", 0),
        ((5, 5, 5, 5, 5), "one_pair", "yatzy", 10),
        ((2, 2, 2, 4, 6), "three_of_a_kind", "yatzy", 6),  # 3 x the face
        ((6, 6, 6, 6, 1), "four_of_a_kind", "yatzy", 24),
        ((1, 2, 3, 4, 5), "small_straight", "yatzy", 15),
        ((2, 3, 4, 5, 6), "small_straight", "yatzy", 0),  # exactly 1-2-3-4-5
        ((2, 3, 4, 5, 6), "large_straight", "yatzy", 20),
        ((3, 3, 3, 5, 5), "full_house", "yatzy", 19),  # the sum
        ((3, 3, 3, 3, 3), "full_house", "yatzy", 0),
        ((3, 3, 3, 3, 3), "yatzy", "yatzy", 50),
        # Clubhouse Games' Yacht Dice (ho94949/yacht-dice).
        ((3, 3, 3, 5, 5), "full_house", "clubhouse", 19),  # the sum
        ((6, 6, 6, 6, 6), "full_house", "clubhouse", 30),  # five of a kind is a full house
        ((4, 4, 4, 4, 1), "four_of_a_kind", "clubhouse", 17),  # the sum of all five dice
        ((6, 6, 6, 6, 6), "four_of_a_kind", "clubhouse", 30),
        ((4, 4, 4, 1, 1), "four_of_a_kind", "clubhouse", 0),
        ((1, 2, 3, 4, 6), "small_straight", "clubhouse", 15),  # any four in sequence
        ((3, 4, 5, 6, 6), "small_straight", "clubhouse", 15),
        ((1, 2, 3, 5, 6), "small_straight", "clubhouse", 0),
        ((2, 3, 4, 5, 6), "large_straight", "clubhouse", 30),
        ((1, 2, 3, 4, 6), "large_straight", "clubhouse", 0),
        ((2, 2, 2, 2, 2), "yacht", "clubhouse", 50),
        ((1, 3, 4, 5, 6), "choice", "clubhouse", 19),
    ],
)
def test_scores_of_the_rule_texts(dice, category, rules, points):
    assert R.score(dice, category, rules) == points


def state(rules: R.Rules, filled: tuple[str, ...]) -> int:
    """The open mask with ``filled`` boxes filled."""
    return rules.all_open & ~sum(1 << rules.categories.index(name) for name in filled)


# (box, points earned, box points) for 3-3-3-3-3 with the Yahtzee box filled (50 or 0) and the threes open or not.
@pytest.mark.parametrize(
    ("preset", "box", "threes_filled", "legal", "earned"),
    [
        # Free joker: any open box; the joker scores in full only once the threes are filled.
        ("yahtzee", 50, False, None, {"threes": 115, "full_house": 100, "small_straight": 100, "chance": 115}),
        ("yahtzee", 50, True, None, {"full_house": 125, "small_straight": 130, "large_straight": 140, "ones": 100}),
        ("yahtzee", 0, True, None, {"full_house": 25, "small_straight": 30, "large_straight": 40, "ones": 0}),
        # Forced joker: the face's upper box if open, else the lower section (jokers in full), never the upper.
        ("yahtzee_forced_joker", 50, False, ("threes",), {"threes": 115}),
        ("yahtzee_forced_joker", 0, False, ("threes",), {"threes": 15}),
        (
            "yahtzee_forced_joker",
            50,
            True,
            ("three_of_a_kind", "four_of_a_kind", "full_house", "small_straight", "large_straight", "chance"),
            {"full_house": 125, "large_straight": 140, "chance": 115},
        ),
        # No joker: the bonus, but the full house and straights score 0.
        ("yahtzee_no_joker", 50, True, None, {"full_house": 100, "large_straight": 100, "chance": 115}),
    ],
)
def test_jokers_and_the_yahtzee_bonus(preset, box, threes_filled, legal, earned):
    rules = R.get_rules(preset)
    filled = ("yahtzee", "threes") if threes_filled else ("yahtzee",)
    open_mask = state(rules, filled)
    roll = R.roll_index((3, 3, 3, 3, 3))
    armed = int(box == 50)
    picks = R.legal_picks(rules, roll, open_mask)
    expected = legal if legal is not None else [c for c in rules.categories if c not in filled]
    assert [c for k, c in enumerate(rules.categories) if picks >> k & 1] == list(expected)
    for name, points in earned.items():
        k = rules.categories.index(name)
        got, held, upper, still_armed = R.pick_outcome(rules, roll, k, open_mask, 0, armed)
        assert got == points, name
        assert held == points - 100 * armed  # the box holds its points; the bonus is the sheet's bonus row
        assert still_armed == armed
        assert upper == (15 if name == "threes" else 0)


def test_the_upper_bonus_is_earned_once_at_the_threshold():
    rules = R.get_rules("yahtzee")
    sixes = rules.categories.index("sixes")
    five_sixes, four_sixes = R.roll_index((6, 6, 6, 6, 6)), R.roll_index((6, 6, 6, 6, 1))
    # 40 + 24 = 64 >= 63: the bonus comes with the pick that crosses, and the subtotal stays capped at 63.
    assert R.pick_outcome(rules, four_sixes, sixes, rules.all_open, 40, 0)[:3] == (24 + 35, 24, 63)
    assert R.pick_outcome(rules, four_sixes, sixes, rules.all_open, 38, 0)[:3] == (24, 24, 62)
    assert R.pick_outcome(rules, four_sixes, sixes, rules.all_open, 63, 0)[:3] == (24, 24, 63)  # earned before
    # A Yahtzee bonus never counts toward the upper subtotal.
    open_mask = state(rules, ("yahtzee",))
    assert R.pick_outcome(rules, five_sixes, sixes, open_mask, 0, 1)[:3] == (130, 30, 30)
    yatzy = R.get_rules("yatzy")
    assert R.pick_outcome(yatzy, four_sixes, 5, yatzy.all_open, 39, 0)[:3] == (24 + 50, 24, 63)


def test_the_box_is_armed_only_by_a_fifty():
    rules = R.get_rules("yahtzee")
    box = rules.five_of_a_kind_category
    assert R.pick_outcome(rules, R.roll_index((2, 2, 2, 2, 2)), box, rules.all_open)[3] == 1
    assert R.pick_outcome(rules, R.roll_index((2, 2, 2, 2, 1)), box, rules.all_open)[3] == 0  # scratched: 0
    assert R.pick_outcome(R.get_rules("yahtzee_no_bonus"), R.roll_index((2, 2, 2, 2, 2)), box, rules.all_open)[3] == 0


def test_bad_family_rules_are_one_clear_error():
    with pytest.raises(ValueError, match="^joker must be 'none', 'free' or 'forced', got 'wild'$"):
        R.Rules("x", categories=R.YAHTZEE_CATEGORIES, joker="wild")
    with pytest.raises(ValueError, match="needs a five-of-a-kind box"):
        R.Rules("x", categories=R.YAHTZEE_CATEGORIES[:-2] + ("chance",), yahtzee_bonus=100)
    with pytest.raises(ValueError, match="needs the six upper boxes"):
        R.Rules("x", categories=("yahtzee", "chance"), joker="free")
    with pytest.raises(ValueError, match="upper_bonus_threshold must be an int in 1..105"):
        R.Rules("x", categories=R.YAHTZEE_CATEGORIES, upper_bonus=35, upper_bonus_threshold=106)
    with pytest.raises(ValueError, match="at most one of"):
        R.Rules("x", categories=("yacht", "yahtzee"))
    with pytest.raises(ValueError, match=r"^full_house must be None \(the sum of the dice\) or an int in 0..1000"):
        R.Rules("x", full_house=True)


# --------------------------------------------------------------------------------------------------
# 2. Against yatzy-solver's rules engine
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ys():
    return pytest.importorskip("yatzy_solver")


@pytest.mark.parametrize("preset", FAMILY)
def test_every_roll_in_every_box_scores_as_yatzy_solver(ys, preset):
    rules, variant = R.get_rules(preset), ys.Variant(VARIANTS[preset])
    assert their_names(rules) == list(variant.categories)
    table = R.score_table(rules)
    theirs = [[variant.score(name, [int(v) for v in dice]) for name in their_names(rules)] for dice in R.ROLLS]
    np.testing.assert_array_equal(table, np.array(theirs))


def five_of_a_kind_stream(rng: np.random.Generator, rules: R.Rules) -> np.ndarray:
    """A dice stream where most first rolls are five of a kind, so jokers and bonuses come up again and again."""
    stream = rng.integers(1, 7, size=rules.stream_shape)
    lucky = rng.random(rules.num_turns) < 0.6
    stream[lucky, 0] = rng.integers(1, 7, size=(int(lucky.sum()), 1))
    return stream


def keep_notation(dice: np.ndarray, mask: int) -> str:
    kept = [int(v) for i, v in enumerate(dice) if mask >> i & 1]
    return "keep " + (" ".join(map(str, kept)) if kept else "-")


@pytest.mark.parametrize("preset", FAMILY)
def test_whole_games_agree_pick_by_pick_with_yatzy_solver(ys, preset):
    """Yacht-v0 and yatzy-solver's Game side by side: at every decision the same legal keeps (as multisets) and
    picks; every pick earns the same points, bonuses included; the same totals at the end."""
    rules, variant = R.get_rules(preset), ys.Variant(VARIANTS[preset])
    names = their_names(rules)
    env = YachtEnv(rules=preset)
    rng = np.random.default_rng(2026)
    picks = jokers = bonuses = upper_bonuses = 0
    for game in range(40):
        stream = five_of_a_kind_stream(rng, rules) if game % 2 else rng.integers(1, 7, size=rules.stream_shape)
        _, info = env.reset(options={"dice_stream": stream})
        theirs = ys.Game(variant)
        terminated = False
        while not terminated:
            dice = info["dice"]
            situation = f"dice {' '.join(map(str, dice))} | rolls {info['rolls_left']} | {theirs.state}"
            legal_theirs = variant.legal_actions(situation)
            mask = info["action_mask"].astype(bool)
            ours = [keep_notation(dice, m) for m in np.flatnonzero(mask[: R.NUM_KEEPS])]
            ours += [f"score {names[k]}" for k in np.flatnonzero(mask[R.PICK_OFFSET :])]
            assert sorted(ours) == sorted(legal_theirs), situation
            action = int(rng.choice(np.flatnonzero(mask)))
            if rng.random() < 0.6:  # pick often, mostly the best-paying box, so bonuses and jokers come up
                legal = np.flatnonzero(mask[R.PICK_OFFSET :])
                game = env._game
                points = R.pick_outcome(rules, game.roll, legal, game.open_mask, game.upper, game.armed)[0]
                best = legal[points == points.max()]
                action = R.PICK_OFFSET + int(rng.choice(best if rng.random() < 0.8 else legal))
            _, reward, terminated, _, info = env.step(action)
            if action >= R.PICK_OFFSET:
                k = action - R.PICK_OFFSET
                earned = theirs.score([int(v) for v in dice], names[k])
                assert reward == earned["total"], situation
                assert info["scores"][k] == earned["points"]
                picks += 1
                bonuses += earned["bonus"] > 0
                upper_bonuses += earned["upper_bonus"] > 0
                jokers += R.FIVE_OF_A_KIND_FACE[R.roll_index(dice)] > 0 and names[k] in ("full_house", "large_straight")
                assert info["total"] == theirs.total
                if rules.upper_bonus:
                    assert info["upper"] == min(
                        sum(int(info["scores"][u]) for u in range(6) if info["scores"][u] >= 0),
                        rules.upper_bonus_threshold,
                    )
        assert theirs.is_over and info["total"] == theirs.total
    assert picks == 40 * rules.num_turns
    assert upper_bonuses > 0 and (bonuses > 0) == (rules.yahtzee_bonus > 0)
    if rules.joker != "none":
        assert jokers > 0


@pytest.mark.parametrize("preset", FAMILY)
def test_batched_games_play_as_one_game_each(preset):
    """The batched transition (the vector env's) and the one-game transition (Yacht-v0's) agree on the family's
    state: upper, armed, sheet, total and legal actions, over many random games rich in five of a kinds."""
    rules = R.get_rules(preset)
    rng = np.random.default_rng(5)
    n = 64
    streams = np.stack([five_of_a_kind_stream(rng, rules) for _ in range(n)])
    codes = R.prefix_codes(streams.reshape(n, -1, R.NUM_DICE))
    batch, singles = GameState(rules, n), [GameState(rules) for _ in range(n)]
    batch.start(codes)
    for single, code in zip(singles, codes, strict=True):
        single.start(code)
    while batch.open_mask.any():
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in batch.mask])
        live = batch.open_mask != 0
        points, _ = batch.play(actions, live)
        for i in np.flatnonzero(live):
            single_points, _ = singles[i].play(int(actions[i]))
            assert points[i] == single_points
        for i, single in enumerate(singles):
            assert (batch.upper[i], batch.armed[i], batch.total[i]) == (single.upper, single.armed, single.total)
            np.testing.assert_array_equal(batch.sheet[i], single.sheet)
            np.testing.assert_array_equal(batch.mask[i], single.mask)


# --------------------------------------------------------------------------------------------------
# 3. The encoder on the family's state
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", FAMILY)
def test_decode_inverts_flat_with_upper_and_armed(preset):
    rules = R.get_rules(preset)
    encoder = ObservationEncoder(rules)
    rng = np.random.default_rng(1)
    size = 5000
    upper_states, armed_states = rules.bonus_shape
    roll = rng.integers(0, R.NUM_ROLLS, size)
    rolls_left = rng.integers(0, 3, size)
    open_mask = rng.integers(0, rules.num_open_masks, size)
    upper = rng.integers(0, upper_states, size)
    armed = rng.integers(0, armed_states, size)
    obs = encoder.flat(roll, rolls_left, open_mask, upper, armed)
    assert obs.shape == (size, encoder.size) and obs.dtype == np.float32
    assert ((obs >= 0) & (obs <= 1)).all()
    decoded = encoder.decode(obs)
    for got, want in zip(decoded, (roll, rolls_left, open_mask, upper, armed), strict=True):
        np.testing.assert_array_equal(got, want)
    one = encoder.flat(int(roll[0]), int(rolls_left[0]), int(open_mask[0]), int(upper[0]), int(armed[0]))
    np.testing.assert_array_equal(one, obs[0])
    assert encoder.decode(one) == tuple(int(v[0]) for v in (roll, rolls_left, open_mask, upper, armed))


def test_the_observation_shows_the_joker_and_the_bonus_state():
    encoder = ObservationEncoder("yahtzee")
    rules = encoder.rules
    layout = encoder.layout
    roll = R.roll_index((3, 3, 3, 3, 3))
    open_mask = state(rules, ("yahtzee", "threes"))
    obs = encoder.flat(roll, 0, open_mask, 45, 1)
    now = dict(zip(rules.categories, obs[layout["score_now"]] * 50, strict=True))
    assert round(now["large_straight"]) == 40 and round(now["full_house"]) == 25  # the joker, in full
    assert now["threes"] == 0 and now["yahtzee"] == 0  # filled boxes show 0
    assert obs[layout["upper"]].tolist() == pytest.approx([45 / 63, 0.0])
    assert obs[layout["armed"]].tolist() == [1.0]
    assert encoder.flat(roll, 0, open_mask, 63, 0)[layout["upper"]].tolist() == [1.0, 1.0]
    assert list(layout)[-2:] == ["upper", "armed"] and layout["armed"].stop == encoder.size == 69


@pytest.mark.parametrize("preset", ["yahtzee", "yatzy"])
def test_dict_observations_carry_the_bonus_state(preset):
    env = YachtEnv(rules=preset, observation_type="dict")
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    assert ("armed" in obs) == (preset == "yahtzee") and obs["upper"] == info["upper"] == 0


# --------------------------------------------------------------------------------------------------
# 4. The multi-agent faces
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["yahtzee_forced_joker", "yatzy"])
def test_pettingzoo_api_test_on_the_family(preset):
    import warnings

    pytest.importorskip("pettingzoo")
    from pettingzoo.test import api_test

    from yacht_env.multiplayer import env as aec_env

    with warnings.catch_warnings():  # api_test's reset(options={"options": 1}) draws no warning from the env
        for advice in ("Observation is not a NumPy array", "Observation space for each agent probably should be"):
            warnings.filterwarnings("ignore", message=advice, category=UserWarning, module="pettingzoo.test")
        api_test(aec_env(num_players=3, rules=preset), num_cycles=300)


@pytest.mark.parametrize("preset", ["yahtzee", "yatzy"])
def test_a_table_game_on_the_family_totals_each_players_rewards(preset):
    pytest.importorskip("pettingzoo")
    from yacht_env.multiplayer import env as aec_env

    env = aec_env(num_players=2, rules=preset)
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    earned = dict.fromkeys(env.agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, info = env.last()
        earned[agent] += reward
        action = None if terminated or truncated else int(rng.choice(np.flatnonzero(observation["action_mask"])))
        env.step(action)
    totals = env.unwrapped._table.totals()
    assert [earned[a] for a in sorted(earned)] == [float(t) for t in totals]


@pytest.mark.parametrize("preset", ["yahtzee_forced_joker", "yatzy"])
def test_versus_env_plays_the_family_with_random_opponents(preset):
    from yacht_env.versus import YachtVersusVectorEnv

    env = YachtVersusVectorEnv(16, opponents=["random", "random"], rules=preset, autoreset_mode="same_step")
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    finished = steps = 0
    while finished < 16 and steps < 5 * R.ROLLS_PER_TURN * R.get_rules(preset).num_turns:
        masks = env.action_masks()
        obs, reward, terminated, truncated, info = env.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        assert ((obs >= 0) & (obs <= 1)).all() and env.observation_space.contains(obs)
        finished += int(terminated.sum())
        steps += 1
    assert finished >= 16 and not truncated.any()


def test_draw_stream_has_the_presets_shape():
    rng = np.random.default_rng(0)
    assert draw_stream(rng, "yatzy").shape == (45, 6) and draw_stream(rng, "yahtzee", 3).shape == (3, 39, 6)
