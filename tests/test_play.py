"""Specification of ``play.py`` and ``yacht_lab.table.terminal`` (with ``yacht_lab.table.commands`` and
``yacht_lab.table.screen``): the commands a person types, the coach's numbers (the solver's own action values), whole
games through the loop and through the script, every bad input (one line, the game goes on), clean exits, reproducible
transcripts and
one-line argument errors."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import REPO, run_script

import play
from yacht_agents import make_agent
from yacht_agents.win import WinAgent
from yacht_env import rules as R
from yacht_env.env import YachtEnv
from yacht_env.game import GameState, game_streams, parse_dice_stream
from yacht_env.solver import solve
from yacht_lab.table.commands import (
    ALIASES,
    HELP,
    MAX_LINE,
    Command,
    CommandError,
    command_for,
    describe,
    display_name,
    help_text,
    kept_dice,
    parse_command,
    pick_words,
    resolve,
)
from yacht_lab.table.screen import PlainScreen, RichScreen
from yacht_lab.table.terminal import Quit, TableGame, default_names

STANDARD = R.get_rules("standard")
SCORE = R.score_table(STANDARD)


def solo_optimal_total(stream: np.ndarray, rules: R.Rules = STANDARD) -> int:
    """The optimal policy's total on one (12, 3, 5) dice stream, played on its own ``GameState``."""
    game, solution = GameState(rules), solve(rules)
    game.start(R.prefix_codes(stream.reshape(-1, R.NUM_DICE)))
    while True:
        _, finished = game.play(solution.best_action(game.roll, game.rolls_left, game.open_mask))
        if finished:
            return int(game.total)


def first_rolls_in_order_total(stream: np.ndarray) -> int:
    """Scoring each turn's first roll in category ``turn`` (``s 1`` .. ``s 12``)."""
    return sum(int(SCORE[R.roll_index(stream[t, 0]), t]) for t in range(R.NUM_CATEGORIES))


def final_line(names: list[str], totals: list[int]) -> str:
    scores = ", ".join(f"{name} {total}" for name, total in zip(names, totals, strict=True))
    winners = [name for name, total in zip(names, totals, strict=True) if total == max(totals)]
    if len(winners) > 1:
        return f"final: {scores}; {' and '.join(winners)} tie with {max(totals)}"
    return f"final: {scores}; {winners[0]} {'win' if winners[0] == 'You' else 'wins'}"


class Transcript:
    """A person's inputs from a list (or a function of the game), written to the transcript as a pipe shows them."""

    def __init__(self, lines=None) -> None:
        self.out = io.StringIO()
        self.lines = iter(lines or [])
        self.game: TableGame | None = None

    def read(self, prompt: str) -> str:
        self.out.write(prompt)
        try:
            line = next(self.lines)
        except StopIteration:
            self.out.write("\n")
            raise EOFError from None
        if callable(line):
            line = line(self.game)
        self.out.write(line + "\n")
        return line


def new_game(specs, lines=None, seed=3, hints=False, rules="standard", names=None, delay=0.0, sleep=None):
    transcript = Transcript(lines)
    agents = [None if spec == "human" else make_agent(spec, rules, seed=0) for spec in specs]
    kwargs = {} if sleep is None else {"sleep": sleep}
    game = TableGame(
        agents,
        names or default_names(specs),
        rules,
        seed,
        PlainScreen(transcript.out),
        transcript.read,
        hints=hints,
        delay=delay,
        **kwargs,
    )
    transcript.game = game
    return game, transcript


def best_command(game: TableGame) -> str:
    """What a person following the solver types (positions, one die by its face, ``r``, ``s <number>``)."""
    player = game.table.on_turn
    action = solve(game.rules).best_action(player.roll, player.rolls_left, player.open_mask)
    return command_for(action, player.roll)


# --------------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("keep 4 4 6", Command("keep", faces=(4, 4, 6))),
        ("k 4 4 6", Command("keep", faces=(4, 4, 6))),
        ("KEEP 6 4 4", Command("keep", faces=(4, 4, 6))),
        ("keep 4,4,6", Command("keep", faces=(4, 4, 6))),
        ("  hold   6 ", Command("keep", faces=(6,))),
        ("k 6", Command("keep", faces=(6,))),
        ("k 245", Command("keep", positions=(2, 4, 5))),
        ("keep 52", Command("keep", positions=(2, 5))),
        ("k 1234", Command("keep", positions=(1, 2, 3, 4))),
        ("r", Command("keep", faces=())),
        ("roll", Command("keep", faces=())),
        ("s fh", Command("score", category=6)),
        ("score full house", Command("score", category=6)),
        ("s full_house", Command("score", category=6)),
        ("s fullhouse", Command("score", category=6)),
        ("s ful", Command("score", category=6)),
        ("s 7", Command("score", category=6)),
        ("s 1", Command("score", category=0)),
        ("s 12", Command("score", category=11)),
        ("s 4k", Command("score", category=7)),
        ("score four of a kind", Command("score", category=7)),
        ("s 4 of a kind", Command("score", category=7)),
        ("s ls", Command("score", category=8)),
        ("s small straight", Command("score", category=8)),
        ("s little", Command("score", category=8)),
        ("s bs", Command("score", category=9)),
        ("s large straight", Command("score", category=9)),
        ("s big", Command("score", category=9)),
        ("s chance", Command("score", category=10)),
        ("s choice", Command("score", category=10)),
        ("s c", Command("score", category=10)),
        ("s yacht", Command("score", category=11)),
        ("s yahtzee", Command("score", category=11)),
        ("s y", Command("score", category=11)),
        ("s 1s", Command("score", category=0)),
        ("s ones", Command("score", category=0)),
        ("s aces", Command("score", category=0)),
        ("s 6s", Command("score", category=5)),
        ("score Sixes", Command("score", category=5)),
        ("s thr", Command("score", category=2)),
        ("help", Command("help")),
        ("h", Command("help")),
        ("?", Command("help")),
        ("quit", Command("quit")),
        ("Q", Command("quit")),
    ],
)
def test_commands(text, expected):
    assert parse_command(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("s f", "'f' could be Fours, Fives, Full House or Four of a Kind: type more of the name"),
        ("s fo", "'fo' could be Fours or Four of a Kind: type more of the name"),
        ("s l", "'l' could be Little Straight or Big Straight: type more of the name"),
        ("s s", "'s' could be Sixes or Little Straight: type more of the name"),
        ("s 13", "there is no category 13: the sheet numbers them 1..12"),
        ("s 0", "there is no category 0: the sheet numbers them 1..12"),
        ("s foo", "unknown category 'foo': type its number in the sheet or its name (help lists them)"),
        ("s", "score which category? e.g. s fh, s 7, score full house"),
        ("k", "keep which dice? e.g. keep 4 4 6 (faces) or k 245 (positions); roll re-rolls all five"),
        ("k 7", "7 is not a face of a die (1..6)"),
        ("keep 4 0", "0 is not a face of a die (1..6)"),
        ("k 446", "k 446: positions are 1..5, each once (to keep by faces, separate them: k 4 4 6)"),
        ("k 16", "k 16: positions are 1..5, each once (to keep by faces, separate them: k 1 6)"),
        ("k a b", "k takes faces (keep 4 4 6) or positions (k 245), got 'a b'"),
        ("keep 4 x", "keep takes faces (keep 4 4 6) or positions (k 245), got '4 x'"),
        ("k 1 1 1 1 1 1", "there are only five dice; got 6 faces to keep"),
        ("r 2", "r re-rolls all five dice and takes nothing more; to keep some: keep 4 4 6"),
        ("", "type a command (help lists them)"),
        ("   ", "type a command (help lists them)"),
        ("xyzzy", "unknown command 'xyzzy': type help for the commands"),
        ("help me", "unknown command 'help me': type help for the commands"),
        ("4 4 6", "unknown command '4 4 6': type help for the commands"),
        # str.isdigit accepts superscripts (² is a key of AZERTY keyboards) that int() cannot read
        ("s ²", "unknown category '²': type its number in the sheet or its name (help lists them)"),
        ("k ²³", "k takes faces (keep 4 4 6) or positions (k 245), got '²³'"),
        ("keep 4 ²", "keep takes faces (keep 4 4 6) or positions (k 245), got '4 ²'"),
        # int() refuses more than 4,300 digits; a long number is shown cut short
        ("s " + "9" * 5000, "there is no category 99999999999999999999...: the sheet numbers them 1..12"),
        ("keep 4 " + "7" * 5000, "77777777777777777777... is not a face of a die (1..6)"),
        (
            "k " + "7" * 5000,
            "k 77777777777777777777...: positions are 1..5, each once (to keep by faces, separate them: "
            "k 7 7 7 7 7 7 7 7 7 7 ...)",
        ),
        ("s 0000000000013", "there is no category 13: the sheet numbers them 1..12"),
    ],
)
def test_bad_commands(text, message):
    with pytest.raises(CommandError) as error:
        parse_command(text)
    assert str(error.value) == message


