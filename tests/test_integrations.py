"""Yacht-v0 used, unchanged, the way people use it from the libraries around Gymnasium.

Each test is written as a new user would write it (the library's own entry points, no yacht-rl helpers
beyond ``import yacht_env``): Gymnasium's ``make_vec`` (sync and async), a CleanRL-style torch rollout
loop (masked and unmasked), Stable-Baselines3's ``make_vec_env`` with sb3-contrib's ``MaskablePPO`` and
its masked evaluation, the native vector env in every autoreset mode, ``rgb_array`` rendering with
Gymnasium's ``RenderCollection``, and TorchRL (only where it is installed).
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import yacht_env  # noqa: F401  (registers Yacht-v0)
from yacht_env import YachtEnv

NUM_ACTIONS = 44
ILLEGAL_WARNING = "an illegal action was ignored"


def uniform_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One action per row, uniform over the row's nonzero entries of a batched (N, 44) mask."""
    return np.where(mask.astype(bool), rng.random(mask.shape), -1.0).argmax(axis=1)


def illegal_warnings(records: list[warnings.WarningMessage]) -> list[str]:
    return [str(r.message) for r in records if ILLEGAL_WARNING in str(r.message)]


@pytest.fixture
def one_torch_thread():
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


# ------------------------------------------------------------------------------------------------
# 1. gymnasium.make_vec with Gymnasium's own sync and async vector envs
# ------------------------------------------------------------------------------------------------
def play_make_vec(envs: gym.vector.VectorEnv, steps: int, seed: int) -> dict:
    """Plays uniform legal actions from info["action_mask"]; checks info and episode returns as it goes."""
    n = envs.num_envs
    rng = np.random.default_rng(seed)
    obs, info = envs.reset(seed=seed)
    returns = np.zeros(n)
    autoreset = np.zeros(n, dtype=bool)  # next_step autoreset: this step resets these games
    finished, observations, rewards_seen = [], [obs.copy()], []
    for _ in range(steps):
        assert info["dice"].dtype == np.int8 and info["dice"].shape == (n, 5)
        assert np.all(np.diff(info["dice"], axis=1) >= 0) and info["dice"].min() >= 1 and info["dice"].max() <= 6
        assert info["scores"].dtype == np.int16 and info["scores"].shape == (n, 12)
        assert info["scores"].min() >= -1
        assert np.array_equal(info["total"], np.where(info["scores"] >= 0, info["scores"], 0).sum(axis=1))
        assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (n, NUM_ACTIONS)
        assert info["action_mask"].any(axis=1).all(), "an all-zero mask row"
        assert info["illegal_action"].dtype == np.bool_ and not info["illegal_action"].any()
        actions = uniform_legal(rng, info["action_mask"])
        obs, rewards, terminated, truncated, info = envs.step(actions)
        observations.append(obs.copy())
        rewards_seen.append(rewards.copy())
        assert not truncated.any()  # legal play never truncates
        assert np.all(rewards[autoreset] == 0) and not terminated[autoreset].any()
        returns = np.where(autoreset, 0.0, returns + rewards)
        if autoreset.any():  # the reset step shows a fresh game
            assert np.all(info["scores"][autoreset] == -1) and np.all(info["total"][autoreset] == 0)
            assert np.all(info["rolls_left"][autoreset] == 2)
        for i in np.flatnonzero(terminated):
            assert returns[i] == info["total"][i], "the rewards of an episode must sum to its final total"
            assert (info["scores"][i] >= 0).all()
            finished.append(int(info["total"][i]))
        autoreset = terminated | truncated
    return {"finished": finished, "obs": np.stack(observations), "rewards": np.stack(rewards_seen)}


def test_make_vec_sync_thousands_of_steps_batched_info_and_episode_returns():
    envs = gym.make_vec("Yacht-v0", num_envs=4, vectorization_mode="sync")
    assert isinstance(envs, gym.vector.SyncVectorEnv)
    first = play_make_vec(envs, 3000, seed=7)
    again = play_make_vec(envs, 3000, seed=7)
    envs.close()
    # 4 x 3,000 steps of uniform legal play (at most 36 steps a game): hundreds of finished games.
    assert len(first["finished"]) >= 4 * 3000 // 36
    assert np.array_equal(first["obs"], again["obs"]) and np.array_equal(first["rewards"], again["rewards"])
    assert first["finished"] == again["finished"]
    other = play_make_vec(gym.make_vec("Yacht-v0", num_envs=4, vectorization_mode="sync"), 100, seed=8)
    assert not np.array_equal(other["obs"], first["obs"][:101])


