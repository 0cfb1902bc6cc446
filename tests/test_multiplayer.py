"""Multiplayer Yacht: the PettingZoo AEC env and the versus envs (one learner seat against fixed opponents).

* PettingZoo's ``api_test``, ``seed_test`` and ``state_test`` for 1..5 players, both reward modes, every preset, on
  ``env()``'s fast wrappers and on PettingZoo's own (the fallback), with no warning from the env in ``api_test``.
* ``state()``: a known position value by value, every seat's part equal to that agent's own view, invariants.
* One player plays exactly the game ``Yacht-v0`` plays on the same stream (and the same seed).
* Invariants over thousands of seeded 2..5-player games: 12 picks each, seat order, masks, ``"score"``
  rewards summing to totals, ``"win"`` rewards zero-sum and matching the totals.
* The versus envs: Gymnasium's checker, seats, opponents acting inside ``step``, the win reward, batch vs one.
"""

from __future__ import annotations

import re
import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test, parallel_api_test, seed_test, state_test  # noqa: E402

from yacht_env import YachtEnv  # noqa: E402
from yacht_env import rules as R  # noqa: E402
from yacht_env.game import game_streams, win_rewards  # noqa: E402
from yacht_env.multiplayer import env as aec_env  # noqa: E402
from yacht_env.multiplayer import raw_env  # noqa: E402
from yacht_env.versus import YachtVersusEnv, YachtVersusVectorEnv  # noqa: E402

PRESETS = ("standard", "classic", "knizia")
#: Every agent's info keys, the same at every step from the reset on ("winners" all zeros until the end).
INFO_KEYS = {"dice", "rolls_left", "player_on_turn", "scores", "totals", "illegal_action", "illegal_actions", "winners"}


#: api_test's advice for Box or Discrete observations: these are Dicts (with the action mask) by design.
DICT_ADVICE = ("Observation is not a NumPy array", "Observation space for each agent probably should be")


def warnings_of(check, *args, **kwargs) -> list[str]:
    """Runs ``check`` (one of PettingZoo's tests) and returns every warning it raised but :data:`DICT_ADVICE`."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check(*args, **kwargs)
    return [str(w.message) for w in caught if not str(w.message).startswith(DICT_ADVICE)]


#: The env's one warning in PettingZoo's state_test, which plays actions sampled without the mask: the first ignored.
ILLEGAL_WARNING = "Yacht: an illegal action was ignored"


def state_test_warnings(make, **kwargs) -> list[str]:
    """Runs PettingZoo's ``state_test`` on ``make(**kwargs)`` and its parallel env; the start of each warning left."""
    from yacht_env.multiplayer import parallel_env

    left = warnings_of(state_test, make(**kwargs), parallel_env(**kwargs), num_cycles=50)
    return [message.removeprefix("\x1b[33mWARN: ")[: len(ILLEGAL_WARNING)] for message in left]


@pytest.mark.parametrize("rules", PRESETS)
@pytest.mark.parametrize("reward", ["score", "win"])
@pytest.mark.parametrize("num_players", [1, 2, 3, 4, 5])
def test_pettingzoo_api_and_seed_tests(num_players, reward, rules):
    # api_test's reset(options={"options": 1}) (its check that reset takes options) draws no warning from the env.
    assert warnings_of(api_test, aec_env(num_players=num_players, reward=reward, rules=rules), num_cycles=200) == []
    seed_test(lambda **kw: aec_env(num_players=num_players, reward=reward, rules=rules, **kw), num_cycles=200)
    assert state_test_warnings(aec_env, num_players=num_players, reward=reward, rules=rules) == [ILLEGAL_WARNING]


def uniform(rng: np.random.Generator, mask: np.ndarray) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


@pytest.mark.parametrize("rules", PRESETS)
def test_one_player_plays_exactly_yacht_v0(rules):
    for seed in range(20):
        stream = game_streams(seed, [0])[0]
        table = raw_env(num_players=1, rules=rules)
        table.reset(options={"dice_stream": stream[None]})
        solo = YachtEnv(rules=rules)
        obs, info = solo.reset(options={"dice_stream": stream})
        rng = np.random.default_rng(seed)
        for agent in table.agent_iter():
            observation, reward, termination, truncation, table_info = table.last()
            if termination or truncation:
                assert table_info["totals"][0] == info["total"]
                table.step(None)
                continue
            np.testing.assert_array_equal(observation["observation"][: obs.size], obs)
            np.testing.assert_array_equal(observation["action_mask"], info["action_mask"])
            np.testing.assert_array_equal(table_info["dice"], info["dice"])
            np.testing.assert_array_equal(table_info["scores"][0], info["scores"])
            action = uniform(rng, info["action_mask"])
            obs, solo_reward, terminated, _, info = solo.step(action)
            table.step(action)
            assert table.rewards[agent] == solo_reward
            assert table.terminations[agent] == terminated


def test_one_player_with_a_seed_deals_yacht_v0s_dice():
    table = raw_env(num_players=1)
    table.reset(seed=7)
    _, info = YachtEnv().reset(seed=7)
    np.testing.assert_array_equal(table.last()[-1]["dice"], info["dice"])


@pytest.mark.parametrize("reward", ["score", "win"])
@pytest.mark.parametrize("num_players", [2, 3, 5])
def test_invariants_over_many_seeded_games(num_players, reward):
    games = {2: 300, 3: 200, 5: 100}[num_players]
    table = raw_env(num_players=num_players, reward=reward)
    agents = table.possible_agents
    rng = np.random.default_rng(num_players)
    for game in range(games):
        table.reset(seed=game)
        picks = dict.fromkeys(agents, 0)
        returns = dict.fromkeys(agents, 0.0)
        expected_seat = 0
        for agent in table.agent_iter():
            observation, reward_so_far, termination, truncation, info = table.last()
            returns[agent] += reward_so_far
            if termination or truncation:
                assert termination and not truncation
                table.step(None)
                continue
            seat = agents.index(agent)
            assert seat == expected_seat == info["player_on_turn"]  # whole turns in seat order
            assert info.keys() == INFO_KEYS and not info["winners"].any()  # every key at every step; no winner yet
            for other in agents:  # the mask is all zeros for agents not on turn
                assert table.observe(other)["action_mask"].any() == (other == agent)
            action = uniform(rng, observation["action_mask"])
            table.step(action)
            if action >= R.PICK_OFFSET:
                picks[agent] += 1
                expected_seat = (seat + 1) % num_players
        totals = info["totals"]
        assert all(count == 12 for count in picks.values())
        assert (info["scores"] >= 0).all() and (info["scores"].sum(axis=1) == totals).all()
        np.testing.assert_array_equal(info["winners"], totals == totals.max())
        if reward == "score":
            assert [returns[a] for a in agents] == totals.tolist()
        else:
            assert abs(sum(returns.values())) < 1e-12
            np.testing.assert_allclose([returns[a] for a in agents], win_rewards(totals))


