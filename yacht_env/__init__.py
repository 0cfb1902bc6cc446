"""yacht-rl: the dice game Yacht as a reinforcement-learning environment, with its exact optimal solver.

``import yacht_env`` registers with Gymnasium ``"Yacht-v0"`` (solo) and ``"YachtVersus-v0"`` (one seat against
fixed opponents), and the same two envs once per rule preset (``"Yahtzee-v0"``, ``"YatzyVersus-v0"``, ...: the ids
of :func:`env_id`, :mod:`yacht_env.registration`); the PettingZoo multiplayer env is :mod:`yacht_env.multiplayer`.
:func:`check_preset` plays seeded games of a preset (or your own ``Rules``) through every one of them and checks each
step.
"""

from importlib.metadata import PackageNotFoundError, version

from yacht_env.conformance import check_preset
from yacht_env.env import YachtEnv
from yacht_env.registration import env_id, register_envs
from yacht_env.rules import CATEGORIES, PRESETS, Category, Rules, get_rules, score

__all__ = [
    "CATEGORIES",
    "PRESETS",
    "Category",
    "Rules",
    "YachtEnv",
    "check_preset",
    "env_id",
    "get_rules",
    "score",
]
try:  # the one version is pyproject.toml's, as installed
    __version__ = version("yacht-rl")
except PackageNotFoundError:  # the source tree on sys.path without an install
    __version__ = "0+unknown"

register_envs()
