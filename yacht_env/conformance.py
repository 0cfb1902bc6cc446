"""``check_preset``: seeded random legal play-throughs of a preset through every face of the env, checked at each step.

The way pgx ships ``api_test`` and PettingZoo ships ``api_test``: a variant is data (:class:`~yacht_env.rules.Rules`),
and this is the check that the data plays. For a preset (or your own ``Rules``), :func:`check_preset` plays seeded
games of random legal actions through ``Yacht-v0`` (its flat, dict and masked observations), the native vector env,
the Stable-Baselines3 adapter, ``YachtVersus-v0`` (both reward modes) and the PettingZoo env (PettingZoo's own
``api_test`` first), and checks every step against a shadow of each game kept here from the rules core's functions
(:func:`~yacht_env.rules.reroll`, :func:`~yacht_env.rules.legal_picks`, :func:`~yacht_env.rules.legal_action_mask`,
:func:`~yacht_env.rules.pick_outcome`), not from the envs' own game state: the observation's space, dtype and
:meth:`~yacht_env.encoding.ObservationEncoder.decode` (and the PettingZoo env's state in its space), the action masks,
the reward (the pick's points, bonuses included), the sheet and total in ``info``, the episode's end after one pick
per box, and what a finished game does (an all-True mask, a ``ValueError`` on the next step, the autoreset of the
batched envs).

A surface whose optional dependency is missing (``stable-baselines3`` for the SB3 adapter, ``pettingzoo`` for the
multiplayer env) is skipped and reported as such, never a crash. The first failure raises one
:class:`PresetCheckError` (a ``ValueError``) naming the preset, the surface, the game and step, and what differed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import win_rewards

#: The faces :func:`check_preset` plays, in order.
SURFACES = ("Yacht-v0", "vector", "sb3", "YachtVersus-v0", "pettingzoo")
#: The optional dependency of a surface, and the extra that installs it.
_NEEDS = {"sb3": ("stable_baselines3", "train"), "pettingzoo": ("pettingzoo", "multiplayer")}
# What the checks provoke on purpose, silenced while they run: the env's warning at the one illegal action played,
# and what PettingZoo's api_test says of any env (advice about the observation's type).
_EXPECTED_WARNINGS = (
    r"Yacht: an illegal action was ignored",
    r"Observation is not a NumPy array",
    r"Observation space for each agent probably should be",
)


class PresetCheckError(ValueError):
    """What :func:`check_preset` raises at the first check that fails: the preset, the surface, where, what."""


def check_preset(
    rules: str | R.Rules = "standard", *, seed: int = 0, games: int = 8, surfaces: Sequence[str] = SURFACES
) -> dict[str, str]:
    """Plays seeded random legal games of ``rules`` through every env face and checks each step.

    Run it on your own :class:`~yacht_env.rules.Rules` before training on them::

        import yacht_env

        yacht_env.check_preset(yacht_env.Rules("thirteen", categories=(*yacht_env.CATEGORIES, "three_of_a_kind")))

    Args:
        rules: A preset name or a :class:`~yacht_env.rules.Rules`.
        seed: Seeds the dice and the random actions: the same seed plays the same games.
        games: Games per surface (the vector envs play that many side by side), 1..1000.
        surfaces: Which of :data:`SURFACES` to play.

    Returns:
        Each surface's outcome, ``"ok"`` or ``"skipped: ..."`` (its optional dependency is not installed).

    Raises:
        PresetCheckError: A check failed (a ``ValueError``, naming the surface, game, step and what differed).
        ValueError: Bad arguments.
    """
    rules = R.get_rules(rules)
    if not R.is_int(games) or not 1 <= games <= 1000:
        raise ValueError(f"games must be an int in 1..1000, got {games!r}")
    if not R.is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if isinstance(surfaces, str) or not set(surfaces) <= set(SURFACES):
        raise ValueError(f"surfaces must be a list of names from {SURFACES}, got {surfaces!r}")
    checks = {
        "Yacht-v0": _check_single,
        "vector": _check_vector,
        "sb3": _check_sb3,
        "YachtVersus-v0": _check_versus,
        "pettingzoo": _check_pettingzoo,
    }
    report = {}
    for surface in (s for s in SURFACES if s in surfaces):
        module, extra = _NEEDS.get(surface, (None, None))
        if module is not None and importlib.util.find_spec(module) is None:
            report[surface] = f'skipped: needs {module} (pip install "yacht-rl[{extra}]")'
            continue
        with warnings.catch_warnings():
            for message in _EXPECTED_WARNINGS:
                warnings.filterwarnings("ignore", message=f".*{message}")  # after Gymnasium's logger's colour codes
            checks[surface](_Checker(rules, surface), np.random.default_rng([seed, SURFACES.index(surface)]), games)
        report[surface] = "ok"
    return report


# --------------------------------------------------------------------------------------------------
# The shadow of one game, and the checks every face shares
# --------------------------------------------------------------------------------------------------
class _Shadow:
    """One solo game replayed from its dice stream with the rules core's functions: what every face must show."""

    def __init__(self, rules: R.Rules, dice: np.ndarray, upper_first: bool = False) -> None:
        self.rules, self.upper_first = rules, upper_first
        self.codes = R.prefix_codes(np.asarray(dice).reshape(-1, R.NUM_DICE))
        self.roll = int(R.roll_from_code(self.codes[0, R.NUM_DICE]))
        self.rolls_left, self.open_mask, self.turn = R.MAX_ROLLS_LEFT, rules.all_open, 0
        self.upper = self.armed = self.total = self.picks = self.steps = 0
        self.sheet = np.full(rules.num_categories, -1, dtype=np.int16)

    @property
    def done(self) -> bool:
        return self.open_mask == 0

    def state(self) -> tuple[int, int, int, int, int]:
        return (self.roll, self.rolls_left, self.open_mask, self.upper, self.armed)

    def mask(self) -> np.ndarray:
        if self.done:  # a finished game allows every action (pgx's convention)
            return np.ones(self.rules.num_actions, dtype=bool)
        picks = R.legal_picks(self.rules, self.roll, self.open_mask)
        return R.legal_action_mask(self.roll, self.rolls_left, picks, True, self.rules.num_categories)

    def random_action(self, rng: np.random.Generator) -> int:
        """A random legal action; with ``upper_first``, a five of a kind goes in its face's upper box if it may."""
        legal = np.flatnonzero(self.mask())
        face = int(R.FIVE_OF_A_KIND_FACE[self.roll])
        if not (self.upper_first and face):
            return int(rng.choice(legal))
        if self.rolls_left and rng.random() < 0.5:  # a keep (the bonus stream re-rolls the same face)
            return int(rng.choice(legal[legal < R.PICK_OFFSET]))
        box = R.PICK_OFFSET + int(R.pick_tables(self.rules).upper_box[face])
        picks = legal[legal >= R.PICK_OFFSET]
        return box if box in picks else int(rng.choice(picks))

    def play(self, action: int) -> int:
        """Applies a legal action; returns the points it earns."""
        self.steps += 1
        if action < R.PICK_OFFSET:
            row = self.turn * R.ROLLS_PER_TURN + R.ROLLS_PER_TURN - self.rolls_left
            self.roll = int(R.reroll(self.roll, action, self.codes[row]))
            self.rolls_left -= 1
            return 0
        k = action - R.PICK_OFFSET
        points, box, self.upper, self.armed = R.pick_outcome(
            self.rules, self.roll, k, self.open_mask, self.upper, self.armed
        )
        self.sheet[k] = box
        self.total += points
        self.picks += 1
        self.open_mask &= ~(1 << k)
        if self.done:
            self.rolls_left = 0
        else:
            self.turn += 1
            self.roll = int(R.roll_from_code(self.codes[self.turn * R.ROLLS_PER_TURN, R.NUM_DICE]))
            self.rolls_left = R.MAX_ROLLS_LEFT
        return points


