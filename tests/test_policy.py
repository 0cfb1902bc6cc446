"""Specification of the dice-odds features and ``OddsPolicy`` (the default training recipe's network).

The chase tables are cross-checked against a brute force written here from dice tuples (its own re-roll
odds from ``itertools.product``, its own keeps from the sorted dice), on every roll, every number of rolls
left and every category, for both presets; closed forms pin a few values. The policy is checked against
those tables on every decision state's observation, against the formula of its logits, and through saving,
loading and playing as ``ppo:PATH``.
"""

from __future__ import annotations

import functools
import itertools
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import torch
from helpers import REPO
from sb3_contrib import MaskablePPO

from yacht_agents.policy import KEEP_FEATURE_SCALE, OddsFeatures, OddsPolicy
from yacht_agents.ppo import PPOAgent, read_model
from yacht_env import rules as R
from yacht_env.encoding import (
    ObservationEncoder,
    chase_values,
    keep_chase_values,
    keep_par_chase_values,
    par_chase_values,
)
from yacht_env.sb3 import YachtSB3VecEnv
from yacht_lab.training.config import TrainConfig
from yacht_lab.training.sb3.model import make_model
from yacht_lab.training.sb3.ppo import make_vec_env

PRESETS = ["standard", "classic"]


# --------------------------------------------------------------------------------------------------
# An independent brute force of the chase tables, from dice tuples
# --------------------------------------------------------------------------------------------------
def reroll_odds(kept: tuple[int, ...], index: dict[tuple[int, ...], int]) -> np.ndarray:
    """The chances of each sorted roll (``index``) after keeping ``kept`` and throwing the other dice."""
    n = R.NUM_DICE - len(kept)
    odds = np.zeros(len(index))
    for rest in itertools.product(range(1, 7), repeat=n):
        odds[index[tuple(sorted(kept + rest))]] += 1
    return odds / 6**n


@functools.cache
def keep_odds() -> tuple[list[tuple[int, ...]], dict[tuple[int, int], np.ndarray]]:
    """The sorted rolls, and per ``(roll, keep mask)`` the chances of each next roll (the same for every preset)."""
    rolls = [tuple(int(v) for v in dice) for dice in R.ROLLS]
    index = {dice: r for r, dice in enumerate(rolls)}
    kept = {
        (r, mask): tuple(d for i, d in enumerate(dice) if mask >> i & 1)
        for r, dice in enumerate(rolls)
        for mask in range(R.KEEP_ALL)
    }
    odds = {k: reroll_odds(k, index) for k in set(kept.values())}
    return rolls, {key: odds[k] for key, k in kept.items()}


class BruteForce:
    """``values[t]``: per roll and category, the best expected score from that roll with ``t`` re-rolls left
    when playing for the category alone; ``after_keep(t, r, mask)``: the same after keeping ``mask``'s dice."""

    def __init__(self, rules: str, points=None) -> None:
        points = points or (lambda dice, k: R.score(dice, k, rules))  # what a category's roll is worth
        self.rolls, self.odds = keep_odds()  # odds: (roll, mask) -> chances of the next roll
        categories = range(R.get_rules(rules).num_categories)
        self.values = [np.array([[points(dice, k) for k in categories] for dice in self.rolls], float)]
        for t in (1, 2):
            best = np.array([[self.after_keep(t, r, mask) for mask in range(R.KEEP_ALL)] for r in range(R.NUM_ROLLS)])
            self.values.append(np.maximum(self.values[0], best.max(axis=1)))

    def after_keep(self, t: int, r: int, mask: int) -> np.ndarray:
        return self.odds[r, mask] @ self.values[t - 1]


@pytest.fixture(scope="module", params=PRESETS)
def brute(request):
    return request.param, BruteForce(request.param)


def test_chase_values_are_the_brute_force_on_every_roll_rolls_left_and_category(brute):
    rules, force = brute
    table = chase_values(rules)
    assert table.shape == (3, R.NUM_ROLLS, 12)
    for t in range(3):
        np.testing.assert_allclose(table[t], force.values[t], rtol=0, atol=1e-9)


