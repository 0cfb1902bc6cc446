"""Yacht at a table in the terminal: people and agents on one :class:`~yacht_env.game.TableState`, the solver as coach.

``play.py`` is a thin shell over this module. The pieces, each importable on its own:

* :func:`parse_command` reads what a person types (``keep 4 4 6``, ``k 245``, ``roll``, ``s fh``, ``help``,
  ``quit``) into a :class:`Command`; :func:`resolve` turns a command into the env's action for the dice showing
  (a keep by faces or by positions becomes the canonical keep-mask of that multiset, the env's legality).
  Both raise :class:`CommandError` with a one-line explanation.
* :class:`Coach` values every decision with the exact solver (:meth:`~yacht_env.solver.Solution.q_values`):
  the best move, its expected final score, and what a chosen move gave away (best q - chosen q).
* :class:`TableGame` plays one game: it steps a one-table ``TableState`` (no second copy of the rules), asks the
  people through a ``read(prompt)`` function and the agents through ``agent.act(observation, mask)`` with the
  observation each asks for (``table_players``), and writes everything to a :class:`Screen`.
* :class:`PlainScreen` writes plain text (piped output, ``NO_COLOR``, no ``rich``); :class:`RichScreen` the same
  with colour and a boxed sheet.

The sheet numbers the categories 1..12 as shown (``s 7`` is Full House on Yacht's sheet).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from yacht_agents.base import check_agents
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, game_streams, parse_dice_stream
from yacht_env.solver import Solution, solve

MAX_SEATS = 5
HUMAN = "human"

# --------------------------------------------------------------------------------------------------
# Category names
# --------------------------------------------------------------------------------------------------
#: Extra names a person may type for each category (besides its display name and its rules name).
ALIASES: dict[str, tuple[str, ...]] = {
    "ones": ("1s", "aces", "one"),
    "twos": ("2s", "two"),
    "threes": ("3s", "three"),
    "fours": ("4s", "four"),
    "fives": ("5s", "five"),
    "sixes": ("6s", "six"),
    "full_house": ("fh", "full"),
    "four_of_a_kind": ("4k", "4oak", "4 of a kind", "quads"),
    "little_straight": ("ls", "ss", "small straight", "sm straight"),
    "big_straight": ("bs", "large straight", "lg straight"),
    "choice": ("chance",),
    "yacht": ("yahtzee",),
    "three_of_a_kind": ("3k", "3oak", "3 of a kind"),
}
_SMALL_WORDS = {"of", "a"}


def display_name(category: str) -> str:
    """``"four_of_a_kind"`` -> ``"Four of a Kind"``."""
    words = category.split("_")
    return " ".join(w if i and w in _SMALL_WORDS else w.capitalize() for i, w in enumerate(words))


def _key(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def match_category(text: str, categories: Sequence[str] = R.CATEGORIES) -> int:
    """The index of the category ``text`` names: its number in the sheet (1-based), its name, a common name
    (``fh``, ``4k``, ``ls``, ``small straight``, ``yahtzee``, ``chance``, ``1s``, ...) or an unambiguous prefix.

    Raises:
        CommandError: no such category, or a prefix of several (named in the message).
    """
    text = text.strip()
    if not text:
        raise CommandError("score which category? e.g. s fh, s 7, score full house")
    if text.isdigit():
        number = int(text)
        if 1 <= number <= len(categories):
            return number - 1
        raise CommandError(f"there is no category {number}: the sheet numbers them 1..{len(categories)}")
    key = _key(text)
    names = [
        {_key(name), _key(display_name(name)), *(_key(alias) for alias in ALIASES.get(name, ()))} for name in categories
    ]
    exact = [k for k, keys in enumerate(names) if key in keys]
    if len(exact) == 1:
        return exact[0]
    found = [k for k, keys in enumerate(names) if any(n.startswith(key) for n in keys)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CommandError(f"unknown category {text!r}: type its number in the sheet or its name (help lists them)")
    listed = [display_name(categories[k]) for k in found]
    raise CommandError(f"{text!r} could be {', '.join(listed[:-1])} or {listed[-1]}: type more of the name")


# --------------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------------
class CommandError(ValueError):
    """A command that cannot be played; the message is one line that says why."""


@dataclass(frozen=True)
class Command:
    """What a person typed: ``kind`` is ``"keep"``, ``"score"``, ``"help"`` or ``"quit"``.

    A keep has ``faces`` (the values to keep) or ``positions`` (1..5 under the sorted dice); ``roll`` is a keep
    of nothing. A score has ``category`` (its index).
    """

    kind: str
    faces: tuple[int, ...] | None = None
    positions: tuple[int, ...] | None = None
    category: int | None = None


HELP = """\
commands:
  keep 4 4 6     keep the dice showing these faces, re-roll the others (also: k 4 4 6)
  k 245          keep the dice at these positions (1..5, the numbers under the dice, written together)
  roll           re-roll all five dice (also: r)
  score fh       score the dice in a category: its number in the sheet (s 7), its name (score full house),
                 a common name (fh, 4k, ls/small straight, bs/large straight, yacht/yahtzee, chance, 1s..6s)
                 or the start of its name (s ful); also: s
  help           this text (also: h, ?)
  quit           leave the game (also: q; Ctrl-D too)
