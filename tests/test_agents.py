"""Specification of the baseline agents: legal actions, the interface, each policy's defining property,
and the errors of ``make_agent``."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from yacht_agents import Agent, make_agent
from yacht_agents.greedy import SACRIFICE_ORDER
from yacht_env import rules as R
from yacht_env.encoding import ObservationEncoder
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import evaluate

PRESET_NAMES = ("standard", "classic")
BUILTIN_SPECS = ("random", "greedy", "optimal")
NUM_STATES = 3_000


def random_states(seed: int, n: int = NUM_STATES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` uniformly drawn decision states ``(roll, rolls_left, open_mask)`` (at least one category open)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, R.NUM_ROLLS, n), rng.integers(0, 3, n), rng.integers(1, R.ALL_OPEN + 1, n)


def observe(rules: str, roll, rolls_left, open_mask) -> tuple[np.ndarray, np.ndarray]:
    """The env's flat observations and action masks of states."""
    return ObservationEncoder(rules).flat(roll, rolls_left, open_mask), R.legal_action_mask(roll, rolls_left, open_mask)


def state(dice: tuple[int, ...], rolls_left: int, open_categories) -> tuple[np.ndarray, np.ndarray]:
    """Observation and mask of one state given as a player sees it (``open_categories``: names, or "all")."""
    open_mask = R.ALL_OPEN if open_categories == "all" else R.open_mask_from(open_categories)
    return observe("standard", R.roll_index(dice), rolls_left, open_mask)


@pytest.fixture(scope="module")
def ppo_model(tmp_path_factory) -> str:
    """A tiny MaskablePPO trained for 256 steps on the SB3 adapter, saved as a .zip."""
    from sb3_contrib import MaskablePPO

    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(4)
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    path = tmp_path_factory.mktemp("ppo") / "tiny.zip"
    model.save(path)
    return str(path)


@pytest.fixture(params=[*BUILTIN_SPECS, "ppo"])
def spec(request) -> str:
    """Each agent's spec; the PPO model is trained only when a test asks for it."""
    return f"ppo:{request.getfixturevalue('ppo_model')}" if request.param == "ppo" else request.param


# --------------------------------------------------------------------------------------------------
# Every agent: the interface and legal actions
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rules", PRESET_NAMES)
def test_batched_actions_are_legal(spec, rules):
    obs, masks = observe(rules, *random_states(1))
    actions = make_agent(spec, rules=rules, seed=0).act(obs, masks)
    assert actions.shape == (NUM_STATES,) and np.issubdtype(actions.dtype, np.integer)
    assert masks[np.arange(NUM_STATES), actions].all()


def test_single_state_gives_one_legal_int(spec):
    obs, masks = observe("standard", *random_states(2, 200))
    agent = make_agent(spec, seed=0)
    for one_obs, one_mask in zip(obs, masks, strict=True):
        action = agent.act(one_obs, one_mask)
        assert type(action) is int and one_mask[action]


def test_agent_has_its_spec_as_name_and_the_interface(spec):
    agent = make_agent(spec)
    assert isinstance(agent, Agent) and agent.name == spec and agent.rules == R.PRESETS["standard"]


@pytest.mark.parametrize("spec", ["greedy", "optimal"])
def test_deterministic_agents_act_the_same_batched_and_one_by_one(spec):
    obs, masks = observe("standard", *random_states(3, 300))
    agent = make_agent(spec)
    batched = agent.act(obs, masks)
    assert batched.tolist() == [agent.act(o, m) for o, m in zip(obs, masks, strict=True)]
    assert make_agent(spec).act(obs, masks).tolist() == batched.tolist()


def test_ppo_agent_is_deterministic(ppo_model):
    obs, masks = observe("standard", *random_states(4, 500))
    spec = f"ppo:{ppo_model}"
    assert make_agent(spec).act(obs, masks).tolist() == make_agent(spec).act(obs, masks).tolist()


@pytest.mark.parametrize(
    ("obs_shape", "mask_shape"),
    [((3, 64), (2, 44)), ((3, 63), (3, 44)), ((3, 64), (3, 43)), ((64,), (3, 44)), ((2, 3, 64), (2, 3, 44))],
)
def test_act_rejects_mismatched_shapes(obs_shape, mask_shape):
    with pytest.raises(ValueError, match="expected observations"):
        make_agent("greedy").act(np.zeros(obs_shape, np.float32), np.ones(mask_shape, bool))


