"""The sweep file: reading and validating a sweep (``configs/sweep.yaml`` documents every key) into a
:class:`Sweep`, before anything runs.

A sweep holds a base training config (the keys of ``configs/ppo.yaml``), a search space (a grid over any config
keys, plus optional random samples drawn with Ray Tune's samplers), the seeds, the per-trial budget, the retries,
ASHA early stopping and the statistics' settings. :func:`parse_sweep` checks all of it, every trial's training
config included, and :meth:`Sweep.trial_config` builds the config of one (configuration, seed).

Separate from running the sweep on Ray (:mod:`yacht_lab.sweep.run`): a sweep file is checked, and its
configurations named, without starting Ray (``ray`` is imported only to draw random samples).
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from yacht_env.rules import is_int
from yacht_lab.training.config import MAX_SEED, TrainConfig, dataclass_from_dict, validate
from yacht_lab.training.yaml_reader import read_yaml

#: Keys the sweep sets itself and a search may not: the seed (``seeds``), the budget (``budget``) and the torch
#: threads (``--cpus-per-trial``).
RESERVED_KEYS = ("seed", "total_timesteps", "max_minutes", "torch_threads")
#: Random-search distributions: the name in the YAML and the Ray Tune sampler it stands for.
DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")
#: Trials in one sweep (configurations x seeds): a bound on what one YAML can ask for by mistake.
MAX_TRIALS = 10_000
TOP_KEYS = ("name", "base", "search", "seeds", "budget", "retries", "early_stopping", "statistics")


# --------------------------------------------------------------------------------------------------
# The sweep file
# --------------------------------------------------------------------------------------------------
@dataclass
class Configuration:
    """One point of the search space: its label and the config keys it sets (dotted: ``ppo.n_epochs``)."""

    name: str
    overrides: dict[str, Any]


@dataclass
class Sweep:
    """A validated sweep file (see ``configs/sweep.yaml``)."""

    name: str | None
    base: dict[str, Any]
    configurations: list[Configuration]
    seeds: list[int]
    total_timesteps: int
    max_minutes: float | None
    retries: int = 2
    early_stopping: dict[str, Any] | None = None
    statistics: dict[str, int] = field(default_factory=lambda: {"reps": 10_000, "seed": 0})
    source: dict[str, Any] = field(default_factory=dict)
    """The sweep file as read (saved in the sweep folder)."""

    def trial_config(self, configuration: Configuration, seed: int, cpus_per_trial: int) -> TrainConfig:
        """The training config of one trial: the base, the configuration's keys, the seed, the budget and
        ``torch_threads = cpus_per_trial``.
        """
        data = copy.deepcopy(self.base)
        for key, value in configuration.overrides.items():
            _set_dotted(data, key, copy.deepcopy(value))
        data.update(seed=seed, total_timesteps=self.total_timesteps, max_minutes=self.max_minutes)
        data["torch_threads"] = cpus_per_trial
        return validate(dataclass_from_dict(TrainConfig, data, ""))

    @property
    def metric(self) -> str:
        """What a trial is judged by: ``percent_of_optimal`` solo, ``win_rate`` with opponents."""
        from yacht_lab.training.sb3.tasks import task_class

        return task_class(dataclass_from_dict(TrainConfig, self.base, "")).metric


def _set_dotted(data: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    for part in parts[:-1]:
        data = data.setdefault(part, {})
    data[parts[-1]] = value


def _get_dotted(data: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        data = data[part]
    return data


def _check_key(key: Any, where: str) -> str:
    """A dotted config key that exists in :class:`TrainConfig` and is not reserved."""
    defaults = TrainConfig().to_dict()
    if not isinstance(key, str):
        raise ValueError(f"{where}: keys must be config keys such as ppo.n_epochs, got {key!r}")
    try:
        value = _get_dotted(defaults, key)
    except (KeyError, TypeError):
        raise ValueError(f"{where}: {key!r} is not a training config key (see configs/ppo.yaml)") from None
    if isinstance(value, dict):
        raise ValueError(f"{where}: {key!r} is a section; name one of its keys, such as {key}.{next(iter(value))}")
    if key in RESERVED_KEYS:
        raise ValueError(f"{where}: {key!r} is set by the sweep itself (seeds, budget, --cpus-per-trial), not searched")
    return key


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "x".join(_format_value(v) for v in value)
    return str(value)


def configuration_name(overrides: dict[str, Any]) -> str:
    """``key=value,...`` of a configuration (``base`` when it sets nothing); lists are joined by ``x``."""
    if not overrides:
        return "base"
    return ",".join(f"{key.split('.')[-1]}={_format_value(value)}" for key, value in overrides.items())


def _sampler(key: str, spec: Any):
    """A Ray Tune sampler from ``{loguniform: [low, high]}`` and its kind."""
    from ray import tune

    where = f"search.random.{key}"
    if not (isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in DISTRIBUTIONS):
        raise ValueError(f"{where} must be one of {{{': ..., '.join(DISTRIBUTIONS)}: ...}}, got {spec!r}")
    kind, args = next(iter(spec.items()))
    if kind == "choice":
        if not isinstance(args, list) or not args:
            raise ValueError(f"{where}: choice needs a non-empty list of values, got {args!r}")
        return tune.choice(args)
    ok = isinstance(args, list) and len(args) == 2 and all(isinstance(a, int | float) for a in args)
    if ok and not all(math.isfinite(a) for a in args):
        raise ValueError(f"{where}: {kind} needs finite bounds, got {args!r}")
    if not ok or not args[0] < args[1] or (kind == "loguniform" and args[0] <= 0):
        raise ValueError(f"{where}: {kind} needs [low, high] with low < high{' and low > 0' * (kind == 'loguniform')}")
    if kind == "randint":
        if not all(is_int(a) for a in args):
            raise ValueError(f"{where}: randint needs integer bounds, got {args!r}")
        return tune.randint(args[0], args[1] + 1)  # both bounds included, as written
    return {"uniform": tune.uniform, "loguniform": tune.loguniform}[kind](float(args[0]), float(args[1]))


def _grid(grid: Any) -> dict[str, list]:
    """``search.grid``, checked: config keys to non-empty lists of values."""
    if not isinstance(grid, dict):
        raise ValueError(f"search.grid must map config keys to lists of values, got {grid!r}")
    for key, values in grid.items():
        _check_key(key, "search.grid")
        if not isinstance(values, list) or not values:
            raise ValueError(f"search.grid.{key} must be a non-empty list of values, got {values!r}")
    return grid


def _draws(random_space: dict, samples: int, sample_seed: int, grid: dict) -> list[dict[str, Any]]:
    """``samples`` draws of the ``search.random`` space (none without one), seeded by ``sample_seed``."""
    samplers = {}
    for key, spec in random_space.items():
        _check_key(key, "search.random")
        if key in grid:
            raise ValueError(f"search: {key!r} is both in the grid and random")
        samplers[key] = _sampler(key, spec)
    if not samplers:
        return []
    import numpy as np

    rng = np.random.default_rng(sample_seed)
    draws = []
    for _ in range(samples):
        draw = {}
        for key, sampler in samplers.items():
            value = sampler.sample(random_state=rng)
            draw[key] = value.item() if hasattr(value, "item") else value
        draws.append(draw)
    return draws


def _configurations(search: Any) -> list[Configuration]:
    if search is None:
        search = {}
    if not isinstance(search, dict):
        raise ValueError(f"search must be a mapping with grid, random, samples, sample_seed; got {search!r}")
    unknown = sorted(set(search) - {"grid", "random", "samples", "sample_seed"})
    if unknown:
        raise ValueError(f"unknown key search.{unknown[0]}; accepted: grid, random, samples, sample_seed")
    grid = _grid(search.get("grid") or {})
    random_space = search.get("random") or {}
    samples = search.get("samples", 0)
    if not (is_int(samples) and 0 <= samples <= MAX_TRIALS):
        raise ValueError(f"search.samples must be an int in 0..{MAX_TRIALS}, got {samples!r}")
    # Counted before anything is built: 8 keys of 10 values are 10**8 configurations, never a list in memory.
    count = math.prod(len(values) for values in grid.values()) * max(samples, 1)
    if count > MAX_TRIALS:
        raise ValueError(
            f"the search has {count:,} configurations (the grid's {' x '.join(str(len(v)) for v in grid.values())}"
            f"{f' x {samples} samples' if samples else ''}); at most {MAX_TRIALS:,} trials in a sweep"
        )
    points = [dict(zip(grid, combo, strict=True)) for combo in itertools.product(*grid.values())]
    if not isinstance(random_space, dict):
        raise ValueError(f"search.random must map config keys to distributions, got {random_space!r}")
    if bool(random_space) != bool(samples):
        raise ValueError("search.random and search.samples go together: a space to draw from and how many draws")
    sample_seed = search.get("sample_seed", 0)
    if not (is_int(sample_seed) and 0 <= sample_seed <= MAX_SEED):
        raise ValueError(f"search.sample_seed must be an int in 0..{MAX_SEED}, got {sample_seed!r}")
    draws = _draws(random_space, samples, sample_seed, grid)
    if draws:
        points = [{**point, **draw} for point in points for draw in draws]
    configurations = [Configuration(configuration_name(point), point) for point in points]
    names = [c.name for c in configurations]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"search: two configurations are both {duplicate!r}; give the grid distinct values")
    return configurations


def _base(base: Any) -> dict[str, Any]:
    """``base``, checked: training config keys, none of those the sweep sets itself."""
    if not isinstance(base, dict):
        raise ValueError(f"base must be a mapping of training config keys (see configs/ppo.yaml), got {base!r}")
    for key in RESERVED_KEYS:
        if key in base:
            raise ValueError(f"base.{key} is set by the sweep itself (seeds, budget, --cpus-per-trial)")
    dataclass_from_dict(TrainConfig, copy.deepcopy(base), "")  # unknown keys name themselves
    return base


def _seeds(seeds: Any) -> list[int]:
    """``seeds``: a count, or a non-empty list of distinct seeds."""
    if is_int(seeds) and 1 <= seeds <= MAX_TRIALS:
        seeds = list(range(seeds))
    if not (isinstance(seeds, list) and seeds and all(is_int(s) and 0 <= s <= MAX_SEED for s in seeds)):
        raise ValueError(f"seeds must be a count or a non-empty list of ints in 0..{MAX_SEED}, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds!r}")
    return seeds


def parse_sweep(data: Any, where: str = "sweep") -> Sweep:
    """Validates a sweep file's contents (see ``configs/sweep.yaml``); every trial's config is checked here,
    before Ray starts.

    Raises:
        ValueError: one line naming the first problem.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping of {', '.join(TOP_KEYS)}, got {data!r}")
    unknown = sorted(str(key) for key in set(data) - set(TOP_KEYS))
    if unknown:
        raise ValueError(f"unknown sweep key {unknown[0]}; accepted: {', '.join(TOP_KEYS)}")
    name = data.get("name")
    if name is not None and not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", name)):
        raise ValueError(f"name must be a folder name of letters, digits, '.', '_', '-', got {name!r}")
    base = _base(data.get("base") or {})
    seeds = _seeds(data.get("seeds", [0, 1, 2]))
    budget = data.get("budget")
    if not isinstance(budget, dict) or set(budget) - {"total_timesteps", "max_minutes"} or not budget:
        raise ValueError(f"budget must be a mapping of total_timesteps and/or max_minutes, got {budget!r}")
    retries = data.get("retries", 2)
    if not (is_int(retries) and 0 <= retries <= 100):
        raise ValueError(f"retries must be an int in 0..100, got {retries!r}")
    sweep = Sweep(
        name=name,
        base=base,
        configurations=_configurations(data.get("search")),
        seeds=seeds,
        total_timesteps=budget.get("total_timesteps", TrainConfig.total_timesteps),
        max_minutes=budget.get("max_minutes"),
        retries=retries,
        early_stopping=_early_stopping(data.get("early_stopping")),
        statistics=_statistics(data.get("statistics")),
        source=copy.deepcopy(data),
    )
    trials = len(sweep.configurations) * len(seeds)
    if trials > MAX_TRIALS:
        raise ValueError(f"the sweep has {trials:,} trials (configurations x seeds); at most {MAX_TRIALS:,}")
    for configuration in sweep.configurations:
        try:
            sweep.trial_config(configuration, seeds[0], 1)
        except ValueError as error:
            raise ValueError(f"configuration {configuration.name!r}: {error}") from None
    if sweep.early_stopping and sweep.total_timesteps is None:
        raise ValueError("early_stopping needs budget.total_timesteps (ASHA's rungs are in timesteps)")
    return sweep