DICE = R.roll_index([6, 2, 4, 1, 2])  # sorted: 1 2 2 4 6
SHEET = np.array([-1, -1, -1, -1, 10, -1, -1, -1, -1, -1, -1, -1], dtype=np.int16)
ALL_FIVE = "keeping all five dice re-rolls nothing: score instead (s <category>)"
OPEN = STANDARD.all_open & ~(1 << 4)  # Fives filled with 10


@pytest.mark.parametrize(
    ("command", "rolls_left", "action"),
    [
        (Command("keep", faces=(2, 2)), 2, 0b00110),
        (Command("keep", faces=(2,)), 2, 0b00010),
        (Command("keep", positions=(3,)), 2, 0b00010),  # the other 2: the same multiset, the canonical mask
        (Command("keep", positions=(1, 3)), 1, 0b00011),
        (Command("keep", faces=(1, 2, 4, 6)), 1, 0b11011),
        (Command("keep", faces=(6,)), 2, 0b10000),
        (Command("keep", faces=()), 2, 0),
        (Command("score", category=0), 2, 32),
        (Command("score", category=11), 0, 43),
    ],
)
def test_resolve(command, rolls_left, action):
    assert resolve(command, DICE, rolls_left, OPEN, SHEET, STANDARD) == action


@pytest.mark.parametrize(
    ("command", "rolls_left", "message"),
    [
        (Command("keep", faces=(3,)), 2, "you have no 3 to keep (the dice: 1 2 2 4 6)"),
        (Command("keep", faces=(2, 2, 2)), 2, "you have only two 2s to keep (the dice: 1 2 2 4 6)"),
        (Command("keep", faces=(6, 6)), 2, "you have only one 6 to keep (the dice: 1 2 2 4 6)"),
        (Command("keep", faces=(1, 2, 2, 4, 6)), 2, ALL_FIVE),
        (Command("keep", positions=(1, 2, 3, 4, 5)), 1, ALL_FIVE),
        (Command("keep", faces=(2,)), 0, "no re-rolls left this turn: score the dice (s <category>)"),
        (Command("keep", faces=()), 0, "no re-rolls left this turn: score the dice (s <category>)"),
        (Command("score", category=4), 2, "Fives is already filled (10): choose an open category"),
    ],
)  # fmt: skip
def test_resolve_refuses(command, rolls_left, message):
    with pytest.raises(CommandError) as error:
        resolve(command, DICE, rolls_left, OPEN, SHEET, STANDARD)
    assert str(error.value) == message


def test_every_legal_keep_has_a_command_that_plays_it():
    """For every roll, every legal (canonical) keep typed by positions and by faces resolves to itself."""
    for roll in range(R.NUM_ROLLS):
        for mask in np.flatnonzero(R.CANONICAL_KEEPS[roll]):
            mask = int(mask)
            by_faces = Command("keep", faces=tuple(int(f) for f in kept_dice(roll, mask)))
            assert resolve(by_faces, roll, 2, STANDARD.all_open, SHEET, STANDARD) == mask
            typed = parse_command(command_for(mask, roll))
            assert resolve(typed, roll, 1, STANDARD.all_open, SHEET, STANDARD) == mask
        assert not R.CANONICAL_KEEPS[roll, R.KEEP_ALL]


def test_display_names_and_default_names():
    assert [display_name(c) for c in R.CATEGORIES][6:] == [
        "Full House",
        "Four of a Kind",
        "Little Straight",
        "Big Straight",
        "Choice",
        "Yacht",
    ]
    assert default_names(["human", "optimal"]) == ["You", "optimal"]
    assert default_names(["human", "human", "optimal", "optimal", "ppo:models/ppo_standard.zip"]) == [
        "Human 1",
        "Human 2",
        "optimal",
        "optimal 2",
        "ppo:ppo_standard",
    ]