def test_act_rejects_a_state_without_legal_actions():
    obs, masks = observe("standard", *random_states(5, 4))
    masks[2] = False
    with pytest.raises(ValueError, match="at least one legal action"):
        make_agent("random", seed=0).act(obs, masks)


@pytest.mark.parametrize("spec", ["random", "greedy", "optimal", "win", "ppo:standard"])
def test_an_empty_batch_gives_no_actions(spec):
    """A batch of no states (no game on turn) is answered as numpy answers an empty batch: with no actions (win and
    PPO models once raised numpy's and torch's reshape errors)."""
    agent = make_agent(spec, seed=0)
    actions = agent.act(np.zeros((0, agent.observation_size), np.float32), np.zeros((0, 44), bool))
    assert actions.shape == (0,) and actions.dtype == np.intp


# --------------------------------------------------------------------------------------------------
# random
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dice", "rolls_left", "open_categories"),
    [((1, 2, 2, 4, 6), 2, "all"), ((3, 3, 3, 5, 5), 0, ["ones", "yacht", "choice"])],
)
def test_random_is_uniform_over_the_legal_actions(dice, rolls_left, open_categories):
    obs, mask = state(dice, rolls_left, open_categories)
    draws = 20_000
    many_obs, many_masks = np.repeat(obs[None], draws, axis=0), np.repeat(mask[None], draws, axis=0)
    actions = make_agent("random", seed=7).act(many_obs, many_masks)
    counts = np.bincount(actions, minlength=R.NUM_ACTIONS)
    assert (counts[~mask] == 0).all()
    expected = draws / mask.sum()
    # Every legal action appears, each within 30% of its share (about 8 standard deviations here).
    assert (np.abs(counts[mask] - expected) < 0.3 * expected).all(), counts[mask]


def test_random_is_reproducible_from_its_seed():
    obs, masks = observe("standard", *random_states(6, 500))
    first = make_agent("random", seed=11).act(obs, masks)
    assert make_agent("random", seed=11).act(obs, masks).tolist() == first.tolist()
    assert make_agent("random", seed=12).act(obs, masks).tolist() != first.tolist()


# --------------------------------------------------------------------------------------------------
# greedy: the documented rule, case by case (standard rules; keep-masks index the sorted dice)
# --------------------------------------------------------------------------------------------------
ALL_BUT = {name: [c for c in R.CATEGORIES if c != name] for name in R.CATEGORIES}
GREEDY_CASES = [
    # 1. take a made hand while re-rolls are left
    ((1, 2, 3, 4, 5), 2, "all", 32 + R.Category.LITTLE_STRAIGHT),
    ((2, 3, 4, 5, 6), 2, "all", 32 + R.Category.BIG_STRAIGHT),
    ((3, 3, 3, 3, 3), 1, "all", 32 + R.Category.YACHT),
    ((2, 2, 5, 5, 5), 2, "all", 32 + R.Category.FULL_HOUSE),
    # 2. three or more of the target face: keep them (the 5s are dice 2, 3, 4)
    ((2, 2, 5, 5, 5), 2, ALL_BUT["full_house"], 0b11100),
    ((4, 6, 6, 6, 6), 1, "all", 0b11110),
    # 3. a straight four faces from done: one die of each (Big Straight first on a tie)
    ((1, 2, 3, 4, 6), 2, "all", 0b11110),
    ((1, 2, 3, 4, 6), 2, ALL_BUT["big_straight"], 0b01111),
    ((1, 1, 2, 3, 4), 1, "all", 0b11101),
    # 4. two pairs with Full House open: keep both
    ((1, 1, 2, 2, 5), 2, "all", 0b01111),
    # 5. the target face: most dice among faces that can pay, then the higher face
    ((1, 1, 2, 2, 5), 2, ALL_BUT["full_house"], 0b01100),
    ((1, 1, 1, 5, 6), 2, ["fives", "sixes", "choice"], 0b10000),
    ((1, 1, 3, 5, 6), 2, ["little_straight", "choice"], 0b01101),  # no face pays: an open straight's run
    ((1, 2, 4, 5, 6), 2, ["choice"], 0b11100),  # only Choice: keep the 4s, 5s and 6s
    # a keep of all five dice scores instead
    ((4, 4, 5, 6, 6), 1, ["choice"], 32 + R.Category.CHOICE),
    ((6, 6, 6, 6, 6), 1, ["sixes", "choice"], 32 + R.Category.SIXES),  # 30 each: the tie sacrifices sixes
    # no re-rolls: the most points now, ties and zeros to the category worth least (SACRIFICE_ORDER)
    ((1, 1, 1, 2, 3), 0, ["ones", "choice", "yacht"], 32 + R.Category.CHOICE),
    ((2, 3, 4, 6, 6), 0, ["ones", "full_house", "yacht"], 32 + R.Category.ONES),
    ((1, 1, 2, 2, 3), 0, ["fours", "yacht"], 32 + R.Category.YACHT),
    ((2, 2, 5, 5, 5), 0, ["full_house", "choice"], 32 + R.Category.FULL_HOUSE),
]