def _dice(rng: np.random.Generator, rules: R.Rules, *leading: int) -> np.ndarray:
    return rng.integers(1, R.NUM_FACES + 1, size=(*leading, *rules.stream_shape), dtype=np.int64)


def _bonus_dice(rules: R.Rules) -> np.ndarray:
    """A stream of five of a kinds: turn ``t`` shows face ``t % 6 + 1`` on every die.

    Played by a shadow with ``upper_first`` it earns the upper bonus, and a Yahtzee bonus and jokers where the rules
    have them, which random play seldom reaches.
    """
    faces = np.arange(rules.num_turns) % R.NUM_FACES + 1
    return np.broadcast_to(faces[:, None, None], rules.stream_shape).astype(np.int64)


def _shadows(rules: R.Rules, dice: np.ndarray) -> list[_Shadow]:
    """The shadows of games dealt ``dice`` (``(n, *stream_shape)``); game 1 (of 2 or more) plays the bonus stream."""
    if len(dice) > 1:
        dice[1] = _bonus_dice(rules)
    return [_Shadow(rules, d, upper_first=i == 1) for i, d in enumerate(dice)]


class _Checker:
    """The checks of one surface: each raises :class:`PresetCheckError` naming where it failed."""

    def __init__(self, rules: R.Rules, surface: str) -> None:
        self.rules, self.surface = rules, surface
        self.encoder = ObservationEncoder(rules)
        self.where = "setup"

    def fail(self, what: str) -> None:
        raise PresetCheckError(f"check_preset({self.rules.name!r}) failed on {self.surface}, {self.where}: {what}")

    def expect(self, ok: object, what: str) -> None:
        if not ok:
            self.fail(what)

    def equal(self, name: str, got: object, expected: object, dtype: str | None = None, shape: tuple | None = None):
        """``got`` equals ``expected`` (arrays element-wise), with ``dtype`` and ``shape`` where given."""
        if dtype is not None and np.asarray(got).dtype != np.dtype(dtype):
            self.fail(f"{name} has dtype {np.asarray(got).dtype}, expected {dtype}")
        if shape is not None and np.shape(got) != shape:
            self.fail(f"{name} has shape {np.shape(got)}, expected {shape}")
        got, expected = np.asarray(got), np.asarray(expected)
        if np.array_equal(got, expected):
            return
        if got.shape == expected.shape and got.ndim:  # where they differ first, then both in full
            at = tuple(int(i) for i in np.argwhere(got != expected)[0])
            first = f"{name}{list(at)} is {got[at].item()!r}, expected {expected[at].item()!r}"
            self.fail(f"{first} ({_short(got)}, expected {_short(expected)})")
        self.fail(f"{name} is {_short(got)}, expected {_short(expected)}")

    def flat(self, obs: object, shadow: _Shadow, name: str = "the observation") -> None:
        """A flat solo observation: in its space, float32, and decoding to the shadow's state."""
        space = self.encoder.flat_space
        self.equal(f"{name}'s shape", np.shape(obs), space.shape)
        self.expect(np.asarray(obs).dtype == np.float32, f"{name} has dtype {np.asarray(obs).dtype}, expected float32")
        self.expect(space.contains(obs), f"{name} is not in its space (values outside [0, 1]?)")
        self.equal(f"decode({name})", tuple(self.encoder.decode(obs)), shadow.state())

    def solo_info(self, info: dict[str, Any], shadow: _Shadow, illegal: bool = False, illegal_count: int = 0) -> None:
        """``Yacht-v0``'s info of one game: keys, dtypes and values."""
        c, a = self.rules.num_categories, self.rules.num_actions
        self.equal("info['dice']", info.get("dice"), R.ROLLS[shadow.roll], "int8", (R.NUM_DICE,))
        self.equal("info['rolls_left']", info.get("rolls_left"), shadow.rolls_left, "int64", ())
        self.equal("info['scores']", info.get("scores"), shadow.sheet, "int16", (c,))
        self.equal("info['total']", info.get("total"), shadow.total, "int64", ())
        self.equal("info['action_mask']", info.get("action_mask"), shadow.mask(), "int8", (a,))
        self.equal("info['illegal_action']", info.get("illegal_action"), illegal, "bool", ())
        self.equal("info['illegal_actions']", info.get("illegal_actions"), illegal_count, "int64", ())
        if self.rules.upper_bonus:
            self.equal("info['upper']", info.get("upper"), shadow.upper, "int64", ())
        if self.rules.yahtzee_bonus:
            self.equal("info['armed']", info.get("armed"), bool(shadow.armed), "bool", ())

    def reward(self, got: object, points: int) -> None:
        self.expect(isinstance(got, (float, np.floating)), f"the reward {got!r} is not a float")
        self.expect(got == points, f"the reward is {got!r}, expected {float(points)} (the pick's points)")