@pytest.mark.parametrize(
    ("totals", "expected"),
    [
        ([100, 90], [1, -1]),
        ([90, 90], [0, 0]),
        ([100, 100, 90], [0.5, 0.5, -1]),
        ([100, 90, 90], [1, -0.5, -0.5]),
        ([50], [0]),
        ([7, 7, 7], [0, 0, 0]),
    ],
)
def test_win_rewards(totals, expected):
    np.testing.assert_allclose(win_rewards(np.array(totals)), expected)


def test_dice_follow_the_player_whatever_the_seat():
    streams = game_streams(3, range(2))
    table = raw_env(num_players=2)
    table.reset(options={"dice_stream": streams})
    first = table.last()[-1]["dice"]
    table.reset(options={"dice_stream": streams[::-1]})
    second_player_first_dice = None
    for agent in table.agent_iter():
        observation, _, _, _, info = table.last()
        if agent == "player_1":
            second_player_first_dice = info["dice"]
            break
        table.step(int(R.PICK_OFFSET + np.flatnonzero(observation["action_mask"][R.PICK_OFFSET :])[0]))
    np.testing.assert_array_equal(second_player_first_dice, first)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_players": 0}, "num_players must be an int in 1..10"),
        ({"num_players": 11}, "num_players must be an int in 1..10"),
        ({"num_players": True}, "num_players must be an int in 1..10"),
        ({"reward": "points"}, "reward must be one of"),
        ({"rules": "kniffel"}, "unknown rules"),
        ({"illegal_action": "warn"}, "illegal_action must be one of"),
    ],
)
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        raw_env(**kwargs)


def illegal_counts(table) -> dict[str, int]:
    """Each agent's ``infos[agent]["illegal_actions"]``, checking its type (np.int64, as ``Yacht-v0``'s)."""
    assert all(type(info["illegal_actions"]) is np.int64 for info in table.infos.values())
    return {agent: int(info["illegal_actions"]) for agent, info in table.infos.items()}


