"""Seeded fuzzing: arbitrary actions (legal or not) in every face of the env, each step checked against an
independent model of the game written here (``tests/reference.py`` scores; nothing from ``yacht_env``), and
arbitrary bad input that must end in one ``ValueError``, never another exception.

Sized for CI (a few hundred thousand steps in all); ``YACHT_FUZZ_SCALE=20`` runs twenty times as many.
"""

from __future__ import annotations

import os
from itertools import product

import numpy as np
import pytest
from reference import EXPECTED_CATEGORIES, kept_dice, reference_score

from yacht_env import YachtEnv
from yacht_env.game import game_streams
from yacht_env.vector import YachtVectorEnv

SCALE = int(os.environ.get("YACHT_FUZZ_SCALE", "1"))
# Illegal actions are the point here: the env's one warning about them (at an env's first) is required.
ILLEGAL_WARNING = r"Yacht: an illegal action was ignored \(the state did not change"
PENALTY = -0.25


class ReferenceGame:
    """One solo game from its dice stream, restated from the rules page (docs/rules.md): sorted dice, re-rolls,
    picks, the sheet."""

    def __init__(self, stream: np.ndarray, preset: str, canonical_keeps: bool) -> None:
        self.stream, self.preset, self.canonical = stream.tolist(), preset, canonical_keeps
        self.turn, self.rolls_left, self.sheet = 0, 2, [None] * 12
        self.dice = tuple(sorted(self.stream[0][0]))
        self.illegal = 0

    def legal(self, action: int) -> bool:
        if action >= 32:
            return self.sheet[action - 32] is None
        if self.rolls_left == 0 or action == 31:
            return False
        if not self.canonical:
            return True
        kept = kept_dice(self.dice, action)
        return all(kept_dice(self.dice, m) != kept for m in range(action))  # the smallest mask keeping it

    def step(self, action: int) -> tuple[float, bool]:
        """Reward and whether the game is over (illegal actions change nothing)."""
        if not self.legal(action):
            self.illegal += 1
            return PENALTY, False
        if action < 32:
            kept = list(kept_dice(self.dice, action))
            fresh = self.stream[self.turn][3 - self.rolls_left][: 5 - len(kept)]
            self.dice, self.rolls_left = tuple(sorted(kept + fresh)), self.rolls_left - 1
            return 0.0, False
        points = reference_score(self.dice, EXPECTED_CATEGORIES[action - 32], self.preset)
        self.sheet[action - 32] = points
        if self.turn == 11:
            self.rolls_left = 0
            return float(points), True
        self.turn, self.rolls_left = self.turn + 1, 2
        self.dice = tuple(sorted(self.stream[self.turn][0]))
        return float(points), False

    def check(self, info: dict) -> None:
        assert tuple(info["dice"].tolist()) == self.dice
        assert int(info["rolls_left"]) == self.rolls_left
        assert info["scores"].tolist() == [-1 if p is None else p for p in self.sheet]
        assert int(info["total"]) == sum(p for p in self.sheet if p is not None)
        assert int(info["illegal_actions"]) == self.illegal
        mask = info["action_mask"].tolist()
        if not all(p is not None for p in self.sheet):
            assert mask == [int(self.legal(a)) for a in range(44)]


def fuzz_actions(rng: np.random.Generator, mask: np.ndarray, arbitrary: float) -> np.ndarray:
    """Mostly uniform legal actions, a fraction ``arbitrary`` drawn from all 44 (often illegal)."""
    legal = np.where(mask, rng.random(mask.shape), -1.0).argmax(axis=-1)
    anything = rng.integers(0, 44, size=legal.shape)
    return np.where(rng.random(legal.shape) < arbitrary, anything, legal)


