"""Seeded fuzzing: arbitrary actions (legal or not) in every face of the env, each step checked against an
independent model of the game written here (``tests/reference.py`` scores; nothing from ``yacht_env``), and
arbitrary bad input that must end in one ``ValueError``, never another exception.

The tables (the versus envs, the PettingZoo env, head to head) are fuzzed with adversarial agents too: agents
that write into the masks and observations they are handed, play illegal actions, or play other rules.

Sized for CI (a few hundred thousand steps in all); ``YACHT_FUZZ_SCALE=20`` runs twenty times as many.
"""

from __future__ import annotations

import os
import re
from contextlib import nullcontext
from itertools import product

import numpy as np
import pytest
from reference import EXPECTED_CATEGORIES, kept_dice, reference_score

from yacht_agents.base import Agent
from yacht_env import YachtEnv
from yacht_env import rules as R
from yacht_env.game import game_streams
from yacht_env.multiplayer import raw_env
from yacht_env.vector import YachtVectorEnv
from yacht_env.versus import YachtVersusEnv, YachtVersusVectorEnv

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


def _ragged(shape: tuple[int, ...]) -> list:
    """A nested list of dice of ``shape`` but for one row of three dice: numpy cannot make it an array."""
    stream = np.ones(shape, dtype=int).tolist()
    row = stream
    while isinstance(row[-1][-1], list):
        row = row[-1]
    row[-1] = [1, 2, 3]
    return stream


def _sb3_reset(rules, players, stream):
    from yacht_env.sb3 import YachtSB3VecEnv

    env = YachtSB3VecEnv(2, rules=rules, **({} if players is None else {"opponents": ["random"] * (players - 1)}))
    good = np.ones((players, *R.get_rules(rules).stream_shape) if players else R.get_rules(rules).stream_shape, int)
    env.set_options([{"dice_stream": good}, {"dice_stream": stream}])
    env.reset()


@pytest.mark.parametrize("rules", ["standard", "yahtzee"])
@pytest.mark.parametrize(
    ("face", "players"),
    [("Yacht-v0", None), ("vector", None), ("YachtVersus-v0", 2), ("versus vector", 3), ("pettingzoo", 2),
     ("sb3", None), ("sb3 versus", 2)],
)  # fmt: skip
def test_a_ragged_dice_stream_is_our_value_error_on_every_face(face, players, rules):
    shape = R.get_rules(rules).stream_shape
    one = shape if players is None else (players, *shape)  # the face's stream per game
    batched = face in ("vector", "versus vector")
    stream = _ragged((2, *one) if batched else one)
    expected = (2, *one) if batched else one
    reset = {
        "Yacht-v0": lambda: YachtEnv(rules=rules).reset(options={"dice_stream": stream}),
        "vector": lambda: YachtVectorEnv(2, rules=rules).reset(options={"dice_stream": stream}),
        "YachtVersus-v0": lambda: YachtVersusEnv(["random"], rules=rules).reset(options={"dice_stream": stream}),
        "versus vector": lambda: YachtVersusVectorEnv(2, ["random"] * 2, rules=rules).reset(
            options={"dice_stream": stream}
        ),
        "pettingzoo": lambda: raw_env(2, rules=rules).reset(options={"dice_stream": stream}),
        "sb3": lambda: _sb3_reset(rules, None, stream),
        "sb3 versus": lambda: _sb3_reset(rules, 2, stream),
    }[face]
    message = f"dice_stream must be an int array of shape {expected} with values in 1..6"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        reset()


# --------------------------------------------------------------------------------------------------
# Adversarial agents at the tables: mask writers, illegal actors, agents of other rules
# --------------------------------------------------------------------------------------------------
AGENT_ILLEGAL = r"^agent '(?P<name>[^']+)' chose illegal action (?P<action>\d+) at table (?P<table>\d+)$"