# --------------------------------------------------------------------------------------------------
# The coach
# --------------------------------------------------------------------------------------------------
def test_coach_numbers_are_the_solvers_action_values():
    """Along a whole hinted game the coach's values, best move and expected final score are the solver's."""
    solution = solve(STANDARD)
    seen = []

    def record_and_play_worst_legal_keep_or_pick(game):
        player = game.table.on_turn
        advice = game.coach.advise(player.roll, player.rolls_left, player.open_mask, player.total)
        q = solution.q_values(player.roll, player.rolls_left, player.open_mask)
        np.testing.assert_array_equal(advice.q, q)
        assert advice.best == solution.best_action(player.roll, player.rolls_left, player.open_mask)
        assert advice.expected_final == player.total + q.max()
        legal = np.flatnonzero(np.isfinite(q))
        action = int(legal[-1] if len(seen) % 2 else legal[0])  # alternately the last pick and the first keep
        seen.append((q.max() - q[action], player.roll))
        return command_for(action, player.roll)

    game, transcript = new_game(["human"], [record_and_play_worst_legal_keep_or_pick] * 36, seed=11, hints=True)
    game.play()
    costs = [d.cost for d in game.decisions]
    assert len(costs) == len(seen) >= 12
    np.testing.assert_allclose(costs, [gap for gap, _ in seen], rtol=0, atol=1e-12)
    assert game.given_away()[0] == pytest.approx(sum(gap for gap, _ in seen), abs=1e-9)
    assert transcript.out.getvalue().count("coach: ") == 2 * len(seen)  # a hint and a verdict per decision


def test_hint_and_verdict_lines_show_the_solvers_numbers():
    """Seed 3, first roll 4 5 5 5 6: the hint names the best keep, its margin over re-rolling all and the
    expected final score; after ``k 12`` (keep 4 5) the verdict is best q - q[keep 4 5]."""
    streams = game_streams(3, range(2))
    roll = R.roll_index(streams[0, 0, 0])
    assert R.ROLLS[roll].tolist() == [4, 5, 5, 5, 6]
    q = solve(STANDARD).q_values(roll, 2, STANDARD.all_open)
    assert int(np.argmax(q)) == 0b01110  # keep 5 5 5
    game, transcript = new_game(["human", "optimal"], ["k 12"], seed=3, hints=True)
    with pytest.raises(EOFError):
        game.play()
    lines = transcript.out.getvalue().splitlines()
    hint = f"coach: keep 5 5 5 ({q[0b01110] - q[0]:+.2f} over re-rolling all); expected final score {q.max():.2f}"
    assert hint == "coach: keep 5 5 5 (+7.31 over re-rolling all); expected final score 171.09"
    assert lines[lines.index("You> k 12") - 2] == hint
    # At a table the win agent's model gives the odds too: its win probability per action, opponents to play.
    chances = WinAgent(STANDARD, 2).win_probabilities(roll, 2, STANDARD.all_open, 0, [[STANDARD.all_open]], [[0]])[0]
    odds = f"odds: win chance {chances[0b01110]:.1%} with the coach's move"
    if chances.max() > chances[0b01110] + 1e-12:
        best_for_winning = int(np.argmax(chances))
        odds += f"; to win: keep {' '.join(map(str, kept_dice(roll, best_for_winning)))} ({chances.max():.1%})"
    assert lines[lines.index("You> k 12") - 1] == odds
    verdict = f"coach: that gave away {q.max() - q[0b00011]:.2f} expected points (best: keep 5 5 5)"
    at = lines.index("You> k 12")
    after = f"odds: win chance {chances[0b00011]:.1%} after that move"
    assert lines[at + 1 : at + 4] == ["You: keep 4 5 (positions 1 2) -> 1 1 4 5 6", verdict, after]
    assert verdict == "coach: that gave away 6.60 expected points (best: keep 5 5 5)"
    assert chances[0b00011] < chances[0b01110]  # the costly keep lowers the odds too
    # The next hint is the solver's again, from the new state (1 1 4 5 6, one re-roll left).
    player = game.table.on_turn
    assert (R.ROLLS[player.roll].tolist(), player.rolls_left) == ([1, 1, 4, 5, 6], 1)
    q2 = solve(STANDARD).q_values(player.roll, 1, STANDARD.all_open)
    best = int(np.argmax(q2))
    words = " ".join(map(str, kept_dice(player.roll, best)))
    next_hint = [line for line in lines[at + 4 :] if line.startswith("coach: ")][0]
    assert next_hint == (
        f"coach: keep {words} ({q2[best] - q2[0]:+.2f} over re-rolling all); expected final score {q2.max():.2f}"
    )


# --------------------------------------------------------------------------------------------------
# Whole games in process
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 3])
def test_a_person_following_the_solver_plays_the_optimal_game(seed):
    """A person typing the solver's best moves against ``optimal``: both totals are the optimal policy's on
    each seat's stream, nothing is given away, the final line names the totals and the winner."""
    streams = game_streams(seed, range(2))
    game, transcript = new_game(["human", "optimal"], [best_command] * 36, seed=seed, hints=True)
    totals = game.play()
    expected = [solo_optimal_total(streams[0]), solo_optimal_total(streams[1])]
    assert totals == expected
    assert game.given_away() == [0.0, 0.0]
    text = transcript.out.getvalue()
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith("? ")]  # no command was refused
    assert text.count("coach: best move (0.00 given away)") == sum(d.seat == 0 for d in game.decisions)
    assert [line for line in lines if line.startswith("final: ")] == [final_line(["You", "optimal"], totals)]
    assert "costliest decisions: none, every decision was a best move" in lines
    assert f"== round 12 of {STANDARD.num_turns}: You to play, 2 re-rolls left ==" in lines


def test_agents_moves_are_shown_and_waited_for():
    """An all-agent table: every keep names the dice kept and their positions, every pick its points; the
    delay is waited after each shown move; the review (with hints) counts the agents' decisions too."""
    waits = []
    game, transcript = new_game(["greedy", "optimal"], seed=5, hints=True, delay=0.25, sleep=waits.append)
    totals = game.play()
    lines = transcript.out.getvalue().splitlines()
    moves = [line for line in lines if line.startswith(("greedy: ", "optimal: ")) and "round" not in line]
    assert len(moves) == len(game.decisions) == len(waits)
    assert set(waits) == {0.25}
    picks = [line for line in moves if " scores " in line]
    assert len(picks) == 24
    for d, line in zip(game.decisions, moves, strict=True):
        if d.action >= R.PICK_OFFSET:
            points = int(SCORE[d.roll, d.action - R.PICK_OFFSET])
            assert f"scores {display_name(R.CATEGORIES[d.action - R.PICK_OFFSET])} for {points} (total " in line
        elif d.action:
            kept = " ".join(map(str, kept_dice(d.roll, d.action)))
            positions = " ".join(str(i + 1) for i in range(5) if d.action >> i & 1)
            assert f"keeps {kept} (positions {positions}) -> " in line
        else:
            assert "re-rolls all -> " in line
    assert totals[1] == solo_optimal_total(game_streams(5, range(2))[1])
    assert game.given_away()[1] == 0.0 and game.given_away()[0] > 0
    review = game.review().splitlines()
    assert review[1].split()[:2] == ["greedy", f"{game.given_away()[0]:.2f}"]
    assert review[2].split()[:2] == ["optimal", "0.00"]
    worst = game.costliest()
    assert len(worst) == 3 and all(d.seat == 0 for d in worst)
    assert [d.cost for d in worst] == sorted((d.cost for d in game.decisions), reverse=True)[:3]
    assert review[4].startswith("  1. greedy, round ") and review[4].endswith(f"cost {worst[0].cost:.2f}")


