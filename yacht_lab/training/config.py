"""The training config: validation, and reading it from a YAML file (the dataclasses are
:mod:`yacht_lab.training.schema`'s, and are importable from here too).

Validation catches every value that would crash or misbehave later: wrong types, out-of-range values, a torch
device this machine does not have, and sizes beyond the limits of :mod:`yacht_lab.training.schema` (refused up front
rather than ending in a ``MemoryError`` or a crash after minutes of work).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from yacht_agents import make_agent, parse_spec
from yacht_env import rules as R
from yacht_env.rules import is_int
from yacht_env.util import is_bare_name
from yacht_lab.measure.evaluation import MAX_GAMES
from yacht_lab.training.schema import (
    LEAGUE_KINDS,
    LEAGUE_SAMPLING,
    MAX_AUX_WEIGHT,
    MAX_DISTILL_EPOCHS,
    MAX_DISTILL_ITERATIONS,
    MAX_DISTILL_MEMORY,
    MAX_DISTILL_POSITIONS,
    MAX_DISTILL_TABLES,
    MAX_EPOCHS,
    MAX_FIXED_MEMBERS,
    MAX_JAX_BYTES,
    MAX_JAX_SEEDS,
    MAX_KEEP_CHECKPOINTS,
    MAX_LAYER_WIDTH,
    MAX_LAYERS,
    MAX_LEARNING_RATE,
    MAX_N_ENVS,
    MAX_OPPONENTS,
    MAX_REWARD_SCALE,
    MAX_ROLLOUT_STEPS,
    MAX_SEARCH_BATCH,
    MAX_SEARCH_EPOCHS,
    MAX_SEARCH_LAYERS,
    MAX_SEARCH_TABLES,
    MAX_SEARCH_WIDTH,
    MAX_SEED,
    MAX_SNAPSHOTS,
    MAX_TABLE_EVAL_GAMES,
    MAX_TIMESTEPS,
    MAX_TORCH_THREADS,
    OPPONENT_KINDS,
    OPPONENT_SPECS,
    DistillConfig,
    EvalConfig,
    JaxConfig,
    LeagueConfig,
    PolicyConfig,
    PPOConfig,
    SearchConfig,
    TrainConfig,
    dataclass_from_dict,
    from_dict,
    jax_memory_bytes,
    update_steps,
)
from yacht_lab.training.yaml_reader import read_yaml

__all__ = [
    "MAX_SEED",
    "DistillConfig",
    "EvalConfig",
    "JaxConfig",
    "LeagueConfig",
    "PPOConfig",
    "PolicyConfig",
    "SearchConfig",
    "TrainConfig",
    "dataclass_from_dict",
    "from_dict",
    "load_config",
    "resolve_config",
    "shipped_configs",
    "validate",
    "validated",
]


def _check_number(
    name: str, value: Any, kind: type, low: float, low_inclusive: bool = True, high: float | None = None
) -> None:
    ok = (is_int(value) or (kind is float and isinstance(value, float))) and math.isfinite(value)
    noun = "a number" if kind is float else "an int"
    above = f"{'>=' if low_inclusive else '>'} {low}"
    if not ok or not (value >= low if low_inclusive else value > low):
        raise ValueError(f"{name} must be {noun} {above}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be {noun} {above} and <= {high:,}, got {value!r}")


def _check_device(device: Any, uses_torch: bool = True) -> None:
    """Only devices this machine has: torch accepts ``cuda:99`` or ``meta`` as names and fails much later. The CPU
    is always there, and a trainer without torch (the JAX one: ``uses_torch=False``) has no torch device to check:
    neither imports torch.
    """
    if not isinstance(device, str):
        raise ValueError(f"device must be a torch device name such as 'cpu' or 'cuda', got {device!r}")
    if device == "cpu" or not uses_torch:
        return
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
    at_table = (
        config.league is not None or config.distill is not None or (is_int(config.players) and config.players > 1)
    )
    # A trainer that plays itself (jax, search) says which reward its table size takes, in its own check.
    plays_itself = config.jax is not None or config.search is not None
    if config.reward == "win" and not opponents and not at_table and not plays_itself:
        raise ValueError("reward 'win' needs opponents or a league: a solo game has no winner")
    players, size = (players, f"opponents: {len(opponents)}") if config.league is None else _check_league(config)
    seat = config.seat
    if not (seat == "random" or (is_int(seat) and 0 <= seat < players)):
        raise ValueError(f"seat must be 'random' or an int in 0..{players - 1} ({size}), got {seat!r}")


def _check_members(key: str, specs: Any, rules: str, players: int) -> None:
    """A list of 1..:data:`MAX_FIXED_MEMBERS` distinct agent specs of a table of ``players`` (``league.fixed``,
    ``distill.opponents``); its ``win`` and ``ppo:PATH`` members are built (they must fit the rules and the table).
    """
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
                make_agent(spec, rules, players=players)
            except ValueError as error:
                raise ValueError(f"{key}[{i}]: {error}") from None


def _check_league(config: TrainConfig) -> tuple[int, str]:
    """The ``league`` section; its ``win`` and ``ppo:PATH`` members are built (they must fit the table).
    Returns the table's size and how to name it in an error.
    """
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
    _check_number("league.snapshot_every_timesteps", league.snapshot_every_timesteps, int, 1, high=MAX_TIMESTEPS)
    _check_number("league.max_snapshots", league.max_snapshots, int, 0, high=MAX_SNAPSHOTS)
    share = league.snapshot_share
    if share is not None:
        _check_number("league.snapshot_share", share, float, 0)
        if share > 1:
            raise ValueError(f"league.snapshot_share must be null or in 0..1, got {share!r}")
    return players, f"league.players: {players}"


def _check_distill(config: TrainConfig) -> None:
    """The ``distill`` section; its ``win`` and ``ppo:PATH`` opponents are built (they must fit the table)."""
    section = config.distill
    if not isinstance(section, DistillConfig):
        raise ValueError(f"distill must be a mapping of distill keys or null, got {section!r}")
    if config.opponents or config.league is not None:
        raise ValueError("distill has its own table (distill.opponents): leave opponents empty and league out")
    if config.init is None:
        raise ValueError("distill needs init: it improves a trained model")
    if config.reward != "win":
        raise ValueError(f"distill learns the moves that win: reward must be 'win', got {config.reward!r}")
    rules = R.get_rules(config.rules)
    if rules.has_bonuses:  # the start's own policy, evaluated exactly: policy_distributions
        raise ValueError(
            "distill needs the start's exact score distributions: they cover rules without bonuses for a policy "
            f"table, and {rules.name} has bonuses"
        )
    players = section.players
    if not (is_int(players) and 2 <= players <= MAX_OPPONENTS + 1):
        raise ValueError(f"distill.players must be an int in 2..{MAX_OPPONENTS + 1}, got {players!r}")
    _check_members("distill.opponents", section.opponents, config.rules, players)
    bounds = {
        "positions": MAX_DISTILL_POSITIONS,
        "tables": MAX_DISTILL_TABLES,
        "memory": MAX_DISTILL_MEMORY,
        "epochs": MAX_DISTILL_EPOCHS,
        "batch_size": MAX_DISTILL_MEMORY,
        "iterations": MAX_DISTILL_ITERATIONS,
        "eval_every": MAX_DISTILL_ITERATIONS,
    }
    for name, high in bounds.items():
        _check_number(f"distill.{name}", getattr(section, name), int, 1, high=high)
    _check_number("distill.learning_rate", section.learning_rate, float, 0, low_inclusive=False, high=MAX_LEARNING_RATE)


def _check_policy(config: TrainConfig) -> None:
    """The ``policy`` section."""
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


def _check_ppo(config: TrainConfig) -> None:
    """The ``ppo`` section, and the rollout size it makes with ``n_envs``."""
    p = config.ppo
    _check_number("ppo.n_steps", p.n_steps, int, 1, high=MAX_ROLLOUT_STEPS)
    _check_number("ppo.batch_size", p.batch_size, int, 2)
    _check_number("ppo.n_epochs", p.n_epochs, int, 1, high=MAX_EPOCHS)
    _check_number("ppo.learning_rate", p.learning_rate, float, 0, low_inclusive=False, high=MAX_LEARNING_RATE)
    _check_number("ppo.learning_rate_final", p.learning_rate_final, float, 0, high=MAX_LEARNING_RATE)
    _check_number("ppo.ent_coef", p.ent_coef, float, 0)
    _check_number("ppo.ent_coef_final", p.ent_coef_final, float, 0)
    _check_number("ppo.clip_range", p.clip_range, float, 0, low_inclusive=False)
    _check_number("ppo.vf_coef", p.vf_coef, float, 0)
    _check_number("ppo.max_grad_norm", p.max_grad_norm, float, 0, low_inclusive=False)
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
    size = update_steps(config)
    if config.trainer in ("ppo", "jax_ppo") and config.checkpoint_every_timesteps < size:
        raise ValueError(
            f"checkpoint_every_timesteps ({config.checkpoint_every_timesteps:,}) is less than one update's steps "
            f"(n_envs x ppo.n_steps = {size:,}): it would write a checkpoint after every update; set it to {size:,} "
            "to ask for that, or to a multiple"
        )


def _check_run(config: TrainConfig) -> None:
    """The top-level numbers of a run: seed, budget, sizes, threads, scale, checkpoints and ``init``."""
    _check_number("seed", config.seed, int, 0, high=MAX_SEED)
    _check_number("total_timesteps", config.total_timesteps, int, 1, high=MAX_TIMESTEPS)
    if config.max_minutes is not None:
        _check_number("max_minutes", config.max_minutes, float, 0, low_inclusive=False)
    _check_number("n_envs", config.n_envs, int, 1, high=MAX_N_ENVS)
    _check_number("torch_threads", config.torch_threads, int, 1, high=MAX_TORCH_THREADS)
    _check_number("reward_scale", config.reward_scale, float, 0, low_inclusive=False, high=MAX_REWARD_SCALE)
    _check_number("checkpoint_every_timesteps", config.checkpoint_every_timesteps, int, 1, high=MAX_TIMESTEPS)
    if config.keep_checkpoints is not None:
        _check_number("keep_checkpoints", config.keep_checkpoints, int, 1, high=MAX_KEEP_CHECKPOINTS)
    if config.init is not None and not (isinstance(config.init, str) and config.init):
        raise ValueError(f"init must be a model's path or shipped name, or null, got {config.init!r}")


def _check_eval(config: TrainConfig) -> None:
    """The ``eval`` section; at a table, the games of an evaluation (``eval.games`` deals x ``players ** 2``)."""
    _check_number("eval.every_timesteps", config.eval.every_timesteps, int, 1, high=MAX_TIMESTEPS)
    _check_number("eval.games", config.eval.games, int, 1, high=MAX_GAMES)
    _check_number("eval.seed", config.eval.seed, int, 0, high=MAX_SEED)
    players = config.players
    if players > 1 and config.eval.games * players**2 > MAX_TABLE_EVAL_GAMES:
        raise ValueError(
            f"eval.games must be at most {MAX_TABLE_EVAL_GAMES // players**2:,} deals at a table of {players} "
            f"(each is played {players**2} times, at most {MAX_TABLE_EVAL_GAMES:,} games an evaluation), "
            f"got {config.eval.games!r}"
        )


def _check_jax_numbers(config: TrainConfig) -> None:
    """The ``jax`` section's own values (first: its players decide whether the reward fits)."""
    section = config.jax
    if not isinstance(section, JaxConfig):
        raise ValueError(f"jax must be a mapping of jax keys (seeds, players) or null, got {section!r}")
    _check_number("jax.seeds", section.seeds, int, 1, high=MAX_JAX_SEEDS)
    if is_int(config.seed) and config.seed + section.seeds - 1 > MAX_SEED:
        raise ValueError(f"seed + jax.seeds - 1 must be <= {MAX_SEED}")
    _check_number("jax.players", section.players, int, 1, high=MAX_OPPONENTS + 1)


