"""Yacht at a table in the terminal: people and agents on one game (:class:`~yacht_lab.table.game.GameAtTable`), the
solver as coach.

``play.py`` is a thin shell over this module. Every preset plays here, the family's too (Yahtzee, Yatzy): the sheet
shows their bonus rows (:func:`yacht_env.render.bonus_rows`) and what a joker would score, a pick names the bonus it
earns, and a pick the forced joker rules out is refused with the reason. :class:`TableGame` is the terminal's face
of the game: it asks the people through a ``read(prompt)`` function, lets the game ask the agents, and writes
everything to a screen; the game at the table (seats, dice, observations, legality, decisions, the sheet) is
:mod:`yacht_lab.table.game`'s, the coach (:class:`~yacht_lab.table.coach.Coach`) :mod:`yacht_lab.table.coach`'s, both
shared with the browser (:mod:`yacht_lab.table.web.games`).

What a person types is read by :mod:`yacht_lab.table.commands` (:func:`~yacht_lab.table.commands.parse_command`,
:func:`~yacht_lab.table.commands.resolve`), and the table is shown by :mod:`yacht_lab.table.screen`
(:class:`~yacht_lab.table.screen.PlainScreen`, :class:`~yacht_lab.table.screen.RichScreen`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from yacht_env import rules as R
from yacht_lab.table.coach import Advice, Coach
from yacht_lab.table.commands import CommandError, dice_text, help_text, kept_dice, parse_command, pick_words, resolve
from yacht_lab.table.game import HUMAN, MAX_SEATS, Decision, GameAtTable, default_names
from yacht_lab.table.screen import PlainScreen, SheetView

# The names the terminal's callers import from here (the game's and the coach's own modules hold them).
__all__ = ["HUMAN", "MAX_SEATS", "Advice", "Coach", "Decision", "Quit", "TableGame", "default_names"]


class Quit(Exception):  # noqa: N818 - a signal, not an error
    """The person left the game (``quit`` or end of input)."""


@dataclass
class TableGame:
    """One game at one table in the terminal: ``agents[p]`` is ``None`` for a person at seat ``p``, else an agent.

    Args:
        agents: One entry per seat (1..:data:`~yacht_lab.table.game.MAX_SEATS`): ``None`` (a person) or an agent
            with ``act`` and ``table_players``.
        names: One name per seat.
        rules: The rules preset.
        seed: The dice: seat ``p`` rolls ``game_streams(seed, range(P))[p]``.
        screen: Where the table is shown (:class:`~yacht_lab.table.screen.PlainScreen`,
            :class:`~yacht_lab.table.screen.RichScreen`).
        read: ``read(prompt) -> line``; raises ``EOFError`` at the end of input.
        hints: Coach the people before and after each decision; review the game at the end. Without hints the
            solver is not consulted at all (a preset's first solve can take a while).
        delay: Seconds to wait after each shown agent move.
        sleep: The wait (``time.sleep``; tests pass a recorder).

    Raises:
        ValueError: as :class:`~yacht_lab.table.game.GameAtTable`.
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

    def __post_init__(self) -> None:
        self.game = GameAtTable(self.agents, self.names, self.rules, self.seed)
        self.rules = self.game.rules
        self.coach = Coach(self.rules, players=len(self.agents)) if self.hints else None
        self._chances = None  # the win chances of the person's current decision (hints at a table)

    @property
    def table(self):
        """The game's :class:`~yacht_env.game.TableState`."""
        return self.game.table

    @property
    def decisions(self) -> list[Decision]:
        """The game's decisions so far, in the order of play."""
        return self.game.decisions

    # -- showing ------------------------------------------------------------------------------------
    def sheet_view(self, decision: bool) -> SheetView:
        """What the score sheet shows now (``decision``: the player is choosing a move)."""
        sheet = self.game.sheet(show_now=decision)
        seat = sheet.on_turn
        cells, potential = [], []
        for row in sheet.rows:
            cells.append(["-" if v is None else str(v) for v in row.cells])
            potential.append([p == seat and row.now is not None for p in range(len(self.names))])
            if row.now is not None:
                cells[-1][seat] = f"({row.now})"
        if decision:
            game = self.table.on_turn
            left = f"{game.rolls_left} re-roll{'s' if game.rolls_left != 1 else ''} left"
            title = f"round {game.turn + 1} of {self.rules.num_turns}: {self.names[seat]} to play, {left}"
            dice = tuple(int(d) for d in R.ROLLS[game.roll])
        else:
            title, dice = "final scores", None
        return SheetView(
            names=list(self.names),
            categories=[row.label for row in sheet.rows],
            cells=cells,
            potential=potential,
            totals=sheet.totals,
            on_turn=seat,
            title=title,
            dice=dice,
            bonus_rows=sheet.bonus_rows,
        )

    # -- playing ------------------------------------------------------------------------------------
    def play(self) -> list[int]:
        """Plays the game to its end; returns the totals. Raises :class:`Quit` if a person leaves."""
        while not self.game.over:
            seat = self.table.current
            advice = None if self.coach is None else self.coach.advise_at(self.table)
            agent = self.agents[seat]
            action = self._human(seat, advice) if agent is None else self._agent(seat, agent)
            decision = self.game.play(action, advice)
            self._show_move(decision, agent, advice)
        self._finish()
        return self.game.totals()

    def _human(self, seat: int, advice: Advice | None) -> int:
        game = self.table.on_turn
        self.screen.sheet(self.sheet_view(decision=True))
        self._chances = None
        if advice is not None:
            self.screen.say(self.coach.hint(advice, game.roll), "coach")
            self._chances = self.coach.chances_at(self.table)
            if self._chances is not None:
                self.screen.say(self.coach.odds(self._chances, advice, game.roll), "coach")
        while True:
            line = self.read(f"{self.names[seat]}> ")
            try:
                command = parse_command(line, self.rules.categories)
                if command.kind == "help":
                    self.screen.say(help_text(self.rules))
                    continue
                if command.kind == "quit":
                    raise Quit
                action = resolve(command, game.roll, game.rolls_left, game.open_mask, game.sheet, self.rules)
            except CommandError as error:
                self.screen.say(f"? {error}", "error")
                continue
            why = self.game.why_illegal(action)
            if why is not None:  # cannot happen: resolve follows the env's legality
                raise RuntimeError(why)
            return action

    def _agent(self, seat: int, agent) -> int:
        """``agent``'s action at ``seat`` (on turn), as the game asks for it; shows the roll of its turn."""
        game = self.table.on_turn
        action = self.game.agent_action()
        if game.rolls_left == R.MAX_ROLLS_LEFT:  # its first decision of the turn: show the roll
            self.screen.say(
                f"{self.names[seat]}: round {game.turn + 1}, rolls {dice_text(R.ROLLS[game.roll])}", "agent"
            )
        return action

    def _show_move(self, decision: Decision, agent, advice: Advice | None) -> None:
        seat, roll, action = decision.seat, decision.roll, decision.action
        name, game, person = self.names[seat], self.table.players[seat], agent is None
        if action >= R.PICK_OFFSET:
            words = pick_words(
                action - R.PICK_OFFSET, roll, self.rules, decision.open_mask, decision.upper, decision.armed
            )
            what = f"{'score' if person else 'scores'} {words} (total {game.total})"
        elif action == 0:
            what = f"{'re-roll' if person else 're-rolls'} all -> {dice_text(R.ROLLS[game.roll])}"
        else:
            positions = " ".join(str(i + 1) for i in range(R.NUM_DICE) if action >> i & 1)
            kept = dice_text(kept_dice(roll, action))
            what = f"{'keep' if person else 'keeps'} {kept} (positions {positions}) -> {dice_text(R.ROLLS[game.roll])}"
        self.screen.say(f"{name}: {what}", "human" if person else "agent")
        if person and advice is not None:
            self.screen.say(self.coach.verdict(advice, action, roll), "coach")
            if self._chances is not None:
                self.screen.say(f"odds: win chance {self._chances[action]:.1%} after that move", "coach")
        if not person and self.delay > 0:
            self.sleep(self.delay)

    def _finish(self) -> None:
        self.screen.sheet(self.sheet_view(decision=False))
        scores = ", ".join(f"{name} {t}" for name, t in zip(self.names, self.game.totals(), strict=True))
        result = f"final score: {scores}" if len(self.names) == 1 else f"final: {scores}; {self.game.outcome()}"
        self.screen.say(result, "result")
        if self.hints:
            self.screen.say(self.review())

    def given_away(self) -> list[float]:
        """Per seat, the expected points its decisions gave away (the sum of their costs)."""
        return self.game.given_away()

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
                    f"{d.describe(d.action, self.rules)}; solver: {d.describe(d.best, self.rules)}; "
                    f"cost {d.cost:.2f}"
                )
        return "\n".join(lines)

    def _count(self, seat: int) -> int:
        return sum(1 for d in self.decisions if d.seat == seat)