def test_every_bad_input_is_one_line_and_the_game_goes_on():
    streams = game_streams(3, range(2))
    first = R.ROLLS[R.roll_index(streams[0, 0, 0])]
    absent = next(face for face in range(1, 7) if face not in first)
    bad = {
        "": "? type a command (help lists them)",
        "garbage!!": "? unknown command 'garbage!!': type help for the commands",
        "k 9": "? 9 is not a face of a die (1..6)",
        f"k {absent}": f"? you have no {absent} to keep (the dice: {' '.join(map(str, first))})",
        "k 12345": "? keeping all five dice re-rolls nothing: score instead (s <category>)",
        "s f": "? 'f' could be Fours, Fives, Full House or Four of a Kind: type more of the name",
        "s 13": "? there is no category 13: the sheet numbers them 1..12",
    }
    ones = int(SCORE[R.roll_index(streams[0, 0, 0]), 0])
    lines = [*bad, "help", "s 1", "s ones", "r", "r", "k 1 2", "s 2", *(f"s {k}" for k in range(3, 13))]
    game, transcript = new_game(["human", "optimal"], lines, seed=3)
    totals = game.play()
    out = transcript.out.getvalue().splitlines()
    for typed, message in bad.items():
        at = out.index(f"You> {typed}")
        assert out[at + 1] == message
        assert out[at + 2].startswith("You> ")  # a new prompt at once
    at = out.index("You> s ones")
    assert out[at + 1] == f"? Ones is already filled ({ones}): choose an open category"
    at = out.index("You> k 1 2")
    assert out[at + 1] == "? no re-rolls left this turn: score the dice (s <category>)"
    assert out[out.index("You> help") + 1 : out.index("You> help") + 1 + len(HELP.splitlines())] == HELP.splitlines()
    assert sum(line.startswith("? ") for line in out) == len(bad) + 2
    assert sum(d.seat == 0 for d in game.decisions) == 12 + 2  # the person's 12 picks and 2 re-rolls
    assert totals[1] == solo_optimal_total(streams[1])


def test_superscripts_and_huge_numbers_at_the_table_are_one_line_each():
    bad = ["s ²", "k ²³", "s " + "9" * 5000, "k 1 " + "2" * 5000, "k " + "3" * 5000]
    game, transcript = new_game(["human"], [*bad, "quit"], seed=3)
    with pytest.raises(Quit):
        game.play()
    out = transcript.out.getvalue().splitlines()
    for typed in bad:
        at = out.index(f"You> {typed}")
        assert out[at + 1].startswith("? ") and len(out[at + 1]) < 200
        assert out[at + 2].startswith("You> ")


def test_undecodable_bytes_on_a_strict_utf8_stdin_are_a_bad_command_and_the_game_goes_on():
    stdin = b"s \xff\xfe\n\x80\x81\nk \xb2\xb3\ns 1\nquit\n"  # Latin-1 "k ²³", binary: not UTF-8
    done = subprocess.run(
        [sys.executable, str(REPO / "play.py"), "--players", "human", "--seed", "1", "--delay", "0"],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"},
    )
    out = done.stdout.decode()
    assert (done.returncode, done.stderr.decode()) == (0, "")
    assert "? unknown category '\ufffd\ufffd': type its number in the sheet or its name (help lists them)" in out
    assert "? unknown command '\ufffd\ufffd': type help for the commands" in out
    assert "? k takes faces (keep 4 4 6) or positions (k 245), got '\ufffd\ufffd'" in out
    assert out.count("You: score ") == 1
    assert out.endswith("\nbye\n")


def test_quit_and_end_of_input_stop_the_game():
    game, transcript = new_game(["human", "optimal"], ["s 1", "quit"], seed=3)
    with pytest.raises(Quit):
        game.play()
    assert len([d for d in game.decisions if d.seat == 0]) == 1
    game, transcript = new_game(["human"], [], seed=3)
    with pytest.raises(EOFError):
        game.play()


def test_the_table_checks_its_seats():
    ppo_like = make_agent("optimal")
    ppo_like.table_players = 3
    with pytest.raises(ValueError, match="acts at a table of 3 players, not 2"):
        TableGame([None, ppo_like], ["a", "b"], "standard", 0, PlainScreen(io.StringIO()), input)
    with pytest.raises(ValueError, match="plays the 'classic' rules, not 'standard'"):
        TableGame(
            [None, make_agent("optimal", "classic")], ["a", "b"], "standard", 0, PlainScreen(io.StringIO()), input
        )
    with pytest.raises(ValueError, match="a table seats 1..6 players, got 7"):
        TableGame([None] * 7, list("abcdefg"), "standard", 0, PlainScreen(io.StringIO()), input)


def test_the_rich_screen_shows_the_same_table():
    rich = pytest.importorskip("rich.console")
    out = io.StringIO()
    game, _ = new_game(["human", "optimal"], seed=3)
    screen = RichScreen(rich.Console(file=out, force_terminal=True, width=100, color_system="standard"))
    screen.sheet(game.sheet_view(decision=True))
    screen.say("coach: hello", "coach")
    text = out.getvalue()
    assert "\x1b[" in text  # coloured
    for needle in ("Full House", "(15)", "(25)", "round 1 of 12: You to play, 2 re-rolls left", "coach: hello"):
        assert needle in text


# --------------------------------------------------------------------------------------------------
# The script
# --------------------------------------------------------------------------------------------------
SCRIPT = "".join(f"s {k}\n" for k in range(1, 13))


def test_script_plays_a_whole_game_from_stdin():
    streams = game_streams(5, range(2))
    done = run_script("play.py", "--players", "human", "optimal", "--seed", "5", "--delay", "0", input=SCRIPT)
    assert (done.returncode, done.stderr) == (0, "")
    you, opponent = first_rolls_in_order_total(streams[0]), solo_optimal_total(streams[1])
    lines = done.stdout.splitlines()
    assert lines[0] == "Yacht, standard rules, dice seed 5: You, optimal. Type help for the commands."
    final = [line for line in lines if line.startswith("final: ")]
    assert final == [final_line(["You", "optimal"], [you, opponent])]
    assert "\x1b[" not in done.stdout  # plain text when piped
    assert lines[-1] == final[0]


