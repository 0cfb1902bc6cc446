"""The training config: dataclasses (one source of truth for the defaults, ``configs/ppo.yaml`` names them all),
YAML loading and validation.

Validation catches every value that would crash or misbehave later: wrong types, out-of-range values, a torch
device this machine does not have, and sizes beyond the limits below (refused up front rather than ending in a
``MemoryError`` or a crash after minutes of work).
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

import yaml

from yacht_agents import make_agent, parse_spec
from yacht_env import rules as R
from yacht_env.distributions import unsupported
from yacht_env.rules import is_int
from yacht_lab.evaluation import MAX_GAMES

#: Seeds go to numpy's legacy global generator (through SB3), which takes 32 bits.
MAX_SEED = 2**32 - 1
#: Torch CPU threads: a fixed cap, not this machine's core count, so that a config runs anywhere; torch
#: crashes (segfault) on absurd counts such as 100,000.
MAX_TORCH_THREADS = 256
#: Games stepped together: the vector env keeps about 1 KB per game.
MAX_N_ENVS = 100_000
#: Steps per rollout, ``ppo.n_steps x n_envs``: the rollout buffer keeps about 460 bytes a step (the 64
#: observation floats, the 44 action-mask floats, 7 more floats), so 4.6 GB at the limit; a versus run's table
#: view is 64 + 13 (P - 1) + 2 floats (79 at 2 players, 183 at 10: about 940 bytes a step).
MAX_ROLLOUT_STEPS = 10_000_000
#: Opponents of a versus run (the versus env's table: the learner and at most 9 others).
MAX_OPPONENTS = 9
#: Opponent specs that need no file (``ppo:PATH`` is the fourth kind).
OPPONENT_SPECS = ("random", "greedy", "optimal")
#: The kinds of :func:`yacht_agents.parse_spec` a training run seats as opponents.
OPPONENT_KINDS = (*OPPONENT_SPECS, "ppo")
#: How a league draws its members (:mod:`yacht_lab.league`).
LEAGUE_SAMPLING = ("uniform", "pfsp")
#: The kinds of :func:`yacht_agents.parse_spec` a league seats as fixed members (``win`` is sized to the table).
LEAGUE_KINDS = (*OPPONENT_SPECS, "win", "ppo")
#: Fixed members of a league, and snapshots kept in it.
MAX_FIXED_MEMBERS, MAX_SNAPSHOTS = 16, 100
#: The most branches of one position (futures x candidates) a rollouts config may ask for: they are played together.
MAX_BRANCHES = 65_536
#: How a rollouts run labels its positions (:mod:`yacht_lab.rollouts`).
LABELS = ("race", "exact")
#: Hidden layers of the MLPs, and units per layer (a square layer of 8,192 is 256 MB of float32 weights).
MAX_LAYERS = 16
MAX_LAYER_WIDTH = 8192


@dataclass
class PolicyConfig:
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layers of the policy MLP and of the (separate) value MLP (at most :data:`MAX_LAYERS` of at most
    :data:`MAX_LAYER_WIDTH` units)."""
    activation: str = "relu"
    """``relu`` or ``tanh``."""
    chase_inputs: bool = True
    """Both MLPs also see each open category's chase value: its expected points if the rest of the turn is
    played for it alone, from the dice odds (:class:`yacht_agents.policy.OddsPolicy`; nothing of the solver)."""
    keep_head: bool = True
    """Each keep's logit adds learned per-category weights times the chase values after that keep
    (:class:`yacht_agents.policy.OddsPolicy`). With neither option the policy is SB3's ``MlpPolicy``."""
    bonus_odds: bool = True
    """On rules with bonuses (Yahtzee, Yatzy), the odds also hold each open upper box's chance of par this turn
    (a second channel, in the inputs and the keep head), and the five-of-a-kind box's chase stays on while it is
    armed for the Yahtzee bonus. No effect on Yacht's presets or without ``chase_inputs`` / ``keep_head``."""


