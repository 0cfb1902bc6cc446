"""PPO on the device: a PureJaxRL-style trainer of the odds policy on the JAX core, many seeds in one ``vmap``.

One readable file, top to bottom: the rollout (the gymnax face, :class:`yacht_env.jax.YachtGymnax`, stepped by
``scan``), GAE, the clipped PPO update with masks, the evaluation, then the loop that writes the run folder. It runs
the recipe (:class:`yacht_lab.schema.TrainConfig`'s ``ppo``, ``policy``, ``n_envs``, ``reward_scale``, ``eval``)
with the network of :mod:`yacht_agents.jax_policy` (the odds come from the rules, never from the solver; the solver's
expectation is only the yardstick of the curve's ``percent_of_optimal``), and ``jax.seeds`` seeds (``seed``,
``seed + 1``, ...) train side by side in one compiled update. It is what ``train.py`` runs for a config with a
``jax`` section (``configs/jax_ppo.yaml``).

As SB3's MaskablePPO does: linear learning-rate and entropy schedules over the run (set once per update), Adam
(eps 1e-5) with the gradient's global norm clipped, advantages normalised per minibatch, an unclipped value loss,
the entropy of the masked distribution. Rollouts draw their dice from JAX keys; the curve's evaluation plays
``eval.games`` games greedily on keys from ``eval.seed`` (the same games for every seed and every evaluation).

The run folder: ``config.yaml``, ``command.txt``, ``learning_curve.csv`` (one row per seed and evaluation),
``params/seed_<s>.npz`` / ``.json`` (each seed's parameters as data) and ``model.npz`` / ``model.json`` (the seed with
the best last evaluation), which ``evaluate.py --agents jax:RUN_FOLDER`` seats.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from yacht_agents.jax_policy import NetworkSpec, apply, init_params, odds_tables, save_params
from yacht_env import rules as R
from yacht_env.jax import YachtGame, YachtGymnax
from yacht_lab.config import TrainConfig, validated
from yacht_lab.run_context import RunContext
from yacht_lab.trainers import require_trainer

CURVE_FIELDS = ("timesteps", "wall_minutes", "seed", "mean_score", "percent_of_optimal", "steps_per_second")


class Transition(NamedTuple):
    """One step of a rollout, per env."""

    obs: jax.Array
    mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    done: jax.Array


class Runner(NamedTuple):
    """What one seed carries from update to update."""

    params: Any
    opt_state: Any
    env_state: Any
    obs: jax.Array
    mask: jax.Array
    key: jax.Array


def network_spec(config: TrainConfig) -> NetworkSpec:
    """The network a config trains."""
    rules = R.get_rules(config.rules)
    env = YachtGymnax(rules)
    if config.policy.activation != "relu":
        raise ValueError(f"the JAX trainer's network is relu (policy.activation), got {config.policy.activation!r}")
    return NetworkSpec(
        rules.name,
        env.game.observation_size,
        rules.num_actions,
        tuple(config.policy.net_arch),
        config.policy.chase_inputs,
        config.policy.keep_head,
        config.policy.bonus_odds,
    )


def make_trainer(config: TrainConfig):
    """The compiled pieces of a run: ``(init(keys) -> runners, update(runners, u) -> (runners, metrics),
    evaluate(params) -> mean totals, spec)``, each over the seeds' leading axis.
    """
    rules = R.get_rules(config.rules)
    env, params_env = YachtGymnax(rules), YachtGymnax(rules).default_params
    spec = network_spec(config)
    odds, where = odds_tables(rules, spec.bonus_odds)
    ppo, n_envs, n_steps = config.ppo, config.n_envs, config.ppo.n_steps
    batch = n_envs * n_steps
    minibatches = max(batch // ppo.batch_size, 1)
    num_updates = max(config.total_timesteps // batch, 1)

    def network(params, obs, mask):
        return apply(params, spec, odds, where, obs, mask)

    def schedule(start: float, end: float):
        return lambda u: end + (start - end) * (1.0 - u / num_updates)  # SB3's linear schedule, once per update

    learning_rate, ent_coef = (
        schedule(ppo.learning_rate, ppo.learning_rate_final),
        schedule(ppo.ent_coef, ppo.ent_coef_final),
    )
    optimizer = optax.chain(
        optax.clip_by_global_norm(ppo.max_grad_norm),
        optax.inject_hyperparams(optax.adam)(learning_rate=ppo.learning_rate, eps=1e-5),
    )

    def init_one(key):
        net_key, env_key, key = jax.random.split(key, 3)
        params = init_params(net_key, spec, odds.chase.shape[-1])
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(env_key, n_envs), params_env)
        mask = jax.vmap(env.action_mask)(env_state)
        return Runner(params, optimizer.init(params), env_state, obs, mask, key)

    def rollout(runner: Runner):
        def step(carry, _):
            params, env_state, obs, mask, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            logits, value = network(params, obs, mask)
            action = jax.random.categorical(act_key, logits)
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
            next_obs, env_state, reward, terminated, truncated, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, n_envs), env_state, action, params_env
            )
            done = terminated | truncated
            transition = Transition(obs, mask, action, log_prob, value, reward * config.reward_scale, done)
            return (params, env_state, next_obs, info["action_mask"], key), (transition, reward, done, info["total"])

        carry = (runner.params, runner.env_state, runner.obs, runner.mask, runner.key)
        (params, env_state, obs, mask, key), (traj, reward, done, total) = jax.lax.scan(step, carry, None, n_steps)
        _, last_value = network(params, obs, mask)
        return runner._replace(env_state=env_state, obs=obs, mask=mask, key=key), traj, last_value

    def update_one(runner: Runner, u):
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
                loss = functools.partial(ppo_loss, network=network, ppo=ppo)
                grads, aux = jax.grad(loss, has_aux=True)(
                    params, mb=mb, adv=mb_adv, returns=mb_returns, entropy_coef=entropy_coef
                )
                updates, opt_state = optimizer.update(grads, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), aux

            order = jax.random.permutation(key, batch)[: minibatches * ppo.batch_size].reshape(minibatches, -1)
            return jax.lax.scan(minibatch, carry, order)

        key, shuffle = jax.random.split(runner.key)
        (params, opt_state), aux = jax.lax.scan(
            epoch, (runner.params, opt_state), jax.random.split(shuffle, ppo.n_epochs)
        )
        metrics = jax.tree.map(lambda x: x[-1].mean(), aux)
        return runner._replace(params=params, opt_state=opt_state, key=key), metrics

    evaluate_one = _evaluator(config, rules, network)
    return (
        jax.jit(jax.vmap(init_one)),
        jax.jit(jax.vmap(update_one, in_axes=(0, None))),
        jax.jit(jax.vmap(evaluate_one)),
        spec,
    )


def advantages(traj: Transition, last_value: jax.Array, ppo) -> tuple[jax.Array, jax.Array]:
    """GAE(gamma, lambda) over a rollout (time first), and the returns the value head learns."""

    def step(carry, t):
        gae, next_value = carry
        not_done = 1.0 - t.done
        delta = t.reward + ppo.gamma * next_value * not_done - t.value
        gae = delta + ppo.gamma * ppo.gae_lambda * not_done * gae
        return (gae, t.value), gae

    _, adv = jax.lax.scan(step, (jnp.zeros_like(last_value), last_value), traj, reverse=True)
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


def _evaluator(config: TrainConfig, rules: R.Rules, network):
    """``evaluate(params) -> mean total`` of ``eval.games`` greedy games on keys from ``eval.seed``."""
    game = YachtGame(rules, 1)
    eval_keys = jax.random.split(jax.random.key(config.eval.seed), config.eval.games)
    steps = rules.num_categories * R.ROLLS_PER_TURN

    def play(params, key):
        init_key, play_key = jax.random.split(key)

        def step(state, key):
            obs, mask = game.observe(state)[None], game.legal_action_mask(state)[None]
            action = network(params, obs, mask)[0].argmax(axis=1)[0]
            return game.step(state, action, key)[0], None

        state, _ = jax.lax.scan(step, game.init(init_key), jax.random.split(play_key, steps))
        return state.total[0]

    return lambda params: jax.vmap(play, in_axes=(None, 0))(params, eval_keys).mean()


class JaxState:
    """The JAX trainer's :class:`~yacht_lab.run_context.TrainerState`: every seed's runner and the update index.

    It does not checkpoint yet (``checkpoint_suffix`` is ``None``): a stopped run saves its model and says in one line
    that it saved no checkpoint, and ``--resume`` is refused.
    """

    checkpoint_suffix = None

    def __init__(self, runners: Runner | None, batch: int) -> None:
        self.runners, self.batch, self.update = runners, batch, 0

    def progress(self) -> int:
        """Environment steps per seed: updates done times the rollout's batch."""
        return self.update * self.batch

    def save_checkpoint(self, path: Path) -> None:
        """Not yet: ``checkpoint_suffix`` is ``None``."""
        raise NotImplementedError

    def load_checkpoint(self, path: Path) -> None:
        """Not yet: ``checkpoint_suffix`` is ``None``."""
        raise NotImplementedError