def test_same_seed_same_inputs_same_transcript():
    args = ("--players", "human", "greedy", "random", "--seed", "9", "--delay", "0", "--hints")
    stdin = "k 9\nr\n" + SCRIPT
    first, second = run_script("play.py", *args, input=stdin), run_script("play.py", *args, input=stdin)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout
    assert "review: expected points given away (the solver's values)" in first.stdout
    assert "? 9 is not a face of a die (1..6)" in first.stdout
    other = run_script("play.py", *args[:-4], "10", "--delay", "0", "--hints", input=stdin)
    assert other.stdout != first.stdout


@pytest.mark.parametrize(("stdin", "decisions"), [("q\n", 0), ("s 1\nquit\n", 1), ("", 0), ("s 1\n", 1)])
def test_quit_and_eof_exit_cleanly(stdin, decisions):
    done = run_script("play.py", "--players", "human", "optimal", "--seed", "1", "--delay", "0", input=stdin)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.endswith("\nbye\n")
    assert done.stdout.count("You: score ") == decisions


def test_ctrl_c_leaves_cleanly():
    interrupt = (
        "import os, runpy, signal, sys\n"
        "class At:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'yacht_lab.table.terminal':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "sys.meta_path.insert(0, At())\n"
        "sys.argv = sys.argv[1:]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", interrupt, "play.py", "--delay", "0"],
        cwd=REPO,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "\nbye\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players"], "argument --players: expected at least one argument"),
        (["--players", *["optimal"] * 7], "argument --players: a table seats 1..6 players, got 7"),
        (
            ["--players", "human", "alphago"],
            "argument --players: unknown seat 'alphago'; "
            "expected human or random, greedy, optimal, win, win:P, duel, duel:optimal, ppo:PATH, jax:PATH, "
            "search:PATH",
        ),
        (  # argparse quotes the choices from Python 3.12.8 / 3.13.1 on
            ["--rules", "kniffel"],
            (
                "argument --rules: invalid choice: 'kniffel' (choose from classic, clubhouse, knizia, standard, "
                "yahtzee, yahtzee_forced_joker, yahtzee_no_bonus, yahtzee_no_joker, yatzy)",
                "argument --rules: invalid choice: 'kniffel' (choose from 'classic', 'clubhouse', 'knizia', "
                "'standard', 'yahtzee', 'yahtzee_forced_joker', 'yahtzee_no_bonus', 'yahtzee_no_joker', 'yatzy')",
            ),
        ),
        (["--names", "Ann"], "argument --names: give one name per seat: 2 seats, got 1"),
        (["--names", "Ann", "Ann"], "argument --names: names must be non-empty and different, got 'Ann Ann'"),
        (["--delay", "-1"], "argument --delay: expected a number >= 0 and <= 60.0, got '-1'"),
        (["--seed", "x"], "argument --seed: expected an integer >= 0, got 'x'"),
        (["--players", "ppo:no/such.zip"], "cannot load PPO model 'no/such.zip': file not found"),
    ],
)
def test_bad_arguments_are_one_line(args, message, capsys):
    try:
        code = play.main(args)
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    messages = message if isinstance(message, tuple) else (message,)
    assert (code, captured.out) == (2, "")
    assert captured.err in [f"play.py: error: {m}\n" for m in messages]


def test_bad_arguments_through_the_script():
    done = run_script("play.py", "--players", *["human"] * 7, input="")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "play.py: error: argument --players: a table seats 1..6 players, got 7\n"


def test_agents_get_the_observation_they_ask_for(monkeypatch):
    """An agent with ``table_players == P`` sees the table from its seat (``MultiplayerEncoder``); one with
    ``None`` its own game as ``Yacht-v0`` shows it; both with the table's mask of the player on turn."""
    from yacht_agents.base import Agent
    from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder

    class Recorder(Agent):
        def __init__(self, players):
            super().__init__(f"recorder{players}", "standard")
            self.table_players, self.seen = players, []

        def _act(self, observations, action_masks):
            self.seen.append((observations[0].copy(), action_masks[0].copy()))
            return np.flatnonzero(action_masks[0])[-1:]  # the last legal action: always a pick

    table_view, solo_view = Recorder(2), Recorder(None)
    checks = []
    original = TableGame._agent

    def checked(self, seat, agent):
        expected = (
            MultiplayerEncoder(STANDARD, 2).observe(self.table, seat)
            if agent.table_players
            else ObservationEncoder(STANDARD).flat(
                *(getattr(self.table.on_turn, k) for k in ("roll", "rolls_left", "open_mask"))
            )
        )
        action = original(self, seat, agent)
        observation, mask = agent.seen[-1]
        checks.append(np.array_equal(observation, expected) and np.array_equal(mask, self.table.mask))
        return action

    transcript = Transcript()
    game = TableGame([table_view, solo_view], ["a", "b"], "standard", 4, PlainScreen(transcript.out), transcript.read)
    monkeypatch.setattr(TableGame, "_agent", checked)
    game.play()
    assert len(table_view.seen) == len(solo_view.seen) == 12
    assert table_view.seen[0][0].shape == (79,) and solo_view.seen[0][0].shape == (64,)
    assert len(checks) == 24 and all(checks)


def test_a_ppo_model_takes_a_seat():
    pytest.importorskip("sb3_contrib")
    game, transcript = new_game(["human", "ppo:models/ppo_standard.zip"], [f"s {k}" for k in range(1, 13)], seed=2)
    totals = game.play()
    picks = [d for d in game.decisions if d.seat == 1 and d.action >= R.PICK_OFFSET]
    assert len(picks) == 12 and totals[1] == sum(int(SCORE[d.roll, d.action - 32]) for d in picks)
    assert totals[0] == first_rolls_in_order_total(game_streams(2, range(2))[0])


def test_the_readme_transcript_is_real_output():
    """The docs' turn (docs/play.md, moved there from the README) is what its command prints (the lines it cuts
    are marked ``   ... (``)."""
    page = (REPO / "docs" / "play.md").read_text()
    section = page[page.index("# Play in the terminal (`play.py`)") :]
    shown = section.split("```text\n")[1].split("```")[0].splitlines()
    kept = [line for line in shown if not line.startswith("   ... (")]
    assert "printf 'k 234\\nk 5 5 5 6\\ns 7\\nq\\n' | python play.py --players human optimal --seed 3" in section
    done = run_script(
        "play.py",
        "--players",
        "human",
        "optimal",
        "--seed",
        "3",
        "--hints",
        "--delay",
        "0",
        input="k 234\nk 5 5 5 6\ns 7\nq\n",
    )
    output = iter(done.stdout.splitlines())
    assert all(any(line == out for out in output) for line in kept)  # in order
    assert len(kept) == 46  # 40 lines of the sheet and the coach, 6 of the odds


