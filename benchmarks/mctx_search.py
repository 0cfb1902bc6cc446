"""mctx's Stochastic MuZero search on the true model against the search agent's exact expectimax, on the same dice.

Both use one value: the shipped search agent's network (``search:standard``, ``models/search_standard.npz``: the
points still to come after a turn's pick, a relu MLP of the open boxes), ported to JAX here (checked against the
numpy network on all 4,095 open sheets before anything is played). ``search:standard`` plays each turn by the exact
expectimax over its dice, its picks worth their points plus that value. The ``mctx:N`` agents run
``mctx.stochastic_muzero_policy`` with ``N`` simulations on :func:`yacht_env.jax.mctx_model` (the rules' exact
transitions and chance probabilities; no root noise) and play the most visited action, with these values:

* a decision node: the best pick now (its points plus the network's value of the sheet after it);
* an afterstate after a pick: the network's value of its sheet (the pick's points are mctx's reward);
* an afterstate after a keep: the mean over the rolls that can fall of the best pick right after them.

So the search sees the network only at a turn's end, as the expectimax does, and finds the turn's keeps by sampling
the dice. Priors: each action's one-step value over 1 point as logits (a pick's points and value, a keep's mean best
pick after it; ``mctx:1`` plays their argmax, the one-step lookahead the search starts from), or uniform over the legal
actions (``mctx:N:uniform``). Every agent plays games ``0..G-1`` of ``seed`` in
``yacht_lab.measure.evaluation.evaluate``, the dice of ``python evaluate.py --agents search:standard --games G --seed
S`` (its table is printed, with the paired differences); ``--json`` writes the evaluation.

    python benchmarks/mctx_search.py                       # 100 games: mctx:1, 16, 64 and 64 uniform
    python benchmarks/mctx_search.py --games 1000 --simulations 16 --uniform --json out.json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R
from yacht_env.util import atomic_write
from yacht_lab.scripts.cli import OneLineParser, output_file

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RULES = "standard"


def jax_value(network):
    """The search agent's solo network in JAX: ``value(open_mask) -> points still to come`` (float32, any shape).

    Its inputs are :func:`yacht_agents.search.features`' for a Yacht preset (no bonus parts): the open boxes' bits and
    the fraction open; its output times ``POINTS_SCALE`` is points.
    """
    import jax
    import jax.numpy as jnp

    from yacht_agents.search import POINTS_SCALE

    rules = network.rules
    if network.spec.players != 1 or rules.has_bonuses:
        raise ValueError("the port reads a solo network of a preset without bonuses (search:standard)")
    c = rules.num_categories
    bits = jnp.asarray(R.open_bits(c), dtype=jnp.float32)
    layers = [(jnp.asarray(w), jnp.asarray(b)) for w, b in network.layers]

    def value(open_mask):
        x = bits[open_mask]
        h = jnp.concatenate([x, x.sum(axis=-1, keepdims=True) / c], axis=-1)
        for w, b in layers[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = layers[-1]
        return (h @ w + b)[..., 0] * POINTS_SCALE

    return value


def check_port(network, value) -> float:
    """The largest difference, in points, between the port and the numpy network over every open mask but 0."""
    from yacht_agents.search import features

    masks = np.arange(1, 2**network.rules.num_categories)
    zeros = np.zeros_like(masks)
    numpy_values = network(features(network.rules, 1, (masks, zeros, zeros, zeros)))
    return float(np.abs(np.asarray(value(masks), dtype=np.float64) - numpy_values).max())


def value_functions(game, value, temperature: float = 1.0):
    """``(value_fn, afterstate_value_fn, prior_fn)`` for :func:`yacht_env.jax.mctx_model` (the module docstring's)."""
    import jax.numpy as jnp

    rules = game.rules
    scores = jnp.asarray(R.score_table(rules), dtype=jnp.float32)  # (252, C): a pick's points (no bonus, no joker)
    bit = jnp.left_shift(1, jnp.arange(rules.num_categories))
    keep = jnp.asarray(R.KEEP)  # (252, 32): the kept multiset of each keep-mask
    transition = jnp.asarray(R.TRANSITION, dtype=jnp.float32)  # (462, 252): the rolls that follow a kept multiset

    def sheet_value(open_mask):
        return jnp.where(open_mask == 0, 0.0, value(open_mask))  # every box filled: exactly nothing to come

    def pick_values(open_mask):
        """What is still to come after picking each box (``-inf`` where it is filled), its points left out."""
        return jnp.where(open_mask & bit, sheet_value(open_mask & ~bit), -jnp.inf)

    def value_fn(params, state):
        return (scores[state.roll[0]] + pick_values(state.open_mask[0])).max()

    def afterstate_value_fn(params, after):
        state = after.state
        open_mask = state.open_mask[0]
        turn_end = state.rolls_left[0] == R.MAX_ROLLS_LEFT  # a pick: the next turn's first roll is about to fall
        best_now = (scores + pick_values(open_mask)).max(axis=1)  # (252,): the best pick on each roll
        after_keep = game.outcome_probabilities(after) @ best_now
        return jnp.where(turn_end, sheet_value(open_mask), after_keep)

    def prior_fn(params, state):
        """Each action's one-step value (a pick: points and the sheet's value after it; a keep: the mean best pick on
        the rolls that follow), over ``temperature`` points: the logits of a softmax.
        """
        roll, open_mask = state.roll[0], state.open_mask[0]
        best_now = (scores + pick_values(open_mask)).max(axis=1)
        keeps = transition[keep[roll]] @ best_now  # (32,)
        picks = scores[roll] + pick_values(open_mask)
        values = jnp.concatenate([keeps, picks])
        return jnp.where(jnp.isfinite(values), values, 0.0) / temperature  # the model masks the illegal ones

    return value_fn, afterstate_value_fn, prior_fn


class MctxAgent(Agent):
    """``mctx:N``: the most visited action of ``N`` simulations of Stochastic MuZero's search (module docstring).

    Plays batches of up to ``batch`` games (padded to ``batch``, so one compilation serves the whole evaluation).
    """

    def __init__(self, value, simulations: int, batch: int, prior: str = "value", seed: int = 0) -> None:
        import jax
        import mctx

        from yacht_env.jax import YachtGame, mctx_model

        super().__init__(f"mctx:{simulations}" + ("" if prior == "value" else f":{prior}"), RULES)
        self.game = YachtGame(RULES)
        self.batch = batch
        value_fn, afterstate_value_fn, prior_fn = value_functions(self.game, value)
        model = mctx_model(self.game, value_fn, afterstate_value_fn, prior_fn if prior == "value" else None)
        self.key = jax.random.key(seed)

        @jax.jit
        def search(key, states):
            policy = mctx.stochastic_muzero_policy(
                (),
                key,
                model.root((), states),
                model.decision_recurrent_fn,
                model.chance_recurrent_fn,
                num_simulations=simulations,
                invalid_actions=model.invalid_actions(states),
                dirichlet_fraction=0.0,
            )
            return policy.action_weights

        self.search = search

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        import jax
        import jax.numpy as jnp

        from yacht_env.jax import GameState

        n = len(observations)
        state = (np.asarray(x, dtype=np.int32) for x in self.encoder.decode(observations))
        roll, rolls_left, open_mask, upper, armed = (x[np.resize(np.arange(n), self.batch)] for x in state)  # padded
        c = self.rules.num_categories
        opens = (open_mask[:, None] >> np.arange(c) & 1).astype(bool)
        one_player = {
            "roll": roll,
            "rolls_left": rolls_left,
            "open_mask": open_mask,
            "turn": c - opens.sum(axis=1),
            "upper": upper,
            "armed": armed,
            "sheet": np.where(opens, -1, 0)[:, None, :],  # the filled boxes' points do not matter to the search
            "total": np.zeros_like(roll),
        }
        states = GameState(
            **{name: jnp.asarray(x if x.ndim == 3 else x[:, None], dtype=jnp.int32) for name, x in one_player.items()},
            current_player=jnp.zeros(self.batch, dtype=jnp.int32),
            terminated=jnp.zeros(self.batch, dtype=bool),
        )
        self.key, key = jax.random.split(self.key)
        weights = np.asarray(self.search(key, states))[:n]
        return np.where(action_masks, weights, -1.0).argmax(axis=1)


def main() -> None:
    parser = OneLineParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=100, help="games per agent (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="the games' dice, as evaluate.py's --seed (default 0)")
    parser.add_argument(
        "--simulations", type=int, nargs="+", default=[1, 16, 64], help="budgets with the value's priors"
    )
    parser.add_argument("--uniform", type=int, nargs="*", default=[64], help="budgets with uniform priors")
    parser.add_argument("--json", type=output_file, help="write the evaluation here (checked before the games)")
    args = parser.parse_args()
    if args.games < 1 or args.seed < 0 or min(args.simulations + args.uniform) < 1:
        parser.error("--games and --simulations must be >= 1, --seed >= 0")

    import jax

    from yacht_agents.search import SearchAgent, load_value
    from yacht_lab.measure.evaluation import evaluate, format_report, render_json

    network = load_value("standard")
    value = jax.jit(jax_value(network))
    print(f"the JAX port of search:standard's network: at most {check_port(network, value):.1e} points from numpy's")
    agents = [SearchAgent("standard", RULES, name="search:standard")]
    budgets = [(n, "value") for n in args.simulations] + [(n, "uniform") for n in args.uniform]
    agents += [MctxAgent(value, n, args.games, prior, args.seed) for n, prior in budgets]
    start = time.perf_counter()
    evaluation = evaluate(agents, args.games, args.seed, RULES)
    print(format_report(evaluation))
    print(f"\n{time.perf_counter() - start:.0f} s in all (compilation included), on {jax.devices()[0].platform}")
    if args.json:
        atomic_write(args.json, render_json(evaluation))


if __name__ == "__main__":
    main()
