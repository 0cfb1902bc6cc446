"""``ppo.learn_last_turns``: the policy learns only from each player's last turns; every decision trains the critic.

Playing to win differs from playing for points mostly at the end of a game, when the margin is known and few turns are
left to make it up. Measured with the win agent (one step of policy improvement over the solver for the win;
``docs/playing-to-win.md``): played only on the decisions with at most ``K`` categories open, the solver's action
everywhere else, it wins against the solver 50.12% (K = 1), 50.75% (2), 51.18% (3), 51.31% (4), 51.47% (6) and 51.65%
(every turn), 20,000 deals each (80,000 games, common dice, seats rotated; the 95% CIs are +-0.06 to +-0.24 points;
``python benchmarks/win_agent.py --players 2 2 2 2 2 2 --deals 20000 20000 20000 20000 20000 20000 --last-turns 1 2 3 4
6 12``). Four fifths of the edge lie in the last four turns. A learner fine-tuned for the win reward gets one +-1 per
game; the policy-gradient terms of its other decisions, whose true advantages for the win are small beside their noise,
are mostly noise in each update. This option drops them: for a decision with more than ``N`` categories open (the
player's own game), the log-probability and the entropy that PPO's loss reads are detached (the same values, no
gradient), so neither the clipped objective nor the entropy bonus moves the policy there. The critic still learns from
every decision (its value is untouched), and a KL penalty toward the start (``ppo.kl_to_init``, :mod:`yacht_lab.anchor`)
still counts every decision, holding the early play where it was while the shared weights move.

The penalty can weigh the last turns less (``ppo.kl_to_init_last_turns``, :func:`kl_weights`). With a KL weight ``b``
toward the start and an entropy bonus ``t``, the policy a PPO update tends to at a decision is
``pi ~ pi_init ** (b / (b + t)) * exp(A / (b + t))`` (``A`` the actions' advantages), whose best action maximises
``b * log pi_init + A``: it leaves the start's best only where its advantage beats ``b`` times the log of the start's
odds against it. A converged start gives its second choices odds of 100 or 1,000 to one, so ``b = 0.1`` asks an
advantage of 0.5 to 0.7 (normalised advantages: about a standard deviation), and nothing moved in the fifth try. A
small weight on the last turns and the usual one on the others lets the end of the game change and holds the rest.

The rollouts can try the last turns' other moves (``ppo.explore_temperature``, :func:`explore`). A policy gradient
reaches a move only by sampling it: the start puts a median probability of 0.0007 on the win agent's move where it
differs from the solver's (``benchmarks/win_agreement.py``), so the sixth try's rollouts almost never played it, and
an entropy bonus's pull on a move is as small as the move's probability. Sampling the learned decisions at a
temperature ``T`` (the logits divided by ``T``) takes odds of 1,000 to one to 1,000 ** (1 / T): 32 to one at
``T = 2``. The rollout buffer keeps the policy's own log-probability of the move played, so PPO's ratio and clip
treat it as the policy's sample: the update follows the advantages of the moves tried, as epsilon-greedy does in value
methods, biased toward what the tempered rollouts try. Importance weights against the tempered policy would restore
the on-policy gradient in expectation, whose pull on a move is again its probability: nothing gained but a lower
variance. Measured (the seventh try, ``docs/playing-to-win.md``): at temperatures 2 and 3 the poor moves tried were
pushed down fastest, the policy sharpened and its exploration shrank, and nothing was learned.

It is a choice of where to learn, made from the measurement above, like any hyperparameter: nothing of the solver
enters the learner's observation, reward or loss. Like the anchor, it wraps the policy's ``evaluate_actions``,
which SB3's PPO calls once per minibatch.
"""

from __future__ import annotations

import torch

from yacht_env import rules as R
from yacht_env.encoding import flat_layout

__all__ = ["explore", "kl_weights", "learn_last_turns", "open_categories"]


def open_categories(obs: torch.Tensor, rules: str | R.Rules) -> torch.Tensor:
    """The number of categories still open in the player's own game, per row of flat observations (the own
    game's columns come first in every observation the trainer builds: solo, table and extras alike)."""
    columns = flat_layout(R.get_rules(rules))["open"]
    return obs[..., columns].sum(-1).round()


def learn_last_turns(model, turns: int, rules: str | R.Rules) -> None:
    """Gives ``model``'s policy its gradient and entropy bonus only from decisions with at most ``turns``
    categories open (see the module)."""
    policy = model.policy
    evaluate = policy.evaluate_actions
    rules = R.get_rules(rules)

    def evaluate_actions(obs, actions, action_masks=None):
        values, log_prob, entropy = evaluate(obs, actions, action_masks=action_masks)
        late = open_categories(obs, rules) <= turns
        model.logger.record("train/learned_share", late.float().mean().item())
        log_prob = torch.where(late, log_prob, log_prob.detach())
        if entropy is not None:
            entropy = torch.where(late, entropy, entropy.detach())
        return values, log_prob, entropy

    policy.evaluate_actions = evaluate_actions


def kl_weights(turns: int, early: float, late: float, rules: str | R.Rules):
    """Per-row weights for :func:`yacht_lab.anchor.anchor_to_init`: ``late`` on the decisions with at most ``turns``
    categories open, ``early`` on the others."""
    rules = R.get_rules(rules)

    def weights(obs: torch.Tensor) -> torch.Tensor:
        late_rows = open_categories(obs, rules) <= turns
        return torch.where(late_rows, torch.tensor(late, dtype=obs.dtype), torch.tensor(early, dtype=obs.dtype))

    return weights


def explore(model, turns: int, temperature: float, rules: str | R.Rules) -> None:
    """Samples ``model``'s rollout moves at ``temperature`` on the decisions with at most ``turns`` categories
    open (every decision at ``turns`` = 0, as ``ppo.learn_last_turns`` reads 0); the log-probability it returns is
    the policy's own for the move played (see the module). Deterministic calls (evaluation, ``predict``) are
    untouched: the tempered sample lives only in the policy's ``forward``, which SB3 calls to collect rollouts.
    Records ``rollout/explored_off_mode``: the share of those decisions played off the policy's most likely move."""
    policy = model.policy
    rules = R.get_rules(rules)
    turns = turns or rules.num_categories

    def forward(obs, deterministic=False, action_masks=None):
        features = policy.extract_features(obs)  # as MaskableActorCriticPolicy.forward, up to the sample
        if policy.share_features_extractor:
            latent_pi, latent_vf = policy.mlp_extractor(features)
        else:
            latent_pi = policy.mlp_extractor.forward_actor(features[0])
            latent_vf = policy.mlp_extractor.forward_critic(features[1])
        values = policy.value_net(latent_vf)
        distribution = policy._get_action_dist_from_latent(latent_pi)
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        actions = distribution.get_actions(deterministic=deterministic)
        if not deterministic:
            learned = open_categories(obs, rules) <= turns
            if learned.any():
                logits = distribution.distribution.logits  # masked: the illegal moves' are -1e8, still after / T
                tempered = torch.distributions.Categorical(logits=logits[learned] / temperature).sample()
                actions = actions.clone()
                actions[learned] = tempered
                off = (tempered != logits[learned].argmax(-1)).float().mean().item()
                model.logger.record_mean("rollout/explored_off_mode", off)
        log_prob = distribution.log_prob(actions)
        return actions.reshape((-1, *policy.action_space.shape)), values, log_prob

    policy.forward = forward