def _short(value: object) -> str:
    text = np.array2string(value, threshold=50, max_line_width=10**6) if isinstance(value, np.ndarray) else repr(value)
    text = " ".join(text.split())  # one line
    return text if len(text) <= 300 else text[:300] + "..."


# --------------------------------------------------------------------------------------------------
# Yacht-v0
# --------------------------------------------------------------------------------------------------
def _check_single(check: _Checker, rng: np.random.Generator, games: int) -> None:
    rules = check.rules
    env = gym.make("Yacht-v0", rules=rules)  # with Gymnasium's passive env checker
    check.equal("the action space", env.action_space, gym.spaces.Discrete(rules.num_actions))
    check.equal("the observation space", env.observation_space, check.encoder.flat_space)
    for g in range(games):
        _play_single(check, env, rng, g, illegal_first=g == 0, bonus=g == 1)
    check.where = "seeding"
    first, info = env.reset(seed=int(rng.integers(2**31)))
    again, info_again = env.reset(seed=env.unwrapped.np_random_seed)
    check.expect(np.array_equal(first, again), "reset(seed=s) twice gave two first observations")
    check.equal("info['dice'] after the same seed", info_again["dice"], info["dice"])
    for observation_type in ("dict", "masked"):
        typed = gym.make("Yacht-v0", rules=rules, observation_type=observation_type)
        check.equal(
            f"the {observation_type} observation space",
            typed.observation_space,
            check.encoder.space(observation_type),
        )
        _play_single(check, typed, rng, 0, observation_type=observation_type)


