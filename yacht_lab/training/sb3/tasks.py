"""What a PPO run is trained on and measured by: solo games, or one seat at tables against opponents.

The one place where solo and table training differ: the env factory, the columns of its learning curve, the metric a
sweep ranks by, how the live model is evaluated for a curve row, and the plot. The trainer
(:mod:`yacht_lab.training.sb3.ppo`, which picks the task of a config, :class:`yacht_lab.training.sb3.league.LeagueTask`
with a league) and its callbacks only ask the task. The agent sees only the env's observation and (scaled) reward: the
exact solver is used for reporting (``% of optimal``, regret), never in training.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stable_baselines3.common.vec_env import VecEnvWrapper

from yacht_lab.training.config import TrainConfig
from yacht_lab.training.runs import CURVE_FIELDS, VERSUS_CURVE_FIELDS, plot_curves, read_curve


class ScaledReward(VecEnvWrapper):
    """Multiplies rewards by a constant (value targets of about unit size; the score is unchanged)."""

    def __init__(self, venv, scale: float) -> None:
        super().__init__(venv)
        self.scale = scale

    def reset(self):
        """Resets the wrapped env."""
        return self.venv.reset()

    def step_wait(self):
        """Steps the wrapped env, its rewards scaled."""
        obs, rewards, dones, infos = self.venv.step_wait()
        return obs, rewards * self.scale, dones, infos


def reference_levels(rules: str, games: int, seed: int) -> dict[str, float]:
    """Mean scores of the optimal, greedy and random agents on the evaluation games (for plots)."""
    from yacht_agents import make_agent
    from yacht_lab.measure.evaluation import evaluate

    evaluation = evaluate([make_agent("greedy", rules), make_agent("random", rules, seed=seed)], games, seed, rules)
    return {
        "optimal": evaluation.optimal_expected_score,
        "greedy": float(evaluation.results["greedy"].scores.mean()),
        "random": float(evaluation.results["random"].scores.mean()),
    }


def evaluate_model(model, rules: str, games: int, seed: int) -> dict[str, float]:
    """The deterministic policy of a live model on the evaluation games: score, CI, % of optimal, regret."""
    from yacht_agents.ppo import PPOAgent
    from yacht_lab.measure.evaluation import evaluate

    summary = evaluate([PPOAgent.from_model(model, rules)], games, seed, rules).to_dict()["agents"]["ppo"]
    lo, hi = summary["ci95"]
    return {**summary, "ci95_half_width": (hi - lo) / 2}


def evaluate_versus(model, rules: str, opponents: list[str], games: int, seed: int) -> dict[str, float]:
    """The deterministic policy of a live versus model against its opponents, on ``games`` deals.

    :func:`yacht_lab.measure.head_to_head.head_to_head` with the learner first and the opponents (fresh agents of the
    specs at this table, so that a ``random`` one draws the same at every evaluation): common dice, dice and seat
    rotations, without the win model's calibration (nothing here reads it). Returns the learner's ``win_rate`` (its
    win share, ties split: at two players its win rate with ties counted half) and ``win_rate_ci95`` (the CI's
    half-width over deals), ``mean_score`` and ``score_ci95``, ``percent_of_optimal`` (its mean score over the
    solver's solo expectation: a yardstick only) and ``mean_margin`` (its mean total minus the opponents' mean
    total, over the same games).
    """
    from yacht_agents import make_agent
    from yacht_agents.ppo import PPOAgent
    from yacht_env.solver import solve
    from yacht_lab.measure.head_to_head import head_to_head

    learner = PPOAgent.from_model(model, rules)
    agents = [learner]
    for i, spec in enumerate(opponents):
        agent = make_agent(spec, rules, seed=i, players=len(opponents) + 1)
        if any(agent.name == other.name for other in agents):  # head_to_head wants distinct names
            agent.name = f"{spec} #{i + 1}"
        agents.append(agent)
    report = head_to_head(agents, len(agents), games, seed, rules, calibration=False).to_dict()
    by_agent = report["agents"]
    me = by_agent[learner.name]
    others = [by_agent[agent.name]["mean_score"] for agent in agents[1:]]
    share_lo, share_hi = me["win_share_ci95"]
    score_lo, score_hi = me["mean_score_ci95"]
    return {
        "win_rate": me["win_share"],
        "win_rate_ci95": (share_hi - share_lo) / 2,
        "mean_score": me["mean_score"],
        "score_ci95": (score_hi - score_lo) / 2,
        "percent_of_optimal": 100.0 * me["mean_score"] / solve(rules).expected_score,
        "mean_margin": me["mean_score"] - sum(others) / len(others),
    }


def evaluate_against(model, rules: str, spec: str, players: int, games: int, seed: int) -> tuple[dict, dict[str, Any]]:
    """A live model against ``players - 1`` copies of one agent (:func:`evaluate_versus` on ``games`` deals of
    ``seed``): the full result, and a curve's row of it (``member``, ``win_rate``, ``win_rate_ci95``,
    ``mean_score``, ``mean_margin``, ``games``). A league's members and a distillation's opponents are measured so.
    """
    result = evaluate_versus(model, rules, [spec] * (players - 1), games, seed)
    keys = ("win_rate", "win_rate_ci95", "mean_score", "mean_margin")
    return result, {"member": spec, **{key: result[key] for key in keys}, "games": games * players * players}


class SoloTask:
    """Solo ``Yacht-v0`` games; the curve is the score, % of optimal and regret of the deterministic policy."""

    fields = CURVE_FIELDS
    #: The curve column a sweep ranks and stops trials by.
    metric = "percent_of_optimal"
    #: The curve columns also logged to TensorBoard as ``eval/<key>``.
    logged = ("mean_score", "percent_of_optimal", "mean_regret")

    def __init__(self, config: TrainConfig) -> None:
        self.config = config
        self.levels: dict[str, float] | None = None

    def make_env(self):
        """The training VecEnv: the native vector env through the SB3 adapter, rewards scaled."""
        from yacht_env.sb3 import YachtSB3VecEnv

        return ScaledReward(YachtSB3VecEnv(self.config.n_envs, rules=self.config.rules), self.config.reward_scale)

    def prepare(self) -> None:
        """Work done before training starts: the reference levels of the plot (optimal, greedy, random)."""
        config = self.config
        self.levels = reference_levels(config.rules, config.eval.games, config.eval.seed)

    def attach(self, run_dir: Path, model, resumed: bool) -> None:
        """Work done once the run's model exists, before anything is written (a league is seated here)."""

    def callbacks(self) -> list:
        """The task's own callbacks, placed after the curve's and before the checkpoints'."""
        return []

    def checkpoint(self, timesteps: int) -> None:
        """Called after each checkpoint is saved (a league writes its state beside it)."""

    def evaluate(self, model) -> dict[str, float]:
        """The curve columns of ``model`` now (all but ``timesteps``, ``wall_minutes`` and ``steps_per_second``)."""
        config = self.config
        result = evaluate_model(model, config.rules, config.eval.games, config.eval.seed)
        return {
            "mean_score": result["mean"],
            "score_ci95": result["ci95_half_width"],
            "percent_of_optimal": result["percent_of_optimal"],
            "mean_regret": result["mean_regret"],
        }

    def describe(self, row: dict[str, float]) -> str:
        """The evaluation's part of the progress line."""
        return (
            f"eval {row['mean_score']:.2f} +- {row['score_ci95']:.2f} ({row['percent_of_optimal']:.2f}% of optimal), "
            f"regret {row['mean_regret']:.2f}"
        )

    def plot(self, curve_path: Path, png_path: Path) -> None:
        """Learning curve PNG: score vs wall-clock minutes and vs timesteps; optimal/greedy/random marked."""
        levels, rules = self.levels, self.config.rules

        def decorate(fig, axes) -> None:
            for ax in axes:
                for name, style in (("optimal", "-"), ("greedy", "--"), ("random", ":")):
                    label = f"{name} {levels[name]:.1f}"
                    ax.axhline(levels[name], color="k", linestyle=style, linewidth=1, label=label)
            axes[0].legend(loc="lower right")
            optimal = levels["optimal"]
            secondary = axes[0].secondary_yaxis(
                "right", functions=(lambda s: s / optimal * 100, lambda p: p * optimal / 100)
            )
            secondary.set_ylabel("% of optimal")
            fig.suptitle(f"MaskablePPO on Yacht-v0 ({rules})")

        plot_curves(png_path, read_curve(curve_path), "mean_score", "score_ci95", "mean score", decorate)


