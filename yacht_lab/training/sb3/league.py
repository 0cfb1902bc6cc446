"""A league of opponents for versus training: fixed agents and frozen snapshots of the learner, drawn for each
opponent seat at each game's start (the config's ``league:`` section, :class:`yacht_lab.training.config.LeagueConfig`).

**Members.** The fixed members are agents (``league.fixed``: ``optimal``, ``win``, ``greedy``, ``ppo:PATH``, ...).
Every ``league.snapshot_every_timesteps`` (at the first rollout start past it, after PPO's update) the learner's
policy is frozen into ``league/snapshot_<N>.zip`` in the run folder and joins the league, loaded back by the safe
loader (:class:`yacht_agents.ppo.PPOAgent`: data, nothing unpickled; it acts deterministically, as every member).
Past ``league.max_snapshots`` snapshots the oldest is retired: never drawn again (its file stays).

**Results.** Each finished game adds, for every opponent seat, the learner's pairwise result against the member
there: 1 if the learner's final total is higher, 1/2 on a tie, 0 if lower (at two players, the game's result).
At each rollout's start every member's counts are multiplied by ``league.pfsp_decay`` and the last rollout's added:
``W <- decay * W + wins``, ``N <- decay * N + games`` (an exponential moving window of about ``1 / (1 - decay)``
rollouts). The learner's win rate against the member is estimated as ``p = (W + 1) / (N + 2)`` (1/2 before any
game: Laplace's rule).

**Sampling.** ``uniform``: every member weight 1. ``pfsp`` (prioritised fictitious self-play, AlphaStar's "hard"
weighting): ``w = max((1 - p) ** pfsp_power, pfsp_floor)``, so the members that beat the learner are drawn most
and none is ever left out. A member's draw probability is its weight over the sum of the weights; with
``league.snapshot_share = s`` the snapshots (once there is one) share ``s`` of the draws and the fixed members
``1 - s``, each group by weight. The env (:class:`yacht_env.versus.YachtVersusVectorEnv` with a pool) draws with
these probabilities from each table's next game; games in flight keep their opponents.

**Files and resume.** Each checkpoint ``checkpoints/step_<N>.zip`` has its league state beside the snapshots,
``league/state_<N>.json`` (members, snapshot files, counts, the snapshot schedule; written atomically), and
``train.py --resume`` restores it: the resumed run draws with the same members and probabilities the
uninterrupted run drew with at step ``N`` (the games in flight then are not restored: they start anew, as in
every resume). Every evaluation plays the learner's deterministic policy against each fixed member
(:func:`yacht_lab.training.sb3.tasks.evaluate_against`: the learner and ``players - 1`` copies of the member, on the
``eval.games`` deals) and writes ``league_curve.csv``; ``learning_curve.csv`` is the row of the first fixed member.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from yacht_env.util import atomic_output, atomic_write, remove_stale_temps
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.runs import VERSUS_CURVE_FIELDS, save_atomically
from yacht_lab.training.sb3.tasks import ScaledReward, TableTask, evaluate_against

LEAGUE_DIR = "league"
CURVE_FILE = "league_curve.csv"
PLOT_FILE = "league_curve.png"
#: The columns of ``league_curve.csv``: one row per evaluation and fixed member (its spec), the learner's win share
#: (ties split) with its 95% CI half-width over deals, its mean score and margin, and the games played.
CURVE_FIELDS = ("timesteps", "member", "win_rate", "win_rate_ci95", "mean_score", "mean_margin", "games")
STATE_FORMAT = 1


def pfsp_weights(wins: np.ndarray, games: np.ndarray, power: float, floor: float) -> np.ndarray:
    """PFSP's weights: ``max((1 - p) ** power, floor)`` with ``p = (wins + 1) / (games + 2)``."""
    p = (np.asarray(wins, dtype=np.float64) + 1) / (np.asarray(games, dtype=np.float64) + 2)
    return np.maximum((1 - p) ** power, floor)


def draw_probabilities(weights: np.ndarray, snapshot: np.ndarray, snapshot_share: float | None) -> np.ndarray:
    """Each member's draw probability: weight over the sum of weights, or with ``snapshot_share`` (once there is a
    snapshot) that share for the snapshots and the rest for the fixed members, each group by weight.
    """
    weights, snapshot = np.asarray(weights, dtype=np.float64), np.asarray(snapshot, dtype=bool)
    if snapshot_share is None or not snapshot.any():
        return weights / weights.sum()
    probabilities = np.zeros_like(weights)
    for group, share in ((~snapshot, 1 - snapshot_share), (snapshot, snapshot_share)):
        probabilities[group] = share * weights[group] / weights[group].sum()
    return probabilities


