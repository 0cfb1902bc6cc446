"""Specification of the head-to-head benchmark: ``yacht_lab.measure.head_to_head`` (common dice, seat and dice
rotations,
statistics over deals) and ``evaluate.py --players P`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import run_script

from yacht_agents import make_agent
from yacht_agents.base import Agent
from yacht_agents.greedy import GreedyAgent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder
from yacht_env.game import TableState, game_streams
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.measure.head_to_head import (
    Tally,
    head_to_head,
    lineups,
    outcome_dtype,
    pair_key,
    play_tables,
    seating,
    table_streams,
)
from yacht_lab.measure.head_to_head_report import render_json

PAIR_KEYS = {
    "games",
    "wins_a",
    "wins_b",
    "ties",
    "win_rate_a",
    "win_rate_a_ci95",
    "mean_margin_a",
    "mean_margin_a_ci95",
}
DEALS = 2000


@pytest.fixture(scope="module")
def optimal_vs_greedy():
    return head_to_head([make_agent("optimal"), make_agent("greedy")], 2, DEALS, seed=0).to_dict()


def test_optimal_beats_greedy_and_scores_the_solitaire_optimum(optimal_vs_greedy):
    pair = optimal_vs_greedy["head_to_head"]["optimal vs greedy"]
    assert set(pair) == PAIR_KEYS
    assert pair["games"] == DEALS * 4 == pair["wins_a"] + pair["wins_b"] + pair["ties"]
    assert pair["win_rate_a"] == round((pair["wins_a"] + pair["ties"] / 2) / pair["games"], 6)
    lo, hi = pair["win_rate_a_ci95"]
    assert 0.5 < lo < pair["win_rate_a"] < hi
    assert pair["mean_margin_a_ci95"][0] > 0
    optimal = optimal_vs_greedy["agents"]["optimal"]
    lo, hi = optimal["mean_score_ci95"]
    assert lo < solve("standard").expected_score < hi
    assert optimal["games"] == DEALS * 4
    shares = optimal["win_share"] + optimal_vs_greedy["agents"]["greedy"]["win_share"]
    assert shares == pytest.approx(1.0, abs=2e-6)


def test_two_players_replay_the_solo_games_of_the_same_streams(optimal_vs_greedy):
    """Deal g's streams are solo games 2g and 2g + 1 of evaluate(); each agent plays each of them twice (once from
    each seat), against the other agent on the other stream: every count follows from the solo scores."""
    solo = evaluate([make_agent("optimal"), make_agent("greedy")], 2 * DEALS, seed=0)
    a = solo.results["optimal"].scores.reshape(DEALS, 2)
    b = solo.results["greedy"].scores.reshape(DEALS, 2)
    pair = optimal_vs_greedy["head_to_head"]["optimal vs greedy"]
    assert pair["wins_a"] == 2 * int((a[:, 0] > b[:, 1]).sum() + (a[:, 1] > b[:, 0]).sum())
    assert pair["wins_b"] == 2 * int((a[:, 0] < b[:, 1]).sum() + (a[:, 1] < b[:, 0]).sum())
    assert pair["mean_margin_a"] == round(float(a.mean() - b.mean()), 6)
    assert optimal_vs_greedy["agents"]["optimal"]["mean_score"] == round(float(a.mean()), 6)
    assert optimal_vs_greedy["agents"]["greedy"]["mean_score"] == round(float(b.mean()), 6)


def test_an_agent_against_a_copy_of_itself_splits_every_deal_exactly():
    result = head_to_head([make_agent("greedy"), GreedyAgent(name="greedy_b")], 2, 500, seed=3).to_dict()
    pair = result["head_to_head"]["greedy vs greedy_b"]
    assert pair["wins_a"] == pair["wins_b"] > 0
    assert pair["ties"] % 2 == 0 and pair["games"] == 2000
    assert pair["win_rate_a"] == 0.5 and pair["win_rate_a_ci95"] == [0.5, 0.5]
    assert pair["mean_margin_a"] == 0.0 and pair["mean_margin_a_ci95"] == [0.0, 0.0]
    assert result["first_seat_win_rate"] == 0.5
    assert result["agents"]["greedy"]["win_share"] == result["agents"]["greedy_b"]["win_share"] == 0.5


def test_three_copies_at_one_table_share_the_wins_and_margins_exactly():
    agents = [GreedyAgent(name=name) for name in ("g0", "g1", "g2")]
    result = head_to_head(agents, 3, 200, seed=1).to_dict()
    assert list(result["head_to_head"]) == ["g0 vs g1", "g0 vs g2", "g1 vs g2"]
    for pair in result["head_to_head"].values():
        # Each agent holds each stream once per seat rotation, so the margins cancel exactly; the pairwise win
        # rates only in expectation (the cyclic rotations pair stream d with d + 1, never d + 1 with d).
        assert pair["games"] == 200 * 9 and pair["mean_margin_a"] == 0.0
        assert pair["win_rate_a_ci95"][0] < 0.5 < pair["win_rate_a_ci95"][1]
    for stats in result["agents"].values():
        assert stats["win_share"] == round(1 / 3, 6) and stats["games"] == 200 * 9
    assert result["first_seat_win_rate"] == round(1 / 3, 6)


def test_three_players_win_shares_sum_to_one_and_every_pair_is_reported():
    agents = [make_agent(spec, seed=0) for spec in ("random", "greedy", "optimal")]
    result = head_to_head(agents, 3, 100, seed=0).to_dict()
    assert result["players"] == 3 and result["games_per_deal"] == 9 and result["deals"] == 100
    assert list(result["head_to_head"]) == ["random vs greedy", "random vs optimal", "greedy vs optimal"]
    assert all(set(pair) == PAIR_KEYS and pair["games"] == 900 for pair in result["head_to_head"].values())
    assert sum(stats["win_share"] for stats in result["agents"].values()) == pytest.approx(1.0, abs=3e-6)
    assert result["agents"]["optimal"]["win_share"] > result["agents"]["greedy"]["win_share"] > 0.05
    assert result["head_to_head"]["greedy vs optimal"]["win_rate_a_ci95"][1] < 0.5


def test_the_tables_are_every_p_of_the_agents():
    assert lineups(4, 2) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]  # every pair: the round robin
    assert lineups(3, 3) == [(0, 1, 2)]  # as many agents as seats: the one table
    assert lineups(4, 3) == [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]
    assert lineups(2, 3) == []


def test_deal_outcomes_hold_a_pairs_largest_outcome():
    """2 * (games of a pair a deal): 2 * 9 at one table of 3; 2 * comb(5, 2) * 16 = 320 with 7 agents at tables of 4."""
    assert [outcome_dtype(n) for n in (9, 100, 127, 128, 160, 32767, 32768)] == [np.uint8] * 3 + [np.uint16] * 3 + [
        np.uint32
    ]
    agents = [make_agent("optimal"), make_agent("random", seed=0)] + [GreedyAgent(name=f"g{k}") for k in range(5)]
    result = head_to_head(agents, 4, 1, seed=0, calibration=False)
    assert result.num_tables == 35 and result.pair_games_per_deal == 160 and result.deal_outcomes.dtype == np.uint16
    pair = result.pairs[pair_key("optimal", "random")]
    assert pair.games == 160 and pair.wins_a + pair.ties > 150  # the solver beats random nearly always
    assert int(result.deal_outcomes[0, 0]) == 2 * pair.wins_a + pair.ties > 255  # past uint8
    assert result.to_dict()["head_to_head"]["optimal vs random"]["win_rate_a"] == (2 * pair.wins_a + pair.ties) / 320


def test_a_tally_stays_exact_past_int64():
    tally = Tally()
    tally.add(np.array([3 * 10**9, -3 * 10**9, 7]))  # the squares sum past 2 ** 63
    assert (tally.n, tally.total, tally.total_sq) == (3, 7, 18 * 10**18 + 49)


@pytest.mark.parametrize("p", [2, 3, 4])
def test_seating_rotates_seats_and_dice_in_balance(p):
    agent_at, stream_at = seating(p)
    assert agent_at.shape == stream_at.shape == (p * p, p)
    for g in range(p * p):
        d, r = divmod(g, p)
        for i in range(p):
            assert agent_at[g, (i + r) % p] == i  # agent i at seat (i + r) % P
            assert stream_at[g, (i + r) % p] == (i + d) % p  # holding stream (i + d) % P, whatever its seat
    for i in range(p):  # each agent: each seat P times, each stream P times
        seats, streams = np.nonzero(agent_at == i)[1], stream_at[agent_at == i]
        assert np.bincount(seats, minlength=p).tolist() == [p] * p
        assert np.bincount(streams, minlength=p).tolist() == [p] * p


def test_an_agent_keeps_its_dice_whatever_its_seat():
    p, seed, deal = 2, 7, 5
    dice = table_streams(seed, range(deal, deal + 1), p)
    own = game_streams(seed, range(deal * p, deal * p + p))  # the deal's streams
    agent_at, _ = seating(p)
    table = TableState("standard", p, p * p)
    table.start(R.prefix_codes(dice.reshape(p * p, p, -1, R.NUM_DICE)))
    first_rolls = R.ROLLS[table.players.roll].reshape(p * p, p, R.NUM_DICE)
    for d in range(p):
        for i in range(p):
            expected = np.sort(own[(i + d) % p, 0, 0])
            for r in range(p):  # the same first roll from every seat
                seat = int(np.flatnonzero(agent_at[d * p + r] == i)[0])
                assert (first_rolls[d * p + r, seat] == expected).all()
                assert (dice[d * p + r, seat] == own[(i + d) % p]).all()
    assert not (own[0] == own[1]).all()


@pytest.mark.slow
def test_results_are_reproducible_and_do_not_depend_on_the_batch_size():
    def run(seed, batch_size, random_seed=0):
        agents = [make_agent("random", seed=random_seed), make_agent("greedy")]
        return render_json(head_to_head(agents, 2, 300, seed=seed, batch_size=batch_size))

    assert run(0, 1000) == run(0, 1000)
    assert run(0, 1000) != run(1, 1000)
    deterministic = [make_agent("greedy"), make_agent("optimal")]
    assert render_json(head_to_head(deterministic, 2, 90, batch_size=4)) == render_json(
        head_to_head(deterministic, 2, 90, batch_size=10_000)
    )


class FirstLegal(Agent):
    """Takes the first legal action; with ``table_players`` set it records the observations it was shown."""

    def __init__(self, name: str, table_players: int | None = None, action: int | None = None) -> None:
        super().__init__(name)
        self.table_players = table_players
        self.action = action
        self.sizes: set[int] = set()

    def _act(self, observations, action_masks):
        self.sizes.add(observations.shape[1])
        if self.action is not None:
            return np.full(len(observations), self.action)
        return action_masks.argmax(axis=1)


def test_a_table_agent_sees_the_table_from_its_seat_and_a_solo_agent_its_own_game():
    table_agent, solo_agent = FirstLegal("table", table_players=2), FirstLegal("solo")
    result = head_to_head([table_agent, solo_agent], 2, 20).to_dict()
    assert table_agent.sizes == {MultiplayerEncoder("standard", 2).size}
    assert solo_agent.sizes == {solo_agent.encoder.size}
    assert result["head_to_head"]["table vs solo"]["win_rate_a"] == 0.5  # the same policy on the same dice


def test_play_tables_returns_the_totals_by_seat():
    dice = table_streams(0, range(0, 3), 2)
    agent_at, _ = seating(2)
    totals = play_tables([make_agent("optimal"), make_agent("greedy")], dice, np.tile(agent_at, (3, 1)))
    assert totals.shape == (12, 2)
    solo = evaluate([make_agent("optimal"), make_agent("greedy")], 6, seed=0)
    _, stream_at = seating(2)
    for k in range(12):
        deal, g = divmod(k, 4)
        for seat in range(2):
            agent = ("optimal", "greedy")[agent_at[g, seat]]
            assert totals[k, seat] == solo.results[agent].scores[2 * deal + stream_at[g, seat]]


@pytest.mark.parametrize(
    "agents, players, match",
    [
        (["greedy", "optimal"], 3, "a 3-player head to head needs at least 3 agents, got 2"),
        (["greedy"], 2, "at least 2 agents"),
        (["greedy", "optimal"], 1, "num_players"),
        (["greedy", "optimal"], 11, "num_players"),
        (["greedy", "greedy"], 2, "distinct"),
    ],
)
def test_bad_arguments_raise(agents, players, match):
    with pytest.raises(ValueError, match=match):
        head_to_head([make_agent(spec) for spec in agents], players, 10)


def test_bad_agents_raise_naming_the_agent():
    with pytest.raises(ValueError, match="'cheat' chose illegal action 31"):
        head_to_head([make_agent("greedy"), FirstLegal("cheat", action=31)], 2, 5)
    with pytest.raises(ValueError, match="'wide' acts at a table of 3 players, not 2"):
        head_to_head([make_agent("greedy"), FirstLegal("wide", table_players=3)], 2, 5)
    with pytest.raises(ValueError, match="classic"):
        head_to_head([make_agent("greedy"), make_agent("optimal", rules="classic")], 2, 5)
    for games in (0, -1, 2.5):
        with pytest.raises(ValueError, match="games"):
            head_to_head([make_agent("greedy"), make_agent("optimal")], 2, games)


def test_the_batch_size_is_bounded():
    agents = [make_agent("greedy"), make_agent("optimal")]
    for batch_size in (20_001, 10_000_000):  # refused before anything is allocated
        with pytest.raises(ValueError, match="batch_size must be an int >= 1 and <= 20,000, got"):
            head_to_head(agents, 2, 10, batch_size=batch_size)


# --------------------------------------------------------------------------------------------------
# evaluate.py --players
# --------------------------------------------------------------------------------------------------


def test_script_writes_the_head_to_head_json_byte_for_byte(tmp_path):
    outputs = []
    for name in ("a.json", "b.json"):
        path = tmp_path / name
        args = ["--players", "2", "--agents", "greedy", "random", "--games", "50", "--json", str(path)]
        done = run_script("evaluate.py", *args, "--no-progress")
        assert done.returncode == 0, done.stderr
        assert "win rate of row against column" in done.stdout and f"wrote {path}" in done.stdout
        outputs.append(path.read_bytes())
    assert outputs[0] == outputs[1]
    report = json.loads(outputs[0])
    assert list(report["head_to_head"]) == ["greedy vs random"]
    pair = report["head_to_head"]["greedy vs random"]
    assert set(pair) == PAIR_KEYS and pair["games"] == 200 and pair["win_rate_a"] > 0.9
    assert report["players"] == 2 and report["deals"] == 50 and report["seed"] == 0
    assert list(report["agents"]) == ["greedy", "random"]


def test_script_seats_copies_of_one_agent_by_their_labels(tmp_path):
    path = tmp_path / "copies.json"
    args = ["--players", "3", "--agents", "greedy", "optimal", "optimal#2", "--games", "30", "--json", str(path)]
    done = run_script("evaluate.py", *args, "--no-progress")
    assert done.returncode == 0, done.stderr
    agents = json.loads(path.read_bytes())["agents"]
    assert list(agents) == ["greedy", "optimal", "optimal#2"]
    # one agent twice: each copy plays every stream of every deal, so their scores are equal exactly
    assert agents["optimal"]["mean_score"] == agents["optimal#2"]["mean_score"]


def test_script_plots_the_two_player_matrix(tmp_path):
    path = tmp_path / "matrix.png"
    done = run_script(
        "evaluate.py", "--players", "2", "--agents", "greedy", "optimal", "--games", "20", "--plot", str(path)
    )
    assert done.returncode == 0, done.stderr
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.parametrize(
    "args",
    [
        ["--players", "3", "--agents", "greedy", "random"],
        ["--players", "3", "--agents", "greedy", "random", "optimal", "--plot", "PLOT"],
        ["--players", "2", "--agents", "greedy"],
        ["--players", "2", "--agents", "greedy", "greedy"],
        ["--players", "11", "--agents", "greedy", "random"],
        ["--players", "0", "--agents", "greedy", "random"],
        ["--players", "two", "--agents", "greedy", "random"],
        ["--players", "2", "--agents", "greedy", "nope"],
        ["--players", "2", "--agents", "greedy", "random", "--games", "0"],
    ],
)
def test_script_bad_input_is_one_error_line_exit_2_and_no_file(tmp_path, args):
    args = [str(tmp_path / "m.png") if arg == "PLOT" else arg for arg in args]
    done = run_script("evaluate.py", "--games", "5", *args, "--json", str(tmp_path / "out.json"), "--no-progress")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("evaluate.py: error: "), done.stderr
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------
# Calibration of the win agent's model (P(first) at every round start against the outcomes)
# --------------------------------------------------------------------------------------------------
CALIBRATION_KEYS = {"method", "rounds", "predictions", "brier", "brier_constant", "agents", "reliability"}
CALIBRATION_AGENT_KEYS = {"predictions", "mean_predicted", "observed_win_share", "mean_predicted_by_round", "brier"}


@pytest.fixture(scope="module")
def optimal_copies():
    from yacht_agents.optimal import OptimalAgent

    return head_to_head([OptimalAgent(), OptimalAgent(name="optimal_2")], 2, DEALS, seed=0).to_dict()


def test_the_model_is_calibrated_for_solver_playing_agents(optimal_copies):
    """Two solver-playing agents are what the model assumes: in every bin of the pooled reliability table
    (1,600 to 40,000 predictions each at 2,000 deals) the observed frequency is within 0.04 of the mean
    prediction (the largest gap at seed 0 is 0.018), and the Brier score beats always predicting 1/2."""
    calibration = optimal_copies["calibration"]
    assert set(calibration) == CALIBRATION_KEYS
    assert calibration["rounds"] == 12
    assert calibration["predictions"] == DEALS * 4 * 12 * 2
    bins = calibration["reliability"]
    assert [row["bin"] for row in bins] == [[k / 10, (k + 1) / 10] for k in range(10)]
    assert sum(row["count"] for row in bins) == calibration["predictions"]
    for k, row in enumerate(bins):
        assert row["count"] >= 10_000
        assert k / 10 <= row["mean_predicted"] <= (k + 1) / 10
        assert row["observed"] == pytest.approx(row["mean_predicted"], abs=0.04)
    # Copies are mirror images (each pair of seats replays the same dice the other way round); 1/2 is in bin 5.
    for row, mirror in zip(bins[:4], bins[:5:-1], strict=True):
        assert row["count"] == mirror["count"]
        assert row["mean_predicted"] + mirror["mean_predicted"] == pytest.approx(1, abs=2e-6)
    # Always 1/2 misses a decided game by 1/4 and a tie by 0: just under 0.25.
    assert 0.24 < calibration["brier_constant"] <= 0.25
    assert calibration["brier"] < 0.18
    for name in ("optimal", "optimal_2"):
        stats = calibration["agents"][name]
        assert set(stats) == CALIBRATION_AGENT_KEYS
        assert stats["predictions"] == DEALS * 4 * 12
        assert stats["mean_predicted"] == stats["observed_win_share"] == 0.5
        assert stats["mean_predicted_by_round"] == [0.5] * 12


def test_calibration_of_a_non_solver_agent_and_the_report(optimal_vs_greedy):
    """Greedy does not play the solver's policy: the model overrates it (it predicts the greedy agent's total
    as if the solver played on); at the first round every prediction is exactly 1/2."""
    calibration = optimal_vs_greedy["calibration"]
    optimal, greedy = calibration["agents"]["optimal"], calibration["agents"]["greedy"]
    assert optimal["mean_predicted_by_round"][0] == greedy["mean_predicted_by_round"][0] == 0.5
    assert optimal["mean_predicted"] + greedy["mean_predicted"] == pytest.approx(1, abs=2e-6)
    assert optimal["observed_win_share"] == optimal_vs_greedy["agents"]["optimal"]["win_share"]
    assert greedy["mean_predicted"] > greedy["observed_win_share"] + 0.03
    by_round = greedy["mean_predicted_by_round"]
    assert all(a > b for a, b in zip(by_round, by_round[1:], strict=False))  # the model learns, round by round


def test_round_starts_are_recorded_at_every_round_start():
    """play_tables fills, per table and round k, every seat's open mask (k categories filled) and total."""
    dice = table_streams(3, range(2), 2)
    agent_at, _ = seating(2)
    starts = np.full((8, 12, 2, 2), -1, dtype=np.int64)
    totals = play_tables(
        [make_agent("optimal"), make_agent("greedy")], dice, np.tile(agent_at, (2, 1)), "standard", starts
    )
    filled = 12 - R.OPEN_BITS[starts[:, :, 0]].sum(axis=-1)
    assert (filled == np.arange(12)[None, :, None]).all()
    assert (starts[:, 0, 1] == 0).all()
    assert (np.diff(starts[:, :, 1], axis=1) >= 0).all() and (starts[:, -1, 1] <= totals).all()