def test_illegal_actions_follow_yacht_v0s_policy():
    table = raw_env(num_players=2, illegal_action_penalty=-1.0, max_illegal_actions=3)
    table.reset(seed=0)
    assert illegal_counts(table) == {"player_0": 0, "player_1": 0}
    before = table.observe("player_0")
    first = r"Yacht: an illegal action was ignored .*\(the first: player_0, action 31 keeps all five dice"
    with pytest.warns(UserWarning, match=first):
        table.step(31)  # keeps everything: never legal
    assert table.rewards["player_0"] == -1.0 and table.agent_selection == "player_0"
    np.testing.assert_array_equal(table.observe("player_0")["observation"], before["observation"])
    assert illegal_counts(table) == {"player_0": 1, "player_1": 0}
    assert all(info["illegal_action"] == np.array(True) for info in table.infos.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per env, not per illegal action nor per agent
        table.step(32 + R.get_rules("standard").categories.index("choice"))  # legal: player_1's turn
        assert illegal_counts(table) == {"player_0": 1, "player_1": 0}
        assert not any(info["illegal_action"] for info in table.infos.values())
        table.step(31)
        assert illegal_counts(table) == {"player_0": 1, "player_1": 1} and not any(table.truncations.values())
        table.step(31)  # the table's third: the agents' counts together reach max_illegal_actions
        assert illegal_counts(table) == {"player_0": 1, "player_1": 2}
        assert all(table.truncations.values())
        assert all(not info["winners"].any() for info in table.infos.values())  # a truncated game has no winner
        table.reset(seed=1)
        assert illegal_counts(table) == {"player_0": 0, "player_1": 0}  # counted per game
        table.step(31)
        assert illegal_counts(table) == {"player_0": 1, "player_1": 0}
    strict = raw_env(illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="action 31 keeps all five dice"):
        strict.step(31)
    with pytest.raises(ValueError, match="action must be an int in 0..43"):
        strict.step(True)


def test_a_rejected_step_changes_nothing_not_even_the_pending_reward():
    table = raw_env(num_players=1, illegal_action="raise")
    table.reset(seed=0)
    table.step(32 + R.get_rules("standard").categories.index("choice"))  # always scores: 5..30 points
    observation, reward, *_ = table.last()
    assert reward > 0
    before = (dict(table.rewards), dict(table._cumulative_rewards), table.agent_selection, table.infos["player_0"])
    with pytest.raises(ValueError, match="^player_0: action 31 keeps all five dice"):
        table.step(31)
    after = (dict(table.rewards), dict(table._cumulative_rewards), table.agent_selection, table.infos["player_0"])
    assert after == before and table.last()[1] == reward
    np.testing.assert_array_equal(table.observe("player_0")["observation"], observation["observation"])


def test_the_raw_env_before_reset_and_after_the_game_is_one_clear_error():
    table = raw_env(num_players=1)
    for call, args in (("step", (32,)), ("last", ()), ("observe", ("player_0",))):
        with pytest.raises(ValueError, match=r"^call reset\(\) before"):
            getattr(table, call)(*args)
    table.reset(seed=0)
    with pytest.raises(ValueError, match="^unknown agent 'player_7'"):
        table.observe("player_7")
    for _ in table.agent_iter():
        observation, _, terminated, truncated, _ = table.last()
        table.step(None if terminated or truncated else int(np.flatnonzero(observation["action_mask"])[-1]))
    assert table.agents == []
    for call in ("step", "last"):
        with pytest.raises(ValueError, match="^the game is over and every agent has left it; call reset"):
            getattr(table, call)(*((32,) if call == "step" else ()))
    table.reset(seed=0)  # and a new game starts
    assert table.agents == ["player_0"] and table.last()[1] == 0.0


def outcome(call, *args):
    """What ``call(*args)`` gives: its value, or its exception's type and message."""
    try:
        return "value", call(*args)
    except (AssertionError, AttributeError, KeyError, ValueError) as error:
        return type(error).__name__, str(error)


def same(a, b) -> bool:
    """Equal values of the same types, arrays with the same dtype, shape, bytes and writeability."""
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and (a.dtype, a.shape, a.tobytes(), a.flags.writeable) == (
            b.dtype,
            b.shape,
            b.tobytes(),
            b.flags.writeable,
        )
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_env_is_pettingzoos_own_wrappers_in_every_call():
    """``env()``'s wrappers read the raw env directly where PettingZoo's forward attribute by attribute: the same
    values and the same errors as ``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(raw_env()))``, call for call
    (before reset, legal and illegal actions, out-of-range actions, the agents leaving, after the game)."""
    from pettingzoo.utils import wrappers

    from yacht_env.multiplayer_wrappers import fast_wrappers_fit

    if not fast_wrappers_fit():  # a PettingZoo the subclasses do not fit (1.24.0 to 1.24.2): env() is PettingZoo's own
        pytest.skip("env() puts on PettingZoo's own wrappers with this PettingZoo: no subclass to compare")
    ours = aec_env(num_players=3, illegal_action_penalty=-1.0)
    theirs = raw_env(num_players=3, illegal_action_penalty=-1.0)
    theirs = wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(theirs))
    names = ("agents", "agent_selection", "rewards", "terminations", "truncations", "infos", "num_agents")
    reads = [lambda e, name=name: getattr(e, name) for name in (*names, "_cumulative_rewards")]

    def last(e):
        return e.last()

    reads += [last, lambda e: e.observe("player_1"), lambda e: e.observe("nobody"), str]

    def check(call, *args):
        assert same(outcome(call(ours), *args), outcome(call(theirs), *args))

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the illegal-action warning and PettingZoo's step after the end
        for read in reads:  # before reset
            assert same(outcome(read, ours), outcome(read, theirs))
        check(lambda e: e.step, 0)
        check(lambda e: lambda: next(iter(e.agent_iter())))
        for game in range(3):
            ours.reset(seed=game)
            theirs.reset(seed=game)
            for agent, other in zip(ours.agent_iter(), theirs.agent_iter(), strict=True):
                assert agent == other
                for read in reads:
                    assert same(outcome(read, ours), outcome(read, theirs))
                observation, _, terminated, truncated, _ = ours.last()
                draw = rng.random()
                if terminated or truncated:
                    action = None
                elif draw < 0.05:  # out of the space, or None while playing: the assertion
                    action = [44, -1, None, 1.5, np.array([3])][int(rng.integers(5))]
                elif draw < 0.15:
                    action = int(rng.integers(44))  # often illegal: ignored, penalised
                else:
                    action = uniform(rng, observation["action_mask"])
                    action = np.int64(action) if draw < 0.3 else action
                check(lambda e: e.step, action)
        for read in reads:  # every agent has left
            if read is last:  # theirs reads the departed agent's reward, a bare KeyError; ours says why
                assert outcome(read, theirs)[0] == "KeyError"
                assert outcome(read, ours) == ("ValueError", LEFT + "last()")
                continue
            assert same(outcome(read, ours), outcome(read, theirs))
        check(lambda e: e.step, None)


LEFT = "the game is over and every agent has left it; call reset() before "


@pytest.mark.parametrize("num_players", [1, 2, 3])
def test_last_after_every_agent_has_left_is_one_clear_error(num_players):
    table = aec_env(num_players=num_players)
    table.reset(seed=0)
    for _ in table.agent_iter():
        observation, _, terminated, truncated, _ = table.last()
        table.step(None if terminated or truncated else int(np.flatnonzero(observation["action_mask"])[0]))
    assert table.agents == []
    for observe in (True, False):
        with pytest.raises(ValueError, match=rf"^{re.escape(LEFT)}last\(\)$"):
            table.last(observe)
    table.reset(seed=1)  # and a new game starts
    assert table.last()[1] == 0.0


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
@pytest.mark.parametrize("num_players", [2, 3, 5])
def test_observations_and_infos_are_built_fresh_every_step(num_players, rules):
    """What the env keeps between picks (each seat's table part of its observation, the infos' scores and totals)
    is never stale: at every step every agent's observation is the encoder's, built from the table there and then,
    and the infos hold the table's sheets and totals."""
    from yacht_env.encoding import MultiplayerEncoder

    table = raw_env(num_players=num_players, rules=rules, illegal_action_penalty=-1.0)
    encoder = MultiplayerEncoder(rules, num_players)
    rng = np.random.default_rng(num_players)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the illegal-action warning
        for game in range(3):
            table.reset(seed=game)
            for _ in table.agent_iter():
                state = table.unwrapped._table
                for seat, other in enumerate(table.possible_agents):
                    expected = encoder.observe(state, seat)
                    np.testing.assert_array_equal(table.observe(other)["observation"], expected)
                for info in table.infos.values():
                    np.testing.assert_array_equal(info["scores"], state.sheets)
                    np.testing.assert_array_equal(info["totals"], state.totals())
                observation, _, terminated, truncated, _ = table.last()
                if terminated or truncated:
                    table.step(None)
                else:
                    illegal = rng.random() < 0.1
                    table.step(int(rng.integers(44)) if illegal else uniform(rng, observation["action_mask"]))


