"""Specification of ``YachtVectorEnv``: N games that behave exactly like N ``YachtEnv``.

The contract is the ``YachtEnv`` class docstring (game semantics) plus the ``YachtVectorEnv`` docstring
(batching, autoreset, info layout). The central test plays the vector env and N single envs on the same
dice streams, step by step, with mostly legal and some arbitrary actions, and requires equal everything.
"""

from __future__ import annotations

import re
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

import yacht_env
from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.game import game_streams
from yacht_env.vector import YachtVectorEnv

#: One encoder for every decode: building one costs more than a game step.
ENCODER = ObservationEncoder()

PRESET_NAMES = ("standard", "classic")
AUTORESET_MODES = ("next_step", "same_step")
MODE_ENUM = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP}
INFO_KEYS = ("dice", "rolls_left", "scores", "total", "action_mask", "illegal_action", "illegal_actions")
#: A ``pytest.warns`` match for the env's one warning about ignored illegal actions (at an env's first).
ILLEGAL_WARNING = r"Yacht: an illegal action was ignored \(the state did not change"
#: How the vector env's warning names its first illegal action when game 0 keeps all five dice.
ENV_0_KEEPS_ALL = "env 0, action 31 keeps all five dice and re-rolls nothing"


def illegal_warning(first: str) -> str:
    """``ILLEGAL_WARNING`` naming the first illegal action as the warning says it (``first``)."""
    return rf"{ILLEGAL_WARNING}.*\(the first: {re.escape(first)}\)"


