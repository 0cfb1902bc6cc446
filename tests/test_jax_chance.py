"""The JAX core's model for planners (``YachtGame.afterstate``, ``outcome_probabilities``, ``step_outcome``) is the
numpy one (:mod:`yacht_env.chance`): random legal games at batches of tables, the numpy split step by step, the outcomes
drawn from its probabilities, replayed by the JAX split under ``jit``, ``vmap`` and ``scan``; every afterstate's
kept dice, seat, points and probabilities, and every next state, equal. A waiting player's roll is a placeholder
to both (the numpy core's is its stream's, the JAX core's ones: the model deals it at the previous seat's pick), so
only the roll of the player on turn is compared. Skipped without jax.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from yacht_env import chance  # noqa: E402
from yacht_env import rules as R  # noqa: E402
from yacht_env.game import TableState  # noqa: E402
from yacht_env.jax import YachtGame  # noqa: E402

FIELDS = ("rolls_left", "open_mask", "turn", "upper", "armed", "total")


def numpy_split(rules: R.Rules, players: int, tables: int, seed: int):
    """Random legal games played by the numpy split; the streams and, per step, what it showed and did."""
    rng = np.random.default_rng(seed)
    streams = rng.integers(1, 7, size=(tables, players, *rules.stream_shape))
    five = rng.random(streams.shape[:-1]) < 0.3  # many five of a kind: bonuses and jokers come up
    streams = np.where(five[..., None], streams[..., :1], streams)
    state = TableState(rules, players, tables)
    state.start(R.prefix_codes(streams.reshape(tables, players, -1, R.NUM_DICE)))
    rows = np.arange(tables)
    record: dict[str, list] = {key: [] for key in ("actions", "outcomes", "kept", "seat", "points", "probabilities")}
    record |= {key: [] for key in (*FIELDS, "roll", "sheet", "current", "over", "mask")}
    while (state.players.open_mask.reshape(tables, players)[:, -1] != 0).any():
        weights = rng.random(state.mask.shape) * state.mask
        weights[:, : R.NUM_KEEPS] *= 1.5  # re-roll often
        actions = weights.argmax(axis=1)
        after = chance.afterstate(state, actions)
        probabilities = chance.outcome_probabilities(after)
        outcomes = np.array([rng.choice(R.NUM_ROLLS, p=p) if p.any() else 0 for p in probabilities])
        state = chance.step_outcome(after, outcomes)
        games = state.players
        for key, value in (
            ("actions", actions),
            ("outcomes", outcomes),
            ("kept", after.kept),
            ("seat", after.seat),
            ("points", after.points),
            ("probabilities", probabilities),
            ("roll", games.roll.reshape(tables, players)[rows, state.current]),
            ("sheet", state.sheets.copy()),
            ("current", state.current.copy()),
            ("over", games.open_mask.reshape(tables, players)[:, -1] == 0),
            ("mask", state.mask.copy()),
        ):
            record[key].append(value)
        for key in FIELDS:
            record[key].append(getattr(games, key).reshape(tables, players).copy())
    return streams, {key: np.stack(value) for key, value in record.items()}


def jax_split(game: YachtGame, streams: np.ndarray, actions: np.ndarray, outcomes: np.ndarray):
    """The same steps by the JAX split: per step (time first) what it showed and did."""

    def one(stream, acts, outs):
        def body(state, step):
            action, outcome = step
            after, points = game.afterstate(state, action)
            probabilities = game.outcome_probabilities(after)
            state = game.step_outcome(after, outcome)
            shown = {key: getattr(state, key) for key in FIELDS}
            shown |= {"roll": state.roll[state.current_player], "sheet": state.sheet, "current": state.current_player}
            shown |= {"over": state.terminated, "mask": game.legal_action_mask(state)}
            made = {"kept": after.kept, "seat": after.seat, "points": points, "probabilities": probabilities}
            return state, made | shown

        return jax.lax.scan(body, game.init_with_dice(stream[:, 0, 0]), (acts, outs))[1]

    steps = jax.jit(jax.vmap(one, in_axes=(0, 1, 1)))(jnp.asarray(streams), jnp.asarray(actions), jnp.asarray(outcomes))
    return {key: np.swapaxes(np.asarray(value), 0, 1) for key, value in steps.items()}


def assert_same_split(preset: str, players: int, tables: int = 6, seed: int = 0) -> None:
    rules = R.get_rules(preset)
    streams, ours = numpy_split(rules, players, tables, seed)
    theirs = jax_split(YachtGame(rules, players), streams, ours["actions"], ours["outcomes"])
    falls = ours["kept"] >= 0
    assert falls.any() and not falls[-1].any()
    assert np.array_equal(theirs["kept"], ours["kept"])
    assert np.array_equal(theirs["seat"][falls], ours["seat"][falls])
    assert np.array_equal(theirs["points"], ours["points"])
    assert np.array_equal(theirs["probabilities"], ours["probabilities"].astype(np.float32))
    assert np.allclose(theirs["probabilities"][falls].sum(axis=-1), 1, atol=1e-5)
    for key in (*FIELDS, "sheet", "current", "over", "mask"):
        assert np.array_equal(theirs[key], ours[key]), key
    on = ~ours["over"]  # the roll of the player on turn, while the game goes on
    assert np.array_equal(theirs["roll"][on], ours["roll"][on])


@pytest.mark.parametrize(("preset", "players"), [("standard", 2), ("yahtzee_forced_joker", 4), ("yahtzee", 1)])
def test_the_jax_split_is_the_numpy_split(preset, players):
    assert_same_split(preset, players)


@pytest.mark.slow
@pytest.mark.parametrize("players", [1, 2, 4])
@pytest.mark.parametrize("preset", list(R.PRESETS))
def test_the_jax_split_is_the_numpy_split_on_every_preset(preset, players):
    assert_same_split(preset, players, seed=players)


def test_the_split_composes_to_the_cores_step_and_nothing_falls_for_an_illegal_action():
    game = YachtGame("yahtzee", 2)
    step_with_dice, afterstate = jax.jit(game.step_with_dice), jax.jit(game.afterstate)
    step_outcome, outcome_probabilities = jax.jit(game.step_outcome), jax.jit(game.outcome_probabilities)
    state = game.init_with_dice(jnp.array([[6, 6, 6, 6, 6], [1, 2, 3, 4, 5]]))
    dice = jnp.array([3, 1, 4, 1, 5])
    for action, fallen in ((0, [3, 1, 4, 1, 5]), (0b00111, [6, 6, 6, 3, 1])):  # re-roll all; keep three sixes
        stepped, _ = step_with_dice(state, action, dice)
        after, points = afterstate(state, action)
        outcome = R.roll_index(np.array(fallen))
        assert int(points) == 0 and int(after.seat) == 0 and outcome_probabilities(after)[outcome] > 0
        replayed = step_outcome(after, outcome)
        assert all(np.array_equal(a, b) for a, b in zip(replayed, stepped, strict=True))
    # A pick: the next seat's roll falls (the picker's own next roll, which the core deals at once, is a placeholder).
    pick = R.PICK_OFFSET + R.get_rules("yahtzee").five_of_a_kind_category
    stepped, points = step_with_dice(state, pick, dice)
    after, after_points = afterstate(state, pick)
    assert int(points) == int(after_points) == 50 and int(after.seat) == 1 and int(after.kept) == 0
    replayed = step_outcome(after, R.roll_index([1, 2, 3, 4, 5]))
    for name, a, b in zip(stepped._fields, replayed, stepped, strict=True):
        assert np.array_equal(a[1:], b[1:]) if name == "roll" else np.array_equal(a, b), name
    illegal, _ = afterstate(state, 31)  # keep everything: never legal
    assert int(illegal.kept) == -1 and not outcome_probabilities(illegal).any()
    assert all(np.array_equal(a, b) for a, b in zip(step_outcome(illegal, 7), state, strict=True))


def test_the_split_checks_what_it_is_given_eagerly_and_its_dtypes_and_shapes_under_jit():
    """Called eagerly, a bad action or outcome is one ValueError (an unreachable roll in the numpy split's words);
    under ``jit`` and ``vmap`` dtypes and shapes are still checked (they are static), values are not (documented)."""
    game = YachtGame("standard", 2)
    state = game.init_with_dice(jnp.array([[6, 6, 6, 1, 2], [1, 2, 3, 4, 5]]))
    for action in (1.5, True, np.array([1, 2]), None, 44, -1, 2**40):
        with pytest.raises(ValueError, match=r"^action must be one int in 0\.\.43"):
            game.afterstate(state, action)
    for action in (3, np.int64(3), np.array(3), jnp.int32(3)):
        assert int(game.afterstate(state, action)[0].kept) == int(game.afterstate(state, 3)[0].kept)
    batch = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 3))
    with pytest.raises(ValueError, match=r"^afterstate takes one table, got a batch of shape \(3,\): jax.vmap it$"):
        game.afterstate(batch, jnp.zeros(3, jnp.int32))
    assert jax.vmap(game.afterstate)(batch, jnp.zeros(3, jnp.int32))[0].kept.shape == (3,)
    after, _ = game.afterstate(state, 0b11100)  # keeps the three sixes (of the sorted 1, 2, 6, 6, 6)
    for outcome in (252, -1, 1.5, jnp.zeros(3, jnp.int32)):
        with pytest.raises(ValueError, match=r"^outcome must be one int in 0\.\.251"):
            game.step_outcome(after, outcome)
    unreachable = R.roll_index([1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"^roll \(1, 1, 1, 1, 1\) cannot follow keeping \(6, 6, 6\)$"):
        game.step_outcome(after, unreachable)
    nothing, _ = game.afterstate(state, 31)  # illegal: nothing falls, and the outcome is ignored
    assert np.array_equal(game.step_outcome(nothing, 252).roll, state.roll)
    # Under jit: a float or an array is still refused (dtype and shape are static); a value out of range is not.
    with pytest.raises(ValueError, match=r"^action must be one int in 0\.\.43 \(jax.vmap for a batch\), got float32"):
        jax.jit(game.afterstate)(state, 1.5)
    with pytest.raises(ValueError, match=r"^outcome must be one int in 0\.\.251 \(jax.vmap for a batch\), got int32"):
        jax.jit(game.step_outcome)(after, jnp.zeros(2, jnp.int32))
    assert int(jax.jit(game.afterstate)(state, 44)[0].kept) == -1  # out of range under jit: an illegal action
    jax.jit(game.step_outcome)(after, unreachable)  # unchecked under jit: a table no game reaches