class Adversary(Agent):
    """Writes into everything it is handed (``action_masks[:] = True``, the observations zeroed), then plays
    an action legal by the masks as handed or, with probability ``illegal``, one illegal by them. Its draws
    do not depend on ``write``, so a writer and a non-writer with one seed make the same choices."""

    def __init__(self, name: str, seed: int, illegal: float = 0.0, write: bool = True, rules: str = "standard"):
        super().__init__(name, rules)
        self.rng, self.illegal, self.write = np.random.default_rng(seed), illegal, write
        self.attempts = self.calls = 0

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        self.calls += 1
        if self.calls > 20_000:  # on the old code a mask writer's game never ended: fail, never hang
            raise RuntimeError(f"{self.name} was asked to act {self.calls} times: the game does not end")
        legal = action_masks.copy()
        if self.write and action_masks.flags.writeable:
            action_masks[:] = True
        if self.write and observations.flags.writeable:
            observations[:] = 0.0
        draws = self.rng.random(legal.shape)
        cheat = self.rng.random(len(legal)) < self.illegal
        self.attempts += int(cheat.sum())
        return np.where(np.where(cheat[:, None], ~legal, legal), draws, -1.0).argmax(axis=1)


def attempts(agents) -> dict[str, int]:
    return {agent.name: agent.attempts for agent in agents}


def refused_or_done(agents, call, *args, **kwargs):
    """``call(*args, **kwargs)``: if it raises, the error names an adversary that tried an illegal action
    during the call; if it returns, no adversary tried one (every attempt is refused). Returns the result, or
    None if refused."""
    before = attempts(agents)
    try:
        result = call(*args, **kwargs)
    except ValueError as error:
        match = re.match(AGENT_ILLEGAL, str(error))
        assert match, str(error)
        assert attempts(agents)[match["name"]] > before[match["name"]], str(error)
        return None
    assert attempts(agents) == before, "an illegal action was played"
    return result


def check_sheets(scores: np.ndarray, totals: np.ndarray, before: np.ndarray | None = None) -> None:
    """Sheets ``(..., P, 12)`` (-1 open) of tables played in seat order from seat 0: totals are the sum of the
    boxes, each seat has as many boxes filled as the seats after it or one more, and (against ``before``,
    the same games earlier) a filled box never changes: no category is scored twice."""
    assert (np.where(scores >= 0, scores, 0).sum(axis=-1) == totals).all()
    filled = (scores >= 0).sum(axis=-1)
    assert (np.diff(filled, axis=-1) <= 0).all() and (filled[..., 0] - filled[..., -1] <= 1).all()
    if before is not None:
        changed = scores != before
        assert (before[changed] == -1).all(), "a filled category was scored again"


@pytest.mark.parametrize("players", [2, 3])
def test_versus_vector_env_with_adversarial_opponents(players):
    n = 16
    rng = np.random.default_rng(players)
    writers = [Adversary(f"adversary {i}", seed=i, illegal=0.001) for i in range(players - 1)]
    readers = [Adversary(f"adversary {i}", seed=i, illegal=0.001, write=False) for i in range(players - 1)]
    env = YachtVersusVectorEnv(n, opponents=writers, illegal_action_penalty=PENALTY)
    twin = YachtVersusVectorEnv(n, opponents=readers, illegal_action_penalty=PENALTY)  # its opponents never write
    refused = finished = 0
    info = None
    with pytest.warns(UserWarning, match=ILLEGAL_WARNING):
        for _ in range(250 * SCALE):
            if info is None:  # a new batch of games (after an opponent's illegal action was refused)
                seed = int(rng.integers(2**31))
                out = refused_or_done(writers, env.reset, seed=seed)
                twin_out = refused_or_done(readers, twin.reset, seed=seed)
                assert (out is None) == (twin_out is None)
                refused += out is None
                if out is None:
                    continue
                (obs, info), done = out, np.zeros(n, dtype=bool)
                np.testing.assert_array_equal(obs, twin_out[0])
                check_sheets(info["scores"], info["totals"])
            actions = fuzz_actions(rng, env.action_masks(), arbitrary=0.1)
            out = refused_or_done(writers, env.step, actions)
            twin_out = refused_or_done(readers, twin.step, actions)
            assert (out is None) == (twin_out is None)
            if out is None:
                refused += 1
                info = None
                continue
            before = np.where(done[:, None, None], -1, info["scores"])  # games that ended start again in this step
            obs, rewards, terminated, truncated, info = out
            for mine, theirs in zip((obs, rewards, terminated, truncated), twin_out[:4], strict=True):
                np.testing.assert_array_equal(mine, theirs)  # writing into what it is handed changes nothing
            check_sheets(info["scores"], info["totals"], before)
            done = terminated | truncated
            finished += int(terminated.sum())
    assert refused > 0 and finished > 0


