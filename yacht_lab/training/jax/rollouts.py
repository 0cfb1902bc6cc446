"""What the JAX trainers play: the solo game and the self-play table, each as ``init``, ``rollout`` and ``evaluate``.

**Solo** (``jax.players: 1``): ``n_envs`` games of the gymnax face (:class:`yacht_env.jax.YachtGymnax`, autoreset
inside), the reward each pick's points times ``reward_scale``. Its evaluation: the mean total of ``eval.games``
greedy games on keys from ``eval.seed`` (the same games for every seed and every evaluation; other keys give the
fresh games the chosen model is measured on).

**A table** (``jax.players: P``, 2..10): ``n_envs`` tables of the JAX core (:class:`yacht_env.jax.YachtGame`), every
seat played by the one network being trained (self-play), each mover seeing its table's view. A seat's reward is
its win reward (:func:`yacht_env.jax.win_rewards`) times ``reward_scale`` at the game's last step, nothing before;
a finished table is dealt again at once. Its evaluation: the greedy learner at one seat against its start (the
parameters the seed began with: the ``init`` model, or its fresh weights) at the others, on ``eval.games`` deals
from ``eval.seed``, each deal played ``P * P`` times with the dice and seats rotated as
:func:`yacht_lab.measure.head_to_head.seating` rotates them (common dice: each seat's dice are its stream of the deal):
the learner's win rate (ties shared; ``1 / P`` is parity) with its 95% interval over deals, its mean total and its
mean margin over the others' mean. No solver value enters either. Both play their games (deals) in chunks
(:func:`in_chunks`), so that an evaluation's memory does not grow with ``eval.games``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from yacht_agents.jax_policy import NetworkSpec, init_params
from yacht_env import rules as R
from yacht_env.jax import YachtGame, YachtGymnax, draw_dice
from yacht_lab.measure.report import Z_95
from yacht_lab.measure.tables import seating
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.jax.learner import Runner, Transition
from yacht_lab.training.schema import eval_chunk


class Play(NamedTuple):
    """A trainer's game: ``init(key, start) -> Runner`` (``start``: parameters to begin from, ``None`` for fresh
    ones), ``rollout(runner) -> (runner, traj, last_value)``, ``evaluate(params, start, root) -> {metric: value}``
    on the games of key ``root`` (the curve's: ``jax.random.key(eval.seed)``), and ``observe(env_state) -> (obs,
    mask)``, what a runner's games show the mover (a checkpoint's must be what its games show).
    """

    init: Callable
    rollout: Callable
    evaluate: Callable
    observe: Callable


def _fresh(key, spec: NetworkSpec, odds_size: int, start):
    """``start``, or new parameters from ``key``."""
    return init_params(key, spec, odds_size) if start is None else start


def _sample(network, params, obs, mask, key):
    """An action drawn from the masked policy, its log-probability and the state's value."""
    logits, value = network(params, obs, mask)
    action = jax.random.categorical(key, logits)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
    return action, log_prob, value


def solo_play(config: TrainConfig, network, spec: NetworkSpec, odds_size: int, adam) -> Play:
    """The solo trainer's game (module docstring)."""
    rules = R.get_rules(config.rules)
    env = YachtGymnax(rules)
    env_params = env.default_params
    n_envs = config.n_envs

    def init(key, start):
        net_key, env_key, key = jax.random.split(key, 3)
        params = _fresh(net_key, spec, odds_size, start)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(env_key, n_envs), env_params)
        return Runner(params, adam.init(params), env_state, obs, jax.vmap(env.action_mask)(env_state), key, params)

    def rollout(runner: Runner):
        def step(carry, _):
            params, env_state, obs, mask, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            action, log_prob, value = _sample(network, params, obs, mask, act_key)
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, n_envs), env_state, action, env_params
            )
            reward = (reward * config.reward_scale)[:, None]
            seat = jnp.zeros(n_envs, jnp.int32)
            transition = Transition(obs, mask, action, log_prob, value, reward, terminated | truncated, seat)
            return (params, env_state, next_obs, info["action_mask"], key), transition

        carry = (runner.params, runner.env_state, runner.obs, runner.mask, runner.key)
        (params, env_state, obs, mask, key), traj = jax.lax.scan(step, carry, None, config.ppo.n_steps)
        last_value = network(params, obs, mask)[1][:, None]
        return runner._replace(env_state=env_state, obs=obs, mask=mask, key=key), traj, last_value

    game = YachtGame(rules, 1)
    steps = rules.num_categories * R.ROLLS_PER_TURN

    def play(params, key):
        init_key, play_key = jax.random.split(key)

        def step(state, key):
            obs, mask = game.observe(state)[None], game.legal_action_mask(state)[None]
            action = network(params, obs, mask)[0].argmax(axis=1)[0]
            return game.step(state, action, key)[0], None

        state, _ = jax.lax.scan(step, game.init(init_key), jax.random.split(play_key, steps))
        return state.total[0]

    def evaluate(params, start, root):
        keys = jax.random.split(root, config.eval.games)
        return {"mean_score": in_chunks(lambda key: play(params, key), keys, eval_chunk(1)).mean()}

    def observe(env_state):
        return jax.vmap(env.get_obs)(env_state), jax.vmap(env.action_mask)(env_state)

    return Play(init, rollout, evaluate, observe)