def _check_jax(config: TrainConfig) -> None:
    """The ``jax`` section: solo on the score or a self-play table on the win, relu MLPs, no other opponents."""
    section = config.jax
    if config.opponents or config.league is not None or config.distill is not None:
        raise ValueError("the JAX trainer plays itself (jax.players): no opponents, league or distill")
    wanted = "score" if section.players == 1 else "win"
    if config.reward != wanted:
        raise ValueError(
            f"the JAX trainer trains {'solo' if section.players == 1 else 'at a table'} on reward: {wanted} "
            f"(jax.players: {section.players}), got {config.reward!r}"
        )
    if config.policy.activation != "relu":
        raise ValueError(
            f"the JAX trainer's network is relu: policy.activation must be relu, got {config.policy.activation!r}"
        )


def _check_search(config: TrainConfig) -> None:
    """The ``search`` section: self-play from fresh weights, solo on the score or a table on the win."""
    section = config.search
    if not isinstance(section, SearchConfig):
        raise ValueError(f"search must be a mapping of search keys (players, net_arch, ...) or null, got {section!r}")
    _check_number("search.players", section.players, int, 1, high=MAX_OPPONENTS + 1)
    if config.opponents or config.league is not None or config.distill is not None or config.jax is not None:
        raise ValueError("the search trainer plays itself (search.players): no opponents, league, distill or jax")
    if config.n_envs != TrainConfig.n_envs:  # its games are search.tables tables an iteration
        raise ValueError(
            f"the search trainer plays itself (search.players) at search.tables tables an iteration: n_envs "
            f"(--n-envs) does not apply to it; leave it at {TrainConfig.n_envs}, got {config.n_envs!r}"
        )
    if config.init is not None:
        raise ValueError("the search trainer starts from fresh weights: leave init out")
    wanted = "score" if section.players == 1 else "win"
    if config.reward != wanted:
        raise ValueError(
            f"the search trainer trains {'solo' if section.players == 1 else 'at a table'} on reward: {wanted} "
            f"(search.players: {section.players}), got {config.reward!r}"
        )
    arch = section.net_arch
    if not (
        isinstance(arch, list)
        and 1 <= len(arch) <= MAX_SEARCH_LAYERS
        and all(is_int(w) and 1 <= w <= MAX_SEARCH_WIDTH for w in arch)
    ):
        raise ValueError(
            f"search.net_arch must be a list of 1..{MAX_SEARCH_LAYERS} widths of 1..{MAX_SEARCH_WIDTH}, got {arch!r}"
        )
    _check_number("search.tables", section.tables, int, 1, high=MAX_SEARCH_TABLES)
    _check_number("search.td_lambda", section.td_lambda, float, 0, high=1)
    _check_number("search.epochs", section.epochs, int, 1, high=MAX_SEARCH_EPOCHS)
    _check_number("search.batch_size", section.batch_size, int, 1, high=MAX_SEARCH_BATCH)
    _check_number("search.learning_rate", section.learning_rate, float, 0, low_inclusive=False, high=1)
    _check_number("search.learning_rate_final", section.learning_rate_final, float, 0, high=section.learning_rate)
    _check_search_inputs(config)
    _check_number("search.aux_weight", section.aux_weight, float, 0, high=MAX_AUX_WEIGHT)
    if section.aux_weight and section.players == 1:
        raise ValueError("search.aux_weight weighs a table's auxiliary outputs: leave it out solo (search.players: 1)")


