"""The JAX core (yacht_env.jax) plays the numpy core's games exactly, and its pgx and gymnax faces keep their contract.

Equality: on shared dice streams (rich in five of a kind, so the bonuses and jokers are met), numpy's
``TableState`` picks random legal actions; the JAX core replays them from the same streams (``step_from_stream``,
under ``jit``, ``vmap`` and ``scan``), and every observation, mask, reward, terminal flag, total and sheet is equal
to numpy's, pick by pick, bit for bit. Skipped without jax (the README's test command does not install it).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from yacht_env import rules as R  # noqa: E402
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder  # noqa: E402
from yacht_env.game import TableState, win_rewards  # noqa: E402
from yacht_env.jax import YachtGame  # noqa: E402
from yacht_env.jax.conformance import JaxCheckError, check_jax_env  # noqa: E402

PRESETS = list(R.PRESETS)


def numpy_games(rules: R.Rules, players: int, tables: int, seed: int):
    """Random legal games of the numpy core: the dice streams and, per step, what it showed and did."""
    rng = np.random.default_rng(seed)
    streams = rng.integers(1, 7, size=(tables, players, *rules.stream_shape))
    five = rng.random(streams.shape[:-1]) < 0.3  # many rows of five of a kind: bonuses and jokers come up
    streams = np.where(five[..., None], streams[..., :1], streams)
    table = TableState(rules, players, tables)
    table.start(R.prefix_codes(streams.reshape(tables, players, -1, R.NUM_DICE)))
    encoder = ObservationEncoder(rules) if players == 1 else MultiplayerEncoder(rules, players)

    def observe():
        if players == 1:
            g = table.players
            return encoder.flat(g.roll, g.rolls_left, g.open_mask, g.upper, g.armed)
        return encoder.observe(table, table.current)

    record = {"obs": [observe()], "mask": [table.mask.copy()], "actions": [], "points": [], "over": []}
    record |= {"totals": [table.totals().copy()], "sheets": [table.sheets.copy()], "seat": [table.current.copy()]}
    over = np.zeros(tables, dtype=bool)
    while not over.all():
        weights = rng.random(table.mask.shape) * table.mask
        weights[:, : R.NUM_KEEPS] *= 1.5  # re-roll often
        actions = weights.argmax(axis=1)
        points, game_over = table.play(actions, ~over)
        over = over | game_over
        for key, value in (("actions", actions), ("points", points), ("over", over), ("obs", observe())):
            record[key].append(value)
        record["mask"].append(table.mask.copy())
        record["totals"].append(table.totals().copy())
        record["sheets"].append(table.sheets.copy())
        record["seat"].append(table.current.copy())
    return streams, {key: np.stack(value) for key, value in record.items()}


def jax_games(game: YachtGame, streams: np.ndarray, actions: np.ndarray):
    """The same games replayed by the JAX core: per step (time first) what it showed and did."""

    def one(stream, acts):
        state = game.init_with_dice(stream[:, 0, 0])

        def view(s):
            return game.observe(s), game.legal_action_mask(s), s.total, s.sheet, s.current_player

        def body(s, action):
            s, points = game.step_from_stream(s, action, stream)
            return s, (*view(s), points, s.terminated)

        return view(state), jax.lax.scan(body, state, acts)[1]

    first, steps = jax.jit(jax.vmap(one, in_axes=(0, 1)))(jnp.asarray(streams), jnp.asarray(actions))
    first = [np.asarray(x)[None] for x in first]
    steps = [np.swapaxes(np.asarray(x), 0, 1) for x in steps]
    names = ("obs", "mask", "totals", "sheets", "seat")
    out = {name: np.concatenate([a, b]) for name, a, b in zip(names, first, steps[:5], strict=True)}
    return out | {"points": steps[5], "over": steps[6]}


def assert_same_games(rules: R.Rules, players: int, tables: int, seed: int) -> None:
    streams, expected = numpy_games(rules, players, tables, seed)
    got = jax_games(YachtGame(rules, players), streams, expected["actions"])
    for name, value in got.items():
        want = expected[name]
        assert value.shape == want.shape, name
        bad = np.argwhere(value != want)
        assert len(bad) == 0, f"{rules.name}, {players} players: {name} differs first at (step, table, ...) {bad[0]}"
    # The games were long and rich: every box filled and, with a Yahtzee bonus, the five-of-a-kind box holding its
    # points in some game (random play seldom earns the upper bonus: the pick table's every entry is numpy's anyway).
    assert expected["over"][-1].all() and (expected["sheets"][-1] >= 0).all()
    if rules.yahtzee_bonus:
        assert (expected["sheets"][-1][..., rules.five_of_a_kind_category] == rules.yacht).any()


@pytest.mark.parametrize("preset", ["standard", "yahtzee_forced_joker"])
def test_the_jax_core_plays_the_numpy_core_exactly(preset):
    assert_same_games(R.PRESETS[preset], 2, 16, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("players", [1, 2, 4])
@pytest.mark.parametrize("preset", PRESETS)
def test_the_jax_core_plays_the_numpy_core_exactly_on_every_preset(preset, players):
    assert_same_games(R.PRESETS[preset], players, 48, seed=players)


def test_the_table_views_totals_and_margin_are_one_division_each():
    # At three seats, inside a scan: each total shown is the float32 nearest to total / max_total and the margin the
    # float32 nearest to (own - best) / (2 max_total) + 1/2, in JAX as in numpy's encoder (one table or a batch).
    rules = R.PRESETS["standard"]
    streams, expected = numpy_games(rules, 3, 24, seed=5)
    got = jax_games(YachtGame(rules, 3), streams, expected["actions"])
    np.testing.assert_array_equal(got["obs"], expected["obs"])
    top, solo, size = R.max_total(rules), ObservationEncoder(rules).size, MultiplayerEncoder(rules, 3).size
    order = (expected["seat"][..., None] + np.arange(3)) % 3  # the viewer, then its opponents in seat order
    totals = np.take_along_axis(expected["totals"], order, axis=-1)
    fraction = (totals / top).astype(np.float32)
    n = rules.num_categories
    np.testing.assert_array_equal(got["obs"][..., [size - 2, solo + n, solo + 2 * n + 1]], fraction)
    margin = ((totals[..., 0] - totals[..., 1:].max(axis=-1) + top) / (2 * top)).astype(np.float32)
    np.testing.assert_array_equal(got["obs"][..., size - 1], margin)
    # The games hold margins that float32 arithmetic on the two rounded totals would miss.
    rounded = (fraction[..., 0] - fraction[..., 1:].max(axis=-1)) / np.float32(2) + np.float32(0.5)
    assert (rounded != margin).mean() > 0.01


@pytest.mark.parametrize("preset", ["yahtzee", "yatzy", "clubhouse", "standard"])
def test_the_table_view_shows_the_opponents_bonus_progress_as_numpy_does(preset):
    # Random play seldom earns an upper bonus: tables of random states (every subtotal and armed flag) instead, each
    # seat's view in JAX equal to numpy's bit for bit, opponents' bonus progress included.
    rules, players, n = R.PRESETS[preset], 3, 64
    rng = np.random.default_rng(7)
    table = TableState(rules, players, n)
    g, (upper_states, armed_states) = table.players, rules.bonus_shape
    g.roll[:] = rng.integers(0, R.NUM_ROLLS, n * players)
    g.rolls_left[:] = rng.integers(0, R.ROLLS_PER_TURN, n * players)
    g.open_mask[:] = rng.integers(1, rules.all_open + 1, n * players)
    g.upper[:] = rng.integers(0, upper_states, n * players)
    g.armed[:] = rng.integers(0, armed_states, n * players)
    g.total[:] = rng.integers(0, R.max_total(rules) + 1, n * players)
    game = YachtGame(rules, players)
    state = game.init_with_dice(jnp.ones((players, R.NUM_DICE), dtype=jnp.int32))
    fields = ("roll", "rolls_left", "open_mask", "upper", "armed", "total")
    states = state._replace(**{name: jnp.asarray(getattr(g, name).reshape(n, players)) for name in fields})
    encoder = MultiplayerEncoder(rules, players)
    axes = jax.tree.map(lambda _: None, state)._replace(**dict.fromkeys(fields, 0))  # a table axis on these
    observe = jax.jit(jax.vmap(game.observe, in_axes=(axes, None)))
    for seat in range(players):
        np.testing.assert_array_equal(np.asarray(observe(states, seat)), encoder.observe(table, np.full(n, seat)))


def test_the_equality_test_can_fail():
    # A game of other rules than numpy's plays differently: the comparison sees it.
    streams, expected = numpy_games(R.PRESETS["standard"], 1, 8, seed=3)
    got = jax_games(YachtGame("classic", 1), streams, expected["actions"])
    assert not np.array_equal(got["obs"], expected["obs"]) or not np.array_equal(got["totals"], expected["totals"])


def test_win_rewards_are_the_numpy_cores():
    from yacht_env.jax import win_rewards as jax_win

    for row in ([10], [10, 10], [3, 9], [5, 5, 1], [7, 2, 7, 1], [4, 4, 4, 4], [1, 2, 3, 4]):
        row = np.array(row)
        assert np.array_equal(np.asarray(jax_win(jnp.asarray(row))), win_rewards(row).astype(np.float32))


def test_the_core_is_pure_and_keyed():
    game = YachtGame("yahtzee", 3)
    a = jax.jit(game.init)(jax.random.key(7))
    b = jax.jit(game.init)(jax.random.key(7))
    c = jax.jit(game.init)(jax.random.key(8))
    assert jax.tree.all(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), a, b))
    assert not np.array_equal(a.roll, c.roll) or not np.array_equal(
        jax.jit(game.step)(a, 0, jax.random.key(1))[0].roll, jax.jit(game.step)(c, 0, jax.random.key(1))[0].roll
    )
    # Per opponent: 13 open bits, upper (2), armed, total.
    assert a.roll.dtype == jnp.int32 and a.sheet.shape == (3, 13) and game.observation_size == 69 + 2 * 17 + 2


def test_an_illegal_action_leaves_the_core_unchanged():
    game = YachtGame("standard", 2)
    state = game.init(jax.random.key(0))
    for action in (R.KEEP_ALL, -1, game.num_actions):
        after, points = game.step(state, action, jax.random.key(1))
        assert jax.tree.all(jax.tree.map(lambda x, y: bool(np.array_equal(x, y)), after, state)) and int(points) == 0


def test_bad_table_sizes_are_refused():
    for players in (0, 11, 2.0):
        with pytest.raises(ValueError, match="num_players"):
            YachtGame("standard", players)


@pytest.mark.parametrize("players", [1, 2])
def test_the_jax_faces_pass_their_conformance_check(players):
    check_jax_env("standard", players, games=8)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_the_jax_faces_pass_their_conformance_check_on_every_preset(preset):
    # One player (both faces) on every preset; three players (pgx) where the sheet, the bonuses or the joker differ.
    check_jax_env(preset, 1, games=16, seed=1)
    if preset in ("yahtzee_forced_joker", "yatzy"):
        check_jax_env(preset, 3, games=16, seed=3, faces=("pgx",))


def test_the_conformance_check_can_fail(monkeypatch):
    from yacht_env.jax import pgx_env

    def lying(self, state, player_id):  # an observation outside [0, 1]
        return self.game.observe(state._game, player_id) * 2.0

    monkeypatch.setattr(pgx_env.YachtPgx, "_observe", lying)
    with pytest.raises(JaxCheckError, match=r"standard, 1 player\(s\), pgx: an observation outside"):
        check_jax_env("standard", 1, games=4, faces=("pgx",))


def test_pgx_face_follows_pgx_conventions():
    from yacht_env.jax import YachtPgx

    env = YachtPgx("standard", 3, reward="win")
    state = jax.jit(env.init)(jax.random.key(0))
    assert (env.id, env.version, env.num_players, env.num_actions) == ("yacht", "v0", 3, 44)
    assert state.observation.shape == (64 + 2 * 13 + 2,) and state.rewards.dtype == jnp.float32
    with pytest.raises(ValueError, match="needs a key"):
        env.step(state, 0)
    with pytest.raises(ValueError, match="reward"):
        YachtPgx("standard", 2, reward="points")


def test_import_yacht_env_does_not_import_jax():
    code = "import sys, yacht_env, yacht_env.env, yacht_env.vector; print('jax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_the_jax_package_stands_on_the_rules_alone():
    # Its modules import jax, numpy, pgx, gymnax (flax: gymnax's dataclasses), the numpy rules and the picture's
    # yacht_env.render (numpy and the rules: the sheet's title and bonus rows); never gymnasium, torch, or a yacht_env
    # module that does (yacht_env itself registers its envs with gymnasium, by design).
    import ast

    from helpers import REPO

    allowed = {"jax", "numpy", "pgx", "gymnax", "flax", "mctx", "yacht_env.rules", "yacht_env.jax", "yacht_env"}
    allowed.add("yacht_env.render")
    allowed.add("yacht_env.registration")  # env_id, the ids' names (gymnasium only inside register_envs: below)
    stdlib = {"__future__", "typing", "collections", "functools", "importlib", "math", "pathlib"}
    for path in sorted((REPO / "yacht_env" / "jax").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module] if node.module != "yacht_env" else [f"yacht_env.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in stdlib or any(
                    name == a or name.startswith(a + ".") for a in allowed - {"yacht_env"}
                ), f"{path.name} imports {name}"
    registration = ast.parse((REPO / "yacht_env" / "registration.py").read_text())
    top = [node for node in registration.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert {getattr(node, "module", None) or node.names[0].name for node in top} == {"__future__", "yacht_env.rules"}
    code = "import sys, yacht_env.jax.pgx_env, yacht_env.jax.conformance; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_pgx_api_test_passes_but_for_its_list_of_pgx_games(monkeypatch):
    # pgx's own conformance test (pgx.api_test), run on YachtPgx: its batched half as it is; its single-game half
    # with the two lines no game outside pgx can pass widened (docs/jax.md says why): the id must be one of pgx's own
    # (its EnvId literal), and pgx 2.4-2.6 draw a random action along axis 1 of one game's mask, which fails on pgx's
    # own games too (tic_tac_toe): here along the last axis, as its batched half does.
    import typing

    import pgx._src.api_test as pgx_api
    from pgx.core import EnvId

    from yacht_env.jax import YachtPgx

    env = YachtPgx("standard", 2)
    pgx_api.api_test_batch(env, num=2)
    with pytest.raises(AssertionError):
        pgx_api._validate_state(jax.jit(env.init)(jax.random.key(0)))
    monkeypatch.setattr(pgx_api, "EnvId", typing.Literal[(*typing.get_args(EnvId), "yacht")])

    def act_randomly(key, mask):
        return jax.random.categorical(key, jnp.log(mask.astype(jnp.float32)), axis=-1)

    monkeypatch.setattr(pgx_api, "act_randomly", jax.jit(act_randomly))
    pgx_api.api_test(YachtPgx("yahtzee", 3, reward="win"), num=2)


SVG = "{http://www.w3.org/2000/svg}"


def pgx_table(rules: str, dice, picks):
    """A YachtPgx state whose players were dealt ``dice`` (one row each) and made ``picks`` with the same dice."""
    from yacht_env.jax import YachtPgx

    env = YachtPgx(rules, len(dice))
    game = env.game.init_with_dice(jnp.asarray(dice))
    for seat, category in enumerate(picks):
        game = env.game.step_with_dice(game, R.NUM_KEEPS + category, jnp.asarray(dice[seat]))[0]
    return env, jax.jit(env.init)(jax.random.key(0)).replace(_game=game)


def test_a_pgx_state_draws_its_dice_and_sheets_as_svg():
    import xml.etree.ElementTree as ET

    env, state = pgx_table("standard", [[6, 6, 6, 6, 6], [5, 4, 3, 2, 1]], [11])  # P1 scores its yacht
    svg = state.to_svg()
    assert state._repr_html_() == svg  # what Jupyter shows
    root = ET.fromstring(svg)
    names = [name.replace("_", " ") for name in env.rules.categories]
    assert [t.text for t in root.iter(f"{SVG}text")] == [
        "Yacht, turn 1/12",
        "P2 to play",
        "2 rolls left",
        *names,
        "total",
        *("P1", "50", "50"),  # the yacht box, the total
        *("P2", "0"),
    ]
    dice = [g for g in root.iter(f"{SVG}g") if g.get("class") == "die"]
    assert [len(die.findall(f"{SVG}circle")) for die in dice] == [1, 2, 3, 4, 5]  # P2's roll, sorted


def test_the_svg_shows_the_bonus_rows_and_the_end_of_a_game():
    import xml.etree.ElementTree as ET

    from yacht_env.jax.svg import table_svg

    env, state = pgx_table("yahtzee", [[6, 6, 6, 6, 6]], [5])  # sixes: 30 toward the upper bonus
    game = state._game._replace(terminated=jnp.bool_(True))
    texts = [t.text for t in ET.fromstring(table_svg(env.rules, game)).iter(f"{SVG}text")]
    assert texts[:2] == ["Yahtzee, turn 2/13", "game over"] and "2 rolls left" not in texts
    assert texts[-5:] == ["P1", "30", "30/63", "0", "30"]  # sixes, the upper bonus's progress, the yahtzee bonus


def test_a_batch_of_pgx_states_is_drawn_in_a_grid_and_the_themes_are_pgx_s(monkeypatch):
    import xml.etree.ElementTree as ET

    from pgx._src.visualizer import global_config

    from yacht_env.jax import YachtPgx
    from yacht_env.jax.svg import THEMES, table_svg, tile_size

    env = YachtPgx("standard", 2)
    batch = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 3))
    width, height = tile_size(env.rules, 2)
    root = ET.fromstring(batch.to_svg(scale=0.5))
    assert (root.get("width"), root.get("height")) == (f"{width:g}", f"{height:g}")  # 2 x 2 tiles, half size
    tiles = [g.get("transform") for g in root if g.tag == f"{SVG}g"]
    assert tiles == ["translate(0,0)", f"translate({width},0)", f"translate(0,{height})"]
    assert THEMES["light"]["paper"] in batch.to_svg() and THEMES["dark"]["paper"] not in batch.to_svg()
    monkeypatch.setattr(global_config, "color_theme", "dark")  # pgx.set_visualization_config's setting
    assert THEMES["dark"]["paper"] in batch.to_svg()
    for bad in ({"color_theme": "sepia"}, {"scale": 0}, {"scale": float("nan")}):
        with pytest.raises(ValueError, match="color_theme|scale"):
            table_svg(env.rules, batch._game, **bad)