@pytest.mark.parametrize(
    ("num_players", "rules"),
    [(p, r) for p in (1, 2, 3) for r in ("standard", "yahtzee")]
    + [(5, "standard"), pytest.param(5, "yahtzee", marks=pytest.mark.slow)],
)
def test_the_table_view_of_one_table_is_the_batchs(num_players, rules):
    """``MultiplayerEncoder.observe`` of one table (its own game, then ``table_part``, or given ``pick_part``) equals
    the batched observation of the same table bit for bit, margin included, for every seat at every step of random
    games; and :meth:`~yacht_env.encoding.MultiplayerEncoder.decode` reads every view back to the table's state."""
    from yacht_env.encoding import MultiplayerEncoder
    from yacht_env.game import TableState, draw_stream

    n, rng = 16, np.random.default_rng(num_players)
    encoder = MultiplayerEncoder(rules, num_players)
    batch = TableState(rules, num_players, n)
    streams = draw_stream(rng, rules, n * num_players)
    batch.start(streams.reshape(n, num_players, *streams.shape[1:]))
    one = TableState(rules, num_players)
    fields = ("roll", "rolls_left", "open_mask", "total", "upper", "armed")
    playing = np.ones(n, dtype=bool)
    while playing.any():
        for seat in range(num_players):
            views = encoder.observe(batch, np.full(n, seat))
            for t in range(n):
                for p, game in enumerate(one.players):
                    for name in fields:
                        setattr(game, name, int(getattr(batch.players, name)[t * num_players + p]))
                np.testing.assert_array_equal(encoder.observe(one, seat), views[t])
                kept = encoder.pick_part(one, seat)  # what the AEC env keeps between picks
                assert np.array_equal(encoder.observe(one, seat, pick_part=kept), encoder.observe(one, seat))
            assert_decodes(encoder, views, batch, seat)
        actions = np.where(batch.mask, rng.random(batch.mask.shape), -1.0).argmax(axis=1)
        _, over = batch.play(actions, playing)
        playing &= ~over


def assert_decodes(encoder, views: np.ndarray, table, seat: int) -> None:
    """``encoder.decode(views)`` (and of each view alone) is the state of ``seat`` and its opponents at ``table``."""
    p = encoder.num_players
    games = table.players
    own = np.arange(table.num_tables) * p + seat
    others = np.arange(table.num_tables)[:, None] * p + (seat + np.arange(1, p)) % p
    expected = [games.roll[own], games.rolls_left[own], games.open_mask[own], games.upper[own], games.armed[own]]
    expected += [games.total[own], games.open_mask[others], games.total[others], games.upper[others]]
    expected += [games.armed[others]]
    decoded = encoder.decode(views)
    assert decoded._fields[5:] == ("total", "opponent_open", "opponent_total", "opponent_upper", "opponent_armed")
    for got, want in zip(decoded, expected, strict=True):
        assert got.dtype == np.intp and np.array_equal(got, want)
    alone = encoder.decode(views[0])
    assert [type(x) for x in alone[:6]] == [int] * 6 and alone.opponent_open.shape == (p - 1,)
    assert all(np.array_equal(got, want[0]) for got, want in zip(alone, expected, strict=True))


def test_decode_refuses_a_view_of_another_size():
    from yacht_env.encoding import MultiplayerEncoder

    with pytest.raises(ValueError, match=r"expected table observations of shape \(\.\.\., 79\), got \(64,\)"):
        MultiplayerEncoder("standard", 2).decode(np.zeros(64, dtype=np.float32))


# --------------------------------------------------------------------------------------------------
# Versus envs
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("observation_type", ["flat", "masked"])
def test_versus_env_passes_gymnasiums_checker(observation_type):
    env = gym.make("YachtVersus-v0", opponents=["greedy"], observation_type=observation_type).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*Yacht: an illegal action was ignored", category=UserWarning)
        gym.utils.env_checker.check_env(env)


@pytest.mark.parametrize("reward", ["score", "win"])
def test_versus_games_are_whole_games_with_the_opponents_inside(reward):
    env = YachtVersusVectorEnv(64, opponents=["greedy", "random"], reward=reward, autoreset_mode="same_step")
    obs, info = env.reset(seed=0)
    assert obs.shape == (64, env._encoder.size)
    rng = np.random.default_rng(0)
    returns = np.zeros(64)
    finished = 0
    seats = set()
    for _ in range(400):
        mask = info["action_mask"]
        assert mask.any(axis=1).all()
        actions = np.where(mask, rng.random(mask.shape), -1).argmax(axis=1)
        obs, rewards, terminated, truncated, info = env.step(actions)
        assert not truncated.any()
        returns += rewards
        for i in np.flatnonzero(terminated):
            totals, seat = info["final_totals"][i], info["final_seat"][i]
            seats.add(int(seat))
            expected = totals[seat] if reward == "score" else win_rewards(totals)[seat]
            assert returns[i] == pytest.approx(expected)
            returns[i] = 0
            finished += 1
    assert finished > 100 and seats == {0, 1, 2}  # random seats each game


def test_versus_single_env_is_the_vector_env_with_one_table():
    single = YachtVersusEnv(opponents=["optimal"], seat=1, reward="win")
    vector = YachtVersusVectorEnv(1, opponents=["optimal"], seat=1, reward="win")
    streams = game_streams(5, range(2))
    obs, info = single.reset(options={"dice_stream": streams})
    vobs, vinfo = vector.reset(options={"dice_stream": streams[None]})
    assert info["seat"] == 1 and info["totals"][0] > 0  # the opponent in seat 0 played its first turn
    rng = np.random.default_rng(1)
    done = False
    while not done:
        np.testing.assert_array_equal(obs, vobs[0])
        action = uniform(rng, info["action_mask"])
        obs, reward, terminated, truncated, info = single.step(action)
        vobs, vrewards, vterminated, _, vinfo = vector.step(np.array([action]))
        assert reward == vrewards[0] and terminated == vterminated[0]
        done = terminated or truncated
    with pytest.raises(ValueError, match="the episode is over"):
        single.step(32)