@dataclass
class PPOConfig:
    n_steps: int = 256
    """Steps per env per rollout (rollout size = n_steps x n_envs, at most :data:`MAX_ROLLOUT_STEPS`)."""
    batch_size: int = 4096
    """Minibatch size."""
    n_epochs: int = 8
    """Passes over each rollout."""
    learning_rate: float = 3e-4
    """Initial learning rate; decays linearly to ``learning_rate_final`` over ``total_timesteps``."""
    learning_rate_final: float = 0.0
    """Learning rate at the end of training."""
    ent_coef: float = 0.04
    """Initial entropy bonus; decays linearly to ``ent_coef_final`` over ``total_timesteps``."""
    ent_coef_final: float = 0.0
    """Entropy bonus at the end of training."""
    gamma: float = 1.0
    """Discount: a game is short and its score undiscounted."""
    gae_lambda: float = 0.9
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient clipping."""
    kl_to_init: float = 0.0
    """Weight of a penalty ``KL(pi || pi_init)`` toward the policy of the model the run started from (``init``,
    which it needs; :mod:`yacht_lab.anchor`): fine-tuning under a noisy reward, the policy moves where the
    signal adds up instead of drifting where the noise points. 0: none."""
    learn_last_turns: int = 0
    """Only the decisions of each player's last ``N`` turns (at most ``N`` categories open in its own game) give the
    policy its gradient and entropy bonus; every decision still trains the critic and counts in ``kl_to_init``
    (:mod:`yacht_lab.focus`): for the win reward, whose edge over playing for points lies mostly at the end of a
    game. 0: every decision."""
    kl_to_init_last_turns: float | None = None
    """With ``learn_last_turns``: the KL penalty's weight on the decisions of those last turns, ``kl_to_init``
    staying on the others (:func:`yacht_lab.focus.kl_weights`). With a KL weight ``b`` toward the start, the
    policy's best action at a decision moves off the start's only where its advantage beats ``b`` times the log of
    the start's odds against it: a small weight here lets the last turns change while the early play is held.
    ``null``: ``kl_to_init`` on every decision."""
    explore_temperature: float = 1.0
    """The rollouts sample the decisions the policy learns from (the last ``learn_last_turns`` turns, or all) at
    this temperature: the logits divided by it, the buffer keeping the policy's own log-probability of the move
    played (:func:`yacht_lab.focus.explore`). Above 1 the rollouts try moves the policy gives long odds, which a
    policy gradient reaches only by sampling them. Deterministic play (evaluation, the saved model) is unchanged.
    1: the policy's own samples."""
    critic_warmup_timesteps: int = 0
    """For this many first timesteps only the critic learns: every update leaves the actor's weights as they are
    (:class:`yacht_lab.callbacks.CriticWarmupCallback`). For a run started from a model (``init``) under a new
    reward, whose critic starts at zero: the policy follows its advantages once the critic knows the reward."""


@dataclass
class EvalConfig:
    every_timesteps: int = 500_000
    """Evaluate the deterministic policy every this many timesteps (and at the end)."""
    games: int = 2000
    """Evaluation games: ``game_streams(seed, range(games))``, the same at every evaluation (at most
    :data:`yacht_lab.evaluation.MAX_GAMES`)."""
    seed: int = 1000
    """Seed of the evaluation games."""


@dataclass
class LeagueConfig:
    """A league of opponents (:mod:`yacht_lab.league`): each opponent seat of each table draws a member at each
    game's start, among the fixed agents and frozen snapshots of the learner."""

    fixed: list[str] = field(default_factory=lambda: ["optimal"])
    """The fixed members, agent specs (``random``, ``greedy``, ``optimal``, ``win`` (at the league's table size),
    ``ppo:PATH``; 1..:data:`MAX_FIXED_MEMBERS`, no repeats). Each evaluation plays the learner against each of
    them (``league_curve.csv``); the first is the opponent of ``learning_curve.csv``."""
    players: int = 2
    """Players at a table: the learner and ``players - 1`` drawn opponents (2..10)."""
    sampling: str = "pfsp"
    """``uniform`` (every member alike) or ``pfsp`` (prioritised fictitious self-play: weight
    ``max((1 - p) ** pfsp_power, pfsp_floor)``, ``p`` the learner's estimated win rate against the member)."""
    pfsp_power: float = 2.0
    """The exponent of PFSP's weighting (AlphaStar's "hard" weighting; 0 is uniform)."""
    pfsp_decay: float = 0.9
    """Each rollout multiplies every member's counted results by this before adding its own (1: count all)."""
    pfsp_floor: float = 0.05
    """The least PFSP weight of a member (0..1]: none is ever dropped."""
    snapshot_every_timesteps: int = 1_000_000
    """Freeze a copy of the learner into the league (``league/snapshot_<N>.zip``) this often."""
    max_snapshots: int = 10
    """Snapshots kept in the league (0..:data:`MAX_SNAPSHOTS`; 0: none taken); past it the oldest is retired."""
    snapshot_share: float | None = None
    """``null``: all members drawn by weight from one pool. A number in 0..1: the snapshots' share of the draws
    (once there is one), the fixed members sharing the rest, each group by weight."""


