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

from yacht_agents.archive import READ_ERRORS, Refused, open_zip, path_kind, read_arrays
from yacht_agents.jax_policy import NetworkSpec, apply, init_params, odds_tables, save_params
from yacht_env import rules as R
from yacht_env.util import atomic_output
from yacht_lab.training.config import TrainConfig, validated
from yacht_lab.training.jax.init import start_params
from yacht_lab.training.jax.learner import make_update, minibatches, network_spec, num_updates, optimizer
from yacht_lab.training.jax.memory import check_memory, out_of_memory
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


def _play(config: TrainConfig):
    """The run's game (:class:`~yacht_lab.training.jax.rollouts.Play`), its network function and its spec."""
    rules = R.get_rules(config.rules)
    spec = network_spec(config)
    odds, where = odds_tables(rules, spec.bonus_odds)

    def network(params, obs, mask):
        return apply(params, spec, odds, where, obs, mask)

    build = table_play if spec.players > 1 else solo_play
    play = build(config, network, spec, odds.chase.shape[-1], optimizer(config))
    return play, network, spec, odds.chase.shape[-1]


def make_trainer(config: TrainConfig):
    """The compiled pieces of a run: ``(init(keys, start) -> runners, update(runners, u) -> (runners, metrics),
    evaluate(params, start, root) -> {metric: per seed}, spec)``, each over the seeds' leading axis (``start``: the
    parameters every seed begins from, or ``None`` for fresh ones; ``root``: the key of the evaluation's games).
    ``metrics`` holds ``finite``: per seed, whether its parameters and losses are all finite after the update.
    """
    play, network, spec, odds_size = _play(config)
    update = make_update(config, network, play.rollout)
    start_of_seeds = jax.jit(jax.vmap(play.init, in_axes=(0, 0)))

    def init(keys, start=None):
        # Fresh parameters are drawn seed by seed outside the compiled program, one QR at a time
        # (yacht_agents.jax_policy.init_params): inside one vmapped program the seeds' QR factorisations (four or
        # more) left both workers of a two-core machine waiting on each other, and the call never returned. The
        # same parameters as play.init's own draw (its first key of the seed's split).
        if start is None:
            fresh = [init_params(jax.random.split(key, 3)[0], spec, odds_size) for key in keys]
            start = jax.tree.map(lambda *leaves: jnp.stack(leaves), *fresh)
        else:
            start = jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (len(keys), *jnp.shape(leaf))), start)
        return start_of_seeds(keys, start)

    def checked(runner, u):
        runner, metrics = update(runner, u)
        leaves = jax.tree.leaves((runner.params, metrics))
        return runner, {"finite": jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in leaves]))}

    return (
        init,
        jax.jit(jax.vmap(checked, in_axes=(0, None))),
        jax.jit(jax.vmap(play.evaluate, in_axes=(0, 0, None))),
        spec,
    )