def _play_single(check, env, rng, g, illegal_first=False, observation_type="flat", bonus=False) -> None:
    rules = check.rules
    dice = _bonus_dice(rules) if bonus else _dice(rng, rules)
    shadow = _Shadow(rules, dice, upper_first=bonus)
    check.where = f"game {g} ({observation_type} observations), reset"
    obs, info = env.reset(seed=int(rng.integers(2**31)), options={"dice_stream": dice})
    _solo_observation(check, env, obs, shadow, observation_type)
    check.solo_info(info, shadow)
    illegal = 0
    if illegal_first:  # keeping all five dice is never legal: ignored, nothing changes
        check.where = f"game {g}, step 0 (the illegal action 31)"
        obs, reward, terminated, truncated, info = env.step(R.KEEP_ALL)
        illegal = 1
        check.reward(reward, 0)
        check.expect(not terminated and not truncated, "an ignored illegal action ended the episode")
        _solo_observation(check, env, obs, shadow, observation_type)
        check.solo_info(info, shadow, illegal=True, illegal_count=illegal)
    rewards = 0.0
    terminated = False
    while not shadow.done:
        action = shadow.random_action(rng)
        check.where = f"game {g}, step {shadow.steps + illegal} (action {action})"
        points = shadow.play(action)
        obs, reward, terminated, truncated, info = env.step(action)
        check.reward(reward, points)
        rewards += reward
        check.expect(
            terminated == shadow.done, f"terminated is {terminated} after pick {shadow.picks} of {rules.num_turns}"
        )
        check.expect(truncated is False, f"truncated is {truncated!r}, expected False")
        _solo_observation(check, env, obs, shadow, observation_type)
        check.solo_info(info, shadow, illegal_count=illegal)
    check.where = f"game {g}, the end"
    check.expect(rewards == shadow.total, f"the rewards sum to {rewards}, the total is {shadow.total}")
    check.equal("action_masks() of a finished game", env.unwrapped.action_masks(), shadow.mask(), "bool")
    try:
        env.step(int(np.flatnonzero(shadow.mask())[0]))
    except ValueError:
        pass
    else:
        check.fail("step() after the episode ended did not raise ValueError")


def _solo_observation(check: _Checker, env, obs, shadow: _Shadow, observation_type: str) -> None:
    check.equal("action_masks()", env.unwrapped.action_masks(), shadow.mask(), "bool")
    check.expect(env.observation_space.contains(obs), f"the {observation_type} observation is not in its space")
    if observation_type == "flat":
        check.flat(obs, shadow)
    elif observation_type == "masked":
        check.flat(obs["observation"], shadow, "obs['observation']")
        check.equal("obs['action_mask']", obs["action_mask"], shadow.mask(), "int8")
    else:
        check.equal("obs['dice']", obs["dice"], R.ROLLS[shadow.roll])
        check.equal("obs['rolls_left']", obs["rolls_left"], shadow.rolls_left)
        check.equal(
            "obs['open_categories']", obs["open_categories"], R.open_bits(check.rules.num_categories)[shadow.open_mask]
        )


