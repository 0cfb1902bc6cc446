"""Specification of ``YachtEnv``: API conformance, game invariants, determinism, illegal actions, rendering.

The contract is the ``YachtEnv`` class docstring; game facts come from the rules page (docs/rules.md).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from functools import cache

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import yacht_env
from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder

#: One encoder for every decode: building one costs more than a game step.
ENCODER = ObservationEncoder()

PRESET_NAMES = ("standard", "classic")
OBSERVATION_TYPES = ("flat", "dict", "masked")
NAMES = R.CATEGORIES
INFO_KEYS = {"dice", "rolls_left", "scores", "total", "action_mask", "illegal_action", "illegal_actions"}


def pick(name: str) -> int:
    """The action that scores category ``name``."""
    return 32 + NAMES.index(name)


def worked_stream() -> np.ndarray:
    """A dice stream whose first turn is the worked turn of the rules page (docs/rules.md); the other turns are
    seeded noise.

    First roll 1-2-2-4-6; keeping the 2s (sorted positions 1, 2: mask 6) re-rolls three dice to 4-4-6;
    keeping the 4s of 2-2-4-4-6 (positions 2, 3: mask 12) re-rolls three dice to 1-4-4. The re-rolled
    dice are each row's first three values (and, the same here, the values at the re-rolled positions).
    """
    stream = np.random.default_rng(12).integers(1, 7, size=(12, 3, 5))
    stream[0, 0] = [6, 2, 1, 4, 2]  # any order: the env shows the dice sorted
    stream[0, 1] = [4, 4, 6, 4, 6]
    stream[0, 2] = [1, 4, 4, 3, 4]
    return stream


@cache
def canonical_masks(dice: tuple[int, ...]) -> frozenset[int]:
    """Brute force: the smallest keep-mask of each kept multiset of ``dice``, without 31."""
    first: dict[tuple[int, ...], int] = {}
    for m in range(31):
        first.setdefault(tuple(d for i, d in enumerate(dice) if m >> i & 1), m)
    return frozenset(first.values())


def expected_action_mask(info: dict, canonical_keeps: bool = True) -> np.ndarray:
    """The legal actions of the state in ``info``, restated from the class docstring."""
    if all(points is not None for points in scores_of(info).values()):
        return np.ones(44, dtype=np.int8)  # the game is over: every action allowed, never an empty row
    mask = np.zeros(44, dtype=np.int8)
    if info["rolls_left"] > 0:
        for m in range(31):
            mask[m] = m in canonical_masks(dice_of(info)) or not canonical_keeps
    for k, name in enumerate(NAMES):
        mask[32 + k] = scores_of(info)[name] is None
    return mask


def expected_flat_obs(info: dict, rules: str) -> np.ndarray:
    """The flat observation of the state in ``info``, per the layout table in ``encoding.py``."""
    dice, scores = dice_of(info), scores_of(info)
    obs = np.zeros(64)
    for i, face in enumerate(dice):
        obs[6 * i + face - 1] = 1
    counts = Counter(dice)
    obs[30:36] = [counts[face] / 5 for face in range(1, 7)]
    obs[36 + info["rolls_left"]] = 1
    score_now = R.score_table(rules)[R.roll_index(dice)]  # checked exhaustively in test_rules.py
    for k, name in enumerate(NAMES):
        if scores[name] is None:
            obs[39 + k] = score_now[k] / 50
            obs[51 + k] = 1
    obs[63] = sum(score is None for score in scores.values()) / 12
    return obs


def open_mask_of(info: dict) -> int:
    return sum(1 << k for k, name in enumerate(NAMES) if scores_of(info)[name] is None)


def dice_of(info: dict) -> tuple[int, ...]:
    """``info["dice"]`` (an int8 array) as a tuple, to compare with expected dice."""
    return tuple(info["dice"].tolist())


def scores_of(info: dict) -> dict[str, int | None]:
    """``info["scores"]`` (int16, -1 while open) as a dict category name -> points, ``None`` while open."""
    return {name: None if points < 0 else points for name, points in zip(NAMES, info["scores"].tolist(), strict=True)}


def flag(value) -> bool:
    """An info flag as a Python bool, checking its type: a 0-d bool array (``Yacht-v0``'s Information)."""
    assert isinstance(value, np.ndarray) and value.dtype == np.bool_ and value.shape == (), repr(value)
    return bool(value)


def check_state(env: YachtEnv, obs, info: dict, canonical_keeps: bool = True) -> None:
    """Everything that must hold of one (observation, info) pair of a live or just-finished game."""
    assert set(info) == INFO_KEYS
    # Numpy values only, one dtype per key (numbers np.int64, flags 0-d bool arrays), so that every vector env
    # and library batches them (tests/test_doorway.py checks every env agrees).
    assert info["dice"].dtype == np.int8 and info["dice"].shape == (5,)
    assert info["scores"].dtype == np.int16 and info["scores"].shape == (12,) and (info["scores"] >= -1).all()
    dice = dice_of(info)
    assert len(dice) == 5 and list(dice) == sorted(dice)
    assert all(1 <= d <= 6 for d in dice)
    assert info["rolls_left"] in (0, 1, 2) and type(info["rolls_left"]) is np.int64
    assert type(info["total"]) is np.int64
    flag(info["illegal_action"])  # a 0-d bool array
    assert type(info["illegal_actions"]) is np.int64 and info["illegal_actions"] >= int(info["illegal_action"])
    assert all(score is None or type(score) is int for score in scores_of(info).values())
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == (44,)
    env_mask = env.action_masks()
    assert env_mask.dtype == bool and env_mask.shape == (44,)
    np.testing.assert_array_equal(mask, env_mask)
    np.testing.assert_array_equal(mask, expected_action_mask(info, canonical_keeps))
    assert env.observation_space.contains(obs)
    if env.observation_type == "masked":  # the mask where PettingZoo and Tianshou look, then the flat layout
        assert set(obs) == {"observation", "action_mask"}
        assert obs["action_mask"].dtype == np.dtype(env.action_mask_dtype) and obs["action_mask"].shape == (44,)
        np.testing.assert_array_equal(obs["action_mask"], info["action_mask"])
        obs = obs["observation"]
    if env.observation_type in ("flat", "masked"):
        roll, rolls_left, open_mask, upper, armed = ENCODER.decode(obs)
        assert (upper, armed) == (0, 0)  # Yacht has no bonus state
        assert R.ROLL_TUPLES[int(roll)] == dice
        assert int(rolls_left) == info["rolls_left"]
        assert int(open_mask) == open_mask_of(info)
        np.testing.assert_allclose(obs, expected_flat_obs(info, env.rules.name), rtol=0, atol=1e-6)
    else:
        assert obs["dice"].tolist() == list(dice)
        assert int(obs["rolls_left"]) == info["rolls_left"]
        assert obs["open_categories"].tolist() == [int(scores_of(info)[name] is None) for name in NAMES]


def play_random_legal_game(env: YachtEnv, seed: int, canonical_keeps: bool = True) -> int:
    """Plays one game with actions uniform over ``info["action_mask"]``, checking every step.

    Returns:
        The number of steps the game took.
    """
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    check_state(env, obs, info, canonical_keeps)
    assert info["rolls_left"] == 2 and info["total"] == 0 and flag(info["illegal_action"]) is False
    assert all(score is None for score in scores_of(info).values())
    rewards, picks, rolls_this_turn, steps = [], 0, 1, 0
    terminated = False
    while not terminated:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        before = info
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        check_state(env, obs, info, canonical_keeps)
        assert type(reward) is float
        assert truncated is False and flag(info["illegal_action"]) is False
        if action < 32:
            rolls_this_turn += 1
            assert rolls_this_turn <= 3
            assert info["rolls_left"] == before["rolls_left"] - 1
            kept = [d for i, d in enumerate(dice_of(before)) if action >> i & 1]
            assert not Counter(kept) - Counter(dice_of(info)), (dice_of(before), action, dice_of(info))
            assert reward == 0.0 and not terminated
            assert scores_of(info) == scores_of(before) and info["total"] == before["total"]
        else:
            name = NAMES[action - 32]
            picks += 1
            assert reward == yacht_env.score(dice_of(before), name, env.rules)
            assert scores_of(info) == {**scores_of(before), name: reward}
            assert info["total"] == before["total"] + reward
            assert terminated == (picks == 12)
            if not terminated:  # the next turn's first roll is automatic
                assert info["rolls_left"] == 2
                rolls_this_turn = 1
        rewards.append(reward)
    assert picks == 12 and steps <= 36
    assert sum(rewards) == info["total"] == sum(scores_of(info).values())
    assert info["action_mask"].all()  # the game is over: every action allowed, never an empty row
    return steps


def first_legal(info: dict) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


def play_out(env: YachtEnv, info: dict) -> list:
    """Finishes a game with the first legal action each step; returns the trajectory."""
    trajectory, terminated = [], False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(first_legal(info))
        trajectory.append((obs, reward, terminated, truncated, info))
    return trajectory


def assert_same_obs(a, b) -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    else:
        np.testing.assert_array_equal(a, b)


def assert_same_info(a: dict, b: dict, ignore: tuple[str, ...] = ()) -> None:
    assert a.keys() == b.keys()
    for key in a.keys() - set(ignore):
        if isinstance(a[key], np.ndarray):
            assert a[key].dtype == b[key].dtype, key
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        else:
            assert a[key] == b[key], key


def assert_same_trajectory(a: list, b: list, ignore: tuple[str, ...] = ()) -> None:
    assert len(a) == len(b)
    for (obs_a, *middle_a, info_a), (obs_b, *middle_b, info_b) in zip(a, b, strict=True):
        assert_same_obs(obs_a, obs_b)
        assert middle_a == middle_b
        assert_same_info(info_a, info_b, ignore)


# --------------------------------------------------------------------------------------------------
# 1. API conformance
# --------------------------------------------------------------------------------------------------
def _checker_params():
    for observation_type in OBSERVATION_TYPES:
        for preset in PRESET_NAMES:
            yield pytest.param(preset, observation_type, id=f"{preset}-{observation_type}")


def allow_the_illegal_action_warning() -> None:
    """The checkers step actions sampled without masks: the env's one documented warning about that (the
    first illegal action of an env) is expected; every other warning stays an error."""
    warnings.filterwarnings("ignore", message=".*Yacht: an illegal action was ignored", category=UserWarning)


@pytest.mark.parametrize(("preset", "observation_type"), list(_checker_params()))
def test_gymnasium_env_checker_passes_without_warnings(preset, observation_type):
    # Made through gymnasium.make so the env has a spec (the checker warns otherwise), then unwrapped.
    env = gym.make("Yacht-v0", rules=preset, observation_type=observation_type).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        allow_the_illegal_action_warning()
        gym_check_env(env)


@pytest.mark.parametrize(("preset", "observation_type"), list(_checker_params()))
def test_sb3_env_checker_passes_without_warnings(preset, observation_type):
    sb3_check_env = pytest.importorskip("stable_baselines3.common.env_checker").check_env  # the train extra
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        allow_the_illegal_action_warning()
        sb3_check_env(YachtEnv(rules=preset, observation_type=observation_type), warn=True)


def test_dict_observation_rolls_left_is_a_scalar():
    obs, _ = YachtEnv(observation_type="dict").reset(seed=0)
    assert isinstance(obs["rolls_left"], (int, np.integer))


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_gymnasium_make(preset):
    env = gym.make("Yacht-v0", rules=preset)
    assert env.spec.id == "Yacht-v0"
    assert isinstance(env.unwrapped, YachtEnv)
    assert env.unwrapped.rules is yacht_env.PRESETS[preset]
    assert env.action_space == gym.spaces.Discrete(44)
    assert env.observation_space == gym.spaces.Box(0.0, 1.0, (64,), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # through the passive checker, a whole game without a warning
        _, info = env.reset(seed=5)
        np.testing.assert_array_equal(env.get_wrapper_attr("action_masks")(), info["action_mask"])
        total, terminated = 0.0, False
        while not terminated:
            _, reward, terminated, truncated, info = env.step(first_legal(info))
            assert not truncated
            total += reward
    assert total == info["total"]


def test_gymnasium_make_default_is_standard_flat():
    env = gym.make("Yacht-v0").unwrapped
    assert env.rules is yacht_env.PRESETS["standard"]
    assert env.observation_type == "flat"
    assert env.canonical_keeps is True
    assert env.illegal_action == "ignore"
    assert env.illegal_action_penalty == 0.0
    assert env.max_illegal_actions == 100
    assert env.render_mode is None


def test_dict_observation_space():
    space = YachtEnv(observation_type="dict").observation_space
    assert isinstance(space, gym.spaces.Dict)
    assert space["dice"] == gym.spaces.Box(1, 6, (5,), np.int8)
    assert space["rolls_left"] == gym.spaces.Discrete(3)
    assert space["open_categories"] == gym.spaces.MultiBinary(12)


def test_custom_rules_observation_stays_in_space():
    env = YachtEnv(rules=yacht_env.Rules("big_yacht", yacht=100))
    obs, _ = env.reset(options={"dice_stream": np.full((12, 3, 5), 6)})
    assert env.observation_space.contains(obs)


# --------------------------------------------------------------------------------------------------
# 2-3. Invariants over many seeded random legal games
# --------------------------------------------------------------------------------------------------
GAMES_PER_CASE = 500  # x 4 cases = 2,000 games


@pytest.mark.parametrize(
    ("preset", "observation_type"),
    [
        # classic's flat and masked games run with -m slow (its dict games here; standard's every type)
        pytest.param(preset, kind, marks=pytest.mark.slow) if preset == "classic" and kind != "dict" else (preset, kind)
        for preset in PRESET_NAMES
        for kind in OBSERVATION_TYPES
    ],
)
def test_invariants_over_random_legal_games(preset, observation_type):
    """At most 3 rolls a turn, kept dice stay, 12 picks, rewards = score(), masks = rules, obs = state."""
    env = YachtEnv(rules=preset, observation_type=observation_type)
    steps = [play_random_legal_game(env, seed) for seed in range(GAMES_PER_CASE)]
    assert max(steps) <= 36 and min(steps) >= 12


def test_all_keeps_but_31_legal_without_canonical_keeps():
    env = YachtEnv(canonical_keeps=False)
    for seed in range(50):
        play_random_legal_game(env, seed, canonical_keeps=False)
    _, info = env.reset(options={"dice_stream": worked_stream()})
    assert info["action_mask"][:32].tolist() == [1] * 31 + [0]
    # Keeping the second 2 only (mask 4) is legal now, and equals keeping the first 2 (mask 2).
    _, _, _, _, info_4 = env.step(4)
    assert flag(info_4["illegal_action"]) is False and info_4["rolls_left"] == 1
    _, info = env.reset(options={"dice_stream": worked_stream()})
    _, _, _, _, info_2 = env.step(2)
    assert dice_of(info_4) == dice_of(info_2)


# --------------------------------------------------------------------------------------------------
# 4. Determinism and dice streams
# --------------------------------------------------------------------------------------------------
def record(env: YachtEnv, seed: int | None, action_seed: int = 0, options: dict | None = None) -> list:
    """A whole game with seeded random legal actions, as (obs, reward, terminated, truncated, info)s."""
    rng = np.random.default_rng(action_seed)
    obs, info = env.reset(seed=seed, options=options)
    trajectory, terminated = [(obs, 0.0, False, False, info)], False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        trajectory.append((obs, reward, terminated, truncated, info))
    return trajectory


@pytest.mark.parametrize("observation_type", OBSERVATION_TYPES)
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_same_seed_same_game(preset, observation_type):
    for seed in range(5):
        a = record(YachtEnv(rules=preset, observation_type=observation_type), seed, action_seed=seed)
        b = record(YachtEnv(rules=preset, observation_type=observation_type), seed, action_seed=seed)
        assert_same_trajectory(a, b)


def test_same_seed_same_game_on_one_instance_and_through_make():
    env = YachtEnv()
    a = record(env, 11)
    assert_same_trajectory(a, record(env, 11))
    assert_same_trajectory(a, record(gym.make("Yacht-v0").unwrapped, 11))


def test_different_seeds_different_games():
    games = [record(YachtEnv(), seed) for seed in range(5)]
    dice = [tuple(dice_of(step[-1]) for step in game) for game in games]
    assert len(set(dice)) == 5
    # An unseeded reset continues the generator: a new game, not a replay of the seeded one.
    env = YachtEnv()
    first = record(env, 3)
    second = record(env, None)
    assert [dice_of(s[-1]) for s in first] != [dice_of(s[-1]) for s in second]


@pytest.mark.parametrize(("preset", "points"), [("standard", 16), ("classic", 17)])
def test_dice_stream_plays_the_worked_turn(preset, points):
    env = YachtEnv(rules=preset)
    stream = worked_stream()
    _, info = env.reset(options={"dice_stream": stream})
    assert (dice_of(info), info["rolls_left"]) == ((1, 2, 2, 4, 6), 2)
    assert info["action_mask"][6] == 1  # keep the 2s
    _, reward, _, _, info = env.step(6)
    assert (dice_of(info), info["rolls_left"], reward) == ((2, 2, 4, 4, 6), 1, 0.0)
    assert info["action_mask"][12] == 1  # keep the 4s
    _, reward, _, _, info = env.step(12)
    assert (dice_of(info), info["rolls_left"], reward) == ((1, 4, 4, 4, 4), 0, 0.0)
    assert not info["action_mask"][:32].any()
    _, reward, terminated, _, info = env.step(pick("four_of_a_kind"))
    assert reward == points and not terminated
    assert scores_of(info)["four_of_a_kind"] == points and info["total"] == points
    assert dice_of(info) == tuple(sorted(stream[1, 0].tolist())) and info["rolls_left"] == 2


def test_dice_stream_is_played_exactly():
    """Turn ``t`` opens with ``stream[t, 0]``; the ``n`` dice of the ``j``-th re-roll are ``stream[t, j, :n]``."""
    for game in range(20):
        rng = np.random.default_rng(100 + game)
        stream = rng.integers(1, 7, size=(12, 3, 5))
        env = YachtEnv(rules=PRESET_NAMES[game % 2])
        # Also as nested lists, and a seed does not override the stream.
        _, info = env.reset(seed=game, options={"dice_stream": stream.tolist()})
        turn, roll_of_turn, terminated = 0, 0, False
        assert dice_of(info) == tuple(sorted(stream[0, 0].tolist()))
        while not terminated:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            before = dice_of(info)
            _, _, terminated, _, info = env.step(action)
            if action < 32:
                roll_of_turn += 1
                kept = [d for i, d in enumerate(before) if action >> i & 1]
                fresh = stream[turn, roll_of_turn, : 5 - len(kept)].tolist()
                assert dice_of(info) == tuple(sorted(kept + fresh))
            elif not terminated:
                turn, roll_of_turn = turn + 1, 0
                assert dice_of(info) == tuple(sorted(stream[turn, 0].tolist()))
        assert turn == 11


def test_dice_stream_overrides_the_seed():
    options = {"dice_stream": worked_stream()}
    assert_same_trajectory(record(YachtEnv(), 1, options=options), record(YachtEnv(), 2, options=options))


@pytest.mark.parametrize(
    "stream",
    [
        np.ones((12, 3, 4), dtype=int),
        np.ones((11, 3, 5), dtype=int),
        np.ones((3, 5), dtype=int),
        np.ones((1, 12, 3, 5), dtype=int),
        np.zeros((12, 3, 5), dtype=int),
        np.full((12, 3, 5), 7),
        np.where(np.arange(180).reshape(12, 3, 5) == 179, -1, 1),
        np.ones((12, 3, 5)),  # floats
        np.ones((12, 3, 5), dtype=bool),
        "123",
        None,
        [[1, 2], [3]],
    ],
    ids=[
        "short-rows",
        "11-turns",
        "2d",
        "4d",
        "zeros",
        "sevens",
        "one-negative",
        "float",
        "bool",
        "str",
        "none",
        "ragged",
    ],
)
def test_bad_dice_stream_raises(stream):
    message = "dice_stream must be an int array of shape (12, 3, 5) with values in 1..6"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        YachtEnv().reset(options={"dice_stream": stream})


@pytest.mark.parametrize(
    ("options", "unknown"),
    [
        ({"foo": 1}, "['foo']"),
        ({"dice_stream": worked_stream(), "seed": 3}, "['seed']"),
        ({"b": 0, "a": 0}, "['a', 'b']"),
    ],
)
def test_unknown_reset_option_raises(options, unknown):
    message = f"unknown reset options {unknown}; accepted: ['dice_stream']"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        YachtEnv().reset(options=options)


# --------------------------------------------------------------------------------------------------
# 5. Illegal actions
# --------------------------------------------------------------------------------------------------
#: kind -> (legal actions that reach the state from worked_stream(), the illegal action, why)
ILLEGAL = {
    "keep_all": ([], 31, "action 31 keeps all five dice and re-rolls nothing"),
    "non_canonical_keep": (
        [],  # 1-2-2-4-6: keeping the second 2 (mask 4) is keeping one 2, whose canonical mask is 2
        4,
        "action 4 keeps the same dice as mask 2; with canonical_keeps=True only the smallest mask of each "
        "kept multiset is legal",
    ),
    "keep_without_rolls_left": ([6, 12], 0, "action 0 is a keep-mask but no re-rolls are left this turn"),
    "pick_filled": ([pick("ones")], pick("ones"), "action 32 scores 'ones', which is already filled"),
}


def illegal_warning(reason: str) -> str:
    """A ``pytest.warns`` match for the env's one warning about ignored illegal actions (at an env's first)."""
    return rf"Yacht: an illegal action was ignored \(the state did not change.*\(the first: {re.escape(reason)}\)"


def reach(kind: str, **kwargs):
    env = YachtEnv(**kwargs)
    obs, info = env.reset(options={"dice_stream": worked_stream()})
    for action in ILLEGAL[kind][0]:
        obs, _, _, _, info = env.step(action)
    assert info["action_mask"][ILLEGAL[kind][1]] == 0
    return env, obs, info


@pytest.mark.parametrize("penalty", [0.0, -1.0])
@pytest.mark.parametrize("kind", ILLEGAL)
def test_illegal_action_is_ignored(kind, penalty):
    env, obs, info = reach(kind, illegal_action_penalty=penalty)
    twin, _, twin_info = reach(kind)
    action = ILLEGAL[kind][1]
    with pytest.warns(UserWarning, match=illegal_warning(ILLEGAL[kind][2])):
        for _ in range(3):
            new_obs, reward, terminated, truncated, new_info = env.step(action)
            assert reward == penalty and type(reward) is float
            assert (terminated, truncated) == (False, False)
            assert flag(new_info["illegal_action"]) is True
            assert new_info["illegal_actions"] == info["illegal_actions"] + 1
            info = {**info, "illegal_actions": new_info["illegal_actions"]}
            assert_same_obs(new_obs, obs)
            assert_same_info(new_info, info, ignore=("illegal_action",))
            assert new_info["total"] == info["total"]
    # Nothing was consumed: the rest of the game is the game the twin plays without the illegal steps,
    # with the episode's count of illegal actions at 3 to the end.
    rest = play_out(env, info)
    assert all(step[-1]["illegal_actions"] == 3 for step in rest)
    assert_same_trajectory(rest, play_out(twin, twin_info), ignore=("illegal_actions",))


@pytest.mark.parametrize("kind", ILLEGAL)
def test_illegal_action_raises_with_reason(kind):
    env, _, info = reach(kind, illegal_action="raise")
    twin, _, twin_info = reach(kind)
    action, reason = ILLEGAL[kind][1:]
    assert str(action) in reason
    with pytest.raises(ValueError, match=f"^{re.escape(reason)}$"):
        env.step(action)
    np.testing.assert_array_equal(env.action_masks(), info["action_mask"])
    assert_same_trajectory(play_out(env, info), play_out(twin, twin_info))


@pytest.mark.parametrize("limit", [1, 3, 7])
def test_max_illegal_actions_truncates_on_the_nth(limit):
    env = YachtEnv(max_illegal_actions=limit)
    with pytest.warns(UserWarning, match=illegal_warning(ILLEGAL["keep_all"][2])):
        for game in range(2):  # the count starts again at reset
            _, info = env.reset(seed=game)
            for n in range(1, limit + 1):
                if n == 2:  # legal actions in between do not reset the count: it is per episode
                    _, _, _, _, info = env.step(first_legal(info))
                _, reward, terminated, truncated, info = env.step(31)
                assert flag(info["illegal_action"]) is True and reward == 0.0
                assert (terminated, truncated) == (False, n == limit)
            assert info["action_mask"].all()  # over: every action allowed, never an empty row
            with pytest.raises(ValueError, match=r"^the episode is over; call reset\(\) before step\(\)$"):
                env.step(pick("ones"))


def test_all_illegal_loop_ends_by_truncation_with_defaults():
    env = YachtEnv()
    env.reset(seed=0)
    truncated, steps = False, 0
    with pytest.warns(UserWarning, match=illegal_warning(ILLEGAL["keep_all"][2])):
        while not truncated and steps < 10_000:
            _, _, terminated, truncated, _ = env.step(31)
            assert not terminated
            steps += 1
    assert truncated and steps == 100


def test_no_illegal_limit_never_truncates():
    env = YachtEnv(max_illegal_actions=None)
    _, info = env.reset(seed=0)
    with pytest.warns(UserWarning, match=illegal_warning(ILLEGAL["keep_all"][2])):
        for _ in range(500):
            _, _, _, truncated, _ = env.step(31)
            assert not truncated
    assert play_out(env, info)[-1][2]  # the game still ends normally


@pytest.mark.parametrize("action", [44, -1, 100, "a", 1.5, None, "32"])
def test_out_of_space_action_raises(action):
    env = YachtEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=f"^{re.escape(f'action must be an int in 0..43, got {action!r}')}$"):
        env.step(action)


@pytest.mark.parametrize("action", [np.int64(32), np.int32(32), np.array(32), np.uint8(32)])
def test_numpy_integer_actions_accepted(action):
    env = YachtEnv()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(action)
    assert scores_of(info)["ones"] == reward and not info["illegal_action"]


def test_step_after_termination_or_before_reset_raises():
    message = r"^the episode is over; call reset\(\) before step\(\)$"
    env = YachtEnv()
    with pytest.raises(ValueError, match=message):
        env.step(32)
    _, info = env.reset(seed=0)
    assert play_out(env, info)[-1][2]
    with pytest.raises(ValueError, match=message):
        env.step(32)
    assert env.action_masks().all()
    env.reset(seed=1)  # and reset starts a new game
    env.step(32)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"rules": "nope"},
            "unknown rules 'nope'; expected one of ['classic', 'clubhouse', 'knizia', 'standard', 'yahtzee', "
            "'yahtzee_forced_joker', 'yahtzee_no_bonus', 'yahtzee_no_joker', 'yatzy'] or a Rules object",
        ),
        ({"observation_type": "x"}, "observation_type must be one of ('flat', 'dict', 'masked'), got 'x'"),
        ({"observation_type": ["flat"]}, "observation_type must be one of ('flat', 'dict', 'masked'), got ['flat']"),
        ({"observation_type": None}, "observation_type must be one of ('flat', 'dict', 'masked'), got None"),
        ({"action_mask_dtype": "float32"}, "action_mask_dtype must be one of ('int8', 'bool'), got 'float32'"),
        ({"canonical_keeps": "no"}, "canonical_keeps must be True or False, got 'no'"),
        ({"canonical_keeps": 1}, "canonical_keeps must be True or False, got 1"),
        ({"illegal_action": "x"}, "illegal_action must be one of ('ignore', 'raise'), got 'x'"),
        ({"max_illegal_actions": 0}, "max_illegal_actions must be a positive int or None, got 0"),
        ({"max_illegal_actions": -5}, "max_illegal_actions must be a positive int or None, got -5"),
        ({"max_illegal_actions": True}, "max_illegal_actions must be a positive int or None, got True"),
        ({"max_illegal_actions": 2.5}, "max_illegal_actions must be a positive int or None, got 2.5"),
        ({"illegal_action_penalty": float("nan")}, "illegal_action_penalty must be a finite number, got nan"),
        ({"illegal_action_penalty": "x"}, "illegal_action_penalty must be a finite number, got 'x'"),
        ({"illegal_action_penalty": 10**400}, f"illegal_action_penalty must be a finite number, got {10**400!r}"),
        ({"illegal_action_penalty": True}, "illegal_action_penalty must be a finite number, got True"),
    ],
)
def test_bad_constructor_args_raise(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        YachtEnv(**kwargs)


# --------------------------------------------------------------------------------------------------
# 6. Rendering
# --------------------------------------------------------------------------------------------------
def _line(text: str, word: str) -> str:
    lines = [line for line in text.splitlines() if word in line.split()]
    assert len(lines) == 1, (word, text)
    return lines[0]


def test_render_ansi_shows_the_sheet():
    env = YachtEnv(render_mode="ansi")
    _, info = env.reset(options={"dice_stream": worked_stream()})
    text = env.render()
    assert isinstance(text, str)
    assert "1 2 2 4 6" in text and "rolls left: 2" in text
    for name in NAMES:
        _line(text, name)
    assert _line(text, "total").split()[-1] == "0"
    for action in (6, 12, pick("four_of_a_kind")):
        _, _, _, _, info = env.step(action)
    text = env.render()
    assert " ".join(str(d) for d in dice_of(info)) in text and "rolls left: 2" in text
    assert "16" in _line(text, "four_of_a_kind").split()
    assert _line(text, "total").split()[-1] == "16"
    _, _, _, _, info = env.step(12)  # a keep: the rendering follows the state
    text = env.render()
    assert " ".join(str(d) for d in dice_of(info)) in text and "rolls left: 1" in text


def test_render_human_prints_the_sheet(capsys):
    ansi = YachtEnv(render_mode="ansi")
    human = YachtEnv(render_mode="human")
    ansi.reset(options={"dice_stream": worked_stream()})
    human.reset(options={"dice_stream": worked_stream()})
    assert capsys.readouterr().out == ansi.render() + "\n"  # reset prints
    ansi.step(6)
    human.step(6)
    assert capsys.readouterr().out == ansi.render() + "\n"  # so does step
    assert human.render() is None
    assert capsys.readouterr().out == ansi.render() + "\n"


def test_render_without_mode_warns():
    env = YachtEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


# --------------------------------------------------------------------------------------------------
# 7. Observation layout, index by index
# --------------------------------------------------------------------------------------------------
def layout_state() -> tuple[YachtEnv, YachtEnv]:
    """Two envs (flat, dict) at: sixes and choice filled, dice 3-3-3-6-6, one re-roll left."""
    stream = worked_stream()
    stream[1, 0] = [5, 5, 5, 5, 5]
    stream[2, 0] = [6, 3, 6, 3, 3]
    stream[2, 1] = [6, 6, 1, 1, 1]  # keeping the 3s (mask 7) re-rolls two dice: 6-6
    envs = YachtEnv(), YachtEnv(observation_type="dict")
    for env in envs:
        env.reset(options={"dice_stream": stream})
        for action in (pick("sixes"), pick("choice"), 7):
            *_, info = env.step(action)
        assert (dice_of(info), info["rolls_left"], info["total"]) == ((3, 3, 3, 6, 6), 1, 6 + 25)
    return envs


def test_flat_observation_layout():
    flat_env, _ = layout_state()
    obs = flat_env._get_obs()
    assert obs.dtype == np.float32 and obs.shape == (64,)
    expected = {
        # [0:30] sorted dice one-hot at 6 * i + face - 1: dice 3, 3, 3, 6, 6
        2: 1.0,
        8: 1.0,
        14: 1.0,
        23: 1.0,
        29: 1.0,
        # [30:36] face counts / 5: three 3s, two 6s
        32: 3 / 5,
        35: 2 / 5,
        # [36:39] rolls left one-hot: 1
        37: 1.0,
        # [39:51] score now / 50 of the open ones: threes 9, full house 21 (sixes 12 and choice 21 are
        # filled, so 0); everything else scores 0 on 3-3-3-6-6
        41: 9 / 50,
        45: 21 / 50,
        # [51:63] open categories: all but sixes (56) and choice (61)
        **{51 + k: 1.0 for k in range(12) if k not in (5, 10)},
        # [63] fraction of categories open
        63: 10 / 12,
    }
    for index in range(64):
        assert obs[index] == pytest.approx(expected.get(index, 0.0), abs=1e-7), f"obs[{index}]"


def test_dict_observation_layout():
    _, dict_env = layout_state()
    obs = dict_env._get_obs()
    assert obs.keys() == {"dice", "rolls_left", "open_categories"}
    assert obs["dice"].dtype == np.int8 and obs["dice"].tolist() == [3, 3, 3, 6, 6]
    assert int(obs["rolls_left"]) == 1
    assert obs["open_categories"].dtype == np.int8
    assert obs["open_categories"].tolist() == [1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1]


@pytest.mark.parametrize(("preset", "points"), [("standard", 16), ("classic", 17)])
def test_flat_observation_score_now_follows_the_preset(preset, points):
    env = YachtEnv(rules=preset)
    env.reset(options={"dice_stream": worked_stream()})
    obs, *_ = env.step(6)
    obs, *_ = env.step(12)  # 1-4-4-4-4
    assert obs[39 + 7] == pytest.approx(points / 50)
    assert obs[39 + 3] == pytest.approx(16 / 50)  # fours
    assert obs[39 + 10] == pytest.approx(17 / 50)  # choice
    assert obs[36:39].tolist() == [1.0, 0.0, 0.0]


# --------------------------------------------------------------------------------------------------
# 8. MaskablePPO end to end, on the registered env with no wrapper code
# --------------------------------------------------------------------------------------------------
def test_maskable_ppo_smoke():
    torch = pytest.importorskip("torch")
    MaskablePPO = pytest.importorskip("sb3_contrib").MaskablePPO  # noqa: N806 - the class, by its name
    from stable_baselines3.common.callbacks import BaseCallback

    class CountIllegal(BaseCallback):
        illegal = steps = 0

        def _on_step(self) -> bool:
            self.steps += 1
            self.illegal += sum(bool(info["illegal_action"]) for info in self.locals["infos"])
            return True

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny MLP on a shared machine
    try:
        counter = CountIllegal()
        model = MaskablePPO("MlpPolicy", gym.make("Yacht-v0"), n_steps=256, batch_size=64, seed=0, device="cpu")
        model.learn(2000, callback=counter)
    finally:
        torch.set_num_threads(threads)
    assert counter.steps >= 2000
    assert counter.illegal == 0  # the masks reached the policy through gym.make's wrappers
    env = gym.make("Yacht-v0")
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        action, _ = model.predict(obs, action_masks=env.get_wrapper_attr("action_masks")(), deterministic=True)
        assert info["action_mask"][int(action)] == 1


# --------------------------------------------------------------------------------------------------
# Hardening: what the caller gets cannot change the env; every face of the env takes the same actions
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("observation_type", ["flat", "masked"])
def test_returned_masks_cannot_change_the_env(observation_type):
    """Writing to info["action_mask"], action_masks() or obs["action_mask"] once made filled categories legal."""
    env = YachtEnv(observation_type=observation_type)
    obs, info = env.reset(seed=0)
    _, _, _, _, info = env.step(32)  # Ones is filled
    writable = [info["action_mask"], env.action_masks()]
    if observation_type == "masked":
        writable.append(env.step(0)[0]["action_mask"])
    for mask in writable:
        if mask.flags.writeable:
            mask[:] = 1
    assert env.action_masks()[32] == 0 and env.action_masks()[31] == 0
    with pytest.warns(UserWarning, match=illegal_warning(ILLEGAL["pick_filled"][2])):
        _, _, _, _, info = env.step(32)
    assert flag(info["illegal_action"]) is True and info["scores"][0] >= 0


@pytest.mark.parametrize("action", [True, False, np.bool_(True), np.array(True), 32.0, "32", None, [32]])
def test_non_int_actions_are_rejected(action):
    """A bool is not an action (Python counts True as 1; the env does not)."""
    env = YachtEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="^action must be an int in 0..43, got "):
        env.step(action)


def test_the_first_illegal_action_warns_once():
    env = YachtEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="an illegal action was ignored.*action 31 keeps all five dice"):
        env.step(31)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, _, _, _, info = env.step(31)
        env.reset(seed=1)
        _, _, _, _, info = env.step(31)
    assert info["illegal_actions"] == 1  # counted per episode, warned once per env


def test_unknown_render_mode_warns_and_renders_nothing():
    with pytest.warns(UserWarning, match="render_mode='rgb' is not one of"):
        env = YachtEnv(render_mode="rgb")
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render\\(\\) called with render_mode='rgb'"):
        assert env.render() is None


def test_rgb_array_render_is_a_constant_size_image():
    env = YachtEnv(render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    assert first.dtype == np.uint8 and first.ndim == 3 and first.shape[2] == 3
    _, _, _, _, info = env.step(first_legal({"action_mask": env.action_masks()}))
    second = env.render()
    assert second.shape == first.shape and not np.array_equal(first, second)