class JaxState:
    """The JAX trainer's :class:`~yacht_lab.training.run_context.TrainerState`: every seed's runner (parameters,
    optimizer state, env states, observations, masks, keys, start parameters) and the update index.

    A checkpoint is one ``.npz`` of arrays: each leaf of the runners under its pytree path (``params/pi/0/w``; keys as
    their raw ``uint32`` data), ``update``, and ``format``. Loading reads it through the one bounded reader of the
    package (:mod:`yacht_agents.archive`: no larger than the run's own arrays, plain numbers only, each header checked
    before its data is read), fills a fresh runner of the run's config leaf by leaf and refuses any array whose name,
    shape or dtype differs, then what the arrays hold (:meth:`check`): the same run goes on, bit for bit on the same
    device.
    """

    checkpoint_suffix = ".npz"

    def __init__(self, runners: Any, batch: int, config: TrainConfig | None = None) -> None:
        self.runners, self.batch, self.update, self.config = runners, batch, 0, config

    def progress(self) -> int:
        """Environment steps per seed: updates done times the rollout's batch."""
        return self.update * self.batch

    def checkpoint_bytes(self) -> int:
        """About what a checkpoint takes: the runners' arrays."""
        return sum(np.asarray(_data(leaf)).nbytes for _, leaf in _leaves(self.runners))

    def save_checkpoint(self, path: Path) -> None:
        """Writes the runners and the update index to ``path`` atomically."""
        arrays = {name: np.asarray(_data(leaf)) for name, leaf in _leaves(self.runners)}
        arrays.update(update=np.int64(self.update), format=np.str_(CHECKPOINT_FORMAT))
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as temp, open(temp, "wb") as file:
            np.savez(file, **arrays)

    def load_checkpoint(self, path: Path) -> None:
        """Fills the runners (a fresh run's, for their shapes) and the update index from ``path``, and checks them
        (:meth:`check`).

        Raises:
            ValueError: not a checkpoint of this run's network and seeds, a damaged one, or one whose values this run
                never holds (one line).
        """
        named = _leaves(self.runners)
        like = {name: np.asarray(_data(leaf)) for name, leaf in named}
        # The run's own arrays, their .npy headers (at most 4 KiB each, numpy writes 128 bytes) and the two scalars.
        bound = sum(array.nbytes for array in like.values()) + 4096 * (len(like) + 2) + 512
        try:
            if path_kind(path) != "file":
                raise Refused("it is not a regular file")
            with open_zip(path, what="this run's checkpoint", max_bytes=bound, max_members=len(like) + 2) as archive:
                arrays = read_arrays(archive, kinds="biufU")
            if _text(arrays.pop("format", None)) != CHECKPOINT_FORMAT:
                raise Refused(f"it is not a {CHECKPOINT_FORMAT!r} file")
            update = arrays.pop("update", None)
            if update is None or update.shape != () or update.dtype.kind not in "iu":
                raise Refused("it has no update index")
            update = int(update)
            leaves = []
            for name, leaf in named:
                array = arrays.pop(name, None)
                if array is None or array.shape != like[name].shape or array.dtype != like[name].dtype:
                    raise Refused(f"{name} is missing or does not fit this run ({like[name].dtype} {like[name].shape})")
                array = np.array(array)  # its own writable copy, out of the file's bytes
                leaves.append(jax.random.wrap_key_data(array) if _is_key(leaf) else jnp.asarray(array))
            if arrays:
                raise Refused(f"it holds arrays this run has not ({sorted(arrays)[0]})")
            runners = jax.tree.unflatten(jax.tree.structure(self.runners), leaves)
            self.check(runners, update)
        except (Refused, *READ_ERRORS) as error:
            detail = " ".join(str(error).split()) or type(error).__name__
            raise ValueError(f"cannot resume from {str(path)!r}: {detail}") from None
        self.runners, self.update = runners, update

    def check(self, runners: Any, update: int) -> None:
        """What a checkpoint's arrays must hold to be trained on: an update index in range, every float finite, the
        optimizer's step counts those of ``update`` updates, game states in range, and the observations and masks
        those games show.

        Raises:
            Refused: the first value that is not so.
        """
        config = self.config
        if update < 0:
            raise Refused(f"its update index is {update}, below 0")
        for name, leaf in _leaves(runners):
            value = np.asarray(_data(leaf))
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise Refused(f"its {name} is not finite (NaN or inf)")
        if config is None:
            return
        steps = update * config.ppo.n_epochs * minibatches(config)
        for name, leaf in _leaves(runners.opt_state):
            if name.endswith("count") and not (np.asarray(leaf) == min(steps, 2**31 - 1)).all():
                raise Refused(f"its optimizer's opt_state/{name} is not the {steps} steps of {update} updates")
        rules = R.get_rules(config.rules)
        game = runners.env_state.game if hasattr(runners.env_state, "game") else runners.env_state
        bounds = {
            "roll": (0, R.NUM_ROLLS - 1),
            "rolls_left": (0, R.MAX_ROLLS_LEFT),
            "open_mask": (0, 2**rules.num_categories - 1),
            "turn": (0, rules.num_turns),
            "upper": (0, max(rules.upper_bonus_threshold, 0)),
            "armed": (0, 1),
            "current_player": (0, max(config.jax.players - 1, 0)),
        }
        for field, (low, high) in bounds.items():
            value = np.asarray(getattr(game, field))
            if value.size and (value.min() < low or value.max() > high):
                raise Refused(f"its games' {field} is outside {low}..{high}")
        if np.asarray(game.sheet).min(initial=0) < -1 or np.asarray(game.total).min(initial=0) < 0:
            raise Refused("its games' sheets or totals are negative")
        observe = jax.jit(jax.vmap(_play(config)[0].observe))
        obs, mask = observe(runners.env_state)
        if not (np.array_equal(obs, runners.obs) and np.array_equal(mask, runners.mask)):
            raise Refused("its observations or masks are not those of its games")


def _leaves(tree) -> list[tuple[str, Any]]:
    """The leaves of ``tree`` under their paths, ``params/pi/0/w``, ``opt_state/1/inner_state/0/mu/...``."""

    def part(key) -> str:
        return str(getattr(key, "name", getattr(key, "key", getattr(key, "idx", key))))

    flat = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [("/".join(part(key) for key in path), leaf) for path, leaf in flat]


def _text(array) -> str | None:
    """A scalar string array's text (``None``: not one)."""
    return str(array) if array is not None and array.shape == () and array.dtype.kind == "U" else None


def _is_key(leaf) -> bool:
    return jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)


def _data(leaf):
    return jax.random.key_data(leaf) if _is_key(leaf) else leaf