# --------------------------------------------------------------------------------------------------
# The vector env and the SB3 adapter: N games at once, autoreset after each
# --------------------------------------------------------------------------------------------------
def _check_vector(check: _Checker, rng: np.random.Generator, games: int) -> None:
    rules = check.rules
    n, a = games, rules.num_actions
    envs = gym.make_vec("Yacht-v0", num_envs=n, vectorization_mode="vector_entry_point", rules=rules)
    dice = _dice(rng, rules, n)
    shadows = _shadows(rules, dice)
    check.where = "reset"
    obs, info = envs.reset(seed=int(rng.integers(2**31)), options={"dice_stream": dice})
    waiting = np.zeros(n, dtype=bool)  # finished at the last step: this step restarts it (next_step autoreset)
    tracked = np.ones(n, dtype=bool)  # still on the dice we dealt
    step = 0
    while True:
        check.expect(envs.observation_space.contains(obs), "the observations are not in their space")
        masks = envs.action_masks()
        check.equal("info['action_mask']", info["action_mask"], masks, "int8", (n, a))
        for key, dtype in (("dice", "int8"), ("rolls_left", "int64"), ("scores", "int16"), ("total", "int64")):
            check.expect(
                info[key].dtype == np.dtype(dtype), f"info[{key!r}] has dtype {info[key].dtype}, expected {dtype}"
            )
        for i in np.flatnonzero(tracked):
            s, check.where = shadows[i], f"game {i}, step {shadows[i].steps}"
            check.flat(obs[i], s, f"obs[{i}]")
            check.equal(f"action_masks()[{i}]", masks[i], s.mask())
            check.equal(f"info['scores'][{i}]", info["scores"][i], s.sheet)
            check.equal(f"info['total'][{i}]", info["total"][i], s.total)
            if rules.upper_bonus:
                check.equal(f"info['upper'][{i}]", info["upper"][i], s.upper)
        if not tracked.any():
            break
        actions = np.array([s.random_action(rng) for s in shadows])
        actions[~tracked] = [int(rng.choice(np.flatnonzero(m))) for m in masks[~tracked]]
        points = np.array([0 if s.done else s.play(int(x)) for s, x in zip(shadows, actions, strict=True)])
        step += 1
        check.where = f"step {step}"
        obs, rewards, terminated, truncated, info = envs.step(actions)
        check.expect(rewards.dtype == np.float64, f"the rewards have dtype {rewards.dtype}, expected float64")
        check.expect(not truncated.any(), "a legal game was truncated")
        for i in np.flatnonzero(tracked):
            check.where = f"game {i}, step {shadows[i].steps}"
            check.expect(
                rewards[i] == points[i], f"the reward is {rewards[i]}, expected {points[i]} (the pick's points)"
            )
            if waiting[i]:  # next_step autoreset: the action ignored, a new game started
                check.expect(rewards[i] == 0 and not terminated[i], "the autoreset step did not start a new game")
            else:
                check.expect(
                    terminated[i] == shadows[i].done, f"terminated is {terminated[i]} at pick {shadows[i].picks}"
                )
                if shadows[i].done:
                    check.expect(shadows[i].picks == rules.num_turns, "the game ended before every box was filled")
        tracked &= ~waiting
        waiting = terminated & tracked


def _check_sb3(check: _Checker, rng: np.random.Generator, games: int) -> None:
    from yacht_env.sb3 import YachtSB3VecEnv

    rules = check.rules
    n = games
    venv = YachtSB3VecEnv(n, rules=rules)
    dice = _dice(rng, rules, n)
    shadows = _shadows(rules, dice)
    venv.seed(int(rng.integers(2**31)))
    venv.set_options([{"dice_stream": d} for d in dice])
    check.where = "reset"
    obs = venv.reset()
    tracked = np.ones(n, dtype=bool)
    while tracked.any():
        masks = np.asarray(venv.env_method("action_masks"))
        check.expect(venv.observation_space.contains(obs[0]), "an observation is not in its space")
        for i in np.flatnonzero(tracked):
            check.where = f"game {i}, step {shadows[i].steps}"
            check.flat(obs[i], shadows[i], f"obs[{i}]")
            check.equal(f"env_method('action_masks')[{i}]", masks[i], shadows[i].mask(), "bool")
        actions = np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])
        points = {}
        for i in np.flatnonzero(tracked):
            actions[i] = shadows[i].random_action(rng)
            points[i] = shadows[i].play(int(actions[i]))
        obs, rewards, dones, infos = venv.step(actions)
        check.expect(rewards.dtype == np.float32, f"the rewards have dtype {rewards.dtype}, expected float32")
        for i in np.flatnonzero(tracked):
            s, check.where = shadows[i], f"game {i}, step {shadows[i].steps}"
            check.expect(
                rewards[i] == points[i], f"the reward is {rewards[i]}, expected {points[i]} (the pick's points)"
            )
            check.expect(dones[i] == s.done, f"done is {dones[i]} at pick {s.picks} of {rules.num_turns}")
            if s.done:
                check.flat(infos[i].get("terminal_observation"), s, "infos[i]['terminal_observation']")
                check.equal("infos[i]['score']", infos[i].get("score"), s.total)
                episode = infos[i].get("episode", {})
                check.equal("infos[i]['episode']['r']", episode.get("r"), float(s.total))
                check.equal("infos[i]['episode']['l']", episode.get("l"), s.steps)
                tracked[i] = False
    venv.close()