the sheet: filled scores; (n) beside an open category of the player on turn is what the dice would score there
now; - is an open category. Keeping all five dice is not a move: score instead."""

_KEEP_WORDS = ("keep", "k", "hold")
_ROLL_WORDS = ("roll", "r", "reroll", "re-roll")
_SCORE_WORDS = ("score", "s")
_HELP_WORDS = ("help", "h", "?")
_QUIT_WORDS = ("quit", "q", "exit")


def parse_command(text: str, categories: Sequence[str] = R.CATEGORIES) -> Command:
    """Reads one line typed by a person (see :data:`HELP`); case and extra spaces do not matter.

    Faces are separated (``keep 4 4 6``, commas allowed); positions are written together (``k 245``), so one
    digit is a face (``k 6`` keeps one 6).

    Raises:
        CommandError: the line is not a command, or its arguments cannot be read.
    """
    words = text.strip().lower().replace(",", " ").split()
    if not words:
        raise CommandError("type a command (help lists them)")
    head, rest = words[0], words[1:]
    if head in _HELP_WORDS and not rest:
        return Command("help")
    if head in _QUIT_WORDS and not rest:
        return Command("quit")
    if head in _ROLL_WORDS:
        if rest:
            raise CommandError(f"{head} re-rolls all five dice and takes nothing more; to keep some: keep 4 4 6")
        return Command("keep", faces=())
    if head in _SCORE_WORDS:
        return Command("score", category=match_category(" ".join(rest), categories))
    if head in _KEEP_WORDS:
        return _parse_keep(head, rest)
    raise CommandError(f"unknown command {text.strip()!r}: type help for the commands")


def _parse_keep(head: str, rest: list[str]) -> Command:
    if not rest:
        raise CommandError("keep which dice? e.g. keep 4 4 6 (faces) or k 245 (positions); roll re-rolls all five")
    if len(rest) == 1 and len(rest[0]) > 1 and rest[0].isdigit():
        positions = tuple(int(c) for c in rest[0])
        if any(not 1 <= p <= R.NUM_DICE for p in positions) or len(set(positions)) != len(positions):
            spaced = " ".join(rest[0])
            raise CommandError(
                f"{head} {rest[0]}: positions are 1..5, each once (to keep by faces, separate them: {head} {spaced})"
            )
        return Command("keep", positions=tuple(sorted(positions)))
    if not all(w.isdigit() for w in rest):
        raise CommandError(f"{head} takes faces (keep 4 4 6) or positions (k 245), got {' '.join(rest)!r}")
    faces = tuple(int(w) for w in rest)
    bad = [f for f in faces if not 1 <= f <= R.NUM_FACES]
    if bad:
        raise CommandError(f"{bad[0]} is not a face of a die (1..6)")
    if len(faces) > R.NUM_DICE:
        raise CommandError(f"there are only five dice; got {len(faces)} faces to keep")
    return Command("keep", faces=tuple(sorted(faces)))


def dice_text(dice: Sequence[int]) -> str:
    return " ".join(str(int(d)) for d in dice)


def _count_words(n: int) -> str:
    return {1: "one", 2: "two", 3: "three", 4: "four"}.get(n, str(n))


def resolve(command: Command, roll: int, rolls_left: int, open_mask: int, sheet: Sequence[int], rules: R.Rules) -> int:
    """The env's action for a keep or score ``command`` in a state (the canonical keep-mask of a keep).

    Raises:
        CommandError: no re-rolls left for a keep, dice that are not showing, keeping all five, a filled category.
    """
    dice = R.ROLLS[roll]
    if command.kind == "score":
        k = command.category
        if not open_mask >> k & 1:
            raise CommandError(
                f"{display_name(rules.categories[k])} is already filled ({int(sheet[k])}): choose an open category"
            )
        return R.PICK_OFFSET + k
    if command.kind != "keep":
        raise ValueError(f"not a move: {command!r}")
    if rolls_left == 0:
        raise CommandError("no re-rolls left this turn: score the dice (s <category>)")
    if command.positions is not None:
        mask = sum(1 << (p - 1) for p in command.positions)
    else:
        mask, used = 0, set()
        for face in command.faces:
            free = [i for i in range(R.NUM_DICE) if dice[i] == face and i not in used]
            if not free:
                have = int((dice == face).sum())
                what = f"no {face}" if have == 0 else f"only {_count_words(have)} {face}{'s' if have > 1 else ''}"
                raise CommandError(f"you have {what} to keep (the dice: {dice_text(dice)})")
            used.add(free[0])
            mask |= 1 << free[0]
    if mask == R.KEEP_ALL:
        raise CommandError("keeping all five dice re-rolls nothing: score instead (s <category>)")
    return int(np.flatnonzero(R.KEEP[roll] == R.KEEP[roll, mask])[0])  # the canonical mask of that multiset


def kept_dice(roll: int, action: int) -> np.ndarray:
    """The faces keep-mask ``action`` keeps of sorted roll ``roll``."""
    return R.ROLLS[roll][R.KEEP_BITS[action]]


def describe(action: int, roll: int, rules: R.Rules) -> str:
    """An action in words: ``keep 4 4``, ``re-roll all five``, ``score Yacht for 50``."""
    if action >= R.PICK_OFFSET:
        k = action - R.PICK_OFFSET
        points = int(R.score_table(rules)[roll, k])
        return f"score {display_name(rules.categories[k])} for {points}"
    if action == 0:
        return "re-roll all five"
    return f"keep {dice_text(kept_dice(roll, action))}"


def command_for(action: int, roll: int) -> str:
    """A command that plays ``action`` in sorted roll ``roll``: ``r``, ``k 245`` (positions), ``k 6`` (one die,
    by its face) or ``s 7``; :func:`resolve` maps it back to ``action`` when ``action`` is canonical."""
    if action >= R.PICK_OFFSET:
        return f"s {action - R.PICK_OFFSET + 1}"
    if action == 0:
        return "r"
    positions = [i + 1 for i in range(R.NUM_DICE) if action >> i & 1]
    if len(positions) == 1:
        return f"k {int(R.ROLLS[roll][positions[0] - 1])}"
    return "k " + "".join(map(str, positions))


# --------------------------------------------------------------------------------------------------
# The coach
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Advice:
    """The solver's view of one decision.

    Attributes:
        q: ``(num_actions,)`` expected points from this decision to the end of the game per action (-inf illegal).
        best: The best action (ties: the smallest index, as the optimal agent).
        total: The player's points so far; ``total + q[a]`` is the expected final score after action ``a``.
    """

    q: np.ndarray
    best: int
    total: int

    @property
    def expected_final(self) -> float:
        return self.total + float(self.q[self.best])

    def cost(self, action: int) -> float:
        """Expected points ``action`` gives away: best q - chosen q (0 for a best move)."""
        gap = float(self.q[self.best] - self.q[action])
        return gap if gap > 1e-9 else 0.0


@dataclass(frozen=True)
class Decision:
    """One decision of a game, valued by the coach."""

    seat: int
    turn: int
    roll: int
    rolls_left: int
    action: int
    best: int
    cost: float


class Coach:
    """The exact solver as a coach: advice before a decision, its cost after; at a table of two or more, also
    the win-aware agent's chance of finishing first after each move (:meth:`win_chances`)."""

    def __init__(self, rules: R.Rules, solution: Solution | None = None, players: int = 1) -> None:
        self.rules = rules
        self.solution = solution or solve(rules)
        self.win = None
        if players >= 2:
            from yacht_agents.win import WinAgent

            self.win = WinAgent(rules, players, name="coach")

    def win_chances(self, roll: int, rolls_left: int, open_mask: int, total: int, opponent_open, opponent_total):
        """Per action ``(44,)``: the chance of finishing first (ties split) if it is taken and everyone plays the
        solver's policy after (the win agent's model); ``None`` for a lone player. Opponents are listed in seat
        order after the player, each at a turn start (as they are during the player's turn)."""
        if self.win is None:
            return None
        chances = self.win.win_probabilities(roll, rolls_left, open_mask, total, [opponent_open], [opponent_total])
        return chances[0]

    def odds(self, chances, advice: Advice, roll: int) -> str:
        """``odds: win chance 48.2% with the coach's move; to win: keep 6 6 (51.0%)`` before a decision."""
        line = f"odds: win chance {chances[advice.best]:.1%} with the coach's move"
        best = int(np.argmax(chances))
        if chances[best] > chances[advice.best] + 1e-12:
            line += f"; to win: {describe(best, roll, self.rules)} ({chances[best]:.1%})"
        return line

    def advise(self, roll: int, rolls_left: int, open_mask: int, total: int = 0) -> Advice:
        q = self.solution.q_values(roll, rolls_left, open_mask)
        return Advice(q, int(np.argmax(q)), int(total))

    def hint(self, advice: Advice, roll: int) -> str:
        """``coach: keep 4 4 (+2.31 over re-rolling all); expected final score 160.12``."""
        best = advice.best
        words = describe(best, roll, self.rules)
        if 0 < best < R.PICK_OFFSET:
            words += f" ({advice.q[best] - advice.q[0]:+.2f} over re-rolling all)"
        return f"coach: {words}; expected final score {advice.expected_final:.2f}"

    def verdict(self, advice: Advice, action: int, roll: int) -> str:
        """After a move: ``coach: best move (0.00 given away)`` or what it gave away and the best move."""
        cost = advice.cost(action)
        if cost == 0.0:
            return "coach: best move (0.00 given away)"
        return f"coach: that gave away {cost:.2f} expected points (best: {describe(advice.best, roll, self.rules)})"


