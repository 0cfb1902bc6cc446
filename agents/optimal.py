"""``optimal``: the exact solver's best action on the state behind each observation, on every preset."""

from __future__ import annotations

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R
from yacht_env.solver import solve


class OptimalAgent(Agent):
    """Plays the optimal policy of :func:`yacht_env.solver.solve` (ties go to the smallest action).

    The whole decoded state goes to the solver, batched: ``(roll, rolls_left, open_mask, upper, armed)``, the
    family's upper subtotal and Yahtzee box included (always 0 on Yacht's presets). The action masks are not
    consulted: the solver's legality is the env's (canonical keeps, and the forced joker's placement).
    """

    def __init__(self, rules: str | R.Rules = "standard", name: str = "optimal") -> None:
        super().__init__(name, rules)
        self.solution = solve(self.rules)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        return np.asarray(self.solution.best_action(*self.encoder.decode(observations)))
