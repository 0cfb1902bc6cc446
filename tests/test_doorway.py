"""The multi-agent doorway: what crosses from the envs into the libraries around them.

* Every env gives each info key one dtype: ``Yacht-v0`` (made and unwrapped), the native vector env in its
  autoreset modes, Gymnasium's sync and async vector envs over ``Yacht-v0``, ``YachtVersus-v0`` and its vector
  env, and the PettingZoo env's infos. A one-game env gives numbers as ``np.int64`` scalars and flags as 0-d
  bool arrays; a vector env arrays of the same dtype.
* TorchRL: ``GymEnv("Yacht-v0").auto_register_info_dict()`` registers every info key with that dtype, and a
  batched ``SerialEnv`` (``ParallelEnv`` in the slow run) plays whole legal games with the mask applied.
* The masks through ``gymnasium.make``'s wrappers: ``get_wrapper_attr("action_masks")``, and sb3-contrib's
  ``get_action_masks`` on ``make_vec_env``.
* The PettingZoo env tells an unmasked policy as ``Yacht-v0`` does: one player counts, warns and truncates
  exactly as ``Yacht-v0`` on the same dice.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import yacht_env  # noqa: F401  (registers Yacht-v0 and YachtVersus-v0)
from yacht_env import YachtEnv
from yacht_env.game import game_streams
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusVectorEnv

#: The one dtype of each info key, in every env that has the key.
INFO_DTYPES = {
    "dice": np.int8,
    "rolls_left": np.int64,
    "scores": np.int16,
    "total": np.int64,
    "totals": np.int64,
    "upper": np.int64,
    "armed": np.bool_,
    "action_mask": np.int8,
    "illegal_action": np.bool_,
    "illegal_actions": np.int64,
    "seat": np.int64,
    "player_on_turn": np.int64,
    "winners": np.int8,
    "final_obs": np.float32,
    "final_total": np.int64,
    "final_totals": np.int64,
    "final_seat": np.int64,
}
#: The keys that are one number (or one flag) per game: a 0-d value in a one-game env.
NUMBERS = {"rolls_left", "total", "upper", "illegal_actions", "seat", "player_on_turn"}
FLAGS = {"armed", "illegal_action"}
SOLO_KEYS = {"dice", "rolls_left", "scores", "total", "action_mask", "illegal_action", "illegal_actions"}
FAMILY_KEYS = {"standard": set(), "yahtzee": {"upper", "armed"}}
VERSUS_KEYS = {"dice", "rolls_left", "scores", "totals", "seat", "action_mask", "illegal_action", "illegal_actions"}
TABLE_KEYS = {
    "dice",
    "rolls_left",
    "player_on_turn",
    "scores",
    "totals",
    "illegal_action",
    "illegal_actions",
    "winners",
}
ILLEGAL_WARNING = ".*Yacht: an illegal action was ignored"


def uniform_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One action per row of an (N, A) mask, uniform over the row's legal actions."""
    return np.where(mask.astype(bool), rng.random(mask.shape), -1.0).argmax(axis=1)


def one_game_infos(env: gym.Env, games: int = 2) -> list[dict]:
    """Every info of ``games`` whole games of a one-game Gymnasium env, played uniformly over the legal actions."""
    rng = np.random.default_rng(0)
    infos = []
    for game in range(games):
        _, info = env.reset(seed=game)
        infos.append(info)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(int(uniform_legal(rng, info["action_mask"][None])[0]))
            infos.append(info)
            done = terminated or truncated
        assert terminated and not truncated
    return infos


def vector_infos(envs: gym.vector.VectorEnv, steps: int = 80) -> list[dict]:
    """Every info of ``steps`` uniform legal steps of a vector env (80 steps: every game ends at least twice)."""
    rng = np.random.default_rng(0)
    _, info = envs.reset(seed=0)
    infos = [info]
    for _ in range(steps):
        _, _, terminated, truncated, info = envs.step(uniform_legal(rng, info["action_mask"]))
        assert not truncated.any()
        infos.append(info)
    envs.close()
    return infos


def table_infos(num_players: int, rules: str) -> list[dict]:
    """Every agent's info at every step of a whole game of the PettingZoo env, masked uniform play."""
    from yacht_env.multiplayer import raw_env

    table = raw_env(num_players=num_players, rules=rules)
    table.reset(seed=0)
    rng = np.random.default_rng(0)
    infos = list(table.infos.values())
    for _ in table.agent_iter():
        observation, _, termination, truncation, _ = table.last()
        done = termination or truncation
        table.step(None if done else int(uniform_legal(rng, observation["action_mask"][None])[0]))
        infos += list(table.infos.values())
    return infos