def uniform_legal(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One action per row, uniform over the row's legal actions (row 0 -> action 0, ignored anyway)."""
    return np.argmax(rng.random(mask.shape) * mask, axis=1)


def obs_row(obs, i: int):
    """Game ``i``'s observation out of a batched one (an array or a dict of arrays)."""
    if isinstance(obs, dict):
        return {key: value[i] for key, value in obs.items()}
    return obs[i]


def assert_same_obs(vector_row, single) -> None:
    if isinstance(single, dict):
        assert vector_row.keys() == single.keys()
        for key in single:
            assert np.asarray(vector_row[key]).dtype == np.asarray(single[key]).dtype, key
            np.testing.assert_array_equal(vector_row[key], single[key], err_msg=key)
    else:
        assert vector_row.dtype == single.dtype == np.float32
        np.testing.assert_array_equal(vector_row, single)


def assert_same_info(info: dict, i: int, single_info: dict) -> None:
    """Game ``i`` of the vector env's batched info equals the single env's info: same keys, values and dtypes
    (the single env's numbers np.int64 scalars, its flags 0-d bool arrays)."""
    family = {key: single_info[key] for key in ("upper", "armed") if key in single_info}  # the family's state
    assert set(single_info) == set(INFO_KEYS) | set(family)
    for key, value in single_info.items():
        assert info[key].dtype == value.dtype, key
        np.testing.assert_array_equal(info[key][i], value, err_msg=key)
    for key in ("rolls_left", "total", "illegal_actions", "upper"):
        assert key not in single_info or type(single_info[key]) is np.int64, key
    for key in ("illegal_action", "armed"):
        if key in single_info:
            value = single_info[key]
            assert type(value) is np.ndarray and value.dtype == np.bool_ and value.shape == (), key


def assert_fresh_game(obs, info: dict, i: int, canonical_keeps: bool = True, rules: str = "standard") -> None:
    """Game ``i`` shows a new game's first roll: two re-rolls left, every category open, nothing scored."""
    assert info["rolls_left"][i] == R.MAX_ROLLS_LEFT
    assert info["total"][i] == 0
    assert (info["scores"][i] == -1).all()
    roll = R.roll_index(info["dice"][i])
    all_open, n = R.get_rules(rules).all_open, R.get_rules(rules).num_categories
    expected_mask = R.legal_action_mask(roll, R.MAX_ROLLS_LEFT, all_open, canonical_keeps, n)
    np.testing.assert_array_equal(info["action_mask"][i], expected_mask)
    if isinstance(obs, dict):
        assert obs["rolls_left"][i] == R.MAX_ROLLS_LEFT and obs["open_categories"][i].all()
    else:
        decoded = (ENCODER if rules == "standard" else ObservationEncoder(rules)).decode(obs[i])
        assert tuple(int(v) for v in decoded) == (roll, R.MAX_ROLLS_LEFT, all_open, 0, 0)


def play_side_by_side(
    num_envs: int, steps: int, seed: int, arbitrary_rate: float, autoreset_mode: str, **env_kwargs
) -> Counter:
    """Steps a vector env and ``num_envs`` single envs on the same dice streams and asserts they agree.

    Actions are uniform over the legal ones, except a fraction ``arbitrary_rate`` drawn from all 44 (often
    illegal). Game ``i`` of the vector env is compared with single env ``i`` until that game ends; the
    autoreset that follows is checked against the vector env's documented behaviour. The illegal actions
    are provoked on purpose, so the illegal-action warning is required: once from the vector env, and once
    from each single env that saw one (at its first).

    Returns:
        Counts of what happened (``terminated``, ``truncated``, ``illegal``, ``autoreset``), so callers can
        require that the scenario they test occurred.
    """
    rules = env_kwargs.get("rules", "standard")
    streams = game_streams(seed, range(num_envs), rules)
    vector = YachtVectorEnv(num_envs, autoreset_mode=autoreset_mode, **env_kwargs)
    singles = [YachtEnv(**env_kwargs) for _ in range(num_envs)]
    canonical_keeps = env_kwargs.get("canonical_keeps", True)
    obs, info = vector.reset(seed=seed, options={"dice_stream": streams})
    for i, single in enumerate(singles):
        single_obs, single_info = single.reset(options={"dice_stream": streams[i]})
        assert_same_obs(obs_row(obs, i), single_obs)
        assert_same_info(info, i, single_info)

    rng = np.random.default_rng(seed)
    live = np.ones(num_envs, dtype=bool)  # single game i is still being compared
    awaiting_reset = np.zeros(num_envs, dtype=bool)  # next_step: game i ended on the previous step
    events: Counter = Counter()
    singles_warned: set[int] = set()
    with pytest.warns(UserWarning, match=ILLEGAL_WARNING) as warned:
        for _ in range(steps):
            actions = uniform_legal(rng, info["action_mask"])
            arbitrary = rng.random(num_envs) < arbitrary_rate
            actions[arbitrary] = rng.integers(0, vector.rules.num_actions, size=int(arbitrary.sum()))
            obs, rewards, terminated, truncated, info = vector.step(actions)
            for i in np.flatnonzero(live | awaiting_reset):
                if awaiting_reset[i]:  # next_step: the action is ignored and a new game starts
                    assert rewards[i] == 0.0 and not terminated[i] and not truncated[i]
                    assert not info["illegal_action"][i]
                    assert_fresh_game(obs, info, i, canonical_keeps, rules)
                    awaiting_reset[i] = False
                    events["autoreset"] += 1
                    continue
                single_obs, single_reward, single_terminated, single_truncated, single_info = singles[i].step(
                    int(actions[i])
                )
                assert rewards[i] == single_reward, (i, actions[i])
                assert bool(terminated[i]) is single_terminated and bool(truncated[i]) is single_truncated
                events["illegal"] += single_info["illegal_action"]
                if single_info["illegal_action"]:
                    singles_warned.add(i)
                done = single_terminated or single_truncated
                if autoreset_mode == "same_step" and done:
                    assert info["_final_obs"][i] and info["_final_total"][i]
                    assert_same_obs(obs_row(info["final_obs"], i), single_obs)
                    assert info["final_total"][i] == single_info["total"]
                    assert info["illegal_action"].dtype == single_info["illegal_action"].dtype == np.bool_
                    assert info["illegal_action"][i] == single_info["illegal_action"]  # the ending step's
                    assert_fresh_game(obs, info, i, canonical_keeps, rules)
                    events["autoreset"] += 1
                else:
                    assert_same_obs(obs_row(obs, i), single_obs)
                    assert_same_info(info, i, single_info)
                    if "_final_obs" in info:
                        assert not info["_final_obs"][i]
                if done:
                    live[i] = False
                    awaiting_reset[i] = autoreset_mode == "next_step"
                    events["terminated" if single_terminated else "truncated"] += 1
    firsts = [str(w.message) for w in warned if re.search(ILLEGAL_WARNING, str(w.message))]
    from_vector = [message for message in firsts if "(the first: env " in message]
    assert len(from_vector) == 1 and len(firsts) - 1 == len(singles_warned), firsts
    assert not live.any(), "some first games did not finish: raise the number of steps"
    return events


# --------------------------------------------------------------------------------------------------
# 1. gymnasium.make_vec
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("canonical_keeps", [True, False])
@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_make_vec_returns_the_native_vector_env(preset, canonical_keeps):
    env = gym.make_vec(
        "Yacht-v0", num_envs=5, vectorization_mode="vector_entry_point", rules=preset, canonical_keeps=canonical_keeps
    )
    assert type(env) is YachtVectorEnv
    assert env.num_envs == 5
    assert env.rules is yacht_env.PRESETS[preset]
    assert env.canonical_keeps is canonical_keeps
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, info = env.reset(seed=0)
    # The kwargs take effect: the legal keeps and the scores shown follow them.
    roll = R.roll_index(info["dice"])
    np.testing.assert_array_equal(info["action_mask"], R.legal_action_mask(roll, 2, R.ALL_OPEN, canonical_keeps))
    assert info["action_mask"][:, :31].all() == (not canonical_keeps)
    np.testing.assert_allclose(obs[:, 39:51], R.score_table(preset)[roll] / 50, rtol=0, atol=1e-7)


def test_make_vec_passes_autoreset_mode_and_illegal_options():
    env = gym.make_vec(
        "Yacht-v0",
        num_envs=2,
        vectorization_mode="vector_entry_point",
        autoreset_mode="same_step",
        illegal_action_penalty=-2.0,
        max_illegal_actions=1,
    )
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        _, rewards, terminated, truncated, info = env.step(np.array([31, 31]))  # 31 is never legal
    assert rewards.tolist() == [-2.0, -2.0] and truncated.all() and not terminated.any()
    assert info["_final_obs"].all()


def test_make_vec_defaults_to_the_native_vector_env():
    # gymnasium's SyncVectorEnv cannot batch info["scores"] (None while open, ints once filled: it types
    # each key by the first env's value), so the registered vector entry point is the way to vectorise.
    env = gym.make_vec("Yacht-v0", num_envs=2)
    assert isinstance(env.unwrapped, YachtVectorEnv)


def test_make_vec_and_direct_construction_agree():
    made = gym.make_vec("Yacht-v0", num_envs=4, vectorization_mode="vector_entry_point", rules="classic")
    direct = YachtVectorEnv(4, rules="classic")
    assert record(made, seed=3, steps=40) == record(direct, seed=3, steps=40)


# --------------------------------------------------------------------------------------------------
# 2. Step-by-step agreement with N single envs
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("canonical_keeps", [True, False])
@pytest.mark.parametrize("preset", PRESET_NAMES)
@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_agrees_with_single_envs_step_by_step(autoreset_mode, preset, canonical_keeps):
    events = play_side_by_side(
        32,
        130,
        seed=7,
        arbitrary_rate=0.1,
        autoreset_mode=autoreset_mode,
        rules=preset,
        canonical_keeps=canonical_keeps,
    )
    assert events["terminated"] == 32 and events["illegal"] > 0 and events["autoreset"] == 32


@pytest.mark.parametrize("preset", ["yahtzee_forced_joker", "yatzy"])
@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_agrees_with_single_envs_step_by_step_on_the_family(autoreset_mode, preset):
    # The family's state (the upper subtotal, the armed Yahtzee box) and its info keys go through both faces alike.
    events = play_side_by_side(
        24, 170, seed=11, arbitrary_rate=0.1, autoreset_mode=autoreset_mode, rules=preset, canonical_keeps=True
    )
    assert events["terminated"] == 24 and events["illegal"] > 0 and events["autoreset"] == 24


@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_agrees_with_single_envs_on_illegal_penalty_and_truncation(autoreset_mode):
    events = play_side_by_side(
        16,
        120,
        seed=11,
        arbitrary_rate=0.3,
        autoreset_mode=autoreset_mode,
        illegal_action_penalty=-1.0,
        max_illegal_actions=3,
    )
    assert events["truncated"] > 0 and events["terminated"] > 0


@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_agrees_with_single_envs_without_illegal_limit(autoreset_mode):
    events = play_side_by_side(
        8, 150, seed=5, arbitrary_rate=0.4, autoreset_mode=autoreset_mode, max_illegal_actions=None
    )
    assert events["truncated"] == 0 and events["terminated"] == 8 and events["illegal"] > 50


@pytest.mark.parametrize(("max_illegal_actions", "truncated_at"), [(100, 100), (None, None)])
def test_illegal_limit_default_and_none(max_illegal_actions, truncated_at):
    env = YachtVectorEnv(2, max_illegal_actions=max_illegal_actions, illegal_action_penalty=-0.5)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        for step in range(1, 151):
            _, rewards, terminated, truncated, info = env.step(np.array([31, 31]))
            assert rewards.tolist() == [-0.5, -0.5] and not terminated.any() and info["illegal_action"].all()
            assert truncated.tolist() == [step == truncated_at] * 2
            if truncated.any():
                break
    assert step == (truncated_at or 150)


@pytest.mark.parametrize(
    "autoreset_mode",
    ["next_step", "same_step"],
)
def test_agrees_with_single_envs_with_dict_observations(autoreset_mode):
    events = play_side_by_side(
        8, 120, seed=3, arbitrary_rate=0.1, autoreset_mode=autoreset_mode, observation_type="dict", rules="classic"
    )
    assert events["terminated"] == 8


def test_same_step_dict_final_obs_keeps_its_rolls_left():
    env = YachtVectorEnv(2, observation_type="dict", autoreset_mode="same_step", max_illegal_actions=1)
    env.reset(seed=0)
    env.step(np.array([0, 0]))  # re-roll everything: one re-roll left
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        obs, _, _, truncated, info = env.step(np.array([31, 32]))  # game 0 truncates with one re-roll left
    assert truncated.tolist() == [True, False] and obs["rolls_left"][0] == 2
    assert info["final_obs"]["rolls_left"][0] == 1


def test_writing_to_a_dict_observation_does_not_change_the_env():
    env = YachtVectorEnv(2, observation_type="dict")
    obs, _ = env.reset(seed=0)
    obs["rolls_left"][:] = 0
    obs["dice"][:] = 6
    obs["open_categories"][:] = 0
    assert (env.rolls_left == 2).all()


def test_agrees_with_a_single_env_as_a_batch_of_one():
    events = play_side_by_side(1, 60, seed=2, arbitrary_rate=0.1, autoreset_mode="next_step")
    assert events["terminated"] == 1 and events["autoreset"] == 1


# --------------------------------------------------------------------------------------------------
# 3. Invariants over many seeded random games
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("autoreset_mode", "canonical_keeps", "preset"),
    [("next_step", True, "standard"), ("same_step", False, "classic")],
)
def test_invariants_over_many_random_games(autoreset_mode, canonical_keeps, preset):
    n, steps = 512, 120
    env = YachtVectorEnv(n, rules=preset, canonical_keeps=canonical_keeps, autoreset_mode=autoreset_mode)
    score = R.score_table(preset)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    returns = np.zeros(n)  # rewards of each game's current episode
    picks = np.zeros(n, dtype=int)
    lengths = np.zeros(n, dtype=int)
    waiting = np.zeros(n, dtype=bool)  # next_step: the game ended on the previous step
    finished_games = 0
    for _ in range(steps):
        roll, rolls_left, open_mask = env.roll, env.rolls_left, env.open_mask
        # The observation, the info and the mask all describe the env's state.
        assert env.observation_space.contains(obs)
        assert all(env.single_observation_space.contains(obs[i]) for i in range(0, n, 97))
        decoded = ENCODER.decode(obs)
        np.testing.assert_array_equal(decoded[0], roll)
        np.testing.assert_array_equal(decoded[1], rolls_left)
        np.testing.assert_array_equal(decoded[2], open_mask)
        np.testing.assert_array_equal(info["dice"], R.ROLLS[roll])
        np.testing.assert_array_equal(info["rolls_left"], rolls_left)
        np.testing.assert_array_equal(info["scores"] == -1, R.OPEN_BITS[open_mask])
        np.testing.assert_array_equal(info["total"], np.maximum(info["scores"], 0).sum(axis=1))
        expected_mask = R.legal_action_mask(roll, rolls_left, open_mask, canonical_keeps)
        expected_mask[waiting] = True  # waiting for the reset: every action allowed (and ignored)
        np.testing.assert_array_equal(info["action_mask"], expected_mask)
        np.testing.assert_array_equal(env.action_masks(), expected_mask)
        assert info["action_mask"].any(axis=1).all()  # never an empty row

        actions = uniform_legal(rng, info["action_mask"])
        is_pick = (actions >= R.PICK_OFFSET) & ~waiting
        points = score[roll, np.maximum(actions - R.PICK_OFFSET, 0)] * is_pick
        obs, rewards, terminated, truncated, info = env.step(actions)

        assert not truncated.any() and not info["illegal_action"].any()
        np.testing.assert_array_equal(rewards, points)  # a pick scores the dice shown; a keep scores 0
        assert (rewards[waiting] == 0).all() and not terminated[waiting].any()
        assert (rolls_left[(actions < R.PICK_OFFSET) & ~waiting] > 0).all()
        live = ~waiting
        returns[live] += rewards[live]
        picks += is_pick
        lengths += live
        np.testing.assert_array_equal(terminated, picks == R.NUM_CATEGORIES)  # after exactly 12 picks
        assert (lengths <= R.NUM_CATEGORIES * R.ROLLS_PER_TURN).all()
        if autoreset_mode == "next_step":
            final_total = info["total"]
            assert (info["rolls_left"][terminated] == 0).all() and (env.open_mask[terminated] == 0).all()
            assert info["action_mask"][terminated].all()  # waiting for the reset: all allowed, never empty
            for i in np.flatnonzero(waiting):
                assert_fresh_game(obs, info, i, canonical_keeps)
        else:
            np.testing.assert_array_equal(info.get("_final_obs", np.zeros(n, dtype=bool)), terminated)
            final_total = info.get("final_total", np.zeros(n))
            for i in np.flatnonzero(terminated):
                assert_fresh_game(obs, info, i, canonical_keeps)
                final_decoded = ENCODER.decode(info["final_obs"][i])
                assert (int(final_decoded[1]), int(final_decoded[2])) == (0, 0)
        np.testing.assert_array_equal(returns[terminated], final_total[terminated])  # sum of rewards = score
        finished_games += int(terminated.sum())
        returns[terminated] = picks[terminated] = lengths[terminated] = 0
        waiting = terminated if autoreset_mode == "next_step" else np.zeros(n, dtype=bool)
    assert finished_games > 2 * n


