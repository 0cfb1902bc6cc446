"""PPO on the device: a PureJaxRL-style trainer on the JAX core, solo or at a self-play table, many seeds in one vmap.

It runs the recipe (:class:`yacht_lab.schema.TrainConfig`'s ``ppo``, ``policy``, ``n_envs``, ``reward_scale``,
``eval``) with the network of :mod:`yacht_agents.jax_policy` (the odds come from the rules, never from the solver;
the solver's expectation is only the yardstick of the solo curve's ``percent_of_optimal``), and ``jax.seeds`` seeds
(``seed``, ``seed + 1``, ...) train side by side in one compiled update. It is what ``train.py`` runs for a config
with a ``jax`` section (``configs/jax_ppo.yaml``, ``configs/jax_selfplay.yaml``).

The pieces: :mod:`yacht_lab.jax_learner` (the network a config trains, multi-seat GAE, the PPO loss and update),
:mod:`yacht_lab.jax_rollouts` (the solo game, ``jax.players: 1``, and the self-play table of 2..10 seats on the win
reward, one network in every seat, each with its evaluation); this module runs them and writes the run folder.
``init`` starts every seed from a JAX model (a solo one at a table plays exactly as it did, see
:func:`yacht_agents.jax_policy.table_params`).

The run folder: ``config.yaml``, ``command.txt``, ``learning_curve.csv`` (one row per seed and evaluation: solo, the
mean score and % of optimal; at a table, the win rate against the seed's start, its interval, the mean score and
margin), ``params/seed_<s>.npz`` / ``.json`` (each seed's parameters as data) and ``model.npz`` / ``model.json``
(the seed with the best last evaluation), which ``evaluate.py --agents jax:RUN_FOLDER`` seats.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import yaml

from yacht_agents.jax_policy import NetworkSpec, apply, odds_tables, save_params
from yacht_env import rules as R
from yacht_env.util import atomic_write
from yacht_lab.config import TrainConfig, validated
from yacht_lab.jax_init import start_params
from yacht_lab.jax_learner import make_update, network_spec, optimizer
from yacht_lab.jax_rollouts import solo_play, table_play
from yacht_lab.runs import claim_run_folder, release_run_folder, write_curve

SOLO_FIELDS = ("timesteps", "wall_minutes", "seed", "mean_score", "percent_of_optimal", "steps_per_second")
TABLE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "seed",
    "win_rate",
    "win_rate_ci95",
    "mean_score",
    "mean_margin",
    "steps_per_second",
)
CURVE_FILE = "learning_curve.csv"


def make_trainer(config: TrainConfig):
    """The compiled pieces of a run: ``(init(keys, start) -> runners, update(runners, u) -> (runners, metrics),
    evaluate(params, start) -> {metric: per seed}, spec)``, each over the seeds' leading axis (``start``: the
    parameters every seed begins from, or ``None`` for fresh ones).
    """
    rules = R.get_rules(config.rules)
    spec = network_spec(config)
    odds, where = odds_tables(rules, spec.bonus_odds)

    def network(params, obs, mask):
        return apply(params, spec, odds, where, obs, mask)

    build = table_play if spec.players > 1 else solo_play
    play = build(config, network, spec, odds.chase.shape[-1], optimizer(config))
    update = make_update(config, network, play.rollout)
    return (
        jax.jit(jax.vmap(play.init, in_axes=(0, None))),
        jax.jit(jax.vmap(update, in_axes=(0, None))),
        jax.jit(jax.vmap(play.evaluate)),
        spec,
    )


def train_jax(
    config: TrainConfig, output_dir: str | os.PathLike = "runs", command: str | None = None, progress: bool = True
) -> Path:
    """Trains a config with a ``jax`` section on the device and returns its run folder (module docstring).

    ``max_minutes`` stops the run after the update that passes it (the parameters are saved). The curve's
    ``wall_minutes`` is the time since the run started (compilation and evaluations included); its
    ``steps_per_second`` counts every seed's env steps (the update's whole batch) per second of the last update.

    Raises:
        ValueError: a bad config, an ``init`` that does not fit, or an output folder that cannot be written.
    """
    validated(config)
    if config.jax is None:
        raise ValueError("train_jax trains a config with a jax section (configs/jax_ppo.yaml)")
    table = config.jax.players > 1
    fields, metric = (TABLE_FIELDS, "win_rate") if table else (SOLO_FIELDS, "mean_score")
    optimal = None if table else _optimal(config.rules)  # the solo curve's yardstick only
    seeds = [config.seed + i for i in range(config.jax.seeds)]
    init, update, evaluate, spec = make_trainer(config)
    start_from = start_params(config, spec)
    run_dir, created = claim_run_folder(output_dir, config, name=None)
    try:
        (run_dir / "params").mkdir()
        atomic_write(run_dir / "config.yaml", yaml.safe_dump(config.to_dict(), sort_keys=False))
        atomic_write(run_dir / "command.txt", (command or shlex.join(sys.argv)) + "\n")
    except BaseException:
        release_run_folder(created)
        raise
    runners = init(jnp.stack([jax.random.key(s) for s in seeds]), start_from)
    batch = config.n_envs * config.ppo.n_steps
    num_updates = max(config.total_timesteps // batch, 1)
    every = max(config.eval.every_timesteps // batch, 1)
    rows: list[dict[str, float]] = []
    start, speed = time.time(), 0.0  # wall_minutes: since the start, compilation and evaluations in
    for u in range(num_updates + 1):
        timesteps = u * batch
        out_of_time = config.max_minutes is not None and time.time() - start >= config.max_minutes * 60
        if u % every == 0 or u == num_updates or out_of_time:  # the last row is the saved parameters'
            results = {name: np.asarray(value) for name, value in evaluate(runners.params, runners.start).items()}
            for i, seed in enumerate(seeds):
                row = {"timesteps": timesteps, "wall_minutes": round((time.time() - start) / 60, 4), "seed": seed}
                row.update({name: round(float(value[i]), 4) for name, value in results.items()})
                if optimal is not None:
                    row["percent_of_optimal"] = round(100 * row["mean_score"] / optimal, 4)
                rows.append({**row, "steps_per_second": round(speed, 1)})
            write_curve(run_dir / CURVE_FILE, rows, fields)
            if progress:
                minutes = (time.time() - start) / 60
                best = _best(rows[-len(seeds) :], metric)
                print(f"{timesteps:>11,} steps  {minutes:6.1f} min  {best}  {speed:,.0f} steps/s", flush=True)
        if u == num_updates or out_of_time:
            break
        tick = time.time()
        runners, _ = update(runners, u)
        jax.block_until_ready(runners.params)
        elapsed = time.time() - tick
        speed = batch * len(seeds) / elapsed if u > 0 else 0.0  # the first update includes the compilation
    _save(run_dir, runners.params, spec, seeds, rows, metric)
    return run_dir


def _optimal(rules: str) -> float:
    """The solver's expected solo score: the solo curve's yardstick."""
    from yacht_env.solver import solve

    return solve(R.get_rules(rules)).expected_score


def _best(rows: list[dict[str, float]], metric: str) -> str:
    """The progress line's best seed of one evaluation."""
    best = max(rows, key=lambda row: row[metric])
    if metric == "win_rate":
        return (
            f"best seed {best['seed']}: {100 * best['win_rate']:.2f}% +- {100 * best['win_rate_ci95']:.2f} against "
            f"its start (mean score {best['mean_score']:.2f})"
        )
    return f"best seed {best['seed']}: {best['mean_score']:.2f} ({best['percent_of_optimal']:.2f}% of optimal)"


def _save(run_dir: Path, params, spec: NetworkSpec, seeds: list[int], rows: list[dict[str, float]], metric: str):
    """Every seed's parameters, then ``model.npz``: the seed with the best last evaluation (last: a complete run)."""
    last = {row["seed"]: row[metric] for row in rows}
    for i, seed in enumerate(seeds):
        save_params(run_dir / "params" / f"seed_{seed}.npz", jax.tree.map(lambda x, i=i: x[i], params), spec)
    best = seeds.index(max(seeds, key=lambda seed: last[seed]))
    save_params(run_dir / "model.npz", jax.tree.map(lambda x: x[best], params), spec)
