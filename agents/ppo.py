"""``ppo:PATH``: a saved sb3-contrib ``MaskablePPO`` model, acting deterministically on the legal actions."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agents.base import Agent
from yacht_env import rules as R


class PPOAgent(Agent):
    """Loads ``MaskablePPO.load(path, device="cpu")`` and acts with ``predict(..., deterministic=True)``.

    The model must have been trained on the flat observation of the preset's sheet: a ``Box`` of shape
    ``(encoder.size,)`` and ``Discrete(rules.num_actions)`` actions (64 and 44 for Yacht, the same for both
    presets, so one model can be evaluated under either).

    Raises:
        ValueError: the file is missing, is not a loadable MaskablePPO model, or has other spaces.
    """

    def __init__(self, path: str | Path, rules: str | R.Rules = "standard", name: str | None = None) -> None:
        super().__init__(name or f"ppo:{path}", rules)
        self.path = Path(path)
        if not self.path.is_file():
            reason = "it is a directory" if self.path.is_dir() else "file not found"
            raise ValueError(f"cannot load PPO model '{path}': {reason}")
        from gymnasium import spaces

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
        obs_space, action_space = self.model.observation_space, self.model.action_space
        size, num_actions = self.encoder.size, self.rules.num_actions
        if not (isinstance(obs_space, spaces.Box) and obs_space.shape == (size,)) or not (
            isinstance(action_space, spaces.Discrete) and int(action_space.n) == num_actions
        ):
            raise ValueError(
                f"cannot use PPO model '{path}': it was trained on observation space {obs_space} and action "
                f"space {action_space}; this env has Box(0, 1, ({size},)) and Discrete({num_actions})"
            )

    @classmethod
    def from_model(cls, model, rules: str | R.Rules = "standard", name: str = "ppo") -> PPOAgent:
        """An agent over a live ``MaskablePPO`` model (e.g. evaluated during training), not a file."""
        agent = cls.__new__(cls)
        Agent.__init__(agent, name, rules)
        agent.path, agent.model = None, model
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