def train_jax(config: TrainConfig, output_dir: str | os.PathLike = "runs", **options) -> Path:
    """Trains a config with a ``jax`` section on the device and returns its run folder (module docstring), in a
    :class:`~yacht_lab.training.run_context.RunContext` (the folder claimed and locked, ``config.yaml``,
    ``command.txt``, the curve, a checkpoint every ``checkpoint_every_timesteps``, Ctrl-C, ``resume``).

    ``options`` are the run context's (``resume``, ``command``, ``progress``, ``name``, ``rerun``: as
    :func:`yacht_lab.train` takes them, and ``on_stop``). ``max_minutes``, Ctrl-C or SIGTERM stop the run after the
    update that passes it (a checkpoint and the parameters are saved); a second signal ends it at once. A run trains
    ``total_timesteps`` rounded up to whole updates; it ends in one ``ValueError`` line, saving nothing of the update,
    if an update leaves a seed's parameters or loss not finite. Before anything is written, its memory is estimated
    against what its device (on the CPU: this process) may use (:func:`~yacht_lab.training.jax.memory.check_memory`);
    should the device run out of memory all the same, that is one ``ValueError`` line too. The curve's
    ``wall_minutes`` is the time since the run started (compilation and evaluations included); its
    ``steps_per_second`` counts every seed's env steps (the update's whole batch) per second of the last update. A
    resumed run goes on from its checkpoint's update with the same keys: the same parameters as a run that never
    stopped.

    Raises:
        ValueError: a bad config (or another trainer's), an ``init`` that does not fit, an output folder that cannot
            be written, a checkpoint that is not this run's, a run too large for its device.
    """
    validated(config)
    require_trainer(config, "jax_ppo")
    check_memory(config)
    try:
        return _train(config, output_dir, **options)
    except RuntimeError as error:  # XLA's RESOURCE_EXHAUSTED: what the estimate missed, as one line
        if not out_of_memory(error):
            raise
        first = " ".join(str(error).split("\n")[0].split())
        raise ValueError(
            f"the device ran out of memory ({first}): make jax.seeds, n_envs x ppo.n_steps, ppo.batch_size or "
            "eval.games smaller"
        ) from None


def _train(config: TrainConfig, output_dir: str | os.PathLike, **options) -> Path:
    """:func:`train_jax` once its config is checked."""
    table = config.jax.players > 1
    fields, measure = (TABLE_FIELDS, "win_rate") if table else (SOLO_FIELDS, "percent_of_optimal")
    optimal = None if table else _optimal(config.rules)  # the solo curve's yardstick only
    seeds = [config.seed + i for i in range(config.jax.seeds)]
    batch = config.n_envs * config.ppo.n_steps
    updates = num_updates(config)
    every = max(config.eval.every_timesteps // batch, 1)
    keys = jnp.stack([jax.random.key(s) for s in seeds])
    curve_games, fresh_games = jax.random.key(config.eval.seed), jax.random.fold_in(jax.random.key(config.eval.seed), 1)
    aggregator = Aggregator(measure, config.eval.seed)
    with RunContext(config, output_dir, fields=fields, **options) as run:
        init, update, evaluate, spec = make_trainer(config)
        start = None if run.checkpoint is not None else start_params(config, spec)
        run.check_signals()  # safe points between the start's long steps (a signal is only noted in its handler)
        state = JaxState(init(keys, start), batch, config)
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

        for u in range(first, updates + 1):
            stopping = run.should_stop
            due = u % every == 0 or u == updates or stopping  # the last row is the saved parameters'
            if due and not (u == first and run.rows and run.rows[-1]["timesteps"] == u * batch):  # not twice on resume
                evaluation(u * batch)
                stopping = stopping or run.should_stop  # asked during the evaluation: no update, no row more
            if u == updates or stopping:
                break
            tick = time.time()
            runners, metrics = update(state.runners, u)
            finite = np.asarray(metrics["finite"])
            if not finite.all():  # nothing of the diverged update is kept, evaluated or saved
                raise ValueError(
                    f"training diverged at step {(u + 1) * batch:,}: seed {seeds[int(np.argmin(finite))]}'s parameters "
                    "or loss are no longer finite (NaN or inf); nothing of it was saved (lower ppo.learning_rate, or "
                    "resume an earlier checkpoint)"
                )
            state.runners, state.update = runners, u + 1
            # 0 until measured: the first update of a process compiles (the curve's first row has no speed either).
            speed = batch * len(seeds) / (time.time() - tick) if u > first else 0.0
            if bar is not None:
                bar.update(batch)
                if speed:
                    bar.set_postfix_str(f"{speed:,.0f} steps/s", refresh=False)
            run.checkpoint_if_due(state)
        if bar is not None:
            bar.close()
        run.end(state)
        run.check_free_space(state, "model.npz and params/")
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
