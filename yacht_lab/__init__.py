"""The experiment lab of yacht-rl: one folder per job, standing on :mod:`yacht_env` (the game) and
:mod:`yacht_agents` (the players), as CleanRL's ``cleanrl_utils`` stands beside ``cleanrl``; neither imports it.

- :mod:`yacht_lab.training`: which trainer runs a config, configs, run folders, and the trainer families (SB3, JAX);
- :mod:`yacht_lab.measure`: evaluation on common dice, head to head, ratings, the two-player yardstick;
- :mod:`yacht_lab.sweep`: configs x seeds on Ray Tune and their statistics;
- :mod:`yacht_lab.table`: the table people play at: the game, the coach, the terminal and browser tables, records;
- :mod:`yacht_lab.scripts`: the command-line programs (``yacht-train``, ``yacht-evaluate``, ``yacht-play``,
  ``yacht-sweep``, ``yacht-web``; also ``python -m yacht_lab <command>`` and the repository's ``train.py`` and
  friends), thin fronts over the folders;
- :mod:`yacht_lab.ray_cluster`: joining Ray, shared by the sweeps and head to head on a cluster.

Imports run one way: ``table`` imports no other job; ``measure`` may read ``table``'s game record; ``training`` may use
``measure`` (its curves evaluate); ``sweep`` may use both; ``scripts`` stands on top (``tests/test_layout.py``).

The names below are the lab's front door, loaded when first used: importing this package imports nothing but the
standard library (the tools load numpy and torch inside ``main()``, and :func:`train` only the chosen trainer).
"""

from __future__ import annotations

import importlib
from typing import Any

#: The lab's public names, by the module that defines each.
_PUBLIC = {
    "train": "yacht_lab.training.trainers",
    "TrainConfig": "yacht_lab.training.schema",
    "load_config": "yacht_lab.training.config",
    "resume_config": "yacht_lab.training.run_context",
    "evaluate": "yacht_lab.measure.evaluation",
    "head_to_head": "yacht_lab.measure.head_to_head",
    "fit_ratings": "yacht_lab.measure.ratings",
    "load_sweep": "yacht_lab.sweep.spec",
    "run_sweep": "yacht_lab.sweep.run",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'yacht_lab' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value  # once loaded, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