@dataclass
class Member:
    """A league member: a fixed agent (``spec``) or a snapshot (``file``, relative to the run folder)."""

    name: str
    spec: str | None = None
    file: str | None = None
    timesteps: int | None = None
    wins: float = 0.0
    games: float = 0.0

    @property
    def snapshot(self) -> bool:
        """Whether the member is a snapshot of the learner (not a fixed member)."""
        return self.file is not None


class League:
    """The league's state: its members and their results, the snapshot schedule, and the env it draws in.

    Args:
        config: The run's config (its ``league`` section set).
        run_dir: The run folder (snapshots and states go to its ``league/``).
    """

    def __init__(self, config: TrainConfig, run_dir: Path) -> None:
        self.config, self.settings, self.run_dir = config, config.league, Path(run_dir)
        self.members = [Member(name=spec, spec=spec) for spec in self.settings.fixed]
        self.retired: list[str] = []
        self.last_snapshot = 0
        self.folded_at: int | None = None
        self.env = None  # the YachtVersusVectorEnv: its pool holds the members' agents
        self._env_index: list[int] = []  # each member's index in the env's pool
        self._pending: dict[int, list[float]] = {}  # env index -> [wins, games] since the last fold

    # The state ------------------------------------------------------------------------------------
    def probabilities(self) -> np.ndarray:
        """Each member's draw probability now (see the module docstring)."""
        if self.settings.sampling == "uniform":
            weights = np.ones(len(self.members))
        else:
            wins, games = (np.array([getattr(m, key) for m in self.members]) for key in ("wins", "games"))
            weights = pfsp_weights(wins, games, self.settings.pfsp_power, self.settings.pfsp_floor)
        snapshot = np.array([m.snapshot for m in self.members])
        return draw_probabilities(weights, snapshot, self.settings.snapshot_share)

    def record(self, opponents: np.ndarray, totals: np.ndarray, seat: int) -> None:
        """Counts one finished game: the members at its opponent seats (env indices, seat order), the final totals
        of every seat and the learner's seat.
        """
        mine, others = totals[seat], np.delete(totals, seat)
        for member, theirs in zip(opponents, others, strict=True):
            counts = self._pending.setdefault(int(member), [0.0, 0.0])
            counts[0] += 1.0 if mine > theirs else (0.5 if mine == theirs else 0.0)
            counts[1] += 1.0

    def fold(self, timesteps: int) -> None:
        """Folds the results counted since the last fold into the members' counts (once per step count)."""
        if self.folded_at == timesteps:
            return
        by_env = {index: member for index, member in zip(self._env_index, self.members, strict=True)}
        decay = self.settings.pfsp_decay
        for member in self.members:
            member.wins, member.games = decay * member.wins, decay * member.games
        for index, (wins, games) in sorted(self._pending.items()):
            if index in by_env:  # a retired member's last games count no more
                by_env[index].wins += wins
                by_env[index].games += games
        self._pending.clear()
        self.folded_at = timesteps

    def to_json(self, timesteps: int) -> dict[str, Any]:
        """The league's state at ``timesteps`` as JSON-ready data."""
        return {
            "format": STATE_FORMAT,
            "timesteps": timesteps,
            "folded_at": self.folded_at,
            "last_snapshot": self.last_snapshot,
            "members": [{k: v for k, v in vars(m).items() if v is not None} for m in self.members],
            "retired": list(self.retired),
            "probabilities": self.probabilities().tolist(),  # for the reader; recomputed on loading
        }

    def save(self, timesteps: int) -> Path:
        """Writes ``league/state_<timesteps>.json`` atomically (the results counted so far folded in first)."""
        self.fold(timesteps)
        path = self.run_dir / LEAGUE_DIR / f"state_{timesteps}.json"
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, json.dumps(self.to_json(timesteps), indent=1) + "\n")
        return path

    def restore(self, timesteps: int) -> None:
        """Reads ``league/state_<timesteps>.json`` (the state saved with checkpoint ``step_<timesteps>``).

        Raises:
            ValueError: no such file, or not a league state of this run's config (one line).
        """
        path = self.run_dir / LEAGUE_DIR / f"state_{timesteps}.json"
        try:
            state = json.loads(path.read_text())
            members = [Member(**entry) for entry in state["members"]]
            fixed = [m.spec for m in members if not m.snapshot]
            if state["format"] != STATE_FORMAT or state["timesteps"] != timesteps or fixed != self.settings.fixed:
                raise ValueError
            if any(not (math.isfinite(m.wins) and math.isfinite(m.games)) for m in members):
                raise ValueError
            if any(m.snapshot and m.file != f"{LEAGUE_DIR}/{m.name}.zip" for m in members):
                raise ValueError  # snapshots are read from the run's league/ folder only
            last, folded, retired = int(state["last_snapshot"]), state["folded_at"], list(state["retired"])
        except FileNotFoundError:
            raise ValueError(
                f"cannot resume: the league state of step {timesteps} ({str(path)!r}) is missing"
            ) from None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            raise ValueError(f"cannot resume: {str(path)!r} is not this run's league state") from None
        self.members, self.last_snapshot, self.folded_at, self.retired = members, last, folded, retired

    # The env --------------------------------------------------------------------------------------
    def connect(self, env, snapshots_from_disk: bool) -> None:
        """Seats the members in ``env`` (a pool env built with the fixed members, in order) and sets its weights;
        with ``snapshots_from_disk`` the snapshots of a restored state are loaded from the run folder first.

        Raises:
            ValueError: a snapshot that does not load (one line).
        """
        self.env = env
        fixed = len(self.settings.fixed)
        self._env_index = list(range(fixed))
        snapshots = [m for m in self.members if m.snapshot]
        if snapshots_from_disk and snapshots:
            try:
                agents = [self._load_snapshot(m) for m in snapshots]
            except ValueError as error:
                raise ValueError(f"cannot resume: league: {error}") from None
            self._env_index += env.add_members(agents)
        self.push_weights()

    def push_weights(self) -> None:
        """Gives the env the members' draw probabilities (0 for the retired members still in its pool)."""
        weights = np.zeros(len(self.env.pool))
        weights[self._env_index] = self.probabilities()
        self.env.set_weights(weights)

    def _load_snapshot(self, member: Member):
        from yacht_agents.ppo import PPOAgent

        return PPOAgent(self.run_dir / member.file, self.config.rules, name=member.name)

    def snapshot(self, model, timesteps: int) -> Member:
        """Freezes ``model`` into ``league/snapshot_<timesteps>.zip``, adds it to the league and the env, retires
        the oldest snapshot past ``max_snapshots``.
        """
        member = Member(
            name=f"snapshot_{timesteps}", file=f"{LEAGUE_DIR}/snapshot_{timesteps}.zip", timesteps=timesteps
        )
        path = self.run_dir / member.file
        path.parent.mkdir(exist_ok=True)
        save_atomically(model, path)
        (index,) = self.env.add_members([self._load_snapshot(member)])
        self.members.append(member)
        self._env_index.append(index)
        self.last_snapshot = timesteps
        snapshots = [i for i, m in enumerate(self.members) if m.snapshot]
        if len(snapshots) > self.settings.max_snapshots:
            oldest = snapshots[0]
            self.retired.append(self.members.pop(oldest).name)
            self.env.retire_members([self._env_index.pop(oldest)])
        return member

    def snapshot_due(self, timesteps: int) -> bool:
        """Whether a snapshot is to be taken at ``timesteps``."""
        return (
            self.settings.max_snapshots > 0 and timesteps - self.last_snapshot >= self.settings.snapshot_every_timesteps
        )


