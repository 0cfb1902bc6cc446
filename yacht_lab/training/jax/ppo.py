"""PPO on the device: a PureJaxRL-style trainer on the JAX core, solo or at a self-play table, many seeds in one vmap.

It runs the recipe (:class:`yacht_lab.training.schema.TrainConfig`'s ``ppo``, ``policy``, ``n_envs``, ``reward_scale``,
``eval``) with the network of :mod:`yacht_agents.jax_policy` (the odds come from the rules, never from the solver;
the solver's expectation is only the yardstick of the solo curve's ``percent_of_optimal``), and ``jax.seeds`` seeds
(``seed``, ``seed + 1``, ...) train side by side in one compiled update. It is what ``train.py`` runs for a config
with a ``jax`` section (``configs/jax_ppo.yaml``, ``configs/jax_selfplay.yaml``, the ``_gpu`` presets).

The pieces: :mod:`yacht_lab.training.jax.learner` (the network a config trains, multi-seat GAE, the PPO loss and
update), :mod:`yacht_lab.training.jax.rollouts` (the solo game, ``jax.players: 1``, and the self-play table of 2..10
seats on the win reward, one network in every seat, each with its evaluation), :mod:`yacht_lab.training.jax.init`
(``init``: a solo model starts a table run playing exactly as it did), :mod:`yacht_lab.training.jax.report` (the seeds'
aggregate, the shipped seed measured on fresh games); this module runs them in a
:class:`~yacht_lab.training.run_context.RunContext`.

The run folder: ``config.yaml``, ``command.txt``, ``learning_curve.csv`` (one row per seed and evaluation: solo, the
mean score and % of optimal; at a table, the win rate against the seed's start, its interval, the mean score and
margin), ``aggregate_curve.csv`` (per evaluation, the seeds' median and IQM), ``checkpoints/step_<N>.npz``
(:class:`JaxState`: everything the run needs to go on, as arrays), ``params/seed_<s>.npz`` / ``.json`` (each seed's
parameters as data), ``model.npz`` / ``model.json`` (the seed with the best last evaluation), which ``evaluate.py
--agents jax:RUN_FOLDER`` seats, and ``selection.json`` (that seed's figure on the curve's games and on fresh ones).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from yacht_agents.jax_policy import NetworkSpec, apply, odds_tables, save_params
from yacht_env import rules as R
from yacht_env.util import atomic_output
from yacht_lab.training.config import TrainConfig, validated
from yacht_lab.training.jax.init import start_params
from yacht_lab.training.jax.learner import make_update, network_spec, optimizer
from yacht_lab.training.jax.report import AGGREGATE_FIELDS, AGGREGATE_FILE, SELECTION_FILE, Aggregator, write_selection
from yacht_lab.training.jax.rollouts import solo_play, table_play
from yacht_lab.training.run_context import RunContext, say
from yacht_lab.training.runs import write_curve
from yacht_lab.training.trainers import require_trainer

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
CHECKPOINT_FORMAT = "yacht-rl jax checkpoint 1"


def make_trainer(config: TrainConfig):
    """The compiled pieces of a run: ``(init(keys, start) -> runners, update(runners, u) -> (runners, metrics),
    evaluate(params, start, root) -> {metric: per seed}, spec)``, each over the seeds' leading axis (``start``: the
    parameters every seed begins from, or ``None`` for fresh ones; ``root``: the key of the evaluation's games).
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
        jax.jit(jax.vmap(play.evaluate, in_axes=(0, 0, None))),
        spec,
    )


