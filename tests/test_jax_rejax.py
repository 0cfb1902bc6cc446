"""Code written for gymnax before 1.0 on the gymnax face: :class:`yacht_env.jax.FiveValueStep` is
:class:`~yacht_env.jax.YachtGymnax` with the five-value step that PureJaxRL and rejax call, and rejax's PPO, unmodified,
trains on it (rejax is not in an extra: .ci/run installs it for its JAX step; here it is skipped without it).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("gymnax")

from yacht_env import rules as R  # noqa: E402
from yacht_env.jax import FiveValueStep, YachtGymnax  # noqa: E402 (registers the gymnax ids)


def test_the_longest_episode_is_in_the_default_params():
    for rules in ("standard", "yahtzee", "clubhouse"):
        longest = 3 * R.get_rules(rules).num_categories + 100 - 1  # every decision, and 99 illegal actions
        assert YachtGymnax(rules).default_params.max_steps_in_episode == longest


def test_the_five_value_step_is_the_six_value_step_with_done_joined():
    rules = "standard"
    six = YachtGymnax(rules)
    five = FiveValueStep(six)
    params = five.default_params.replace(max_illegal_actions=3)  # a truncation within the steps below
    assert five.default_params == six.default_params
    assert five.action_space(params).n == six.action_space(params).n == R.get_rules(rules).num_actions
    assert five.observation_space(params).shape == six.observation_space(params).shape
    keys = jax.random.split(jax.random.key(3), 8)
    obs5, state5 = jax.vmap(five.reset, in_axes=(0, None))(keys, params)
    obs6, state6 = jax.vmap(six.reset, in_axes=(0, None))(keys, params)
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    step5, step6 = (jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None))) for env in (five, six))
    for i in range(60):
        keys = jax.random.split(jax.random.key(i), 8)
        actions = rng.integers(0, six.num_actions, size=8)  # illegal ones too: truncations
        obs5, state5, reward5, done, info5 = step5(keys, state5, actions, params)
        obs6, state6, reward6, terminated, truncated, info6 = step6(keys, state6, actions, params)
        for a, b in ((obs5, obs6), (state5, state6), (reward5, reward6), (info5, info6)):
            jax.tree.map(np.testing.assert_array_equal, a, b)
        np.testing.assert_array_equal(done, np.logical_or(terminated, truncated))
        ends["terminated"] += int(terminated.sum())
        ends["truncated"] += int(truncated.sum())
    assert ends["terminated"] == 0 and ends["truncated"] > 0  # random play: truncated long before a game ends
    assert jax.vmap(five.action_mask)(state5).shape == (8, six.num_actions)  # the wrapped env's own methods


@pytest.mark.slow  # about 20 s on 2 cores, most of it XLA's compilation of rejax's training loop
def test_rejaxs_ppo_trains_unmodified_on_the_five_value_face():
    rejax = pytest.importorskip("rejax")
    env = FiveValueStep(YachtGymnax("standard"))
    params = env.default_params.replace(illegal_action_penalty=-1.0)
    algo = rejax.PPO.create(
        env=env,
        env_params=params,
        total_timesteps=2048,
        eval_freq=1024,
        num_envs=8,
        num_steps=32,
        num_epochs=1,
        num_minibatches=2,
    )
    _, (lengths, returns) = jax.jit(algo.train)(jax.random.key(0))
    lengths, returns = np.asarray(lengths), np.asarray(returns)
    assert lengths.shape == returns.shape and lengths.shape[0] == 3  # evaluations at 0, 1,024 and 2,048 steps
    # Each evaluation episode ends: a full game (36 decisions, all its picks) or 100 illegal actions, within the
    # cap rejax reads from the params; a return is the points scored less one per illegal action.
    assert ((lengths >= 36) & (lengths <= params.max_steps_in_episode)).all()
    assert np.isfinite(returns).all() and (returns >= -100).all() and (returns <= 375).all()


@pytest.mark.parametrize("preset", sorted(R.PRESETS))
def test_gymnax_make_builds_each_presets_faces_by_their_ids(preset):
    import gymnax

    from yacht_env import env_id
    from yacht_env.jax.gymnax_env import five_value_id

    rules = R.get_rules(preset)
    six, six_params = gymnax.make(env_id(preset))
    five, five_params = gymnax.make(five_value_id(preset))
    assert type(six) is YachtGymnax and type(five) is FiveValueStep and type(five.env) is YachtGymnax
    assert six.rules == five.rules == rules
    assert six_params == five_params == YachtGymnax(preset).default_params
    assert six.action_space(six_params).n == rules.num_actions
    obs, state = five.reset(jax.random.key(0), five_params)
    assert len(five.step(jax.random.key(1), state, 0, five_params)) == 5
    assert len(six.step(jax.random.key(1), state, 0, six_params)) == 6
    assert obs.shape == YachtGymnax(preset).observation_space(six_params).shape


def test_the_gymnax_ids_are_the_gymnasium_ids_and_five_value_ones():
    import gymnax

    from yacht_env.jax.gymnax_env import five_value_id

    assert five_value_id("standard") == "YachtFiveValue-v0"
    assert five_value_id("yahtzee_no_joker") == "YahtzeeNoJokerFiveValue-v0"
    ours = {name for name in gymnax.registered_envs if "Yacht" in name or "Yahtzee" in name or "Yatzy" in name}
    assert len(ours) == 2 * len(R.PRESETS)
    with pytest.raises(ValueError, match="unknown preset"):
        five_value_id("nope")


def test_a_rules_argument_to_gymnax_make_wins_and_registering_again_adds_nothing():
    import gymnax

    from yacht_env.jax.gymnax_env import register_gymnax

    env, _ = gymnax.make("Yahtzee-v0", rules="yatzy")
    assert env.rules == R.get_rules("yatzy")
    assert gymnax.make("YahtzeeFiveValue-v0", rules="yatzy")[0].rules == R.get_rules("yatzy")
    before = list(gymnax.registered_envs)
    register_gymnax()
    assert gymnax.registered_envs == before


@pytest.mark.slow  # about 20 s on 2 cores, most of it XLA's compilation of rejax's training loop
def test_rejaxs_ppo_trains_by_the_five_value_id():
    rejax = pytest.importorskip("rejax")
    algo = rejax.PPO.create(  # by name, rejax's env_params are gymnax.make's keyword arguments
        env="YachtFiveValue-v0",
        env_params={"rules": "yatzy"},
        total_timesteps=1024,
        eval_freq=1024,
        num_envs=8,
        num_steps=32,
    )
    assert type(algo.env) is FiveValueStep and algo.env.rules == R.get_rules("yatzy")
    _, (lengths, returns) = jax.jit(algo.train)(jax.random.key(0))
    assert np.asarray(lengths).shape[0] == 2 and np.isfinite(np.asarray(returns)).all()
