"""The interface every agent shares: ``act(observations, action_masks) -> actions``, batched or single."""

from __future__ import annotations

import functools

import numpy as np

from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder


class Agent:
    """A policy for Yacht that acts on the env's flat observations and action masks.

    Subclasses implement :meth:`_act` on a batch; :meth:`act` checks the inputs and also accepts one
    observation. Agents never change the env; stateful ones (``random``) only advance their own generator.

    Attributes:
        name: The spec the agent was made from (``"random"``, ``"ppo:models/x.zip"``, ...).
        rules: The rules preset the agent plays (the solver and the score table depend on it).
        encoder: The env's observation encoder for ``rules``; agents that act on the game's state read it
            with ``self.encoder.decode(observations)`` (the encoder's documented inverse).
        table_players: ``None`` for an agent that acts on its own game as ``Yacht-v0`` shows it (every agent
            but a PPO model trained at a table); ``P`` for one that acts on the view of a ``P``-player table
            (:class:`yacht_env.encoding.MultiplayerEncoder`, from its own seat). Envs and evaluations that
            seat agents give each the observation it asks for.
    """

    table_players: int | None = None

    def __init__(self, name: str, rules: str | R.Rules = "standard") -> None:
        self.name = name
        self.rules = R.get_rules(rules)
        self.encoder = ObservationEncoder(self.rules)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, rules={self.rules.name!r})"

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray | int:
        """Legal actions for a batch of states, or one action for one state.

        Args:
            observations: Flat observations, float32 ``(N, size)``, or one of shape ``(size,)``
                (``size = self.encoder.size``, 64 for Yacht).
            action_masks: Legal actions, bool ``(N, num_actions)``, or one of shape ``(num_actions,)``
                (``rules.num_actions``, 44 for Yacht); every state needs at least one legal action.

        Returns:
            ``(N,)`` int actions (``np.intp``), or an ``int`` for a single state; an empty batch (``N = 0``) gives an
            empty array, whatever the agent.

        Raises:
            ValueError: shapes that do not match, a value outside ``[0, 1]`` (NaN included: every observation of
                the envs lies there), or a state without any legal action.
        """
        obs = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(action_masks).astype(bool, copy=False)
        single = obs.ndim == 1
        if single:
            obs, masks = obs[None], masks[None]
        size, num_actions = self.observation_size, self.rules.num_actions
        if obs.ndim != 2 or obs.shape[1] != size or masks.shape != (len(obs), num_actions):
            raise ValueError(
                f"expected observations (N, {size}) and action_masks (N, {num_actions}) (or one of each), "
                f"got {np.shape(observations)} and {np.shape(action_masks)}"
            )
        inside = (obs >= 0) & (obs <= 1)  # False for NaN
        if not inside.all():
            row, column = (int(i) for i in np.argwhere(~inside)[0])
            raise ValueError(
                f"observations must hold values in [0, 1], as the envs' do; row {row} holds {obs[row, column]} at "
                f"index {column}"
            )
        if not masks.any(axis=1).all():
            raise ValueError("every state needs at least one legal action; got an all-False action mask")
        if len(obs) == 0:  # a batch of no states (no game on turn) is a batch: no actions, as numpy would answer
            return np.empty(0, dtype=np.intp)
        actions = np.asarray(self._act(obs, masks), dtype=np.intp)
        return int(actions[0]) if single else actions

    @property
    def observation_size(self) -> int:
        """The length of the observations the agent acts on (solo, or its table's view)."""
        if self.table_players is None:
            return self.encoder.size
        return _table_view_size(self.rules, self.table_players)

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``(N,)`` legal actions for ``(N, size)`` observations and ``(N, num_actions)`` bool masks."""
        raise NotImplementedError


def check_agents(agents, rules: R.Rules, players: int | None = None, distinct_names: bool = True) -> None:
    """The checks every place that seats agents makes: distinct names (where results are keyed by name), the
    same rules and, at a table of ``players``, each agent acting on its own game or on that table's view.

    Raises:
        ValueError: naming the first agent that does not fit.
    """
    names = [agent.name for agent in agents]
    if distinct_names and len(set(names)) != len(names):
        raise ValueError(f"agent names must be distinct, got {names}")
    for agent in agents:
        if agent.rules != rules:
            raise ValueError(f"agent {agent.name!r} plays the {agent.rules.name!r} rules, not {rules.name!r}")
        table = getattr(agent, "table_players", None)
        if players is not None and table not in (None, players):
            raise ValueError(f"agent {agent.name!r} acts at a table of {table} players, not {players}")


@functools.cache
def _table_view_size(rules: R.Rules, players: int) -> int:
    """The size of a ``players`` table's view (an encoder's tables take milliseconds to build: once per size)."""
    from yacht_env.encoding import MultiplayerEncoder

    return MultiplayerEncoder(rules, players).size


def outdated_table_view(rules: R.Rules, size: int) -> str:
    """Why a model of ``size`` inputs fits no table view of ``rules``, where that is the reason: the view of a family
    preset (an upper or a Yahtzee bonus) before it showed each opponent's bonus progress. ``""`` otherwise.
    """
    solo, n = ObservationEncoder(rules).size, rules.num_categories
    if _table_view_size(rules, 2) == solo + n + 3:  # no opponent bonus parts: the view is as it always was
        return ""
    current = {_table_view_size(rules, p) for p in range(2, 11)}
    old = {solo + (p - 1) * (n + 1) + 2: p for p in range(2, 11)}
    if size not in old or size in current:
        return ""
    return (
        f"; {size} values is the {old[size]}-player table view of the {rules.name!r} rules before it showed each "
        "opponent's bonus progress (upper and armed): train it again on the current view"
    )