def test_versus_env_with_adversarial_opponents():
    rng = np.random.default_rng(0)
    opponents = [Adversary("writer", seed=1), Adversary("cheat", seed=2, illegal=0.02)]
    env = YachtVersusEnv(opponents=opponents, illegal_action_penalty=PENALTY, max_illegal_actions=None)
    refused = finished = 0
    with pytest.warns(UserWarning, match=ILLEGAL_WARNING):
        for game in range(30 * SCALE):
            out = refused_or_done(opponents, env.reset, seed=game)
            if out is None:
                refused += 1
                continue
            _, info = out
            while True:
                check_sheets(info["scores"], info["totals"])
                before = info["scores"]
                action = int(fuzz_actions(rng, env.action_masks(), arbitrary=0.1))
                out = refused_or_done(opponents, env.step, action)
                if out is None:
                    refused += 1
                    break
                *_, terminated, truncated, info = out
                check_sheets(info["scores"], info["totals"], before)
                if terminated or truncated:
                    finished += terminated
                    assert not terminated or (info["scores"] >= 0).all()
                    break
    assert refused > 0 and finished > 0


@pytest.mark.parametrize("make", [YachtVersusEnv, lambda opponents: YachtVersusVectorEnv(2, opponents)])
def test_versus_envs_refuse_agents_of_other_rules(make):
    class Named:  # not an Agent: only its rules attribute says which game it plays
        name, rules = "stranger", "classic"

        def act(self, observations, action_masks):
            return np.flatnonzero(action_masks[0])[:1].repeat(len(action_masks))

    for opponents, name, rules in (
        ([Adversary("classic one", seed=0, rules="classic")], "classic one", "classic"),
        ([Adversary("ok", seed=0), Named()], "stranger", "classic"),
        ([Adversary("knizia one", seed=0, rules=R.get_rules("knizia"))], "knizia one", "knizia"),
    ):
        index = len(opponents) - 1
        message = f"^opponent {index} \\('{name}'\\) plays the '{rules}' rules, not 'standard'"
        with pytest.raises(ValueError, match=message):
            make(opponents=opponents)
    make(opponents=[Adversary("standard one", seed=0)])  # the same rules: accepted


