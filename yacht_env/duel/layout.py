"""The states of a two-player game between turns, level by level, and the window of score differences each keeps.

Between two turns a two-player game of rules without bonuses is ``(mover, other, lead)``: the open mask of the
player about to move, the other player's open mask, and the mover's total minus the other's. Levels go by the
number of open boxes on both sheets, ``n = |mover| + |other|``: the first player moves at even levels
(``|mover| = |other| = n / 2``), the second at odd ones (``|mover| = |other| + 1``). A pick of box ``c`` for
``s`` points leads to ``(other, mover without c, -(lead + s))`` one level down.

A state keeps its values over a window of leads, every other lead being decided or never reached:

* decided: behind by more than the mover's open boxes can still make (``lead < -R(mover)``, a loss) or ahead
  by more than the other's can (``lead > R(other)``, a win), ``R`` the sum of the open boxes' top scores;
* never reached: a total is at most the sum of its filled boxes' top scores ``F``, so ``-F(other) <= lead <=
  F(mover)``.

Reachable leads lead to reachable leads, so a query outside a state's window from a reachable lead is decided:
0 below the window, 1 above it. Within a level, states are ordered by ``(rank of mover, rank of other)`` among
the masks of their popcounts, and each state's window is a slice of one flat array.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from yacht_env import rules as R


@dataclass(frozen=True)
class Level:
    """The states of one level: ``movers x others`` pairs of open masks, each with its window of leads.

    Attributes:
        n: The number of open boxes on both sheets.
        movers: The mover's open masks (popcount ``(n + 1) // 2``), ascending.
        others: The other player's open masks (popcount ``n // 2``), ascending.
        low: ``(states,)`` int64: the lowest lead of each state's window (state ``i * len(others) + j`` is
            ``(movers[i], others[j])``).
        length: ``(states,)`` int64: the number of leads in each window.
        offset: ``(states + 1,)`` int64: where each window starts in the level's flat array of values.
    """

    n: int
    movers: np.ndarray
    others: np.ndarray
    low: np.ndarray
    length: np.ndarray
    offset: np.ndarray

    @property
    def num_states(self) -> int:
        """The number of ``(mover, other)`` pairs."""
        return len(self.low)

    @property
    def num_values(self) -> int:
        """The number of values the level stores (the windows' total length)."""
        return int(self.offset[-1])


class Layout:
    """Every level of the two-player game of one rules, and where each state's values lie.

    Args:
        rules: Rules without bonuses (Yacht's presets, or any ``Rules(categories=...)`` of them).
    """

    def __init__(self, rules: R.Rules):
        self.rules = rules
        c = rules.num_categories
        self.num_levels = 2 * c + 1
        self.top = R.score_table(rules).max(axis=0).astype(np.int64)  # each box's best score
        bits = R.open_bits(c)
        self.open_top = bits.astype(np.int64) @ self.top  # R(mask): what the open boxes can still make
        self.filled_top = int(self.top.sum()) - self.open_top  # F(mask): what the filled boxes can hold
        popcount = bits.sum(axis=1)
        self.by_count = [np.flatnonzero(popcount == k) for k in range(c + 1)]
        self.rank = np.zeros(rules.num_open_masks, dtype=np.int64)
        for masks in self.by_count:
            self.rank[masks] = np.arange(len(masks))

    @functools.cache  # noqa: B019 (a layout lives as long as its solution; its levels are small)
    def level(self, n: int) -> Level:
        """The states of level ``n`` (``0 <= n <= 2 * num_categories``)."""
        if not 0 <= n < self.num_levels:
            raise ValueError(f"a level is an int in 0..{self.num_levels - 1}, got {n!r}")
        movers, others = self.by_count[(n + 1) // 2], self.by_count[n // 2]
        mover, other = movers[:, None], others[None, :]
        low = -np.minimum(self.open_top[mover], self.filled_top[other]).ravel()
        high = np.minimum(self.open_top[other], self.filled_top[mover]).ravel()
        length = high - low + 1
        offset = np.concatenate([[0], np.cumsum(length)])
        return Level(n, movers, others, low, length, offset)

    def state_index(self, n: int, mover, other) -> np.ndarray:
        """The index within level ``n`` of the states ``(mover, other)`` (arrays of open masks)."""
        level = self.level(n)
        return self.rank[mover] * len(level.others) + self.rank[other]

    def num_values(self) -> int:
        """The number of values of every level together."""
        return sum(self.level(n).num_values for n in range(self.num_levels))


def chunks(level: Level, width: int) -> list[tuple[int, int]]:
    """Runs ``[s0, s1)`` of consecutive states of one mover, each at most ``width`` values (or one state)."""
    per_mover = len(level.others)
    first = np.arange(level.num_states) // per_mover * per_mover
    key = first * (level.num_values + 1) + (level.offset[:-1] - level.offset[first]) // width
    starts = np.flatnonzero(np.diff(key, prepend=-1))
    return list(zip(starts.tolist(), [*starts[1:].tolist(), level.num_states], strict=True))