def train_jax(config: TrainConfig, output_dir: str | os.PathLike = "runs", **options) -> Path:
    """Trains a config with a ``jax`` section on the device and returns its run folder (module docstring), in a
    :class:`~yacht_lab.run_context.RunContext` (the folder claimed and locked, ``config.yaml``, ``command.txt``, the
    curve, Ctrl-C).

    ``options`` are the run context's (``resume``, ``command``, ``progress``, ``name``, ``rerun``: as
    :func:`yacht_lab.train` takes them). ``max_minutes``, Ctrl-C or SIGTERM stop the run after the update that passes
    it (the parameters are saved). The curve's ``wall_minutes`` is the time since the run started (compilation and
    evaluations included); its ``steps_per_second`` counts every seed's env steps (the update's whole batch) per
    second of the last update.

    Raises:
        ValueError: a bad config (or another trainer's), an output folder that cannot be written, a ``resume``.
    """
    from yacht_env.solver import solve

    validated(config)
    require_trainer(config, "jax_ppo")
    if config.opponents or config.league is not None or config.distill is not None or config.init is not None:
        raise ValueError("the JAX trainer trains solo from fresh weights: no opponents, league, distill or init")
    rules = R.get_rules(config.rules)
    optimal = solve(rules).expected_score  # the yardstick of the curve only
    seeds = [config.seed + i for i in range(config.jax.seeds)]
    batch = config.n_envs * config.ppo.n_steps
    with RunContext(config, output_dir, fields=CURVE_FIELDS, **options) as run:
        init, update, evaluate, spec = make_trainer(config)
        state = JaxState(None, batch)
        run.start(run.restore(state))
        (run.dir / "params").mkdir(exist_ok=True)
        state.runners = init(jnp.stack([jax.random.key(s) for s in seeds]))
        num_updates = max(config.total_timesteps // batch, 1)
        every = max(config.eval.every_timesteps // batch, 1)
        speed = 0.0
        for u in range(num_updates + 1):
            timesteps = u * batch
            stopping = run.should_stop
            if u % every == 0 or u == num_updates or stopping:  # the last row is the saved parameters'
                scores = np.asarray(evaluate(state.runners.params))
                minutes = run.wall_minutes()
                new_rows = [
                    {
                        "timesteps": timesteps,
                        "wall_minutes": round(minutes, 4),
                        "seed": seed,
                        "mean_score": round(float(score), 4),
                        "percent_of_optimal": round(100 * float(score) / optimal, 4),
                        "steps_per_second": round(speed, 1),
                    }
                    for seed, score in zip(seeds, scores, strict=True)
                ]
                run.add_rows(*new_rows)
                if run.show_progress:
                    best = max(new_rows, key=lambda row: row["mean_score"])
                    print(
                        f"{timesteps:>11,} steps  {minutes:6.1f} min  best seed {best['seed']}: "
                        f"{best['mean_score']:.2f} ({best['percent_of_optimal']:.2f}% of optimal)  "
                        f"{speed:,.0f} steps/s",
                        flush=True,
                    )
            if u == num_updates or stopping:
                break
            tick = time.time()
            state.runners, _ = update(state.runners, u)
            jax.block_until_ready(state.runners.params)
            state.update = u + 1
            elapsed = time.time() - tick
            speed = batch * len(seeds) / elapsed if u > 0 else 0.0  # the first update includes the compilation
        run.end(state)
        _save(run.dir, state.runners.params, spec, seeds, run.rows)
    return run.dir


def _save(run_dir: Path, params, spec: NetworkSpec, seeds: list[int], rows: list[dict[str, float]]) -> None:
    """Every seed's parameters, then ``model.npz``: the seed with the best last evaluation (last: a complete run)."""
    last = {row["seed"]: row["mean_score"] for row in rows}
    for i, seed in enumerate(seeds):
        save_params(run_dir / "params" / f"seed_{seed}.npz", jax.tree.map(lambda x, i=i: x[i], params), spec)
    best = seeds.index(max(seeds, key=lambda seed: last[seed]))
    save_params(run_dir / "model.npz", jax.tree.map(lambda x: x[best], params), spec)
