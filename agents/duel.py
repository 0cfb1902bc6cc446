"""The exact two-player players: the equilibrium and the best response to a fixed solo policy.

Both act from a finished :mod:`yacht_env.duel` solution at a two-player table, on the table view of their seat
(:class:`~yacht_env.encoding.MultiplayerEncoder`): their own game, the other player's open boxes and the two
totals, which is the whole state the solution needs (``(mover, other, lead)`` and the dice). Specs: ``duel``
(the equilibrium: no opponent beats it on average over the two seats) and ``duel:optimal`` (the best response to
the solver's policy: the most any player wins against ``optimal``).

A solution is built once by ``python -m yacht_env.duel build --rules standard [--opponent optimal]`` (29 minutes
for ``standard``'s equilibrium on two quiet cores, 46 for its best response to ``optimal``); the agents load it,
memory-mapped, and refuse to start without it.
"""

from __future__ import annotations

import numpy as np

from yacht_agents.base import Agent
from yacht_env import duel
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder

#: The opponents a best response is built against, by spec argument.
OPPONENTS = ("optimal",)


class DuelAgent(Agent):
    """Plays a two-player solution: the equilibrium (``opponent=None``) or the best response to ``opponent``.

    Args:
        rules: Rules without bonuses.
        opponent: ``None`` or ``"optimal"`` (see :func:`yacht_env.duel.solve`).
        name: The agent's name.
        cache_dir: Where the solution lies (default: the solver's cache folder).
        precision: The solution's precision (``"float32"``, the built games; ``"float64"``, small exact ones).

    Attributes:
        solution: The :class:`~yacht_env.duel.DuelSolution` played.

    Raises:
        ValueError: rules with bonuses, or no finished solution on disk (the message gives the command that
            builds it).
    """

    table_players = 2

    def __init__(
        self,
        rules: str | R.Rules = "standard",
        opponent: str | None = None,
        name: str = "duel",
        cache_dir=None,
        precision: str = "float32",
    ):
        rules = R.get_rules(rules)
        reason = duel.unsupported(rules)
        if reason is not None:
            raise ValueError(f"agent {name!r}: {reason}")
        super().__init__(name, rules)
        self.solution = duel.solve(rules, opponent, precision=precision, cache_dir=cache_dir, build_missing=False)
        self.view = MultiplayerEncoder(self.rules, 2)

    def read(self, observations: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(mover, other, lead, roll, rolls_left)`` ``(N,)`` of table observations ``(N, size)``."""
        view = self.view.decode(observations)
        return (
            view.open_mask,
            view.opponent_open[:, 0],
            view.total - view.opponent_total[:, 0],
            view.roll,
            view.rolls_left,
        )

    def win_probabilities(self, observations: np.ndarray) -> np.ndarray:
        """``(N, num_actions)``: each action's exact chance to win (ties half), ``-inf`` where illegal."""
        return self.solution.q_values(*self.read(np.asarray(observations, dtype=np.float32)))

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        values = np.where(action_masks, self.win_probabilities(observations), -np.inf)
        return values.argmax(axis=1)