@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_autoreset_ignores_the_action_of_the_reset_step(autoreset_mode):
    """In next_step mode the action sent to a finished game does nothing; in same_step no game ever waits."""
    a, b = YachtVectorEnv(32, autoreset_mode=autoreset_mode), YachtVectorEnv(32, autoreset_mode=autoreset_mode)
    _, info = a.reset(seed=4)
    b.reset(seed=4)
    rng = np.random.default_rng(4)
    waited = 0
    done = np.zeros(32, dtype=bool)
    for _ in range(80):
        waiting = done if autoreset_mode == "next_step" else np.zeros(32, dtype=bool)  # games that ended last step
        assert info["action_mask"][waiting].all()  # a waiting game allows every action: never an empty row
        waited += int(waiting.sum())
        actions = uniform_legal(rng, info["action_mask"])
        other = actions.copy()
        other[waiting] = (actions[waiting] + 17) % R.NUM_ACTIONS  # something else for waiting games only
        out_a, out_b = a.step(actions), b.step(other)
        info = out_a[-1]
        done = out_a[2] | out_a[3]
        assert_same_step(out_a, out_b)
    assert waited > 0 or autoreset_mode != "next_step"


def test_next_step_autoreset_step_has_reward_zero_and_a_fresh_game_after_truncation():
    env = YachtVectorEnv(3, max_illegal_actions=2, illegal_action_penalty=-5.0)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):  # at the first only
        env.step(np.array([31, 32, 31]))
    obs, rewards, terminated, truncated, info = env.step(np.array([31, 33, 31]))
    assert truncated.tolist() == [True, False, True] and not terminated.any()
    assert rewards[[0, 2]].tolist() == [-5.0, -5.0]
    assert info["action_mask"][[0, 2]].all() and env.action_masks()[[0, 2]].all()
    obs, rewards, terminated, truncated, info = env.step(np.array([31, 34, 40]))
    assert rewards.tolist() == [0.0, 0.0, 0.0] and not (terminated | truncated).any()
    assert info["illegal_action"].tolist() == [False, False, False]
    for i in (0, 2):
        assert_fresh_game(obs, info, i)
    # The new game's illegal-action count starts again from zero.
    _, _, _, truncated, _ = env.step(np.array([31, 35, 31]))
    assert not truncated.any()