def table_play(config: TrainConfig, network, spec: NetworkSpec, odds_size: int, adam) -> Play:
    """The self-play table's game (module docstring)."""
    rules = R.get_rules(config.rules)
    p, n_envs = config.jax.players, config.n_envs
    game = YachtGame(rules, p)
    observe, legal = jax.vmap(game.observe), jax.vmap(game.legal_action_mask)

    def init(key, start):
        net_key, env_key, key = jax.random.split(key, 3)
        params = _fresh(net_key, spec, odds_size, start)
        state = jax.vmap(game.init)(jax.random.split(env_key, n_envs))
        return Runner(params, adam.init(params), state, observe(state), legal(state), key, params)

    def rollout(runner: Runner):
        def step(carry, _):
            params, state, obs, mask, key = carry
            seat = state.current_player
            key, act_key, step_key, deal_key = jax.random.split(key, 4)
            action, log_prob, value = _sample(network, params, obs, mask, act_key)
            after, _ = jax.vmap(game.step)(state, action, jax.random.split(step_key, n_envs))
            done = after.terminated
            reward = game.win_rewards(after) * done[:, None] * config.reward_scale
            dealt = jax.vmap(game.init)(jax.random.split(deal_key, n_envs))
            state = jax.tree.map(lambda new, old: jnp.where(_rows(done, old), new, old), dealt, after)
            transition = Transition(obs, mask, action, log_prob, value, reward, done, seat)
            return (params, state, observe(state), legal(state), key), transition

        carry = (runner.params, runner.env_state, runner.obs, runner.mask, runner.key)
        (params, state, obs, mask, key), traj = jax.lax.scan(step, carry, None, config.ppo.n_steps)
        # Each seat's value where the rollout stops, from its own view (a waiting seat's too).
        views = jax.vmap(lambda seat: jax.vmap(game.observe, in_axes=(0, None))(state, seat))(jnp.arange(p))
        values = network(params, views.reshape(p * n_envs, -1), jnp.ones((p * n_envs, rules.num_actions), bool))[1]
        last_value = values.reshape(p, n_envs).T
        return runner._replace(env_state=state, obs=obs, mask=mask, key=key), traj, last_value

    return Play(init, rollout, _table_evaluator(config, game, network), lambda state: (observe(state), legal(state)))


def in_chunks(play: Callable, keys: jax.Array, chunk: int):
    """``jax.vmap(play)(keys)``, ``chunk`` keys at a time (a ``scan`` over whole chunks, then the rest): the same
    values, in memory bounded by the chunk rather than by ``len(keys)``
    (:data:`yacht_lab.training.schema.JAX_EVAL_CHUNK_GAMES`).
    """
    return jax.lax.map(play, keys, batch_size=min(chunk, len(keys)))


def _rows(done: jax.Array, like: jax.Array) -> jax.Array:
    """``done`` ``(n,)`` shaped to select whole rows of ``like`` ``(n, ...)``."""
    return done.reshape(done.shape + (1,) * (like.ndim - 1))


def _table_evaluator(config: TrainConfig, game: YachtGame, network):
    """``evaluate(params, start, root) -> metrics``: the learner against its start (module docstring)."""
    p, rules = game.num_players, game.rules
    agent_at, stream_at = (jnp.asarray(a) for a in seating(p))  # (P * P, P): game d * P + r of a deal
    steps = p * rules.num_categories * R.ROLLS_PER_TURN

    def play(params, start, streams, agents, stream_of):
        dice = streams[stream_of]  # the seats' streams, (P, turns, 3, 5)
        learner = agents == 0

        def step(state, _):
            obs, mask = game.observe(state)[None], game.legal_action_mask(state)[None]
            mine = network(params, obs, mask)[0].argmax(axis=1)[0]
            theirs = network(start, obs, mask)[0].argmax(axis=1)[0]
            action = jnp.where(learner[state.current_player], mine, theirs)
            return game.step_from_stream(state, action, dice)[0], None

        state, _ = jax.lax.scan(step, game.init_with_dice(dice[:, 0, 0]), None, steps)
        winners = state.total == state.total.max()
        share = (winners / winners.sum() * learner).sum()
        own = (state.total * learner).sum()
        return share, own, own - (state.total * ~learner).sum() / (p - 1)

    def deal(params, start, key):
        streams = draw_dice(key, (p, rules.num_turns, R.ROLLS_PER_TURN))
        games = jax.vmap(play, in_axes=(None, None, None, 0, 0))(params, start, streams, agent_at, stream_at)
        return jax.tree.map(jnp.mean, games)

    def evaluate(params, start, root) -> dict[str, Any]:
        deal_keys = jax.random.split(root, config.eval.games)
        share, score, margin = in_chunks(lambda key: deal(params, start, key), deal_keys, eval_chunk(p))
        spread = share.std(ddof=1) if config.eval.games > 1 else jnp.float32(0)
        return {
            "win_rate": share.mean(),
            "win_rate_ci95": Z_95 * spread / np.sqrt(config.eval.games),
            "mean_score": score.mean(),
            "mean_margin": margin.mean(),
        }

    return evaluate
