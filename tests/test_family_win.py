"""The win agent under the family's rules (agents/win_family.py): exact win probabilities against sums over the final
totals of a recursion over the turn, legal play that finishes decided games as the solver does, and whole games at
the surfaces agents play (evaluate.py, the versus env)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO
from test_family_distributions import LEVELS, TINY, recursion_over_the_turn, turn_distributions

from yacht_agents import make_agent
from yacht_agents.win import WinAgent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.family_states import reachable_states
from yacht_env.game import TableState
from yacht_env.solver import solve

WIN_RULES = [TINY[0], TINY[2]]  # both bonuses; and the free joker


@pytest.fixture(scope="module", params=WIN_RULES, ids=[rules.name for rules in WIN_RULES])
def exact(request):
    rules = request.param
    return rules, recursion_over_the_turn(rules, LEVELS[rules.name])


def random_states(rules: R.Rules, levels: int, n: int, players: int, rng) -> list[tuple]:
    """Game-like states: the own turn start and each opponent's reachable with at most ``levels`` boxes open."""
    popcount = R.open_bits(rules.num_categories).sum(axis=1)
    reachable = reachable_states(rules) & (popcount <= levels)[:, None, None]
    states = np.transpose(np.nonzero(reachable))
    own = states[states[:, 0] > 0]
    out = []
    for _ in range(n):
        mask, upper, armed = own[rng.integers(len(own))]
        opponents = [tuple(states[rng.integers(len(states))]) for _ in range(players - 1)]
        totals = rng.integers(0, 120, players)
        out.append((int(rng.integers(R.NUM_ROLLS)), int(rng.integers(3)), (mask, upper, armed), opponents, totals))
    return out


def brute_force(rules: R.Rules, dist: dict, state: tuple) -> np.ndarray:
    """Per action, P(win) (ties split): sums over the final totals of the own distribution after the action (a pick:
    its points plus the turn start it leaves; a keep: the recursion's mixture) and each opponent's."""
    roll, t, (mask, upper, armed), opponents, totals = state
    width = R.max_total(rules) + 1
    turn = turn_distributions(rules, dist, int(mask), int(upper), int(armed))
    own = np.zeros((rules.num_actions, 2 * width + 200))
    word = R.legal_picks(rules, roll, int(mask))
    for k in range(rules.num_categories):
        if word >> k & 1:
            points, _, next_upper, next_armed = R.pick_outcome(rules, roll, k, int(mask), int(upper), int(armed))
            start = totals[0] + points
            own[R.PICK_OFFSET + k, start : start + width] = dist[(int(mask) & ~(1 << k), next_upper, next_armed)]
    if t > 0:
        after_keep = R.TRANSITION @ turn[t - 1]
        for m in np.flatnonzero(R.legal_action_mask(roll, t, 0)[: R.NUM_KEEPS]):
            own[m, totals[0] : totals[0] + width] = after_keep[R.KEEP[roll, m]]
    pmf, less = [], []
    for (o_mask, o_upper, o_armed), total in zip(opponents, totals[1:], strict=True):
        row = np.zeros(own.shape[1])
        row[total : total + width] = dist[(int(o_mask), int(o_upper), int(o_armed))]
        pmf.append(row)
        less.append(np.cumsum(row) - row)
    if len(opponents) == 1:
        final = less[0] + pmf[0] / 2
    else:  # both below, one tied (half), both tied (a third)
        final = less[0] * less[1] + (pmf[0] * less[1] + pmf[1] * less[0]) / 2 + pmf[0] * pmf[1] / 3
    return own @ final


@pytest.mark.parametrize("players", [2, 3])
def test_win_probabilities_equal_sums_over_the_final_totals(exact, players):
    rules, dist = exact
    agent = WinAgent(rules, players)
    for state in random_states(rules, LEVELS[rules.name], 6, players, np.random.default_rng(players)):
        roll, t, (mask, upper, armed), opponents, totals = state
        values = agent.win_probabilities(
            [roll],
            [t],
            [mask],
            [totals[0]],
            [[o[0] for o in opponents]],
            [totals[1:]],
            upper=upper,
            armed=armed,
            opponent_upper=[[o[1] for o in opponents]],
            opponent_armed=[[o[2] for o in opponents]],
        )[0]
        expected = brute_force(rules, dist, state)
        legal = np.isfinite(values)
        assert np.array_equal(
            legal, R.legal_action_mask(roll, t, R.legal_picks(rules, roll, mask), True, len(legal) - 32)
        )
        assert np.abs(values[legal] - expected[legal]).max() < 2e-6  # float32 rows, trimmed at 2^-25


def table_observations(rules, roll, rolls_left, own, total, opponent, opponent_total):
    """Observations of seat 0 at two-player tables built as a real ``TableState`` (the envs' encoder): ``own`` and
    ``opponent`` ``(n, 3)`` the turn starts ``(open_mask, upper, armed)``."""
    n = len(roll)
    table = TableState(rules, 2, n)
    games, rows = table.players, np.arange(n) * 2
    games.roll[rows], games.rolls_left[rows], games.total[rows] = roll, rolls_left, total
    games.open_mask[rows], games.upper[rows], games.armed[rows] = own.T
    games.open_mask[rows + 1], games.upper[rows + 1], games.armed[rows + 1] = opponent.T
    games.total[rows + 1] = opponent_total
    observations = MultiplayerEncoder(rules, 2).observe(table, np.zeros(n, dtype=np.intp))
    legal = R.legal_picks(rules, roll, own[:, 0])
    return observations, R.legal_action_mask(roll, rolls_left, legal, True, rules.num_categories)