def test_the_win_agent_takes_a_seat_sized_to_the_table():
    """``win`` at a 3-seat table is the win agent for 3 players (the table's view); ``win:2`` there is refused."""
    done = run_script("play.py", "--players", "greedy", "win", "optimal", "--seed", "4", "--delay", "0", input="")
    assert done.returncode == 0, done.stderr
    assert "win: round 12" in done.stdout and "win: scores" in done.stdout
    wrong = run_script("play.py", "--players", "human", "win:2", "optimal", "--seed", "4", "--delay", "0", input="")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines() == ["play.py: error: agent 'win:2' acts at a table of 2 players, not 3"]


# --------------------------------------------------------------------------------------------------
# The family's sheets at the table (Yahtzee, Yatzy): names, bonus rows, jokers, whole games
# --------------------------------------------------------------------------------------------------
YAHTZEE = R.get_rules("yahtzee")
FAMILY = [name for name in R.PRESETS if name not in R.YACHT_PRESETS]


@pytest.mark.parametrize(
    ("preset", "text", "box"),
    [
        ("yahtzee", "chance", "chance"),
        ("yahtzee", "choice", "chance"),
        ("yahtzee", "3k", "three_of_a_kind"),
        ("yahtzee", "three of a kind", "three_of_a_kind"),
        ("yahtzee", "4k", "four_of_a_kind"),
        ("yahtzee", "fh", "full_house"),
        ("yahtzee", "ss", "small_straight"),
        ("yahtzee", "small straight", "small_straight"),
        ("yahtzee", "ls", "large_straight"),
        ("yahtzee", "large straight", "large_straight"),
        ("yahtzee", "yahtzee", "yahtzee"),
        ("yahtzee", "yacht", "yahtzee"),
        ("yahtzee", "9", "full_house"),
        ("yahtzee", "13", "chance"),
        ("yatzy", "1p", "one_pair"),
        ("yatzy", "one pair", "one_pair"),
        ("yatzy", "pair", "one_pair"),
        ("yatzy", "one", "ones"),
        ("yatzy", "2p", "two_pairs"),
        ("yatzy", "two pairs", "two_pairs"),
        ("yatzy", "3k", "three_of_a_kind"),
        ("yatzy", "ss", "small_straight"),
        ("yatzy", "ls", "large_straight"),
        ("yatzy", "yatzy", "yatzy"),
        ("yatzy", "yahtzee", "yatzy"),
        ("yatzy", "15", "yatzy"),
        ("standard", "yahtzee", "yacht"),  # Yacht's sheet keeps its names
        ("standard", "yatzy", "yacht"),
        ("standard", "ls", "little_straight"),
        ("standard", "ss", "little_straight"),
        ("standard", "chance", "choice"),
    ],
)
def test_category_names_on_every_sheet(preset, text, box):
    rules = R.get_rules(preset)
    assert parse_command(f"s {text}", rules.categories) == Command("score", category=rules.categories.index(box))


@pytest.mark.parametrize("preset", list(R.PRESETS))
def test_every_name_of_every_box_names_it_on_its_sheet(preset):
    """No two boxes of one sheet share a name: every box's rules name, display name and aliases name it alone."""
    categories = R.get_rules(preset).categories
    for k, name in enumerate(categories):
        for text in (name, display_name(name), *ALIASES.get(name, ())):
            assert parse_command(f"s {text}", categories).category == k, (preset, text)


@pytest.mark.parametrize(
    ("preset", "text", "message"),
    [
        ("yahtzee", "s t", "'t' could be Twos, Threes or Three of a Kind: type more of the name"),
        ("yatzy", "s o", "'o' could be Ones or One Pair: type more of the name"),
        ("yahtzee", "s 14", "there is no category 14: the sheet numbers them 1..13"),
        ("yatzy", "s 16", "there is no category 16: the sheet numbers them 1..15"),
    ],
)
def test_bad_category_names_on_the_family_sheets(preset, text, message):
    with pytest.raises(CommandError) as error:
        parse_command(text, R.get_rules(preset).categories)
    assert str(error.value) == message


SIXES = R.roll_index([6] * 5)
#: Yahtzee (50) and Sixes filled: an extra six of a kind is a joker (and earns the Yahtzee bonus).
JOKER_OPEN = YAHTZEE.all_open & ~(1 << 11) & ~(1 << 5)


def test_the_forced_joker_refuses_a_pick_with_the_reason():
    forced = R.get_rules("yahtzee_forced_joker")
    sheet = np.array([-1] * 5 + [30] + [-1] * 5 + [50, -1], dtype=np.int16)
    with pytest.raises(CommandError) as error:
        resolve(Command("score", category=0), SIXES, 2, JOKER_OPEN, sheet, forced)
    assert str(error.value) == (
        "the joker rules out Ones: an extra five of a kind goes in its face's upper box if open, else in an open box "
        "outside the upper section (here: Three of a Kind, Four of a Kind, Full House, Small Straight, Large Straight "
        "or Chance)"
    )
    assert resolve(Command("score", category=8), SIXES, 2, JOKER_OPEN, sheet, forced) == R.PICK_OFFSET + 8
    assert resolve(Command("score", category=0), SIXES, 2, JOKER_OPEN, sheet, YAHTZEE) == R.PICK_OFFSET  # free joker
    open_sixes = JOKER_OPEN | 1 << 5
    with pytest.raises(CommandError, match=r"^the joker rules out Full House: .* \(here: Sixes\)$"):
        resolve(Command("score", category=8), SIXES, 2, open_sixes, sheet, forced)


def test_picks_in_words_name_the_joker_and_the_bonuses():
    assert describe(R.PICK_OFFSET + 8, SIXES, YAHTZEE) == "score Full House for 0"  # the dice alone
    assert (
        describe(R.PICK_OFFSET + 8, SIXES, YAHTZEE, JOKER_OPEN, 30, 1) == "score Full House for 25 + 100 Yahtzee bonus"
    )
    assert describe(R.PICK_OFFSET + 5, SIXES, YAHTZEE, YAHTZEE.all_open & ~(1 << 11), 40, 1) == (
        "score Sixes for 30 + 35 upper bonus + 100 Yahtzee bonus"
    )
    assert describe(R.PICK_OFFSET + 11, SIXES, YAHTZEE, YAHTZEE.all_open, 0, 0) == "score Yahtzee for 50"
    assert describe(R.PICK_OFFSET + 11, SIXES, STANDARD, STANDARD.all_open) == "score Yacht for 50"
    assert (
        pick_words(5, SIXES, R.get_rules("yatzy"), R.get_rules("yatzy").all_open, 40) == "Sixes for 30 + 50 upper bonus"
    )


