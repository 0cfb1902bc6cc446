"""The search trainer: a learned value of the turn's end, trained by self-play, played by the exact turn's expectimax.

What ``train.py`` runs for a config with a ``search`` section (``configs/search_standard.yaml``, ...; the keys:
:class:`yacht_lab.training.schema.SearchConfig`). Each iteration plays ``search.tables`` games with the current value
``V`` in every seat (:mod:`yacht_lab.training.search.rollouts`: every turn the exact expectimax of
:mod:`yacht_agents.search`), then fits ``V`` to the TD(lambda) targets of those games' afterstates
(:mod:`yacht_lab.training.search.learner`; with ``search.aux_weight``, auxiliary outputs beside it learn every
seat's points to come in the same games), from fresh weights. Nothing of a solver enters ``V``'s input, target or
loss: the solver and the start are yardsticks of the curve only.

The run folder (a :class:`~yacht_lab.training.run_context.RunContext`): ``config.yaml``, ``command.txt``,
``learning_curve.csv`` and ``learning_curve.png`` (solo: the mean score on ``eval.games`` seeded games, its interval,
% of optimal and the mean regret, by :func:`yacht_lab.measure.evaluation.evaluate`; at a table: the win rate against
its start, the fresh network, and against the solver, seat-rotated on common dice by
:func:`yacht_lab.measure.head_to_head.head_to_head`), ``checkpoints/step_<N>.npz`` (:class:`SearchState`: the
weights, Adam's state, both generators and the iteration: a resumed run ends with the same parameters, bit for bit on
the CPU, as one never stopped) and ``model.npz`` / ``model.json``, which ``evaluate.py --agents search:RUN_FOLDER``
seats. Its steps are turns played.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from yacht_agents.search import SearchAgent, TurnPlanner, ValueNetwork, ValueSpec, load_value, save_value
from yacht_env import rules as R
from yacht_env.util import atomic_output
from yacht_lab.training.config import TrainConfig, validated
from yacht_lab.training.run_context import RunContext, say
from yacht_lab.training.runs import plot_curves
from yacht_lab.training.search.checkpoint import CHECKPOINT_FORMAT, read_checkpoint
from yacht_lab.training.search.learner import Learner
from yacht_lab.training.search.rollouts import play
from yacht_lab.training.trainers import require_trainer

SOLO_FIELDS = (
    "timesteps",
    "wall_minutes",
    "mean_score",
    "mean_score_ci95",
    "percent_of_optimal",
    "mean_regret",
    "loss",
    "turns_per_second",
)
TABLE_FIELDS = (
    "timesteps",
    "wall_minutes",
    "win_rate_vs_start",
    "win_rate_vs_start_ci95",
    "win_rate_vs_optimal",
    "win_rate_vs_optimal_ci95",
    "mean_score",
    "loss",
    "turns_per_second",
)
CURVE_PLOT = "learning_curve.png"


class SearchState:
    """The search trainer's :class:`~yacht_lab.training.run_context.TrainerState`: the learner (weights, Adam, its
    minibatch generator), the games' generator and the iteration, in one ``.npz`` of arrays (no pickle).
    """

    checkpoint_suffix = ".npz"

    def __init__(self, config: TrainConfig) -> None:
        section = config.search
        self.config = config
        solo = _solo_network(config)
        arch = tuple(solo.spec.net_arch) if solo is not None else ()
        self.spec = ValueSpec(config.rules, section.players, tuple(section.net_arch), 3 if section.race else 2, arch)
        aux = section.players if section.aux_weight else 0  # every seat's points to come
        self.learner = Learner(self.spec, config.seed, section.learning_rate, config.device, solo, aux)
        self.rng = np.random.default_rng(config.seed)
        self.turns_per_iteration = turns_per_iteration(config)
        self.iteration = 0
        self.loss = float("nan")

    def progress(self) -> int:
        """Turns played."""
        return self.iteration * self.turns_per_iteration

    def checkpoint_bytes(self) -> int:
        """About what a checkpoint takes: the learner's arrays."""
        return sum(array.nbytes for array in self.learner.state_arrays().values())

    def save_checkpoint(self, path: Path) -> None:
        """Writes everything the run needs to go on to ``path``, atomically."""
        arrays = self.learner.state_arrays()
        arrays.update(
            iteration=np.int64(self.iteration),
            loss=np.float64(self.loss),
            rng=np.str_(json.dumps(self.rng.bit_generator.state)),
            format=np.str_(CHECKPOINT_FORMAT),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(path) as temp, open(temp, "wb") as file:
            np.savez(file, **arrays)

    def load_checkpoint(self, path: Path) -> None:
        """Restores a checkpoint of this run, read within bounds and checked before anything changes
        (:func:`yacht_lab.training.search.checkpoint.read_checkpoint`).

        Raises:
            ValueError: not a search checkpoint of this run's network, a damaged one, or one whose values this run
                never holds (one line).
        """
        checkpoint = read_checkpoint(path, self.learner)
        self.learner.load_arrays(checkpoint.arrays)
        self.iteration, self.loss, self.rng = checkpoint.iteration, checkpoint.loss, checkpoint.rng


def _solo_network(config: TrainConfig):
    """The solo network a table's ``V`` reads (``search.solo``), or ``None``.

    Raises:
        ValueError: no such model, or not a solo network of the run's rules.
    """
    name = config.search.solo
    if name is None:
        return None
    network = load_value(name)
    if network.spec.players != 1 or network.spec.rules != config.rules:
        raise ValueError(
            f"search.solo {name!r} is a {network.spec.rules!r} network for {network.spec.players} players, not a solo "
            f"network of the {config.rules!r} rules"
        )
    return network


def turns_per_iteration(config: TrainConfig) -> int:
    """The turns one iteration plays (one afterstate each): ``search.tables`` games of every seat's turns."""
    section = config.search
    return section.tables * section.players * R.get_rules(config.rules).num_categories


def budget_turns(config: TrainConfig) -> int:
    """The turns a run trains: ``total_timesteps`` rounded up to whole iterations, as every trainer rounds its budget
    up to whole updates (:func:`yacht_lab.training.schema.budget_steps`).
    """
    per = turns_per_iteration(config)
    return -(-config.total_timesteps // per) * per


def train_search(config: TrainConfig, output_dir: str | os.PathLike = "runs", **options) -> Path:
    """Trains a config with a ``search`` section and returns its run folder (module docstring).

    ``options`` are the run context's (``resume``, ``command``, ``progress``, ``name``, ``rerun``). ``max_minutes``,
    Ctrl-C or SIGTERM stop the run after the iteration that passes it (a checkpoint and the model are saved).

    Raises:
        ValueError: a bad config (or another trainer's), an output folder that cannot be written, a checkpoint that is
            not this run's.
    """
    validated(config)
    require_trainer(config, "search")
    section = config.search
    table = section.players > 1
    torch.set_num_threads(config.torch_threads)
    fields = TABLE_FIELDS if table else SOLO_FIELDS
    with RunContext(config, output_dir, fields=fields, budget=budget_turns(config), **options) as run:
        state = SearchState(config)
        start_network = state.learner.network()  # the fresh weights: a table's curve measures against them
        run.start(run.restore(state))
        per = state.turns_per_iteration
        iterations = budget_turns(config) // per
        every = max(config.eval.every_timesteps // per, 1)
        bar = run.progress_bar(initial=state.progress())
        speed = 0.0
        while True:
            stopping = run.should_stop
            done = state.iteration >= iterations
            due = state.iteration % every == 0 or done or stopping
            if due and not (run.rows and run.rows[-1]["timesteps"] == state.progress()):
                row = _evaluate(config, state, start_network)
                row.update(wall_minutes=round(run.wall_minutes(), 4), loss=round(state.loss, 6))
                row["turns_per_second"] = round(speed, 1)
                run.add_rows(row)
                _plot(run.dir / CURVE_PLOT, run.rows, table)
                if run.show_progress:
                    say(_line(row, table), bar)
                stopping = stopping or run.should_stop  # asked during the evaluation: no iteration, no row more
            if done or stopping:
                break
            tick = time.time()
            planner = TurnPlanner(R.get_rules(config.rules), section.players, state.learner.network())
            batch = play(planner, section.tables, state.rng, section.td_lambda, aux=bool(section.aux_weight))
            fraction = state.iteration / max(iterations - 1, 1)
            rate = section.learning_rate + (section.learning_rate_final - section.learning_rate) * fraction
            state.loss = state.learner.fit(
                batch.x, batch.y, section.epochs, section.batch_size, rate, batch.aux, section.aux_weight
            )
            if not (np.isfinite(state.loss) and state.learner.is_finite()):  # nothing of it is kept or saved
                raise ValueError(
                    f"training diverged at iteration {state.iteration + 1}: the value network's weights or loss are no "
                    "longer finite (NaN or inf); nothing of it was saved (lower search.learning_rate, or resume an "
                    "earlier checkpoint)"
                )
            state.iteration += 1
            speed = per / (time.time() - tick)
            if bar is not None:
                bar.update(per)
            run.checkpoint_if_due(state)
        if bar is not None:
            bar.close()
        run.end(state)
        run.check_free_space(state, "model.npz")
        save_value(run.dir / "model.npz", played(state.learner.network(), section.placing))
    return run.dir


def played(network: ValueNetwork, placing: float) -> ValueNetwork:
    """The network as the saved model plays it: its weights with ``search.placing`` in its spec."""
    if not placing:
        return network
    return ValueNetwork(network.spec._replace(placing=placing), network.layers, network.solo)


def _evaluate(config: TrainConfig, state: SearchState, start_network) -> dict[str, float]:
    """One row of the curve (the module docstring): the learner's games now, on the curve's seeded dice."""
    from yacht_lab.measure.evaluation import evaluate
    from yacht_lab.measure.head_to_head import head_to_head, pair_key

    rules, players = R.get_rules(config.rules), config.search.players
    learner = SearchAgent.from_network(played(state.learner.network(), config.search.placing), rules, "search")
    row: dict[str, float] = {"timesteps": state.progress()}
    if players == 1:
        evaluation = evaluate([learner], config.eval.games, config.eval.seed, rules)
        summary = evaluation.results["search"].summary(evaluation.optimal_expected_score)
        mean, (low, high) = summary["mean"], summary["ci95"]
        row.update(
            mean_score=round(mean, 4),
            mean_score_ci95=round((high - low) / 2, 4),
            percent_of_optimal=round(summary["percent_of_optimal"], 4),
            mean_regret=round(summary["mean_regret"], 4),
        )
        return row
    from yacht_agents import make_agent

    start = SearchAgent.from_network(start_network, rules, "start")
    solvers = [make_agent("optimal" if i == 0 else f"optimal#{i + 1}", rules) for i in range(max(players, 3) - 2)]
    seated = [learner, start, *solvers]  # two players: every pair plays; more: one table of them all
    result = head_to_head(seated, players, config.eval.games, config.eval.seed, rules, calibration=False).to_dict()
    pairs = result["head_to_head"]
    for against, key in (("start", "vs_start"), ("optimal", "vs_optimal")):
        pair = pairs.get(pair_key("search", against))
        if pair is None:
            continue
        low, high = pair["win_rate_a_ci95"]
        row[f"win_rate_{key}"] = round(pair["win_rate_a"], 4)
        row[f"win_rate_{key}_ci95"] = round((high - low) / 2, 4)
    row["mean_score"] = round(result["agents"]["search"]["mean_score"], 4)
    return row


def _line(row: dict[str, float], table: bool) -> str:
    """The progress line of one evaluation."""
    head = f"{int(row['timesteps']):>11,} turns  {row['wall_minutes']:6.1f} min  "
    if table:
        return head + (
            f"{100 * row.get('win_rate_vs_start', float('nan')):.2f}% against its start, "
            f"{100 * row.get('win_rate_vs_optimal', float('nan')):.2f}% against the solver "
            f"(mean score {row['mean_score']:.2f})"
        )
    return head + (
        f"{row['mean_score']:.2f} +- {row['mean_score_ci95']:.2f} ({row['percent_of_optimal']:.2f}% of optimal, "
        f"regret {row['mean_regret']:.3f})"
    )


def _plot(path: Path, rows: list[dict[str, float]], table: bool) -> None:
    """``learning_curve.png``: solo % of optimal, at a table the win rate against the solver."""
    if table:
        key, label, line = "win_rate_vs_optimal", "win rate against the solver", 0.5
        ci = "win_rate_vs_optimal_ci95"
        rows = [r for r in rows if key in r and r[key] == r[key]]
    else:
        key, label, line, ci = "percent_of_optimal", "% of the optimal expected score", 100.0, "percent_ci"
        rows = [{**r, ci: r["mean_score_ci95"] * r[key] / max(r["mean_score"], 1e-9)} for r in rows]

    def decorate(fig, axes) -> None:
        for ax in axes:
            ax.axhline(line, color="black", linestyle="--", linewidth=1)
        fig.suptitle("search agent: " + label)

    plot_curves(path, rows, key, ci, label, decorate)
