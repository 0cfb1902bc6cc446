"""A pool of agents drawn by weight: the opponents of :class:`yacht_env.versus.YachtVersusVectorEnv` when it is built
with ``pool=`` instead of a fixed lineup (a league's members, :mod:`yacht_lab.training.sb3.league`).

**The draw.** With ``p`` the normalised weights and ``c`` their cumulative sums, a uniform ``u`` in [0, 1) draws the
first member ``i`` with ``c[i] > u * c[-1]`` (inverse CDF). A member of weight 0 is never drawn, and members of
weight 0 inserted anywhere change no other draw: the same ``u`` draws the same member among the others. The env
draws one ``u`` per opponent seat from its own generator.

**Members.** Indices never change: the pool only grows (:meth:`AgentPool.add`). A member of weight 0 may be given
weight again; a *retired* one (:meth:`AgentPool.retire`) may not, and once no game seats it the pool lets go of its
agent (``agents[i]`` becomes ``None``: a frozen network is freed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _numbers(values: Any) -> bool:
    """Whether ``values`` reads as an array of real numbers (not bools, not strings)."""
    if isinstance(values, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in values):
        return False  # numpy would read [True, 1] as ints
    try:
        return np.asarray(values).dtype.kind in "iuf"
    except (TypeError, ValueError):
        return False


class AgentPool:
    """Agents and their draw weights.

    Args:
        agents: The members, already built (the env resolves specs and checks each agent).
        weights: Their draw weights (default: equal); see :meth:`set_weights`.
    """

    def __init__(self, agents: Sequence[Any], weights: Sequence[float] | None = None) -> None:
        self.agents = list(agents)
        self.retired = np.zeros(len(self.agents), dtype=bool)
        self.weights = np.zeros(len(self.agents))
        self.set_weights(np.ones(len(self.agents)) if weights is None else weights)

    def set_weights(self, weights: Sequence[float]) -> None:
        """New draw weights, one per member, normalised to sum to 1 (:attr:`weights`).

        Raises:
            ValueError: not one finite non-negative number per member, all zero, or weight for a retired member.
        """
        weights = np.asarray(weights, dtype=np.float64) if _numbers(weights) else None
        if weights is None or weights.shape != (len(self.agents),) or not np.isfinite(weights).all():
            raise ValueError(f"pool weights must be {len(self.agents)} finite numbers, one per member")
        if (weights < 0).any() or not weights.sum() > 0:
            raise ValueError(f"pool weights must be >= 0 and not all zero, got {weights.tolist()}")
        if (weights[self.retired] > 0).any():
            raise ValueError(f"pool member {int(np.flatnonzero(self.retired & (weights > 0))[0])} is retired")
        self.weights = weights / weights.sum()
        self._cumulative = np.cumsum(self.weights)
        self._last = int(np.flatnonzero(self.weights > 0)[-1])

    def add(self, agents: Sequence[Any]) -> list[int]:
        """Appends ``agents`` with weight 0; returns their indices."""
        start = len(self.agents)
        self.agents.extend(agents)
        self.retired = np.concatenate([self.retired, np.zeros(len(agents), dtype=bool)])
        self.weights = np.concatenate([self.weights, np.zeros(len(agents))])
        self._cumulative = np.cumsum(self.weights)
        return list(range(start, len(self.agents)))

    def retire(self, members: Sequence[int]) -> None:
        """Members never drawn again (weight 0 for good).

        Raises:
            ValueError: an index out of range, or retiring every member that has weight.
        """
        members = np.asarray(members, dtype=np.intp).reshape(-1) if _numbers(members) else None
        if members is None or ((members < 0) | (members >= len(self.agents))).any():
            raise ValueError(f"members must be indices in 0..{len(self.agents) - 1}, got {members!r}")
        weights = self.weights.copy()
        weights[members] = 0
        if not weights.sum() > 0:
            raise ValueError("retiring these members would leave no member to draw")
        self.retired[members] = True
        self.set_weights(weights)

    def let_go(self, seated: np.ndarray) -> None:
        """Drops the agents of the retired members that no game seats (``seated``: the member indices in play)."""
        in_play = np.zeros(len(self.agents), dtype=bool)
        in_play[np.asarray(seated, dtype=np.intp).reshape(-1)] = True
        for i in np.flatnonzero(self.retired & ~in_play):
            self.agents[i] = None

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Members drawn by the module docstring's rule, ``rng.random(shape)`` being the ``u``."""
        u = rng.random(shape)
        members = np.searchsorted(self._cumulative, u * self._cumulative[-1], side="right")
        return np.minimum(members, self._last)  # u * total rounding up to the total: the last member with weight