# --------------------------------------------------------------------------------------------------
# 4. Seeding and dice streams
# --------------------------------------------------------------------------------------------------
def record(env, seed: int | None, steps: int, action_seed: int = 0, options: dict | None = None) -> list:
    """A trajectory as plain lists (comparable with ==), actions uniform over the legal ones."""
    obs, info = env.reset(seed=seed, options=options)
    rng = np.random.default_rng(action_seed)
    trajectory = [(np.asarray(obs).tolist(), info["total"].tolist())]
    for _ in range(steps):
        actions = uniform_legal(rng, info["action_mask"])
        obs, rewards, terminated, truncated, info = env.step(actions)
        trajectory.append(
            (
                np.asarray(obs).tolist(),
                rewards.tolist(),
                terminated.tolist(),
                truncated.tolist(),
                info["dice"].tolist(),
                info["scores"].tolist(),
                info["action_mask"].tolist(),
            )
        )
    return trajectory


def assert_same_step(a: tuple, b: tuple) -> None:
    (obs_a, *middle_a, info_a), (obs_b, *middle_b, info_b) = a, b
    np.testing.assert_array_equal(obs_a, obs_b)
    for x, y in zip(middle_a, middle_b, strict=True):
        np.testing.assert_array_equal(x, y)
    assert info_a.keys() == info_b.keys()
    for key in info_a:
        np.testing.assert_array_equal(info_a[key], info_b[key], err_msg=key)