def test_make_vec_async_steps_batched_info_and_same_seed_same_trajectory():
    def run():
        envs = gym.make_vec("Yacht-v0", num_envs=4, vectorization_mode="async", vector_kwargs={"context": "forkserver"})
        try:
            assert isinstance(envs, gym.vector.AsyncVectorEnv)
            return play_make_vec(envs, 1000, seed=3)
        finally:
            envs.close()

    first, again = run(), run()
    assert len(first["finished"]) >= 4 * 1000 // 36
    assert np.array_equal(first["obs"], again["obs"]) and first["finished"] == again["finished"]
    # The async env plays the very games the sync env plays from the same seed.
    sync = play_make_vec(gym.make_vec("Yacht-v0", num_envs=4, vectorization_mode="sync"), 1000, seed=3)
    assert np.array_equal(first["obs"], sync["obs"]) and first["finished"] == sync["finished"]


# ------------------------------------------------------------------------------------------------
# 2. A CleanRL-style rollout loop (ppo.py's env construction and sampling), masked and unmasked
# ------------------------------------------------------------------------------------------------
def make_env(**kwargs):
    def thunk():
        env = gym.make("Yacht-v0", **kwargs)
        return gym.wrappers.RecordEpisodeStatistics(env)

    return thunk


def cleanrl_rollout(torch, envs, steps: int, masked: bool, mask_in_obs: bool = False) -> dict:
    from torch.distributions.categorical import Categorical

    torch.manual_seed(0)
    actor = torch.nn.Linear(64, NUM_ACTIONS)
    next_obs, info = envs.reset(seed=0)
    n = envs.num_envs
    stats = {"illegal_sampled": 0, "illegal_counted": np.zeros(n, dtype=np.int64), "episodes": 0, "truncations": 0}
    stats["truncated_at"] = []
    for _ in range(steps):
        features = next_obs["observation"] if mask_in_obs else next_obs
        mask = next_obs["action_mask"] if mask_in_obs else info["action_mask"]
        with torch.no_grad():
            logits = actor(torch.as_tensor(features, dtype=torch.float32))
            if masked:
                logits = torch.where(torch.as_tensor(mask, dtype=torch.bool), logits, torch.tensor(-1e8))
            action = Categorical(logits=logits).sample()
        actions = action.numpy()
        stats["illegal_sampled"] += int((mask[np.arange(n), actions] == 0).sum())
        next_obs, reward, terminations, truncations, info = envs.step(actions)
        stats["illegal_counted"] = np.maximum(stats["illegal_counted"], info["illegal_actions"])
        stats["truncations"] += int(truncations.sum())
        stats["truncated_at"] += info["illegal_actions"][truncations].tolist()
        if "episode" in info:  # RecordEpisodeStatistics, as CleanRL logs it
            done = info["_episode"]
            stats["episodes"] += int(done.sum())
            if masked:  # the return of a legal game is its final score
                assert np.array_equal(info["episode"]["r"][done], info["total"][done])
                assert (info["episode"]["l"][done] <= 36).all()
    return stats


def test_cleanrl_masked_rollout_samples_only_legal_actions(one_torch_thread):
    torch = one_torch_thread
    envs = gym.vector.SyncVectorEnv([make_env() for _ in range(4)])
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        stats = cleanrl_rollout(torch, envs, 600, masked=True)
    envs.close()
    assert stats["illegal_sampled"] == 0
    assert not stats["illegal_counted"].any() and stats["truncations"] == 0
    assert stats["episodes"] >= 4 * 600 // 36
    assert illegal_warnings(records) == []


@pytest.mark.parametrize("action_mask_dtype", ["int8", "bool"])
def test_cleanrl_masked_rollout_with_the_mask_in_the_observation(one_torch_thread, action_mask_dtype):
    torch = one_torch_thread
    envs = gym.vector.SyncVectorEnv(
        [make_env(observation_type="masked", action_mask_dtype=action_mask_dtype) for _ in range(4)]
    )
    assert envs.single_observation_space["observation"].shape == (64,)
    assert envs.single_observation_space["action_mask"].dtype == np.dtype(action_mask_dtype)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        stats = cleanrl_rollout(torch, envs, 400, masked=True, mask_in_obs=True)
    envs.close()
    assert stats["illegal_sampled"] == 0 and not stats["illegal_counted"].any()
    assert stats["episodes"] >= 4 * 400 // 36
    assert illegal_warnings(records) == []


