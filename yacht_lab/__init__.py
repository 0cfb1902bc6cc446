"""The experiment lab of yacht-rl: training, evaluation, head to head, sweeps and the terminal table.

It stands on :mod:`yacht_env` (the game) and :mod:`yacht_agents` (the players), as CleanRL's ``cleanrl_utils``
stands beside ``cleanrl``; neither of those imports it. The command-line tools (``yacht-train``,
``yacht-evaluate``, ``yacht-play``, ``yacht-sweep`` in :mod:`yacht_lab.scripts`, also run as
``python -m yacht_lab <command>`` and as the repository's ``train.py`` and friends) are thin fronts over its
modules. :func:`train` trains a config with its trainer (SB3 PPO, the distillation or JAX PPO:
:mod:`yacht_lab.trainers`). Importing this package imports nothing but the standard library: the tools load numpy
and torch inside ``main()``, and :func:`train` only the chosen trainer.
"""

from yacht_lab.trainers import train

__all__ = ["train"]