class JaxState:
    """The JAX trainer's :class:`~yacht_lab.training.run_context.TrainerState`: every seed's runner (parameters,
    optimizer state, env states, observations, masks, keys, start parameters) and the update index.

    A checkpoint is one ``.npz`` of arrays (read with ``allow_pickle=False``): each leaf of the runners under its
    pytree path (``params/pi/0/w``; keys as their raw ``uint32`` data), ``update``, and ``format``. Loading fills a
    fresh runner of the run's config leaf by leaf and refuses any array whose name, shape or dtype differs: the same
    run goes on, bit for bit on the same device.
    """

    checkpoint_suffix = ".npz"

    def __init__(self, runners: Any, batch: int) -> None:
        self.runners, self.batch, self.update = runners, batch, 0

    def progress(self) -> int:
        """Environment steps per seed: updates done times the rollout's batch."""
        return self.update * self.batch

    def save_checkpoint(self, path: Path) -> None:
        """Writes the runners and the update index to ``path`` atomically."""
        arrays = {name: np.asarray(_data(leaf)) for name, leaf in _leaves(self.runners)}
        arrays.update(update=np.int64(self.update), format=np.str_(CHECKPOINT_FORMAT))
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as temp, open(temp, "wb") as file:
            np.savez(file, **arrays)

    def load_checkpoint(self, path: Path) -> None:
        """Fills the runners (a fresh run's, for their shapes) and the update index from ``path``.

        Raises:
            ValueError: not a checkpoint of this run's network and seeds (one line).
        """
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            if str(arrays.pop("format", "")) != CHECKPOINT_FORMAT:
                raise ValueError(f"not a {CHECKPOINT_FORMAT!r} file")
            update = int(arrays.pop("update"))
            leaves = []
            for name, leaf in _leaves(self.runners):
                array, like = arrays.pop(name, None), np.asarray(_data(leaf))
                if array is None or array.shape != like.shape or array.dtype != like.dtype:
                    raise ValueError(f"{name} is missing or does not fit this run ({like.dtype} {like.shape})")
                leaves.append(jax.random.wrap_key_data(array) if _is_key(leaf) else jnp.asarray(array))
            if arrays:
                raise ValueError(f"it holds arrays this run has not ({sorted(arrays)[0]})")
        except (OSError, ValueError, KeyError) as error:
            detail = " ".join(str(error).split()) or type(error).__name__
            raise ValueError(f"cannot resume from {str(path)!r}: {detail}") from None
        self.runners = jax.tree.unflatten(jax.tree.structure(self.runners), leaves)
        self.update = update


def _leaves(tree) -> list[tuple[str, Any]]:
    """The leaves of ``tree`` under their paths, ``params/pi/0/w``, ``opt_state/1/inner_state/0/mu/...``."""

    def part(key) -> str:
        return str(getattr(key, "name", getattr(key, "key", getattr(key, "idx", key))))

    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [("/".join(part(key) for key in path), leaf) for path, leaf in flat]


def _is_key(leaf) -> bool:
    return jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _data(leaf):
    return jax.random.key_data(leaf) if _is_key(leaf) else leaf