def games_finished(trajectory: list) -> int:
    return sum(sum(step[2]) for step in trajectory[1:])


@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_same_seed_same_trajectory_including_autoreset_games(autoreset_mode):
    env = YachtVectorEnv(16, autoreset_mode=autoreset_mode)
    first = record(env, seed=123, steps=100)
    assert games_finished(first) >= 16  # so games started by autoreset are compared too
    assert record(env, seed=123, steps=100) == first  # same instance
    assert record(YachtVectorEnv(16, autoreset_mode=autoreset_mode), seed=123, steps=100) == first


def test_different_seeds_different_games():
    env = YachtVectorEnv(16)
    first, second = record(env, seed=1, steps=5), record(env, seed=2, steps=5)
    assert first[0] != second[0] and first != second
    # Without a seed, reset continues the generator: a new batch, not a replay.
    assert record(env, seed=None, steps=5) != record(env, seed=None, steps=5)


def test_games_differ_within_a_batch():
    _, info = YachtVectorEnv(64).reset(seed=0)
    assert len({tuple(row) for row in info["dice"].tolist()}) > 32


def test_dice_stream_overrides_the_seed():
    streams = game_streams(9, range(4))
    env = YachtVectorEnv(4)
    first = record(env, seed=1, steps=11, options={"dice_stream": streams})  # no game ends in 11 steps
    assert record(env, seed=2, steps=11, options={"dice_stream": streams}) == first
    assert record(env, seed=None, steps=11, options={"dice_stream": streams}) == first


