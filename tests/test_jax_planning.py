"""mctx's recurrent functions on the true model (``yacht_env.jax.mctx_model``), as a specification.

* A decision: the afterstate of the JAX core, chance logits whose softmax is the rules' exact roll probabilities
  (``yacht_env.rules.TRANSITION``), the afterstate's value its action's earnings plus the value still to come, by
  default the exact mean of ``value_fn`` over the rolls.
* A chance outcome: the next table, the action's earnings as the reward, discount 1 (solo), +1 / -1 as the turn
  stays or passes (two players), 0 at the end, where the value is 0; priors masked to the legal actions.
* ``mctx.stochastic_muzero_policy`` runs on it in one line (slow: one compilation) and finds what is plain.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
mctx = pytest.importorskip("mctx")
import jax.numpy as jnp  # noqa: E402

from yacht_env import rules as R  # noqa: E402
from yacht_env.jax import GameState, YachtGame, mctx_model  # noqa: E402

STANDARD = R.get_rules("standard")
CATEGORIES = STANDARD.categories
LOWEST = float(jnp.finfo(jnp.float32).min)


def seat(dice, rolls_left: int, open_boxes, total: int = 0, rules: R.Rules = STANDARD) -> dict:
    """One player's part of a table (plain values), its open boxes by name."""
    open_mask = sum(1 << rules.categories.index(name) for name in open_boxes)
    return {
        "roll": R.roll_index(dice) if dice else 0,
        "rolls_left": rolls_left,
        "open_mask": open_mask,
        "turn": rules.num_turns - len(open_boxes) - (not open_boxes),
        "total": total,
        "sheet": [-1 if name in open_boxes else 0 for name in rules.categories],
    }


def table(*seats: dict, current: int = 0) -> GameState:
    """One table of the JAX core from its seats."""
    column = {key: jnp.asarray([s[key] for s in seats], dtype=jnp.int32) for key in seats[0]}
    zeros = jnp.zeros(len(seats), dtype=jnp.int32)
    return GameState(**column, upper=zeros, armed=zeros, current_player=jnp.int32(current), terminated=jnp.bool_(False))


def batch(*tables: GameState) -> GameState:
    return jax.tree.map(lambda *x: jnp.stack(x), *tables)


def action(name: str) -> int:
    return R.PICK_OFFSET + CATEGORIES.index(name)


def zero(params, state):
    return 0.0


def test_bad_arguments_are_one_value_error():
    with pytest.raises(ValueError, match="mctx backs up one scalar value: a solo game or two players, not 3"):
        mctx_model(YachtGame("standard", 3), zero)
    with pytest.raises(ValueError, match="game must be a yacht_env.jax.YachtGame, got str"):
        mctx_model("standard", zero)
    with pytest.raises(ValueError, match="prior_fn must be callable, got int"):
        mctx_model(YachtGame("standard"), zero, prior_fn=3)
    with pytest.raises(ValueError, match="value_fn must be callable"):
        mctx_model(YachtGame("standard"), None)


def test_a_decision_gives_the_exact_chance_and_the_afterstate_value():
    game = YachtGame("standard")
    kept_boxes = lambda params, after: 100.0 * jax.lax.population_count(after.state.open_mask[0])  # noqa: E731
    model = mctx_model(game, zero, afterstate_value_fn=kept_boxes)
    states = batch(
        table(seat([1, 6, 6, 6, 6], 2, ["yacht", "ones"])),
        table(seat([2, 3, 4, 5, 6], 1, ["big_straight", "choice", "ones"])),
        table(seat([3, 3, 3, 5, 5], 0, ["full_house"])),  # the last pick: nothing falls
    )
    keep_sixes = 0b11110  # the four sixes of 1 6 6 6 6
    actions = jnp.array([keep_sixes, action("big_straight"), action("full_house")])
    output, pending = model.decision_recurrent_fn((), jax.random.key(0), actions, states)
    probabilities = np.asarray(jax.nn.softmax(output.chance_logits), dtype=np.float64)
    sixes = R.KEEP[R.roll_index([1, 6, 6, 6, 6]), keep_sixes]
    assert R.KEPT[sixes] == (6, 6, 6, 6)
    np.testing.assert_allclose(probabilities[0], R.TRANSITION[sixes], atol=1e-7)  # one die: six rolls, 1/6 each
    np.testing.assert_allclose(probabilities[1], R.TRANSITION[0], atol=1e-7)  # the next turn's five dice
    np.testing.assert_allclose(probabilities[2], 1 / R.NUM_ROLLS, atol=1e-7)  # nothing falls: uniform, never read
    assert pending.earned.tolist() == [0.0, 30.0, 19.0]
    assert output.afterstate_value.tolist() == [200.0, 30.0 + 200.0, 19.0]  # the game over: its points alone
    assert pending.after.state.terminated.tolist() == [False, False, True]
    assert pending.mover.tolist() == [0, 0, 0]