def test_cleanrl_unmasked_rollout_warns_once_per_env_counts_and_truncates(one_torch_thread):
    torch = one_torch_thread
    envs = gym.vector.SyncVectorEnv([make_env() for _ in range(4)])
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        stats = cleanrl_rollout(torch, envs, 600, masked=False)
    envs.close()
    assert stats["illegal_sampled"] > 0
    assert (stats["illegal_counted"] > 0).all()
    assert stats["truncations"] > 0 and set(stats["truncated_at"]) == {100}
    found = illegal_warnings(records)
    assert len(found) == 4, found  # once per sub-env, not once per illegal action
    assert all("action_mask" in message for message in found)  # it says how to fix it


# ------------------------------------------------------------------------------------------------
# 3. Stable-Baselines3: make_vec_env + MaskablePPO + masked evaluation; plain evaluate_policy warns
# ------------------------------------------------------------------------------------------------
def test_sb3_make_vec_env_maskable_ppo_and_evaluation(one_torch_thread):
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy as masked_evaluate_policy
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    venv = make_vec_env("Yacht-v0", n_envs=4, seed=0)
    assert venv.num_envs == 4 and venv.observation_space.shape == (64,)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=64, seed=0).learn(256)
        assert model.num_timesteps == 256
        rewards, lengths = masked_evaluate_policy(
            model, venv, n_eval_episodes=4, use_masking=True, return_episode_rewards=True
        )
    assert illegal_warnings(records) == []  # masked training and evaluation never act illegally
    assert len(rewards) == len(lengths) == 4
    assert np.mean(rewards) >= 0 and all(float(r).is_integer() for r in rewards)
    assert all(12 <= length <= 36 for length in lengths)  # 12 picks, at most 2 re-rolls each
    venv.close()

    env = Monitor(gym.make("Yacht-v0"))
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        evaluate_policy(model, env, n_eval_episodes=1, deterministic=True)
    found = illegal_warnings(records)
    assert len(found) == 1 and "action_mask" in found[0]
    # A deterministic policy that meets an illegal action repeats it on the unchanged state until the
    # episode is truncated at the 100th illegal action: the episode ends, it never hangs.
    assert env.get_episode_lengths()[0] >= 100
    env.close()


# ------------------------------------------------------------------------------------------------
# 4. The native vector env: never an empty mask row, in every autoreset mode
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step", "disabled"])
def test_native_vector_env_masks_never_empty_and_categorical_never_raises(one_torch_thread, autoreset_mode):
    torch = one_torch_thread
    from torch.distributions.categorical import Categorical

    n, steps = 256, 400
    envs = gym.make_vec("Yacht-v0", num_envs=n, autoreset_mode=autoreset_mode)
    assert type(envs).__name__ == "YachtVectorEnv"
    torch.manual_seed(0)
    obs, info = envs.reset(seed=0)
    games = 0
    for _ in range(steps):
        mask = info["action_mask"]
        assert mask.dtype == np.int8 and mask.shape == (n, NUM_ACTIONS)
        assert mask.any(axis=1).all(), "an all-zero mask row"
        logits = torch.zeros(n, NUM_ACTIONS).masked_fill(torch.as_tensor(mask == 0), -1e8)
        actions = Categorical(logits=logits).sample().numpy()  # raises on an all-masked (NaN) row
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert not info["illegal_action"].any() and not truncated.any()
        done = terminated | truncated
        games += int(done.sum())
        if autoreset_mode == "disabled" and done.any():
            assert (info["action_mask"][done] == 1).all()  # waiting games: all True until reset
            obs, reset_info = envs.reset(options={"reset_mask": done})
            assert np.all(reset_info["scores"][done] == -1) and np.all(reset_info["rolls_left"][done] == 2)
            assert np.array_equal(reset_info["scores"][~done], info["scores"][~done])  # the others play on
            info = reset_info
    assert games >= n * steps // 36  # thousands of games
    envs.close()