# --------------------------------------------------------------------------------------------------
# Paired differences against a common opponent
# --------------------------------------------------------------------------------------------------
def test_paired_differences_are_the_per_deal_differences_of_the_solo_games():
    """Deal g's streams are solo games 2g and 2g + 1; a pair's outcome per deal follows from the solo scores, so
    the paired difference against a common opponent is known exactly, deal by deal."""
    deals = 400
    agents = [make_agent("optimal"), make_agent("greedy"), make_agent("ppo:standard")]  # solo and deterministic
    result = head_to_head(agents, 2, deals, seed=5)
    solo = evaluate(agents, 2 * deals, seed=5)
    score = {name: solo.results[name].scores.reshape(deals, 2) for name in ("optimal", "greedy", "ppo:standard")}

    def outcome(x, c):  # per deal: 2 * wins of x against c + ties, over its 4 games (x on each stream, each seat)
        a, b = score[x], score[c]
        wins = (a[:, 0] > b[:, 1]).astype(int) + (a[:, 1] > b[:, 0])
        ties = (a[:, 0] == b[:, 1]).astype(int) + (a[:, 1] == b[:, 0])
        return 2 * (2 * wins + ties)

    names = ("optimal", "greedy", "ppo:standard")
    for a, b, c in ((names[0], names[1], names[2]), (names[0], names[2], names[1]), (names[1], names[2], names[0])):
        per_deal = (outcome(a, c) - outcome(b, c)) / 8
        difference, (lo, hi) = result.paired_difference(a, b, c)
        assert difference == pytest.approx(per_deal.mean(), abs=1e-12)
        half = 1.959963984540054 * per_deal.std(ddof=1) / np.sqrt(deals)
        assert (lo, hi) == pytest.approx((per_deal.mean() - half, per_deal.mean() + half), abs=1e-12)
        assert result.paired_difference(b, a, c)[0] == pytest.approx(-difference, abs=1e-15)
    rates = result.to_dict()["head_to_head"]
    # The mean difference is the difference of the two win rates; its interval is narrower than the unpaired one
    # (the same dice make the two pairs' outcomes correlate).
    difference, (lo, hi) = result.paired_difference("optimal", "greedy", "ppo:standard")
    a, b = rates["optimal vs ppo:standard"], rates["greedy vs ppo:standard"]
    assert difference == pytest.approx(a["win_rate_a"] - b["win_rate_a"], abs=2e-6)
    widths = [pair["win_rate_a_ci95"][1] - pair["win_rate_a_ci95"][0] for pair in (a, b)]
    assert hi - lo < 0.95 * np.hypot(*widths)
    paired = result.to_dict()["paired"]
    assert list(paired) == list(names)
    assert list(paired["ppo:standard"]) == ["optimal - greedy"] and list(paired["optimal"]) == ["greedy - ppo:standard"]
    assert paired["ppo:standard"]["optimal - greedy"]["difference"] == round(difference, 6)


