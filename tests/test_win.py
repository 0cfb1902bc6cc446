"""The win agent (agents/win.py): exact win probabilities, legal play, and it beats the solver head to head."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import REPO

from yacht_agents import AGENT_SPECS, make_agent
from yacht_agents.base import Agent
from yacht_agents.optimal import OptimalAgent
from yacht_agents.win import WinAgent
from yacht_env import rules as R
from yacht_env.distributions import score_distributions
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.game import TableState, draw_stream
from yacht_lab.measure.head_to_head import head_to_head

YACHT = R.CATEGORIES.index("yacht")
CHOICE = R.CATEGORIES.index("choice")
BEST = R.score_table().max(axis=0)


@pytest.fixture(scope="module")
def win2() -> WinAgent:
    return make_agent("win")


def table_observations(players, roll, rolls_left, open_mask, total, opponent_open, opponent_total):
    """Observations of seat 0 at ``len(roll)`` tables built as a real ``TableState`` (the envs' encoder)."""
    n = len(roll)
    table = TableState("standard", players, n)
    games, rows = table.players, np.arange(n) * players
    games.roll[rows], games.rolls_left[rows], games.open_mask[rows], games.total[rows] = (
        roll,
        rolls_left,
        open_mask,
        total,
    )
    for j in range(1, players):
        games.open_mask[rows + j], games.total[rows + j] = opponent_open[:, j - 1], opponent_total[:, j - 1]
    observations = MultiplayerEncoder("standard", players).observe(table, np.zeros(n, dtype=np.intp))
    return observations, R.legal_action_mask(roll, rolls_left, open_mask)


def random_states(rng, n, players):
    """Game-like states: each total at most what its filled categories can score."""
    roll, rolls_left, open_mask = rng.integers(0, 252, n), rng.integers(0, 3, n), rng.integers(1, 4096, n)
    opponent_open = rng.integers(0, 4096, (n, players - 1))
    total = rng.integers(0, (BEST * (1 - R.OPEN_BITS[open_mask])).sum(-1) + 1)
    opponent_total = rng.integers(0, (BEST * (1 - R.OPEN_BITS[opponent_open])).sum(-1) + 1)
    return roll, rolls_left, open_mask, total, opponent_open, opponent_total


def brute_force(state, players):
    """Per action, P(win) (ties split) by explicit sums over the final totals' distributions."""
    dist = score_distributions("standard")
    roll, rolls_left, open_mask, total, opponent_open, opponent_total = state
    width = dist.width
    own = np.zeros((44, 2 * width))
    own[:, total : total + width] = dist.action_distributions(roll, rolls_left, open_mask)
    pmf, less = [], []
    for j in range(players - 1):
        row = np.zeros(2 * width)
        row[opponent_total[j] : opponent_total[j] + width] = dist.start[opponent_open[j]]
        pmf.append(row)
        less.append(np.cumsum(row) - row)
    if players == 2:
        final = less[0] + pmf[0] / 2
    else:  # three players: both below, one tied (half), both tied (a third)
        final = less[0] * less[1] + (pmf[0] * less[1] + pmf[1] * less[0]) / 2 + pmf[0] * pmf[1] / 3
    return own @ final


@pytest.mark.parametrize("players", [2, 3])
def test_win_probabilities_are_exact(players):
    agent = make_agent("win", players=players)
    rng = np.random.default_rng(players)
    states = random_states(rng, 12, players)
    values = agent.win_probabilities(*states)
    legal = R.legal_action_mask(*states[:3])
    assert (np.isfinite(values) == legal).all()
    for i in range(12):
        expected = brute_force(tuple(x[i] for x in states), players)
        assert np.abs(values[i][legal[i]] - expected[legal[i]]).max() < 1e-12


def test_reads_the_table_view_back(win2):
    rng = np.random.default_rng(5)
    states = random_states(rng, 200, 2)
    observations, _ = table_observations(2, *states)
    for got, want in zip(win2.read(observations), states, strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("players", [2, 4, 10])
def test_choices_are_legal_and_decided_games_follow_the_solver(players):
    agent = make_agent(f"win:{players}")
    rng = np.random.default_rng(10 + players)
    states = random_states(rng, 2_000, players)
    observations, masks = table_observations(players, *states)
    actions = agent.act(observations, masks)
    assert masks[np.arange(len(actions)), actions].all()
    values = agent.win_probabilities(*states)
    solver = OptimalAgent().solution.best_action(*states[:3])
    best = values.max(axis=1)
    chosen = values[np.arange(len(actions)), actions]
    assert (chosen >= best - 1e-12).all()  # it maximises its win probability
    assert (actions[chosen < best] == solver[chosen < best]).all()  # (within 1e-12 only for the solver's action)
    equal = values[np.arange(len(actions)), solver] >= best - 1e-12
    assert equal.any() and (actions[equal] == solver[equal]).all()  # and breaks ties with the solver
    assert (actions != solver).any()


def test_far_ahead_it_takes_the_safe_option_with_the_solver(win2):
    # Choice and Yacht open, 6-6-6-6-5 and no re-roll: 170 points against an opponent on 140 with only
    # its Yacht to play (at most 190). Choice (29) wins for sure; scratching the Yacht leaves a Choice
    # turn that loses if the opponent rolls a Yacht and the Choice makes under 20 (20 ties).
    roll = R.roll_index([5, 6, 6, 6, 6])
    state = ([roll], [0], [(1 << CHOICE) | (1 << YACHT)], [170], [[1 << YACHT]], [[140]])
    values = win2.win_probabilities(*state)[0]
    yacht_chance = score_distributions("standard").start[1 << YACHT, 50]
    choice_turn = score_distributions("standard").start[1 << CHOICE]
    assert values[R.PICK_OFFSET + CHOICE] == pytest.approx(1.0, abs=1e-12)
    scratch = 1 - yacht_chance * (choice_turn[:20].sum() + choice_turn[20] / 2)
    assert values[R.PICK_OFFSET + YACHT] == pytest.approx(scratch, abs=1e-12)
    assert scratch < 1 - 1e-4
    observations, masks = table_observations(2, *(np.asarray(x) for x in state))
    assert win2.act(observations, masks)[0] == R.PICK_OFFSET + CHOICE
    assert OptimalAgent().solution.best_action(roll, 0, state[2][0]) == R.PICK_OFFSET + CHOICE


def test_far_behind_late_it_chases_a_yacht_the_solver_would_not(win2):
    # Choice and Yacht open, 45 points behind an opponent who has finished: only a Yacht wins. A search
    # over every first roll of the turn for the states where the two disagree.
    rolls = np.arange(252)
    n = len(rolls)
    state = tuple(
        np.asarray(x, dtype=np.intp)
        for x in (
            rolls,
            np.full(n, 2),
            np.full(n, (1 << CHOICE) | (1 << YACHT)),
            np.full(n, 100),
            [[0]] * n,
            [[145]] * n,
        )
    )
    observations, masks = table_observations(2, *state)
    actions = win2.act(observations, masks)
    solver = OptimalAgent().solution.best_action(*state[:3])
    differ = np.flatnonzero(actions != solver)

    def kept(roll, action):
        return R.ROLLS[roll][R.KEEP_BITS[action]]

    # Either it keeps only copies of one face where the solver keeps fewer or mixes faces (1-1-1 rather
    # than 6-6, 5-5 rather than 5-5-6), or it scores Choice now to leave the last turn whole for the Yacht.
    purer = [
        r
        for r in differ
        if actions[r] < R.NUM_KEEPS
        and len(set(kept(r, actions[r]))) == 1
        and (len(set(kept(r, solver[r]))) > 1 or len(kept(r, solver[r])) < len(kept(r, actions[r])))
    ]
    choice_now = [r for r in differ if actions[r] == R.PICK_OFFSET + CHOICE and solver[r] < R.NUM_KEEPS]
    assert len(purer) == 17 and len(choice_now) == 70 and len(differ) == 87
    assert R.roll_index([1, 1, 1, 6, 6]) in purer  # the solver keeps 6-6 (Choice points), the win agent 1-1-1
    values = win2.win_probabilities(*state)
    assert (values[differ, actions[differ]] > values[differ, solver[differ]] + 1e-3).all()
    assert (
        values[R.roll_index([1, 1, 1, 6, 6]), solver[R.roll_index([1, 1, 1, 6, 6])]]
        < 0.07
        < values[R.roll_index([1, 1, 1, 6, 6]), actions[R.roll_index([1, 1, 1, 6, 6])]]
    )


def test_make_agent_specs():
    assert "win" in AGENT_SPECS and "win:P" in AGENT_SPECS
    agent = make_agent("win")
    assert agent.name == "win" and agent.table_players == 2 and agent.observation_size == 79
    assert make_agent("win:5").table_players == 5
    assert make_agent("win", players=3).table_players == 3
    for spec, players in (("win:x", None), ("win:1", None), ("win:11", None), ("win:3", 4), ("win", 1)):
        with pytest.raises(ValueError):
            make_agent(spec, players=players)


def test_beats_the_solver_head_to_head():
    result = head_to_head([make_agent("win"), OptimalAgent()], 2, 2_000, seed=0)
    pair = result.to_dict()["head_to_head"]["win vs optimal"]
    assert pair["games"] == 8_000
    assert pair["win_rate_a_ci95"][0] > 0.5  # measured 51.26% [50.49, 52.02]
    assert pair["mean_margin_a"] < 0  # it gives up points to win more often


def test_over_the_solvers_policy_as_a_base_it_is_the_win_agent(win2):
    over = WinAgent(base=OptimalAgent())
    assert over.distributions.solution is None and np.array_equal(over.distributions.start, win2.distributions.start)
    rng = np.random.default_rng(4)
    observations, legal = table_observations(2, *random_states(rng, 3_000, 2))
    assert np.array_equal(over.act(observations, legal), win2.act(observations, legal))


def test_over_another_policy_it_plays_that_policys_tables_and_beats_it():
    """One step of policy iteration for the win from greedy's own play: its model is greedy's distributions, its
    ties go to greedy's move, and it beats greedy."""
    greedy = make_agent("greedy")
    over = WinAgent(base=greedy, name="over greedy")
    rng = np.random.default_rng(6)
    roll, rolls_left, open_mask = rng.integers(0, 252, 5_000), rng.integers(0, 3, 5_000), rng.integers(1, 4096, 5_000)
    solo, legal = greedy.encoder.flat(roll, rolls_left, open_mask), R.legal_action_mask(roll, rolls_left, open_mask)
    assert np.array_equal(over.distributions.policy[rolls_left, open_mask, roll], greedy.act(solo, legal))
    # A decided game (the opponent finished far behind): every move wins, and greedy's move is taken.
    n = 500
    rng = np.random.default_rng(5)
    roll, rolls_left, open_mask = rng.integers(0, 252, n), rng.integers(0, 3, n), rng.integers(1, 4096, n)
    state = (roll, rolls_left, open_mask, np.full(n, 200), np.zeros((n, 1), int), np.zeros((n, 1), int))
    observations, legal = table_observations(2, *state)
    solo = greedy.encoder.flat(roll, rolls_left, open_mask)
    assert np.array_equal(over.act(observations, legal), greedy.act(solo, legal))
    pair = head_to_head([over, greedy], 2, 500, seed=0, calibration=False).to_dict()["head_to_head"]
    assert pair["over greedy vs greedy"]["win_rate_a_ci95"][0] > 0.6


def test_a_base_must_be_a_solo_agent_of_the_rules(win2):
    from yacht_agents.win import policy_table

    with pytest.raises(ValueError, match="sees a table of 2: a policy table is a solo policy's"):
        WinAgent(base=win2)
    with pytest.raises(ValueError, match="plays the 'classic' rules, not 'standard'"):
        policy_table(make_agent("greedy", rules="classic"), "standard")


class _Returns(Agent):
    """A duck-typed solo agent whose ``act`` returns what ``choose(observations, masks)`` makes of the masks."""

    def __init__(self, choose) -> None:
        super().__init__("bad", "standard")
        self._choose = choose

    def act(self, observations, action_masks):
        return self._choose(observations, action_masks)


@pytest.mark.parametrize(
    ("choose", "message"),
    [
        (  # 31 (keep all five) is never legal; the first batch has no re-roll left, where no keep is
            lambda obs, masks: np.full(len(obs), R.KEEP_ALL),
            r"agent 'bad' chose action 31, not a legal one, at dice \(1, 1, 1, 1, 1\), rolls_left=0, open_mask=0b1$",
        ),
        (lambda obs, masks: np.full(len(obs), 99), r"chose action 99, not a legal one, at dice \("),
        (lambda obs, masks: np.full(len(obs), -1), r"chose action -1, not a legal one, at dice \("),
        (lambda obs, masks: masks.argmax(axis=1) + 0.25, r"returned float64 \(\d+,\) for \d+ states, not one int"),
        (lambda obs, masks: masks.argmax(axis=1)[:-1], r"returned int64 \(\d+,\) for \d+ states, not one int"),
    ],
    ids=["illegal", "too-large", "negative", "float", "too-few"],
)
def test_policy_table_refuses_actions_that_are_no_legal_action(choose, message):
    from yacht_agents.win import policy_table

    with pytest.raises(ValueError, match=message):
        policy_table(_Returns(choose), "standard")


@pytest.mark.parametrize("bad", [np.nan, np.inf, 5.0, -1.0])
@pytest.mark.parametrize("spec", ["win", "greedy"])
def test_observations_outside_zero_to_one_are_one_value_error(win2, spec, bad):
    agent = win2 if spec == "win" else make_agent(spec)
    table = TableState("standard", 2, 3)
    table.start(np.stack([draw_stream(np.random.default_rng(s), "standard", 2) for s in range(3)]))
    obs = MultiplayerEncoder("standard", 2).observe(table, np.zeros(3, dtype=np.intp))
    if spec != "win":
        obs = obs[:, : agent.encoder.size]
    masks = np.ones((3, R.NUM_ACTIONS), dtype=bool)
    agent.act(obs, masks)  # the envs' observations are fine
    obs[1, -2] = bad  # the win agent's own total: a NaN there was an IndexError, a huge negative index
    with pytest.raises(ValueError, match=r"^observations must hold values in \[0, 1\], as the envs' do; row 1 holds"):
        agent.act(obs, masks)


def test_table_win_probabilities_exact_with_only_the_yacht_open():
    """Only the Yacht open: each player scores 50 with q = 2,783,176 / 6^10, else 0; ties split."""
    from yacht_agents.win_model import table_win_probabilities

    dist = score_distributions("standard")
    q, only = 2_783_176 / 6**10, 1 << YACHT
    two = table_win_probabilities(dist, [[only, only]] * 3, [[100, 100], [110, 100], [100, 151]])
    np.testing.assert_allclose(two[0], [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(two[1], [1 - (1 - q) * q, (1 - q) * q], atol=1e-12)  # 10 ahead: lost to a lone Yacht
    np.testing.assert_allclose(two[2], [0, 1], atol=1e-12)  # 51 behind: lost
    three = table_win_probabilities(dist, [[only] * 3] * 2, [[100] * 3, [110, 100, 100]])
    np.testing.assert_allclose(three[0], [1 / 3] * 3, atol=1e-12)
    first = 1 - (1 - q) * (1 - (1 - q) ** 2)  # beaten only if it misses and someone scores the Yacht
    np.testing.assert_allclose(three[1], [first, (1 - first) / 2, (1 - first) / 2], atol=1e-12)


def per_player_reference(dist, open_masks, totals):
    """The model one player at a time, as it was computed before the shared rows: per player the opponents'
    polynomial (``final_win_probability``, the agent's own) summed against its own distribution."""
    from yacht_agents.win import final_win_probability
    from yacht_agents.win_model import cdf_before

    cdf, (n, p), width = cdf_before(dist), open_masks.shape, dist.width
    result = np.empty((n, p))
    for i in range(p):
        others = [j for j in range(p) if j != i]
        final = final_win_probability(cdf, open_masks[:, others], totals[:, others])
        reach = np.minimum(totals[:, i, None] + np.arange(width), width - 1)
        result[:, i] = np.einsum("nx,nx->n", dist.start[open_masks[:, i]], np.take_along_axis(final, reach, axis=1))
    return result


@pytest.mark.parametrize("players", [3, 4, 5])
def test_table_win_probabilities_equal_the_per_player_reference(players):
    """Every player's probability equals the per-player computation to 1e-12 on game-like tables, ties included:
    players in the same state, equal totals, repeated tables (computed once), game starts and last rounds."""
    from yacht_agents.win_model import table_win_probabilities

    dist = score_distributions("standard")
    rng = np.random.default_rng(players)
    n = 1_500
    _, _, open_mask, total, opponent_open, opponent_total = random_states(rng, n, players)
    masks = np.concatenate([open_mask[:, None], opponent_open], axis=1)
    totals = np.concatenate([total[:, None], opponent_total], axis=1)
    masks[:200, 1], totals[:200, 1] = masks[:200, 0], totals[:200, 0]  # two players in one state
    masks[200:300, 2], totals[200:300, 2] = masks[200:300, 1], totals[200:300, 1] // 2
    most = (BEST * (1 - R.OPEN_BITS[masks[300:400]])).sum(-1)  # level where the filled categories allow it
    totals[300:400] = np.minimum(totals[300:400, :1], most)
    masks[400:450], totals[400:450] = (1 << 12) - 1, 0  # the game's start: everyone level
    last = 1 << rng.integers(0, 12, (50, players))  # the last round: one category open each
    masks[450:500], totals[450:500] = last, rng.integers(100, 200, (50, players))
    masks[500:600], totals[500:600] = masks[600:700], totals[600:700]  # repeated tables
    masks[700:800], totals[700:800] = masks[800:900, ::-1], totals[800:900, ::-1]  # and with the players reversed
    chances = table_win_probabilities(dist, masks, totals)
    np.testing.assert_allclose(chances, per_player_reference(dist, masks, totals), rtol=0, atol=1e-12)
    np.testing.assert_allclose(chances.sum(axis=1), 1, atol=1e-12)
    np.testing.assert_array_equal(chances[500:600], chances[600:700])
    np.testing.assert_array_equal(chances[700:800], chances[800:900, ::-1])
    np.testing.assert_allclose(chances[400:450], 1 / players, atol=1e-12)


def test_table_win_probabilities_refuse_totals_past_the_largest_final_total():
    from yacht_agents.win_model import table_win_probabilities

    dist = score_distributions("standard")
    with pytest.raises(ValueError, match="totals must be"):
        table_win_probabilities(dist, [[4095, 4095, 4095]], [[0, 10, 0]])  # 10 points with nothing filled
    with pytest.raises(ValueError, match="totals must be"):
        table_win_probabilities(dist, [[1, 1, 1]], [[0, -1, 0]])


@pytest.mark.parametrize("players", [2, 3])
def test_table_win_probabilities_match_the_agents_model_and_sum_to_one(players):
    """Probabilities in [0, 1], each table's summing to 1 (ties split), seat 0's equal to brute-force sums over the
    final totals (the 2-player shortcut and the 3-player polynomial)."""
    from yacht_agents.win_model import table_win_probabilities

    dist = score_distributions("standard")
    rng = np.random.default_rng(5)
    _, _, open_mask, total, opponent_open, opponent_total = random_states(rng, 200, players)
    masks = np.concatenate([open_mask[:, None], opponent_open], axis=1)
    totals = np.concatenate([total[:, None], opponent_total], axis=1)
    chances = table_win_probabilities(dist, masks, totals)
    assert ((chances >= -1e-12) & (chances <= 1 + 1e-12)).all()
    np.testing.assert_allclose(chances.sum(axis=1), 1, atol=1e-9)
    for i in range(5):  # brute force: explicit sums over the players' final totals
        width = dist.width
        final = np.zeros((players, 2 * width))
        for j in range(players):
            final[j, totals[i, j] : totals[i, j] + width] = dist.start[masks[i, j]]
        less = np.cumsum(final, axis=1) - final
        if players == 2:
            expected = final[0] @ (less[1] + final[1] / 2)
        else:
            f = less[1] * less[2] + (final[1] * less[2] + final[2] * less[1]) / 2 + final[1] * final[2] / 3
            expected = final[0] @ f
        assert chances[i, 0] == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
def test_the_win_agreement_benchmark_measures_against_its_yardsticks(tmp_path):
    """benchmarks/win_agreement.py end to end: the solver's moves are the solver's everywhere, the win agent's are
    its own on the contested decisions, and the shipped model sits between; bad input is one line, exit 2."""
    import json
    import subprocess
    import sys

    script = REPO / "benchmarks" / "win_agreement.py"
    out = tmp_path / "agreement.json"
    command = [sys.executable, str(script), "--agents", "optimal", "win", "ppo:standard", "--games", "60"]
    done = subprocess.run([*command, "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    optimal, win, ppo = json.loads(out.read_text())
    assert 0.05 < optimal["contested_share"] < 0.3  # the win agent departs from the solver on some late decisions
    assert optimal["contested"]["as_solver"] == 1.0 and optimal["uncontested"]["as_solver"] == 1.0
    assert win["contested"]["as_win"] == 1.0 and win["uncontested"]["as_solver"] == 1.0
    assert 0 < ppo["contested"]["as_solver"] < 1 and ppo["late_decisions"] > 60
    odds = ppo["contested_policy"]  # a PPO model also reports its policy's odds of the win agent's move
    quantiles = list(odds["p_win_move_quantiles"].values())
    assert quantiles == sorted(quantiles) and 0 <= quantiles[0] and quantiles[-1] <= 1
    assert 0 < odds["p_win_move_mean"] < 1 and odds["entropy"] > 0 and "contested_policy" not in optimal
    bad = subprocess.run([*command[:2], "--agents", "optimal", "--players", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: ")


def test_the_win_agent_benchmark_plays_over_a_base_policy():
    """benchmarks/win_agent.py --base end to end: the win agent over greedy's own policy against the solver (it plays
    far better than greedy: 44.88% of these 400 games, where greedy wins 31.50% [27.22, 35.78] of 600); a table agent
    is refused."""
    import json
    import subprocess
    import sys

    script = REPO / "benchmarks" / "win_agent.py"
    command = [sys.executable, str(script), "--players", "2", "--deals", "100"]
    done = subprocess.run([*command, "--base", "greedy"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    text, row = done.stdout.splitlines()
    assert text.startswith("2 players, 400 games: win share ")
    row = json.loads(row)
    assert row["games"] == 400 and row["last_turns"] is None and 0.4 < row["win_share"] < 0.55
    bad = subprocess.run([*command, "--base", "win"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith("win sees a table; the base is a solo agent, whose own policy is evaluated")
