"""``OddsPolicy``: MaskablePPO's actor-critic with the dice odds of the turn as fixed inputs.

A player looking at the dice sees at once what each open category is worth if the rest of the turn is
played for it ("three fives and two rolls left: about 19 in Fives"), and how each keep changes that. This
policy hands the networks those numbers, computed from the rules alone (:func:`yacht_env.encoding.chase_values`
and :func:`~yacht_env.encoding.keep_chase_values`: one category and one turn at a time, no later turn, nothing
from the solver), and learns everything else:

* ``chase_inputs``: the policy and value MLPs see the flat observation plus the chase value of each open
  category (0 for filled ones), ``/ 50``.
* ``keep_head``: the logit of each keep adds ``w(s) . F(s, keep)``, where ``F`` holds, per open category,
  its chase value after that keep and the re-roll, and ``w(s)`` (one weight per category) is a linear layer
  on the policy MLP's last hidden layer. The network then learns *which categories to play for*; the dice
  odds say which keep serves them. Picks keep the plain linear logits.

Both are read off the env's flat observation inside the network (the state is decoded from the observation's
face counts, rolls-left and open bits, the layout of :func:`yacht_env.encoding.flat_layout`), so a model of this
policy takes ``Yacht-v0``'s observation unchanged (or a ``YachtVersus-v0`` table view, whose first values are
the player's own flat observation) and ``PPOAgent`` plays it like any other. The tables are rebuilt from
``rules`` when a model loads: they are not learned and not stored.

Every preset trains with it, the family's too: their observation (Yahtzee's 69 values, Yatzy's 72) has the same
parts in the same places, with the upper subtotal and the Yahtzee box appended at its end, which the MLPs see as
they are. The points chase knows nothing of bonuses or jokers (one category and one turn, each box scored as the
score table has it). On rules with bonuses, ``bonus_odds`` adds what the sheet's coupling needs from the dice:

* a second channel of odds, each open upper box's chance of par this turn (three of its face: 63, the bonus
  threshold, is par in every box), in the inputs and in the keep head with its own learned weights. How much
  par matters (how far the subtotal is from the threshold, which upper boxes are left) the network reads from
  the observation's ``upper`` and ``open`` parts;
* the five-of-a-kind box's chase stays on while the box is armed, so that the keep head can play for the
  Yahtzee bonus after the box is filled.

Nothing of the solver enters either way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from yacht_env import rules as R
from yacht_env.encoding import (
    KEEP_FEATURE_SCALE,
    chase_values,
    flat_layout,
    keep_chase_values,
    keep_par_chase_values,
    par_chase_values,
)


class OddsFeatures(nn.Module):
    """Decodes flat observations into the odds tables' rows: ``(chase (B, C * channels), after-keep chase
    (B, 32, C * channels))``, zero for filled categories.

    The first channel is the points chase, scaled by the preset's largest category score (50). With
    ``bonus_odds`` on rules with bonuses: a second channel, each open upper box's chance of par this turn
    (:func:`yacht_env.encoding.par_chase_values`), where there is an upper bonus; and the five-of-a-kind box's
    points chase stays on while the box is armed (filled with its points, so that another five of a kind earns
    the Yahtzee bonus), where there is a Yahtzee bonus.
    """

    def __init__(self, rules: R.Rules, bonus_odds: bool = False) -> None:
        super().__init__()
        layout = flat_layout(rules)  # the family's bonus parts come after the parts read here
        self.counts, self.rolls_left, self.open = layout["counts"], layout["rolls_left"], layout["open"]
        scale = float(max(R.score_table(rules).max(), 1))
        # A roll is identified by its face counts in base 6 (as the rules core does): code -> roll index.
        code_to_roll = np.zeros(R.NUM_FACES**R.NUM_FACES, dtype=np.int64)
        weights = R.NUM_FACES ** np.arange(R.NUM_FACES)
        code_to_roll[R.ROLL_COUNTS.astype(np.int64) @ weights] = np.arange(R.NUM_ROLLS)
        self.register_buffer("code_to_roll", th.from_numpy(code_to_roll), persistent=False)
        self.register_buffer("face_weights", th.from_numpy(weights.astype(np.float32)), persistent=False)
        chase = [chase_values(rules) / scale]  # (3, 252, C) per channel
        keep = [keep_chase_values(rules) / scale]  # (3, 252, 32, C) per channel
        par = bonus_odds and bool(rules.upper_bonus)
        if par:
            chase.append(par_chase_values(rules))
            keep.append(keep_par_chase_values(rules))
        self.channels = len(chase)
        chase, keep = np.concatenate(chase, axis=-1), np.concatenate(keep, axis=-1)
        self.register_buffer("chase", th.from_numpy(chase.astype(np.float32)), persistent=False)
        self.register_buffer("keep", th.from_numpy(keep.astype(np.float32)), persistent=False)
        # The armed flag keeps the five-of-a-kind box's points chase on after the box is filled.
        five = rules.five_of_a_kind_category if bonus_odds and rules.yahtzee_bonus else None
        self.armed_at = layout["armed"].start if five is not None else None
        armed_bit = np.zeros(rules.num_categories * self.channels, dtype=np.float32)
        if five is not None:
            armed_bit[five] = 1.0
        self.register_buffer("armed_bit", th.from_numpy(armed_bit), persistent=False)

    @property
    def size(self) -> int:
        """Values per state in the chase output (and per keep in the after-keep output)."""
        return self.chase.shape[-1]

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The chase values and the keep head's odds of a batch of flat observations."""
        counts = th.round(obs[:, self.counts] * R.NUM_DICE)
        roll = self.code_to_roll[(counts @ self.face_weights).long()]
        rolls_left = obs[:, self.rolls_left].argmax(dim=1)
        gate = obs[:, self.open].repeat(1, self.channels)
        if self.armed_at is not None:
            gate = th.maximum(gate, obs[:, self.armed_at, None] * self.armed_bit)
        chase = self.chase[rolls_left, roll] * gate
        keep = self.keep[rolls_left, roll] * gate[:, None, :]
        return chase, keep