def check_one_game_info(info: dict) -> dict[str, np.dtype]:
    """The dtypes of a one-game env's info, checking that numbers are np.int64 and flags 0-d bool arrays."""
    dtypes = {}
    for key, value in info.items():
        if key in NUMBERS:
            assert type(value) is np.int64, (key, value)
        elif key in FLAGS:
            assert type(value) is np.ndarray and value.shape == (), (key, value)
        else:
            assert type(value) is np.ndarray and value.ndim >= 1, (key, value)
        dtypes[key] = value.dtype
    return dtypes


def check_vector_info(info: dict, n: int) -> dict[str, np.dtype]:
    """The dtypes of a vector env's info: an (n, ...) array per key, each with its all-True ``_key`` mask."""
    dtypes = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        assert type(value) is np.ndarray and value.shape[:1] == (n,), (key, value)
        assert info["_" + key].dtype == np.bool_ and info["_" + key].shape == (n,), key
        dtypes[key] = value.dtype
    return dtypes


def env_dtypes(name: str, rules: str) -> tuple[dict[str, np.dtype], set[str]]:
    """The dtype of each info key an env gives over its infos (one per key: a second one fails), and the keys
    it is expected to give."""
    n = 3
    family = FAMILY_KEYS[rules]
    if name == "Yacht-v0":
        infos, keys, one = one_game_infos(YachtEnv(rules=rules)), SOLO_KEYS | family, True
    elif name == "make(Yacht-v0)":
        infos, keys, one = one_game_infos(gym.make("Yacht-v0", rules=rules)), SOLO_KEYS | family, True
    elif name == "YachtVectorEnv next_step":
        infos, keys, one = vector_infos(YachtVectorEnv(n, rules=rules)), SOLO_KEYS | family, False
    elif name == "YachtVectorEnv same_step":
        envs = YachtVectorEnv(n, rules=rules, autoreset_mode="same_step")
        infos, keys, one = vector_infos(envs), SOLO_KEYS | family | {"final_obs", "final_total"}, False
    elif name == "SyncVectorEnv":
        envs = gym.make_vec("Yacht-v0", num_envs=n, vectorization_mode="sync", rules=rules)
        infos, keys, one = vector_infos(envs), SOLO_KEYS | family, False
    elif name == "AsyncVectorEnv":
        envs = gym.make_vec(
            "Yacht-v0", num_envs=n, vectorization_mode="async", vector_kwargs={"context": "forkserver"}, rules=rules
        )
        infos, keys, one = vector_infos(envs), SOLO_KEYS | family, False
    elif name == "YachtVersus-v0":
        env = gym.make("YachtVersus-v0", opponents=["random"], rules=rules)
        infos, keys, one = one_game_infos(env), VERSUS_KEYS, True
    elif name == "YachtVersusVectorEnv same_step":
        envs = YachtVersusVectorEnv(n, opponents=["random"], rules=rules, autoreset_mode="same_step")
        infos, keys, one = vector_infos(envs), VERSUS_KEYS | {"final_obs", "final_totals", "final_seat"}, False
    else:
        pytest.importorskip("pettingzoo")
        infos, keys, one = table_infos(3, rules), TABLE_KEYS, True
    seen: dict[str, set[np.dtype]] = {}
    for info in infos:
        dtypes = check_one_game_info(info) if one else check_vector_info(info, n)
        for key, dtype in dtypes.items():
            seen.setdefault(key, set()).add(dtype)
    assert all(len(dtypes) == 1 for dtypes in seen.values()), seen  # the same dtype at every step
    return {key: dtypes.pop() for key, dtypes in seen.items()}, keys


ENVS = (
    "Yacht-v0",
    "make(Yacht-v0)",
    "YachtVectorEnv next_step",
    "YachtVectorEnv same_step",
    "SyncVectorEnv",
    "AsyncVectorEnv",
    "YachtVersus-v0",
    "YachtVersusVectorEnv same_step",
    "pettingzoo yacht_v0",
)


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_every_env_gives_each_info_key_one_dtype(rules):
    by_key: dict[str, dict[str, np.dtype]] = {}
    for name in ENVS:
        dtypes, keys = env_dtypes(name, rules)
        assert set(dtypes) == keys, name  # the keys it documents, every one of them seen
        for key, dtype in dtypes.items():
            by_key.setdefault(key, {})[name] = dtype
    assert set(by_key) == set(INFO_DTYPES) - {"upper", "armed"} | FAMILY_KEYS[rules]
    for key, dtypes in by_key.items():
        assert set(dtypes.values()) == {np.dtype(INFO_DTYPES[key])}, (key, dtypes)
    # The keys every solo env shares are in all six of them; the counts and flags in all nine.
    assert len(by_key["total"]) == 6 and len(by_key["illegal_actions"]) == len(by_key["illegal_action"]) == 9