class LeagueCallback(BaseCallback):
    """Counts each finished game's results; at each rollout's start folds them in, takes a snapshot when one is
    due, and gives the env the new draw probabilities. Placed before the checkpoint callback, whose saves write
    the league's state (:meth:`LeagueTask.checkpoint`).
    """

    def __init__(self, league: League) -> None:
        super().__init__()
        self.league = league

    def _on_training_start(self) -> None:
        remove_stale_temps(self.league.run_dir / LEAGUE_DIR)

    def _on_rollout_start(self) -> None:
        league, steps = self.league, self.model.num_timesteps
        league.fold(steps)
        if league.snapshot_due(steps):
            league.snapshot(self.model, steps)
        league.push_weights()

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if "opponents" in info:
                self.league.record(info["opponents"], info["totals"], info["seat"])
        return True


class LeagueTask(TableTask):
    """One seat at tables whose opponents are drawn from the league; the curve is the win rate against the first
    fixed member, ``league_curve.csv`` against each.
    """

    def __init__(self, config: TrainConfig) -> None:
        super().__init__(config)
        self.league: League | None = None
        self.league_rows: list[dict[str, Any]] = []
        self._env = None

    @property
    def players(self) -> int:
        """Players at a table: the league's."""
        return self.config.league.players

    @property
    def against(self) -> list[str]:
        """The curve's opponent: the first fixed member."""
        return [self.config.league.fixed[0]]

    def make_env(self):
        """The training VecEnv: the tables whose opponents are drawn from the league's pool, rewards scaled."""
        from yacht_agents import make_agent
        from yacht_env.sb3 import YachtSB3VecEnv

        config, players = self.config, self.config.league.players
        fixed = [make_agent(spec, config.rules, seed=i, players=players) for i, spec in enumerate(config.league.fixed)]
        env = YachtSB3VecEnv(
            config.n_envs, pool=fixed, players=players, reward=config.reward, seat=config.seat, rules=config.rules
        )
        self._env = env.vector_env
        return ScaledReward(env, config.reward_scale)

    def attach(self, run_dir: Path, model, resumed: bool) -> None:
        """Builds the league (a resumed run: restored from its state at the checkpoint's step, with the league curve
        up to it) and seats it in the env. Writes nothing.
        """
        self.league = League(self.config, run_dir)
        if resumed:
            self.league.restore(model.num_timesteps)
            curve = Path(run_dir) / CURVE_FILE
            if curve.is_file():
                self.league_rows = [r for r in read_league_curve(curve) if r["timesteps"] <= model.num_timesteps]
        self.league.connect(self._env, snapshots_from_disk=resumed)

    def callbacks(self) -> list[BaseCallback]:
        """The league's callback (:class:`LeagueCallback`)."""
        return [LeagueCallback(self.league)]

    def checkpoint(self, timesteps: int) -> None:
        """Writes the league's state beside the checkpoint."""
        self.league.save(timesteps)

    def evaluate(self, model) -> dict[str, float]:
        """The curve's columns against the first fixed member; ``league_curve.csv`` against each."""
        config, players = self.config, self.config.league.players
        first = None
        for spec in config.league.fixed:
            result, row = evaluate_against(model, config.rules, spec, players, config.eval.games, config.eval.seed)
            first = first or result
            self.league_rows.append({"timesteps": model.num_timesteps, **row})
        write_league_curve(self.league.run_dir / CURVE_FILE, self.league_rows)
        return {key: first[key] for key in VERSUS_CURVE_FIELDS[2:-1]}

    def describe(self, row: dict[str, float]) -> str:
        """The progress line, with the win rate against each fixed member."""
        last = self.league_rows[-len(self.config.league.fixed) :]
        rates = ", ".join(f"{r['member']} {100 * r['win_rate']:.1f}%" for r in last)
        return f"{super().describe(row)}; win rate against the league's fixed members: {rates}"

    def plot(self, curve_path: Path, png_path: Path) -> None:
        """The versus plot and ``league_curve.png``."""
        super().plot(curve_path, png_path)
        plot_league_curve(curve_path.parent / CURVE_FILE, curve_path.parent / PLOT_FILE, self.players)