def test_game_streams_depend_only_on_seed_and_game_index():
    streams = game_streams(0, range(10))
    assert streams.shape == (10, 12, 3, 5) and streams.dtype == np.int8
    assert streams.min() == 1 and streams.max() == 6
    np.testing.assert_array_equal(streams[3], game_streams(0, [3])[0])
    np.testing.assert_array_equal(streams[[7, 2]], game_streams(0, np.array([7, 2])))
    np.testing.assert_array_equal(streams[5:], game_streams(0, range(5, 10)))
    np.testing.assert_array_equal(game_streams(0, range(10)), streams)  # deterministic
    assert not np.array_equal(game_streams(1, range(10)), streams)
    assert not np.array_equal(streams[0], streams[1])
    assert game_streams(0, []).shape == (0, 12, 3, 5)


def test_game_streams_are_fair_dice():
    values = game_streams(0, range(2000)).reshape(-1)  # 360,000 dice
    frequencies = np.bincount(values, minlength=7)[1:] / values.size
    np.testing.assert_allclose(frequencies, 1 / 6, atol=0.005)


# --------------------------------------------------------------------------------------------------
# 5. Spaces, dtypes and the batched info
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("observation_type", ["flat", "dict"])
def test_spaces(observation_type):
    env = YachtVectorEnv(6, observation_type=observation_type)
    single = YachtEnv(observation_type=observation_type)
    assert env.single_observation_space == single.observation_space
    assert env.observation_space == batch_space(env.single_observation_space, 6)
    assert env.single_action_space == spaces.Discrete(44)
    assert env.action_space == spaces.MultiDiscrete(np.full(6, 44))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    obs, *_ = env.step(uniform_legal(np.random.default_rng(0), env.action_masks()))
    assert env.observation_space.contains(obs)
    env.action_space.seed(0)
    env.step(env.action_space.sample())  # the action space's samples are valid actions (illegal ones ignored)


@pytest.mark.parametrize("autoreset_mode", AUTORESET_MODES)
def test_dtypes_and_shapes(autoreset_mode):
    n = 7
    env = YachtVectorEnv(n, autoreset_mode=autoreset_mode)
    assert env.metadata["autoreset_mode"] == MODE_ENUM[autoreset_mode]
    obs, info = env.reset(seed=0)
    for _ in range(2):
        assert obs.dtype == np.float32 and obs.shape == (n, 64)
        assert set(info) == set(INFO_KEYS) | {"_" + key for key in INFO_KEYS}
        for key in INFO_KEYS:
            assert info["_" + key].dtype == bool and info["_" + key].shape == (n,) and info["_" + key].all()
        assert info["dice"].dtype == np.int8 and info["dice"].shape == (n, 5)
        assert (np.diff(info["dice"], axis=1) >= 0).all()
        assert info["scores"].shape == (n, 12) and np.issubdtype(info["scores"].dtype, np.integer)
        assert info["rolls_left"].shape == info["total"].shape == (n,)
        assert info["action_mask"].dtype == np.int8 and info["action_mask"].shape == (n, 44)
        assert info["illegal_action"].dtype == bool and info["illegal_action"].shape == (n,)
        masks = env.action_masks()
        assert masks.dtype == bool and masks.shape == (n, 44)
        np.testing.assert_array_equal(masks, info["action_mask"])
        obs, rewards, terminated, truncated, info = env.step(uniform_legal(np.random.default_rng(0), masks))
        assert rewards.dtype == np.float64 and rewards.shape == (n,)
        assert terminated.dtype == truncated.dtype == bool and terminated.shape == truncated.shape == (n,)


