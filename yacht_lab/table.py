"""Yacht at a table in the terminal: people and agents on one :class:`~yacht_env.game.TableState`, the solver as coach.

``play.py`` is a thin shell over this module. Every preset plays here, the family's too (Yahtzee, Yatzy): the sheet
shows their bonus rows (:func:`yacht_env.render.bonus_rows`) and what a joker would score, a pick names the bonus it
earns, and a pick the forced joker rules out is refused with the reason. The pieces, each importable on its own:

* :class:`Coach` values every decision with the exact solver (:meth:`~yacht_env.solver.Solution.q_values`):
  the best move, its expected final score, and what a chosen move gave away (best q - chosen q).
* :class:`TableGame` plays one game: it steps a one-table ``TableState`` (no second copy of the rules), asks the
  people through a ``read(prompt)`` function and the agents through ``agent.act(observation, mask)`` with the
  observation each asks for (``table_players``), and writes everything to a screen.
* :func:`default_names` names the seats.

What a person types is read by :mod:`yacht_lab.commands` (:func:`~yacht_lab.commands.parse_command`,
:func:`~yacht_lab.commands.resolve`), and the table is shown by :mod:`yacht_lab.screen`
(:class:`~yacht_lab.screen.PlainScreen`, :class:`~yacht_lab.screen.RichScreen`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from yacht_agents import parse_spec
from yacht_agents.base import check_agents
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, game_streams, parse_dice_stream
from yacht_env.render import bonus_rows, score_now
from yacht_env.solver import Solution, solve
from yacht_lab.commands import (
    CommandError,
    describe,
    dice_text,
    display_name,
    help_text,
    kept_dice,
    parse_command,
    pick_words,
    resolve,
)
from yacht_lab.screen import PlainScreen, SheetView

MAX_SEATS = 5
HUMAN = "human"


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
        open_mask, upper, armed: The state's sheet (the family's ``upper`` and ``armed``: 0 for Yacht), so that a
            pick is put in words with what it earns there (:func:`~yacht_lab.commands.describe`).
    """

    q: np.ndarray
    best: int
    total: int
    open_mask: int | None = None
    upper: int = 0
    armed: int = 0

    def describe(self, action: int, roll: int, rules: R.Rules) -> str:
        """``action`` in words in this decision's state."""
        return describe(action, roll, rules, self.open_mask, self.upper, self.armed)

    @property
    def expected_final(self) -> float:
        """The expected final total from here under the solver's play."""
        return self.total + float(self.q[self.best])

    def cost(self, action: int) -> float:
        """Expected points ``action`` gives away: best q - chosen q (0 for a best move)."""
        gap = float(self.q[self.best] - self.q[action])
        return gap if gap > 1e-9 else 0.0


@dataclass(frozen=True)
class Decision:
    """One decision of a game, valued by the coach (``best`` is ``None`` and ``cost`` 0.0 at a table without hints,
    where no coach is asked); ``open_mask``, ``upper`` and ``armed`` are the player's sheet before it.
    """

    seat: int
    turn: int
    roll: int
    rolls_left: int
    action: int
    best: int | None
    cost: float
    open_mask: int = 0
    upper: int = 0
    armed: int = 0

    def describe(self, action: int, rules: R.Rules) -> str:
        """``action`` in words in this decision's state."""
        return describe(action, self.roll, rules, self.open_mask, self.upper, self.armed)


