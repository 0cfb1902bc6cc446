"""Specification of the table view's opponent parts (:class:`yacht_env.encoding.MultiplayerEncoder`): the family's
presets show each opponent's bonus progress between its open boxes and its total; Yacht's presets show what they
always showed, byte for byte."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from yacht_agents.base import outdated_table_view
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, draw_stream

#: Per preset: an opponent's part, and the view's size at 2 and at 3 players.
SIZES = {
    "standard": (13, 79, 92),
    "classic": (13, 79, 92),
    "knizia": (13, 79, 92),
    "yahtzee": (17, 88, 105),  # 13 open bits, upper (2), armed (1), total
    "yahtzee_forced_joker": (17, 88, 105),
    "yahtzee_no_joker": (17, 88, 105),
    "yahtzee_no_bonus": (16, 86, 102),  # no Yahtzee bonus: no armed
    "yatzy": (18, 92, 110),  # 15 open bits, upper (2), total
    "clubhouse": (15, 83, 98),
}

#: sha256 (first 16 hex digits) of every seat's batched view at every step of seeded random games, taken from the
#: encoder before the opponents' bonus progress existed: Yacht's views must not change by a bit.
YACHT_DIGESTS = {
    ("standard", 2): "0eb9bc2a9ea36a48",
    ("standard", 3): "00e69121f6fb45ef",
    ("classic", 2): "cc31662d24e2c9ac",
    ("classic", 3): "aa9171b9473170a9",
    ("knizia", 2): "b0977efa7ac9e418",
    ("knizia", 3): "ba88c6a268ac44a5",
}


def random_games_digest(preset: str, players: int, n: int = 8, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    encoder = MultiplayerEncoder(preset, players)
    table = TableState(preset, players, n)
    streams = draw_stream(rng, preset, n * players)
    table.start(streams.reshape(n, players, *streams.shape[1:]))
    digest = hashlib.sha256()
    playing = np.ones(n, dtype=bool)
    while playing.any():
        for seat in range(players):
            digest.update(encoder.observe(table, np.full(n, seat)).tobytes())
        actions = np.where(table.mask, rng.random(table.mask.shape), -1.0).argmax(axis=1)
        _, over = table.play(actions, playing)
        playing &= ~over
    return digest.hexdigest()[:16]


@pytest.mark.parametrize("preset", SIZES)
def test_each_presets_view_has_its_size(preset):
    opponent, two, three = SIZES[preset]
    views = MultiplayerEncoder(preset, 2), MultiplayerEncoder(preset, 3)
    assert [v.opponent_size for v in views] == [opponent, opponent]
    assert [v.size for v in views] == [two, three] == [v.space.shape[0] for v in views]


@pytest.mark.parametrize(("preset", "players"), YACHT_DIGESTS)
def test_yacht_presets_views_are_byte_identical_to_before(preset, players):
    assert random_games_digest(preset, players) == YACHT_DIGESTS[preset, players]


def hand_built_table(rules: str, states: list[tuple[int, int, int, int]]) -> TableState:
    """One table whose players have the given ``(open_mask, upper, armed, total)``, each showing roll 5 with one
    re-roll left."""
    table = TableState(rules, len(states))
    for game, (open_mask, upper, armed, total) in zip(table.players, states, strict=True):
        game.roll, game.rolls_left = 5, 1
        game.open_mask, game.upper, game.armed, game.total = open_mask, upper, armed, total
    return table


def assert_view(encoder: MultiplayerEncoder, table: TableState, seat: int, tail: list[float]) -> None:
    """Every path to ``seat``'s view (one table, its table and pick parts, a batch of one) is the own game's flat
    observation followed by ``tail`` exactly."""
    own = table.players[seat]
    solo = ObservationEncoder(encoder.rules).flat(own.roll, own.rolls_left, own.open_mask, own.upper, own.armed)
    expected = np.concatenate([solo, np.array(tail, dtype=np.float32)])
    view = encoder.observe(table, seat)
    assert view.dtype == np.float32 and view.shape == (encoder.size,)
    np.testing.assert_array_equal(view, expected)
    np.testing.assert_array_equal(encoder.table_part(table, seat), expected[encoder.solo.size :])
    np.testing.assert_array_equal(encoder.observe(table, seat, pick_part=encoder.pick_part(table, seat)), expected)
    batch = TableState(encoder.rules, encoder.num_players, 1)
    for name in ("roll", "rolls_left", "open_mask", "upper", "armed", "total"):
        getattr(batch.players, name)[:] = [getattr(game, name) for game in table.players]
    np.testing.assert_array_equal(encoder.observe(batch, np.array([seat]))[0], expected)


def test_a_hand_built_yahtzee_table_shows_each_opponents_bonus_progress():
    # Seat 1's view: seat 2, then seat 0. Seat 0 earned the upper bonus (63 of 63) and holds a Yahtzee (armed);
    # seat 2 has 40 of 63 and a zeroed Yahtzee box. max_total is 1575.
    table = hand_built_table(
        "yahtzee",
        [
            (0b1_0000_0000_0011, 63, 1, 300),  # Ones, Twos and Chance open
            (0b1_1111_1111_1111, 0, 0, 0),
            (0b0_0111_1100_0000, 40, 0, 123),  # Three of a Kind .. Large Straight open
        ],
    )
    encoder = MultiplayerEncoder("yahtzee", 3)
    seat2 = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 40 / 63, 0, 0, 123 / 1575]
    seat0 = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 300 / 1575]
    assert_view(encoder, table, 1, [*seat2, *seat0, 0, 1275 / 3150])  # margin (0 - 300 + 1575) / 3150
    view = encoder.decode(encoder.observe(table, 1))
    assert view[:6] == (5, 1, 0b1_1111_1111_1111, 0, 0, 0)
    assert [x.tolist() for x in view[6:]] == [[0b0_0111_1100_0000, 0b1_0000_0000_0011], [123, 300], [40, 63], [0, 1]]


def test_a_hand_built_yatzy_table_shows_the_opponents_upper_progress_only():
    # Yatzy has an upper bonus (50 at 63) and no Yatzy bonus: the opponent's part is 15 open bits, upper, total.
    table = hand_built_table("yatzy", [(0b111_1111_1100_0000, 0, 0, 10), (0b000_0000_0011_1111, 21, 0, 95)])
    encoder = MultiplayerEncoder("yatzy", 2)
    opponent = [1, 1, 1, 1, 1, 1, *[0] * 9, 21 / 63, 0, 95 / 374]
    assert_view(encoder, table, 0, [*opponent, 10 / 374, (10 - 95 + 374) / 748])
    view = encoder.decode(encoder.observe(table, 0))
    assert [x.tolist() for x in view[6:]] == [[0b000_0000_0011_1111], [95], [21], [0]]


def test_a_hand_built_yacht_table_is_the_open_bits_and_total_alone():
    table = hand_built_table("standard", [(0b1111_0000_1111, 0, 0, 80), (0b0000_1111_0000, 0, 0, 150)])
    encoder = MultiplayerEncoder("standard", 2)
    assert_view(encoder, table, 1, [1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 80 / 297, 150 / 297, (150 - 80 + 297) / 594])
    view = encoder.decode(encoder.observe(table, 1))
    assert [x.tolist() for x in view[6:]] == [[0b1111_0000_1111], [80], [0], [0]]


@pytest.mark.parametrize("players", [2, 3])
@pytest.mark.parametrize("preset", ["yahtzee", "yatzy", "yahtzee_no_bonus", "clubhouse", "standard"])
def test_decode_reads_back_every_seats_view_of_any_table(preset, players):
    """``decode(observe(table, seat))`` is the seat's state and each opponent's open mask, total, upper and armed,
    over tables of random states (every subtotal and armed flag the rules have, bonuses earned or not)."""
    rules, n = R.get_rules(preset), 512
    rng = np.random.default_rng(players)
    table = TableState(rules, players, n)
    games, (upper_states, armed_states) = table.players, rules.bonus_shape
    games.roll[:] = rng.integers(0, R.NUM_ROLLS, n * players)
    games.rolls_left[:] = rng.integers(0, R.ROLLS_PER_TURN, n * players)
    games.open_mask[:] = rng.integers(0, rules.all_open + 1, n * players)
    games.upper[:] = rng.integers(0, upper_states, n * players)
    games.armed[:] = rng.integers(0, armed_states, n * players)
    games.total[:] = rng.integers(0, R.max_total(rules) + 1, n * players)
    assert (games.upper == rules.upper_bonus_threshold).any() == bool(rules.upper_bonus)
    encoder = MultiplayerEncoder(rules, players)
    fields = ("roll", "rolls_left", "open_mask", "upper", "armed", "total")
    for seat in range(players):
        view = encoder.decode(encoder.observe(table, np.full(n, seat)))
        own = np.arange(n) * players + seat
        others = np.arange(n)[:, None] * players + (seat + np.arange(1, players)) % players
        for name, got in zip(fields, view[:6], strict=True):
            np.testing.assert_array_equal(got, getattr(games, name)[own])
        for name in ("open", "total", "upper", "armed"):
            got = getattr(view, f"opponent_{name}")
            assert got.dtype == np.intp and got.shape == (n, players - 1)
            np.testing.assert_array_equal(got, getattr(games, "open_mask" if name == "open" else name)[others])


def test_a_model_of_the_family_view_before_the_bonus_progress_is_named_as_such():
    yahtzee = R.get_rules("yahtzee")
    hint = outdated_table_view(yahtzee, 85)  # 69 + 14 + 2: Yahtzee's two-player view before
    assert "85 values is the 2-player table view of the 'yahtzee' rules before it showed each opponent's" in hint
    assert "3-player" in outdated_table_view(yahtzee, 99)
    assert outdated_table_view(yahtzee, 88) == outdated_table_view(yahtzee, 86) == ""  # today's, and no view's
    assert outdated_table_view(R.get_rules("standard"), 79) == ""  # Yacht's view never changed