@dataclass
class RolloutsConfig:
    """Rollout policy improvement (:mod:`yacht_lab.rollouts`) instead of PPO: the learner's late moves are judged by
    playing each candidate on over common futures, and the policy learns the best. Needs ``init`` and ``reward:
    win``; the table is this section's (``opponents`` at the top level stays empty, no league)."""

    opponents: list[str] = field(default_factory=lambda: ["optimal", "ppo:standard"])
    """Who the learner meets: each other seat of each table draws one of these uniformly (specs as
    ``league.fixed``'s, 1..:data:`MAX_FIXED_MEMBERS`, no repeats). The curve is the learner against each."""
    players: int = 2
    """Players at a table (2..10)."""
    labels: str = "race"
    """How a position's move is judged: ``race`` (each candidate played out on common futures, below) or ``exact``
    (the move with the highest probability of finishing first if everyone plays the start's policy after it,
    computed exactly from the start's own policy: :class:`yacht_agents.win.WinAgent` with ``base`` the ``init``
    model, which must be a solo model of rules without bonuses; ``candidates``, ``futures``, ``refine`` and ``z``
    are then unused)."""
    late_turns: int = 4
    """The decisions judged: the learner's with at most this many categories open (1..the rules' categories)."""
    candidates: int = 4
    """Moves tried per position: the policy's most likely legal ones (2..the rules' actions)."""
    futures: int = 64
    """Common futures of the race's first stage (each candidate played in each; 2 or more)."""
    refine: int = 448
    """More futures for the positions whose alternatives survive the first stage (0: no second stage)."""
    z: float = 2.0
    """An alternative leaves the race when worse than the first move by ``z`` standard errors (>= 0)."""
    positions: int = 2048
    """Positions labelled per iteration (about; >= 1)."""
    tables: int = 1024
    """Games played per iteration to find them (>= 1)."""
    anchor: float = 10.0
    """The weight of ``KL(pi_init || pi)`` on the learner's earlier decisions (>= 0)."""
    memory: int = 200_000
    """The update learns from the newest iterations' positions, at least this many (>= 1)."""
    learning_rate: float = 1.0e-4
    """Adam's step size (> 0)."""
    epochs: int = 4
    """Passes over the memory per iteration (>= 1)."""
    batch_size: int = 512
    """Positions per gradient step (>= 1)."""
    iterations: int = 1000
    """Iterations to run (``max_minutes`` may stop it first)."""
    eval_every: int = 4
    """Evaluate against each opponent (``eval.games`` deals, ``eval.seed``) every this many iterations and at the
    end; also save ``checkpoints/iteration_<N>.zip``."""


