"""The game's true model as mctx's recurrent functions: Stochastic MuZero's search on the rules, with your own value.

:func:`mctx_model` turns a :class:`~yacht_env.jax.YachtGame` and a value function into what DeepMind's
``mctx.stochastic_muzero_policy`` takes, so a search on the real dice is one call::

    model = mctx_model(YachtGame("standard"), value_fn)
    policy = mctx.stochastic_muzero_policy(params, key, model.root(params, states), model.decision_recurrent_fn,
                                           model.chance_recurrent_fn, num_simulations=64,
                                           invalid_actions=model.invalid_actions(states))

``states`` is a batch of :class:`~yacht_env.jax.GameState` (``jax.vmap(game.init)(keys)``); ``params`` is whatever
your functions read (a network's weights, or ``()``).

The model (what a node is, and the numbers mctx backs up):

* A **decision node** is a table (a ``GameState``). Its value is ``value_fn(params, state)``: what is still to come
  for the player on turn. Solo: the points still to come (bonuses included). Two players: the win reward still to
  come (:func:`~yacht_env.jax.win_rewards`: +1 to win, -1 to lose, 0 for a tie), zero-sum. Its prior is
  ``prior_fn(params, state)`` (logits over the actions; default uniform), always masked to the legal actions.
* An action leads to its **afterstate** (:meth:`YachtGame.afterstate`): the decision taken, the dice not yet fallen.
  Its chance logits are the logs of the exact probabilities of the 252 sorted rolls
  (:meth:`YachtGame.outcome_probabilities`; outcomes that cannot fall get ``log(tiny)``, so mctx's chance selection,
  the argmax of ``probability / (visits + 1)``, never picks one). Its value is what the action earns (solo: its
  points; two players: the mover's win reward if it ended the game) plus ``afterstate_value_fn(params, afterstate)``,
  the value still to come for the player who acted (nothing once the game is over). By default that is the exact
  expectation of ``value_fn`` over the outcomes (252 calls of ``value_fn`` per afterstate: pass your own to be
  faster).
* A **chance outcome** (a sorted roll) gives the next decision node (:meth:`YachtGame.step_outcome`) with the
  action's earnings as mctx's reward, and discount 0 once the game is over, else 1 solo, and at two players +1 while
  the same player is on turn (a keep) and -1 when the turn passes (each value is its own player's: zero-sum).

An action that is not legal at a node inside the tree gets no prior, so mctx's selection (a legal action always has
a positive exploration term) never takes it; if taken it changes nothing. At the root, ``invalid_actions`` masks it.
Tables of three or more players are refused: mctx backs up one scalar, which serves one player or two zero-sum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from yacht_env import rules as R
from yacht_env.jax.core import Afterstate, GameState, YachtGame, win_rewards

ValueFn = Callable[[Any, GameState], jax.Array]
AfterstateValueFn = Callable[[Any, Afterstate], jax.Array]
PriorFn = Callable[[Any, GameState], jax.Array]


class Pending(NamedTuple):
    """A chance node's embedding: the afterstate, what its action earned the mover (mctx's reward once the dice fall;
    float32), and the mover's seat.
    """

    after: Afterstate
    earned: jax.Array
    mover: jax.Array


class MctxModel(NamedTuple):
    """What ``mctx.stochastic_muzero_policy`` takes (module docstring), batched over tables.

    Fields:
        root: ``root(params, states) -> mctx.RootFnOutput``: the masked priors, the values and the states.
        decision_recurrent_fn: mctx's ``(params, key, action, states) -> (DecisionRecurrentFnOutput, Pending)``.
        chance_recurrent_fn: mctx's ``(params, key, outcome, pending) -> (ChanceRecurrentFnOutput, states)``.
        invalid_actions: ``invalid_actions(states) -> bool (B, num_actions)``: mctx's root mask (True: not legal).
        num_chance_outcomes: 252, the sorted rolls.
    """

    root: Callable[[Any, GameState], mctx.RootFnOutput]
    decision_recurrent_fn: Callable[..., tuple[mctx.DecisionRecurrentFnOutput, Pending]]
    chance_recurrent_fn: Callable[..., tuple[mctx.ChanceRecurrentFnOutput, GameState]]
    invalid_actions: Callable[[GameState], jax.Array]
    num_chance_outcomes: int = R.NUM_ROLLS


def mctx_model(
    game: YachtGame,
    value_fn: ValueFn,
    afterstate_value_fn: AfterstateValueFn | None = None,
    prior_fn: PriorFn | None = None,
) -> MctxModel:
    """The true model of ``game`` as mctx's root and recurrent functions (module docstring).

    Args:
        game: The game (solo or two players).
        value_fn: ``(params, state) -> ()`` float: one table's value for the player on turn (solo: points to come;
            two players: win reward to come). Called on one state; the model vmaps it.
        afterstate_value_fn: ``(params, afterstate) -> ()``: the value still to come for the player who acted, its
            action's own earnings left out (solo: the points after this action's). Default: the exact expectation of
            ``value_fn`` over the outcomes.
        prior_fn: ``(params, state) -> (num_actions,)`` logits; default uniform. Masked to the legal actions.

    Raises:
        ValueError: ``game`` is not a :class:`~yacht_env.jax.YachtGame`, it seats three or more players, or a
            function is not callable.
    """
    if not isinstance(game, YachtGame):
        raise ValueError(f"game must be a yacht_env.jax.YachtGame, got {type(game).__name__}")
    if game.num_players > 2:
        raise ValueError(
            f"mctx backs up one scalar value: a solo game or two players, not {game.num_players} "
            "(YachtGame(rules, num_players) with num_players 1 or 2)"
        )
    for name, fn in (("value_fn", value_fn), ("afterstate_value_fn", afterstate_value_fn), ("prior_fn", prior_fn)):
        if not callable(fn) and (fn is not None or name == "value_fn"):
            raise ValueError(f"{name} must be callable, got {type(fn).__name__}")
    search = _Search(game, value_fn, afterstate_value_fn, prior_fn)
    return MctxModel(search.root, search.decision_recurrent_fn, search.chance_recurrent_fn, search.invalid_actions)


class _Search:
    """:func:`mctx_model`'s functions over one game and the user's functions (one table each, vmapped)."""

    def __init__(self, game: YachtGame, value_fn, afterstate_value_fn, prior_fn) -> None:
        self.game, self.value_fn, self.afterstate_value_fn, self.prior_fn = (
            game,
            value_fn,
            afterstate_value_fn,
            prior_fn,
        )
        self.two = game.num_players == 2

    def state_value(self, params, state: GameState) -> jax.Array:
        """``value_fn`` of a table, 0 once the game is over."""
        return jnp.where(state.terminated, 0.0, jnp.asarray(self.value_fn(params, state), jnp.float32))

    def sign(self, pending: Pending, state: GameState) -> jax.Array:
        """Whose value the next node's is, seen from the mover: +1 the mover's own, -1 the opponent's."""
        if not self.two:
            return jnp.float32(1.0)
        return jnp.where(state.current_player == pending.mover, 1.0, -1.0)

    def expected_value(self, params, pending: Pending) -> jax.Array:
        """The exact mean over the outcomes of the next node's value, for the mover."""
        probabilities = self.game.outcome_probabilities(pending.after)
        states = jax.vmap(self.game.step_outcome, in_axes=(None, 0))(pending.after, jnp.arange(R.NUM_ROLLS))
        values = jax.vmap(self.state_value, in_axes=(None, 0))(params, states)
        return (probabilities * values * jax.vmap(self.sign, in_axes=(None, 0))(pending, states)).sum()

    def after_value(self, params, pending: Pending) -> jax.Array:
        """The afterstate's value for the mover: what its action earned, then what is still to come."""
        if self.afterstate_value_fn is None:
            rest = self.expected_value(params, pending)
        else:
            rest = jnp.asarray(self.afterstate_value_fn(params, pending.after), jnp.float32)
        return pending.earned + jnp.where(pending.after.state.terminated, 0.0, rest)

    def logits(self, params, state: GameState) -> jax.Array:
        """The prior's logits, the actions not legal (all, once the game is over) at float32's lowest."""
        game = self.game
        prior = jnp.zeros(game.num_actions) if self.prior_fn is None else self.prior_fn(params, state)
        legal = game.legal_action_mask(state) & ~state.terminated
        return jnp.where(legal, jnp.asarray(prior, jnp.float32), jnp.finfo(jnp.float32).min)

    def decide(self, params, action, state: GameState) -> tuple[mctx.DecisionRecurrentFnOutput, Pending]:
        """One table's action: its afterstate, the chance logits of its outcomes and the afterstate's value."""
        game = self.game
        after, points = game.afterstate(state, action)
        if self.two:
            earned = jnp.where(after.state.terminated, win_rewards(after.state.total)[state.current_player], 0.0)
        else:
            earned = points.astype(jnp.float32)
        pending = Pending(after, earned, state.current_player)
        probabilities = game.outcome_probabilities(after)
        falls = probabilities.sum() > 0
        chance_logits = jnp.where(falls, jnp.log(jnp.maximum(probabilities, jnp.finfo(jnp.float32).tiny)), 0.0)
        value = self.after_value(params, pending)
        return mctx.DecisionRecurrentFnOutput(chance_logits=chance_logits, afterstate_value=value), pending

    def fall(self, params, outcome, pending: Pending) -> tuple[mctx.ChanceRecurrentFnOutput, GameState]:
        """One table's chance outcome: the next decision node, the action's earnings and the discount."""
        state = self.game.step_outcome(pending.after, outcome)
        output = mctx.ChanceRecurrentFnOutput(
            action_logits=self.logits(params, state),
            value=self.state_value(params, state),
            reward=pending.earned,
            discount=jnp.where(state.terminated, 0.0, self.sign(pending, state)),
        )
        return output, state

    def root(self, params, states: GameState) -> mctx.RootFnOutput:
        """The root mctx starts from: a batch of tables, their masked priors and values."""
        prior = jax.vmap(self.logits, in_axes=(None, 0))(params, states)
        value = jax.vmap(self.state_value, in_axes=(None, 0))(params, states)
        return mctx.RootFnOutput(prior_logits=prior, value=value, embedding=states)

    def decision_recurrent_fn(self, params, key, action, states):
        """The decision function mctx calls (the model is exact: ``key`` is not read)."""
        return jax.vmap(self.decide, in_axes=(None, 0, 0))(params, action, states)

    def chance_recurrent_fn(self, params, key, outcome, pending):
        """The chance function mctx calls (``key`` is not read)."""
        return jax.vmap(self.fall, in_axes=(None, 0, 0))(params, outcome, pending)

    def invalid_actions(self, states: GameState) -> jax.Array:
        """The root mask mctx takes, for a batch: True where an action is not legal."""
        return ~jax.vmap(self.game.legal_action_mask)(states)


__all__ = ["MctxModel", "Pending", "mctx_model"]
