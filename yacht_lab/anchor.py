"""``ppo.kl_to_init``: a penalty on how far the policy moves from the one the run started from (``init``).

Fine-tuning a converged policy under a noisy reward (the win reward at a table: one +-1 per game of some 36
decisions) lets PPO's small updates walk the policy away from its start in whatever direction the noise points,
and the start's play gets worse before the signal adds up (``docs/playing-to-win.md`` has the measurements).
The penalty ``kl_to_init * KL(pi || pi_init)``, the mean over each minibatch's observations of the KL divergence
between the policy's masked action distribution and the start's, pulls back what the noise moves and lets a
consistent gradient through: the KL term of RLHF's PPO, toward the model the run started from. The reference is
that model rebuilt from its file (:func:`yacht_lab.warm_start.warm_start` on a fresh network), so a resumed run
keeps the same one. It is a trained agent's policy: nothing of the solver enters.

SB3's PPO computes its loss inside ``train``, which calls the policy's ``evaluate_actions`` once per minibatch.
:func:`anchor_to_init` wraps that method: the values it returns carry the penalty through an identity whose
backward adds the penalty's gradient to the actor's (:class:`_CarryLoss`), so the update is the gradient of PPO's
loss plus the penalty, and nothing else of SB3 changes. The wrapper runs the actor a second time on the
minibatch for its distribution (``evaluate_actions`` returns only the taken actions' log-probabilities): a small
cost beside the update, paid only when the option is on. ``train/kl_to_init`` logs the penalty's KL.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["anchor_to_init", "masked_kl"]


class _CarryLoss(torch.autograd.Function):
    """``carrier`` unchanged forward; backward, ``carrier``'s gradient as it is and 1 for ``loss``: the gradient
    of whatever ``carrier`` enters, plus ``loss``'s own."""

    @staticmethod
    def forward(ctx, carrier: torch.Tensor, loss: torch.Tensor) -> torch.Tensor:
        return carrier.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, torch.ones((), dtype=grad.dtype, device=grad.device)


def masked_kl(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """``KL(p || q)`` per row of log-probabilities over the same legal actions (masked actions have p = 0 and
    add nothing, whatever their log-probabilities)."""
    p = log_p.exp()
    return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)


def anchor_to_init(model, reference_policy, coef: float | Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Adds ``coef * KL(pi || reference)`` to the loss of every PPO update of ``model`` (see the module).

    ``coef`` is a number, or a function of a minibatch's observations giving each row's weight (the penalty is then
    the mean of the weighted rows: :func:`yacht_lab.focus.kl_weights`)."""
    policy = model.policy
    evaluate = policy.evaluate_actions
    reference_policy.set_training_mode(False)
    reference_policy.requires_grad_(False)

    def evaluate_actions(obs, actions, action_masks=None):
        values, log_prob, entropy = evaluate(obs, actions, action_masks=action_masks)
        log_p = policy.get_distribution(obs, action_masks=action_masks).distribution.logits
        with torch.no_grad():
            log_q = reference_policy.get_distribution(obs, action_masks=action_masks).distribution.logits
        per_row = masked_kl(log_p, log_q)
        model.logger.record("train/kl_to_init", per_row.mean().item())
        penalty = (coef(obs) * per_row).mean() if callable(coef) else coef * per_row.mean()
        return _CarryLoss.apply(values, penalty), log_prob, entropy

    policy.evaluate_actions = evaluate_actions