# --------------------------------------------------------------------------------------------------
# league_curve.csv and its plot
# --------------------------------------------------------------------------------------------------
def write_league_curve(path: Path, rows: list[dict[str, Any]]) -> None:
    """Writes the whole league curve atomically."""
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CURVE_FIELDS)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write(path, text.getvalue())


def read_league_curve(path: Path) -> list[dict[str, Any]]:
    """The rows of ``league_curve.csv``.

    Raises:
        ValueError: not a league curve.
    """
    rows = list(csv.DictReader(io.StringIO(Path(path).read_text(), newline="")))
    if rows and tuple(rows[0]) != CURVE_FIELDS:
        raise ValueError(f"'{path}' is not a league curve: its header is {','.join(rows[0])!r}")
    numbers = {"timesteps": int, "games": int}
    try:
        return [{k: (v if k == "member" else numbers.get(k, float)(v)) for k, v in row.items()} for row in rows]
    except (TypeError, ValueError):
        raise ValueError(f"'{path}' is not a league curve: a row does not read") from None


def plot_league_curve(curve_path: Path, png_path: Path, players: int) -> None:
    """``league_curve.png``: the win rate against each fixed member (95% CI bands) vs timesteps, the even rate
    ``1 / players`` marked.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_league_curve(curve_path) if curve_path.is_file() else []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        for member in dict.fromkeys(row["member"] for row in rows):
            own = [row for row in rows if row["member"] == member]
            x = np.array([row["timesteps"] for row in own])
            y = np.array([row["win_rate"] for row in own])
            ci = np.array([row["win_rate_ci95"] for row in own])
            ax.plot(x, y, marker="o", markersize=3, label=member)
            ax.fill_between(x, y - ci, y + ci, alpha=0.2)
        ax.axhline(1 / players, color="k", linestyle="--", linewidth=1, label=f"even {1 / players:.2f}")
        ax.set_ylim(0, 1)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("win rate (ties split)")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title("the learner against each fixed member of the league", fontsize=10)
        fig.tight_layout()
        with atomic_output(png_path) as temp:
            fig.savefig(temp, format="png", dpi=110)
    finally:
        plt.close(fig)