def test_help_names_the_sheets_own_boxes_and_bonuses():
    assert help_text(STANDARD) == HELP and "yacht/yahtzee" in HELP
    text = help_text(YAHTZEE).splitlines()
    assert (
        text[5]
        == "                 a common name (fh, 3k, 4k, ss/small straight, ls/large straight, yahtzee, chance, 1s..6s)"
    )
    assert text[-3:] == [
        "Upper Bonus: 35 once Ones..Sixes total 63; the sheet shows the subtotal (45/63), then the bonus (35 or 0).",
        "Yahtzee Bonus: 100 for each extra five of a kind once Yahtzee holds 50; the sheet shows the points so far.",
        "Joker: five of a kind scores Full House and the straights in full once Yahtzee and its upper box are filled.",
    ]
    assert help_text(R.get_rules("yatzy")).splitlines()[-1].startswith("Upper Bonus: 50 once Ones..Sixes total 63")
    assert help_text(R.get_rules("yahtzee_forced_joker")).splitlines()[-2].startswith("Joker: once Yahtzee is filled,")


def env_replay(rules: R.Rules, stream: np.ndarray, actions: list[int]) -> dict:
    """The env's info after playing ``actions`` on ``stream``: the table's game must end the same."""
    env = YachtEnv(rules=rules)
    _, info = env.reset(options={"dice_stream": stream})
    for action in actions:
        _, _, _, _, info = env.step(action)
        assert not info["illegal_action"]
    return info


def first_legal_pick(game: TableGame) -> str:
    """``s <number>`` of the first box the player on turn may take (the forced joker: where it must go)."""
    player = game.table.on_turn
    legal = R.legal_picks(game.rules, player.roll, player.open_mask)
    return f"s {(legal & -legal).bit_length()}"


@pytest.mark.parametrize("preset", FAMILY)
def test_every_family_preset_plays_a_whole_game_with_people_and_agents(preset):
    """A person (the first legal box each turn) and the random agent: both games end as the env plays them."""
    rules = R.get_rules(preset)
    game, transcript = new_game(["human", "random"], [first_legal_pick] * rules.num_turns, seed=6, rules=preset)
    totals = game.play()
    streams = game_streams(6, range(2), rules)
    for seat in (0, 1):
        info = env_replay(rules, streams[seat], [d.action for d in game.decisions if d.seat == seat])
        assert totals[seat] == info["total"]
        np.testing.assert_array_equal(game.table.players[seat].sheet, info["scores"])
    lines = transcript.out.getvalue().splitlines()
    sheet = lines[lines.index("== final scores ==") :]
    labels = ["Upper Bonus", "Yahtzee Bonus"][: 1 + bool(rules.yahtzee_bonus)]
    assert [line.split()[:2] for line in sheet[2 + rules.num_categories : -2]] == [label.split() for label in labels]
    assert sheet[-2].split() == ["Total", *map(str, totals)]
    assert sheet[-1] == final_line(["You", "random"], totals)


def yahtzee_game(preset: str, lines: list[str]):
    """A table of one person on a given stream: Yahtzee, three more fives of a kind, the upper bonus, two jokers."""
    first_rolls = [6] * 5, [6] * 5, [5] * 5, [4, 4, 4, 4, 1], [6] * 5, [5] * 5, [1, 2, 3, 4, 5], [3, 3, 3, 4, 5]
    first_rolls += [2, 2, 2, 2, 6], [1, 1, 2, 3, 6], [2, 2, 3, 5, 6], [3, 3, 3, 5, 6], [6, 6, 5, 5, 4]
    stream = np.ones(R.get_rules(preset).stream_shape, dtype=np.int64)
    stream[:, 0] = first_rolls
    game, transcript = new_game(["human"], lines, rules=preset)
    game.table.start(parse_dice_stream({"dice_stream": stream[None]}, game.rules, leading=(1,)))
    return game, transcript, stream


YAHTZEE_PICKS = "s yahtzee|s 6s|s fives|s 4s|s fh|s ls|s ss|s 3k|s 4k|s 1|s 2|s 3|s c".split("|")


def test_a_yahtzee_game_shows_its_bonuses_and_jokers():
    game, transcript, stream = yahtzee_game("yahtzee", YAHTZEE_PICKS)
    assert game.play() == [724]
    info = env_replay(YAHTZEE, stream, [d.action for d in game.decisions])
    assert (info["total"], info["upper"], info["armed"]) == (724, 63, True)
    out = transcript.out.getvalue().splitlines()
    moves = [line for line in out if line.startswith("You: ")]
    assert moves[:6] == [
        "You: score Yahtzee for 50 (total 50)",
        "You: score Sixes for 30 + 100 Yahtzee bonus (total 180)",
        "You: score Fives for 25 + 100 Yahtzee bonus (total 305)",
        "You: score Fours for 16 + 35 upper bonus (total 356)",
        "You: score Full House for 25 + 100 Yahtzee bonus (total 481)",
        "You: score Large Straight for 40 + 100 Yahtzee bonus (total 621)",
    ]
    at = out.index("== round 6 of 13: You to play, 2 re-rolls left ==")
    assert out[at + 1 : at + 19] == [
        " # category          You",
        " 1 Ones              (0)",
        " 2 Twos              (0)",
        " 3 Threes            (0)",
        " 4 Fours              16",
        " 5 Fives              25",
        " 6 Sixes              30",
        " 7 Three of a Kind  (25)",
        " 8 Four of a Kind   (25)",
        " 9 Full House         25",
        "10 Small Straight   (30)",  # five fives, Fives filled: a joker
        "11 Large Straight   (40)",
        "12 Yahtzee            50",
        "13 Chance           (25)",
        "   Upper Bonus        35",
        "   Yahtzee Bonus     300",
        "   Total             481",
        "dice      5  5  5  5  5",
    ]
    assert out[out.index("== round 4 of 13: You to play, 2 re-rolls left ==") + 15] == "   Upper Bonus     55/63"
    assert out[-4:] == [
        "   Upper Bonus        35",
        "   Yahtzee Bonus     400",
        "   Total             724",
        "final score: You 724",
    ]


def test_the_forced_joker_at_the_table():
    """Five sixes with Sixes and Yahtzee filled: the open upper boxes show no score-now, a pick there is one line."""
    lines = [*YAHTZEE_PICKS[:4], "s 1", "s fh", *YAHTZEE_PICKS[5:]]
    game, transcript, stream = yahtzee_game("yahtzee_forced_joker", lines)
    assert game.play() == [724]
    assert env_replay(R.get_rules("yahtzee_forced_joker"), stream, [d.action for d in game.decisions])["total"] == 724
    out = transcript.out.getvalue().splitlines()
    at = out.index("== round 5 of 13: You to play, 2 re-rolls left ==")
    assert out[at + 2 : at + 5] == [" 1 Ones                -", " 2 Twos                -", " 3 Threes              -"]
    assert out[at + 8] == " 7 Three of a Kind  (30)"
    at = out.index("You> s 1")
    assert out[at + 1] == (
        "? the joker rules out Ones: an extra five of a kind goes in its face's upper box if open, else in an open box "
        "outside the upper section (here: Three of a Kind, Four of a Kind, Full House, Small Straight, Large Straight "
        "or Chance)"
    )
    assert out[at + 2 : at + 4] == ["You> s fh", "You: score Full House for 25 + 100 Yahtzee bonus (total 481)"]