# --------------------------------------------------------------------------------------------------
# The tables: YachtVersus-v0 and the PettingZoo env
# --------------------------------------------------------------------------------------------------
class _ShadowedOpponent:
    """A random legal opponent that keeps the shadow of its own game and checks what the env shows it."""

    def __init__(self, check: _Checker, rng: np.random.Generator) -> None:
        self.check, self.rng, self.shadow = check, rng, None

    def act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        check, s = self.check, self.shadow
        check.equal("the opponent's observations' shape", np.shape(observations), (1, check.encoder.size))
        check.flat(observations[0], s, "the opponent's observation")
        check.equal("the opponent's action mask", action_masks[0], s.mask())
        action = s.random_action(self.rng)
        s.play(action)
        return np.array([action])


def _check_versus(check: _Checker, rng: np.random.Generator, games: int) -> None:
    rules = check.rules
    solo = check.encoder.size
    for reward_mode, count in (("score", games), ("win", 1)):
        opponent = _ShadowedOpponent(check, rng)
        env = gym.make("YachtVersus-v0", rules=rules, opponents=[opponent], seat="random", reward=reward_mode)
        view = MultiplayerEncoder(rules, 2)
        check.equal("the observation space", env.observation_space, view.space)
        for g in range(count):
            dice = _dice(rng, rules, 2)
            if g == 1:
                dice[0] = _bonus_dice(rules)
            me, opponent.shadow = _Shadow(rules, dice[0], upper_first=g == 1), _Shadow(rules, dice[1])
            check.where = f"game {g} (reward={reward_mode!r}), reset"
            obs, info = env.reset(seed=int(rng.integers(2**31)), options={"dice_stream": dice})
            seat = int(info["seat"])
            shadows = [me, opponent.shadow] if seat == 0 else [opponent.shadow, me]
            rewards = 0.0
            while True:
                check.expect(env.observation_space.contains(obs), "the observation is not in its space")
                check.flat(obs[:solo], me, "the learner's own part of the observation")
                _check_table_view(check, view, obs, shadows, seat)
                check.equal("info['action_mask']", info["action_mask"], me.mask(), "int8")
                check.equal("action_masks()", env.unwrapped.action_masks(), me.mask(), "bool")
                check.equal("info['scores']", info["scores"], np.stack([s.sheet for s in shadows]), "int16")
                check.equal("info['totals']", info["totals"], [s.total for s in shadows], "int64")
                check.equal("info['seat']", info["seat"], seat, "int64")
                if me.done:
                    break
                action = me.random_action(rng)
                check.where = f"game {g} (reward={reward_mode!r}, seat {seat}), step {me.steps} (action {action})"
                points = me.play(action)
                obs, reward, terminated, truncated, info = env.step(action)
                if reward_mode == "score":
                    check.reward(reward, points)
                elif me.done:
                    check.reward(reward, win_rewards(np.array([s.total for s in shadows]))[seat])
                else:
                    check.reward(reward, 0)
                rewards += reward
                check.expect(terminated == me.done, f"terminated is {terminated} at the learner's pick {me.picks}")
                check.expect(not truncated, "a legal game was truncated")
            check.where = f"game {g} (reward={reward_mode!r}), the end"
            check.expect(opponent.shadow.done, "the game ended before the opponent filled its sheet")
            if reward_mode == "score":
                check.expect(rewards == me.total, f"the rewards sum to {rewards}, the learner's total is {me.total}")
            try:
                env.step(0)
            except ValueError:
                pass
            else:
                check.fail("step() after the episode ended did not raise ValueError")