def test_the_default_afterstate_value_is_the_exact_mean_over_the_rolls():
    game = YachtGame("standard")
    dice_sum = jnp.asarray(R.ROLLS.sum(axis=1), dtype=jnp.float32)
    model = mctx_model(game, lambda params, state: dice_sum[state.roll[0]])
    states = batch(
        table(seat([1, 2, 2, 5, 6], 2, ["choice", "twos"])), table(seat([1, 2, 2, 5, 6], 1, ["twos", "sixes"]))
    )
    keep_twos = 0b00110
    output, _ = model.decision_recurrent_fn((), None, jnp.array([keep_twos, action("twos")]), states)
    # Two twos kept, three dice re-rolled: 4 + 3 x 3.5; a pick (4 points): then five fresh dice, 5 x 3.5.
    np.testing.assert_allclose(np.asarray(output.afterstate_value), [4 + 10.5, 4 + 17.5], rtol=1e-6)


def test_a_chance_outcome_gives_the_next_table_reward_and_discount():
    game = YachtGame("standard")
    model = mctx_model(game, lambda params, state: 7.0, afterstate_value_fn=lambda params, after: 0.0)
    states = batch(table(seat([1, 6, 6, 6, 6], 1, ["yacht", "ones"])), table(seat([6, 6, 6, 6, 6], 0, ["yacht"])))
    _, pending = model.decision_recurrent_fn((), None, jnp.array([0b11110, action("yacht")]), states)
    yacht = R.roll_index([6] * 5)
    output, after = model.chance_recurrent_fn((), None, jnp.array([yacht, 0]), pending)
    assert after.roll[:, 0].tolist() == [yacht, R.roll_index([6] * 5)] and after.rolls_left[:, 0].tolist() == [0, 0]
    assert output.reward.tolist() == [0.0, 50.0]
    assert output.discount.tolist() == [1.0, 0.0] and output.value.tolist() == [7.0, 0.0]  # the end: nothing to come
    legal = np.asarray(jax.vmap(game.legal_action_mask)(after))[0]
    logits = np.asarray(output.action_logits)
    assert (logits[0][legal] == 0.0).all() and (logits[0][~legal] == LOWEST).all()
    assert np.flatnonzero(legal).tolist() == [action("ones"), action("yacht")]
    assert (logits[1] == LOWEST).all()  # over: no action has a prior


def test_two_players_flip_the_value_when_the_turn_passes_and_end_on_the_win_reward():
    game = YachtGame("standard", 2)
    model = mctx_model(game, zero, afterstate_value_fn=lambda params, after: 0.25)
    mid = table(seat([1, 6, 6, 6, 6], 2, ["yacht", "ones"]), seat([1, 1, 1, 1, 1], 2, ["yacht", "twos"]))
    last = table(seat(None, 0, [], total=100), seat([6, 6, 6, 6, 6], 0, ["choice"], total=90), current=1)
    states = batch(mid, mid, last)
    actions = jnp.array([0b11110, action("yacht"), action("choice")])
    output, pending = model.decision_recurrent_fn((), None, actions, states)
    assert pending.earned.tolist() == [0.0, 0.0, 1.0]  # seat 1 ends on 120 against 100: it wins
    assert output.afterstate_value.tolist() == [0.25, 0.25, 1.0]
    outcome, _ = model.chance_recurrent_fn((), None, jnp.array([R.roll_index([6] * 5)] * 3), pending)
    assert outcome.discount.tolist() == [1.0, -1.0, 0.0]  # a keep: the same player; a pick: the opponent's value
    assert outcome.reward.tolist() == [0.0, 0.0, 1.0]