def test_script_plays_yatzy():
    """``play.py --rules yatzy``: the intro names the game, the sheet its bonus row, the total is the env's."""
    stream = game_streams(5, range(1), "yatzy")[0]
    rules = R.get_rules("yatzy")
    done = run_script(
        "play.py",
        "--rules", "yatzy", "--players", "human", "--seed", "5", "--delay", "0",
        input="".join(f"s {k}\n" for k in range(1, 16)),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == "Yatzy, yatzy rules, dice seed 5: You. Type help for the commands."
    first_rolls_in_sheet_order = [R.PICK_OFFSET + turn for turn in range(rules.num_turns)]
    total = env_replay(rules, stream, first_rolls_in_sheet_order)["total"]
    assert lines[-1] == f"final score: You {total}"
    assert lines[-2].split() == ["Total", str(total)] and lines[-3].split()[:2] == ["Upper", "Bonus"]


@pytest.mark.parametrize(("spec", "message"), [("ppo:standard", "cannot use PPO model 'standard': it was trained on ")])
def test_an_agent_that_cannot_play_the_rules_is_one_line(spec, message, capsys):
    """A Yacht model at a Yahtzee table: one line, exit status 2, no traceback."""
    pytest.importorskip("sb3_contrib")
    code = play.main(["--rules", "yahtzee", "--players", "human", spec, "--delay", "0"])
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, "")
    assert captured.err.startswith(f"play.py: error: {message}")
    assert captured.err.count("\n") == 1


#: A small preset with both bonuses and the free joker, so that the coach's solve takes a moment.
TINY = R.Rules(
    "tiny_yahtzee",
    categories=(*R.UPPER_CATEGORIES, "yahtzee"),
    upper_bonus=35,
    upper_bonus_threshold=20,
    yahtzee_bonus=100,
    joker="free",
)


def test_the_coach_values_the_family_sheet(monkeypatch, tmp_path):
    """A person typing the coach's best move where bonuses count: the coach's values are the solver's at the sheet's
    upper subtotal and Yahtzee box, nothing is given away, and the game ends as the optimal policy's own game."""
    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    solution = solve(TINY, cache=False)

    def coach_move(game):
        player = game.table.on_turn
        state = (player.roll, player.rolls_left, player.open_mask)
        q = solution.q_values(*state, upper=player.upper, armed=player.armed)
        advice = game.coach.advise(*state, player.total, player.upper, player.armed)
        np.testing.assert_array_equal(advice.q, q)
        assert advice.expected_final == player.total + q.max()
        return command_for(int(np.argmax(q)), player.roll)

    game, transcript = new_game(["human"], [coach_move] * 21, seed=1, hints=True, rules=TINY)
    totals = game.play()
    assert game.given_away() == [0.0]
    own = GameState(TINY)
    own.start(R.prefix_codes(game_streams(1, range(1), TINY)[0].reshape(-1, R.NUM_DICE)))
    while own.open_mask:
        own.play(int(np.argmax(solution.q_values(own.roll, own.rolls_left, own.open_mask, own.upper, own.armed))))
    assert totals == [own.total]
    out = transcript.out.getvalue()
    assert out.count("coach: best move (0.00 given away)") == len(game.decisions)
    assert totals == [92] and out.splitlines()[-7:-4] == [
        "  Upper Bonus      35",
        "  Yahtzee Bonus     0",
        "  Total            92",
    ]


def test_the_docs_yahtzee_sheet_is_real_output():
    page = (REPO / "docs" / "play.md").read_text()
    section = page[page.index("## Yahtzee and Yatzy") :]
    shown = section.split("```text\n")[1].split("```")[0].splitlines()
    assert (
        "printf 's ls\\ns 1\\nq\\n' | python play.py --rules yahtzee --players human random --seed 3 --delay 0"
        in section
    )
    done = run_script(
        "play.py",
        "--rules",
        "yahtzee",
        "--players",
        "human",
        "random",
        "--seed",
        "3",
        "--delay",
        "0",
        input="s ls\ns 1\nq\n",
    )
    lines = done.stdout.splitlines()
    at = lines.index(shown[0])
    assert lines[at : at + len(shown)] == shown and len(shown) == 19


# VmHWM, not ru_maxrss: the latter keeps the peak of the process before exec (a fork of pytest's).
_PEAK_OF_PLAY = (
    "import runpy, sys\n"
    "sys.argv = sys.argv[1:]\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "finally:\n"
    "    status = open('/proc/self/status').read()\n"
    "    print('peak', status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="the peak memory is read from Linux's /proc")
def test_a_line_too_long_for_a_command_is_read_in_bounded_pieces_and_echoed_cut(tmp_path):
    """A 64 MiB line (once read whole and echoed whole: a 600 MB one peaked at 1.86 GB) is one refusal, and the game
    goes on; neither the output nor the memory grows with it."""

    def play(stdin: str) -> tuple[list[str], int]:
        (tmp_path / "stdin").write_text(stdin)
        args = ["play.py", "--players", "human", "--seed", "1", "--delay", "0"]
        with open(tmp_path / "stdin") as lines:
            done = subprocess.run(
                [sys.executable, "-c", _PEAK_OF_PLAY, *args], cwd=REPO, stdin=lines, capture_output=True, text=True
            )
        assert done.returncode == 0 and done.stderr.startswith("peak "), done.stderr
        assert len(done.stdout) < 20_000
        return done.stdout.splitlines(), int(done.stderr.split()[1]) * 1024

    _, baseline = play("quit\n")
    long_line = "k" + " 1" * (32 * 2**20)
    out, peak = play(f"{'x' * (MAX_LINE + 1)}\n{'s 1'.ljust(MAX_LINE)}\r\n{long_line}\nquit\n")
    refusal = f"? a command is at most {MAX_LINE} characters: this line is longer"
    assert out.count(refusal) == 2 and out[-1] == "bye"
    assert out[out.index("You> " + "x" * 40 + "...") + 1] == refusal
    assert out[out.index("You> k" + " 1" * 19 + " ...") + 1] == refusal
    at = next(i for i, line in enumerate(out) if line.startswith("You> s 1"))
    assert len(out[at]) == len("You> ") + MAX_LINE and not out[at + 1].startswith("? ")  # the longest line: read
    assert peak - baseline < 16 * 2**20
