"""Policy-iteration distillation: a trained model learns the moves of the win agent over its own starting policy.

A run of a config with a ``distill`` section (:class:`yacht_lab.training.schema.DistillConfig`; ``train.py`` picks this
trainer for it). The learner starts as the ``init`` model, a solo model of rules without bonuses, and takes a seat at
tables of ``distill.players``. Each iteration:

1. **Positions.** The learner (playing its deterministic moves) meets opponents drawn per seat from
   ``distill.opponents`` at ``distill.tables`` tables, and about ``distill.positions`` of its decisions are kept (its
   observation of the table and its legal moves).
2. **Labels.** The teacher is the win agent over the start's policy (:func:`exact_teacher`): the start's whole policy
   is read (:func:`yacht_agents.win.policy_table`) and evaluated exactly
   (:func:`yacht_env.distributions.policy_distributions`), and a position's label is the move with the highest
   probability of finishing first if everyone plays the start's policy after it (:class:`yacht_agents.win.WinAgent`
   with ``base`` the start). That is one step of policy iteration for the win from the learner's own play, its
   evaluation exact rather than sampled.
3. **Update.** The policy takes ``distill.epochs`` passes of cross-entropy toward the labels of the newest iterations
   (at least ``distill.memory`` positions).

Nothing of the solver enters: the labels are a computation on the start's own policy and the rules of the dice, and
the optimal agent among the opponents is part of the environment, as in a league. The learner is saved as a
``MaskablePPO`` model of the table (:mod:`yacht_lab.training.sb3.model`), which the safe loader plays like any other.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch

from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, draw_stream
from yacht_env.opponents import act_at_tables
from yacht_lab.training.config import TrainConfig, validated
from yacht_lab.training.run_context import RunContext
from yacht_lab.training.runs import save_atomically, write_curve
from yacht_lab.training.sb3.model import start_model
from yacht_lab.training.sb3.tasks import evaluate_against
from yacht_lab.training.trainers import require_trainer

__all__ = ["CURVE_FIELDS", "ITERATION_FIELDS", "DistillState", "Distiller", "exact_teacher", "train_distill"]

#: ``iterations.csv``: one row per iteration (the positions found, how many the teacher relabelled, the update).
ITERATION_FIELDS = ("iteration", "wall_minutes", "positions", "changed", "gap_changed", "cross_entropy", "memory")
#: ``learning_curve.csv``: one row per opponent per evaluation.
CURVE_FIELDS = ("iteration", "member", "win_rate", "win_rate_ci95", "mean_score", "mean_margin", "games")


@functools.cache
def _encoders(rules: R.Rules, players: int) -> tuple[ObservationEncoder, MultiplayerEncoder]:
    return ObservationEncoder(rules), MultiplayerEncoder(rules, players)


def exact_teacher(init: str, rules: str | R.Rules, players: int):
    """The teacher: the win agent over the ``init`` model's own policy (read whole and evaluated exactly), for a
    table of ``players``.

    Raises:
        ValueError: ``init`` is not a solo model of these rules (a table model's moves depend on the table).
    """
    from yacht_agents.ppo import PPOAgent
    from yacht_agents.win import WinAgent

    start = PPOAgent(init, rules, name="start")
    if start.table_players is not None:
        raise ValueError(
            f"distill evaluates the start's own play: init must be a solo (Yacht-v0) model, and {init!r} sees a "
            f"table of {start.table_players}"
        )
    return WinAgent(rules, players, name="teacher", base=start)


class Distiller:
    """The iterations of the module docstring, on an SB3 ``MaskablePPO`` ``model`` whose policy sees the table.

    Args:
        model: The learner (its policy is trained in place).
        opponents: The agents the learner meets; each table draws its other seats uniformly from them.
        rules: The game.
        players: Players at a table.
        teacher: An agent of the table whose move is each position's label, and whose ``win_probabilities`` give the
            gap to the learner's own move (a run's: :func:`exact_teacher`).
        positions: Decisions labelled per iteration (about).
        tables: Games played per iteration to find them.
        memory: The update learns from the newest iterations' positions, at least this many.
        learning_rate: Adam's step size.
        epochs: Passes over the memory per iteration.
        batch_size: Positions per gradient step.
        seed: Everything random.

    Its :attr:`should_stop` (a run's: Ctrl-C, or ``max_minutes`` past) is asked after each gradient step of an
    update: once it says so, the update ends there (its passes over a large memory can take long).
    """

    def __init__(
        self,
        model,
        opponents: Sequence[Any],
        rules: str | R.Rules,
        players: int,
        teacher: Any,
        positions: int = 40_000,
        tables: int = 2048,
        memory: int = 400_000,
        learning_rate: float = 1e-4,
        epochs: int = 2,
        batch_size: int = 512,
        seed: int = 0,
    ) -> None:
        from yacht_agents.ppo import PPOAgent

        self.model, self.teacher = model, teacher
        self.rules, self.players = R.get_rules(rules), players
        self.learner = PPOAgent.from_model(model, self.rules, name="learner")
        self.agents = [self.learner, *opponents]
        self.positions, self.tables = positions, tables
        self.epochs, self.batch_size = epochs, batch_size
        self.memory: list[dict[str, np.ndarray]] = []
        self.memory_size = memory
        self.rng = np.random.default_rng(seed)
        self.solo, self.view = _encoders(self.rules, players)
        self.should_stop: Callable[[], bool] = lambda: False
        for group in model.policy.optimizer.param_groups:
            group["lr"] = learning_rate

    def play_games(self) -> tuple[np.ndarray, np.ndarray]:
        """Plays ``tables`` games; returns the learner's observations and legal moves at the decisions kept."""
        n, p = self.tables, self.players
        table = TableState(self.rules, p, n)
        table.start(draw_stream(self.rng, self.rules, n * p).reshape(n, p, self.rules.stream_rows, R.NUM_DICE + 1))
        seat = self.rng.integers(p, size=n)
        agent_at = 1 + self.rng.integers(len(self.agents) - 1, size=(n, p))
        agent_at[np.arange(n), seat] = 0
        # A learner makes about 2.5 decisions a turn: this share keeps about `positions` of them.
        share = min(1.0, self.positions / (n * self.rules.num_categories * 2.5))
        found_obs, found_masks = [], []
        playing = np.ones(n, dtype=bool)
        while playing.any():
            at = np.flatnonzero(playing)
            learner = at[agent_at[at, table.current[at]] == 0]
            if learner.size:
                # Two draws per decision, the first deciding: the stream of the run that shipped ppo:selfplay_standard,
                # whose trainer drew a second sample for decisions it did not label.
                chosen = learner[self.rng.random((2, learner.size))[0] < share]
                if chosen.size:
                    found_obs.append(self.view.observe(table, table.current)[chosen])
                    found_masks.append(table.mask[chosen])
            actions = np.zeros(n, dtype=np.intp)
            actions[at] = act_at_tables(self.agents, agent_at[at, table.current[at]], table, at, self.solo, self.view)
            _, over = table.play(actions, playing)
            playing &= ~over
        if not found_obs:
            return np.zeros((0, self.view.size), np.float32), np.zeros((0, self.rules.num_actions), bool)
        return np.concatenate(found_obs), np.concatenate(found_masks)

    def _logits(self, obs: np.ndarray, masks: np.ndarray) -> torch.Tensor:
        distribution = self.model.policy.get_distribution(torch.as_tensor(obs, dtype=torch.float32), action_masks=masks)
        return distribution.distribution.logits

    def label(self, obs: np.ndarray, masks: np.ndarray) -> dict[str, np.ndarray]:
        """The teacher's move at every position (``labels``), the learner's most likely one (``top``) and ``gaps``:
        the teacher's win probability of its move minus that of the learner's, by the teacher's model.
        """
        with torch.no_grad():
            top = self._logits(obs, masks).numpy().argmax(axis=1)
        labels = np.asarray(self.teacher.act(obs, masks), dtype=np.intp).reshape(-1)
        values = self.teacher.win_probabilities(*self.teacher.read(obs))
        rows = np.arange(len(top))
        return {
            "obs": obs,
            "masks": masks,
            "labels": labels,
            "top": top,
            "gaps": values[rows, labels] - values[rows, top],
        }

    def update(self, data: dict[str, np.ndarray]) -> dict[str, float]:
        """Adds the labelled positions to the memory (the last ``memory`` of them) and takes ``epochs`` passes of
        cross-entropy toward every remembered label (fewer once :attr:`should_stop` says so: at least one step).
        """
        self.memory.append({key: data[key] for key in ("obs", "masks", "labels")})
        while sum(len(part["labels"]) for part in self.memory[1:]) >= self.memory_size:
            self.memory.pop(0)
        obs_all = np.concatenate([part["obs"] for part in self.memory])
        masks_all = np.concatenate([part["masks"] for part in self.memory])
        labels_all = torch.as_tensor(np.concatenate([part["labels"] for part in self.memory]))
        policy = self.model.policy
        policy.set_training_mode(True)
        losses = []
        for batch in self._batches(len(labels_all)):
            losses.append(self._step(obs_all[batch], labels_all[batch], masks_all[batch]))
            if self.should_stop():
                break
        policy.set_training_mode(False)
        return {"cross_entropy": float(np.mean(losses)), "memory": len(labels_all)}

    def _batches(self, size: int) -> Iterator[np.ndarray]:
        """The batches of ``epochs`` passes over ``size`` positions, each pass in a new random order."""
        for _ in range(self.epochs):
            order = self.rng.permutation(size)
            for start in range(0, size, self.batch_size):
                yield order[start : start + self.batch_size]

    def _step(self, obs: np.ndarray, labels: torch.Tensor, masks: np.ndarray) -> float:
        """One gradient step of cross-entropy toward ``labels`` on a batch; returns its loss."""
        policy = self.model.policy
        _, log_prob, _ = policy.evaluate_actions(torch.as_tensor(obs), labels, action_masks=masks)
        loss = -log_prob.mean()
        policy.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        policy.optimizer.step()
        return loss.item()

    def iteration(self) -> dict[str, float]:
        """One iteration: games, labels, update; returns the row of ``iterations.csv`` (but its first two columns)."""
        data = self.label(*self.play_games())
        stats = self.update(data)
        changed = data["labels"] != data["top"]
        stats.update(
            positions=len(data["labels"]),
            changed=float(changed.mean()),
            gap_changed=float(data["gaps"][changed].mean()) if changed.any() else 0.0,
        )
        return stats


def _start(config: TrainConfig, opponents: list) -> tuple[Any, Any]:
    """The learner (the network of the config at the distillation's table, with the ``init`` model's weights) and
    the env it was built on (the table against the opponents: it gives the network its spaces).
    """
    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(
        config.n_envs, pool=opponents, players=config.distill.players, reward="win", rules=config.rules
    )
    return start_model(config, env), env


class DistillState:
    """The distillation's :class:`~yacht_lab.training.run_context.TrainerState`: the learner, saved as a model at each
    evaluation (``checkpoints/iteration_<N>.zip``). Its runs are not resumed (the memory of positions is not
    saved): a checkpoint is a model to start a new run from (``init``).
    """

    checkpoint_suffix = ".zip"

    def __init__(self, model) -> None:
        self.model = model
        self.iteration = 0

    def progress(self) -> int:
        """Iterations done."""
        return self.iteration

    def save_checkpoint(self, path) -> None:
        """The learner as a ``MaskablePPO`` model."""
        save_atomically(self.model, path)

    def load_checkpoint(self, path) -> None:
        """Never called: the run context refuses to resume a distillation."""
        raise ValueError("a distill run is not resumed: start a new run from its model (init)")


def train_distill(config: TrainConfig, output_dir="runs", resume=None, **options):
    """Trains a run of a config with a ``distill`` section; returns its folder.

    The folder holds ``config.yaml``, ``command.txt``, ``model.zip``, ``checkpoints/iteration_<N>.zip``,
    ``iterations.csv`` and ``learning_curve.csv`` (the learner's win share against each of ``distill.opponents``,
    every ``distill.eval_every`` iterations and at the end, on ``eval.games`` deals of ``eval.seed``), in a
    :class:`~yacht_lab.training.run_context.RunContext`. Ctrl-C or SIGTERM stops after the current iteration and saves;
    a second one stops at once. A run is not resumed (``resume`` is refused): start a new one from its model (``init``).
    ``options`` are the run context's (``command``, ``progress``, ``name``, ``rerun``: as :func:`yacht_lab.train`
    takes them).

    Raises:
        ValueError: a bad config (or another trainer's), an output folder that cannot be written, a ``resume``.
    """
    from yacht_agents import make_agent

    if resume is not None:
        raise ValueError("a distill run is not resumed: start a new run from its model (init)")
    validated(config)
    require_trainer(config, "distill")
    section, players = config.distill, config.distill.players
    context = RunContext(
        config,
        output_dir,
        fields=CURVE_FIELDS,
        unit="iteration",
        checkpoint_every=section.eval_every,
        budget=section.iterations,
        resumable=False,
        **options,
    )
    with context as run:
        torch.set_num_threads(config.torch_threads)
        specs = enumerate(section.opponents)
        opponents = [make_agent(spec, config.rules, seed=i, players=players) for i, spec in specs]
        model, env = _start(config, opponents)
        run.callback(env.close)
        teacher = exact_teacher(config.init, config.rules, players)
        settings = {key: getattr(section, key) for key in ("positions", "tables", "memory", "epochs", "batch_size")}
        trainer = Distiller(
            model,
            opponents,
            config.rules,
            players,
            teacher,
            learning_rate=section.learning_rate,
            seed=config.seed,
            **settings,
        )
        run.start()
        state = DistillState(model)
        _iterate(config, trainer, state, run)
        run.check_free_space(state, "model.zip")
        save_atomically(model, run.dir / "model.zip")  # last: a run folder with model.zip is a complete run
    return run.dir


def _iterate(config: TrainConfig, trainer: Distiller, state: DistillState, run: RunContext) -> None:
    """The run's iterations, evaluations and checkpoints, until its last iteration, its time or a stop."""
    section = config.distill
    rows = []

    def evaluate(iteration: int) -> None:
        found = []
        for spec in section.opponents:
            games, seed = config.eval.games, config.eval.seed
            _, row = evaluate_against(state.model, config.rules, spec, section.players, games, seed)
            found.append({"iteration": iteration, **row})
        run.add_rows(*found)
        if run.show_progress:
            rates = ", ".join(f"{r['member']} {100 * r['win_rate']:.2f}%" for r in found)
            print(f"iteration {iteration}: win share against {rates}", file=sys.stderr, flush=True)

    trainer.should_stop = lambda: run.should_stop
    evaluate(0)
    for iteration in range(1, section.iterations + 1):
        if run.should_stop:  # asked during an evaluation: no iteration, no evaluation more
            run.end(state)
            break
        stats = trainer.iteration()
        state.iteration = iteration
        minutes = run.wall_minutes()
        rows.append({"iteration": iteration, "wall_minutes": round(minutes, 3), **stats})
        write_curve(run.dir / "iterations.csv", rows, ITERATION_FIELDS)
        if run.show_progress:
            print(
                f"iteration {iteration} ({minutes:.1f} min): {stats['positions']} positions, "
                f"{100 * stats['changed']:.1f}% relabelled",
                file=sys.stderr,
                flush=True,
            )
        last = iteration == section.iterations or run.should_stop
        saved = run.end(state) if last else run.checkpoint_if_due(state)  # every eval_every iterations, and the last
        if saved is not None and not run.stop_requested:
            evaluate(iteration)
        if last:
            break