def test_versus_learner_dice_follow_the_learner_whatever_its_seat():
    streams = game_streams(2, range(2))
    first = YachtVersusEnv(opponents=["greedy"], seat=0)
    second = YachtVersusEnv(opponents=["greedy"], seat=1)
    _, a = first.reset(options={"dice_stream": streams})
    _, b = second.reset(options={"dice_stream": streams})
    np.testing.assert_array_equal(a["dice"], b["dice"])  # the learner's first roll, dealt from streams[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": []}, "opponents must be a list of 1..9"),
        ({"opponents": "greedy"}, "opponents must be a list of 1..9"),
        ({"opponents": ["nobody"]}, "unknown agent 'nobody'"),
        ({"opponents": [object()]}, "opponent 0 must be an agent"),
        ({"seat": 2}, "seat must be 'random' or an int in 0..1"),
        ({"reward": "points"}, "reward must be one of"),
    ],
)
def test_versus_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        YachtVersusVectorEnv(2, **{"opponents": ["greedy"], **kwargs})


def test_the_env_layer_never_imports_the_players_or_the_lab():
    """``yacht_env`` stands below ``yacht_agents`` and ``yacht_lab``: no import of them anywhere in its source, not
    even a lazy one inside a function (spec strings reach the players through an entry point)."""
    import ast
    from pathlib import Path

    import yacht_env

    for path in Path(yacht_env.__file__).parent.rglob("*.py"):  # the rules package too
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                assert name.split(".")[0] not in ("agents", "yacht_agents", "yacht_lab"), f"{path.name} imports {name}"


def test_versus_spec_strings_resolve_through_the_installed_entry_point():
    from yacht_agents import make_agent
    from yacht_env.versus import agent_resolver

    assert agent_resolver() is make_agent
    env = YachtVersusVectorEnv(2, opponents=["greedy", "random"])
    assert [type(o).__name__ for o in env.opponents] == ["GreedyAgent", "RandomAgent"]
    assert env.opponents[1].name == "random"


def test_versus_takes_a_resolver_passed_in():
    from yacht_agents import make_agent

    calls = []

    def resolver(spec, rules, seed):
        calls.append((spec, rules.name, seed))
        return make_agent("greedy" if spec == "house" else spec, rules, seed=seed)

    env = YachtVersusVectorEnv(2, opponents=["house", "random"], rules="classic", resolver=resolver)
    assert calls == [("house", "classic", 0), ("random", "classic", 1)]
    assert type(env.opponents[0]).__name__ == "GreedyAgent"
    single = gym.make("YachtVersus-v0", opponents=["house"], resolver=resolver)
    assert type(single.unwrapped._tables.opponents[0]).__name__ == "GreedyAgent"


def test_versus_without_a_resolver_installed_is_one_clear_error(monkeypatch):
    import importlib.metadata

    from yacht_agents import make_agent

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kwargs: [])
    with pytest.raises(ValueError, match=r"^agent specs need a resolver: no installed package declares 'make_agent'"):
        YachtVersusVectorEnv(2, opponents=["greedy"])
    # agent objects need no resolver
    env = YachtVersusVectorEnv(2, opponents=[make_agent("greedy")])
    assert env.num_players == 2


