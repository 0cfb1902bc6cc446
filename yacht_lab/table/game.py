"""A game of people and agents at one table, as data: what the terminal (:mod:`yacht_lab.table.terminal`) and the
browser (:mod:`yacht_lab.table.web.games`) show and serialise, written once.

:class:`GameAtTable` owns the game: the seats (a person or an agent each, at most :data:`MAX_SEATS`), the one-table
:class:`~yacht_env.game.TableState` dealt from the seed's dice streams (the rules' one transition), the observation
each agent asks for, the legality of every move, the :class:`Decision` record of the game, the score sheet as data
(:class:`Sheet`) and the result. The faces only ask people for their moves and print or serialise what it holds;
the coach (:mod:`yacht_lab.table.coach`) values the decisions.

Seat ``p`` of a game of seed ``s`` rolls ``game_streams(s, range(P))[p]``, and a seat's agent is seeded with
:func:`seat_seed` (``SeedSequence([s, p])``), so a seeded game replays identically at either face.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from yacht_agents import parse_spec
from yacht_agents.base import check_agents
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, game_streams, parse_dice_stream
from yacht_env.render import bonus_rows, score_now
from yacht_lab.table.commands import describe, display_name

#: The most seats at a table, at both faces.
MAX_SEATS = 6
#: The spec of a person's seat.
HUMAN = "human"


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


def seat_seed(seed: int, seat: int) -> int:
    """The seed of the agent at ``seat`` in a game of ``seed`` (``SeedSequence([seed, seat])``'s first word)."""
    return int(np.random.SeedSequence([seed, seat]).generate_state(1)[0])


@dataclass(frozen=True)
class Decision:
    """One decision of a game, valued by the coach (``best`` is ``None`` and ``cost`` 0.0 where no coach was
    asked); ``open_mask``, ``upper`` and ``armed`` are the player's sheet before it.
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


@dataclass(frozen=True)
class SheetRow:
    """One box of the score sheet.

    Attributes:
        box: The box's index (its category).
        label: Its name as the sheet shows it (``Full House``).
        cells: Per seat, the points scored there; ``None`` while open.
        now: What the dice showing would score there for the player on turn (an open box of that player's);
            ``None`` elsewhere.
        blocked: An open box of the player on turn that the forced joker's placement rules out.
    """

    box: int
    label: str
    cells: list[int | None]
    now: int | None
    blocked: bool


@dataclass(frozen=True)
class Sheet:
    """The score sheet: its :class:`SheetRow` per box, the bonus rows (``(label, per seat's text)``; none for
    Yacht's presets), the totals, and the seat on turn (``None`` once the game is over or when not shown).
    """

    rows: list[SheetRow]
    bonus_rows: list[tuple[str, list[str]]]
    totals: list[int]
    on_turn: int | None


@functools.lru_cache(maxsize=64)
def encoders(rules: R.Rules, players: int) -> tuple[ObservationEncoder, MultiplayerEncoder]:
    """The observation encoders of a table (read-only, some 0.9 MB of tables: shared by its games)."""
    return ObservationEncoder(rules), MultiplayerEncoder(rules, players)


class GameAtTable:
    """One game at one table: ``agents[p]`` is ``None`` for a person at seat ``p``, else an agent.

    Args:
        agents: One entry per seat (1..:data:`MAX_SEATS`): ``None`` (a person) or an agent with ``act`` and
            ``table_players`` (two seats may hold one agent object: agents keep no state of a game).
        names: One name per seat.
        rules: The rules played (a preset's name or :class:`~yacht_env.rules.Rules`).
        seed: The dice: seat ``p`` rolls ``game_streams(seed, range(P))[p]``.

    Raises:
        ValueError: no seat or too many, a name missing, an agent of other rules or of another table size.
    """

    def __init__(self, agents: Sequence, names: Sequence[str], rules: str | R.Rules, seed: int) -> None:
        self.rules = R.get_rules(rules)
        p = len(agents)
        if not 1 <= p <= MAX_SEATS:
            raise ValueError(f"a table seats 1..{MAX_SEATS} players, got {p}")
        if len(names) != p:
            raise ValueError(f"one name per seat: {p} seats, {len(names)} names")
        # Two seats may hold the same agent spec (each has its own name at the table).
        check_agents([agent for agent in agents if agent is not None], self.rules, p, distinct_names=False)
        self.agents, self.names, self.seed = list(agents), list(names), seed
        self.table = TableState(self.rules, p)
        streams = game_streams(seed, range(p), self.rules)
        self.table.start(parse_dice_stream({"dice_stream": streams}, self.rules, leading=(p,)))
        self.solo, self.view = encoders(self.rules, p)
        self.decisions: list[Decision] = []
        self.over = False

    # -- playing --------------------------------------------------------------------------------------
    @property
    def person_on_turn(self) -> bool:
        """A person's decision is next (the game is not over)."""
        return not self.over and self.agents[self.table.current] is None

    def observation(self, seat: int) -> np.ndarray:
        """What the agent at ``seat`` (on turn) sees: its own game's observation, or the table's view for an agent
        that plays at a table (``table_players``).
        """
        agent, game = self.agents[seat], self.table.players[seat]
        if getattr(agent, "table_players", None) is None:
            return self.solo.flat(game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        return self.view.observe(self.table, seat)

    def agent_action(self) -> int:
        """The action of the agent on turn, checked against the game's own mask (the agent gets a copy).

        Raises:
            RuntimeError: the agent chose an action that is not legal here.
        """
        seat = self.table.current
        agent = self.agents[seat]
        action = int(agent.act(self.observation(seat), self.table.mask.copy()))
        if not 0 <= action < self.rules.num_actions or not self.table.mask[action]:
            raise RuntimeError(f"agent {agent.name!r} chose illegal action {action}")
        return action

    def why_illegal(self, action: int) -> str | None:
        """Why ``action`` (an index in ``0..num_actions-1``) is not legal for the player on turn; ``None`` if it is."""
        if self.table.mask[action]:
            return None
        game = self.table.on_turn
        return R.describe_illegal(action, game.roll, game.rolls_left, self.rules.categories, game.open_mask)

    def play(self, action: int, advice=None) -> Decision:
        """The player on turn takes legal ``action``; returns the :class:`Decision` recorded (valued by the coach's
        ``advice`` of it, :class:`~yacht_lab.table.coach.Advice`, where one was asked).
        """
        seat, game = self.table.current, self.table.on_turn
        best, cost = (None, 0.0) if advice is None else (advice.best, advice.cost(action))
        decision = Decision(
            seat, game.turn, game.roll, game.rolls_left, action, best, cost, game.open_mask, game.upper, game.armed
        )
        _, over = self.table.play(action)
        self.decisions.append(decision)
        self.over = bool(over)
        return decision

    # -- showing --------------------------------------------------------------------------------------
    def sheet(self, show_now: bool = True) -> Sheet:
        """The score sheet; with ``show_now`` (and the game on), what the dice would score in each open box of the
        player on turn.
        """
        table, rules = self.table, self.rules
        seat = None if self.over or not show_now else int(table.current)
        now = None
        if seat is not None:
            game = table.on_turn
            now = score_now(rules, game.roll, game.open_mask, game.upper, game.armed)
        rows = []
        for k, name in enumerate(rules.categories):
            cells = [None if player.sheet[k] < 0 else int(player.sheet[k]) for player in table.players]
            open_here = seat is not None and cells[seat] is None
            points = int(now[k]) if open_here and now[k] >= 0 else None
            rows.append(SheetRow(k, display_name(name), cells, points, open_here and points is None))
        bonuses: list[tuple[str, list[str]]] = []
        for p, player in enumerate(table.players):
            for j, (label, value) in enumerate(bonus_rows(rules, player.sheet, player.total, player.upper)):
                if p == 0:
                    bonuses.append((display_name(label.replace(" ", "_")), []))
                bonuses[j][1].append(value)
        return Sheet(rows, bonuses, self.totals(), seat)

    def totals(self) -> list[int]:
        """Each seat's total."""
        return [int(t) for t in self.table.totals()]

    def winners(self) -> list[int]:
        """The seats with the highest total."""
        totals = self.totals()
        return [p for p, t in enumerate(totals) if t == max(totals)]

    def outcome(self) -> str:
        """Who won, in words: ``optimal wins``, ``You win``, ``Ann and Bob tie with 201``."""
        winners = [self.names[p] for p in self.winners()]
        if len(winners) > 1:
            return f"{' and '.join(winners)} tie with {max(self.totals())}"
        return f"{winners[0]} {'win' if winners[0] == 'You' else 'wins'}"

    def given_away(self) -> list[float]:
        """Per seat, the expected points its valued decisions gave away (the sum of their costs)."""
        lost = [0.0] * len(self.names)
        for d in self.decisions:
            lost[d.seat] += d.cost
        return lost