# --------------------------------------------------------------------------------------------------
# TorchRL
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def torchrl_torch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchrl")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield torch
    torch.set_num_threads(threads)


def torchrl_env(**kwargs):
    """``GymEnv("Yacht-v0")`` with its info registered; module level, so ``ParallelEnv`` can pickle it."""
    from torchrl.envs import GymEnv

    env = GymEnv("Yacht-v0", categorical_action_encoding=True, **kwargs)
    with warnings.catch_warnings():
        # TorchRL checks the specs with random, unmasked steps: the env's one illegal-action warning.
        warnings.filterwarnings("ignore", message=ILLEGAL_WARNING, category=UserWarning)
        return env.auto_register_info_dict()


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_torchrl_auto_register_info_dict_registers_every_info_key(torchrl_torch, rules):
    torch = torchrl_torch
    env = torchrl_env(rules=rules)
    spec = env.observation_spec
    keys = SOLO_KEYS | FAMILY_KEYS[rules]
    assert set(spec.keys()) == keys | {"observation"}
    for key in keys:
        expected = getattr(torch, np.dtype(INFO_DTYPES[key]).name)
        assert spec[key].dtype == expected, key
    assert spec["dice"].shape == (5,) and spec["action_mask"].shape == (env.action_spec.space.n,)
    assert spec["total"].shape == spec["illegal_action"].shape == ()
    rollout = env.rollout(10, masked_uniform)
    assert rollout["next", "dice"].dtype == torch.int8 and rollout["next", "total"].dtype == torch.int64
    env.close()


def masked_uniform(td):
    """A random policy with the batch's masks applied: uniform over each row's legal actions."""
    import torch

    td["action"] = torch.multinomial(td["action_mask"].float(), 1).squeeze(-1)
    return td


def torchrl_masked_rollout(torch, batched_env: type, num_envs: int, steps: int):
    envs = batched_env(num_envs, torchrl_env)
    try:
        envs.set_seed(0)
        torch.manual_seed(0)
        return envs.rollout(steps, masked_uniform, break_when_any_done=False)
    finally:
        envs.close()


def check_whole_legal_games(rollout, num_envs: int, steps: int) -> int:
    """Every finished game of each env: 12 picks, 12..36 decisions, rewards summing to its total, never an
    illegal action. Returns the number of finished games."""
    assert rollout.batch_size == (num_envs, steps)
    action, mask = rollout["action"], rollout["action_mask"].bool()
    assert mask.gather(-1, action.unsqueeze(-1)).all()  # every sampled action in its row's mask
    after = rollout["next"]
    assert not after["illegal_action"].any() and (after["illegal_actions"] == 0).all()
    done = after["done"].squeeze(-1)
    assert (done == after["terminated"].squeeze(-1)).all() and not after["truncated"].any()
    reward = after["reward"].squeeze(-1)
    finished = 0
    for e in range(num_envs):
        ends = done[e].nonzero().squeeze(-1).tolist()
        # Each game ends within 36 decisions, so `steps` decisions finish at least steps // 36 games.
        assert len(ends) >= steps // 36
        start = 0
        for end in ends:
            assert 12 <= end + 1 - start <= 36
            assert int((action[e, start : end + 1] >= 32).sum()) == 12  # 12 picks, then the game is over
            assert reward[e, start : end + 1].sum().item() == after["total"][e, end].item()
            assert (after["scores"][e, end] >= 0).all()
            start = end + 1
        finished += len(ends)
    return finished


def test_torchrl_serial_env_masked_rollout_plays_whole_legal_games(torchrl_torch):
    from torchrl.envs import SerialEnv

    rollout = torchrl_masked_rollout(torchrl_torch, SerialEnv, 3, 36 * 3)
    assert check_whole_legal_games(rollout, 3, 36 * 3) >= 9