def test_enum_autoreset_mode_accepted():
    env = YachtVectorEnv(2, autoreset_mode=AutoresetMode.SAME_STEP)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert YachtVectorEnv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP  # the class default is untouched


def test_same_step_final_obs_is_a_batch_with_its_mask():
    env = YachtVectorEnv(4, autoreset_mode="same_step", max_illegal_actions=1)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        obs, _, _, truncated, info = env.step(np.array([31, 32, 31, 32]))
    assert truncated.tolist() == [True, False, True, False]
    assert info["final_obs"].shape == (4, 64) and info["final_obs"].dtype == np.float32
    assert info["_final_obs"].tolist() == info["_final_total"].tolist() == truncated.tolist()
    assert info["final_total"][[0, 2]].tolist() == [0, 0]


def test_action_masks_is_a_copy():
    env = YachtVectorEnv(3)
    env.reset(seed=0)
    masks = env.action_masks()
    before = masks.copy()
    masks[:] = True
    np.testing.assert_array_equal(env.action_masks(), before)
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        _, _, _, _, info = env.step(np.array([31, 31, 31]))  # still illegal: the env's masks did not change
    assert info["illegal_action"].all()


def test_writing_to_the_info_mask_does_not_change_legality():
    env = YachtVectorEnv(2)
    _, info = env.reset(seed=0)
    info["action_mask"][:] = 1
    with pytest.warns(UserWarning, match=illegal_warning(ENV_0_KEEPS_ALL)):
        _, _, _, _, info = env.step(np.array([31, 31]))  # 31 keeps everything: never legal
    assert info["illegal_action"].all() and (info["rolls_left"] == 2).all()


def test_info_arrays_are_not_the_envs_state():
    env = YachtVectorEnv(2)
    _, info = env.reset(seed=0)
    info["rolls_left"][:] = 0
    info["total"][:] = 99
    info["scores"][:] = 5
    info["dice"][:] = 6
    assert (env.rolls_left == 2).all()
    _, _, _, _, info = env.step(np.array([32, 32]))
    assert (info["scores"][:, 1:] == -1).all() and (info["total"] == info["scores"][:, 0]).all()
    roll = env.roll
    env.roll[:] = 0  # properties are copies
    np.testing.assert_array_equal(env.roll, roll)


# --------------------------------------------------------------------------------------------------
# 6. Errors
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_envs", [0, -1, 2.5, True, "4", None])
def test_bad_num_envs_raises(num_envs):
    with pytest.raises(ValueError, match="num_envs"):
        YachtVectorEnv(num_envs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"autoreset_mode": "never"}, "autoreset_mode"),
        ({"autoreset_mode": []}, "autoreset_mode must be 'next_step', 'same_step' or 'disabled', got \\[\\]"),
        ({"observation_type": "image"}, "observation_type"),
        ({"observation_type": None}, "observation_type must be one of"),
        ({"illegal_action": "warn"}, "illegal_action"),
        ({"illegal_action_penalty": float("nan")}, "illegal_action_penalty"),
        ({"max_illegal_actions": 0}, "max_illegal_actions"),
        ({"rules": "kniffel"}, "rules"),
        ({"canonical_keeps": "no"}, "canonical_keeps"),
        ({"action_mask_dtype": "uint8"}, "action_mask_dtype"),
    ],
)
def test_bad_constructor_args_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        YachtVectorEnv(2, **kwargs)


@pytest.mark.parametrize(
    "actions",
    [
        np.array([32, 32]),  # too few
        np.array([32, 32, 32, 32]),  # too many
        np.array([[32], [32], [32]]),  # (3, 1)
        np.int64(32),  # a scalar
        np.array([32.0, 32.0, 32.0]),  # floats
        np.array([True, True, True]),  # bools
        np.array(["32", "32", "32"]),  # strings
        np.array([32, 44, 32]),  # out of range
        np.array([-1, 32, 32]),
        np.array([32, 32, 2**40]),
        [True, 32, 32],  # a list: numpy alone would read the bool as the int 1
        [32, np.bool_(False), 32],
        (32, 32, True),
    ],
    ids=lambda a: f"{np.asarray(a).dtype}{np.asarray(a).shape}{np.asarray(a).ravel()[:3].tolist()}",
)
def test_bad_actions_raise_and_leave_the_state(actions):
    env = YachtVectorEnv(3)
    twin = YachtVectorEnv(3)
    env.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(ValueError, match="actions"):
        env.step(actions)
    assert_same_step(env.step(np.array([32, 33, 34])), twin.step(np.array([32, 33, 34])))