@pytest.mark.parametrize(("dice", "rolls_left", "open_categories", "expected"), GREEDY_CASES)
def test_greedy_follows_its_documented_rule(dice, rolls_left, open_categories, expected):
    obs, mask = state(dice, rolls_left, open_categories)
    assert make_agent("greedy").act(obs, mask) == expected


def test_greedy_sacrifice_order_names_every_category_once():
    assert sorted(SACRIFICE_ORDER) == sorted(R.CATEGORY_SCORERS)


# Digests of greedy's actions on 100,000 seeded random states (seed 2024), as the rule written for Yacht's 12
# categories alone played them (before it read the family's sheets by name): the generalised rule plays Yacht's
# presets exactly as before (and so the whole state space: checked once, exhaustively, when it was written).
GREEDY_DIGESTS = {"standard": "a304054aa7de37a0", "classic": "7544e4477f0e46e8", "knizia": "d0a71e849ee9d7b1"}


@pytest.mark.parametrize("rules", sorted(GREEDY_DIGESTS))
def test_greedy_plays_yachts_presets_as_it_always_did(rules):
    rng = np.random.default_rng(2024)
    n = 100_000
    roll, rolls_left, open_mask = rng.integers(0, R.NUM_ROLLS, n), rng.integers(0, 3, n), rng.integers(1, 4096, n)
    obs, masks = observe(rules, roll, rolls_left, open_mask)
    actions = make_agent("greedy", rules=rules).act(obs, masks).astype("<i2")
    assert hashlib.sha256(actions.tobytes()).hexdigest()[:16] == GREEDY_DIGESTS[rules]


@pytest.mark.parametrize(("rules", "low", "high"), [("standard", 140.0, 150.0), ("classic", 142.0, 152.0)])
def test_greedy_scores_within_its_band(rules, low, high):
    # 2,000 seeded games: the mean's 95% CI is about +-1.6, well inside the band.
    result = evaluate([make_agent("greedy", rules=rules)], 2_000, seed=0, rules=rules).results["greedy"]
    assert low < result.scores.mean() < high


# --------------------------------------------------------------------------------------------------
# optimal
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rules", PRESET_NAMES)
def test_optimal_plays_the_solvers_best_action(rules):
    states = random_states(8)
    obs, masks = observe(rules, *states)
    actions = make_agent("optimal", rules=rules).act(obs, masks)
    solution = solve(rules)
    assert actions.tolist() == solution.best_action(*states).tolist()
    q = solution.q_values(*states)
    assert (q[np.arange(NUM_STATES), actions] == q.max(axis=1)).all()


# --------------------------------------------------------------------------------------------------
# make_agent errors
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "foo", "Random", "ppo", "ppo:", "greedy ", "optimal:1", "search", "search:"])
def test_unknown_spec_is_a_value_error(bad):
    specs = "random, greedy, optimal, win, win:P, duel, duel:optimal, ppo:PATH, jax:PATH, search:PATH"
    expected = rf"^unknown agent .*; expected one of {specs}$"
    with pytest.raises(ValueError, match=expected):
        make_agent(bad)


