"""Specification of the Gymnasium ids (:mod:`yacht_env.registration`): one solo id and one versus id per preset, each
the env (and its native vector env) on that preset's rules."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from yacht_env import PRESETS, YachtEnv, env_id
from yacht_env.registration import register_envs
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusEnv, YachtVersusVectorEnv

#: Per preset: the solo id, the versus id, the actions, the solo observation's and the two-player observation's length.
IDS = {
    "standard": ("Yacht-v0", "YachtVersus-v0", 44, 64, 79),
    "classic": ("YachtClassic-v0", "YachtClassicVersus-v0", 44, 64, 79),
    "knizia": ("YachtKnizia-v0", "YachtKniziaVersus-v0", 44, 64, 79),
    "yahtzee": ("Yahtzee-v0", "YahtzeeVersus-v0", 45, 69, 88),
    "yahtzee_forced_joker": ("YahtzeeForcedJoker-v0", "YahtzeeForcedJokerVersus-v0", 45, 69, 88),
    "yahtzee_no_joker": ("YahtzeeNoJoker-v0", "YahtzeeNoJokerVersus-v0", 45, 69, 88),
    "yahtzee_no_bonus": ("YahtzeeNoBonus-v0", "YahtzeeNoBonusVersus-v0", 45, 68, 86),
    "yatzy": ("Yatzy-v0", "YatzyVersus-v0", 47, 72, 92),
    "clubhouse": ("YachtClubhouse-v0", "YachtClubhouseVersus-v0", 44, 66, 83),
}


def test_every_preset_has_its_two_ids():
    assert set(IDS) == set(PRESETS)
    assert {preset: (env_id(preset), env_id(preset, versus=True)) for preset in PRESETS} == {
        preset: ids[:2] for preset, ids in IDS.items()
    }


def test_the_env_page_lists_every_solo_id_with_its_rules():
    """The table of ids in ``Yacht-v0``'s docstring (its docs page) is the registry's, row for row."""
    doc = YachtEnv.__doc__
    rows = doc[doc.index("| id | rules |") : doc.index("```python", doc.index("| id | rules |"))].split("\n")[2:]
    assert [row.strip() for row in rows if row.strip()] == [f'| ``{ids[0]}`` | ``"{p}"`` |' for p, ids in IDS.items()]


@pytest.mark.parametrize("preset", sorted(IDS))
def test_the_registry_lists_both_ids_with_their_rules(preset):
    solo, versus = IDS[preset][:2]
    assert gym.spec(solo).kwargs == gym.spec(versus).kwargs == {"rules": preset}
    assert (gym.spec(solo).entry_point, gym.spec(solo).vector_entry_point) == (
        "yacht_env.env:YachtEnv",
        "yacht_env.vector:YachtVectorEnv",
    )
    assert (gym.spec(versus).entry_point, gym.spec(versus).vector_entry_point) == (
        "yacht_env.versus:YachtVersusEnv",
        "yacht_env.versus:YachtVersusVectorEnv",
    )
    listed = gym.pprint_registry(disable_print=True).split()
    assert solo in listed and versus in listed


@pytest.mark.parametrize("preset", sorted(IDS))
def test_each_solo_id_makes_the_env_on_its_preset(preset):
    solo, _, actions, size, _ = IDS[preset]
    env = gym.make(solo)
    assert env.spec.id == solo
    assert type(env.unwrapped) is YachtEnv and env.unwrapped.rules is PRESETS[preset]
    assert env.action_space == gym.spaces.Discrete(actions)
    assert env.observation_space.shape == (size,)
    _, info = env.reset(seed=0)
    assert info["action_mask"].shape == (actions,)


@pytest.mark.parametrize("mode", ["vector_entry_point", None])  # None: make_vec's default, the vector entry point
@pytest.mark.parametrize("preset", sorted(IDS))
def test_each_solo_id_makes_the_native_vector_env_on_its_preset(preset, mode):
    solo, _, actions, size, _ = IDS[preset]
    envs = gym.make_vec(solo, num_envs=4, vectorization_mode=mode)
    assert type(envs) is YachtVectorEnv and envs.rules is PRESETS[preset]
    assert envs.single_action_space == gym.spaces.Discrete(actions)
    assert envs.observation_space.shape == (4, size)
    obs, info = envs.reset(seed=0)
    assert obs.shape == (4, size) and info["action_mask"].shape == (4, actions)


@pytest.mark.parametrize("preset", sorted(IDS))
def test_each_versus_id_makes_the_versus_envs_on_its_preset(preset):
    _, versus, actions, _, table_size = IDS[preset]
    env = gym.make(versus, opponents=["random"])
    assert type(env.unwrapped) is YachtVersusEnv and env.unwrapped.rules is PRESETS[preset]
    assert env.action_space == gym.spaces.Discrete(actions)
    assert env.observation_space.shape == (table_size,)
    envs = gym.make_vec(versus, num_envs=3, vectorization_mode="vector_entry_point", opponents=["random"])
    assert type(envs) is YachtVersusVectorEnv and envs.rules is PRESETS[preset]
    assert envs.observation_space.shape == (3, table_size)


@pytest.mark.parametrize("versus", [False, True], ids=["solo", "versus"])
@pytest.mark.parametrize("preset", sorted(IDS))
def test_gymnasiums_env_checker_passes_on_each_id(preset, versus):
    env = gym.make(IDS[preset][versus]).unwrapped  # made for its spec (the checker warns without one), then unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The checker samples actions without masks: the env's one warning about that is expected.
        warnings.filterwarnings("ignore", message=".*Yacht: an illegal action was ignored", category=UserWarning)
        check_env(env)


def test_a_rules_argument_wins_over_the_ids_preset():
    """Gymnasium's keyword arguments override the registered ones, ``rules`` included (documented)."""
    assert gym.make("Yahtzee-v0", rules="yatzy").unwrapped.rules is PRESETS["yatzy"]
    assert gym.make_vec("Yahtzee-v0", num_envs=2, rules="yatzy").rules is PRESETS["yatzy"]
    assert gym.make("YatzyVersus-v0", rules="classic", opponents=["random"]).unwrapped.rules is PRESETS["classic"]


@pytest.mark.parametrize("preset", ["Yahtzee", "thirteen", None, 3])
def test_env_id_of_anything_but_a_preset_name_is_a_value_error(preset):
    with pytest.raises(ValueError, match=r"unknown preset .*; expected one of \['classic', 'clubhouse'"):
        env_id(preset)


def test_importing_again_registers_nothing_twice():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium warns when an id is overridden
        register_envs()
    assert gym.spec("Yahtzee-v0").kwargs == {"rules": "yahtzee"}