def test_native_vector_env_disabled_autoreset_stepping_a_finished_game_raises():
    envs = gym.make_vec("Yacht-v0", num_envs=3, autoreset_mode="disabled")
    obs, info = envs.reset(seed=0)
    offsets = np.array([0, 11, 5])
    for turn in range(12):  # score straight away, a new category each turn: each game ends on its 12th pick
        obs, rewards, terminated, truncated, info = envs.step(32 + (offsets + turn) % 12)
        assert not info["illegal_action"].any()
    assert terminated.all()
    with pytest.raises(ValueError, match="reset_mask"):
        envs.step(np.zeros(3, dtype=np.int64))
    obs, info = envs.reset(options={"reset_mask": np.array([True, False, True])})
    with pytest.raises(ValueError, match="reset_mask"):  # game 1 still waits for its reset
        envs.step(np.full(3, 32))
    obs, info = envs.reset(options={"reset_mask": np.array([False, True, False])})
    envs.step(np.full(3, 32))  # all three playing again


@pytest.mark.parametrize(
    "reset_mask",
    [
        np.array([1, 0, 1]),  # not bool
        np.array([True, False]),  # wrong shape
        np.array([[True, False, True]]),
        [True, False, True],  # not an array
        np.zeros(3, dtype=bool),  # all False
    ],
)
def test_native_vector_env_bad_reset_mask_raises(reset_mask):
    envs = gym.make_vec("Yacht-v0", num_envs=3, autoreset_mode="disabled")
    envs.reset(seed=0)
    before = envs.action_masks()
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": reset_mask})
    assert np.array_equal(envs.action_masks(), before)


# ------------------------------------------------------------------------------------------------
# 5. render_mode="rgb_array" and Gymnasium's RenderCollection; an unknown mode warns, never raises
# ------------------------------------------------------------------------------------------------
def test_rgb_array_frames_over_a_whole_game():
    env = gym.make("Yacht-v0", render_mode="rgb_array")
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    frames = [env.render()]
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(uniform_legal(rng, info["action_mask"][None])[0]))
        frames.append(env.render())
        done = terminated or truncated
    assert terminated
    shape = frames[0].shape
    assert len(shape) == 3 and shape[2] == 3 and shape[0] > 0 and shape[1] > 0
    assert all(f.dtype == np.uint8 and f.shape == shape for f in frames)
    assert len({f.tobytes() for f in frames}) > len(frames) // 2  # the picture follows the game
    env.close()


def test_render_collection_collects_every_frame_of_a_game():
    env = gym.wrappers.RenderCollection(gym.make("Yacht-v0", render_mode="rgb_array"))
    obs, info = env.reset(seed=1)
    steps, done = 0, False
    while not done:
        action = env.action_space.sample(mask=info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        done = terminated or truncated
    frames = env.render()
    assert len(frames) == steps + 1  # the reset frame, then one per step
    assert len({f.shape for f in frames}) == 1 and frames[0].dtype == np.uint8 and frames[0].shape[2] == 3
    assert env.render() == []  # popped
    env.close()


@pytest.mark.parametrize("make", [YachtEnv, lambda **kw: gym.make("Yacht-v0", disable_env_checker=True, **kw)])
def test_unknown_render_mode_warns_and_render_returns_none(make):
    with pytest.warns(UserWarning, match="render_mode='rgb'"):
        env = make(render_mode="rgb")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode='rgb'"):
        assert env.render() is None
    env.step(32)  # the env plays on
    env.close()


# ------------------------------------------------------------------------------------------------
# 6. TorchRL (only where it is installed: it is not a dependency of the test extra yet)
# ------------------------------------------------------------------------------------------------
def test_torchrl_gym_env_with_action_mask_rollout(one_torch_thread):
    pytest.importorskip("torchrl")
    torch = one_torch_thread
    from torchrl.envs import ActionMask, TransformedEnv
    from torchrl.envs.libs.gym import GymEnv

    env = TransformedEnv(GymEnv("Yacht-v0", observation_type="masked", action_mask_dtype="bool"), ActionMask())
    env.set_seed(0)
    rollout = env.rollout(200, break_when_any_done=False)
    mask = rollout["action_mask"]
    assert mask.dtype == torch.bool and mask.shape == (200, NUM_ACTIONS)
    assert mask.any(-1).all()
    action = rollout["action"]  # one-hot, drawn by ActionMask-restricted random sampling
    assert (mask & action.bool()).any(-1).all(), "a sampled action outside the mask"
    reward = rollout["next", "reward"].squeeze(-1)
    done = rollout["next", "done"].squeeze(-1)
    assert done.sum() >= 200 // 36
    assert reward.sum() > 0
    env.close()