def _check_search_inputs(config: TrainConfig) -> None:
    """What a table's ``V`` reads beside the sheets: its solo network (``search.solo``) and the race."""
    section = config.search
    if section.solo is not None and not (isinstance(section.solo, str) and 0 < len(section.solo) <= 1000):
        raise ValueError(
            f"search.solo must name a solo search model (a shipped name, a .npz or a run folder), got {section.solo!r}"
        )
    if section.solo is not None and section.players == 1:
        raise ValueError("search.solo is a table's input: leave it out solo (search.players: 1)")
    if not isinstance(section.race, bool):
        raise ValueError(f"search.race must be true or false, got {section.race!r}")
    if section.race and section.solo is None:
        raise ValueError("search.race is the race of a solo network's own play: name that network in search.solo")
    placing = section.placing
    if type(placing) not in (int, float) or not 0 <= placing < 1:
        raise ValueError(f"search.placing must be a number in [0, 1), got {placing!r}")
    if placing and section.solo is None:
        raise ValueError("search.placing weighs the race of the table network's solo network: name it in search.solo")


def _check_jax_memory(config: TrainConfig) -> None:
    """A JAX run's estimated memory (:func:`yacht_lab.training.schema.jax_memory_bytes`) within :data:`MAX_JAX_BYTES`
    (the trainer also checks it against its device's memory before anything is allocated).
    """
    need = jax_memory_bytes(config)
    if need > MAX_JAX_BYTES:
        raise ValueError(
            f"this JAX run would take about {need / 2**30:,.1f} GiB (jax.seeds x the network, rollout and eval.games), "
            f"more than any run may ({MAX_JAX_BYTES / 2**30:,.0f} GiB): make it smaller"
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
    if config.jax is not None:  # first: its players decide whether the reward fits
        _check_jax_numbers(config)
    _check_versus(config)
    _check_run(config)
    if config.search is not None:  # before the sections it does not read, so that it says why they do not apply
        _check_search(config)
    _check_device(config.device, uses_torch=config.jax is None)
    _check_policy(config)
    _check_ppo(config)
    if config.distill is not None:
        _check_distill(config)
    if config.jax is not None:
        _check_jax(config)
    _check_eval(config)
    if config.jax is not None:
        _check_jax_memory(config)
    config.__dict__["_validated"] = config.to_dict()
    return config


def validated(config: TrainConfig) -> TrainConfig:
    """``config``, validated once: :func:`validate` runs again only if the config has changed since it last
    passed (a ``ppo:PATH`` opponent is loaded to be checked; :func:`load_config` then ``train()`` load it once).
    """
    if config.__dict__.get("_validated") != config.to_dict():
        validate(config)
    return config


def shipped_configs() -> dict[str, Path]:
    """The training configs that come with the package, by name: ``{"ppo": .../ppo.yaml, "yahtzee": ...}``.

    Installed, they are the package data ``yacht_lab/configs/<name>.yaml``; in a source checkout (an editable
    install) the repository's ``configs/``, where the wheel takes them from. The sweep file beside them
    (``sweep.yaml``, ``sweep.py``'s default) is not a training config.
    """
    package = Path(__file__).resolve().parents[1]  # yacht_lab/
    folders = [package / "configs"]
    if (package.parent / "pyproject.toml").is_file():  # a source checkout: yacht_lab/ beside configs/
        folders.append(package.parent / "configs")
    for folder in folders:
        found = {path.stem: path for path in sorted(folder.glob("*.yaml")) if path.stem != "sweep"}
        if found:
            return found
    return {}


def resolve_config(config: str | os.PathLike) -> Path:
    """The file a ``--config`` names: a shipped config's name (``"yahtzee"``, ``"versus"``: see
    :func:`shipped_configs`), or a path.

    A string without a path separator and not ending in ``.yaml`` or ``.yml`` is a name; a shipped config's name
    wins over a file of that name in the working folder (write ``./yahtzee`` for the file), as a shipped model's
    does (:func:`yacht_agents.ppo.resolve_model`). Anything else is a path, read as it is.

    Raises:
        ValueError: an unknown name with no such file (the message lists the shipped names).
    """
    text = os.fspath(config)
    if is_bare_name(config, (".yaml", ".yml")):
        shipped = shipped_configs()
        if text in shipped:
            return shipped[text]
        if not Path(text).exists():
            names = ", ".join(sorted(shipped)) or "none (they are missing from this installation)"
            raise ValueError(
                f"cannot read config {text!r}: no shipped config of that name (shipped: {names}) and no such file; "
                "give a shipped name or a path to a .yaml file"
            )
    return Path(config)


def load_config(path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Reads a YAML config (a path, or a shipped config's name: :func:`resolve_config`), applies top-level
    ``overrides`` (CLI flags), validates.

    Raises:
        ValueError: unknown name, missing or unreadable file, bad YAML, unknown key, bad value.
    """
    data = read_yaml(resolve_config(path), "config")
    if data is None:
        data = {}
    config = from_dict(data)
    for name, value in (overrides or {}).items():
        if value is not None:
            setattr(config, name, value)
    return validate(config)
