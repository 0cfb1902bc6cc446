"""The training config's schema: its dataclasses (one source of truth for the defaults, each field documented where
it is declared), the limits the validation enforces, and reading a config's data into them.

A run trains by PPO (:mod:`yacht_lab.training.sb3.ppo`), or, with a ``distill`` section, by policy-iteration
distillation (:mod:`yacht_lab.training.sb3.distill`). :mod:`yacht_lab.training.config` validates a config and reads it
from YAML. A config saved before the distillation had its own section (``rollouts:`` with ``labels: exact``) reads as
the ``distill`` section it is (:func:`from_dict`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from yacht_env import rules as R

#: Seeds go to numpy's legacy global generator (through SB3), which takes 32 bits.
MAX_SEED = 2**32 - 1
#: Torch CPU threads: a fixed cap, not this machine's core count, so that a config runs anywhere; torch
#: crashes (segfault) on absurd counts such as 100,000.
MAX_TORCH_THREADS = 256
#: Games stepped together: the vector env keeps about 1 KB per game.
MAX_N_ENVS = 100_000
#: Steps per rollout, ``ppo.n_steps x n_envs``: the rollout buffer keeps about 460 bytes a step (the 64
#: observation floats, the 44 action-mask floats, 7 more floats), so 4.6 GB at the limit; a versus run's table
#: view is 64 + 13 (P - 1) + 2 floats (79 at 2 players, 183 at 10: about 940 bytes a step; Yatzy's 236 at 10).
MAX_ROLLOUT_STEPS = 10_000_000
#: Opponents of a versus run (the versus env's table: the learner and at most 9 others).
MAX_OPPONENTS = 9
#: Seeds of a JAX run trained together (:class:`JaxConfig`): each holds its env states, rollout and optimizer.
MAX_JAX_SEEDS = 64
#: Environment steps of a run, and of its intervals (evaluations, checkpoints, snapshots): a trillion is about a year
#: at 30,000 steps a second, and every count stays far inside the 64-bit integers the trainers keep it in.
MAX_TIMESTEPS = 10**12
#: Passes over each rollout (``ppo.n_epochs``): the recipes take 4 to 10.
MAX_EPOCHS = 1000
#: The largest learning rate (``ppo.learning_rate`` and its final value, ``distill.learning_rate``): Adam's steps are
#: about this size in every weight, and the recipes take 1e-4 to 1e-3; far above it a run only diverges.
MAX_LEARNING_RATE = 1.0
#: The largest ``reward_scale``: the recipes take 0.02 (points) and 1.0 (wins); at 100 a game's return is already
#: some 25,000 units, and far above it the value loss overflows float32 and the run only diverges.
MAX_REWARD_SCALE = 100.0
#: Checkpoints a run keeps (``keep_checkpoints``): the newest this many; older ones are removed as new ones are saved.
MAX_KEEP_CHECKPOINTS = 1000
#: The most memory a JAX run may be estimated to take (:func:`jax_memory_bytes`), whatever its device has.
MAX_JAX_BYTES = 256 * 2**30
#: Games a JAX run's evaluation plays at once per seed (:mod:`yacht_lab.training.jax.rollouts`): more ``eval.games``
#: are played in chunks of this many (at a table, of ``JAX_EVAL_CHUNK_GAMES // players ** 2`` deals), with the same
#: results as all at once, in memory that does not grow with ``eval.games`` (about 2.5 KB a game in play).
JAX_EVAL_CHUNK_GAMES = 16_384
#: Opponent specs that need no file (``ppo:PATH`` is the fourth kind).
OPPONENT_SPECS = ("random", "greedy", "optimal")
#: The kinds of :func:`yacht_agents.parse_spec` a training run seats as opponents.
OPPONENT_KINDS = (*OPPONENT_SPECS, "ppo")
#: How a league draws its members (:mod:`yacht_lab.training.sb3.league`).
LEAGUE_SAMPLING = ("uniform", "pfsp")
#: The kinds of :func:`yacht_agents.parse_spec` a league seats as fixed members (``win`` is sized to the table).
LEAGUE_KINDS = (*OPPONENT_SPECS, "win", "ppo")
#: Fixed members of a league, and snapshots kept in it.
MAX_FIXED_MEMBERS, MAX_SNAPSHOTS = 16, 100
#: Hidden layers of the MLPs, and units per layer (a square layer of 8,192 is 256 MB of float32 weights).
MAX_LAYERS = 16
MAX_LAYER_WIDTH = 8192
#: Games played per evaluation of a run at a table (versus, league, distill), against each member measured:
#: ``eval.games`` deals, each played ``players ** 2`` times. At about 10,000 games a second, a minute or two; the
#: default is 8,000 at two players. (A solo run's ``eval.games`` is bounded by
#: :data:`yacht_lab.measure.evaluation.MAX_GAMES`.)
MAX_TABLE_EVAL_GAMES = 1_000_000
#: The distillation's sizes (:class:`DistillConfig`). Its tables per iteration, as the vector env's (about 1 KB a
#: seat); positions labelled per iteration, and positions remembered (each keeps the table's view, at most 236
#: floats, and its mask: under 1 KB, and the update copies the memory once); passes over the memory; iterations.
MAX_DISTILL_TABLES = MAX_N_ENVS
MAX_DISTILL_POSITIONS = 1_000_000
MAX_DISTILL_MEMORY = 2_000_000
MAX_DISTILL_EPOCHS = 1000
MAX_DISTILL_ITERATIONS = 100_000
#: The search trainer's sizes (:class:`SearchConfig`): tables played per iteration (each keeps its afterstates'
#: features, at most 15 x 10 x 160 float32: under 100 KB at ten seats), its network's hidden layers and widths
#: (:mod:`yacht_agents.search`'s bounds), passes over an iteration's afterstates, a minibatch, the auxiliary outputs'
#: weight in the loss.
MAX_SEARCH_TABLES = 16_384
MAX_SEARCH_LAYERS = 8
MAX_SEARCH_WIDTH = 2048
MAX_SEARCH_EPOCHS = 100
MAX_SEARCH_BATCH = 1_000_000
MAX_AUX_WEIGHT = 100.0


@dataclass
class PolicyConfig:
    """The network: its MLPs and the dice odds it sees (:class:`yacht_agents.policy.OddsPolicy`)."""

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
    """PPO's settings (sb3-contrib's ``MaskablePPO``) and the schedules of the rate and the entropy bonus."""

    n_steps: int = 256
    """Steps per env per rollout (rollout size = n_steps x n_envs, at most :data:`MAX_ROLLOUT_STEPS`)."""
    batch_size: int = 4096
    """Minibatch size."""
    n_epochs: int = 8
    """Passes over each rollout (1..:data:`MAX_EPOCHS`)."""
    learning_rate: float = 3e-4
    """Initial learning rate (> 0, at most :data:`MAX_LEARNING_RATE`); decays linearly to ``learning_rate_final`` over
    ``total_timesteps``."""
    learning_rate_final: float = 0.0
    """Learning rate at the end of training (0..:data:`MAX_LEARNING_RATE`)."""
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


@dataclass
class EvalConfig:
    """The periodic evaluation of the deterministic policy."""

    every_timesteps: int = 500_000
    """Evaluate the deterministic policy every this many timesteps (and at the end)."""
    games: int = 2000
    """Evaluation games: ``game_streams(seed, range(games))``, the same at every evaluation (at most
    :data:`yacht_lab.measure.evaluation.MAX_GAMES`). At a table, deals, each played ``players ** 2`` times against each
    member measured: ``games * players ** 2`` at most :data:`MAX_TABLE_EVAL_GAMES`."""
    seed: int = 1000
    """Seed of the evaluation games (0..:data:`MAX_SEED`)."""


@dataclass
class LeagueConfig:
    """A league of opponents (:mod:`yacht_lab.training.sb3.league`): each opponent seat of each table draws a member at
    each game's start, among the fixed agents and frozen snapshots of the learner.
    """

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
class DistillConfig:
    """Policy-iteration distillation (:mod:`yacht_lab.training.sb3.distill`) instead of PPO: the learner plays its own
    games and learns, by cross-entropy, the moves of the win agent over its start's policy (one step of policy iteration
    for the win, evaluated exactly). Needs ``init`` (a solo model of rules without bonuses) and ``reward: win``; the
    table is this section's (``opponents`` at the top level stays empty, no league).
    """

    opponents: list[str] = field(default_factory=lambda: ["optimal", "ppo:standard"])
    """Who the learner meets: each other seat of each table draws one of these uniformly (specs as
    ``league.fixed``'s, 1..:data:`MAX_FIXED_MEMBERS`, no repeats). The curve is the learner against each."""
    players: int = 2
    """Players at a table (2..10)."""
    positions: int = 40_000
    """Decisions of the learner labelled per iteration (about; 1..:data:`MAX_DISTILL_POSITIONS`)."""
    tables: int = 2048
    """Games played per iteration to find them (1..:data:`MAX_DISTILL_TABLES`)."""
    memory: int = 400_000
    """The update learns from the newest iterations' positions, at least this many (1..:data:`MAX_DISTILL_MEMORY`)."""
    learning_rate: float = 1.0e-4
    """Adam's step size (> 0, at most :data:`MAX_LEARNING_RATE`)."""
    epochs: int = 2
    """Passes over the memory per iteration (1..:data:`MAX_DISTILL_EPOCHS`; ``max_minutes`` and Ctrl-C stop them
    after the current gradient step)."""
    batch_size: int = 512
    """Positions per gradient step (1..:data:`MAX_DISTILL_MEMORY`)."""
    iterations: int = 112
    """Iterations to run (1..:data:`MAX_DISTILL_ITERATIONS`; ``max_minutes`` may stop it first)."""
    eval_every: int = 2
    """Evaluate against each opponent (``eval.games`` deals, ``eval.seed``) every this many iterations and at the
    end; also save ``checkpoints/iteration_<N>.zip`` (1..:data:`MAX_DISTILL_ITERATIONS`)."""


@dataclass
class JaxConfig:
    """Train with the JAX trainer (:mod:`yacht_lab.training.jax.ppo`, the ``jax`` extra) instead of SB3: PPO on the JAX
    core, the same recipe (``ppo``, ``policy``, ``n_envs``, ``reward_scale``, ``eval``), solo or at a self-play table,
    on whatever device jax sees (``device`` is torch's and does not apply). ``init`` may name a JAX model (its ``.npz``
    or run folder; a solo model starts a table run playing exactly as it did); no ``opponents``, league or distill.
    """

    seeds: int = 1
    """Seeds trained side by side in one ``vmap`` (``seed``, ``seed + 1``, ...; 1..:data:`MAX_JAX_SEEDS`)."""
    players: int = 1
    """1: solo (``reward: score``). 2..10: a table of this many seats, every seat played by the one network being
    trained (self-play), which sees the table's view; ``reward: win`` (each seat's win reward at the end; keep
    ``reward_scale`` at 1.0). Its curve is the learner's win rate against its start (``init``, or its fresh weights)
    on ``eval.games`` deals, each played ``players ** 2`` times with dice and seats rotated."""


@dataclass
class SearchConfig:
    """Train a learned-value search agent by self-play (:mod:`yacht_lab.training.search`, the ``train`` extra's torch)
    instead of a policy: a value ``V`` of the turn's end, every turn played by the exact expectimax over the mover's
    own dice (:mod:`yacht_agents.search`), fitted to TD(lambda) targets of its own games, from fresh weights. Its
    steps (``total_timesteps``, ``eval.every_timesteps``, ``checkpoint_every_timesteps``) count turns played (one
    afterstate each). No ``opponents``, league, distill, jax or ``init``; ``reward`` is ``score`` solo, ``win`` at a
    table; ``device`` and ``torch_threads`` are the regression's.
    """

    players: int = 1
    """1: solo (``V`` is the points to come). 2..10: a table of this many seats, every seat played by the agent
    being trained (``V`` is the mover's chance to finish first, ties split)."""
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    """The value network's hidden relu layers (1..:data:`MAX_SEARCH_LAYERS` widths of 1..:data:`MAX_SEARCH_WIDTH`)."""
    tables: int = 256
    """Games (tables) played per iteration, all seats stepped together (1..:data:`MAX_SEARCH_TABLES`)."""
    td_lambda: float = 0.0
    """TD(lambda)'s lambda in [0, 1]: 0 fits each afterstate to ``V``'s own exact one-turn backup (fitted value
    iteration), 1 to the game's result."""
    epochs: int = 2
    """Passes over an iteration's afterstates (1..:data:`MAX_SEARCH_EPOCHS`)."""
    batch_size: int = 512
    """Afterstates per minibatch step (1..:data:`MAX_SEARCH_BATCH`)."""
    learning_rate: float = 1.0e-3
    """Adam's step size at the start."""
    learning_rate_final: float = 1.0e-4
    """Adam's step size at the budget's end (linear in between; 0..``learning_rate``)."""
    solo: str | None = None
    """At a table: a solo search model of the same rules (what ``search:NAME`` names: a shipped name such as
    ``standard``, a ``.npz`` or a run folder), learned from its own solo games, whose estimate of every sheet's points
    still to come enters ``V``'s input (the saved model carries a copy; it is not trained further). ``null``: none."""
    race: bool = False
    """At a table, with ``solo``: ``V``'s input also holds the race, the mover's chance of finishing first if every
    seat played that solo network's search to the end (the exact score distributions of its own play,
    :meth:`yacht_agents.search_value.ValueNetwork.race`; the win agent's model over them), and its logit
    is ``V``'s starting point: the fresh network plays the race, and the network learns what to add to it (features
    3). ``false`` (the default): features 2."""
    placing: float = 0.0
    """At a table, with ``solo``: the weight ``w`` of the placing in the saved model's play
    (:mod:`yacht_agents.search_value`): it picks by ``(1 - w) V + w R``, ``R`` the expected fraction of the opponents
    it finishes ahead of (ties half) in the race of its solo network's play (at two seats the race itself). The
    self-play plans by ``V`` alone, so ``V`` stays the learned chance of finishing first; the curve measures the model
    as saved. 0 (the default): ``V`` alone (0..1, below 1)."""
    aux_weight: float = 0.0
    """At a table: the weight in the loss of auxiliary outputs, every seat's points still to come after the afterstate
    (the mover's first, then the seats after it, in units of 100 points), which the network also predicts from its
    shared hidden layers, fitted by squared error to the final totals of its own games. They only shape the hidden
    layers: the model saved and played is the win output alone. 0 (the default): none (0..:data:`MAX_AUX_WEIGHT`)."""


@dataclass
class TrainConfig:
    """A training run: the game, the table, the reward, the budget, and the sections above."""

    rules: str = "standard"
    """Rules preset: a name of :data:`yacht_env.rules.PRESETS` (Yacht's ``standard``, ``classic``, ``knizia``, or the
    family's ``yahtzee``, ``yahtzee_forced_joker``, ``yahtzee_no_joker``, ``yahtzee_no_bonus``, ``yatzy``,
    ``clubhouse``). The default recipe trains on each; it was tuned on Yacht's."""
    opponents: list[str] = field(default_factory=list)
    """Agent specs of the learner's fixed opponents (``random``, ``greedy``, ``optimal``, ``ppo:PATH``; at most
    :data:`MAX_OPPONENTS`). Empty (the default): solo ``Yacht-v0`` training. Given: the learner holds one seat
    at ``n_envs`` tables of ``YachtVersus-v0`` (``len(opponents) + 1`` players; it sees the table's view, 79
    values for 2 players), and the curve is its win rate against them
    (:func:`yacht_lab.measure.head_to_head.head_to_head` on ``eval.games`` deals). A ``ppo:PATH`` opponent must load and
    fit the table (a solo model, or one
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
    """Environment steps to train for (the learning-rate schedule spans this), at most :data:`MAX_TIMESTEPS`. Every
    trainer trains in whole updates of ``n_envs x ppo.n_steps`` steps and rounds the budget up to the next one
    (:func:`budget_steps`): 300,000 steps of 16,384-step updates train 311,296."""
    max_minutes: float | None = 60.0
    """Stop after this many minutes of training and save (``None``: no limit)."""
    n_envs: int = 64
    """Games stepped together by the native vector env (at most :data:`MAX_N_ENVS`)."""
    device: str = "cpu"
    """Torch device: ``cpu``, or ``cuda``, ``cuda:<i>``, ``mps`` where torch has them."""
    torch_threads: int = 1
    """Torch CPU threads, 1..:data:`MAX_TORCH_THREADS`."""
    reward_scale: float = 0.02
    """Rewards are multiplied by this inside training only (the env's reward stays the score); > 0 and at most
    :data:`MAX_REWARD_SCALE`."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint_every_timesteps: int = 2_000_000
    """Save ``checkpoints/step_<N>.zip`` this often (the JAX trainer: ``step_<N>.npz``, every seed in one file),
    after the update that passes it: at least one update's steps (``n_envs x ppo.n_steps``); that many writes one
    after every update."""
    keep_checkpoints: int | None = 5
    """Checkpoints kept in the run folder: the newest this many (1..:data:`MAX_KEEP_CHECKPOINTS`), older ones removed
    as new ones are saved; ``null`` keeps every one."""
    league: LeagueConfig | None = None
    """A league of opponents instead of ``opponents`` (which must then be empty): :class:`LeagueConfig`. ``None``
    (the default, left out of a saved config): no league."""
    distill: DistillConfig | None = None
    """Train by policy-iteration distillation instead of PPO: :class:`DistillConfig`. ``None`` (the default, left out
    of a saved config): PPO."""
    jax: JaxConfig | None = None
    """Train with the JAX trainer instead of SB3's MaskablePPO: :class:`JaxConfig`. ``None`` (the default, left out of
    a saved config): SB3."""
    search: SearchConfig | None = None
    """Train a learned-value search agent by self-play instead: :class:`SearchConfig`. ``None`` (the default, left out
    of a saved config): no search."""
    init: str | None = None
    """Start a new run from this model's weights (a path, or a shipped model's name such as ``standard``):
    :mod:`yacht_lab.training.sb3.warm_start`. The network the config describes must be the model's; a model of one game
    starts a run at a table (the table's columns start at zero). With a ``jax`` section: a JAX model's ``.npz`` or
    run folder (:class:`JaxConfig`). ``None`` (the default): fresh weights. A resumed run continues from its
    checkpoint and ignores it."""

    @property
    def env_id(self) -> str:
        """The env the run trains on: ``YachtVersus-v0`` at a table (opponents, league, distill), else ``Yacht-v0``."""
        return "YachtVersus-v0" if self.opponents or self.league is not None or self.distill else "Yacht-v0"

    @property
    def trainer(self) -> str:
        """The trainer that runs this config (:func:`yacht_lab.train` dispatches on it): ``distill`` with a
        ``distill`` section (:mod:`yacht_lab.training.sb3.distill`), ``jax_ppo`` with a ``jax`` section
        (:mod:`yacht_lab.training.jax.ppo`), else ``ppo``, SB3's MaskablePPO (:mod:`yacht_lab.training.sb3.ppo`).
        """
        if self.search is not None:
            return "search"
        return "distill" if self.distill is not None else "jax_ppo" if self.jax is not None else "ppo"

    @property
    def players(self) -> int:
        """Players at a table: 1 solo, ``len(opponents) + 1``, or the league's, the distillation's or the JAX
        trainer's ``players``.
        """
        if isinstance(self.distill, DistillConfig):
            return self.distill.players
        if isinstance(self.jax, JaxConfig):
            return self.jax.players
        if isinstance(self.search, SearchConfig):
            return self.search.players
        return self.league.players if isinstance(self.league, LeagueConfig) else len(self.opponents) + 1

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (what ``config.yaml`` holds)."""
        data = dataclasses.asdict(self)
        for section in (
            "league",
            "distill",
            "jax",
            "search",
        ):  # a config without one reads (and is saved) as before it existed
            if data[section] is None:
                del data[section]
        return data


#: The sections of a config, and those that may be left out (``None``).
_SECTIONS = {
    "policy": PolicyConfig,
    "ppo": PPOConfig,
    "eval": EvalConfig,
    "league": LeagueConfig,
    "distill": DistillConfig,
    "jax": JaxConfig,
    "search": SearchConfig,
}
_OPTIONAL_SECTIONS = ("league", "distill", "jax", "search")
#: Keys of the ``ppo`` section of 0.2's research builds, read when at the value that did nothing (the try log in the
#: docs names the commits that ran them otherwise).
_RETIRED_PPO_KEYS = {
    "kl_to_init": 0.0,
    "learn_last_turns": 0,
    "kl_to_init_last_turns": None,
    "explore_temperature": 1.0,
    "critic_warmup_timesteps": 0,
}
#: The keys of the old ``rollouts`` section that are the distillation's, under the same names.
_DISTILL_KEYS = tuple(f.name for f in dataclasses.fields(DistillConfig))


def from_dict(data: Any) -> TrainConfig:
    """A :class:`TrainConfig` of a config's data (as read from YAML), not yet validated.

    A config saved before the distillation had its own section reads as what it ran: a ``rollouts`` section with
    ``labels: exact`` labelling every decision becomes the ``distill`` section, and the ``ppo`` keys of the retired
    research options are dropped where they hold the value that did nothing. Anything else of theirs is refused
    in one line (it ran an option that is no longer part of the lab).

    Raises:
        ValueError: not a mapping, an unknown key, or a retired option in use.
    """
    return dataclass_from_dict(TrainConfig, _translated(data), "")


def _translated(data: Any) -> Any:
    """``data`` with the old forms above rewritten (a new dict; ``data`` is unchanged)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    ppo = data.get("ppo")
    if isinstance(ppo, dict) and set(ppo) & set(_RETIRED_PPO_KEYS):
        for key in set(ppo) & set(_RETIRED_PPO_KEYS):
            if ppo[key] != _RETIRED_PPO_KEYS[key]:
                raise ValueError(
                    f"ppo.{key} is a retired research option (docs: Self-play tries, which names the commit that "
                    f"runs it); this config sets it to {ppo[key]!r}"
                )
        data["ppo"] = {key: value for key, value in ppo.items() if key not in _RETIRED_PPO_KEYS}
    if "rollouts" in data:
        if "distill" in data:
            raise ValueError("a config has a distill section or the old rollouts one, not both")
        data["distill"] = _distill_of_rollouts(data.pop("rollouts"), data.get("rules", "standard"))
    return data


def _distill_of_rollouts(section: Any, rules: Any) -> Any:
    """The ``distill`` section of an old ``rollouts`` section that ran the distillation (``labels: exact`` on every
    decision: ``late_turns`` the whole sheet, so that ``anchor`` had no decision to weigh).
    """
    if not isinstance(section, dict):
        return section
    try:
        categories = R.get_rules(rules).num_categories
    except (ValueError, TypeError):
        categories = 12
    if section.get("labels", "race") != "exact" or section.get("late_turns", 4) < categories:
        raise ValueError(
            "rollouts labelled by a race, or only on the last turns, is a retired research option (docs: Self-play "
            "tries, which names the commit that runs it); rollouts with labels: exact on every decision is the "
            "distill section"
        )
    unknown = set(section) - set(_DISTILL_KEYS) - {"labels", "late_turns", "candidates", "futures", "refine", "z"}
    unknown -= {"anchor"}
    if unknown:
        raise ValueError(f"unknown config key rollouts.{sorted(unknown)[0]}; accepted: {sorted(_DISTILL_KEYS)}")
    old_defaults = {"positions": 2048, "tables": 1024, "memory": 200_000, "epochs": 4, "iterations": 1000}
    section = {**old_defaults, "eval_every": 4, **section}  # what the old section's defaults were
    return {key: value for key, value in section.items() if key in _DISTILL_KEYS}


def dataclass_from_dict(cls: type, data: Any, where: str):
    """The dataclass ``cls`` from a mapping of its fields (``TrainConfig``'s sections built from theirs), or one
    ``ValueError`` naming the key at ``where`` that is not a field.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'config'} must be a mapping, got {data!r}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown config key {where + '.' if where else ''}{unknown[0]}; accepted: {sorted(known)}")
    kwargs = {}
    for name, value in data.items():
        sub = _SECTIONS.get(name) if cls is TrainConfig else None
        optional = name in _OPTIONAL_SECTIONS and value is None
        kwargs[name] = dataclass_from_dict(sub, value, name) if sub and not optional else value
    return cls(**kwargs)


def update_steps(config: TrainConfig) -> int:
    """Environment steps of one update (a rollout): ``n_envs x ppo.n_steps``."""
    return config.n_envs * config.ppo.n_steps


def budget_steps(config: TrainConfig) -> int:
    """The steps a run trains: ``total_timesteps`` rounded up to whole updates (:func:`update_steps`), as every trainer
    rounds it (300,000 steps of 16,384-step updates: 19 updates, 311,296 steps).
    """
    size = update_steps(config)
    return -(-config.total_timesteps // size) * size


def eval_chunk(players: int) -> int:
    """What a JAX run's evaluation plays at once: games (solo), or deals of ``players ** 2`` games (a table)."""
    return max(JAX_EVAL_CHUNK_GAMES // players**2, 1) if players > 1 else JAX_EVAL_CHUNK_GAMES


def jax_memory_bytes(config: TrainConfig) -> int:
    """About the most memory a JAX run of ``config`` (a validated one, with a ``jax`` section) takes at once, in bytes:
    per seed, its parameters in the eight copies an update holds (start, Adam's two moments, gradients, ...), its
    rollout (kept twice: as played and shuffled), a minibatch's activations and their gradients, and an evaluation
    (a chunk of :data:`JAX_EVAL_CHUNK_GAMES` games stepped together, and every game's key and result). Generous by
    design (every preset's largest observation and action counts): a run it passes fits, one it refuses would not
    have.
    """
    players = config.jax.players
    observation = 96 + 16 * (players - 1)  # Yacht's 64 floats, Yahtzee's more, and each other seat's 13 (+ 2)
    actions = 48  # 32 keeps and at most 16 picks
    inputs = observation + 32  # the odds' chase values (and their second channel)
    widths = [inputs, *config.policy.net_arch]
    parameters = 2 * sum(a * b + b for a, b in zip(widths, widths[1:], strict=False))  # policy and value MLPs
    parameters += widths[-1] * (actions + 1) + 16 * actions  # the heads and the keep head
    hidden = 2 * sum(config.policy.net_arch)  # both MLPs' activations of one position
    per_position = observation + actions + 16  # a transition's floats
    rollout = 2 * update_steps(config) * per_position
    minibatch = config.ppo.batch_size * (3 * hidden + per_position)
    games = config.eval.games * (players * players if players > 1 else 1)
    chunk = min(games, eval_chunk(players) * (players * players if players > 1 else 1))
    # A chunk's games in play (a table: the learner's and its start's activations), then every game's key and results.
    evaluation = chunk * (2 * hidden + per_position + 64) * (2 if players > 1 else 1) + 8 * games
    return 4 * config.jax.seeds * (8 * parameters + rollout + minibatch + evaluation)