def _early_stopping(spec: Any) -> dict[str, Any] | None:
    if spec is None or spec is False:
        return None
    if not isinstance(spec, dict) or set(spec) - {"grace_timesteps", "reduction_factor"}:
        raise ValueError(f"early_stopping must be null or a mapping of grace_timesteps, reduction_factor; got {spec!r}")
    grace = spec.get("grace_timesteps")
    factor = spec.get("reduction_factor", 2)
    if not (is_int(grace) and grace >= 1):
        raise ValueError(f"early_stopping.grace_timesteps must be an int >= 1, got {grace!r}")
    if not (isinstance(factor, int | float) and math.isfinite(factor) and factor > 1):
        raise ValueError(f"early_stopping.reduction_factor must be a number > 1, got {factor!r}")
    return {"grace_timesteps": grace, "reduction_factor": factor}


def _statistics(spec: Any) -> dict[str, int]:
    spec = {"reps": 10_000, "seed": 0, **(spec or {})}
    if set(spec) - {"reps", "seed"}:
        raise ValueError(f"statistics must be a mapping of reps, seed; got {spec!r}")
    if not (is_int(spec["reps"]) and 1 <= spec["reps"] <= 1_000_000):
        raise ValueError(f"statistics.reps must be an int in 1..1,000,000, got {spec['reps']!r}")
    if not (is_int(spec["seed"]) and 0 <= spec["seed"] <= MAX_SEED):
        raise ValueError(f"statistics.seed must be an int in 0..{MAX_SEED}, got {spec['seed']!r}")
    return spec


def load_sweep(path: str | os.PathLike) -> Sweep:
    """Reads and validates a sweep file.

    Raises:
        ValueError: missing or unreadable file, bad YAML, or any bad key or value (see :func:`parse_sweep`).
    """
    return parse_sweep(read_yaml(path, "sweep"), f"sweep {str(path)!r}")