@pytest.mark.parametrize("rules", WIN_RULES, ids=[rules.name for rules in WIN_RULES])
def test_choices_from_the_table_view_are_legal_best_and_decided_games_follow_the_solver(rules):
    """The agent reads both players' bonus progress from the view, plays an action of the highest win probability,
    and a decided game's the solver's way."""
    agent = WinAgent(rules, 2)
    solution = solve(rules)
    rng = np.random.default_rng(0)
    n = 600
    reachable = np.transpose(np.nonzero(reachable_states(rules)))
    own = reachable[reachable[:, 0] > 0][rng.integers((reachable[:, 0] > 0).sum(), size=n)]
    opponent = reachable[rng.integers(len(reachable), size=n)]
    roll, rolls_left = rng.integers(0, R.NUM_ROLLS, n), rng.integers(0, 3, n)
    total, opponent_total = rng.integers(0, 150, n), rng.integers(0, 150, n)
    # A third of the games decided: the opponent finished, at 0 with the agent on 150 (won), or at the largest total
    # with the agent on 0 (lost).
    decided, lost = np.arange(n) % 3 == 0, np.arange(n) % 6 == 0
    finished = reachable[reachable[:, 0] == 0]
    opponent[decided] = finished[rng.integers(len(finished), size=decided.sum())]
    opponent_total[decided] = np.where(lost[decided], R.max_total(rules), 0)
    total[decided] = np.where(lost[decided], 0, 150)
    observations, legal = table_observations(rules, roll, rolls_left, own, total, opponent, opponent_total)
    actions = agent.act(observations, legal)
    assert legal[np.arange(n), actions].all()
    values = agent.win_probabilities(
        roll,
        rolls_left,
        own[:, 0],
        total,
        opponent[:, :1],
        opponent_total[:, None],
        upper=own[:, 1],
        armed=own[:, 2],
        opponent_upper=opponent[:, 1:2],
        opponent_armed=opponent[:, 2:],
    )
    assert (values[np.arange(n), actions] >= values.max(axis=1) - 1e-12).all()  # it maximises its win probability
    assert set(np.unique(values[decided][np.isfinite(values[decided])])) <= {0.0, 1.0}  # exactly
    best = solution.best_action(roll, rolls_left, *own.T)
    assert np.array_equal(actions[decided], best[decided])  # a decided game goes the solver's way
    assert (actions[~decided] != best[~decided]).any()


@pytest.mark.slow
def test_make_agent_plays_the_family():
    agent = make_agent("win:3", "clubhouse")
    assert agent.table_players == 3 and agent.rules.name == "clubhouse"
    assert agent.distributions.rules.has_bonuses


def test_the_win_agent_over_a_base_policy_refuses_the_family():
    with pytest.raises(ValueError, match="over another policy than the solver's under rules without bonuses only"):
        WinAgent(TINY[0], 2, base=make_agent("greedy", TINY[0]))


def test_evaluate_script_seats_the_win_agent_on_a_family_preset(tmp_path):
    out = tmp_path / "report.json"
    command = [sys.executable, "evaluate.py", "--rules", "clubhouse", "--players", "2", "--agents", "win", "optimal"]
    done = subprocess.run(
        [*command, "--games", "30", "--no-progress", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    import json

    report = json.loads(out.read_text())
    pair = report["head_to_head"]["win vs optimal"]
    assert report["rules"] == "clubhouse" and pair["games"] == 120 == pair["wins_a"] + pair["wins_b"] + pair["ties"]


def test_the_versus_env_seats_the_win_agent_on_both_sides():
    """A whole game of YachtVersus-v0 on a family preset: the win agent inside as the opponent, and a win agent
    acting on the learner's observations against the solver."""
    import gymnasium as gym

    import yacht_env  # noqa: F401  (registers the envs)

    for opponents, learner in ((["win"], None), (["optimal"], make_agent("win", "clubhouse"))):
        env = gym.make("YachtVersus-v0", rules="clubhouse", opponents=opponents, reward="win")
        obs, info = env.reset(seed=3)
        rng = np.random.default_rng(3)
        done, steps = False, 0
        while not done:
            mask = info["action_mask"].astype(bool)
            if learner is None:
                action = int(rng.choice(np.flatnonzero(mask)))
            else:
                action = int(learner.act(obs[None], mask[None])[0])
            obs, reward, terminated, truncated, info = env.step(action)
            done, steps = terminated or truncated, steps + 1
        assert terminated and not truncated and reward in (-1.0, 0.0, 1.0) and steps >= 12
        assert (info["totals"] > 0).all()
        env.close()


def test_the_win_agent_benchmark_on_a_family_preset():
    """benchmarks/win_agent.py --rules: a row per table size with its speed per second and per CPU-second; a base
    policy on the family's rules is one line, exit 2."""
    import json

    command = [sys.executable, str(REPO / "benchmarks" / "win_agent.py"), "--rules", "clubhouse", "--players", "2"]
    done = subprocess.run([*command, "--deals", "20"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    text, row = done.stdout.splitlines()
    assert text.startswith("clubhouse: 2 players, 80 games: win share ") and "per CPU-second" in text
    row = json.loads(row)
    assert row["rules"] == "clubhouse" and row["games"] == 80 and row["games_per_cpu_second"] > 0
    bad = subprocess.run([*command, "--deals", "20", "--base", "greedy"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.endswith("--base and --last-turns play rules without bonuses; clubhouse has bonuses\n")