@pytest.mark.parametrize("bad", ["win:²", "win:²³", "win:٣", "win:" + "9" * 5000, "win:-2", "win:"])
def test_a_win_spec_takes_ascii_digits_only(bad):
    # str.isdigit accepts superscripts (a key of AZERTY keyboards) and other scripts' digits that int() cannot read
    from yacht_agents import parse_spec

    expected = r"^unknown agent .*; the win agent is 'win' or 'win:P' with P in 2..10 players$"
    with pytest.raises(ValueError, match=expected):
        parse_spec(bad)
    with pytest.raises(ValueError, match=expected):
        make_agent(bad)


def test_a_model_path_that_is_not_a_regular_file(tmp_path):
    link = tmp_path / "model.zip"
    link.symlink_to("/dev/null")
    for path in ("/dev/null", str(link)):
        message = f"^cannot load PPO model '{re.escape(path)}': it is not a regular file"
        with pytest.raises(ValueError, match=message):
            make_agent(f"ppo:{path}")


@pytest.mark.parametrize("path", ["a" * 5000, "a/" * 3000 + "model.zip", "a" * 5000 + ".zip"])
def test_a_path_too_long_to_look_up_is_a_value_error(path):
    with pytest.raises(ValueError, match=r"^cannot load PPO model 'a.*': its path cannot be looked up \(File name"):
        make_agent(f"ppo:{path}")


def test_unknown_rules_is_a_value_error():
    with pytest.raises(ValueError, match="unknown rules 'nope'"):
        make_agent("greedy", rules="nope")


def test_missing_model_file(tmp_path):
    path = tmp_path / "missing.zip"
    with pytest.raises(ValueError, match=f"^cannot load PPO model '{re.escape(str(path))}': file not found$"):
        make_agent(f"ppo:{path}")


def test_model_path_that_is_a_directory(tmp_path):
    with pytest.raises(ValueError, match=f"^cannot load PPO model '{re.escape(str(tmp_path))}': it is a directory$"):
        make_agent(f"ppo:{tmp_path}")


@pytest.mark.parametrize("content", [b"", b"\x00garbage" * 64, b"PK\x03\x04 not really a zip"])
def test_corrupt_model_file(tmp_path, content):
    path = tmp_path / "corrupt.zip"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"^cannot load PPO model '{re.escape(str(path))}': not a MaskablePPO model"):
        make_agent(f"ppo:{path}")


@pytest.mark.parametrize(("obs_size", "num_actions"), [(63, 44), (64, 45)])
def test_model_of_other_spaces_is_rejected(tmp_path, obs_size, num_actions):
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    class Other(gym.Env):
        observation_space = gym.spaces.Box(0.0, 1.0, (obs_size,), np.float32)
        action_space = gym.spaces.Discrete(num_actions)

    path = tmp_path / "other.zip"
    MaskablePPO("MlpPolicy", Other(), device="cpu").save(path)
    message = f"^cannot use PPO model '{re.escape(str(path))}': it was trained on observation space"
    with pytest.raises(ValueError, match=message):
        make_agent(f"ppo:{path}")


# --------------------------------------------------------------------------------------------------
# Copies: a #LABEL at the end of a spec
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("optimal#2", ("optimal", None)),
        ("greedy#b", ("greedy", None)),
        ("random#seat_3", ("random", None)),
        ("win:3#a-1", ("win", "3")),
        ("ppo:standard#copy", ("ppo", "standard")),
        ("ppo:models/x#y.zip", ("ppo", "models/x#y.zip")),  # not a label: a dot is no label character
    ],
)
def test_a_label_names_a_copy_and_changes_nothing_else(spec, parsed):
    from yacht_agents import parse_spec

    assert parse_spec(spec) == parsed


def test_a_copy_acts_as_its_agent_under_its_own_name():
    obs, masks = observe("standard", *random_states(0))
    for base in ("optimal", "greedy"):
        copy = make_agent(f"{base}#2")
        assert copy.name == f"{base}#2" and type(copy) is type(make_agent(base))
        assert copy.act(obs, masks).tolist() == make_agent(base).act(obs, masks).tolist()
    assert make_agent("win:3#x").table_players == 3


@pytest.mark.parametrize("bad", ["#2", "greedy#", "greedy#x#y", "foo#2", "greedy#" + "a" * 33, "greedy#a b", "ppo:#x"])
def test_a_bad_label_or_a_bad_spec_before_it_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"^unknown agent "):
        make_agent(bad)
