"""yacht-rl: the dice game Yacht as a reinforcement-learning environment, with its exact optimal solver.

``import yacht_env`` registers ``"Yacht-v0"`` (solo) and ``"YachtVersus-v0"`` (one seat against fixed opponents)
with Gymnasium; the PettingZoo multiplayer env is :mod:`yacht_env.multiplayer`. :func:`check_preset` plays seeded
games of a preset (or your own ``Rules``) through every one of them and checks each step.
"""

from importlib.metadata import PackageNotFoundError, version

import gymnasium

from yacht_env.conformance import check_preset
from yacht_env.env import YachtEnv
from yacht_env.rules import CATEGORIES, PRESETS, Category, Rules, get_rules, score

__all__ = ["CATEGORIES", "PRESETS", "Category", "Rules", "YachtEnv", "check_preset", "get_rules", "score"]
try:  # the one version is pyproject.toml's, as installed
    __version__ = version("yacht-rl")
except PackageNotFoundError:  # the source tree on sys.path without an install
    __version__ = "0+unknown"

if "Yacht-v0" not in gymnasium.registry:
    gymnasium.register(
        id="Yacht-v0",
        entry_point="yacht_env.env:YachtEnv",
        vector_entry_point="yacht_env.vector:YachtVectorEnv",
    )
if "YachtVersus-v0" not in gymnasium.registry:
    gymnasium.register(
        id="YachtVersus-v0",
        entry_point="yacht_env.versus:YachtVersusEnv",
        vector_entry_point="yacht_env.versus:YachtVersusVectorEnv",
    )
