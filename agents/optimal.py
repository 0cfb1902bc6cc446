"""``optimal``: the exact solver's best action on the state behind each observation."""

from __future__ import annotations

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R
from yacht_env.solver import solve


class OptimalAgent(Agent):
    """Plays the optimal policy of :func:`yacht_env.solver.solve` (ties go to the smallest action).

    The action masks are not consulted: the solver's legality is the env's (canonical keeps).
    """

    def __init__(self, rules: str | R.Rules = "standard", name: str = "optimal") -> None:
        super().__init__(name, rules)
        self.solution = solve(self.rules)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        state = self.encoder.decode(observations)
        if not self.rules.has_bonuses:  # Yacht's state is (roll, rolls_left, open_mask)
            state = state[:3]
        return np.asarray(self.solution.best_action(*state))