class Coach:
    """The exact solver as a coach: advice before a decision, its cost after; at a table of two or more, also
    each move's chance of finishing first (:meth:`win_chances`).

    At two players the chances are exact where the two-player solve of the rules is on disk (:mod:`yacht_env.duel`:
    the chance to win if both players play perfectly after the move); elsewhere they are the win agent's estimate
    (everyone plays the solver's policy after the move), where that agent plays the rules (it refuses the ones its
    model does not cover; the coach then gives no odds). :attr:`odds_source` says which.
    """

    def __init__(self, rules: R.Rules, solution: Solution | None = None, players: int = 1, cache_dir=None) -> None:
        self.rules = rules
        self.solution = solution or solve(rules)
        self.win = None
        self.exact = None
        self.odds_source = None
        if players == 2 and not rules.has_bonuses:
            from yacht_env import duel

            try:
                self.exact = duel.solve(rules, cache_dir=cache_dir, build_missing=False)
                self.odds_source = "exact"
            except ValueError:  # not built: the win agent's estimate below
                self.exact = None
        if players >= 2 and self.exact is None:
            from yacht_agents.win import WinAgent

            try:
                self.win = WinAgent(rules, players, name="coach")
                self.odds_source = "estimate"
            except ValueError:  # rules the win agent's model does not cover
                self.win = None

    def win_chances(self, roll: int, rolls_left: int, open_mask: int, total: int, opponent_open, opponent_total):
        """Per action ``(num_actions,)``: the chance of finishing first (ties split) if it is taken: exact against
        perfect play, or the win agent's model (everyone plays the solver's policy after); ``None`` for a lone
        player. Opponents are listed in seat order after the player, each at a turn start (as they are during the
        player's turn).
        """
        if self.exact is not None:  # one opponent: a number, or a list of one (as a table lists its opponents)
            other_open, other_total = (int(np.asarray(x).reshape(-1)[0]) for x in (opponent_open, opponent_total))
            return self.exact.q_values(open_mask, other_open, total - other_total, roll, rolls_left)
        if self.win is None:
            return None
        chances = self.win.win_probabilities(roll, rolls_left, open_mask, total, [opponent_open], [opponent_total])
        return chances[0]

    def odds(self, chances, advice: Advice, roll: int) -> str:
        """``odds: win chance 48.2% with the coach's move; to win: keep 6 6 (51.0%)`` before a decision."""
        label = " (exact, against perfect play)" if self.odds_source == "exact" else ""
        line = f"odds{label}: win chance {chances[advice.best]:.1%} with the coach's move"
        best = int(np.argmax(chances))
        if chances[best] > chances[advice.best] + 1e-12:
            line += f"; to win: {advice.describe(best, roll, self.rules)} ({chances[best]:.1%})"
        return line

    def advise(
        self, roll: int, rolls_left: int, open_mask: int, total: int = 0, upper: int = 0, armed: int = 0
    ) -> Advice:
        """The solver's action values in a state (the family's with its ``upper`` and ``armed``)."""
        if self.rules.has_bonuses:
            q = self.solution.q_values(roll, rolls_left, open_mask, upper=upper, armed=armed)
        else:
            q = self.solution.q_values(roll, rolls_left, open_mask)
        return Advice(q, int(np.argmax(q)), int(total), int(open_mask), int(upper), int(armed))

    def hint(self, advice: Advice, roll: int) -> str:
        """``coach: keep 4 4 (+2.31 over re-rolling all); expected final score 160.12``."""
        best = advice.best
        words = advice.describe(best, roll, self.rules)
        if 0 < best < R.PICK_OFFSET:
            words += f" ({advice.q[best] - advice.q[0]:+.2f} over re-rolling all)"
        return f"coach: {words}; expected final score {advice.expected_final:.2f}"

    def verdict(self, advice: Advice, action: int, roll: int) -> str:
        """After a move: ``coach: best move (0.00 given away)`` or what it gave away and the best move."""
        cost = advice.cost(action)
        if cost == 0.0:
            return "coach: best move (0.00 given away)"
        return (
            f"coach: that gave away {cost:.2f} expected points (best: {advice.describe(advice.best, roll, self.rules)})"
        )


# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# The game
# --------------------------------------------------------------------------------------------------
class Quit(Exception):  # noqa: N818 - a signal, not an error
    """The person left the game (``quit`` or end of input)."""