@dataclass
class TrainConfig:
    rules: str = "standard"
    """Rules preset: a name of :data:`yacht_env.rules.PRESETS` (Yacht's ``standard``, ``classic``, ``knizia``, or the
    family's ``yahtzee``, ``yahtzee_forced_joker``, ``yahtzee_no_joker``, ``yahtzee_no_bonus``, ``yatzy``). The
    default recipe trains on each; it was tuned on Yacht's."""
    opponents: list[str] = field(default_factory=list)
    """Agent specs of the learner's fixed opponents (``random``, ``greedy``, ``optimal``, ``ppo:PATH``; at most
    :data:`MAX_OPPONENTS`). Empty (the default): solo ``Yacht-v0`` training. Given: the learner holds one seat
    at ``n_envs`` tables of ``YachtVersus-v0`` (``len(opponents) + 1`` players; it sees the table's view, 79
    values for 2 players), and the curve is its win rate against them (:func:`yacht_lab.head_to_head.head_to_head`
    on ``eval.games`` deals). A ``ppo:PATH`` opponent must load and fit the table (a solo model, or one
    trained at a table of this size). Empty with a ``league``, whose members are drawn instead."""
    reward: str = "score"
    """``score`` (the learner's points per pick, as solo) or ``win`` (versus only: at the end of a game, the
    learner's share of +1 shared by the winners, -1 by the others). ``reward_scale`` applies to both: keep it
    at about 0.02 for ``score`` (totals of ~150-250) and use about 1.0 for ``win`` (already unit size, as
    ``configs/versus.yaml``)."""
    seat: int | str = "random"
    """The learner's seat in a versus run: ``random`` (drawn for each game) or an int in
    ``0..len(opponents)``."""
    seed: int = 0
    """Seed of the env, the policy initialisation and PPO's sampling (0..:data:`MAX_SEED`)."""
    total_timesteps: int = 14_000_000
    """Environment steps to train for (the learning-rate schedule spans this)."""
    max_minutes: float | None = 60.0
    """Stop after this many minutes of training and save (``None``: no limit)."""
    n_envs: int = 64
    """Games stepped together by the native vector env (at most :data:`MAX_N_ENVS`)."""
    device: str = "cpu"
    """Torch device: ``cpu``, or ``cuda``, ``cuda:<i>``, ``mps`` where torch has them."""
    torch_threads: int = 1
    """Torch CPU threads, 1..:data:`MAX_TORCH_THREADS`."""
    reward_scale: float = 0.02
    """Rewards are multiplied by this inside training only (the env's reward stays the score)."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint_every_timesteps: int = 2_000_000
    """Save ``checkpoints/step_<N>.zip`` this often."""
    league: LeagueConfig | None = None
    """A league of opponents instead of ``opponents`` (which must then be empty): :class:`LeagueConfig`. ``None``
    (the default, left out of a saved config): no league."""
    rollouts: RolloutsConfig | None = None
    """Train by rollout policy improvement instead of PPO: :class:`RolloutsConfig`. ``None`` (the default, left out
    of a saved config): PPO."""
    init: str | None = None
    """Start a new run from this model's weights (a path, or a shipped model's name such as ``standard``):
    :mod:`yacht_lab.warm_start`. The network the config describes must be the model's; a model of one game
    starts a run at a table (the table's columns start at zero). ``None`` (the default): fresh weights. A resumed
    run continues from its checkpoint and ignores it."""

    @property
    def env_id(self) -> str:
        """The env the run trains on: ``YachtVersus-v0`` at a table (opponents, league, rollouts), else ``Yacht-v0``."""
        return "YachtVersus-v0" if self.opponents or self.league is not None or self.rollouts else "Yacht-v0"

    @property
    def players(self) -> int:
        """Players at a table: 1 solo, ``len(opponents) + 1``, or the league's or the rollouts' ``players``."""
        if isinstance(self.rollouts, RolloutsConfig):
            return self.rollouts.players
        return self.league.players if isinstance(self.league, LeagueConfig) else len(self.opponents) + 1

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for section in ("league", "rollouts"):  # a config without one reads (and is saved) as before it existed
            if data[section] is None:
                del data[section]
        return data


def _from_dict(cls: type, data: Any, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'config'} must be a mapping, got {data!r}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown config key {where + '.' if where else ''}{unknown[0]}; accepted: {sorted(known)}")
    kwargs = {}
    for name, value in data.items():
        sections = {
            "policy": PolicyConfig,
            "ppo": PPOConfig,
            "eval": EvalConfig,
            "league": LeagueConfig,
            "rollouts": RolloutsConfig,
        }
        sub = sections.get(name) if cls is TrainConfig else None
        optional = name in ("league", "rollouts") and value is None
        kwargs[name] = _from_dict(sub, value, name) if sub and not optional else value
    return cls(**kwargs)


def _check_number(
    name: str, value: Any, kind: type, low: float, low_inclusive: bool = True, high: float | None = None
) -> None:
    ok = (is_int(value) or (kind is float and isinstance(value, float))) and math.isfinite(value)
    noun = "a number" if kind is float else "an int"
    if not ok or not (value >= low if low_inclusive else value > low):
        raise ValueError(f"{name} must be {noun} {'>=' if low_inclusive else '>'} {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be {noun} >= {low} and <= {high:,}, got {value!r}")


def _check_device(device: Any) -> None:
    """Only devices this machine has: torch accepts ``cuda:99`` or ``meta`` as names and fails much later."""
    if not isinstance(device, str):
        raise ValueError(f"device must be a torch device name such as 'cpu' or 'cuda', got {device!r}")
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"device must be a torch device name such as 'cpu' or 'cuda', got {device!r}") from None
    if parsed.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"device {device!r} is not available: torch sees no CUDA GPU on this machine")
        if parsed.index is not None and parsed.index >= count:
            raise ValueError(f"device {device!r} is not available: torch sees {count} CUDA GPU(s), cuda:0..{count - 1}")
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {device!r} is not available: torch sees no MPS device on this machine")
    elif parsed.type != "cpu":
        raise ValueError(f"device must be cpu, cuda, cuda:<i> or mps, got {device!r}")


def _check_versus(config: TrainConfig) -> None:
    """``opponents``, ``reward`` and ``seat``; a ``ppo:PATH`` opponent is loaded (it must fit the table)."""
    opponents = config.opponents
    if not isinstance(opponents, list) or len(opponents) > MAX_OPPONENTS:
        raise ValueError(
            f"opponents must be a list of 0..{MAX_OPPONENTS} agent specs "
            f"({', '.join(OPPONENT_SPECS)}, ppo:PATH), got {opponents!r}"
        )
    players = len(opponents) + 1
    for i, spec in enumerate(opponents):
        try:
            kind, _ = parse_spec(spec)
        except ValueError:
            kind = None
        if kind not in OPPONENT_KINDS:
            raise ValueError(
                f"opponents[{i}] is an unknown agent {spec!r}; expected one of {', '.join(OPPONENT_SPECS)}, ppo:PATH"
            )
        if kind == "ppo":  # loaded now: it must exist and fit the table
            try:
                agent = make_agent(spec, config.rules)
            except ValueError as error:
                raise ValueError(f"opponents[{i}]: {error}") from None
            table = getattr(agent, "table_players", None)
            if table not in (None, players):
                raise ValueError(
                    f"opponents[{i}]: {spec!r} was trained at a table of {table} players; this one has {players}"
                )
    if not isinstance(config.reward, str) or config.reward not in ("score", "win"):
        raise ValueError(f"reward must be 'score' or 'win', got {config.reward!r}")
    if config.reward == "win" and not opponents and config.league is None and config.rollouts is None:
        raise ValueError("reward 'win' needs opponents or a league: a solo game has no winner")
    players, size = (players, f"opponents: {len(opponents)}") if config.league is None else _check_league(config)
    seat = config.seat
    if not (seat == "random" or (is_int(seat) and 0 <= seat < players)):
        raise ValueError(f"seat must be 'random' or an int in 0..{players - 1} ({size}), got {seat!r}")


def _check_members(key: str, specs: Any, rules: str, players: int) -> None:
    """A list of 1..:data:`MAX_FIXED_MEMBERS` distinct agent specs of a table of ``players`` (``league.fixed``,
    ``rollouts.opponents``); its ``win`` and ``ppo:PATH`` members are built (they must fit the rules and the table)."""
    from yacht_lab.league import make_member

    if not isinstance(specs, list) or not 1 <= len(specs) <= MAX_FIXED_MEMBERS:
        raise ValueError(f"{key} must be a list of 1..{MAX_FIXED_MEMBERS} agent specs, got {specs!r}")
    for i, spec in enumerate(specs):
        try:
            kind, _ = parse_spec(spec)
        except ValueError:
            kind = None
        if kind not in LEAGUE_KINDS:
            raise ValueError(
                f"{key}[{i}] is an unknown agent {spec!r}; expected one of {', '.join(OPPONENT_SPECS)}, win, ppo:PATH"
            )
        if spec in specs[:i]:
            raise ValueError(f"{key} lists {spec!r} twice")
        if kind in ("win", "ppo"):  # built now: the file must load, the agent fit the rules and the table
            try:
                make_member(spec, rules, players)
            except ValueError as error:
                raise ValueError(f"{key}[{i}]: {error}") from None


def _check_league(config: TrainConfig) -> tuple[int, str]:
    """The ``league`` section; its ``win`` and ``ppo:PATH`` members are built (they must fit the table).
    Returns the table's size and how to name it in an error."""
    league = config.league
    if not isinstance(league, LeagueConfig):
        raise ValueError(f"league must be a mapping of league keys or null, got {league!r}")
    if config.opponents:
        raise ValueError("opponents must be empty with a league: its members are the opponents (league.fixed)")
    players = league.players
    if not (is_int(players) and 2 <= players <= MAX_OPPONENTS + 1):
        raise ValueError(f"league.players must be an int in 2..{MAX_OPPONENTS + 1}, got {players!r}")
    _check_members("league.fixed", league.fixed, config.rules, players)
    if league.sampling not in LEAGUE_SAMPLING:
        raise ValueError(f"league.sampling must be 'uniform' or 'pfsp', got {league.sampling!r}")
    _check_number("league.pfsp_power", league.pfsp_power, float, 0)
    for name in ("pfsp_decay", "pfsp_floor"):
        value = getattr(league, name)
        _check_number(f"league.{name}", value, float, 0, low_inclusive=False)
        if value > 1:
            raise ValueError(f"league.{name} must be in (0, 1], got {value!r}")
    _check_number("league.snapshot_every_timesteps", league.snapshot_every_timesteps, int, 1)
    _check_number("league.max_snapshots", league.max_snapshots, int, 0, high=MAX_SNAPSHOTS)
    share = league.snapshot_share
    if share is not None:
        _check_number("league.snapshot_share", share, float, 0)
        if share > 1:
            raise ValueError(f"league.snapshot_share must be null or in 0..1, got {share!r}")
    return players, f"league.players: {players}"


def _check_rollouts(config: TrainConfig) -> None:
    """The ``rollouts`` section; its ``win`` and ``ppo:PATH`` opponents are built (they must fit the table)."""
    section = config.rollouts
    if not isinstance(section, RolloutsConfig):
        raise ValueError(f"rollouts must be a mapping of rollouts keys or null, got {section!r}")
    if config.opponents or config.league is not None:
        raise ValueError("rollouts has its own table (rollouts.opponents): leave opponents empty and league out")
    if config.init is None:
        raise ValueError("rollouts needs init: it improves a trained model")
    if config.reward != "win":
        raise ValueError(f"rollouts judges moves by who wins: reward must be 'win', got {config.reward!r}")
    rules = R.get_rules(config.rules)
    players = section.players
    if not (is_int(players) and 2 <= players <= MAX_OPPONENTS + 1):
        raise ValueError(f"rollouts.players must be an int in 2..{MAX_OPPONENTS + 1}, got {players!r}")
    _check_members("rollouts.opponents", section.opponents, config.rules, players)
    if section.labels not in LABELS:
        raise ValueError(f"rollouts.labels must be one of {', '.join(LABELS)}, got {section.labels!r}")
    if section.labels == "exact" and unsupported(rules) is not None:
        raise ValueError(f"rollouts.labels exact needs the start's exact score distributions: {unsupported(rules)}")
    _check_number("rollouts.late_turns", section.late_turns, int, 1, high=rules.num_categories)
    _check_number("rollouts.candidates", section.candidates, int, 2, high=rules.num_actions)
    _check_number("rollouts.futures", section.futures, int, 2)
    _check_number("rollouts.refine", section.refine, int, 0)
    _check_number("rollouts.z", section.z, float, 0)
    for name in ("positions", "tables", "memory", "epochs", "batch_size", "iterations", "eval_every"):
        _check_number(f"rollouts.{name}", getattr(section, name), int, 1)
    _check_number("rollouts.anchor", section.anchor, float, 0)
    _check_number("rollouts.learning_rate", section.learning_rate, float, 0, low_inclusive=False)
    if section.futures * section.candidates > MAX_BRANCHES or section.refine * section.candidates > MAX_BRANCHES:
        raise ValueError(
            f"rollouts: futures x candidates and refine x candidates must be at most {MAX_BRANCHES:,} branches "
            f"(a position's branches are played together), got {section.futures} and {section.refine} x "
            f"{section.candidates}"
        )


def validate(config: TrainConfig) -> TrainConfig:
    """Checks every field; raises ``ValueError`` naming the first bad one.

    Besides types and ranges: the device must exist on this machine, and the sizes are bounded (see the
    ``MAX_*`` constants of this module) so that no config passes here and then crashes or runs out of memory.
    A config that passed is marked as such (:func:`validated`), with a copy of what it held.
    """
    R.get_rules(config.rules)
    if not isinstance(config.rules, str):
        raise ValueError(f"rules must be a preset name, got {config.rules!r}")
    _check_versus(config)
    _check_number("seed", config.seed, int, 0, high=MAX_SEED)
    _check_number("total_timesteps", config.total_timesteps, int, 1)
    if config.max_minutes is not None:
        _check_number("max_minutes", config.max_minutes, float, 0, low_inclusive=False)
    _check_number("n_envs", config.n_envs, int, 1, high=MAX_N_ENVS)
    _check_number("torch_threads", config.torch_threads, int, 1, high=MAX_TORCH_THREADS)
    _check_number("reward_scale", config.reward_scale, float, 0, low_inclusive=False)
    _check_number("checkpoint_every_timesteps", config.checkpoint_every_timesteps, int, 1)
    if config.init is not None and not (isinstance(config.init, str) and config.init):
        raise ValueError(f"init must be a model's path or shipped name, or null, got {config.init!r}")
    _check_device(config.device)
    arch = config.policy.net_arch
    ok = isinstance(arch, list) and 1 <= len(arch) <= MAX_LAYERS
    if not ok or not all(is_int(n) and 1 <= n <= MAX_LAYER_WIDTH for n in arch):
        raise ValueError(
            f"policy.net_arch must be a list of 1..{MAX_LAYERS} ints in 1..{MAX_LAYER_WIDTH}, got {arch!r}"
        )
    if config.policy.activation not in ("relu", "tanh"):
        raise ValueError(f"policy.activation must be 'relu' or 'tanh', got {config.policy.activation!r}")
    for name in ("chase_inputs", "keep_head", "bonus_odds"):
        if not isinstance(getattr(config.policy, name), bool):
            raise ValueError(f"policy.{name} must be true or false, got {getattr(config.policy, name)!r}")
    p = config.ppo
    _check_number("ppo.n_steps", p.n_steps, int, 1, high=MAX_ROLLOUT_STEPS)
    _check_number("ppo.batch_size", p.batch_size, int, 2)
    _check_number("ppo.n_epochs", p.n_epochs, int, 1)
    _check_number("ppo.learning_rate", p.learning_rate, float, 0, low_inclusive=False)
    _check_number("ppo.learning_rate_final", p.learning_rate_final, float, 0)
    _check_number("ppo.ent_coef", p.ent_coef, float, 0)
    _check_number("ppo.ent_coef_final", p.ent_coef_final, float, 0)
    _check_number("ppo.clip_range", p.clip_range, float, 0, low_inclusive=False)
    _check_number("ppo.vf_coef", p.vf_coef, float, 0)
    _check_number("ppo.max_grad_norm", p.max_grad_norm, float, 0, low_inclusive=False)
    _check_number("ppo.critic_warmup_timesteps", p.critic_warmup_timesteps, int, 0)
    _check_number("ppo.kl_to_init", p.kl_to_init, float, 0)
    _check_number("ppo.learn_last_turns", p.learn_last_turns, int, 0, high=R.get_rules(config.rules).num_categories)
    _check_number("ppo.explore_temperature", p.explore_temperature, float, 0, low_inclusive=False)
    if p.kl_to_init_last_turns is not None:
        _check_number("ppo.kl_to_init_last_turns", p.kl_to_init_last_turns, float, 0)
        if not p.learn_last_turns:
            raise ValueError("ppo.kl_to_init_last_turns needs ppo.learn_last_turns: it weighs those turns' decisions")
    if (p.kl_to_init > 0 or (p.kl_to_init_last_turns or 0) > 0) and config.init is None:
        raise ValueError("ppo.kl_to_init needs init: the penalty is toward the model the run starts from")
    for name in ("gamma", "gae_lambda"):
        value = getattr(p, name)
        _check_number(f"ppo.{name}", value, float, 0)
        if value > 1:
            raise ValueError(f"ppo.{name} must be in 0..1, got {value!r}")
    if p.n_steps * config.n_envs > MAX_ROLLOUT_STEPS:
        raise ValueError(
            f"the rollout size n_steps x n_envs ({p.n_steps} x {config.n_envs}) must be at most "
            f"{MAX_ROLLOUT_STEPS:,} steps"
        )
    if p.batch_size > p.n_steps * config.n_envs:
        raise ValueError(
            f"ppo.batch_size ({p.batch_size}) must not exceed the rollout size n_steps x n_envs "
            f"({p.n_steps * config.n_envs})"
        )
    if config.rollouts is not None:
        _check_rollouts(config)
    _check_number("eval.every_timesteps", config.eval.every_timesteps, int, 1)
    _check_number("eval.games", config.eval.games, int, 1, high=MAX_GAMES)
    _check_number("eval.seed", config.eval.seed, int, 0)
    config.__dict__["_validated"] = config.to_dict()
    return config


def validated(config: TrainConfig) -> TrainConfig:
    """``config``, validated once: :func:`validate` runs again only if the config has changed since it last
    passed (a ``ppo:PATH`` opponent is loaded to be checked; :func:`load_config` then ``train()`` load it once).
    """
    if config.__dict__.get("_validated") != config.to_dict():
        validate(config)
    return config


#: The largest config or sweep file read (the shipped ones are a few KB).
MAX_YAML_BYTES = 1 << 20


class _PlainLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without aliases: ``*name`` can make a few lines expand into billions of values (a
    configuration file never needs one), so an alias is refused where it is read."""

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML's hook
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not accepted; write the values out", event.start_mark
            )
        return super().compose_node(parent, index)


def read_yaml(path: str | os.PathLike, what: str = "config") -> Any:
    """The contents of a YAML file (``what`` names it in errors: ``config``, ``sweep``).

    At most :data:`MAX_YAML_BYTES` (1 MiB) are read, and YAML aliases are refused: a small file cannot expand.

    Raises:
        ValueError: missing or unreadable file, too large, not UTF-8 text (a binary file), bad YAML or an alias
            (one line).
    """
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_YAML_BYTES + 1)
    except OSError as error:
        raise ValueError(f"cannot read {what} {str(path)!r}: {error.strerror or error}") from None
    if len(data) > MAX_YAML_BYTES:
        raise ValueError(f"{what} {str(path)!r} is over {MAX_YAML_BYTES:,} bytes: not a config file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{what} {str(path)!r} is not a YAML text file: byte {error.start} is not UTF-8 (a binary file?)"
        ) from None
    try:
        return yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - a SafeLoader without aliases
    except yaml.YAMLError as error:
        first = str(error).splitlines()[0] if str(error) else "invalid YAML"
        if isinstance(error, yaml.MarkedYAMLError) and error.problem and "aliases" in error.problem:
            first = f"{error.problem} (line {error.problem_mark.line + 1})"
        raise ValueError(f"{what} {str(path)!r} is not valid YAML: {first}") from None


def load_config(path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Reads a YAML config, applies top-level ``overrides`` (CLI flags), validates.

    Raises:
        ValueError: missing or unreadable file, bad YAML, unknown key, bad value.
    """
    data = read_yaml(path, "config")
    if data is None:
        data = {}
    config = _from_dict(TrainConfig, data, "")
    for name, value in (overrides or {}).items():
        if value is not None:
            setattr(config, name, value)
    return validate(config)