def train_jax(config: TrainConfig, output_dir: str | os.PathLike = "runs", **options) -> Path:
    """Trains a config with a ``jax`` section on the device and returns its run folder (module docstring), in a
    :class:`~yacht_lab.training.run_context.RunContext` (the folder claimed and locked, ``config.yaml``,
    ``command.txt``, the curve, a checkpoint every ``checkpoint_every_timesteps``, Ctrl-C, ``resume``).

    ``options`` are the run context's (``resume``, ``command``, ``progress``, ``name``, ``rerun``: as
    :func:`yacht_lab.train` takes them). ``max_minutes``, Ctrl-C or SIGTERM stop the run after the update that passes
    it (a checkpoint and the parameters are saved). The curve's ``wall_minutes`` is the time since the run started
    (compilation and evaluations included); its ``steps_per_second`` counts every seed's env steps (the update's
    whole batch) per second of the last update. A resumed run goes on from its checkpoint's update with the same
    keys: the same parameters as a run that never stopped.

    Raises:
        ValueError: a bad config (or another trainer's), an ``init`` that does not fit, an output folder that cannot
            be written, a checkpoint that is not this run's.
    """
    validated(config)
    require_trainer(config, "jax_ppo")
    table = config.jax.players > 1
    fields, measure = (TABLE_FIELDS, "win_rate") if table else (SOLO_FIELDS, "percent_of_optimal")
    optimal = None if table else _optimal(config.rules)  # the solo curve's yardstick only
    seeds = [config.seed + i for i in range(config.jax.seeds)]
    batch = config.n_envs * config.ppo.n_steps
    num_updates = max(config.total_timesteps // batch, 1)
    every = max(config.eval.every_timesteps // batch, 1)
    keys = jnp.stack([jax.random.key(s) for s in seeds])
    curve_games, fresh_games = jax.random.key(config.eval.seed), jax.random.fold_in(jax.random.key(config.eval.seed), 1)
    aggregator = Aggregator(measure, config.eval.seed)
    with RunContext(config, output_dir, fields=fields, **options) as run:
        init, update, evaluate, spec = make_trainer(config)
        state = JaxState(init(keys, None if run.checkpoint is not None else start_params(config, spec)), batch)
        run.start(run.restore(state))
        (run.dir / "params").mkdir(exist_ok=True)
        first, speed = state.update, 0.0
        bar = run.progress_bar(initial=state.progress())

        def evaluation(timesteps: int) -> None:
            results = evaluate(state.runners.params, state.runners.start, curve_games)
            rows = _rows(results, seeds, timesteps, run.wall_minutes(), speed, optimal)
            run.add_rows(*rows)
            write_curve(run.dir / AGGREGATE_FILE, aggregator.rows(run.rows), AGGREGATE_FIELDS)
            if run.show_progress:
                say(f"{timesteps:>11,} steps  {run.wall_minutes():6.1f} min  {_best(rows, measure)}", bar)

        for u in range(first, num_updates + 1):
            stopping = run.should_stop
            due = u % every == 0 or u == num_updates or stopping  # the last row is the saved parameters'
            if due and not (u == first and run.rows and run.rows[-1]["timesteps"] == u * batch):  # not twice on resume
                evaluation(u * batch)
            if u == num_updates or stopping:
                break
            tick = time.time()
            state.runners, _ = update(state.runners, u)
            jax.block_until_ready(state.runners.params)
            state.update = u + 1
            speed = batch * len(seeds) / (time.time() - tick) if u > first else 0.0  # the first one compiles
            if bar is not None:
                bar.update(batch)
            run.checkpoint_if_due(state)
        if bar is not None:
            bar.close()
        run.end(state)
        best = _save(run.dir, state.runners.params, spec, seeds, run.rows, measure)
        fresh = evaluate(state.runners.params, state.runners.start, fresh_games)  # every seed: one compilation
        selection = _selection(config, seeds, best, run.rows, fresh, optimal, aggregator, measure)
        line = write_selection(run.dir / SELECTION_FILE, selection)
        say(line)
    return run.dir


def _rows(
    results, seeds, timesteps: int, minutes: float, speed: float, optimal: float | None
) -> list[dict[str, float]]:
    """The curve's rows of one evaluation, one per seed."""
    results = {name: np.asarray(value) for name, value in results.items()}
    rows = []
    for i, seed in enumerate(seeds):
        row = {"timesteps": timesteps, "wall_minutes": round(minutes, 4), "seed": seed}
        row.update({name: round(float(value[i]), 4) for name, value in results.items()})
        if optimal is not None:
            row["percent_of_optimal"] = round(100 * row["mean_score"] / optimal, 4)
        rows.append({**row, "steps_per_second": round(speed, 1)})
    return rows


def _optimal(rules: str) -> float:
    """The solver's expected solo score: the solo curve's yardstick."""
    from yacht_env.solver import solve

    return solve(R.get_rules(rules)).expected_score


def _best(rows: list[dict[str, float]], measure: str) -> str:
    """The progress line's best seed of one evaluation."""
    best = max(rows, key=lambda row: row[measure])
    if measure == "win_rate":
        return (
            f"best seed {best['seed']}: {100 * best['win_rate']:.2f}% +- {100 * best['win_rate_ci95']:.2f} against "
            f"its start (mean score {best['mean_score']:.2f})"
        )
    return f"best seed {best['seed']}: {best['mean_score']:.2f} ({best['percent_of_optimal']:.2f}% of optimal)"


def _save(
    run_dir: Path, params, spec: NetworkSpec, seeds: list[int], rows: list[dict[str, float]], measure: str
) -> int:
    """Every seed's parameters, then ``model.npz``: the seed with the best last evaluation (last: a complete run).
    Returns that seed's index.
    """
    last = {row["seed"]: row[measure] for row in rows}
    for i, seed in enumerate(seeds):
        save_params(run_dir / "params" / f"seed_{seed}.npz", jax.tree.map(lambda x, i=i: x[i], params), spec)
    best = seeds.index(max(seeds, key=lambda seed: last[seed]))
    save_params(run_dir / "model.npz", jax.tree.map(lambda x: x[best], params), spec)
    return best


def _selection(config, seeds, best, rows, fresh, optimal, aggregator: Aggregator, measure: str) -> dict[str, Any]:
    """What ``selection.json`` holds: the chosen seed's figures on the curve's games and on fresh ones."""
    chosen = {key: value for key, value in rows[-len(seeds) + best].items() if key not in ("seed", "steps_per_second")}
    measured = {name: round(float(np.asarray(value)[best]), 4) for name, value in fresh.items()}
    if optimal is not None:
        measured["percent_of_optimal"] = round(100 * measured["mean_score"] / optimal, 4)
    games = config.eval.games
    return {
        "measure": measure,
        "unit": "deals" if config.jax.players > 1 else "games",
        "seed": seeds[best],
        "seeds": len(seeds),
        "chosen_on": {"eval_seed": config.eval.seed, "games": games, **chosen},
        "fresh": {"games": games, "key": f"fold_in(key({config.eval.seed}), 1)", **measured},
        "aggregate": aggregator.rows(rows)[-1],
    }