@pytest.mark.parametrize("illegal_action", ["ignore", "raise"])
def test_multiplayer_env_with_adversarial_players(illegal_action):
    rng = np.random.default_rng(len(illegal_action))
    table = raw_env(
        num_players=3, illegal_action=illegal_action, illegal_action_penalty=PENALTY, max_illegal_actions=None
    )
    attempts = 0
    ignored = pytest.warns(UserWarning, match=ILLEGAL_WARNING) if illegal_action == "ignore" else nullcontext()
    with ignored:
        for game in range(6 * SCALE):
            table.reset(seed=game)
            before = None
            for agent in table.agent_iter():
                observation, reward, terminated, truncated, info = table.last()
                check_sheets(info["scores"], info["totals"], before)
                before = info["scores"]
                if terminated or truncated:
                    table.step(None)
                    continue
                legal = observation["action_mask"].astype(bool)
                observation["action_mask"][:] = 1  # writes into what it was handed
                observation["observation"][:] = 0.0
                np.testing.assert_array_equal(table.observe(agent)["action_mask"], legal)
                if rng.random() < 0.2:
                    attempts += 1
                    bad = int(rng.choice(np.flatnonzero(~legal)))
                    state = snapshot(table)
                    if illegal_action == "raise":
                        with pytest.raises(ValueError, match=f"^{agent}: action {bad} "):
                            table.step(bad)
                        assert snapshot(table) == state  # a rejected step changes nothing
                    else:
                        table.step(bad)
                        assert table.infos[agent]["illegal_action"] and table.last()[1] == PENALTY
                        assert snapshot(table)[3:] == state[3:]  # only the rewards changed
                    continue
                table.step(int(rng.choice(np.flatnonzero(legal))))
            assert (table.infos == {}) and (before >= 0).all()
    assert attempts > 0


def snapshot(table) -> tuple:
    info = table.infos[table.agent_selection]
    return (
        dict(table.rewards),
        dict(table._cumulative_rewards),
        table.infos[table.agent_selection]["illegal_action"],
        table.agent_selection,
        {agent: table.observe(agent)["observation"].tolist() for agent in table.possible_agents},
        table.observe(table.agent_selection)["action_mask"].tolist(),
        info["scores"].tolist(),
        info["totals"].tolist(),
        info["dice"].tolist(),
        info["rolls_left"],
        dict(table.terminations),
        dict(table.truncations),
    )


def test_head_to_head_with_adversarial_agents():
    head_to_head = pytest.importorskip("yacht_lab.measure.head_to_head").head_to_head

    def play(*agents):
        return head_to_head(list(agents), 2, games=3, seed=4, calibration=False).to_dict()

    # Writing into the masks and observations it is handed changes nothing: the same games as without.
    writers = play(Adversary("a", seed=0), Adversary("b", seed=1))
    assert writers == play(Adversary("a", seed=0, write=False), Adversary("b", seed=1, write=False))
    assert all(0 < agent["mean_score"] <= 297 for agent in writers["agents"].values())
    # An illegal action is refused, naming the agent (on the old code the game never ended).
    for seed in range(3):
        with pytest.raises(ValueError, match=r"^agent 'cheat' chose illegal action \d+ at table \d+$"):
            play(Adversary("honest", seed=seed), Adversary("cheat", seed=seed, illegal=0.05))
    with pytest.raises(ValueError, match="^agent 'classic' plays the 'classic' rules, not 'standard'"):
        play(Adversary("standard", seed=0), Adversary("classic", seed=1, rules="classic"))


def test_an_agent_writing_into_its_masks_cannot_cheat_the_solo_evaluation_or_the_terminal_table():
    """The solo benchmark and the terminal table check an agent's action against the game's own mask, not the
    array the agent was handed (which it may write into)."""
    import io

    from yacht_agents import make_agent
    from yacht_lab.measure.evaluation import evaluate
    from yacht_lab.table.screen import PlainScreen
    from yacht_lab.table.terminal import TableGame

    class Cheat:
        name, rules, table_players = "cheat", R.get_rules("standard"), None

        def act(self, observations, action_masks):
            action_masks[...] = True  # every action "legal": pick a filled category
            return np.full(len(observations), R.PICK_OFFSET, dtype=np.intp) if observations.ndim == 2 else R.PICK_OFFSET

    with pytest.raises(ValueError, match=r"^agent 'cheat' chose illegal action 32"):
        evaluate([Cheat()], 3, 0, "standard")
    game = TableGame(
        [Cheat(), make_agent("greedy")],
        names=["cheat", "greedy"],
        rules=R.get_rules("standard"),
        seed=0,
        screen=PlainScreen(io.StringIO()),
        read=input,
    )
    with pytest.raises(RuntimeError, match=r"^agent 'cheat' chose illegal action 32"):
        game.play()