def _check_table_view(check: _Checker, view: MultiplayerEncoder, obs: np.ndarray, shadows: list, seat: int) -> None:
    """The table part of a multiplayer observation: each opponent's open boxes, bonus progress and total, the own
    total.
    """
    rules = check.rules
    at, n, threshold = check.encoder.size, rules.num_categories, rules.upper_bonus_threshold
    for j in range(1, len(shadows)):
        other = shadows[(seat + j) % len(shadows)]
        check.equal(f"opponent {j}'s open boxes in the observation", obs[at : at + n], R.open_bits(n)[other.open_mask])
        at += n
        bonus = [min(other.upper, threshold) / threshold, other.upper >= threshold] if rules.upper_bonus else []
        bonus += [other.armed != 0] if rules.yahtzee_bonus else []
        shown = obs[at : at + len(bonus)]
        check.expect(np.allclose(shown, bonus), f"opponent {j}'s bonus progress in the observation is {shown}")
        at += len(bonus)
        check.expect(np.isclose(obs[at], other.total / view.max_total), f"opponent {j}'s total in the observation")
        at += 1
    check.expect(np.isclose(obs[at], shadows[seat].total / view.max_total), "the own total in the observation")


def _check_pettingzoo(check: _Checker, rng: np.random.Generator, games: int) -> None:
    from pettingzoo.test import api_test

    from yacht_env.multiplayer import env as aec_env

    rules = check.rules
    check.where = "PettingZoo's api_test"
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # api_test prints its progress
            api_test(aec_env(num_players=2, rules=rules), num_cycles=60, verbose_progress=False)
    except AssertionError as error:
        check.fail(f"{type(error).__name__}: {error}")
    players = 3
    view = MultiplayerEncoder(rules, players)
    for g in range(games):
        table = aec_env(num_players=players, rules=rules)
        dice = _dice(rng, rules, players)
        shadows = _shadows(rules, dice)
        check.where = f"game {g}, reset"
        table.reset(seed=int(rng.integers(2**31)), options={"dice_stream": dice})
        agents = list(table.possible_agents)
        earned = dict.fromkeys(agents, 0.0)
        expected_on_turn = 0
        for agent in table.agent_iter():
            observation, reward, terminated, truncated, info = table.last()
            seat = agents.index(agent)
            s = shadows[seat]
            check.where = f"game {g}, {agent}, step {s.steps}"
            check.expect(not truncated, "a legal game was truncated")
            check.equal("info['totals']", info["totals"], [x.total for x in shadows], "int64")
            check.equal("info['scores']", info["scores"], np.stack([x.sheet for x in shadows]), "int16")
            if terminated:
                check.expect(all(x.done for x in shadows), "terminated before every sheet was full")
                winners = (np.array([x.total for x in shadows]) == max(x.total for x in shadows)).astype(np.int8)
                check.equal("info['winners']", info["winners"], winners, "int8")
                table.step(None)
                continue
            check.equal("the agent on turn", seat, expected_on_turn)
            check.expect(table.observation_space(agent).contains(observation), "the observation is not in its space")
            check.expect(table.state_space.contains(table.state()), "the state is not in its space")
            check.flat(observation["observation"][: check.encoder.size], s, "the own part of the observation")
            _check_table_view(check, view, observation["observation"], shadows, seat)
            check.equal("observation['action_mask']", observation["action_mask"], s.mask(), "int8")
            waiting = agents[(seat + 1) % players]
            check.expect(
                players == 1 or not table.observe(waiting)["action_mask"].any(),
                f"{waiting} is not on turn but has legal actions",
            )
            check.equal("info['player_on_turn']", info["player_on_turn"], seat, "int64")
            action = s.random_action(rng)
            points = s.play(action)
            table.step(action)
            check.expect(table.rewards[agent] == points, f"the reward is {table.rewards[agent]}, expected {points}")
            for other in agents:
                earned[other] += table.rewards[other]
            if action >= R.PICK_OFFSET:
                expected_on_turn = (seat + 1) % players
        check.where = f"game {g}, the end"
        check.expect(not table.agents, f"agents left at the end: {table.agents}")
        check.equal("each agent's rewards summed", [earned[a] for a in agents], [float(x.total) for x in shadows])
