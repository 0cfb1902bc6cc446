"""Every agent offers Stable-Baselines3's ``predict``: SB3's ``evaluate_policy`` and sb3-contrib's maskable one take
it unchanged, on the project's ``YachtSB3VecEnv``; without masks, the legal actions are read from the observations.
"""

from __future__ import annotations

import numpy as np
import pytest

from yacht_agents import make_agent

pytest.importorskip("sb3_contrib")

AGENTS = ["random", "greedy", "optimal", "search:standard"]


@pytest.mark.parametrize("spec", AGENTS)
def test_sb3s_evaluate_policy_takes_every_agent(spec):
    from stable_baselines3.common.evaluation import evaluate_policy

    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(4)
    env.seed(0)
    try:
        rewards, lengths = evaluate_policy(make_agent(spec), env, n_eval_episodes=8, return_episode_rewards=True)
    finally:
        env.close()
    assert len(rewards) == 8 and all(12 <= n <= 36 for n in lengths)
    assert np.mean(rewards) > (100 if spec != "random" else 5)


@pytest.mark.parametrize("spec", AGENTS)
def test_sb3_contribs_maskable_evaluate_policy_takes_every_agent(spec):
    from sb3_contrib.common.maskable.evaluation import evaluate_policy

    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(4)
    env.seed(1)
    try:
        mean, _ = evaluate_policy(make_agent(spec), env, n_eval_episodes=8, use_masking=True)
    finally:
        env.close()
    assert mean > (100 if spec != "random" else 5)


@pytest.mark.parametrize("rules", ["standard", "yahtzee", "yahtzee_forced_joker", "yatzy"])
def test_the_masks_read_from_observations_are_the_envs(rules):
    from yacht_env.vector import YachtVectorEnv

    agent = make_agent("random", rules, seed=0)
    env = YachtVectorEnv(64, rules=rules, autoreset_mode="same_step")  # every observation a state to act in
    obs, _ = env.reset(seed=3)
    for _ in range(60):
        masks = env.action_masks()
        np.testing.assert_array_equal(agent.legal_action_masks(obs), masks)
        actions, state = agent.predict(obs, state="kept")
        assert state == "kept" and masks[np.arange(64), actions].all()
        obs, *_ = env.step(actions)
    one, _ = agent.predict(obs[0])
    assert isinstance(one, np.ndarray) and one.shape == ()