@pytest.mark.slow  # about 12 s on 2 cores: three worker processes, each importing torch
def test_torchrl_parallel_env_plays_the_serial_envs_games(torchrl_torch):
    from torchrl.envs import ParallelEnv, SerialEnv

    parallel = torchrl_masked_rollout(torchrl_torch, ParallelEnv, 3, 36 * 3)
    assert check_whole_legal_games(parallel, 3, 36 * 3) >= 9
    serial = torchrl_masked_rollout(torchrl_torch, SerialEnv, 3, 36 * 3)
    for key in ("action", ("next", "total"), ("next", "reward"), ("next", "done")):
        assert (parallel[key] == serial[key]).all(), key  # the same seeds: the same games


# --------------------------------------------------------------------------------------------------
# The masks through gymnasium.make's wrappers
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: gym.make("Yacht-v0"),
        lambda: gym.wrappers.RecordEpisodeStatistics(gym.make("Yacht-v0", rules="yahtzee")),
        lambda: gym.make("YachtVersus-v0", opponents=["random"]),
    ],
    ids=["Yacht-v0", "Yacht-v0 yahtzee RecordEpisodeStatistics", "YachtVersus-v0"],
)
def test_made_envs_give_their_masks_through_get_wrapper_attr(make):
    env = make()
    assert isinstance(env, gym.Wrapper)
    with pytest.raises(AttributeError):  # Gymnasium 1.x wrappers do not forward methods (the docs say so)
        env.action_masks()
    action_masks = env.get_wrapper_attr("action_masks")
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    steps, done = 0, False
    while not done:
        masks = action_masks()
        assert masks.dtype == np.bool_ and masks.shape == info["action_mask"].shape
        np.testing.assert_array_equal(masks, info["action_mask"] == 1)
        np.testing.assert_array_equal(env.unwrapped.action_masks(), masks)
        _, _, terminated, truncated, info = env.step(int(uniform_legal(rng, masks[None])[0]))
        assert not info["illegal_action"]
        steps, done = steps + 1, terminated or truncated
    assert terminated and 12 <= steps <= 36 and action_masks().all()  # over: every action allowed


def test_sb3_get_action_masks_on_make_vec_env_reaches_every_env():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env("Yacht-v0", n_envs=3, seed=0)  # a DummyVecEnv of Monitor(gym.make(...)) envs
    rng = np.random.default_rng(0)
    venv.reset()
    episodes = 0
    for _ in range(80):
        masks = get_action_masks(venv)  # env_method("action_masks"), through each env's wrappers
        assert masks.dtype == np.bool_ and masks.shape == (3, 44)
        np.testing.assert_array_equal(masks, np.stack([env.unwrapped.action_masks() for env in venv.envs]))
        _, _, dones, infos = venv.step(uniform_legal(rng, masks))
        assert not any(info["illegal_action"] for info in infos)
        episodes += int(dones.sum())
    assert episodes >= 3 * 80 // 36
    venv.close()


# --------------------------------------------------------------------------------------------------
# The PettingZoo env tells an unmasked policy, as Yacht-v0 does
# --------------------------------------------------------------------------------------------------
def test_one_player_table_counts_warns_and_truncates_as_yacht_v0():
    pytest.importorskip("pettingzoo")
    from yacht_env.multiplayer import raw_env

    stream = game_streams(0, [0])[0]
    table = raw_env(num_players=1, illegal_action_penalty=-1.0, max_illegal_actions=20)
    solo = YachtEnv(illegal_action_penalty=-1.0, max_illegal_actions=20)
    table.reset(options={"dice_stream": stream[None]})
    _, info = solo.reset(options={"dice_stream": stream})
    rng = np.random.default_rng(0)
    illegal = 0
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for _ in table.agent_iter():
            _, _, termination, truncation, table_info = table.last()
            assert table_info["illegal_action"] == info["illegal_action"]
            assert type(table_info["illegal_actions"]) is np.int64
            assert table_info["illegal_actions"] == info["illegal_actions"]
            if termination or truncation:
                table.step(None)
                continue
            action = int(rng.integers(44))  # unmasked: about one action in two is illegal
            _, reward, terminated, truncated, info = solo.step(action)
            table.step(action)
            illegal += int(info["illegal_action"])
            assert table.rewards["player_0"] == reward
            assert (table.terminations["player_0"], table.truncations["player_0"]) == (terminated, truncated)
    assert truncated and illegal == info["illegal_actions"] == 20  # the 20th illegal action truncates both
    found = [str(r.message) for r in records if "an illegal action was ignored" in str(r.message)]
    assert len(found) == 2 and len(records) == 2  # one each: Yacht-v0's, then the table's naming its agent
    assert "(the first: player_0, " in found[1] and "observation['action_mask']" in found[1]
