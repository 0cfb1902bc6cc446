"""Which trainer runs a config, in one place: :func:`train` (``yacht_lab.train``) dispatches on
:attr:`TrainConfig.trainer <yacht_lab.training.schema.TrainConfig.trainer>`.

- ``ppo`` (neither a ``distill`` nor a ``jax`` section): SB3's MaskablePPO, :func:`yacht_lab.training.sb3.ppo.train`,
  with the ``train`` extra;
- ``distill`` (a ``distill`` section): the policy-iteration distillation,
  :func:`yacht_lab.training.sb3.distill.train_distill`, with the ``train`` extra;
- ``jax_ppo`` (a ``jax`` section): PPO on the JAX core, :func:`yacht_lab.training.jax.ppo.train_jax`, with the ``jax``
  extra;
- ``search`` (a ``search`` section): a learned-value search agent trained by self-play,
  :func:`yacht_lab.training.search.trainer.train_search`, with the ``train`` extra (torch).

Each trainer refuses a config of another (:func:`require_trainer`, one ``ValueError`` line), and only the chosen
trainer's module is imported: a JAX run imports neither torch nor Stable-Baselines3. Every trainer runs in a
:class:`yacht_lab.training.run_context.RunContext` (the run folder, its lock and files, checkpoints, Ctrl-C, resume).
This module imports only the standard library (and the config's schema when it trains).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from yacht_lab.training.schema import TrainConfig

__all__ = ["TRAINERS", "Trainer", "require_trainer", "train"]


class Trainer(NamedTuple):
    """A trainer of :data:`TRAINERS`."""

    module: str
    """The module that holds it."""
    function: str
    """Its ``train(config, output_dir, **options)`` function (the options: :func:`train`'s)."""
    name: str
    """What it is, in a message."""
    sections: str
    """What a config it trains has, in a message."""
    extra: str
    """The package extra it needs."""
    options: tuple[str, ...] = ()
    """Its own options, besides the run context's (:data:`RUN_OPTIONS`)."""


#: The trainers, by :attr:`TrainConfig.trainer <yacht_lab.training.schema.TrainConfig.trainer>`.
TRAINERS = {
    "ppo": Trainer(
        "yacht_lab.training.sb3.ppo", "train", "PPO", "neither a distill nor a jax section", "train", ("report",)
    ),
    "distill": Trainer("yacht_lab.training.sb3.distill", "train_distill", "distillation", "a distill section", "train"),
    "jax_ppo": Trainer("yacht_lab.training.jax.ppo", "train_jax", "JAX PPO", "a jax section", "jax"),
    "search": Trainer(
        "yacht_lab.training.search.trainer", "train_search", "search self-play", "a search section", "train"
    ),
}


#: The options every trainer takes (its :class:`~yacht_lab.training.run_context.RunContext`'s).
RUN_OPTIONS = ("resume", "command", "progress", "name", "rerun", "on_stop")


def require_trainer(config: TrainConfig, trainer: str) -> None:
    """What each trainer checks first: ``config`` is its kind.

    Raises:
        ValueError: ``config`` is another trainer's (one line naming the trainer it belongs to).
    """
    chosen = config.trainer
    if chosen != trainer:
        owner = TRAINERS[chosen]
        raise ValueError(
            f"a config with {owner.sections} trains by {owner.module}.{owner.function}, not by "
            f"{TRAINERS[trainer].name} (yacht_lab.train chooses a config's trainer)"
        )


def train(config: TrainConfig, output_dir: str | os.PathLike = "runs", **options: Any) -> Path:
    """Trains ``config`` with its trainer (module docstring) and returns the run folder.

    Args:
        config: The run's config (:func:`yacht_lab.training.config.load_config`; a resumed run's:
            :func:`yacht_lab.training.run_context.resume_config`).
        output_dir: Where a new run's folder is made.
        **options: The run's (:class:`~yacht_lab.training.run_context.RunContext`'s): ``resume`` (a checkpoint, or a run
            folder: its newest checkpoint, with ``config`` its run's), ``command`` (the line ``command.txt`` records;
            default: this process's command line), ``progress`` (a progress bar), ``name`` (a new run's folder is
            exactly ``output_dir/name``), ``rerun`` (the command the line printed after a stop tells to continue
            with), ``on_stop`` (called with the signal's number when a signal stopped the run); and the trainer's own
            (SB3 PPO's ``report``, a callable).

    Raises:
        ValueError: ``config`` is not a :class:`~yacht_lab.training.schema.TrainConfig`, an option the trainer does not
            take, the trainer's extra is not installed, or the trainer's own errors (a bad config, an output folder
            that cannot be written, a checkpoint it cannot resume, a resume with another config than the run's).
        yacht_lab.training.run_context.Abort: a signal before training starts, or a second one.
    """
    from yacht_lab.training.schema import TrainConfig

    if not isinstance(config, TrainConfig):
        raise ValueError(
            "yacht_lab.train takes a TrainConfig (yacht_lab.training.config.load_config reads one from a file; "
            f"yacht_lab.training.run_context.resume_config gives a run's), got {type(config).__name__}"
        )
    trainer = TRAINERS[config.trainer]
    accepted = (*RUN_OPTIONS, *trainer.options)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ValueError(
            f"the {trainer.name} trainer takes no option {unknown[0]!r} (it takes: {', '.join(sorted(accepted))})"
        )
    for name in ("report", "on_stop"):
        if options.get(name) is not None and not callable(options[name]):
            raise ValueError(f"{name} must be a callable or None, got {options[name]!r}")
    try:
        module = importlib.import_module(trainer.module)
    except ImportError as error:  # torch and Stable-Baselines3 (train extra), jax and optax (jax extra)
        raise ValueError(
            f"a config with {trainer.sections} trains by {trainer.name}, which needs the {trainer.extra} extra "
            f"(pip install 'yacht-rl[{trainer.extra}]'): {error}"
        ) from None
    return getattr(module, trainer.function)(config, output_dir, **options)
