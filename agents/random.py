"""``random``: uniform over the legal actions, from a seeded generator."""

from __future__ import annotations

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R


class RandomAgent(Agent):
    """Picks each state's action uniformly among its legal ones.

    Args:
        rules: The rules preset (unused by the policy; kept for a uniform interface).
        seed: Seed of the agent's own ``numpy`` generator; ``None`` draws fresh entropy.
    """

    def __init__(self, rules: str | R.Rules = "standard", seed: int | None = None, name: str = "random") -> None:
        super().__init__(name, rules)
        self.rng = np.random.default_rng(seed)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        # The largest of independent uniform keys over the legal actions is a uniform pick among them.
        keys = self.rng.random(action_masks.shape)
        return np.where(action_masks, keys, -1.0).argmax(axis=1)
