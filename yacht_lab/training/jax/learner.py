"""The PPO of the JAX trainers: the network a config trains, multi-seat GAE, the clipped loss and one update.

Every JAX trainer (the solo one and the tables', :mod:`yacht_lab.training.jax.rollouts`) plays its rollout its own way
and hands this module a :class:`Transition` per step; the rest is shared. As SB3's MaskablePPO does: linear
learning-rate and entropy schedules over the run (set once per update), Adam (eps 1e-5) with the gradient's global
norm clipped, advantages normalised per minibatch, an unclipped value loss, the entropy of the masked distribution.

**Seats.** A transition belongs to the seat that moved (``seat``; always 0 solo) and credits every seat its reward
of that step (``reward``, ``(..., P)``: solo, the pick's points; at a table, the win rewards at the game's last
step). :func:`advantages` runs GAE along each seat's own decisions: a reverse scan carries, per seat, the value of
its next decision, its advantage there, and the reward it collected since (the end-of-game reward of a seat that
was not on turn at the final step waits there for its last decision). With one seat it is the usual GAE.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from yacht_agents.jax_policy import NetworkSpec
from yacht_env import rules as R
from yacht_env.jax import YachtGame
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.schema import budget_steps, update_steps


class Transition(NamedTuple):
    """One step of a rollout, per game: what the mover saw and did, and what every seat got for it."""

    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array  # (..., P): each seat's reward of this step
    done: jax.Array  # the game ended with this step
    seat: jax.Array  # the mover


class Runner(NamedTuple):
    """What one seed carries from update to update (all of it is a checkpoint's)."""

    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    mask: jax.Array
    key: jax.Array
    start: Any  # the parameters the seed started from (a table run's curve plays against them)


def players(config: TrainConfig) -> int:
    """Seats at the table a JAX config trains (1: solo)."""
    return config.jax.players if config.jax is not None else 1


def network_spec(config: TrainConfig) -> NetworkSpec:
    """The network a config trains: the table view's for a table."""
    rules = R.get_rules(config.rules)
    if config.policy.activation != "relu":
        raise ValueError(f"the JAX trainer's network is relu (policy.activation), got {config.policy.activation!r}")
    return NetworkSpec(
        rules.name,
        YachtGame(rules, players(config)).observation_size,
        rules.num_actions,
        tuple(config.policy.net_arch),
        config.policy.chase_inputs,
        config.policy.keep_head,
        config.policy.bonus_odds,
        players(config),
    )


def num_updates(config: TrainConfig) -> int:
    """Updates of a run: ``total_timesteps`` in batches of ``n_envs * n_steps``, rounded up as every trainer rounds it
    (:func:`yacht_lab.training.schema.budget_steps`).
    """
    return budget_steps(config) // update_steps(config)


def minibatches(config: TrainConfig) -> int:
    """Minibatches of an epoch: whole ``batch_size`` slices of the rollout (at least one)."""
    return max(config.n_envs * config.ppo.n_steps // config.ppo.batch_size, 1)


def optimizer(config: TrainConfig):
    """Adam (eps 1e-5, its learning rate set per update) after clipping the gradient's global norm."""
    return optax.chain(
        optax.clip_by_global_norm(config.ppo.max_grad_norm),
        optax.inject_hyperparams(optax.adam)(learning_rate=config.ppo.learning_rate, eps=1e-5),
    )


def advantages(traj: Transition, last_value: jax.Array, ppo) -> tuple[jax.Array, jax.Array]:
    """GAE(gamma, lambda) along each seat's decisions over a rollout (time first), and the returns the value head
    learns (module docstring). ``last_value``: ``(..., P)``, each seat's value where the rollout stops.
    """
    seats = last_value.shape[-1]

    def step(carry, t: Transition):
        next_value, gae, pending = carry
        going_on = 1.0 - t.done[..., None]  # a game that ends here: each seat's future is its reward only
        next_value, gae, pending = next_value * going_on, gae * going_on, pending * going_on + t.reward
        mine = jax.nn.one_hot(t.seat, seats, dtype=bool)
        delta = (pending * mine).sum(-1) + ppo.gamma * (next_value * mine).sum(-1) - t.value
        adv = delta + ppo.gamma * ppo.gae_lambda * (gae * mine).sum(-1)
        carry = (
            jnp.where(mine, t.value[..., None], next_value),
            jnp.where(mine, adv[..., None], gae),
            jnp.where(mine, 0.0, pending),
        )
        return carry, adv

    zeros = jnp.zeros_like(last_value)
    _, adv = jax.lax.scan(step, (last_value, zeros, zeros), traj, reverse=True)
    return adv, adv + traj.value


def ppo_loss(params, network, ppo, mb: Transition, adv, returns, entropy_coef):
    """SB3's PPO loss of a minibatch: the clipped surrogate, the value's squared error, the masked entropy."""
    logits, value = network(params, mb.obs, mb.mask)
    log_probs = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(log_probs, mb.action[:, None], 1)[:, 0]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratio = jnp.exp(log_prob - mb.log_prob)
    clipped = jnp.clip(ratio, 1 - ppo.clip_range, 1 + ppo.clip_range)
    policy_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
    value_loss = ((returns - value) ** 2).mean()
    entropy = -(jnp.exp(log_probs) * log_probs).sum(axis=1).mean()  # masked actions have probability 0
    return policy_loss + ppo.vf_coef * value_loss - entropy_coef * entropy, (policy_loss, value_loss, entropy)


def make_update(config: TrainConfig, network, rollout):
    """``update(runner, u) -> (runner, metrics)``: one seed's rollout (``rollout(runner) -> (runner, traj,
    last_value)``), then ``n_epochs`` passes of clipped minibatch steps at update ``u``'s learning rate and entropy.
    """
    ppo = config.ppo
    batch = config.n_envs * ppo.n_steps
    count = minibatches(config)
    total = num_updates(config)

    def schedule(start: float, end: float):
        return lambda u: end + (start - end) * (1.0 - u / total)  # SB3's linear schedule, once per update

    learning_rate = schedule(ppo.learning_rate, ppo.learning_rate_final)
    ent_coef = schedule(ppo.ent_coef, ppo.ent_coef_final)
    adam = optimizer(config)
    loss = functools.partial(ppo_loss, network=network, ppo=ppo)

    def update(runner: Runner, u):
        runner, traj, last_value = rollout(runner)
        adv, returns = advantages(traj, last_value, ppo)
        opt_state = runner.opt_state
        opt_state[1].hyperparams["learning_rate"] = learning_rate(u)
        entropy_coef = ent_coef(u)
        flat = jax.tree.map(lambda x: x.reshape(batch, *x.shape[2:]), (traj, adv, returns))

        def epoch(carry, key):
            def minibatch(carry, index):
                params, opt_state = carry
                mb, mb_adv, mb_returns = jax.tree.map(lambda x: x[index], flat)
                grads, aux = jax.grad(loss, has_aux=True)(
                    params, mb=mb, adv=mb_adv, returns=mb_returns, entropy_coef=entropy_coef
                )
                updates, opt_state = adam.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), aux

            order = jax.random.permutation(key, batch)[: count * ppo.batch_size].reshape(count, -1)
            return jax.lax.scan(minibatch, carry, order)

        key, shuffle = jax.random.split(runner.key)
        (params, opt_state), aux = jax.lax.scan(
            epoch, (runner.params, opt_state), jax.random.split(shuffle, ppo.n_epochs)
        )
        metrics = jax.tree.map(lambda x: x[-1].mean(), aux)
        return runner._replace(params=params, opt_state=opt_state, key=key), metrics

    return update