@pytest.mark.parametrize("players", [1, 2, 3])
@pytest.mark.parametrize("reward", ["score", "win"])
def test_the_common_steps_shortcut_agrees_with_the_general_step(players, reward):
    """``step`` takes a shortcut for a Python int that is legal in a game on; a numpy int goes the general way.
    Both give the same observations, rewards, cumulative rewards, terminations and infos at every step of
    seeded games (illegal actions mixed in, the game's end and the agents leaving included)."""
    rng = np.random.default_rng(players)
    fast, general = raw_env(num_players=players, reward=reward), raw_env(num_players=players, reward=reward)
    for seed in range(3):
        fast.reset(seed=seed)
        general.reset(seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the first ignored illegal action warns
            while fast.agents:
                assert fast.agent_selection == general.agent_selection
                views = [
                    (env.rewards, env._cumulative_rewards, env.terminations, env.truncations, env.infos)
                    for env in (fast, general)
                ]
                assert same(*(tuple(view) for view in views))
                assert all(same(fast.observe(a), general.observe(a)) for a in fast.agents)
                agent = fast.agent_selection
                if fast.terminations[agent]:
                    action = None
                elif rng.random() < 0.1:
                    action = int(rng.choice(np.flatnonzero(fast.observe(agent)["action_mask"] == 0)))
                else:
                    action = int(rng.choice(np.flatnonzero(fast.observe(agent)["action_mask"])))
                fast.step(action)
                general.step(None if action is None else np.int64(action))
            assert not general.agents


# --------------------------------------------------------------------------------------------------
# The Parallel API (PettingZoo's converter for turn-based games) and PettingZoo's common AEC wrappers
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
def test_parallel_env_passes_pettingzoos_parallel_api_test(rules):
    from yacht_env.multiplayer import parallel_env

    assert warnings_of(parallel_api_test, parallel_env(num_players=3, rules=rules), num_cycles=300) == []


@pytest.mark.parametrize("num_players", [1, 2, 3])
def test_parallel_env_plays_whole_games_one_mover_a_step(num_players):
    from yacht_env.multiplayer import parallel_env

    table = parallel_env(num_players=num_players)
    observations, infos = table.reset(seed=num_players)
    rng = np.random.default_rng(0)
    earned = dict.fromkeys(table.possible_agents, 0.0)
    while table.agents:
        movers = [a for a in table.agents if observations[a]["action_mask"].any()]
        assert movers == [table.unwrapped.agent_selection]  # only the agent on turn has a legal action
        actions = {a: uniform(rng, observations[a]["action_mask"]) if a in movers else 0 for a in table.agents}
        observations, rewards, terminations, truncations, infos = table.step(actions)
        assert not any(truncations.values())
        for agent, reward in rewards.items():
            earned[agent] += reward
    totals = table.unwrapped._table.totals()
    assert [earned[a] for a in table.possible_agents] == [float(t) for t in totals]
    assert (table.unwrapped._table.sheets >= 0).all()


def test_pufferlib_takes_the_parallel_env_not_the_aec_env():
    # What PufferLib's PettingZoo emulation (pufferlib.emulation.PettingZooPufferEnv) does with the env it is given,
    # call for call (docs/multiplayer.md): PufferLib is not in the test extra (pufferlib-core pins its own torch).
    from yacht_env.multiplayer import parallel_env

    aec = aec_env(num_players=2)
    assert aec.reset(seed=0) is None  # PettingZoo's AEC API: so PufferLib's `obs, info = env.reset(seed=seed)` fails
    with pytest.raises(TypeError, match="cannot unpack non-iterable NoneType"):
        obs, info = aec.reset(seed=0)

    table = parallel_env(num_players=3)
    single = table.possible_agents[0]
    observation_space, action_space = table.observation_space(single), table.action_space(single)
    action_space.seed(0)
    observations, infos = table.reset(seed=0)
    assert all(observation_space.contains(ob) for ob in observations.values())  # PufferLib's check_space
    rng, steps = np.random.default_rng(0), 0
    while True:
        # One action per possible agent (a policy's batch), the agent on turn's legal; PufferLib drops the actions of
        # agents no longer in env.agents and steps with the rest.
        batch = np.array([action_space.sample() for _ in table.possible_agents])
        for i, agent in enumerate(table.possible_agents):
            if agent in observations and observations[agent]["action_mask"].any():
                batch[i] = uniform(rng, observations[agent]["action_mask"])
        actions = {agent: batch[i] for i, agent in enumerate(table.possible_agents) if agent in table.agents}
        observations, rewards, dones, truncateds, infos = table.step(actions)
        steps += 1
        if all(dones.values()) or all(truncateds.values()) or not table.agents:  # PufferLib's `done`
            break
    assert not table.agents and all(dones.values()) and not any(truncateds.values())
    assert (table.unwrapped._table.sheets >= 0).all() and steps >= 3 * 12  # every box of every sheet filled


@pytest.mark.parametrize("wrapper", ["TerminateIllegalWrapper", "CaptureStdoutWrapper", "BaseWrapper"])
def test_the_aec_env_passes_api_test_under_pettingzoos_common_wrappers(wrapper, capsys):
    from pettingzoo.utils import wrappers

    make = {
        "TerminateIllegalWrapper": lambda: wrappers.TerminateIllegalWrapper(raw_env(num_players=2), illegal_reward=-1),
        "CaptureStdoutWrapper": lambda: wrappers.CaptureStdoutWrapper(raw_env(num_players=2, render_mode="human")),
        "BaseWrapper": lambda: wrappers.BaseWrapper(raw_env(num_players=2)),
    }[wrapper]
    table = wrappers.OrderEnforcingWrapper(make())
    assert warnings_of(api_test, table, num_cycles=200) == []
    if wrapper == "CaptureStdoutWrapper":  # render() returns what the human render prints
        table.reset(seed=0)
        capsys.readouterr()
        assert "player_0 to play" in table.render() and capsys.readouterr().out == ""


def test_multi_episode_env_plays_the_games_back_to_back():
    # Not through api_test: MultiEpisodeEnv brings the agents back for the next game, which api_test forbids.
    from pettingzoo.utils.wrappers.multi_episode_env import MultiEpisodeEnv

    table = MultiEpisodeEnv(aec_env(num_players=2), num_episodes=3)
    table.reset(seed=0)
    rng = np.random.default_rng(0)
    picks = 0
    for _ in table.agent_iter():
        observation, _, terminated, truncated, _ = table.last()
        action = None if terminated or truncated else uniform(rng, observation["action_mask"])
        picks += action is not None and action >= R.PICK_OFFSET
        table.step(action)
    assert picks == 3 * 2 * R.NUM_CATEGORIES and table.agents == []


def test_terminate_illegal_wrapper_ends_the_game_at_an_illegal_move():
    from pettingzoo.utils import wrappers

    table = wrappers.OrderEnforcingWrapper(wrappers.TerminateIllegalWrapper(raw_env(num_players=2), illegal_reward=-1))
    table.reset(seed=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*made an illegal move", category=UserWarning)
        table.step(R.KEEP_ALL)  # never legal
    assert all(table.terminations.values()) and table.rewards["player_0"] == -1


def _gymnasium_1_3_contains(self, x) -> bool:
    """``gymnasium.spaces.Discrete.contains`` as gymnasium 1.3 (the jax extra's, capped by gymnax) has it: a Python
    int is cast to int64 before its range is checked, so 10**20 raises ``OverflowError``.
    """
    if isinstance(x, int):
        as_np = np.dtype(self.dtype).type(x)
    elif isinstance(x, np.generic | np.ndarray) and np.issubdtype(x.dtype, np.integer) and x.shape == ():
        as_np = x
    else:
        return False
    return bool(self.start <= as_np < self.start + self.n) and np.can_cast(as_np.dtype, self.dtype)


HUGE_ACTIONS = [10**20, -(10**20), 2**63, -(2**63) - 1, np.uint64(2**64 - 1), np.int64(2**62), 1e30, float("nan")]


@pytest.mark.parametrize("gymnasium_contains", ["installed", "1.3"])
@pytest.mark.parametrize("action", HUGE_ACTIONS, ids=repr)
def test_a_huge_or_odd_action_is_refused_by_every_env_in_its_own_words(action, gymnasium_contains, monkeypatch):
    """Never an ``OverflowError``: the raw env and the single and versus envs say ``ValueError``; ``env()`` and
    ``parallel_env()``, PettingZoo's wrapper stack, its ``AssertionError`` "not in action space" (as for 50).
    """
    from yacht_env.multiplayer import parallel_env

    if gymnasium_contains == "1.3":
        monkeypatch.setattr(gym.spaces.Discrete, "contains", _gymnasium_1_3_contains)
    message = r"^action must be an int in 0\.\.43"
    table = raw_env(num_players=2)
    table.reset(seed=0)
    single, versus = YachtEnv(), YachtVersusEnv(opponents=["random"])
    for env in (single, versus):
        env.reset(seed=0)
    for step in (table.step, single.step, versus.step):
        with pytest.raises(ValueError, match=message):
            step(action)
    wrapped, parallel = aec_env(num_players=2), parallel_env(num_players=2)
    wrapped.reset(seed=0)
    parallel.reset(seed=0)
    for step, act in ((wrapped.step, action), (parallel.step, {"player_0": action, "player_1": None})):
        with pytest.raises(AssertionError, match="^action is not in action space$"):
            step(act)
    with pytest.raises(AssertionError, match="^action is not in action space$"):
        wrapped.step(50)  # the same answer as an action just out of range


# --------------------------------------------------------------------------------------------------
# The state (PettingZoo's state()), the reset options PettingZoo's tests pass, env()'s wrappers on any PettingZoo
# --------------------------------------------------------------------------------------------------
def test_the_state_of_a_known_position_is_the_whole_table_in_seat_order():
    streams = np.ones((2, 12, 3, 5), dtype=np.int64)
    streams[0, 0, 0] = [3, 6, 3, 5, 3]  # player_0's first roll: it scores Threes at once (9)
    streams[1, 0, :2] = [[1, 2, 3, 4, 5], [6, 6, 2, 6, 6]]  # player_1 re-rolls all five: 2 6 6 6 6, one roll left
    table = aec_env(num_players=2)
    table.reset(options={"dice_stream": streams})
    table.step(R.PICK_OFFSET + 2)
    table.step(0)
    assert table.agent_selection == "player_1"
    dice = [0.0] * 30
    for i, face in enumerate([2, 6, 6, 6, 6]):
        dice[6 * i + face - 1] = 1.0
    counts, rolls_left = [0, 1 / 5, 0, 0, 0, 4 / 5], [0, 1, 0]
    score_now = [0, 2 / 50, 0, 0, 0, 24 / 50, 0, 24 / 50, 0, 0, 26 / 50, 0]  # player_1's boxes, all open
    seat_0 = [1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 11 / 12, 9 / 297]  # Threes filled, 11 of 12 open, 9 points
    seat_1 = [1] * 12 + [1, 0]
    expected = np.array(dice + counts + rolls_left + score_now + seat_0 + seat_1 + [0, 1], dtype=np.float32)
    state = table.state()
    assert state.dtype == np.float32 and state.shape == (81,) == table.state_space.shape
    np.testing.assert_array_equal(state, expected)
    assert table.state_space == gym.spaces.Box(0.0, 1.0, (81,), np.float32) and table.state_space.contains(state)


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
@pytest.mark.parametrize("num_players", [1, 2, 3])
def test_the_state_is_no_seats_view_and_the_same_whoever_asks(num_players, rules):
    """Every seat's part is what that agent's own observation says of its game, whoever is on turn; the dice part is
    the agent on turn's; ``env()``, its raw env and ``parallel_env`` give the same array at every step."""
    from yacht_env.multiplayer import parallel_env

    aec, parallel = aec_env(num_players=num_players, rules=rules), parallel_env(num_players=num_players, rules=rules)
    encoder = aec.unwrapped._encoder
    dice, solo, own_total = encoder._dice_size, encoder.solo.size, encoder.size - 2
    seat_size = solo - dice + 1
    rng = np.random.default_rng(num_players)
    for game in range(3):
        aec.reset(seed=game)
        observations, _ = parallel.reset(seed=game)
        for agent in aec.agent_iter():
            observation, _, terminated, truncated, _ = aec.last()
            state = aec.state()
            assert state.shape == aec.state_space.shape == parallel.state_space.shape
            for asked in (aec.unwrapped.state(), parallel.state(), parallel.unwrapped.state()):
                np.testing.assert_array_equal(asked, state)
            if terminated or truncated:
                aec.step(None)
                continue
            np.testing.assert_array_equal(state[:dice], observation["observation"][:dice])
            for seat, name in enumerate(aec.possible_agents):
                view = aec.observe(name)["observation"]
                part = state[dice + seat * seat_size : dice + (seat + 1) * seat_size]
                np.testing.assert_array_equal(part, np.append(view[dice:solo], view[own_total]))
            np.testing.assert_array_equal(state[-num_players:], np.eye(num_players)[aec.possible_agents.index(agent)])
            action = uniform(rng, observation["action_mask"])
            aec.step(action)
            observations, *_ = parallel.step({name: action for name in parallel.agents})
        assert not parallel.agents


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
@pytest.mark.parametrize("num_players", [2, 3, 5])
def test_state_invariants_over_many_seeded_games(num_players, rules):
    table = raw_env(num_players=num_players, rules=rules)
    game_rules = R.get_rules(rules)
    n, top = game_rules.num_categories, R.max_total(game_rules)
    dice = 39 + n
    seat_size = (table.state_space.shape[0] - dice - num_players) // num_players
    rng = np.random.default_rng(num_players)
    for game in range(40 if rules == "standard" else 15):
        table.reset(seed=game)
        for _ in table.agent_iter():
            observation, _, terminated, truncated, info = table.last()
            state = table.state()
            assert table.state_space.contains(state)
            seats = state[dice:-num_players].reshape(num_players, seat_size)
            np.testing.assert_array_equal(seats[:, :n] == 1, info["scores"] == -1)  # open boxes, in seat order
            np.testing.assert_array_equal(seats[:, n], ((info["scores"] == -1).sum(axis=1) / n).astype(np.float32))
            np.testing.assert_array_equal(seats[:, -1], (info["totals"] / top).astype(np.float32))
            dice_part = state[:30].reshape(5, 6)
            assert (dice_part.sum(axis=1) == 1).all()
            np.testing.assert_array_equal(dice_part.argmax(axis=1) + 1, info["dice"])
            assert state[36 + info["rolls_left"]] == 1 and state[36:39].sum() == 1
            if terminated or truncated:
                assert not state[-num_players:].any()  # nobody on turn once the game is over
                table.step(None)
                continue
            np.testing.assert_array_equal(state[-num_players:], np.eye(num_players)[info["player_on_turn"]])
            table.step(uniform(rng, observation["action_mask"]))
        end = table.state()  # after every agent has left: every box filled, nobody on turn
        assert not end[-num_players:].any() and not end[dice:-num_players].reshape(num_players, -1)[:, : n + 1].any()


def test_the_state_before_the_first_reset_is_one_clear_error():
    with pytest.raises(ValueError, match=r"^call reset\(\) before state\(\)$"):
        raw_env(num_players=2).state()
    with pytest.raises(Exception, match="reset"):  # PettingZoo's OrderEnforcingWrapper answers first
        aec_env(num_players=2).state()


@pytest.fixture(params=["fast", "stock"])
def wrapper_kind(request, monkeypatch):
    """Which wrappers ``env()`` puts on: the fast subclasses (the installed PettingZoo's), or PettingZoo's own, as
    where :func:`fast_wrappers_fit` finds the private fields they copy changed."""
    from yacht_env import multiplayer_wrappers

    if not multiplayer_wrappers.fast_wrappers_fit():  # below the extra's floor (1.24.0 to 1.24.2): PettingZoo's own
        if request.param == "fast":
            pytest.skip("the fast subclasses do not fit this PettingZoo: env() puts on PettingZoo's own wrappers")
        return request.param
    if request.param == "stock":
        monkeypatch.setattr(multiplayer_wrappers, "fast_wrappers_fit", lambda: False)
    return request.param


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
@pytest.mark.parametrize("num_players", [1, 2, 5])
def test_pettingzoos_tests_pass_on_either_wrappers_without_a_warning_from_the_env(num_players, rules, wrapper_kind):
    from pettingzoo.utils import wrappers

    from yacht_env.multiplayer import parallel_env

    table = aec_env(num_players=num_players, rules=rules)
    stock = (type(table), type(table.env)) == (wrappers.OrderEnforcingWrapper, wrappers.AssertOutOfBoundsWrapper)
    assert stock == (wrapper_kind == "stock") and table.env.env is table.unwrapped
    assert warnings_of(api_test, table, num_cycles=100) == []
    assert warnings_of(parallel_api_test, parallel_env(num_players=num_players, rules=rules), num_cycles=100) == []
    seed_test(lambda **kw: aec_env(num_players=num_players, rules=rules, **kw), num_cycles=100)
    assert state_test_warnings(aec_env, num_players=num_players, rules=rules) == [ILLEGAL_WARNING]


def test_the_feature_check_falls_back_where_pettingzoos_wrappers_differ(monkeypatch):
    """A PettingZoo whose ``agent_iter`` no longer clears ``_has_updated`` (what the fast iterator copies): the check
    says so, and ``env()`` is PettingZoo's own wrappers, which still pass api_test."""
    from pettingzoo.utils import wrappers
    from pettingzoo.utils.env import AECIterator
    from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterator

    from yacht_env.multiplayer_wrappers import fast_wrappers_fit

    fast_wrappers_fit.cache_clear()
    monkeypatch.setattr(AECOrderEnforcingIterator, "__next__", AECIterator.__next__)
    try:
        assert not fast_wrappers_fit()
        table = aec_env(num_players=2)
        assert type(table) is wrappers.OrderEnforcingWrapper and type(table.env) is wrappers.AssertOutOfBoundsWrapper
        assert warnings_of(api_test, table, num_cycles=50) == []
    finally:
        monkeypatch.undo()
        fast_wrappers_fit.cache_clear()
    assert fast_wrappers_fit() and type(aec_env(num_players=2)).__name__ == "_OrderEnforcing"


def test_the_feature_check_tries_the_subclasses_themselves(monkeypatch):
    """PettingZoo 1.24.0 to 1.24.2: its ``BaseWrapper`` copies the env's attributes onto the wrapper in ``reset`` and
    ``step``, which the fast subclass forwards as read-only properties (PettingZoo's own wrappers do everything the
    subclasses copy there). The check drives the subclasses too, so ``env()`` is PettingZoo's own wrappers and plays."""
    from pettingzoo.utils import wrappers

    from yacht_env.multiplayer_wrappers import fast_wrappers_fit

    def copied(method):
        def run(self, *args, **kwargs):
            method(self, *args, **kwargs)
            for name in ("agent_selection", "rewards", "terminations", "truncations", "infos", "agents"):
                setattr(self, name, getattr(self.env, name))  # as BaseWrapper.reset and step do in 1.24.0 to 1.24.2
            self._cumulative_rewards = self.env._cumulative_rewards

        return run

    fast_wrappers_fit.cache_clear()
    monkeypatch.setattr(wrappers.BaseWrapper, "reset", copied(wrappers.BaseWrapper.reset))
    monkeypatch.setattr(wrappers.BaseWrapper, "step", copied(wrappers.BaseWrapper.step))
    try:
        assert not fast_wrappers_fit()
        table = aec_env(num_players=2)
        assert type(table) is wrappers.OrderEnforcingWrapper
        table.reset(seed=0)
        for _ in table.agent_iter(60):
            observation, _, termination, truncation, _ = table.last()
            table.step(None if termination or truncation else int(np.flatnonzero(observation["action_mask"])[0]))
        assert warnings_of(api_test, aec_env(num_players=2), num_cycles=50) == []
    finally:
        monkeypatch.undo()
        fast_wrappers_fit.cache_clear()
    assert fast_wrappers_fit()


def test_reset_options_are_the_dice_stream_or_pettingzoos_own_check():
    streams = game_streams(5, range(2))
    table = raw_env(num_players=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.reset(seed=0, options={"options": 1})  # api_test's check that reset takes options: ignored, silently
        table.reset(options={"options": 1, "dice_stream": streams})
    np.testing.assert_array_equal(table.last()[-1]["dice"], np.sort(streams[0, 0, 0]))
    for options in ({"dice_streams": streams}, {"options": 1, "seed": 3}):
        with pytest.raises(ValueError, match=r"^unknown reset options \['(dice_streams|seed)'\]; accepted"):
            table.reset(options=options)
