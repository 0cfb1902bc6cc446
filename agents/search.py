"""``search:PATH``: a learned value of the turn's end, and the exact expectimax over the agent's own dice.

The value ``V`` of a turn's afterstate (the sheets once the pick is made, before anyone rolls again) is a network of
:mod:`yacht_agents.search_value`: solo the points still to come, at a table the mover's chance to finish first. It
sees nothing of a solver, and it was trained on its own games (:mod:`yacht_lab.training.search`). Each decision is the
exact expectimax over the rest of the turn, from the rules alone (the dice's odds and the scoring of
:func:`yacht_env.rules.pick_outcome`): a pick is worth its points plus ``V`` of its afterstate (solo) or ``V`` of its
afterstate (at a table), and a keep the mean over the re-rolled dice of the best that follows
(:func:`yacht_env.turn_rows.turn_values`' passes). Everything the turn's decisions read depends only on the turn's
*context* (the sheets and totals, fixed for a whole turn), so :class:`TurnPlanner` computes it once per distinct
context of a batch of games: ``V`` once per distinct afterstate of the batch, never per roll, then the whole turn's
keeps. The agent keeps the last call's contexts, so a turn costs one plan, not three.

A ``search:PATH`` spec names the ``.npz``, a run folder (its ``model.npz``) or a shipped model (``search:standard``,
``models/search_standard.npz``).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from yacht_agents.base import Agent
from yacht_agents.search_value import (
    FEATURE_VERSIONS,
    FORMAT,
    POINTS_SCALE,
    ValueNetwork,
    ValueSpec,
    feature_size,
    features,
    layer_shapes,
    load_value,
    resolve_value,
    save_value,
)
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.turn_rows import FIRST_ROLL, KEEP_PROPER, KEPT_ROW, ROLL_ORDER, best_keeps, expected_keeps

_CHUNK = 1024  # contexts planned together: bounds the (contexts, 252, C) pick arrays to ~30 MB


# --------------------------------------------------------------------------------------------------
# The turn: what every decision of a context reads
# --------------------------------------------------------------------------------------------------
class Plan(NamedTuple):
    """A turn's values for ``n`` contexts.

    Fields:
        pick: ``(n, 252, C)``: a pick's value (``-inf`` where it is not legal), by roll and category.
        keep: ``(n, 2, 210)``: a keep's value with 1 or 2 re-rolls left, by kept multiset (``rules.KEPT``).
        start: ``(n,)``: the turn's value before its first roll (what the afterstate before it is worth).
    """

    pick: np.ndarray
    keep: np.ndarray
    start: np.ndarray


class TurnPlanner:
    """The turn's exact expectimax for batches of contexts, from a value of afterstates.

    Args:
        rules, players: The game and the table (1: solo).
        value: A :class:`ValueNetwork` (its ``values(own, opponents, exact) -> (m,)`` float64 is called once per
            :meth:`plan`).
        exact: Plan as the agent plays: ``V`` in float64 rounded to float32 (:meth:`ValueNetwork.__call__`) and the
            keeps' values rounded to float32, so that a decision does not depend on the thread count nor on the other
            contexts of the batch (the expectimax's sums differ in their last float64 bits with them); ties go to the
            first action (:func:`decide`). The trainer's games plan in float32 (faster), not exactly.
    """

    def __init__(self, rules: R.Rules, players: int, value, exact: bool = False) -> None:
        self.rules, self.players, self.value, self.exact = rules, players, value, exact
        c = rules.num_categories
        self._bits = (1 << np.arange(c)).astype(np.intp)
        tables = R.pick_tables(rules)
        # A pick's outcome and legality depend on the roll only through the category's score and, under the jokers
        # and the Yahtzee bonus, the face of a five of a kind (pick_outcome, legal_picks): a category's rolls fall in
        # classes of one (score, face), each valued once per context from one roll of its own.
        face = R.FIVE_OF_A_KIND_FACE if rules.joker != "none" or rules.yahtzee_bonus else 0 * R.FIVE_OF_A_KIND_FACE
        shape = (R.NUM_ROLLS, c)
        keys = np.stack(
            [np.broadcast_to(np.arange(c), shape), tables.score, np.broadcast_to(face[:, None], shape)], axis=-1
        ).reshape(-1, 3)
        classes, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        self._class_category = classes[:, 0].astype(np.intp)
        self._class_roll = (first // c).astype(np.intp)
        self._class_of = inverse.reshape(shape)
        uppers, armeds = rules.bonus_shape
        self._totals = R.max_total(rules) + 1 if players > 1 else 1
        self._sheet_keys = (1 << c) * uppers * armeds * self._totals  # the distinct sheets

    def _sheet_key(self, sheet: tuple) -> np.ndarray:
        """One integer per sheet ``(open_mask, upper, armed, total)`` (solo the total is left out)."""
        open_mask, upper, armed, total = sheet
        uppers, armeds = self.rules.bonus_shape
        key = (open_mask.astype(np.int64) * uppers + upper) * armeds + armed
        return key * self._totals + total if self._totals > 1 else key

    def plan(self, own: tuple, opponents: tuple | None = None) -> Plan:
        """The turn of each context: ``own`` ``(open_mask, upper, armed, total)`` ``(n,)`` each, at a table
        ``opponents`` ``(open_masks, uppers, armeds, totals)`` ``(n, P - 1)`` each (as :func:`features`).
        """
        n = len(own[0])
        parts = []
        for first in range(0, n, _CHUNK):
            at = slice(first, first + _CHUNK)
            them = None if opponents is None else tuple(np.asarray(x)[at] for x in opponents)
            parts.append(self._plan(tuple(np.asarray(x, dtype=np.intp)[at] for x in own), them))
        if len(parts) == 1:
            return parts[0]
        return Plan(*(np.concatenate(p) for p in zip(*parts, strict=True)))

    def _plan(self, own: tuple, opponents: tuple | None) -> Plan:
        pick = self._picks(own, opponents)
        # The turn, rows (252 rolls, n contexts): V0 the best pick, then keeps with 1 and 2 re-rolls left.
        now = pick.max(axis=2).T[ROLL_ORDER]
        keep1 = expected_keeps(now)
        (best,) = best_keeps([keep1.copy()])
        keep2 = expected_keeps(np.maximum(best, now))
        (best,) = best_keeps([keep2.copy()])
        start = FIRST_ROLL @ np.maximum(best, now)
        keep = np.stack([keep1.T, keep2.T], axis=1)[:, :, KEPT_ROW]  # (n, 2, 210) by KEPT index
        if self.exact:
            keep, start = (x.astype(np.float32).astype(np.float64) for x in (keep, start))
        return Plan(pick, keep, start)

    def _picks(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """The picks' values ``(n, 252, C)``: each legal class of each context scored once by
        :func:`yacht_env.rules.pick_outcome` from its roll, its afterstate valued by :meth:`afterstate_values`, and
        spread to the class's rolls; solo a pick is worth its points plus ``V``, at a table ``V`` alone.
        """
        open_mask, upper, armed, total = own
        category, roll = self._class_category, self._class_roll
        legal = (R.legal_picks(self.rules, roll[None, :], open_mask[:, None]) >> category & 1).astype(bool)
        g, j = np.nonzero(legal)
        points, _, up, arm = R.pick_outcome(self.rules, roll[j], category[j], open_mask[g], upper[g], armed[g])
        after = (open_mask[g] & ~self._bits[category[j]], up, arm, total[g] + points)
        theirs = None if opponents is None else tuple(x[g] for x in opponents)
        values = np.full(legal.shape, -np.inf)
        values[g, j] = self.afterstate_values(after, theirs) + (points if self.players == 1 else 0)
        return values[:, self._class_of]

    def afterstate_values(self, own: tuple, opponents: tuple | None) -> np.ndarray:
        """``V`` of afterstates (:func:`features`' arguments), each distinct one valued once; exact where nothing is
        left to play: solo, every box filled (0); at a table, every sheet filled (the result, ties split).
        """
        own = tuple(np.asarray(x, dtype=np.intp) for x in own)
        table = self.players > 1
        opponents = tuple(np.asarray(x, dtype=np.intp) for x in opponents) if table else ()
        done = own[0] == 0
        if table:
            done &= (opponents[0] == 0).all(axis=1)
        values = np.zeros(len(done))
        if table and done.any():
            values[done] = result(own[3][done], opponents[3][done])
        playing = np.flatnonzero(~done)
        if len(playing):
            # The distinct afterstates: each seat's sheet (solo without its total, which is not read) one integer.
            seats = [self._sheet_key(tuple(x[playing] for x in own))]
            seats += [self._sheet_key(tuple(x[playing, j] for x in opponents)) for j in range(self.players - 1)]
            first, inverse = _distinct(seats, self._sheet_keys)
            at = playing[first]
            mine = tuple(x[at] for x in own)
            theirs = tuple(x[at] for x in opponents) if table else None
            values[playing] = self.value.values(mine, theirs, self.exact)[inverse]
        return values


def _distinct(keys: list[np.ndarray], radix: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of integer columns ``keys`` (each in ``[0, radix)``): ``(first, inverse)``, the index of
    each distinct row's first occurrence and each row's distinct row, as :func:`numpy.unique` gives them.
    """
    per_word = max(1, int(63 // max(radix - 1, 1).bit_length()))
    words = []
    for start in range(0, len(keys), per_word):
        word = keys[start]
        for key in keys[start + 1 : start + per_word]:
            word = word * radix + key
        words.append(word)
    if len(words) == 1:
        _, first, inverse = np.unique(words[0], return_index=True, return_inverse=True)
        return first, inverse.reshape(-1)
    order = np.lexsort(words[::-1])
    new = np.ones(len(order), dtype=bool)
    new[1:] = np.any([w[order][1:] != w[order][:-1] for w in words], axis=0)
    inverse = np.empty(len(order), dtype=np.intp)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def result(total: np.ndarray, opponent_total: np.ndarray) -> np.ndarray:
    """The mover's share of the win at a finished table: 1 / (number of leaders) if it leads, else 0."""
    best = np.maximum(total, opponent_total.max(axis=1))
    leaders = (total == best) + (opponent_total == best[:, None]).sum(axis=1)
    return np.where(total == best, 1.0 / np.maximum(leaders, 1), 0.0)


def decide(plan: Plan, index: np.ndarray, roll: np.ndarray, rolls_left: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """``(N,)`` actions: the best of ``legal`` ``(N, num_actions)`` under each game's plan (row ``index``); a tie goes
    to the first best action (a keep before a pick: the turn's values are the same either way).
    """
    n, c = len(roll), plan.pick.shape[2]
    values = np.full((n, R.PICK_OFFSET + c), -np.inf)
    values[:, R.PICK_OFFSET :] = plan.pick[index, roll]
    re_roll = np.flatnonzero(rolls_left > 0)
    kept = KEEP_PROPER[roll[re_roll]]  # (m, 32) kept-multiset indices
    values[re_roll, : R.NUM_KEEPS] = plan.keep[index[re_roll, None], rolls_left[re_roll, None] - 1, kept]
    values = np.where(legal, values, -np.inf)
    return values.argmax(axis=1)


class SearchAgent(Agent):
    """Plays the exact expectimax of each turn over a learned value of its end (module docstring).

    Args:
        path: The network's ``.npz``, a run folder, or a shipped name (:func:`resolve_value`); or a
            :class:`ValueNetwork` itself.
        rules: The game; must be the network's.
        name: The agent's name (default ``search:PATH``).

    Attributes:
        table_players: ``None`` for a solo network (it plays its own game at any table), ``P`` for one trained at a
            table of ``P``: it acts on that table's view, at tables of ``P`` only.

    Raises:
        ValueError: an unreadable file, or a network of other rules.
    """

    def __init__(
        self, path: str | Path | ValueNetwork, rules: str | R.Rules = "standard", name: str | None = None
    ) -> None:
        super().__init__(name or f"search:{path}", rules)
        self.network = path if isinstance(path, ValueNetwork) else load_value(path)
        spec = self.network.spec
        if spec.rules != self.rules.name or R.PRESETS.get(spec.rules) != self.rules:
            where = "network" if isinstance(path, ValueNetwork) else repr(str(path))
            raise ValueError(f"the search model {where} plays the {spec.rules!r} rules, not {self.rules.name!r}")
        self.table_players = spec.players if spec.players > 1 else None
        self.view = MultiplayerEncoder(self.rules, spec.players) if spec.players > 1 else None
        self.planner = TurnPlanner(self.rules, spec.players, self.network, exact=True)
        self._cache: tuple[dict[bytes, int], Plan | None] = ({}, None)

    @classmethod
    def from_network(cls, network: ValueNetwork, rules: str | R.Rules, name: str) -> SearchAgent:
        """The agent of a network in memory (a trainer's current weights)."""
        return cls(network, rules, name)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        if self.view is None:
            state = self.encoder.decode(observations)
            roll, rolls_left, open_mask, upper, armed = (np.asarray(x, dtype=np.intp) for x in state)
            total = np.zeros_like(open_mask)
            context = np.stack([open_mask, upper, armed], axis=1)
        else:
            view = self.view.decode(observations)
            roll, rolls_left, open_mask, upper, armed, total = (np.asarray(x, dtype=np.intp) for x in view[:6])
            theirs = (view.opponent_open, view.opponent_upper, view.opponent_armed, view.opponent_total)
            context = np.concatenate([np.stack([open_mask, upper, armed, total], axis=1), *theirs], axis=1)
        plan, index = self._plans(np.ascontiguousarray(context, dtype=np.intp))
        return decide(plan, index, roll, rolls_left, action_masks)

    def _plans(self, context: np.ndarray) -> tuple[Plan, np.ndarray]:
        """The plan of each distinct context (the last call's kept: the same games' next decision finds them)."""
        unique, inverse = np.unique(context, axis=0, return_inverse=True)
        keys = unique.view(np.dtype((np.void, unique.shape[1] * unique.itemsize))).reshape(-1).tolist()
        old_index, old_plan = self._cache
        found = np.array([old_index.get(key, -1) for key in keys], dtype=np.intp)
        missing = np.flatnonzero(found < 0)
        if len(missing) == len(keys) or old_plan is None:
            plan = self._plan_rows(unique)
        else:
            fresh = self._plan_rows(unique[missing]) if len(missing) else None
            parts = []
            for old, new in zip(old_plan, fresh or (None,) * 3, strict=True):
                array = np.empty((len(keys), *old.shape[1:]))
                array[found >= 0] = old[found[found >= 0]]
                if new is not None:
                    array[missing] = new
                parts.append(array)
            plan = Plan(*parts)
        self._cache = (dict(zip(keys, range(len(keys)), strict=True)), plan)
        return plan, inverse.reshape(-1)

    def _plan_rows(self, rows: np.ndarray) -> Plan:
        own = (rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3] if self.view is not None else np.zeros(len(rows)))
        if self.view is None:
            return self.planner.plan(own)
        k = self.table_players - 1
        return self.planner.plan(own, tuple(rows[:, 4 + i * k : 4 + (i + 1) * k] for i in range(4)))


__all__ = [
    "FEATURE_VERSIONS",
    "FORMAT",
    "POINTS_SCALE",
    "Plan",
    "SearchAgent",
    "TurnPlanner",
    "ValueNetwork",
    "ValueSpec",
    "feature_size",
    "features",
    "layer_shapes",
    "load_value",
    "resolve_value",
    "save_value",
]
