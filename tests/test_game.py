"""The game core (``yacht_env/game.py``): one state record and one transition under every env.

* A batch of N games and N single games step alike, field by field, over many seeded random games.
* The state's mask is always the legal mask of its state (computed where the state changes).
* Sizes come from the rules: a 13-category preset plays through the envs and the solver with no code change.
* The encoder's ``decode`` is the inverse of ``flat`` over every state (its documented contract).
* The dice streams' one home: parsing, drawing and the numbered game streams.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import yacht_env
from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder, flat_layout
from yacht_env.game import GameState, draw_stream, game_streams, parse_dice_stream
from yacht_env.solver import solve
from yacht_env.vector import YachtVectorEnv

THIRTEEN = R.Rules("thirteen", categories=(*R.CATEGORIES, "three_of_a_kind"))


def uniform_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    return np.where(masks, rng.random(masks.shape), -1.0).argmax(axis=-1)


@pytest.mark.parametrize("rules", ["standard", "classic", THIRTEEN], ids=["standard", "classic", "thirteen"])
@pytest.mark.parametrize("canonical_keeps", [True, False])
def test_batch_and_single_games_step_alike(rules, canonical_keeps):
    """N games in one GameState and N one-game GameStates: same transition, field by field, to the end."""
    n = 64
    rng = np.random.default_rng(7)
    streams = game_streams(3, range(n), rules)
    batch = GameState(rules, n, canonical_keeps)
    batch.start(parse_dice_stream({"dice_stream": streams}, rules, (n,)))
    singles = [GameState(rules, None, canonical_keeps) for _ in range(n)]
    for i, game in enumerate(singles):
        game.start(parse_dice_stream({"dice_stream": streams[i]}, rules))
    totals = np.zeros(n, dtype=np.int64)
    num_turns = R.get_rules(rules).num_turns
    for _ in range(num_turns * R.ROLLS_PER_TURN):
        live = batch.open_mask != 0
        actions = uniform_legal(rng, batch.mask)
        points, finished = batch.play(actions, live)
        totals += points
        for i, game in enumerate(singles):
            if live[i]:
                p, f = game.play(int(actions[i]))
                assert (p, f) == (points[i], finished[i])
                assert type(p) is int and type(f) is bool
            for field in ("roll", "rolls_left", "open_mask", "turn", "total"):
                assert getattr(game, field) == getattr(batch, field)[i], field
            np.testing.assert_array_equal(game.sheet, batch.sheet[i])
            np.testing.assert_array_equal(game.mask, batch.mask[i])
        # The mask is the legal mask of the state, recomputed where the state changed; all True once finished.
        expected = R.legal_action_mask(
            batch.roll, batch.rolls_left, batch.open_mask, canonical_keeps, R.get_rules(rules).num_categories
        )
        expected[batch.open_mask == 0] = True
        np.testing.assert_array_equal(batch.mask, expected)
        assert batch.mask.any(axis=1).all()
    assert (batch.open_mask == 0).all() and (batch.rolls_left == 0).all()
    np.testing.assert_array_equal(batch.total, totals)
    np.testing.assert_array_equal(batch.total, batch.sheet.sum(axis=1))


def test_play_leaves_games_not_taking_their_action_unchanged():
    game = GameState("standard", 4)
    game.start(draw_stream(np.random.default_rng(0), "standard", 4))
    before = {f: np.copy(getattr(game, f)) for f in ("roll", "rolls_left", "open_mask", "turn", "sheet", "total")}
    points, finished = game.play(np.array([0, 32, 33, 43]), np.array([False, True, False, False]))
    assert points[[0, 2, 3]].tolist() == [0, 0, 0] and not finished.any()
    for field, value in before.items():
        np.testing.assert_array_equal(getattr(game, field)[[0, 2, 3]], value[[0, 2, 3]], err_msg=field)
    assert game.sheet[1, 0] == points[1] == R.score_table("standard")[before["roll"][1], 0]


def test_start_deals_only_the_given_games():
    game = GameState("standard", 3)
    game.start(draw_stream(np.random.default_rng(0), "standard", 3))
    game.play(np.array([32, 32, 32]))
    stream = parse_dice_stream({"dice_stream": game_streams(9, [0, 1, 2])}, "standard", (3,))
    game.start(stream[[1]], np.array([1]))
    assert game.open_mask.tolist() == [R.ALL_OPEN - 1, R.ALL_OPEN, R.ALL_OPEN - 1]
    assert game.turn.tolist() == [1, 0, 1] and game.sheet[1].tolist() == [-1] * 12
    assert game.roll[1] == R.roll_index(game_streams(9, [1])[0, 0, 0])


# --------------------------------------------------------------------------------------------------
# Sizes come from the rules
# --------------------------------------------------------------------------------------------------
def test_rules_sizes():
    standard = R.get_rules("standard")
    assert standard.num_categories == standard.num_turns == 12
    assert standard.num_actions == 44 and standard.all_open == 4095 and standard.num_open_masks == 4096
    assert standard.stream_shape == (12, 3, 5) and standard.stream_rows == 36
    assert ObservationEncoder(standard).size == 64 == flat_layout()["open_fraction"].stop
    assert THIRTEEN.num_actions == 45 and THIRTEEN.stream_shape == (13, 3, 5)
    assert ObservationEncoder(THIRTEEN).size == 66


@pytest.mark.parametrize(
    "categories",
    [(), ("ones", "ones"), ("ones", "fiftys"), ["ones"], tuple(f"c{i}" for i in range(33))],
)
def test_bad_categories_raise(categories):
    with pytest.raises(ValueError, match="^categories must be a tuple of 1..32 distinct names"):
        R.Rules("bad", categories=categories)


def test_a_thirteen_category_preset_plays_through_the_envs_and_the_solver():
    """A variant is a preset plus data: no code path knows how many categories there are."""
    env = YachtEnv(rules=THIRTEEN)
    assert env.action_space.n == 45 and env.observation_space.shape == (66,)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    picks, terminated, total = 0, False, 0.0
    while not terminated:
        action = int(uniform_legal(rng, info["action_mask"]))
        obs, reward, terminated, _, info = env.step(action)
        total += reward
        picks += action >= R.PICK_OFFSET
        assert obs.shape == (66,) and info["action_mask"].shape == (45,) and info["scores"].shape == (13,)
    assert picks == 13 and info["illegal_actions"] == 0
    assert (info["scores"] >= 0).all() and total == info["total"] == info["scores"].sum()
    three_of_a_kind = YachtEnv(rules=THIRTEEN).rules.categories.index("three_of_a_kind")
    assert three_of_a_kind == 12
    assert R.score([3, 3, 3, 1, 2], "three_of_a_kind", THIRTEEN) == 12
    assert R.score([3, 3, 1, 1, 2], 12, THIRTEEN) == 0

    vector = YachtVectorEnv(8, rules=THIRTEEN)
    obs, info = vector.reset(seed=1)
    assert obs.shape == (8, 66) and info["action_mask"].shape == (8, 45)
    solution = solve(THIRTEEN, cache=False)
    # A 13th category only adds options: optimal play scores more than on Yacht's 12 (166.96).
    assert solution.expected_score > solve("standard").expected_score + 10
    assert solution.q_values(0, 2, THIRTEEN.all_open).shape == (45,)


def test_no_module_outside_the_rules_layer_hardcodes_yachts_sizes():
    """No literal 12, 44 or 64 (Yacht's categories, actions, observation size) in the env code's logic."""
    root = Path(yacht_env.__file__).parent
    modules = ("env.py", "vector.py", "game.py", "sb3.py", "solver.py", "family_solver.py", "encoding.py")
    for name in (*modules, "opponents.py", "versus.py", "multiplayer.py", "pool.py", "distributions.py"):
        tree = ast.parse((root / name).read_text())
        literals = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value in (12, 44, 64, 51, 36)
        ]
        assert literals == [], f"{name} has size literals {literals}"


# --------------------------------------------------------------------------------------------------
# The encoder's decode is the documented inverse of flat
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rules", ["standard", THIRTEEN], ids=["standard", "thirteen"])
def test_decode_inverts_flat_on_every_roll_and_rolls_left(rules):
    encoder = ObservationEncoder(rules)
    rng = np.random.default_rng(0)
    roll = np.repeat(np.arange(R.NUM_ROLLS), R.ROLLS_PER_TURN * 8)
    rolls_left = np.tile(np.repeat(np.arange(R.ROLLS_PER_TURN), 8), R.NUM_ROLLS)
    open_mask = rng.integers(0, encoder.rules.num_open_masks, size=len(roll))
    decoded = encoder.decode(encoder.flat(roll, rolls_left, open_mask))
    np.testing.assert_array_equal(decoded.roll, roll)
    np.testing.assert_array_equal(decoded.rolls_left, rolls_left)
    np.testing.assert_array_equal(decoded.open_mask, open_mask)
    assert encoder.decode(encoder.flat(5, 1, 7)) == (5, 1, 7, 0, 0)  # one observation: ints (no upper, armed)


@pytest.mark.parametrize("rules", ["standard", THIRTEEN], ids=["standard", "thirteen"])
def test_one_states_flat_is_the_batchs_byte_for_byte(rules):
    """The one-state path (Python ints: the single env's, from rows made once) gives the batched path's float32
    observation exactly, for every roll and rolls left, each with many open masks."""
    encoder = ObservationEncoder(rules)
    rng = np.random.default_rng(1)
    roll = np.repeat(np.arange(R.NUM_ROLLS), R.ROLLS_PER_TURN * 8)
    rolls_left = np.tile(np.repeat(np.arange(R.ROLLS_PER_TURN), 8), R.NUM_ROLLS)
    open_mask = rng.integers(0, encoder.rules.num_open_masks, size=len(roll))
    batch = encoder.flat(roll, rolls_left, open_mask)
    states = zip(roll.tolist(), rolls_left.tolist(), open_mask.tolist(), strict=True)
    for state, expected in zip(states, batch, strict=True):
        one = encoder.flat(*state)
        assert one.dtype == np.float32 and one.tobytes() == expected.tobytes(), state


def test_decode_inverts_flat_on_every_open_mask():
    encoder = ObservationEncoder()
    open_mask = np.arange(R.NUM_OPEN_MASKS)
    roll = open_mask % R.NUM_ROLLS
    decoded = encoder.decode(encoder.flat(roll, open_mask % 3, open_mask))
    np.testing.assert_array_equal(decoded.open_mask, open_mask)
    np.testing.assert_array_equal(decoded.roll, roll)


def test_decode_rejects_observations_of_another_size():
    with pytest.raises(ValueError, match=r"^expected flat observations of shape \(\.\.\., 64\), got \(66,\)$"):
        ObservationEncoder().decode(np.zeros(66))


# --------------------------------------------------------------------------------------------------
# Dice streams
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (5, "reset options must be a dict"),
        ("dice_stream", "reset options must be a dict"),
        ({"stream": 1}, r"unknown reset options \['stream'\]; accepted: \['dice_stream'\]"),
        ({"dice_stream": np.ones((12, 3, 4), int)}, r"dice_stream must be an int array of shape \(12, 3, 5\)"),
        ({"dice_stream": np.full((12, 3, 5), 7)}, r"dice_stream must be an int array of shape \(12, 3, 5\)"),
        ({"dice_stream": np.ones((12, 3, 5))}, r"dice_stream must be an int array of shape \(12, 3, 5\)"),
        ({"dice_stream": "x"}, r"dice_stream must be an int array of shape \(12, 3, 5\)"),
    ],
)
def test_bad_reset_options_raise_one_clear_error(options, message):
    with pytest.raises(ValueError, match=f"^{message}"):
        parse_dice_stream(options)
    with pytest.raises(ValueError, match=f"^{message}"):
        YachtEnv().reset(options=options)


def test_drawn_and_given_streams_play_alike():
    rng = np.random.default_rng(5)
    codes = draw_stream(rng, "standard")
    dice = R.rows_of_dice(np.random.default_rng(5).integers(0, 7776, size=36)).reshape(12, 3, 5)
    np.testing.assert_array_equal(parse_dice_stream({"dice_stream": dice}), codes)
    assert game_streams(0, range(3), THIRTEEN).shape == (3, 13, 3, 5)


# --------------------------------------------------------------------------------------------------
# Branching a position: take and redeal
# --------------------------------------------------------------------------------------------------
FIELDS = ("roll", "rolls_left", "open_mask", "turn", "total", "upper", "armed", "sheet", "stream", "mask")


def played_tables(rules: str, players: int, n: int, seed: int):
    """A batch of tables played from seeded dice with uniformly random legal moves, each table a random number of
    decisions (0 to past its end: some finished, some at every point of a turn)."""
    from yacht_env.game import TableState

    rng = np.random.default_rng(seed)
    table = TableState(rules, players, n)
    table.start(draw_stream(rng, rules, n * players).reshape(n, players, *table.players.stream.shape[1:]))
    budget = rng.integers(0, 40 * players * table.rules.num_categories // 12, size=n)
    for step in range(budget.max()):
        playing = table.players.open_mask.reshape(n, players).any(axis=1) & (budget > step)
        table.play(uniform_legal(rng, table.mask), playing)
    return table, rng


def table_rows(tables, players: int) -> np.ndarray:
    return (np.asarray(tables)[:, None] * players + np.arange(players)).reshape(-1)


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_taken_tables_are_independent_copies_that_play_as_the_originals(rules):
    table, rng = played_tables(rules, 3, 40, seed=1)
    order = np.array([5, 5, 0, 39, 17])
    copy = table.take(order)
    for name in FIELDS:
        assert np.array_equal(getattr(copy.players, name), getattr(table.players, name)[table_rows(order, 3)]), name
    assert np.array_equal(copy.current, table.current[order])
    assert np.array_equal(copy.sheets, table.sheets[order])
    before = {name: getattr(table.players, name).copy() for name in FIELDS}
    # The copies play on alone (copy 1, of the same table as copy 0, its own moves); the moves of copies 0, 2, 3, 4
    # replayed at a full copy of the batch give the same states there, field by field.
    followed = np.array([0, 2, 3, 4])
    original = table.take(np.arange(40))
    while copy.players.open_mask.any():
        playing = copy.players.open_mask.reshape(5, 3).any(axis=1)
        actions = uniform_legal(rng, copy.mask)
        copy.play(actions, playing)
        at_original = np.zeros(40, dtype=np.intp)
        at_original[order[followed]] = actions[followed]
        legal = np.zeros(40, dtype=bool)
        legal[order[followed]] = playing[followed]
        original.play(at_original, legal)
    assert (copy.players.open_mask == 0).all()
    for name in FIELDS:
        assert np.array_equal(getattr(table.players, name), before[name]), name  # the source never moved
        mine, theirs = getattr(copy.players, name), getattr(original.players, name)
        assert np.array_equal(mine[table_rows(followed, 3)], theirs[table_rows(order[followed], 3)]), name
    assert np.array_equal(copy.current[followed], original.current[order[followed]])


def test_take_and_redeal_refuse_one_table():
    from yacht_env.game import TableState

    with pytest.raises(ValueError, match="holds one table"):
        TableState("standard", 2).take(np.array([0]))
    with pytest.raises(ValueError, match="holds one table"):
        TableState("standard", 2).redeal(np.random.default_rng(0))
    with pytest.raises(ValueError, match="holds one game"):
        GameState("standard").take(np.array([0]))


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_redeal_draws_only_the_dice_still_to_come(rules):
    table, _ = played_tables(rules, 2, 300, seed=2)
    games = table.players
    before = {name: getattr(games, name).copy() for name in FIELDS}
    on_turn = np.zeros(games.num_games, dtype=bool)
    on_turn[table.on_turn] = True
    table.redeal(np.random.default_rng(3))
    finished = before["open_mask"] == 0
    assert finished.any() and (~finished & ~on_turn).any() and (on_turn & (before["rolls_left"] < 2)).any()
    rows = np.arange(games.rules.stream_rows)
    fresh = draw_stream(np.random.default_rng(3), rules, games.num_games)  # one draw per game, in table order
    new_rows, same_rows = 0, 0
    for g in range(games.num_games):
        turn, left = before["turn"][g], before["rolls_left"][g]
        first_new = games.rules.stream_rows if finished[g] else turn * 3 + (3 - left if on_turn[g] else 0)
        kept = rows < first_new
        assert np.array_equal(games.stream[g][kept], before["stream"][g][kept])
        assert np.array_equal(games.stream[g][~kept], fresh[g][~kept])
        new_rows += (~kept).sum()
        same_rows += (games.stream[g][~kept] == before["stream"][g][~kept]).all(axis=1).sum()
    assert new_rows > 3000 and same_rows <= 3  # a fresh row of five dice repeats the old one at 6^-5
    # The player on turn sees the same roll; a waiting player is dealt a new one, from its new stream.
    for name in ("rolls_left", "open_mask", "turn", "total", "upper", "armed", "sheet"):
        assert np.array_equal(getattr(games, name), before[name])
    assert np.array_equal(games.roll[on_turn | finished], before["roll"][on_turn | finished])
    waiting = np.flatnonzero(~on_turn & ~finished)
    assert np.array_equal(
        games.roll[waiting], R.roll_from_code(games.stream[waiting, games.turn[waiting] * 3, R.NUM_DICE])
    )
    assert (games.roll[waiting] != before["roll"][waiting]).mean() > 0.9  # 252 rolls: about 1 in 100 deals the same
    expected = games._legal(games.roll, games.rolls_left, games.open_mask) | (games.open_mask == 0)[:, None]
    assert np.array_equal(games.mask, expected)


def test_redeal_is_seeded():
    a, _ = played_tables("standard", 2, 20, seed=4)
    b = a.take(np.arange(20))
    a.redeal(np.random.default_rng(9))
    b.redeal(np.random.default_rng(9))
    for name in FIELDS:
        assert np.array_equal(getattr(a.players, name), getattr(b.players, name))
