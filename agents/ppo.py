"""``ppo:PATH``: a saved sb3-contrib ``MaskablePPO`` model, acting deterministically on the legal actions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R


class PPOAgent(Agent):
    """Loads ``MaskablePPO.load(path, device="cpu")`` and acts with ``predict(..., deterministic=True)``.

    The model must have been trained on a flat observation of the preset's sheet with
    ``Discrete(rules.num_actions)`` actions: the solo one (``Box`` of ``encoder.size``, 64 for Yacht, the same
    for every preset of 12 categories) or a table's view from ``YachtVersus-v0`` (a ``P``-player
    :class:`~yacht_env.encoding.MultiplayerEncoder`'s size; the agent's ``table_players`` is then ``P``). A model
    of :class:`yacht_agents.policy.OddsPolicy` (the default recipe) also names its preset, and must be played on it.

    Raises:
        ValueError: the file is missing, is not a loadable MaskablePPO model, or has other spaces.
    """

    def __init__(self, path: str | Path, rules: str | R.Rules = "standard", name: str | None = None) -> None:
        super().__init__(name or f"ppo:{path}", rules)
        self.path = Path(path)
        if not self.path.is_file():
            reason = "it is a directory" if self.path.is_dir() else "file not found"
            raise ValueError(f"cannot load PPO model '{path}': {reason}")
        try:
            from sb3_contrib import MaskablePPO  # imported here: only this agent needs torch
        except ImportError:
            extra = "pip install 'yacht-rl[train]'"
            raise ValueError(f"cannot load PPO model '{path}': the ppo agent needs the train extra ({extra})") from None

        try:
            self.model = MaskablePPO.load(self.path, device="cpu")
        except Exception as error:  # a corrupt or foreign file fails in many ways (zip, pickle, torch)
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"cannot load PPO model '{path}': not a MaskablePPO model ({detail})") from None
        self._read_spaces(f"PPO model '{path}'")

    def _read_spaces(self, what: str) -> None:
        """Sets ``table_players`` from the model's observation size; raises ``ValueError`` for other spaces."""
        from gymnasium import spaces

        from yacht_env.encoding import MultiplayerEncoder

        obs_space, action_space = self.model.observation_space, self.model.action_space
        sizes = {self.encoder.size: None}
        sizes.update({MultiplayerEncoder(self.rules, p).size: p for p in range(2, 11)})
        num_actions = self.rules.num_actions
        shape = obs_space.shape if isinstance(obs_space, spaces.Box) else None
        if (
            shape is None
            or len(shape) != 1
            or shape[0] not in sizes
            or not (isinstance(action_space, spaces.Discrete) and int(action_space.n) == num_actions)
        ):
            raise ValueError(
                f"cannot use {what}: it was trained on observation space {obs_space} and action space "
                f"{action_space}; Yacht-v0 has Box(0, 1, ({self.encoder.size},)) and Discrete({num_actions}), "
                f"YachtVersus-v0 a table's view of {sorted(s for s in sizes if s != self.encoder.size)} values"
            )
        self.table_players = sizes[shape[0]]
        trained = getattr(self.model.policy, "rules", None)  # an OddsPolicy knows its preset (its odds tables)
        if trained is not None and trained != self.rules:
            raise ValueError(f"cannot use {what} for the {self.rules.name!r} rules: it was trained on {trained.name!r}")

    @classmethod
    def from_model(cls, model, rules: str | R.Rules = "standard", name: str = "ppo") -> PPOAgent:
        """An agent over a live ``MaskablePPO`` model (e.g. evaluated during training), not a file."""
        agent = cls.__new__(cls)
        Agent.__init__(agent, name, rules)
        agent.path, agent.model = None, model
        agent._read_spaces("the model")
        return agent

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        import torch

        # A small MLP runs fastest on one thread; more only contend for the cores (10x slower on a busy
        # two-core machine). The process's setting is restored after.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            actions, _ = self.model.predict(observations, action_masks=action_masks, deterministic=True)
        finally:
            torch.set_num_threads(threads)
        return np.asarray(actions).reshape(len(observations))
