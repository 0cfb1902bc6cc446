"""The Stable-Baselines3 adapter ``YachtSB3VecEnv``: SB3's ``VecEnv`` contract over the native vector env.

Needs the ``train`` extra (stable-baselines3, sb3-contrib, torch); skipped where it is not installed (the
torch-free runs on other Pythons).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from gymnasium import spaces

pytest.importorskip("sb3_contrib")
from sb3_contrib.common.maskable.utils import get_action_masks  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import VecEnv  # noqa: E402

from yacht_env import YachtEnv  # noqa: E402
from yacht_env import rules as R  # noqa: E402
from yacht_env.encoding import ObservationEncoder  # noqa: E402
from yacht_env.game import game_streams  # noqa: E402
from yacht_env.sb3 import YachtSB3VecEnv  # noqa: E402


def uniform_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One action per row, uniform over the row's legal actions."""
    return np.argmax(rng.random(mask.shape) * mask, axis=1)


# --------------------------------------------------------------------------------------------------
# 7. The Stable-Baselines3 adapter
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def one_torch_thread():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny MLP on a shared machine
    yield
    torch.set_num_threads(threads)


def test_sb3_reset_and_step_follow_the_vecenv_contract():
    n = 5
    env = YachtSB3VecEnv(n)
    assert isinstance(env, VecEnv) and env.num_envs == n
    assert env.observation_space == spaces.Box(0.0, 1.0, (64,), np.float32)
    assert env.action_space == spaces.Discrete(44)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (n, 64)
    masks = get_action_masks(env)
    assert masks.dtype == bool and masks.shape == (n, 44)
    np.testing.assert_array_equal(masks, env.action_masks())
    obs, rewards, dones, infos = env.step(uniform_legal(np.random.default_rng(0), masks))
    assert obs.dtype == np.float32 and obs.shape == (n, 64)
    assert rewards.dtype == np.float32 and rewards.shape == (n,)
    assert dones.dtype == bool and dones.shape == (n,)
    assert isinstance(infos, list) and len(infos) == n and all(isinstance(info, dict) for info in infos)
    assert env.get_attr("num_envs") == [n] * n
    assert env.env_method("action_masks", indices=[1, 3]).shape == (2, 44)
    assert env.env_is_wrapped(Monitor) == [True] * n  # it writes Monitor's "episode" info itself


def test_sb3_terminal_observation_and_episode_match_single_envs():
    n = 6
    streams = game_streams(21, range(n))
    env = YachtSB3VecEnv(n)
    env.reset()
    obs, _ = env.vector_env.reset(options={"dice_stream": streams})  # the adapter has no per-game streams option
    singles = [YachtEnv() for _ in range(n)]
    for i, single in enumerate(singles):
        single_obs, _ = single.reset(options={"dice_stream": streams[i]})
        np.testing.assert_array_equal(obs[i], single_obs)
    rng = np.random.default_rng(21)
    steps = np.zeros(n, dtype=int)
    live = np.ones(n, dtype=bool)
    while live.any():
        actions = uniform_legal(rng, get_action_masks(env))
        obs, rewards, dones, infos = env.step(actions)
        for i in np.flatnonzero(live):
            single_obs, single_reward, terminated, truncated, single_info = singles[i].step(int(actions[i]))
            steps[i] += 1
            assert rewards[i] == np.float32(single_reward) and bool(dones[i]) is (terminated or truncated)
            if not dones[i]:
                np.testing.assert_array_equal(obs[i], single_obs)
                assert "terminal_observation" not in infos[i]
                continue
            live[i] = False
            np.testing.assert_array_equal(infos[i]["terminal_observation"], single_obs)
            assert infos[i]["episode"]["r"] == single_info["total"] and infos[i]["episode"]["l"] == steps[i]
            assert infos[i]["TimeLimit.truncated"] is False
            decoded = ObservationEncoder().decode(obs[i])  # the new game is already showing
            assert (int(decoded[1]), int(decoded[2])) == (R.MAX_ROLLS_LEFT, R.ALL_OPEN)


def test_sb3_episode_stats_over_consecutive_episodes():
    n = 8
    env = YachtSB3VecEnv(n)
    env.seed(0)
    env.reset()
    rng = np.random.default_rng(0)
    returns, lengths, episodes = np.zeros(n), np.zeros(n, dtype=int), 0
    for _ in range(150):  # about four games per env
        _, rewards, dones, infos = env.step(uniform_legal(rng, get_action_masks(env)))
        returns += rewards
        lengths += 1
        for i in np.flatnonzero(dones):
            assert infos[i]["episode"]["r"] == returns[i] and infos[i]["episode"]["l"] == lengths[i]
            assert infos[i]["episode"]["t"] >= 0
            episodes += 1
        returns[dones] = lengths[dones] = 0
    assert episodes >= 3 * n