def test_keep_chase_values_are_the_brute_force_on_every_keep(brute):
    rules, force = brute
    table = keep_chase_values(rules)
    assert table.shape == (3, R.NUM_ROLLS, R.NUM_KEEPS, 12)
    assert not table[0].any()  # no re-roll left: no keep
    assert not table[:, :, R.KEEP_ALL].any()  # keeping every die is never a keep
    for t in (1, 2):
        for r in range(R.NUM_ROLLS):
            expected = [force.after_keep(t, r, mask) for mask in range(R.KEEP_ALL)]
            np.testing.assert_allclose(table[t, r, : R.KEEP_ALL], expected, rtol=0, atol=1e-9)


def test_the_chase_value_is_the_better_of_scoring_now_and_the_best_keep():
    for rules in PRESETS:
        table, keeps = chase_values(rules), keep_chase_values(rules)
        np.testing.assert_array_equal(table[0], R.score_table(rules))
        for t in (1, 2):
            np.testing.assert_array_equal(table[t], np.maximum(table[0], keeps[t].max(axis=1)))


def test_closed_forms_of_a_turn_from_its_first_roll():
    first = R.TRANSITION[0] @ chase_values("standard")[2]  # expected points of a whole turn played for k
    for face in range(1, 7):  # each die ends on the face within three throws with chance 1 - (5/6)^3
        assert first[face - 1] == pytest.approx(face * 5 * float(1 - Fraction(5, 6) ** 3), abs=1e-12)
    # A Yacht in one turn, always keeping the most common face: 2,783,176 / 6^10 (about 4.60%).
    assert first[R.category_index("yacht")] == pytest.approx(50 * 2783176 / 6**10, abs=1e-12)
    # Choice: a die is worth 3.5 thrown last, 4.25 with one throw left (keep 4 to 6), 14/3 with two (keep 5, 6).
    assert first[R.category_index("choice")] == pytest.approx(5 * 14 / 3, abs=1e-12)


def test_a_few_states_by_hand():
    table = chase_values("standard")
    fives = R.roll_index([1, 2, 5, 5, 5])
    # Fives with two re-rolls left: the three fives, and each of two dice a five within two throws (11/36).
    assert table[2, fives, R.category_index("fives")] == pytest.approx(5 * (3 + 2 * 11 / 36))
    yacht = R.roll_index([6, 6, 6, 6, 6])
    assert table[2, yacht, R.category_index("yacht")] == 50
    assert table[1, R.roll_index([1, 2, 3, 4, 6]), R.category_index("little_straight")] == pytest.approx(30 / 6)
    assert keep_chase_values("standard")[1, fives, 0b11100, R.category_index("fives")] == pytest.approx(15 + 2 * 5 / 6)