def test_the_root_masks_the_prior_and_values_each_table():
    game = YachtGame("standard")
    prior = lambda params, state: jnp.arange(game.num_actions, dtype=jnp.float32)  # noqa: E731
    model = mctx_model(game, lambda params, state: params * state.rolls_left[0], prior_fn=prior)
    states = batch(table(seat([1, 2, 3, 4, 6], 2, ["ones", "yacht"])), table(seat([1, 2, 3, 4, 6], 0, ["sixes"])))
    root = model.root(10.0, states)
    assert root.value.tolist() == [20.0, 0.0]
    legal = ~np.asarray(model.invalid_actions(states))
    logits = np.asarray(root.prior_logits)
    assert (logits[legal] == np.nonzero(legal)[1]).all() and (logits[~legal] == LOWEST).all()
    assert np.flatnonzero(legal[1]).tolist() == [action("sixes")]


@pytest.mark.slow
def test_stochastic_muzero_searches_the_model_in_one_line():
    """Fresh games get legal actions; five sixes with Yacht and Choice open go to Yacht (50 points against 30); a
    two-player table searches too.
    """
    for players in (1, 2):
        game = YachtGame("standard", players)
        model = mctx_model(game, zero, afterstate_value_fn=lambda params, after: 0.0)
        states = jax.vmap(game.init)(jax.random.split(jax.random.key(0), 3))
        if players == 1:
            plain = table(seat([6, 6, 6, 6, 6], 0, ["yacht", "choice"]))
            states = jax.tree.map(lambda x, y: jnp.concatenate([x, y[None]]), states, plain)

        @jax.jit
        def search(key, states, model=model):
            return mctx.stochastic_muzero_policy(
                (),
                key,
                model.root((), states),
                model.decision_recurrent_fn,
                model.chance_recurrent_fn,
                num_simulations=32,
                invalid_actions=model.invalid_actions(states),
            )

        policy = search(jax.random.key(1), states)
        legal = jax.vmap(game.legal_action_mask)(states)
        assert legal[jnp.arange(len(policy.action)), policy.action].all()
        weights = np.asarray(policy.action_weights)
        assert np.allclose(weights.sum(axis=1), 1.0) and not weights[~np.asarray(legal)].any()
        if players == 1:
            assert int(weights[-1].argmax()) == action("yacht")


@pytest.mark.slow
def test_the_benchmarks_port_is_the_search_agents_network_and_its_values_read_it(tmp_path):
    """``benchmarks/mctx_search.py``: its JAX network is the numpy one on every sheet, its decision value is the best
    pick now, and a tiny run prints the evaluation's table and writes its JSON.
    """
    import importlib.util
    import json
    import subprocess
    import sys

    from helpers import REPO

    from yacht_agents.search import load_value

    spec = importlib.util.spec_from_file_location("mctx_search", REPO / "benchmarks" / "mctx_search.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    network = load_value("standard")
    value = bench.jax_value(network)
    assert bench.check_port(network, value) < 1e-3
    game = YachtGame("standard")
    value_fn, afterstate_value_fn, prior_fn = bench.value_functions(game, value)
    last = table(seat([6, 6, 6, 6, 6], 0, ["yacht", "choice"]))
    yacht_first = 50 + float(value(STANDARD.all_open & (1 << CATEGORIES.index("choice"))))
    choice_first = 30 + float(value(STANDARD.all_open & (1 << CATEGORIES.index("yacht"))))
    assert float(value_fn((), last)) == pytest.approx(max(yacht_first, choice_first), rel=1e-6)
    logits = np.asarray(prior_fn((), last))
    assert logits[action("yacht")] == pytest.approx(yacht_first, rel=1e-6)

    out = tmp_path / "mctx.json"
    args = ["--games", "3", "--simulations", "1", "--uniform", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "mctx_search.py"), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    assert "search:standard" in done.stdout and "mctx:1" in done.stdout and "paired differences" in done.stdout
    assert set(json.loads(out.read_text())["agents"]) == {"search:standard", "mctx:1"}