def test_copies_of_one_agent_differ_by_exactly_zero_against_anyone():
    result = head_to_head([make_agent("greedy"), GreedyAgent(name="greedy_b"), make_agent("optimal")], 2, 300, seed=2)
    assert result.paired_difference("greedy", "greedy_b", "optimal") == (0.0, [0.0, 0.0])


def test_paired_differences_need_three_agents_of_the_head_to_head_at_two_players():
    two = head_to_head([make_agent("greedy"), make_agent("optimal")], 2, 50, seed=0)
    assert "paired" not in two.to_dict()
    with pytest.raises(ValueError, match="three different agents"):
        two.paired_difference("greedy", "optimal", "greedy")
    three = head_to_head([make_agent(spec, seed=0) for spec in ("random", "greedy", "optimal")], 3, 20, seed=0)
    assert "paired" not in three.to_dict()  # one table of three: no common opponent met apart
    with pytest.raises(ValueError, match="three different agents"):
        three.paired_difference("random", "greedy", "win")


def test_a_rates_interval_stays_inside_its_range():
    """A win rate near 0 had a normal-approximation interval below it ("0.01% [-0.01, 0.04]"): rates, shares and
    their differences are clipped to their ranges, in the JSON and the text; a regret's interval stops at 0."""
    from yacht_lab.measure.head_to_head_report import format_report
    from yacht_lab.measure.report import mean_ci

    result = head_to_head([make_agent("random", seed=1), make_agent("greedy")], 2, 20, seed=2)
    report = result.to_dict()
    pair = report["head_to_head"]["random vs greedy"]
    assert pair["win_rate_a"] == 0.0125 and pair["win_rate_a_ci95"] == [0.0, 0.037]
    assert report["agents"]["random"]["win_share_ci95"] == [0.0, 0.037]
    assert report["agents"]["greedy"]["win_share_ci95"] == [0.963, 1.0]
    assert "1.25% [0.00, 3.70]" in format_report(result)
    assert mean_ci(np.array([0.0, 0.0, 0.0, 0.1]), low=0.0) == pytest.approx((0.025, 0.0, 0.0739991), abs=1e-7)
