"""``search:PATH``: a learned value of the turn's end, and the exact expectimax over the agent's own dice.

The value ``V`` of a turn's afterstate (the sheets once the pick is made, before anyone rolls again) is a network of
:mod:`yacht_agents.search_value`: solo the points still to come, at a table the mover's chance to finish first. It
sees nothing of a solver, and it was trained on its own games (:mod:`yacht_lab.training.search`). Each decision is the
exact expectimax over the rest of the turn, from the rules alone (:mod:`yacht_agents.search_turn`: a pick is worth
its points plus ``V`` of its afterstate solo, ``V`` of its afterstate at a table; a keep the mean over the re-rolled
dice of the best that follows), planned once per distinct context (the sheets and totals, fixed for a whole turn).
The agent keeps the last call's contexts, so a turn costs one plan, not three.

A ``search:PATH`` spec names the ``.npz``, a run folder (its ``model.npz``) or a shipped model (``search:standard``,
``models/search_standard.npz``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from yacht_agents.base import Agent
from yacht_agents.search_turn import Plan, TurnPlanner, decide, result, solo_policy_table
from yacht_agents.search_value import (
    FEATURE_VERSIONS,
    FORMAT,
    POINTS_SCALE,
    RACE_CLIP,
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
    "RACE_CLIP",
    "Plan",
    "SearchAgent",
    "TurnPlanner",
    "ValueNetwork",
    "ValueSpec",
    "decide",
    "feature_size",
    "features",
    "layer_shapes",
    "load_value",
    "resolve_value",
    "result",
    "save_value",
    "solo_policy_table",
]
