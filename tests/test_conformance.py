"""``check_preset``: every preset plays through every env face, and a broken env fails it with one clear error.

A checker that cannot fail is a defect, so each face gets an env broken on purpose (a wrong reward, a bad mask, a
wrong total), swapped in where ``check_preset`` builds its envs, and the check must name what broke.
"""

from __future__ import annotations

import numpy as np
import pytest

import yacht_env
from yacht_env import conformance
from yacht_env import rules as R
from yacht_env.conformance import SURFACES, PresetCheckError, check_preset
from yacht_env.env import YachtEnv
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusEnv


@pytest.mark.parametrize("preset", sorted(R.PRESETS))
def test_every_preset_passes_on_every_surface(preset):
    assert check_preset(preset) == dict.fromkeys(SURFACES, "ok")


def test_a_custom_rules_object_passes_as_the_docs_say():
    thirteen = yacht_env.Rules("thirteen", categories=(*yacht_env.CATEGORIES, "three_of_a_kind"))
    assert yacht_env.check_preset(thirteen, games=2) == dict.fromkeys(SURFACES, "ok")


def test_a_subset_of_surfaces_runs_alone_and_reports_only_those():
    assert check_preset("classic", seed=3, games=1, surfaces=["vector"]) == {"vector": "ok"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"games": 0}, r"games must be an int in 1..1000, got 0"),
        ({"games": 2.5}, r"games must be an int in 1..1000, got 2.5"),
        ({"seed": -1}, r"seed must be a non-negative int, got -1"),
        ({"surfaces": "vector"}, r"surfaces must be a list of names from"),
        ({"surfaces": ["gym"]}, r"surfaces must be a list of names from"),
        ({"rules": "nosuch"}, r"unknown rules 'nosuch'"),
    ],
)
def test_bad_arguments_are_one_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_preset(**{"rules": "standard", **kwargs})


def test_a_missing_extra_is_skipped_and_reported(monkeypatch):
    find_spec = conformance.importlib.util.find_spec
    missing = {"pettingzoo", "stable_baselines3"}
    monkeypatch.setattr(
        conformance.importlib.util, "find_spec", lambda name: None if name in missing else find_spec(name)
    )
    report = check_preset("standard", games=1)
    assert report["pettingzoo"] == 'skipped: needs pettingzoo (pip install "yacht-rl[multiplayer]")'
    assert report["sb3"] == 'skipped: needs stable_baselines3 (pip install "yacht-rl[train]")'
    assert report["Yacht-v0"] == report["vector"] == report["YachtVersus-v0"] == "ok"


# --------------------------------------------------------------------------------------------------
# Broken envs, one per face: check_preset must fail, naming the face and what differed
# --------------------------------------------------------------------------------------------------
class _RewardOffByOne(YachtEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + (action >= R.PICK_OFFSET), terminated, truncated, info


class _LetsKeepAll(YachtEnv):
    def action_masks(self):
        mask = super().action_masks()
        mask[R.KEEP_ALL] = True  # 31 re-rolls nothing and is never legal
        return mask


class _NoUpperBonus(YachtEnv):
    """Forgets the upper bonus in the reward: only the family's presets can tell."""

    def step(self, action):
        before = self._game.upper
        obs, reward, terminated, truncated, info = super().step(action)
        threshold = self.rules.upper_bonus_threshold
        if self.rules.upper_bonus and before < threshold <= self._game.upper:
            reward -= self.rules.upper_bonus
        return obs, reward, terminated, truncated, info


class _VectorWrongTotal(YachtVectorEnv):
    def _info(self):
        info = super()._info()
        info["total"] = info["total"] + (self._game.turn > 3)
        return info


class _VectorDoubleReward(YachtVectorEnv):
    def _play(self, actions, legal):
        rewards, finished = super()._play(actions, legal)
        return rewards * 2, finished


class _VersusWrongSeat(YachtVersusEnv):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "seat": np.int64(1 - int(info["seat"]))}


def _pettingzoo_leaky_mask():
    from yacht_env.multiplayer import raw_env

    class LeakyMask(raw_env):
        def observe(self, agent):
            obs = super().observe(agent)
            return {**obs, "action_mask": self._table.on_turn.mask.astype(np.int8)}  # every seat sees the mover's

    return LeakyMask


@pytest.mark.parametrize(
    ("module", "name", "broken", "preset", "surface", "message"),
    [
        ("yacht_env.env", "YachtEnv", _RewardOffByOne, "standard", "Yacht-v0", r"the reward is \d+\.0, expected"),
        (
            "yacht_env.env",
            "YachtEnv",
            _LetsKeepAll,
            "standard",
            "Yacht-v0",
            r"action_masks\(\)\[31\] is True, expected False",
        ),
        ("yacht_env.env", "YachtEnv", _NoUpperBonus, "clubhouse", "Yacht-v0", r"the reward is .*the pick's points"),
        ("yacht_env.vector", "YachtVectorEnv", _VectorWrongTotal, "yatzy", "vector", r"info\['total'\]\[\d\] is"),
        ("yacht_env.sb3", "YachtVectorEnv", _VectorDoubleReward, "standard", "sb3", r"the reward is .* expected"),
        ("yacht_env.versus", "YachtVersusEnv", _VersusWrongSeat, "yahtzee", "YachtVersus-v0", r"info\['seat'\] is"),
        (
            "yacht_env.multiplayer",
            "raw_env",
            _pettingzoo_leaky_mask,
            "standard",
            "pettingzoo",
            r"not on turn but has legal",
        ),
    ],
    ids=["reward", "mask", "upper-bonus", "vector-total", "sb3-reward", "versus-seat", "pettingzoo-mask"],
)
def test_check_preset_catches_a_broken_env(monkeypatch, module, name, broken, preset, surface, message):
    import importlib

    if surface in ("sb3", "pettingzoo"):
        pytest.importorskip({"sb3": "stable_baselines3", "pettingzoo": "pettingzoo"}[surface])
    target = importlib.import_module(module)
    monkeypatch.setattr(target, name, broken if isinstance(broken, type) else broken())
    with pytest.raises(
        PresetCheckError, match=rf"check_preset\('{preset}'\) failed on {surface}, .*{message}"
    ) as error:
        check_preset(preset, surfaces=[surface])
    assert isinstance(error.value, ValueError) and "\n" not in str(error.value)