def _mlp(n_in: int, arch: list[int], activation: type[nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for width in arch:
        layers += [nn.Linear(n_in, width), activation()]
        n_in = width
    return nn.Sequential(*layers)


class OddsExtractor(nn.Module):
    """SB3's ``mlp_extractor`` for :class:`OddsPolicy`: separate policy and value MLPs on the observation plus
    the chase values (if ``chase_inputs``). With ``keep_head`` the actor's latent carries the after-keep values
    behind its last hidden layer, for :meth:`OddsPolicy._get_action_dist_from_latent` to split off.
    """

    def __init__(
        self,
        features_dim: int,
        net_arch: dict[str, list[int]],
        activation: type[nn.Module],
        rules: R.Rules,
        chase_inputs: bool,
        keep_head: bool,
        bonus_odds: bool = False,
    ) -> None:
        super().__init__()
        self.odds = OddsFeatures(rules, bonus_odds)
        self.chase_inputs, self.keep_head = chase_inputs, keep_head
        n_in = features_dim + (self.odds.size if chase_inputs else 0)
        self.policy_net = _mlp(n_in, net_arch["pi"], activation)
        self.value_net = _mlp(n_in, net_arch["vf"], activation)
        self.latent_dim_pi = net_arch["pi"][-1] if net_arch["pi"] else n_in
        self.latent_dim_vf = net_arch["vf"][-1] if net_arch["vf"] else n_in

    def _inputs(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        chase, keep = self.odds(obs)
        return (th.cat([obs, chase], dim=1) if self.chase_inputs else obs), keep

    def forward(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The actor's and the critic's latent features of a batch of features."""
        inputs, keep = self._inputs(obs)
        return self._actor(inputs, keep), self.value_net(inputs)

    def forward_actor(self, obs: th.Tensor) -> th.Tensor:
        """The actor's latent features."""
        return self._actor(*self._inputs(obs))

    def forward_critic(self, obs: th.Tensor) -> th.Tensor:
        """The critic's latent features."""
        return self.value_net(self._inputs(obs)[0])

    def _actor(self, inputs: th.Tensor, keep: th.Tensor) -> th.Tensor:
        hidden = self.policy_net(inputs)
        return th.cat([hidden, keep.flatten(1)], dim=1) if self.keep_head else hidden


class OddsPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` with the dice odds as inputs (``chase_inputs``) and in the keep logits
    (``keep_head``), with the bonus odds on rules with bonuses (``bonus_odds``); see the module docstring.
    ``rules`` (a preset name or :class:`~yacht_env.rules.Rules`) picks the odds tables; ``net_arch`` is
    ``{"pi": [...], "vf": [...]}`` as for SB3's ``MlpPolicy``. ``bonus_odds`` defaults to off, as model files
    written before it were trained.
    """

    def __init__(
        self,
        *args: Any,
        rules: str | R.Rules = "standard",
        chase_inputs: bool = True,
        keep_head: bool = True,
        bonus_odds: bool = False,
        **kwargs: Any,
    ) -> None:
        self.rules = R.get_rules(rules)
        self.chase_inputs, self.keep_head, self.bonus_odds = chase_inputs, keep_head, bonus_odds
        super().__init__(*args, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        rules = self.rules.name if R.PRESETS.get(self.rules.name) == self.rules else self.rules
        data.update(rules=rules, chase_inputs=self.chase_inputs, keep_head=self.keep_head, bonus_odds=self.bonus_odds)
        return data

    def _build_mlp_extractor(self) -> None:
        arch = self.net_arch if isinstance(self.net_arch, dict) else {"pi": self.net_arch, "vf": self.net_arch}
        self.mlp_extractor = OddsExtractor(
            self.features_dim,
            arch,
            self.activation_fn,
            self.rules,
            self.chase_inputs,
            self.keep_head,
            self.bonus_odds,
        )
        if self.keep_head:  # weights per category and channel, starting near zero like SB3's action layer
            self.keep_weights = nn.Linear(self.mlp_extractor.latent_dim_pi, self.mlp_extractor.odds.size)
            nn.init.orthogonal_(self.keep_weights.weight, gain=0.01)
            nn.init.zeros_(self.keep_weights.bias)

    def _get_action_dist_from_latent(self, latent_pi: th.Tensor):
        if not self.keep_head:
            return super()._get_action_dist_from_latent(latent_pi)
        width = self.mlp_extractor.latent_dim_pi
        hidden, keep = latent_pi[:, :width], latent_pi[:, width:].view(len(latent_pi), R.NUM_KEEPS, -1)
        logits = self.action_net(hidden)
        bonus = KEEP_FEATURE_SCALE * (keep * self.keep_weights(hidden)[:, None, :]).sum(dim=-1)
        logits = th.cat([logits[:, : R.NUM_KEEPS] + bonus, logits[:, R.NUM_KEEPS :]], dim=1)
        return self.action_dist.proba_distribution(action_logits=logits)