def default_names(specs: Sequence[str]) -> list[str]:
    """``You`` for a lone human (``Human 1``, ``Human 2``, ... for several), the spec for an agent (a PPO
    model: ``ppo:<file stem>``); repeated names get `` 2``, `` 3``.

    Raises:
        ValueError: a spec that is neither ``human`` nor an agent's (:func:`yacht_agents.parse_spec`).
    """
    humans = sum(spec == HUMAN for spec in specs)
    names, seen, h = [], {}, 0
    for spec in specs:
        if spec == HUMAN:
            h += 1
            name = "You" if humans == 1 else f"Human {h}"
        else:
            kind, argument = parse_spec(spec)
            name = spec
            if kind == "ppo":
                name = "ppo:" + re.sub(r"\.zip$", "", argument.replace("\\", "/").rstrip("/").split("/")[-1])
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
        screen: Where the table is shown (:class:`~yacht_lab.screen.PlainScreen`,
            :class:`~yacht_lab.screen.RichScreen`).
        read: ``read(prompt) -> line``; raises ``EOFError`` at the end of input.
        hints: Coach the people before and after each decision; review the game at the end. Without hints the
            solver is not consulted at all (a preset's first solve can take a while).
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
        self.coach = Coach(self.rules, players=p) if self.hints else None
        self._chances = None  # the win chances of the person's current decision (hints at a table)
        self.solo = ObservationEncoder(self.rules)
        self.view = MultiplayerEncoder(self.rules, p)

    # -- showing ------------------------------------------------------------------------------------
    def sheet_view(self, decision: bool) -> SheetView:
        """What the score sheet shows now (``decision``: the player is choosing a move)."""
        table, rules, n = self.table, self.rules, self.rules.num_categories
        seat = table.current if decision else None
        cells = [["-"] * len(self.names) for _ in range(n)]
        potential = [[False] * len(self.names) for _ in range(n)]
        bonuses: list[tuple[str, list[str]]] = []
        for p, game in enumerate(table.players):
            now = score_now(rules, game.roll, game.open_mask, game.upper, game.armed) if p == seat else None
            for k in range(n):
                if game.sheet[k] >= 0:
                    cells[k][p] = str(int(game.sheet[k]))
                elif now is not None and now[k] >= 0:  # an open box the dice may go in (the forced joker: not all)
                    cells[k][p] = f"({now[k]})"
                    potential[k][p] = True
            for j, (label, value) in enumerate(bonus_rows(rules, game.sheet, game.total, game.upper)):
                if p == 0:
                    bonuses.append((display_name(label.replace(" ", "_")), []))
                bonuses[j][1].append(value)
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
            bonus_rows=bonuses,
        )

    # -- playing ------------------------------------------------------------------------------------
    def play(self) -> list[int]:
        """Plays the game to its end; returns the totals. Raises :class:`Quit` if a person leaves."""
        over = False
        while not over:
            seat, game = self.table.current, self.table.on_turn
            advice = None
            if self.coach is not None:
                advice = self.coach.advise(
                    game.roll, game.rolls_left, game.open_mask, game.total, game.upper, game.armed
                )
            agent = self.agents[seat]
            if agent is None:
                action = self._human(seat, advice)
            else:
                action = self._agent(seat, agent)
            best, cost = (None, 0.0) if advice is None else (advice.best, advice.cost(action))
            decision = Decision(
                seat, game.turn, game.roll, game.rolls_left, action, best, cost, game.open_mask, game.upper, game.armed
            )
            _, over = self.table.play(action)
            self.decisions.append(decision)
            self._show_move(decision, agent, advice)
        self._finish()
        return [int(t) for t in self.table.totals()]

    def _human(self, seat: int, advice: Advice | None) -> int:
        game = self.table.on_turn
        self.screen.sheet(self.sheet_view(decision=True))
        self._chances = None
        if advice is not None:
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
                    self.screen.say(help_text(self.rules))
                    continue
                if command.kind == "quit":
                    raise Quit
                action = resolve(command, game.roll, game.rolls_left, game.open_mask, game.sheet, self.rules)
            except CommandError as error:
                self.screen.say(f"? {error}", "error")
                continue
            if not self.table.mask[action]:  # cannot happen: resolve follows the env's legality
                raise RuntimeError(
                    f"{R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories, game.open_mask)}"
                )
            return action

    def _agent(self, seat: int, agent) -> int:
        table, game = self.table, self.table.on_turn
        if getattr(agent, "table_players", None) is None:
            observation = self.solo.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        else:
            observation = self.view.observe(table, seat)
        action = int(agent.act(observation, table.mask.copy()))  # a copy: the game's own mask stays the game's
        if not 0 <= action < self.rules.num_actions or not table.mask[action]:
            raise RuntimeError(f"agent {agent.name!r} chose illegal action {action}")
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
                    f"{d.describe(d.action, self.rules)}; solver: {d.describe(d.best, self.rules)}; "
                    f"cost {d.cost:.2f}"
                )
        return "\n".join(lines)

    def _count(self, seat: int) -> int:
        return sum(1 for d in self.decisions if d.seat == seat)