def test_the_tables_are_cached_and_read_only():
    assert chase_values("standard") is chase_values(R.get_rules("standard"))
    with pytest.raises(ValueError):
        chase_values("standard")[0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        keep_chase_values("classic")[1, 0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="unknown rules"):
        chase_values("nope")


def made_par(rules: str):
    """The par table by hand: an upper box's roll is worth 1 with at least three of its face."""
    names = R.get_rules(rules).categories
    faces = {k: R.UPPER_CATEGORIES.get(name) for k, name in enumerate(names)}
    return lambda dice, k: float(faces[k] is not None and dice.count(faces[k]) >= 3)


@pytest.mark.parametrize("rules", ["yahtzee", "yatzy"])
def test_par_chase_values_are_the_brute_force_on_every_roll_keep_and_box(rules):
    force = BruteForce(rules, made_par(rules))
    table, keeps = par_chase_values(rules), keep_par_chase_values(rules)
    n = R.get_rules(rules).num_categories
    assert table.shape == (3, R.NUM_ROLLS, n) and keeps.shape == (3, R.NUM_ROLLS, R.NUM_KEEPS, n)
    for t in range(3):
        np.testing.assert_allclose(table[t], force.values[t], rtol=0, atol=1e-12)
    assert not keeps[0].any() and not keeps[:, :, R.KEEP_ALL].any()
    for t in (1, 2):
        for r in range(R.NUM_ROLLS):
            expected = [force.after_keep(t, r, mask) for mask in range(R.KEEP_ALL)]
            np.testing.assert_allclose(keeps[t, r, : R.KEEP_ALL], expected, rtol=0, atol=1e-12)
    lower = [k for k, name in enumerate(R.get_rules(rules).categories) if name not in R.UPPER_CATEGORIES]
    assert len(lower) == n - 6 and not table[..., lower].any()


def test_par_odds_by_hand():
    table = par_chase_values("yahtzee")
    # A whole turn for par: each die ends on the face within three throws with chance p = 91/216; par is at
    # least three of the five: P(Binomial(5, p) >= 3), the same for every face.
    p = Fraction(91, 216)
    par = sum(Fraction(math.comb(5, j)) * p**j * (1 - p) ** (5 - j) for j in (3, 4, 5))
    first = R.TRANSITION[0] @ table[2]
    np.testing.assert_allclose(first[:6], float(par), rtol=0, atol=1e-12)
    fours = R.roll_index([1, 2, 3, 4, 4])
    # Two fours, one throw left: at least one four among three dice, 1 - (5/6)^3.
    assert table[1, fours, R.category_index("fours", "yahtzee")] == pytest.approx(1 - (5 / 6) ** 3, abs=1e-12)
    assert table[0, R.roll_index([4, 4, 4, 1, 2]), 3] == 1 and table[0, fours, 3] == 0


# --------------------------------------------------------------------------------------------------
# OddsFeatures: the tables' rows, read off observations inside the network
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rules", PRESETS)
def test_odds_features_of_every_decision_state_are_the_tables_rows(rules):
    encoder = ObservationEncoder(rules)
    roll, rolls_left = np.divmod(np.arange(R.NUM_ROLLS * 3), 3)
    chase, keep = chase_values(rules) / 50, keep_chase_values(rules) / 50
    features = OddsFeatures(R.get_rules(rules))
    for open_mask in (R.ALL_OPEN, 0b1, 0b101010101010, 0b100000000000, 0b011111111110):
        masks = np.full_like(roll, open_mask)
        obs = torch.from_numpy(encoder.flat(roll, rolls_left, masks))
        got_chase, got_keep = features(obs)
        bits = R.OPEN_BITS[open_mask]
        np.testing.assert_allclose(got_chase.numpy(), chase[rolls_left, roll] * bits, rtol=1e-6, atol=0)
        np.testing.assert_allclose(got_keep.numpy(), keep[rolls_left, roll] * bits, rtol=1e-6, atol=0)


@pytest.mark.parametrize("rules", ["yahtzee", "yatzy"])
def test_bonus_odds_add_the_par_channel_and_keep_the_armed_box_on(rules):
    preset = R.get_rules(rules)
    n, five = preset.num_categories, preset.five_of_a_kind_category
    encoder = ObservationEncoder(rules)
    roll, rolls_left = np.divmod(np.arange(R.NUM_ROLLS * 3), 3)
    scale = R.score_table(rules).max()
    chase, keep = chase_values(rules) / scale, keep_chase_values(rules) / scale
    par, keep_par = par_chase_values(rules), keep_par_chase_values(rules)
    plain, odds = OddsFeatures(preset), OddsFeatures(preset, bonus_odds=True)
    assert (plain.size, odds.size) == (n, 2 * n)
    rng = np.random.default_rng(0)
    for open_mask in (preset.all_open, 0b1, 0b1010101010101, preset.all_open & ~(1 << five), 0b111000):
        for armed in (0, 1) if preset.yahtzee_bonus else (0,):
            masks = np.full_like(roll, open_mask)
            upper = rng.integers(0, 64, size=roll.shape)
            obs = torch.from_numpy(encoder.flat(roll, rolls_left, masks, upper, armed))
            bits = R.open_bits(n)[open_mask].astype(float)
            points_gate = bits.copy()
            if armed:
                points_gate[five] = 1.0
            got_chase, got_keep = odds(obs)
            expected_chase = np.concatenate([chase[rolls_left, roll] * points_gate, par[rolls_left, roll] * bits], 1)
            expected_keep = np.concatenate(
                [keep[rolls_left, roll] * points_gate, keep_par[rolls_left, roll] * bits], -1
            )
            np.testing.assert_allclose(got_chase.numpy(), expected_chase, rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(got_keep.numpy(), expected_keep, rtol=1e-6, atol=1e-7)
            plain_chase, _ = plain(obs)
            np.testing.assert_allclose(plain_chase.numpy(), chase[rolls_left, roll] * bits, rtol=1e-6, atol=1e-7)
    # Yacht's presets have no bonus: the option changes nothing there.
    assert OddsFeatures(R.get_rules("standard"), bonus_odds=True).size == 12
    no_yahtzee_bonus = OddsFeatures(R.get_rules("yahtzee_no_bonus"), bonus_odds=True)  # the upper bonus only
    assert no_yahtzee_bonus.size == 26 and no_yahtzee_bonus.armed_at is None and not no_yahtzee_bonus.armed_bit.any()


def test_odds_features_read_the_own_game_of_a_table_view():
    env = YachtSB3VecEnv(16, opponents=["greedy"])
    obs = env.reset()
    assert obs.shape == (16, 79)
    features = OddsFeatures(R.get_rules("standard"))
    solo = ObservationEncoder().decode(obs[:, :64])
    got_chase, _ = features(torch.from_numpy(obs))
    expected = chase_values()[solo.rolls_left, solo.roll] * R.OPEN_BITS[solo.open_mask] / 50
    np.testing.assert_allclose(got_chase.numpy(), expected, rtol=1e-6)


# --------------------------------------------------------------------------------------------------
# OddsPolicy
# --------------------------------------------------------------------------------------------------
def odds_model(rules="standard", seed=0, **options):
    env = YachtSB3VecEnv(4, rules=rules)
    kwargs = {"net_arch": {"pi": [16, 16], "vf": [16, 16]}, "rules": rules, **options}
    model = MaskablePPO(OddsPolicy, env, n_steps=16, batch_size=32, policy_kwargs=kwargs, seed=seed, device="cpu")
    with torch.no_grad():  # weights of order one, so that every term of the logits matters
        for parameter in model.policy.parameters():
            parameter.normal_(0.0, 0.5, generator=torch.Generator().manual_seed(seed))
    return model, env


def test_the_keep_logits_add_the_category_weights_times_the_after_keep_values():
    model, env = odds_model()
    policy = model.policy
    obs = torch.from_numpy(env.reset())
    chase, keep = policy.mlp_extractor.odds(obs)
    hidden = policy.mlp_extractor.policy_net(torch.cat([obs, chase], dim=1))
    base = policy.action_net(hidden)
    weights = policy.keep_weights(hidden)
    expected = base.clone()
    for m in range(R.NUM_KEEPS):
        expected[:, m] += KEEP_FEATURE_SCALE * (keep[:, m] * weights).sum(dim=1)
    masks = env.action_masks()
    with torch.no_grad():
        distribution = policy.get_distribution(obs, action_masks=masks)
        logits = distribution.distribution.logits
        expected_logits = torch.log_softmax(expected.masked_fill(~torch.from_numpy(masks), -1e8), dim=1)
    np.testing.assert_allclose(logits.numpy(), expected_logits.numpy(), rtol=1e-5, atol=1e-5)
    assert keep.abs().sum() > 0 and (weights.abs() > 0.01).any()
    values = policy.predict_values(obs)
    torch.testing.assert_close(values, policy.value_net(policy.mlp_extractor.value_net(torch.cat([obs, chase], 1))))


@pytest.mark.parametrize(("chase_inputs", "keep_head"), [(True, False), (False, True), (False, False)])
def test_each_part_can_be_turned_off(chase_inputs, keep_head):
    model, env = odds_model(chase_inputs=chase_inputs, keep_head=keep_head)
    policy = model.policy
    first_layer = policy.mlp_extractor.policy_net[0]
    assert first_layer.in_features == 64 + (12 if chase_inputs else 0)
    assert hasattr(policy, "keep_weights") == keep_head
    obs = env.reset()
    actions, _ = model.predict(obs, action_masks=env.action_masks(), deterministic=True)
    assert env.action_masks()[np.arange(4), actions].all()


def test_a_bonus_odds_model_has_weights_per_channel_and_saves_its_option(tmp_path):
    model, env = odds_model(rules="yahtzee", bonus_odds=True)
    policy = model.policy
    assert policy.mlp_extractor.policy_net[0].in_features == 69 + 26
    assert policy.keep_weights.out_features == 26
    path = tmp_path / "bonus.zip"
    model.save(path)
    assert read_model(path).odds == {"rules": "yahtzee", "chase_inputs": True, "keep_head": True, "bonus_odds": True}
    agent = PPOAgent(path, "yahtzee")
    obs, masks = env.reset(), env.action_masks()
    for _ in range(30):
        a, _ = model.predict(obs, action_masks=masks, deterministic=True)
        np.testing.assert_array_equal(agent.model.predict(obs, action_masks=masks, deterministic=True)[0], a)
        obs, *_ = env.step(a)
        masks = env.action_masks()
    # Files written before the option were trained without the bonus odds.
    assert read_model(REPO / "models" / "ppo_standard.zip").odds["bonus_odds"] is False


def test_a_saved_odds_model_loads_and_plays_the_same(tmp_path):
    model, env = odds_model(rules="classic", keep_head=True, chase_inputs=True)
    path = tmp_path / "odds.zip"
    model.save(path)
    loaded = MaskablePPO.load(path, device="cpu")
    assert isinstance(loaded.policy, OddsPolicy)
    assert loaded.policy.rules == R.get_rules("classic")
    assert (loaded.policy.chase_inputs, loaded.policy.keep_head) == (True, True)
    obs, masks = env.reset(), env.action_masks()
    for _ in range(30):
        a, _ = model.predict(obs, action_masks=masks, deterministic=True)
        b, _ = loaded.predict(obs, action_masks=masks, deterministic=True)
        np.testing.assert_array_equal(a, b)
        obs, *_ = env.step(a)
        masks = env.action_masks()
    agent = PPOAgent(path, "classic")
    assert agent.table_players is None
    with pytest.raises(ValueError, match="for the 'standard' rules: it was trained on 'classic'"):
        PPOAgent(path, "standard")


def test_the_default_recipe_trains_an_odds_policy_and_plain_configs_an_mlp():
    config = TrainConfig(n_envs=4)
    model = make_model(config, make_vec_env(config), None)
    assert isinstance(model.policy, OddsPolicy)
    assert (model.policy.chase_inputs, model.policy.keep_head, model.policy.bonus_odds) == (True, True, True)
    plain = TrainConfig(n_envs=4)
    plain.policy.chase_inputs = plain.policy.keep_head = False
    model = make_model(plain, make_vec_env(plain), None)
    assert type(model.policy).__name__ == "MaskableActorCriticPolicy"


@pytest.mark.slow  # an end-to-end training run: python -m pytest -m slow (CI runs it)
def test_an_odds_policy_trains_at_a_table():
    config = TrainConfig(n_envs=4, opponents=["greedy"])
    config.ppo.n_steps, config.ppo.batch_size = 32, 64
    model = make_model(config, make_vec_env(config), None)
    model.learn(256)
    agent = PPOAgent.from_model(model)
    assert agent.table_players == 2


@pytest.mark.slow
def test_evaluate_py_refuses_a_model_of_the_other_preset_in_one_line(tmp_path):
    model, _ = odds_model(rules="classic")
    path = tmp_path / "classic.zip"
    model.save(path)
    done = subprocess.run(
        [sys.executable, "evaluate.py", "--agents", f"ppo:{path}", "--games", "10", "--no-progress"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith("evaluate.py: error: ") and len(done.stderr.splitlines()) == 1
    assert "trained on 'classic'" in done.stderr
