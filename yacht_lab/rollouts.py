"""Rollout policy improvement: the learner's late moves judged by playing them out on common dice.

Self-play PPO on the win reward learned nothing in seven tries (``docs/playing-to-win.md``): a move the start plays
wrongly is worth about 0.016 reward units in one game whose outcome has a noise of about 1, and a policy gradient sees
each decision once. This trainer asks the question the other way round, as the rollout algorithm of Tesauro and
Galperin (backgammon, 1996) and approximate policy iteration as classification (Lagoudakis and Parr, 2003) do:

1. **Positions.** The learner (playing its deterministic moves) meets opponents drawn from ``opponents`` at
   ``tables`` tables; at a share of its decisions with at most ``late_turns`` categories open the table is copied
   (:meth:`yacht_env.game.TableState.take`).
2. **Futures.** Each position is given ``futures`` fresh futures (:meth:`yacht_env.game.TableState.redeal`: the
   player on turn keeps the roll it sees; every die still to come, its own and the opponents', is drawn anew).
3. **Branches on common dice.** In every future each of the learner's ``candidates`` most likely moves is played,
   then the game runs to its end with everyone playing as they do (the learner its current deterministic policy),
   all branches of a future on the same dice: their outcomes differ by the move alone, so most branches of a
   future end alike, and the difference of two moves' mean outcomes has a small fraction of one game's noise.
4. **Labels, by a race.** ``futures`` common futures for every candidate first; an alternative leaves the race if
   it ends as the policy's own move in every future (it never matters here) or is worse by ``z`` standard errors of
   the paired difference; ``refine`` more futures for the positions with alternatives left. The label is the
   candidate with the best mean outcome (``win_rewards``: +1 shared by the winners, -1 by the others); a tie goes
   to the more likely move.
5. **Update.** The policy takes ``epochs`` passes of cross-entropy toward the labels of the newest iterations (at
   least ``memory`` positions), plus ``anchor`` times ``KL(pi_init || pi)`` on the learner's earlier decisions of
   this iteration's games, which holds the rest of its play.

**Exact labels** (``labels: exact``, the ninth try): step 2-4 are replaced by a teacher. The start's whole policy is
read (:func:`yacht_agents.win.policy_table`) and evaluated exactly (:func:`yacht_env.distributions.
policy_distributions`), and a position's label is the move of the win agent over it (:class:`yacht_agents.win.
WinAgent` with ``base`` the start): the highest probability of finishing first if everyone plays the start's policy
after the move. That is one step of policy iteration for the win from the learner's own starting play, its
evaluation exact rather than sampled; the learner distils it on the positions its own play reaches.

A cross-entropy's pull on a move's logit is ``1 - pi(move)``, however unlikely the move: the softmax policy
gradient's is the move's probability. Nothing of the solver enters: the race's labels are game outcomes of the
learner's own play against its opponents (the optimal agent among them is part of the environment, as in the
league), the exact labels a computation on the start's own policy and the rules of the dice.

Measured (the eighth self-play try, ``docs/playing-to-win.md``): a paired difference has a standard deviation of
0.27 a future where one game's outcome has 1.4, yet the labels at 512 futures moved the policy's odds, not its
choices: against its start 49.89% [49.77, 50.00] over 200,000 games at two players. The exact labels (the ninth try,
``benchmarks/training/selfplay_exact.yaml``, 51 minutes on one core) gave the shipped ``ppo:selfplay_standard``:
51.31% [51.11, 51.50] against its start, and +1.29 points [+1.07, +1.51] more wins against the solver on the same
deals.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, draw_stream, win_rewards
from yacht_env.opponents import act_at_tables
from yacht_lab.anchor import masked_kl
from yacht_lab.config import MAX_BRANCHES

__all__ = ["Positions", "branch_outcomes", "play_to_end", "RolloutImprover"]


def play_to_end(agents: Sequence[Any], table: TableState, agent_at: np.ndarray) -> np.ndarray:
    """Plays every table of the batched ``table`` on to its end (``agent_at[t, seat]``: the index into ``agents``
    of the player at each seat) and returns the final totals by seat, ``(num_tables, P)``."""
    n = table.num_tables
    solo, view = _encoders(table.rules, table.num_players)
    playing = table.players.open_mask.reshape(n, -1).any(axis=1)
    while playing.any():
        at = np.flatnonzero(playing)
        actions = np.zeros(n, dtype=np.intp)
        actions[at] = act_at_tables(agents, agent_at[at, table.current[at]], table, at, solo, view)
        _, over = table.play(actions, playing)
        playing &= ~over
    return table.totals().astype(np.int64)


@functools.cache
def _encoders(rules: R.Rules, players: int) -> tuple[ObservationEncoder, MultiplayerEncoder]:
    return ObservationEncoder(rules), MultiplayerEncoder(rules, players)


@dataclass
class Positions:
    """Copies of tables at a learner's decision: ``table`` (one per position), the learner's ``seat``, who sits
    where (``agent_at``), and the learner's observation and legal moves there."""

    table: TableState
    seat: np.ndarray
    agent_at: np.ndarray
    obs: np.ndarray
    masks: np.ndarray

    def part(self, rows: np.ndarray) -> Positions:
        """The positions ``rows`` (intp indices), copied."""
        return Positions(self.table.take(rows), self.seat[rows], self.agent_at[rows], self.obs[rows], self.masks[rows])