def test_list_of_ints_accepted():
    env = YachtVectorEnv(2)
    env.reset(seed=0)
    _, rewards, *_ = env.step([32, 43])
    assert rewards.shape == (2,)


@pytest.mark.parametrize(
    ("before", "bad_action", "reason"),
    [
        ([], 31, "re-rolls nothing"),
        ([], 5, "keeps the same dice as mask 3"),  # 1-1-1-2-3: masks 3 and 5 both keep 1-1
        ([32], 32, "already filled"),
        ([0, 0], 0, "no re-rolls are left"),
    ],
)
def test_illegal_action_raise_names_the_env_and_action(before, bad_action, reason):
    streams = game_streams(0, range(4))
    streams[2, 0, 0] = [1, 1, 1, 2, 3]
    env = YachtVectorEnv(4, illegal_action="raise")
    twin = YachtVectorEnv(4)
    env.reset(options={"dice_stream": streams})
    twin.reset(options={"dice_stream": streams})
    for j, action in enumerate(before):  # game 2 gets there; the others score a new category each step
        actions = np.array([33 + j, 39 + j, action, 42 - j])
        assert not env.step(actions)[-1]["illegal_action"].any()
        twin.step(actions)
    with pytest.raises(ValueError, match=rf"env 2\b.*action {bad_action}\b.*{reason}"):
        env.step(np.array([36, 37, bad_action, 38]))
    # Nothing moved: the env goes on exactly like a twin that never saw the bad step.
    assert_same_step(env.step(np.array([36, 37, 38, 39])), twin.step(np.array([36, 37, 38, 39])))


def test_illegal_action_raise_does_not_fire_for_a_game_awaiting_reset():
    env = YachtVectorEnv(2, illegal_action="raise")
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = np.zeros(2, dtype=bool)
    while not terminated.any():
        _, _, terminated, _, info = env.step(uniform_legal(rng, info["action_mask"]))
    actions = uniform_legal(rng, info["action_mask"])
    actions[terminated] = 31  # ignored: that game is starting over
    _, rewards, _, _, info = env.step(actions)
    assert (rewards[terminated] == 0).all() and (info["rolls_left"][terminated] == 2).all()


@pytest.mark.parametrize(
    "stream",
    [
        np.ones((3, 12, 3, 5), dtype=int),  # wrong number of games
        np.ones((12, 3, 5), dtype=int),  # one game's stream
        np.ones((2, 12, 3, 4), dtype=int),
        np.zeros((2, 12, 3, 5), dtype=int),  # 0 is not a die
        np.full((2, 12, 3, 5), 7),
        np.ones((2, 12, 3, 5)),  # floats
        "dice",
    ],
    ids=["3-games", "unbatched", "4-dice", "zero", "seven", "float", "str"],
)
def test_bad_dice_stream_raises(stream):
    with pytest.raises(ValueError, match="dice_stream"):
        YachtVectorEnv(2).reset(options={"dice_stream": stream})


def test_unknown_reset_option_raises():
    with pytest.raises(ValueError, match="dice_streams"):
        YachtVectorEnv(2).reset(options={"dice_streams": game_streams(0, range(2))})


def test_step_before_reset_raises():
    with pytest.raises(ValueError, match="reset"):
        YachtVectorEnv(2).step(np.array([32, 32]))


def test_vector_masks_cannot_change_the_env():
    env = YachtVectorEnv(2)
    _, info = env.reset(seed=0)
    env.step(np.array([32, 32]))
    env.action_masks()[:] = True
    with pytest.warns(UserWarning, match=illegal_warning("env 0, action 32 scores 'ones', which is already filled")):
        _, _, _, _, info = env.step(np.array([32, 32]))
    assert info["illegal_action"].all()


def test_reset_mask_starts_only_the_masked_games():
    env = YachtVectorEnv(3, autoreset_mode="disabled")
    env.reset(seed=0)
    env.step(np.array([32, 32, 32]))
    _, info = env.reset(options={"reset_mask": np.array([False, True, False])})
    assert info["scores"][:, 0].tolist()[1] == -1 and (info["scores"][[0, 2], 0] >= 0).all()
    with pytest.raises(ValueError, match=r"reset_mask'\] must be a bool numpy array of shape \(3,\)"):
        env.reset(options={"reset_mask": [True, False, True]})
    with pytest.raises(ValueError, match="at least one True"):
        env.reset(options={"reset_mask": np.zeros(3, dtype=bool)})