# --------------------------------------------------------------------------------------------------
# Screens
# --------------------------------------------------------------------------------------------------
@dataclass
class SheetView:
    """What the table shows: the rows of the score sheet and, for a decision, the dice."""

    names: list[str]
    categories: list[str]
    cells: list[list[str]]  # per category, per player
    potential: list[list[bool]]  # the cell is what the dice would score now
    totals: list[int]
    on_turn: int | None
    title: str
    dice: tuple[int, ...] | None = None


class PlainScreen:
    """Plain text on a stream: what ``play.py`` writes when piped, with ``NO_COLOR`` or without ``rich``."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def say(self, text: str, style: str | None = None) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def sheet(self, view: SheetView) -> None:
        rows = [["#", "category", *view.names]]
        for k, name in enumerate(view.categories):
            rows.append([str(k + 1), name, *view.cells[k]])
        rows.append(["", "Total", *map(str, view.totals)])
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
        lines = [f"== {view.title} =="]
        for row in rows:
            cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])]
            cells += [cell.rjust(max(widths[c], 5)) for c, cell in enumerate(row[2:], start=2)]
            lines.append(" ".join(cells).rstrip())
        if view.dice is not None:
            lines.append("dice      " + "  ".join(map(str, view.dice)))
            lines.append("position  " + "  ".join(str(i + 1) for i in range(len(view.dice))))
        self.say("\n".join(lines))


class RichScreen(PlainScreen):
    """The same with colour and a boxed sheet through ``rich`` (a terminal that supports it)."""

    STYLES = {"error": "bold red", "coach": "green", "agent": "yellow", "human": "cyan", "result": "bold"}

    def __init__(self, console) -> None:
        self.console = console

    def say(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        self.console.print(Text(text, style=self.STYLES.get(style, "") if style else ""))

    def sheet(self, view: SheetView) -> None:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        self.console.print(Text(view.title, style="bold"))
        table = Table(box=box.SIMPLE_HEAVY)
        table.add_column("#", justify="right", style="dim")
        table.add_column("category")
        for p, name in enumerate(view.names):
            table.add_column(name, justify="right", style="bold cyan" if p == view.on_turn else "")
        for k, name in enumerate(view.categories):
            cells = [
                Text(cell, style="dim italic" if view.potential[k][p] else "") for p, cell in enumerate(view.cells[k])
            ]
            table.add_row(str(k + 1), name, *cells)
        table.add_row("", Text("Total", style="bold"), *(Text(str(t), style="bold") for t in view.totals))
        self.console.print(table)
        if view.dice is not None:
            dice = Text("dice      ")
            for d in view.dice:
                dice.append(f" {d} ", style="bold black on white")
                dice.append(" ")
            self.console.print(dice)
            self.console.print(Text("position  " + "".join(f" {i + 1}  " for i in range(len(view.dice))), style="dim"))


# --------------------------------------------------------------------------------------------------
# The game
# --------------------------------------------------------------------------------------------------
class Quit(Exception):  # noqa: N818 - a signal, not an error
    """The person left the game (``quit`` or end of input)."""


def default_names(specs: Sequence[str]) -> list[str]:
    """``You`` for a lone human (``Human 1``, ``Human 2``, ... for several), the spec for an agent (a PPO
    model: ``ppo:<file stem>``); repeated names get `` 2``, `` 3``."""
    humans = sum(spec == HUMAN for spec in specs)
    names, seen, h = [], {}, 0
    for spec in specs:
        if spec == HUMAN:
            h += 1
            name = "You" if humans == 1 else f"Human {h}"
        elif spec.startswith("ppo:"):
            stem = re.sub(r"\.zip$", "", spec[4:].replace("\\", "/").rstrip("/").split("/")[-1])
            name = f"ppo:{stem}"
        else:
            name = spec
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name} {seen[name]}")
    return names


@dataclass
class TableGame:
    """One game at one table: ``agents[p]`` is ``None`` for a person at seat ``p``, else an agent.

    Args:
        agents: One entry per seat (1..5): ``None`` (a person) or an agent with ``act`` and ``table_players``.
        names: One name per seat.
        rules: The rules preset.
        seed: The dice: seat ``p`` rolls ``game_streams(seed, range(P))[p]``.
        screen: Where the table is shown (:class:`PlainScreen`, :class:`RichScreen`).
        read: ``read(prompt) -> line``; raises ``EOFError`` at the end of input.
        hints: Coach the people before and after each decision; review the game at the end.
        delay: Seconds to wait after each shown agent move.
        sleep: The wait (``time.sleep``; tests pass a recorder).
    """

    agents: list
    names: list[str]
    rules: R.Rules
    seed: int
    screen: PlainScreen
    read: Callable[[str], str]
    hints: bool = False
    delay: float = 0.0
    sleep: Callable[[float], None] = time.sleep
    decisions: list[Decision] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rules = R.get_rules(self.rules)
        p = len(self.agents)
        if not 1 <= p <= MAX_SEATS:
            raise ValueError(f"a table seats 1..{MAX_SEATS} players, got {p}")
        if len(self.names) != p:
            raise ValueError(f"one name per seat: {p} seats, {len(self.names)} names")
        # Two seats may hold the same agent spec (each has its own name at the table).
        check_agents([agent for agent in self.agents if agent is not None], self.rules, p, distinct_names=False)
        self.table = TableState(self.rules, p)
        streams = game_streams(self.seed, range(p), self.rules)
        self.table.start(parse_dice_stream({"dice_stream": streams}, self.rules, leading=(p,)))
        self.coach = Coach(self.rules, players=p if self.hints else 1)
        self._chances = None  # the win chances of the person's current decision (hints at a table)
        self.solo = ObservationEncoder(self.rules)
        self.view = MultiplayerEncoder(self.rules, p)
        self._score = R.score_table(self.rules)

    # -- showing ------------------------------------------------------------------------------------
    def sheet_view(self, decision: bool) -> SheetView:
        table, n = self.table, self.rules.num_categories
        seat = table.current if decision else None
        cells = [["-"] * len(self.names) for _ in range(n)]
        potential = [[False] * len(self.names) for _ in range(n)]
        for p, game in enumerate(table.players):
            for k in range(n):
                if game.sheet[k] >= 0:
                    cells[k][p] = str(int(game.sheet[k]))
                elif p == seat:
                    cells[k][p] = f"({int(self._score[game.roll, k])})"
                    potential[k][p] = True
        if decision:
            game = table.on_turn
            left = f"{game.rolls_left} re-roll{'s' if game.rolls_left != 1 else ''} left"
            title = f"round {game.turn + 1} of {self.rules.num_turns}: {self.names[seat]} to play, {left}"
            dice = tuple(int(d) for d in R.ROLLS[game.roll])
        else:
            title, dice = "final scores", None
        return SheetView(
            names=list(self.names),
            categories=[display_name(c) for c in self.rules.categories],
            cells=cells,
            potential=potential,
            totals=[int(t) for t in table.totals()],
            on_turn=seat,
            title=title,
            dice=dice,
        )

    # -- playing ------------------------------------------------------------------------------------
    def play(self) -> list[int]:
        """Plays the game to its end; returns the totals. Raises :class:`Quit` if a person leaves."""
        over = False
        while not over:
            seat = self.table.current
            game = self.table.on_turn
            roll, rolls_left, open_mask, total = game.roll, game.rolls_left, game.open_mask, game.total
            advice = self.coach.advise(roll, rolls_left, open_mask, total)
            agent = self.agents[seat]
            if agent is None:
                action = self._human(seat, advice)
            else:
                action = self._agent(seat, agent)
            turn = game.turn
            points, over = self.table.play(action)
            self.decisions.append(Decision(seat, turn, roll, rolls_left, action, advice.best, advice.cost(action)))
            self._show_move(seat, agent, roll, action, points, advice)
        self._finish()
        return [int(t) for t in self.table.totals()]

    def _human(self, seat: int, advice: Advice) -> int:
        game = self.table.on_turn
        self.screen.sheet(self.sheet_view(decision=True))
        self._chances = None
        if self.hints:
            self.screen.say(self.coach.hint(advice, game.roll), "coach")
            others = [(seat + j) % len(self.agents) for j in range(1, len(self.agents))]
            self._chances = self.coach.win_chances(
                game.roll,
                game.rolls_left,
                game.open_mask,
                game.total,
                [self.table.players[o].open_mask for o in others],
                [self.table.players[o].total for o in others],
            )
            if self._chances is not None:
                self.screen.say(self.coach.odds(self._chances, advice, game.roll), "coach")
        while True:
            line = self.read(f"{self.names[seat]}> ")
            try:
                command = parse_command(line, self.rules.categories)
                if command.kind == "help":
                    self.screen.say(HELP)
                    continue
                if command.kind == "quit":
                    raise Quit
                action = resolve(command, game.roll, game.rolls_left, game.open_mask, game.sheet, self.rules)
            except CommandError as error:
                self.screen.say(f"? {error}", "error")
                continue
            if not self.table.mask[action]:  # cannot happen: resolve follows the env's legality
                raise RuntimeError(f"{R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories)}")
            return action

    def _agent(self, seat: int, agent) -> int:
        table, game = self.table, self.table.on_turn
        if getattr(agent, "table_players", None) is None:
            observation = self.solo.flat(game.roll, game.rolls_left, game.open_mask)
        else:
            observation = self.view.observe(table, seat)
        action = int(agent.act(observation, table.mask))
        if not 0 <= action < self.rules.num_actions or not table.mask[action]:
            raise RuntimeError(f"agent {agent.name!r} chose illegal action {action}")
        if game.rolls_left == R.MAX_ROLLS_LEFT:  # its first decision of the turn: show the roll
            self.screen.say(
                f"{self.names[seat]}: round {game.turn + 1}, rolls {dice_text(R.ROLLS[game.roll])}", "agent"
            )
        return action

    def _show_move(self, seat: int, agent, roll: int, action: int, points: int, advice: Advice) -> None:
        name, game, person = self.names[seat], self.table.players[seat], agent is None
        if action >= R.PICK_OFFSET:
            category = display_name(self.rules.categories[action - R.PICK_OFFSET])
            what = f"{'score' if person else 'scores'} {category} for {points} (total {game.total})"
        elif action == 0:
            what = f"{'re-roll' if person else 're-rolls'} all -> {dice_text(R.ROLLS[game.roll])}"
        else:
            positions = " ".join(str(i + 1) for i in range(R.NUM_DICE) if action >> i & 1)
            kept = dice_text(kept_dice(roll, action))
            what = f"{'keep' if person else 'keeps'} {kept} (positions {positions}) -> {dice_text(R.ROLLS[game.roll])}"
        self.screen.say(f"{name}: {what}", "human" if person else "agent")
        if person and self.hints:
            self.screen.say(self.coach.verdict(advice, action, roll), "coach")
            if self._chances is not None:
                self.screen.say(f"odds: win chance {self._chances[action]:.1%} after that move", "coach")
        if not person and self.delay > 0:
            self.sleep(self.delay)

    def _finish(self) -> None:
        self.screen.sheet(self.sheet_view(decision=False))
        totals = [int(t) for t in self.table.totals()]
        best = max(totals)
        winners = [self.names[p] for p, t in enumerate(totals) if t == best]
        scores = ", ".join(f"{name} {t}" for name, t in zip(self.names, totals, strict=True))
        if len(totals) == 1:
            result = f"final score: {scores}"
        elif len(winners) == 1:
            result = f"final: {scores}; {winners[0]} {'win' if winners[0] == 'You' else 'wins'}"
        else:
            result = f"final: {scores}; {' and '.join(winners)} tie with {best}"
        self.screen.say(result, "result")
        if self.hints:
            self.screen.say(self.review())

    def given_away(self) -> list[float]:
        """Per seat, the expected points its decisions gave away (the sum of their costs)."""
        lost = [0.0] * len(self.names)
        for d in self.decisions:
            lost[d.seat] += d.cost
        return lost

    def costliest(self, count: int = 3) -> list[Decision]:
        """The ``count`` decisions that gave away the most (in the order of play among equal costs)."""
        costly = [d for d in self.decisions if d.cost > 0]
        return sorted(costly, key=lambda d: -d.cost)[:count]

    def review(self) -> str:
        """The end-of-game review: points given away per player, the three costliest decisions."""
        width = max(len(name) for name in self.names)
        lines = ["review: expected points given away (the solver's values)"]
        for p, lost in enumerate(self.given_away()):
            n = sum(1 for d in self.decisions if d.seat == p and d.cost > 0)
            lines.append(f"  {self.names[p].ljust(width)}  {lost:6.2f}  ({n} of {self._count(p)} decisions)")
        worst = self.costliest()
        if not worst:
            lines.append("costliest decisions: none, every decision was a best move")
        else:
            lines.append("costliest decisions:")
            for i, d in enumerate(worst, start=1):
                left = f"{d.rolls_left} re-roll{'s' if d.rolls_left != 1 else ''} left"
                lines.append(
                    f"  {i}. {self.names[d.seat]}, round {d.turn + 1}, dice {dice_text(R.ROLLS[d.roll])} ({left}): "
                    f"{describe(d.action, d.roll, self.rules)}; solver: {describe(d.best, d.roll, self.rules)}; "
                    f"cost {d.cost:.2f}"
                )
        return "\n".join(lines)

    def _count(self, seat: int) -> int:
        return sum(1 for d in self.decisions if d.seat == seat)