class TableTask(SoloTask):
    """One seat at ``n_envs`` tables of ``YachtVersus-v0`` against the config's opponents, in its ``seat``,
    rewarded by its ``reward``; the curve is the win rate against them.
    """

    fields = VERSUS_CURVE_FIELDS
    metric = "win_rate"
    logged = ("win_rate", "mean_score", "mean_margin", "percent_of_optimal")

    @property
    def players(self) -> int:
        """Players at a table."""
        return len(self.config.opponents) + 1

    @property
    def against(self) -> list[str]:
        """The opponents the curve's win rate is measured against."""
        return list(self.config.opponents)

    def make_env(self):
        """The training VecEnv: the versus tables against the config's opponents, rewards scaled."""
        from yacht_env.sb3 import YachtSB3VecEnv

        config = self.config
        env = YachtSB3VecEnv(
            config.n_envs, opponents=list(config.opponents), reward=config.reward, seat=config.seat, rules=config.rules
        )
        return ScaledReward(env, config.reward_scale)

    def prepare(self) -> None:
        """Nothing: a versus plot needs no levels (its reference is the even win rate, 1 / players)."""

    def evaluate(self, model) -> dict[str, float]:
        """The curve's columns: the win rate and the rest against the opponents."""
        config = self.config
        result = evaluate_versus(model, config.rules, config.opponents, config.eval.games, config.eval.seed)
        return {key: result[key] for key in VERSUS_CURVE_FIELDS[2:-1]}

    def describe(self, row: dict[str, float]) -> str:
        """The evaluation's part of the progress line."""
        return (
            f"eval win rate {100 * row['win_rate']:.1f}% +- {100 * row['win_rate_ci95']:.1f} against "
            f"{', '.join(self.against)}, score {row['mean_score']:.2f} +- {row['score_ci95']:.2f}, "
            f"margin {row['mean_margin']:+.2f}"
        )

    def plot(self, curve_path: Path, png_path: Path) -> None:
        """Versus learning curve PNG: win rate (95% CI band) vs wall-clock minutes and vs timesteps, the even
        win rate ``1 / players`` marked.
        """
        from yacht_lab.measure.report import short_name

        config = self.config
        even = 1 / self.players

        def decorate(fig, axes) -> None:
            for ax in axes:
                ax.axhline(even, color="k", linestyle="--", linewidth=1, label=f"even {even:.2f}")
                ax.set_ylim(0, 1)
            axes[0].legend(loc="lower right")
            seat = "a random seat" if config.seat == "random" else f"seat {config.seat}"
            fig.suptitle(
                f"MaskablePPO on YachtVersus-v0 ({config.rules}, reward {config.reward}, {seat}) "
                f"against {', '.join(short_name(spec, 32) for spec in self.against)}",
                fontsize=10,
            )

        rows = read_curve(curve_path, VERSUS_CURVE_FIELDS)
        plot_curves(png_path, rows, "win_rate", "win_rate_ci95", "win rate (ties split)", decorate)


def task_class(config: TrainConfig) -> type[SoloTask]:
    """The kind of task of a config as far as its curve goes: :class:`SoloTask` alone, :class:`TableTask` at a table
    (opponents or a league: a league's task is a table task that draws its opponents).
    """
    return SoloTask if config.players == 1 else TableTask


def curve_fields(config: TrainConfig) -> tuple[str, ...]:
    """The columns of a run's learning curve: :data:`CURVE_FIELDS` solo, :data:`VERSUS_CURVE_FIELDS` at a table."""
    return task_class(config).fields
