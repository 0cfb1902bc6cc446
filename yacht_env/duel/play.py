"""A finished two-player solution and its queries: the chance to win of a state and of each action, batched.

The queries recompute the mover's turn for just the positions asked about, from the stored level below (the
solo solver's way with its within-turn values), through the same kernels as the build
(:mod:`yacht_env.duel.turn`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.duel.layout import Layout
from yacht_env.duel.levels import KINDS
from yacht_env.duel.turn import QUANT, after_picks, best_of_rows, pick_rows
from yacht_env.turn_rows import KEEP_ROW, turn_values


def _ints(name: str, value, low: int, high: int, what: str) -> np.ndarray:
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer) or array.dtype == bool:
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got dtype {array.dtype}")
    if array.size and (array.min() < low or array.max() > high):
        bad = array[(array < low) | (array > high)].ravel()[0]
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {bad}")
    return array.astype(np.int64)


class DuelSolution:
    """The exact solution of a two-player game: the equilibrium or the best response to a fixed solo policy.

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules`.
        kind: ``"equilibrium"``, ``"best_response"`` or ``"evaluation"`` (the equilibrium's play against a fixed
            policy, :func:`yacht_env.duel.evaluate`).
        first_player_value: The solution's player's chance to win (ties half) moving first: ``V*`` for the
            equilibrium, the best response's (or the evaluated equilibrium's) win rate in the first seat against
            its opponent.
        seat_values: ``(first seat, second seat)``: the solution's player's chance to win in each seat (against
            the equilibrium: ``(V*, 1 - V*)``; against the fixed policy: the best response's exact win rates).
        folder: Where its files lie.

    States are ``(mover, other, lead)``: the open masks of the solution's player (about to move) and of its
    opponent, and the player's total minus the opponent's; ``|mover|`` is ``|other|`` (the first seat) or
    ``|other| + 1`` (the second).
    """

    def __init__(self, layout: Layout, kind: str, tables: dict, values: dict, folder: Path):
        self.layout = layout
        self.rules = layout.rules
        self.kind = kind
        self._tables = tables
        self.folder = folder
        own, other = KINDS[kind][0], KINDS[kind][-1]  # the solution's player; its opponent (the same table: E)
        self._own, self._next = own.table, own.below
        self.first_player_value = float(values[own.table])
        self.seat_values = (self.first_player_value, 1.0 - float(values[other.table]))

    def __repr__(self) -> str:
        value = self.first_player_value
        return f"DuelSolution(rules={self.rules.name!r}, kind={self.kind!r}, first_player_value={value:.6f})"

    def levels(self, table: str) -> list[np.ndarray]:
        """The stored values of ``table`` (``"E"``; ``"A"``, ``"B"``; ``"P"``, ``"Q"``), level by level (flat)."""
        return self._tables[table]

    @property
    def mean_value(self) -> float:
        """The solution's player's chance to win averaged over the two seats."""
        return (self.seat_values[0] + self.seat_values[1]) / 2

    def _states(self, mover, other, lead) -> tuple[np.ndarray, ...]:
        rules = self.rules
        top = rules.all_open
        mover = _ints("mover", mover, 1, top, f"the mover's open mask, {rules.num_categories} bits, not 0")
        other = _ints("other", other, 0, top, f"the other player's open mask, {rules.num_categories} bits")
        lead = _ints("lead", lead, -(10**6), 10**6, "the mover's total minus the other's")
        try:
            mover, other, lead = np.broadcast_arrays(mover, other, lead)
        except ValueError:
            raise ValueError(
                f"mover, other and lead must broadcast, got {mover.shape}, {other.shape}, {lead.shape}"
            ) from None
        bits = R.open_bits(rules.num_categories).sum(axis=1)
        gap = bits[mover] - bits[other]
        if ((gap != 0) & (gap != 1)).any():
            i = np.flatnonzero(((gap != 0) & (gap != 1)).ravel())[0]
            raise ValueError(
                f"the mover has as many open boxes as the other player (first seat) or one more (second seat), got "
                f"mover={int(mover.ravel()[i])}, other={int(other.ravel()[i])}"
            )
        layout = self.layout
        low, high = -layout.filled_top[other], layout.filled_top[mover]
        if ((lead < low) | (lead > high)).any():
            i = np.flatnonzero(((lead < low) | (lead > high)).ravel())[0]
            raise ValueError(
                f"no game reaches lead {int(lead.ravel()[i])} with mover={int(mover.ravel()[i])} and "
                f"other={int(other.ravel()[i])}: the filled boxes hold {int(low.ravel()[i])}..{int(high.ravel()[i])}"
            )
        return mover, other, lead, bits[mover] + bits[other]

    def _read(self, table: str, n: np.ndarray, mover: np.ndarray, other: np.ndarray, lead: np.ndarray) -> np.ndarray:
        """Turn-start values of a table at states of any levels (flat arrays), decided leads included."""
        out = np.empty(len(n), dtype=np.float64)
        for level_n in np.unique(n):
            at = np.flatnonzero(n == level_n)
            level = self.layout.level(int(level_n))
            state = self.layout.state_index(int(level_n), mover[at], other[at])
            position = lead[at] - level.low[state]
            length = level.length[state]
            stored = self._tables[table][int(level_n)][level.offset[state] + np.clip(position, 0, length - 1)]
            value = stored / QUANT if stored.dtype == np.uint16 else stored.astype(np.float64)
            out[at] = np.where(position < 0, 0.0, np.where(position >= length, 1.0, value))
        return out

    def value(self, mover, other, lead) -> np.ndarray | float:
        """The solution's player's chance to win (ties half) at the start of its turn in ``(mover, other, lead)``."""
        mover, other, lead, n = self._states(mover, other, lead)
        shape = mover.shape
        out = self._read(self._own, n.ravel(), mover.ravel(), other.ravel(), lead.ravel()).reshape(shape)
        return float(out) if out.ndim == 0 else out

    def q_values(self, mover, other, lead, roll, rolls_left) -> np.ndarray:
        """The chance to win after each action, ``(..., num_actions)`` float64, ``-inf`` for illegal actions.

        Args:
            mover: The open mask of the solution's player, to move (ints or broadcastable int arrays, as all).
            other: The opponent's open mask.
            lead: The player's total minus the opponent's.
            roll: The sorted-roll index showing (0..251, :func:`yacht_env.rules.roll_index`).
            rolls_left: Re-rolls left this turn (0..2).

        Returns:
            Per action (keep-masks 0..31 with canonical keeps only, then ``32 + k`` picks box ``k``) the solution's
            player's chance to win if it takes the action and plays on as the solution does.
        """
        if self.kind == "evaluation":
            raise ValueError("an evaluation values the equilibrium's play; its actions are the equilibrium's q_values")
        mover, other, lead, n = self._states(mover, other, lead)
        roll = _ints("roll", roll, 0, R.NUM_ROLLS - 1, "a sorted-roll index")
        rolls_left = _ints("rolls_left", rolls_left, 0, R.MAX_ROLLS_LEFT, "re-rolls left this turn")
        mover, other, lead, n, roll, rolls_left = np.broadcast_arrays(mover, other, lead, n, roll, rolls_left)
        shape = mover.shape
        mover, other, lead, n, roll, rolls_left = (x.ravel() for x in (mover, other, lead, n, roll, rolls_left))
        rules = self.rules
        rows = pick_rows(rules)
        out = np.empty((len(mover), rules.num_actions))
        for level_n in np.unique(n):
            at = np.flatnonzero(n == level_n)
            picks = after_picks(
                self.layout, int(level_n), self._tables[self._next][int(level_n) - 1], mover[at], other[at], lead[at]
            )
            column = np.arange(len(at))
            out[at, R.PICK_OFFSET :] = picks[rows.of_sorted_roll[roll[at]], column[:, None]]
            (pick_value,) = best_of_rows((picks,), rows.of_roll)
            for t in range(1, R.MAX_ROLLS_LEFT + 1):
                here = np.flatnonzero(rolls_left[at] == t)
                if len(here):
                    keeps = turn_values((pick_value[:, here],), t)
                    out[at[here], : R.NUM_KEEPS] = keeps[KEEP_ROW[roll[at[here]]], np.arange(len(here))[:, None]]
        legal = R.legal_action_mask(roll, rolls_left, mover, True, rules.num_categories)
        out = np.where(legal, out, -np.inf)
        return out.reshape(*shape, rules.num_actions)

    def best_action(self, mover, other, lead, roll, rolls_left) -> np.ndarray | int:
        """The solution's action (ties to the smallest action index) in each position."""
        best = self.q_values(mover, other, lead, roll, rolls_left).argmax(axis=-1)
        return int(best) if best.ndim == 0 else best
