"""The learner's network: a ``MaskablePPO`` model built from a config, and its PPO settings.

Both trainers build their learner here: PPO (:mod:`yacht_lab.training.sb3.ppo`) trains it with SB3, the distillation
(:mod:`yacht_lab.training.sb3.distill`) trains its policy by cross-entropy and saves it in the same format. The config's
``policy`` section picks the network (the odds policy, :class:`yacht_agents.policy.OddsPolicy`, or SB3's ``MlpPolicy``);
a run with ``init`` then takes a trained model's weights (:func:`start_model`,
:mod:`yacht_lab.training.sb3.warm_start`).
"""

from __future__ import annotations

from typing import Any

from yacht_lab.training.config import TrainConfig
from yacht_lab.training.sb3.warm_start import warm_start

__all__ = ["linear_schedule", "make_model", "ppo_kwargs", "start_model"]


def linear_schedule(start: float, end: float):
    """SB3 schedule: ``start`` at the beginning of training to ``end`` at the end, and ``end`` past it.

    SB3 collects whole rollouts, so the last one can end past ``total_timesteps`` and its update sees a negative
    ``progress_remaining``; clamped, that update's rate is ``end`` (never below it: with ``end = 0`` a negative
    rate would step up the loss), as the entropy bonus's schedule already is.
    """

    def schedule(progress_remaining: float) -> float:
        return end + (start - end) * min(max(progress_remaining, 0.0), 1.0)

    return schedule


def make_model(config: TrainConfig, env, tensorboard_dir: str | None):
    """A new ``MaskablePPO`` of the config on ``env``."""
    import torch
    from sb3_contrib import MaskablePPO

    activation = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh}[config.policy.activation]
    policy_kwargs = {
        "net_arch": {"pi": list(config.policy.net_arch), "vf": list(config.policy.net_arch)},
        "activation_fn": activation,
    }
    policy = "MlpPolicy"
    if config.policy.chase_inputs or config.policy.keep_head:
        from yacht_agents.policy import OddsPolicy

        policy = OddsPolicy
        policy_kwargs.update(
            rules=config.rules,
            chase_inputs=config.policy.chase_inputs,
            keep_head=config.policy.keep_head,
            bonus_odds=config.policy.bonus_odds,
        )
    return MaskablePPO(
        policy, env, policy_kwargs=policy_kwargs, device=config.device, **ppo_kwargs(config, tensorboard_dir)
    )


def ppo_kwargs(config: TrainConfig, tensorboard_dir: str | None) -> dict[str, Any]:
    """The config's ``MaskablePPO`` settings, but the policy's and the device."""
    p = config.ppo
    return {
        "learning_rate": linear_schedule(p.learning_rate, p.learning_rate_final),
        "n_steps": p.n_steps,
        "batch_size": p.batch_size,
        "n_epochs": p.n_epochs,
        "gamma": p.gamma,
        "gae_lambda": p.gae_lambda,
        "clip_range": p.clip_range,
        "ent_coef": p.ent_coef,
        "vf_coef": p.vf_coef,
        "max_grad_norm": p.max_grad_norm,
        "tensorboard_log": tensorboard_dir,
        "seed": config.seed,
        "verbose": 0,
    }


def start_model(config: TrainConfig, env, tensorboard_dir: str | None = None):
    """A new model of the config on ``env``, with the ``init`` model's weights if the config names one."""
    model = make_model(config, env, tensorboard_dir)
    if config.init is not None:
        warm_start(model, config)
    return model
