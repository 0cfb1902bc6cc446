"""The interface every agent shares: ``act(observations, action_masks) -> actions``, batched or single."""

from __future__ import annotations

import numpy as np

from yacht_env import rules as R
from yacht_env.encoding import OBS_SIZE, ObservationEncoder


class Agent:
    """A policy for Yacht that acts on the env's flat observations and action masks.

    Subclasses implement :meth:`_act` on a batch; :meth:`act` checks the inputs and also accepts one
    observation. Agents never change the env; stateful ones (``random``) only advance their own generator.

    Attributes:
        name: The spec the agent was made from (``"random"``, ``"ppo:models/x.zip"``, ...).
        rules: The rules preset the agent plays (the solver and the score table depend on it).
    """

    def __init__(self, name: str, rules: str | R.Rules = "standard") -> None:
        self.name = name
        self.rules = R.get_rules(rules)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, rules={self.rules.name!r})"

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray | int:
        """Legal actions for a batch of states, or one action for one state.

        Args:
            observations: Flat observations, float32 ``(N, 64)``, or one of shape ``(64,)``.
            action_masks: Legal actions, bool ``(N, 44)``, or one of shape ``(44,)``; every state needs at
                least one legal action.

        Returns:
            ``(N,)`` int actions (``np.intp``), or an ``int`` for a single state.

        Raises:
            ValueError: shapes that do not match, or a state without any legal action.
        """
        obs = np.asarray(observations, dtype=np.float32)
        masks = np.asarray(action_masks).astype(bool, copy=False)
        single = obs.ndim == 1
        if single:
            obs, masks = obs[None], masks[None]
        if obs.ndim != 2 or obs.shape[1] != OBS_SIZE or masks.shape != (len(obs), R.NUM_ACTIONS):
            raise ValueError(
                f"expected observations (N, {OBS_SIZE}) and action_masks (N, {R.NUM_ACTIONS}) (or one of each), "
                f"got {np.shape(observations)} and {np.shape(action_masks)}"
            )
        if not masks.any(axis=1).all():
            raise ValueError("every state needs at least one legal action; got an all-False action mask")
        actions = np.asarray(self._act(obs, masks), dtype=np.intp)
        return int(actions[0]) if single else actions

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``(N,)`` legal actions for ``(N, 64)`` observations and ``(N, 44)`` bool masks."""
        raise NotImplementedError


def decode_states(observations: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rules core's ``(roll, rolls_left, open_mask)`` int arrays behind ``(N, 64)`` flat observations."""
    roll, rolls_left, open_mask = ObservationEncoder.decode(observations)
    return roll.astype(np.intp), rolls_left.astype(np.intp), open_mask.astype(np.intp)