def branch_outcomes(
    positions: Positions,
    candidates: np.ndarray,
    agents: Sequence[Any],
    futures: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The learner's outcome after each candidate move in each of ``futures`` common futures per position.

    Args:
        positions: The positions (the learner on turn at each).
        candidates: intp ``(m, k)``: legal moves per position; -1 pads a position with fewer (not played).
        agents: Everyone who plays (``positions.agent_at`` indexes it).
        futures: Futures per position, shared by its candidates.
        rng: The generator of the futures' dice.

    Returns:
        float64 ``(m, futures, k)``: ``win_rewards`` of the learner at the end of each branch; NaN for padding.
    """
    m, k = candidates.shape
    base = positions.table.take(np.repeat(np.arange(m), futures))
    base.redeal(rng)
    position, future, slot = np.nonzero(np.broadcast_to((candidates >= 0)[:, None, :], (m, futures, k)))
    branches = base.take(position * futures + future)
    branches.play(candidates[position, slot])
    totals = play_to_end(agents, branches, positions.agent_at[position])
    outcomes = np.full((m, futures, k), np.nan)
    outcomes[position, future, slot] = win_rewards(totals)[np.arange(len(position)), positions.seat[position]]
    return outcomes


class RolloutImprover:
    """The trainer of the module docstring, on an SB3 ``MaskablePPO`` ``model`` whose policy sees the table.

    Args:
        model: The learner (its policy is trained in place).
        reference: The start's policy (the anchor's reference), or ``None`` for no anchor.
        opponents: The agents the learner meets; each table draws its other seats uniformly from them.
        rules, players: The game.
        late_turns: Decisions with at most this many categories open are labelled.
        candidates, futures: Moves tried per position, and common futures per position.
        positions: Positions labelled per iteration (about).
        tables: Tables played per iteration to find them.
        anchor: The weight of ``KL(pi_init || pi)`` on the earlier decisions.
        learning_rate, epochs, batch_size: The update.
        seed: Everything random.
        teacher: ``None`` for the race's labels; or an agent of the table (``labels: exact``: a
            :class:`~yacht_agents.win.WinAgent` over the start's policy) whose move is each position's label, and
            whose ``win_probabilities`` give the gap to the learner's own move.
    """

    def __init__(
        self,
        model,
        reference,
        opponents: Sequence[Any],
        rules: str | R.Rules,
        players: int,
        late_turns: int = 4,
        candidates: int = 4,
        futures: int = 64,
        refine: int = 448,
        z: float = 2.0,
        positions: int = 2048,
        tables: int = 1024,
        anchor: float = 10.0,
        memory: int = 200_000,
        learning_rate: float = 1e-4,
        epochs: int = 4,
        batch_size: int = 512,
        seed: int = 0,
        teacher: Any = None,
    ) -> None:
        from yacht_agents.ppo import PPOAgent

        self.model, self.reference, self.teacher = model, reference, teacher
        self.rules, self.players = R.get_rules(rules), players
        self.learner = PPOAgent.from_model(model, self.rules, name="learner")
        self.agents = [self.learner, *opponents]
        self.late_turns, self.candidates, self.futures = late_turns, candidates, futures
        self.refine, self.z = refine, z
        self.positions, self.tables = positions, tables
        self.anchor, self.epochs, self.batch_size = anchor, epochs, batch_size
        self.memory: list[dict[str, np.ndarray]] = []
        self.memory_size = memory
        self.rng = np.random.default_rng(seed)
        self.solo, self.view = _encoders(self.rules, players)
        for group in model.policy.optimizer.param_groups:
            group["lr"] = learning_rate
        self._open = R.open_bits(self.rules.num_categories).sum(axis=1)

    # ------------------------------------------------------------------ positions
    def play_games(self) -> tuple[list[Positions], np.ndarray, np.ndarray]:
        """Plays ``tables`` games; returns the late positions copied on the way, and the learner's earlier
        decisions' observations and masks (for the anchor)."""
        n, p = self.tables, self.players
        table = TableState(self.rules, p, n)
        table.start(draw_stream(self.rng, self.rules, n * p).reshape(n, p, self.rules.stream_rows, R.NUM_DICE + 1))
        seat = self.rng.integers(p, size=n)
        agent_at = 1 + self.rng.integers(len(self.agents) - 1, size=(n, p))
        agent_at[np.arange(n), seat] = 0
        # A learner makes about 3 decisions a turn: this share labels about `positions` of the late ones.
        late_decisions = n * min(self.late_turns, self.rules.num_categories) * 2.5
        share = min(1.0, self.positions / late_decisions)
        found, early_obs, early_masks = [], [], []
        playing = np.ones(n, dtype=bool)
        games = table.players
        while playing.any():
            at = np.flatnonzero(playing)
            learner = at[agent_at[at, table.current[at]] == 0]
            if learner.size:
                rows = table.on_turn[learner]
                late = self._open[games.open_mask[rows]] <= self.late_turns
                chosen = learner[late & (self.rng.random(learner.size) < share)]
                if chosen.size:
                    copy = table.take(chosen)
                    obs = self.view.observe(copy, copy.current)
                    found.append(Positions(copy, copy.current.copy(), agent_at[chosen], obs, copy.mask.copy()))
                early = learner[~late & (self.rng.random(learner.size) < share)]
                if early.size:
                    obs = self.view.observe(table, table.current)[early]
                    early_obs.append(obs)
                    early_masks.append(games.mask[table.on_turn[early]])
            actions = np.zeros(n, dtype=np.intp)
            actions[at] = act_at_tables(self.agents, agent_at[at, table.current[at]], table, at, self.solo, self.view)
            _, over = table.play(actions, playing)
            playing &= ~over
        width = self.view.size
        early_obs = np.concatenate(early_obs) if early_obs else np.zeros((0, width), np.float32)
        early_masks = np.concatenate(early_masks) if early_masks else np.zeros((0, self.rules.num_actions), bool)
        return found, early_obs, early_masks

    def _logits(self, policy, obs: np.ndarray, masks: np.ndarray) -> torch.Tensor:
        obs_t = torch.as_tensor(obs, dtype=torch.float32)
        distribution = policy.get_distribution(obs_t, action_masks=masks)
        return distribution.distribution.logits

    def _outcomes(self, positions: Positions, candidates: np.ndarray, futures: int) -> np.ndarray:
        """:func:`branch_outcomes` in chunks of about :data:`yacht_lab.config.MAX_BRANCHES` branches (about
        2 kB a table of two players)."""
        chunk = max(1, MAX_BRANCHES // (futures * candidates.shape[1]))
        return np.concatenate(
            [
                branch_outcomes(
                    positions.part(np.arange(i, min(i + chunk, len(candidates)))),
                    candidates[i : i + chunk],
                    self.agents,
                    futures,
                    self.rng,
                )
                for i in range(0, len(candidates), chunk)
            ]
        )

    def label(self, found: list[Positions]) -> dict[str, np.ndarray]:
        """Candidates, their values and the labels of every position found (see the module: a race in two stages,
        or the teacher's moves)."""
        positions = Positions(
            TableState.stack([p.table for p in found]),
            np.concatenate([p.seat for p in found]),
            np.concatenate([p.agent_at for p in found]),
            np.concatenate([p.obs for p in found]),
            np.concatenate([p.masks for p in found]),
        )
        with torch.no_grad():
            logits = self._logits(self.model.policy, positions.obs, positions.masks).numpy()
        if self.teacher is not None:
            return self._teacher_labels(positions, logits)
        order = np.argsort(-logits, axis=1, kind="stable")[:, : self.candidates]
        candidates = np.where(np.take_along_axis(positions.masks, order, axis=1), order, -1)
        first = self._outcomes(positions, candidates, self.futures)
        # Stage 1: an alternative stays in the race unless it ends as the first move in every future (it never matters
        # here) or is worse by more than z standard errors of the paired difference (always worse: by any margin).
        diff = first[:, :, 1:] - first[:, :, :1]
        differs = (np.nan_to_num(diff, nan=0.0) != 0).any(axis=1)
        with np.errstate(invalid="ignore"):
            mean, spread = diff.mean(axis=1), diff.std(axis=1, ddof=1)
        alive = (candidates[:, 1:] >= 0) & differs & (mean + self.z * spread / np.sqrt(self.futures) > 0)
        racing = np.flatnonzero(alive.any(axis=1))
        total = np.nan_to_num(first, nan=0.0).sum(axis=1)
        count = np.full(candidates.shape, float(self.futures))
        if self.refine and racing.size:
            second = np.where(np.column_stack([np.ones(len(racing), bool), alive[racing]]), candidates[racing], -1)
            more = self._outcomes(positions.part(racing), second, self.refine)
            total[racing] += np.nan_to_num(more, nan=0.0).sum(axis=1)
            count[racing] += np.where(second >= 0, self.refine, 0)
        values = total / count
        eligible = np.column_stack([candidates[:, 0] >= 0, alive])
        values = np.where(eligible, values, -np.inf)
        best = values.argmax(axis=1)  # the first of equals: the more likely move
        rows = np.arange(len(best))
        return {
            "obs": positions.obs,
            "masks": positions.masks,
            "labels": candidates[rows, best],
            "top": candidates[:, 0],
            "gaps": values[rows, best] - values[:, 0],
            "raced": np.isin(rows, racing),
            "candidates": candidates,
            "values": values,
        }

    def _teacher_labels(self, positions: Positions, logits: np.ndarray) -> dict[str, np.ndarray]:
        """``label`` with a teacher: its move at every position; ``gaps``: its win probability minus that of the
        learner's own most likely move, by the teacher's model."""
        top = logits.argmax(axis=1)
        labels = np.asarray(self.teacher.act(positions.obs, positions.masks), dtype=np.intp).reshape(-1)
        values = self.teacher.win_probabilities(*self.teacher.read(positions.obs))
        rows = np.arange(len(top))
        return {
            "obs": positions.obs,
            "masks": positions.masks,
            "labels": labels,
            "top": top,
            "gaps": values[rows, labels] - values[rows, top],
            "raced": np.zeros(len(top), dtype=bool),
        }

    # ------------------------------------------------------------------ update
    def update(self, data: dict[str, np.ndarray], early_obs: np.ndarray, early_masks: np.ndarray) -> dict[str, float]:
        """Adds the labelled positions to the memory (the last ``memory`` of them) and takes ``epochs`` passes of
        cross-entropy toward every remembered label, each minibatch with ``anchor`` x ``KL(pi_init || pi)`` on as many
        of this iteration's earlier decisions."""
        self.memory.append({key: data[key] for key in ("obs", "masks", "labels")})
        while sum(len(part["labels"]) for part in self.memory[1:]) >= self.memory_size:
            self.memory.pop(0)
        obs_all = np.concatenate([part["obs"] for part in self.memory])
        masks_all = np.concatenate([part["masks"] for part in self.memory])
        labels_all = torch.as_tensor(np.concatenate([part["labels"] for part in self.memory]))
        policy = self.model.policy
        policy.set_training_mode(True)
        anchored = self.reference is not None and len(early_obs) > 0
        if anchored:
            with torch.no_grad():
                reference_log = torch.log_softmax(self._logits(self.reference, early_obs, early_masks), -1)
        losses, kls = [], []
        for _ in range(self.epochs):
            order = self.rng.permutation(len(labels_all))
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                obs = torch.as_tensor(obs_all[batch])
                _, log_prob, _ = policy.evaluate_actions(obs, labels_all[batch], action_masks=masks_all[batch])
                loss = -log_prob.mean()
                losses.append(loss.item())
                if anchored:
                    pick = self.rng.integers(len(early_obs), size=len(batch))
                    log_q = torch.log_softmax(self._logits(policy, early_obs[pick], early_masks[pick]), -1)
                    kl = masked_kl(reference_log[pick], log_q).mean()
                    kls.append(kl.item())
                    loss = loss + self.anchor * kl
                policy.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
                policy.optimizer.step()
        policy.set_training_mode(False)
        return {
            "cross_entropy": float(np.mean(losses)),
            "kl_early": float(np.mean(kls)) if kls else 0.0,
            "memory": len(labels_all),
        }

    def iteration(self) -> dict[str, float]:
        found, early_obs, early_masks = self.play_games()
        data = self.label(found)
        stats = self.update(data, early_obs, early_masks)
        changed = data["labels"] != data["top"]
        stats.update(
            positions=len(data["labels"]),
            raced=float(data["raced"].mean()),
            changed=float(changed.mean()),
            gap_changed=float(data["gaps"][changed].mean()) if changed.any() else 0.0,
        )
        return stats


# --------------------------------------------------------------------------------------------------
# A run: train.py with a rollouts section
# --------------------------------------------------------------------------------------------------
#: ``iterations.csv``: one row per iteration (what the race found and what the update did).
ITERATION_FIELDS = (
    "iteration",
    "wall_minutes",
    "positions",
    "raced",
    "changed",
    "gap_changed",
    "cross_entropy",
    "kl_early",
    "memory",
)
#: ``learning_curve.csv``: one row per opponent per evaluation.
CURVE_FIELDS = ("iteration", "member", "win_rate", "win_rate_ci95", "mean_score", "mean_margin", "games")


def exact_teacher(init: str, rules: str | R.Rules, players: int):
    """The teacher of ``labels: exact``: the win agent over the ``init`` model's own policy (read whole and evaluated
    exactly, :func:`yacht_agents.win.policy_table`), for a table of ``players``.

    Raises:
        ValueError: ``init`` is not a solo model of these rules (a table model's moves depend on the table).
    """
    from yacht_agents.ppo import PPOAgent
    from yacht_agents.win import WinAgent

    start = PPOAgent(init, rules, name="start")
    if start.table_players is not None:
        raise ValueError(
            f"rollouts.labels exact evaluates the start's own play: init must be a solo (Yacht-v0) model, and "
            f"{init!r} sees a table of {start.table_players}"
        )
    return WinAgent(rules, players, name="teacher", base=start)


def train_rollouts(config, output_dir, command: str, progress: bool = True, name: str | None = None):
    """Trains a run of a config with a ``rollouts`` section; returns its folder (:func:`yacht_lab.training.train`).

    The folder holds ``config.yaml``, ``command.txt``, ``model.zip``, ``checkpoints/iteration_<N>.zip``,
    ``iterations.csv`` and ``learning_curve.csv`` (the learner's win share against each of ``rollouts.opponents``,
    every ``rollouts.eval_every`` iterations and at the end, on ``eval.games`` deals of ``eval.seed``). Ctrl-C or
    SIGTERM stops after the current iteration and saves; a second one stops at once. A run is not resumed: start
    a new one from its model (``init``).
    """
    from yacht_lab.callbacks import StopFlag
    from yacht_lab.league import evaluate_member, make_member
    from yacht_lab.runs import (
        claim_run_folder,
        release_run_folder,
        run_folder_lock,
        save_atomically,
        start_run_folder,
        write_curve,
    )
    from yacht_lab.tasks import TableTask
    from yacht_lab.training import make_model
    from yacht_lab.warm_start import warm_start

    section = config.rollouts
    players = section.players
    # The learner's network: the table's view of `players` (the table task builds that env; its opponents only size it).
    table_config = dataclasses.replace(config, opponents=["optimal"] * (players - 1), rollouts=None)
    with contextlib.ExitStack() as held, StopFlag() as stop:
        run_dir, claimed = claim_run_folder(output_dir, config, name)
        try:
            held.enter_context(run_folder_lock(run_dir))
            torch.set_num_threads(config.torch_threads)
            env = TableTask(table_config).make_env()
            held.callback(env.close)
            model, reference = make_model(table_config, env, None), make_model(table_config, env, None)
            warm_start(model, table_config)
            warm_start(reference, table_config)
            reference.policy.set_training_mode(False)
            reference.policy.requires_grad_(False)
            opponents = [make_member(spec, config.rules, players, seed=i) for i, spec in enumerate(section.opponents)]
            run_only = ("opponents", "players", "labels", "iterations", "eval_every")
            settings = {k: v for k, v in dataclasses.asdict(section).items() if k not in run_only}
            reference = reference.policy if section.anchor > 0 else None
            teacher = exact_teacher(config.init, config.rules, players) if section.labels == "exact" else None
            trainer = RolloutImprover(
                model, reference, opponents, config.rules, players, seed=config.seed, teacher=teacher, **settings
            )
            start_run_folder(run_dir, config, command, [], CURVE_FIELDS)
        except BaseException:
            release_run_folder(claimed)
            raise
        stop.arm()
        start, rows, curve = time.time(), [], []

        def evaluate(iteration: int) -> None:
            for spec in section.opponents:
                _, row = evaluate_member(model, config.rules, spec, players, config.eval.games, config.eval.seed)
                curve.append({"iteration": iteration, **row})
            write_curve(run_dir / "learning_curve.csv", curve, CURVE_FIELDS)
            if progress:
                rates = ", ".join(f"{r['member']} {100 * r['win_rate']:.2f}%" for r in curve[-len(section.opponents) :])
                print(f"iteration {iteration}: win share against {rates}", file=sys.stderr, flush=True)

        evaluate(0)
        for iteration in range(1, section.iterations + 1):
            stats = trainer.iteration()
            minutes = (time.time() - start) / 60
            rows.append({"iteration": iteration, "wall_minutes": round(minutes, 3), **stats})
            write_curve(run_dir / "iterations.csv", rows, ITERATION_FIELDS)
            if progress:
                print(
                    f"iteration {iteration} ({minutes:.1f} min): {stats['positions']} positions, "
                    f"{100 * stats['changed']:.1f}% relabelled",
                    file=sys.stderr,
                    flush=True,
                )
            last = iteration == section.iterations or stop.requested
            last = last or (config.max_minutes is not None and minutes >= config.max_minutes)
            if iteration % section.eval_every == 0 or last:
                save_atomically(model, run_dir / "checkpoints" / f"iteration_{iteration}.zip")
                if not stop.requested:
                    evaluate(iteration)
            if last:
                break
        save_atomically(model, run_dir / "model.zip")  # last: a run folder with model.zip is a complete run
    return run_dir