@pytest.mark.parametrize(("preset", "canonical_keeps"), list(product(["standard", "classic"], [True, False])))
def test_single_env_against_the_reference_model(preset, canonical_keeps):
    env = YachtEnv(rules=preset, canonical_keeps=canonical_keeps, illegal_action_penalty=PENALTY)
    rng = np.random.default_rng(hash((preset, canonical_keeps)) % 2**32)
    steps = 0
    with pytest.warns(UserWarning, match=ILLEGAL_WARNING):
        for game in range(150 * SCALE):
            stream = game_streams(77, [game])[0]
            model = ReferenceGame(stream, preset, canonical_keeps)
            _, info = env.reset(options={"dice_stream": stream})
            model.check(info)
            done = False
            while not done:
                action = int(fuzz_actions(rng, info["action_mask"], arbitrary=0.3))
                expected_reward, expected_over = model.step(action)
                _, reward, terminated, truncated, info = env.step(action)
                steps += 1
                assert reward == expected_reward and terminated == expected_over
                assert truncated == (model.illegal >= 100 and not terminated)
                model.check(info)
                done = terminated or truncated
    assert steps > 150 * SCALE * 12


@pytest.mark.parametrize("autoreset_mode", ["next_step", "same_step"])
def test_vector_env_against_the_reference_model(autoreset_mode):
    n = 64
    env = YachtVectorEnv(n, illegal_action_penalty=PENALTY, autoreset_mode=autoreset_mode)
    rng = np.random.default_rng(5)
    streams = game_streams(11, range(n))
    models = [ReferenceGame(streams[i], "standard", True) for i in range(n)]
    _, info = env.reset(options={"dice_stream": streams})
    for i, model in enumerate(models):
        model.check({key: value[i] for key, value in info.items()})
    live = np.ones(n, dtype=bool)  # each game is checked until its first game ends
    with pytest.warns(UserWarning, match=ILLEGAL_WARNING):
        for _ in range(300 * SCALE):
            actions = fuzz_actions(rng, info["action_mask"], arbitrary=0.2)
            _, rewards, terminated, truncated, info = env.step(actions)
            for i in np.flatnonzero(live):
                expected_reward, expected_over = models[i].step(int(actions[i]))
                assert rewards[i] == expected_reward and terminated[i] == expected_over
                if terminated[i] or truncated[i]:
                    live[i] = False  # its info may already show the next game (same_step)
                else:
                    models[i].check({key: value[i] for key, value in info.items() if not key.startswith("_")})
            if not live.any():
                break
    assert not live.any()


# --------------------------------------------------------------------------------------------------
# Bad input: one ValueError, never another exception
# --------------------------------------------------------------------------------------------------
GARBAGE = [
    None, True, False, 1.5, -1, 44, 10**20, "3", b"3", [3], (3,), {3: 3}, np.array([3]), np.array(3.0),
    np.float32(3), np.bool_(False), np.array([[1]]), object(), float("nan"), float("inf"), 2**63, -(2**63) - 1,
]  # fmt: skip


@pytest.mark.parametrize("action", GARBAGE, ids=[repr(g)[:20] for g in GARBAGE])
def test_single_env_step_garbage_is_one_value_error(action):
    env = YachtEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="^action must be an int in 0..43, got "):
        env.step(action)
    env.step(32)  # and the env still works


def test_vector_env_step_garbage_is_one_value_error():
    env = YachtVectorEnv(3)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    candidates = [*GARBAGE, np.array([1.0, 2.0, 3.0]), np.array([True, False, True]), np.array([1, 2, 99]),
                  np.array([1, 2]), np.array([-1, 0, 0]), np.zeros((3, 1), int), ["1", "2", "3"]]  # fmt: skip
    for actions in candidates:
        with pytest.raises(ValueError, match="^actions must be"):
            env.step(actions)
    env.step(fuzz_actions(rng, env.action_masks(), 0.0))


@pytest.mark.parametrize(
    "options",
    [5, "x", [], {"dice_stream": None}, {"dice_stream": 3}, {"dice_stream": [[1]]}, {"seed": 1}, {1: 2}],
    ids=str,
)
def test_reset_garbage_options_are_one_value_error(options):
    with pytest.raises(ValueError):
        YachtEnv().reset(options=options)
    with pytest.raises(ValueError):
        YachtVectorEnv(2).reset(options=options)