def test_sb3_set_options_dice_streams_are_played():
    streams = game_streams(5, range(3))
    env = YachtSB3VecEnv(3)
    env.set_options([{"dice_stream": stream} for stream in streams])
    obs = env.reset()
    expected = np.stack([YachtEnv().reset(options={"dice_stream": stream})[0] for stream in streams])
    np.testing.assert_array_equal(obs, expected)


def test_sb3_seed_then_reset_is_reproducible():
    def play(seed: int) -> list:
        env = YachtSB3VecEnv(8)
        env.seed(seed)
        obs = env.reset()
        rng = np.random.default_rng(0)
        trajectory = [obs.tolist()]
        for _ in range(60):
            obs, rewards, dones, infos = env.step(uniform_legal(rng, get_action_masks(env)))
            episodes = [info["episode"]["r"] if "episode" in info else None for info in infos]
            trajectory.append((obs.tolist(), rewards.tolist(), dones.tolist(), episodes))
        return trajectory

    first = play(3)
    assert any(any(step[2]) for step in first[1:])  # some games ended and restarted
    assert play(3) == first
    assert play(4) != first


def test_sb3_illegal_actions_truncate_with_time_limit_flag():
    env = YachtSB3VecEnv(2, max_illegal_actions=2, illegal_action_penalty=-1.0)
    env.reset()
    ignored = r"Yacht: an illegal action was ignored \(the state did not change.*\(the first: env 0, action 31 keeps"
    with pytest.warns(UserWarning, match=ignored):
        env.step(np.array([31, 32]))
    _, rewards, dones, infos = env.step(np.array([31, 33]))
    assert rewards[0] == -1.0 and dones.tolist() == [True, False]
    assert infos[0]["TimeLimit.truncated"] is True
    # As SB3's Monitor: r is the sum of rewards (penalties included); the score is separate.
    assert infos[0]["episode"]["r"] == -2.0 and infos[0]["episode"]["l"] == 2 and infos[0]["score"] == 0


@pytest.mark.parametrize("name", ["observation_type", "render_mode", "autoreset_mode"])
def test_sb3_fixed_arguments_rejected(name):
    with pytest.raises(ValueError, match=name):
        YachtSB3VecEnv(2, **{name: None})


def test_maskable_ppo_trains_on_the_adapter_and_predicts_legal_actions(one_torch_thread):
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy

    model = MaskablePPO("MlpPolicy", YachtSB3VecEnv(8), n_steps=64, batch_size=128, seed=0, device="cpu")
    model.learn(1024)
    assert model.num_timesteps >= 1024
    env = YachtSB3VecEnv(4)
    env.seed(0)
    obs = env.reset()
    for _ in range(40):  # through several turns, so picks and keeps are both asked for
        masks = get_action_masks(env)
        actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
        assert masks[np.arange(4), actions].all()
        obs, *_ = env.step(actions)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mean, std = evaluate_policy(model, YachtSB3VecEnv(4), n_eval_episodes=8, use_masking=True)
    assert math.isfinite(mean) and math.isfinite(std)
    assert 0 < mean <= 12 * 50 and std >= 0


@pytest.mark.parametrize("actions", [[32.9, 32, 32], [True, False, True], [[32], [32], [32]], [32, 32]])
def test_sb3_adapter_takes_actions_by_the_vector_envs_rules(actions):
    """The adapter once cast floats (32.9 -> 32), bools and wrong shapes the native vector env rejects."""
    env = YachtSB3VecEnv(3)
    env.reset()
    with pytest.raises(ValueError, match=r"^actions must be an int array of shape \(3,\)"):
        env.step(np.array(actions))


@pytest.mark.parametrize("opponents", [None, ["greedy"]])
@pytest.mark.parametrize("actions", [[True, 32, 32], [32, 33, np.bool_(True)]])
def test_sb3_adapter_refuses_a_bool_among_listed_actions(opponents, actions):
    """As ``Yacht-v0`` refuses a bool action: numpy alone would read ``[True, 32, 32]`` as ``[1, 32, 32]``."""
    env = YachtSB3VecEnv(3, opponents=opponents)
    env.reset()
    with pytest.raises(ValueError, match=r"^actions must be ints, not bools"):
        env.step(actions)
