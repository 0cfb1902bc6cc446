"""The browser table's games: one :class:`WebGame` per game, held by id in a bounded :class:`GameStore`.

A :class:`WebGame` is the browser's face of a :class:`~yacht_lab.table.game.GameAtTable` (the seats, the dice, the
observations, legality and decisions, the sheet as data: the same game as the terminal's) with the exact solver as
:class:`~yacht_lab.table.coach.Coach`: it reads a visitor's move, lets the agents play, and answers with plain data
(:meth:`WebGame.state`, :meth:`WebGame.coach_view`, :meth:`WebGame.analysis`) that the page only draws. Nothing here
knows HTTP: the app (:mod:`yacht_lab.table.web.app`) turns a :class:`WebError` into its status and message.

Seat ``p`` of a game of seed ``s`` rolls ``game_streams(s, range(P))[p]`` and agent ``p`` is built with the seed
:func:`~yacht_lab.table.game.seat_seed` (as ``yacht-play``), so a seeded game replays identically. An agent that
plays alike at every seat is built once per spec and table and shared by the games (a ``#LABEL`` only names a
copy): a game seats the agent already built for its spec and table while any game holds it, and the last
:data:`MAX_SHARED_AGENTS` built are kept for the games to come (:mod:`yacht_lab.table.web.shared`). The coaches are
shared alike, per rules and table size. The specs are finite (the fileless ones, the shipped models and the server's
``--agent``), and so are the presets and table sizes, so the agents alive are bounded whatever the number of games;
the win agent's big tables (some 84 MB) are one per rules, shared by its table sizes
(:func:`yacht_agents.win.policy_tables`). A seat this install cannot play (:mod:`yacht_lab.table.web.seats`) is
refused before anything is built.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from yacht_agents import make_agent, parse_spec, unlabelled
from yacht_env import rules as R
from yacht_env.game import TableState
from yacht_env.render import game_title
from yacht_lab.table.coach import Coach
from yacht_lab.table.commands import Command, CommandError, describe, dice_text, resolve
from yacht_lab.table.game import HUMAN, MAX_SEATS, GameAtTable, default_names, seat_seed
from yacht_lab.table.web.seats import name_problem, seat_unavailable, shipped_search_models, spec_refusal, visible
from yacht_lab.table.web.shared import SharedObjects
from yacht_lab.table.web.visitors import fairest_victim

MAX_SEED = 2**63 - 1
COACH_MODES = ("off", "request", "always")
#: The store's bounds: games in all, games per visitor, and how long an untouched game is kept.
MAX_GAMES = 1000
MAX_GAMES_PER_VISITOR = 8
#: The games of one client (a peer address, or an IPv6 /64: :func:`~yacht_lab.table.web.visitors.client_of`), however
#: many visitor ids it presents.
MAX_GAMES_PER_CLIENT = 100
IDLE_SECONDS = 3600.0
MAX_NAME = 24
#: The shared agents (one per spec without its label, rules and table size) and coaches (one per rules and table
#: size) kept when no game holds them: the least recently used go first.
MAX_SHARED_AGENTS = 8
MAX_SHARED_COACHES = 16
#: A path in a message (``/...``, ``~/...``, ``C:\...``): the server's folders are not the visitor's business.
PATH_IN_TEXT = re.compile(r"(?<![\w.])(?:~?/|[A-Za-z]:\\)[^\s'\"]*")
#: What the browser says in place of the terminal's commands where a message suggests a move.
SUGGESTIONS = {"score": "click an open box of the sheet"}


class WebError(ValueError):
    """A request that cannot be served: ``status`` (400, 404, 409, 413) and a one-line message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _coach(rules: R.Rules, players: int) -> Coach:
    return Coach(rules, players=players)


def _agent(spec: str, rules: R.Rules, players: int):
    kind, argument = parse_spec(spec)
    shipped = shipped_search_models().get(argument) if kind == "search" else None
    if shipped is None:
        return make_agent(spec, rules, 0, players=players)
    # A shipped model's file, whatever lies at its name in the server's working folder.
    agent = make_agent(f"search:{shipped.path}", rules, 0, players=players)
    agent.name = spec
    return agent


#: The coaches and the deterministic agents the games share.
COACHES = SharedObjects(_coach, MAX_SHARED_COACHES)
AGENTS = SharedObjects(_agent, MAX_SHARED_AGENTS)


def shared_coach(rules: R.Rules, players: int) -> Coach:
    """One coach per rules and table size, shared by the games (its solve and win model load once)."""
    return COACHES.get(rules, players)


def build_agent(spec: str, rules: R.Rules, players: int, seed: int):
    """The agent of ``spec`` for a seat at a table of ``players``: ``random`` seeded per seat, the deterministic
    ones shared between games and seats (one per spec without its ``#LABEL``: a label only names a copy, and the
    table names its seats itself).

    Raises:
        ValueError: an agent that cannot play these rules at this table.
    """
    if parse_spec(spec)[0] == "random":
        return make_agent(spec, rules, seed, players=players)
    return AGENTS.get(unlabelled(spec), rules, players)


@dataclass
class Move:
    """One move shown in the game's log."""

    seat: int
    turn: int
    dice: list[int]
    action: int
    text: str
    person: bool

    def to_dict(self, names: list[str]) -> dict:
        """The move as the page shows it."""
        return {
            "seat": self.seat,
            "name": names[self.seat],
            "turn": self.turn,
            "dice": self.dice,
            "action": self.action,
            "text": self.text,
            "person": self.person,
        }


@dataclass
class WebGame:
    """One game at one table, in the browser.

    Args:
        rules: The rules played.
        seats: ``"human"`` or an agent spec per seat (1..:data:`~yacht_lab.table.game.MAX_SEATS`).
        seed: The dice seed.
        coach: ``"off"`` (only the analysis after the game), ``"request"`` (the coach's numbers when asked) or
            ``"always"`` (with every state of a person's decision).
        names: The seats' names (default: :func:`~yacht_lab.table.game.default_names`).
    """

    rules: R.Rules
    seats: list[str]
    seed: int
    coach: str = "request"
    names: list[str] | None = None
    id: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    step: int = 0
    moves: list[Move] = field(default_factory=list)

    def __post_init__(self) -> None:
        p = len(self.seats)
        self.names = list(self.names) if self.names else default_names(self.seats)
        agents = [
            None if spec == HUMAN else build_agent(spec, self.rules, p, seat_seed(self.seed, s))
            for s, spec in enumerate(self.seats)
        ]
        self.game = GameAtTable(agents, self.names, self.rules, self.seed)
        self.solver_coach = shared_coach(self.rules, p)
        self.lock = threading.Lock()
        self.play_agents()

    @property
    def table(self) -> TableState:
        """The game's :class:`~yacht_env.game.TableState`."""
        return self.game.table

    @property
    def decisions(self):
        """The game's :class:`~yacht_lab.table.game.Decision` records, in the order of play."""
        return self.game.decisions

    @property
    def over(self) -> bool:
        """The game has ended."""
        return self.game.over

    # -- playing --------------------------------------------------------------------------------------
    def act(self, step, move: dict) -> None:
        """A person's move at decision ``step``: ``{"keep": [positions 0..4]}``, ``{"score": k}`` or
        ``{"action": a}``; then the agents play up to the next person's decision or the end.

        Raises:
            WebError: a stale step or a finished game (409), a move that is not legal here (400).
        """
        if self.over:
            raise WebError("the game is over: start a new one", 409)
        if type(step) is not int or step != self.step:
            raise WebError(f"stale move: the game is at step {self.step}, the move was for step {step!r}", 409)
        action = self._action(move)
        self._play(action, person=True)
        self.play_agents()

    def _action(self, move: dict) -> int:
        game, rules = self.table.on_turn, self.rules
        if not isinstance(move, dict) or len(move) != 1:
            raise WebError('a move is one of {"keep": [positions]}, {"score": box} or {"action": index}')
        ((kind, value),) = move.items()
        try:
            if kind == "keep":
                return self._keep(value)
            if kind == "score":
                if type(value) is not int or not 0 <= value < rules.num_categories:
                    raise WebError(f"score: a box number 0..{rules.num_categories - 1}")
                command = Command("score", category=value)
                return resolve(command, game.roll, game.rolls_left, game.open_mask, game.sheet, rules)
            if kind == "action":
                if type(value) is not int or not 0 <= value < rules.num_actions:
                    raise WebError(f"action: an index 0..{rules.num_actions - 1}")
                why = self.game.why_illegal(value)
                if why is not None:
                    raise WebError(why)
                return value
        except CommandError as error:  # in the browser's words: no terminal command in them
            suggest = "" if error.suggest is None else f" ({SUGGESTIONS[error.suggest]})"
            raise WebError(error.reason + suggest) from None
        raise WebError(f'unknown move {kind!r}: expected "keep", "score" or "action"')

    def _keep(self, value) -> int:
        game = self.table.on_turn
        if not isinstance(value, list) or not all(type(v) is int and 0 <= v < R.NUM_DICE for v in value):
            raise WebError("keep: a list of dice positions 0..4")
        if len(set(value)) != len(value):
            raise WebError("keep: each position once")
        if not value and game.rolls_left > 0:  # keep nothing: re-roll all
            return 0
        command = Command("keep", positions=tuple(v + 1 for v in value))
        return resolve(command, game.roll, game.rolls_left, game.open_mask, game.sheet, self.rules)

    def play_agents(self) -> None:
        """The agents on turn play until a person's decision or the end of the game."""
        while not self.over and not self.game.person_on_turn:
            self._play(self.game.agent_action(), person=False)

    def _play(self, action: int, person: bool) -> None:
        # The analysis after the game values every decision of a person.
        advice = self.solver_coach.advise_at(self.table) if person else None
        decision = self.game.play(action, advice)
        game = self.table.players[decision.seat]
        words = decision.describe(action, self.rules)
        if action < R.PICK_OFFSET:
            words += f" → {dice_text(R.ROLLS[game.roll])}"
        else:
            words += f" (total {game.total})"
        dice = [int(d) for d in R.ROLLS[decision.roll]]
        self.moves.append(Move(decision.seat, decision.turn, dice, action, words, person))
        self.step += 1

    # -- showing --------------------------------------------------------------------------------------
    def state(self) -> dict:
        """Everything the page draws: the sheet, the dice, whose turn, the log; the coach's numbers in ``"always"``
        mode; the result and the analysis once the game is over.
        """
        table, rules = self.table, self.rules
        sheet = self.game.sheet()
        out = {
            "id": self.id,
            "step": self.step,
            "rules": rules.name,
            "title": game_title(rules),
            "seed": self.seed,
            "seats": self.seats,
            "names": self.names,
            "people": [agent is None for agent in self.game.agents],
            "coach_mode": self.coach,
            "turns": rules.num_turns,
            "sheet": [
                {"box": row.box, "label": row.label, "cells": row.cells, "now": row.now, "blocked": row.blocked}
                for row in sheet.rows
            ],
            "bonus_rows": [{"label": label, "cells": cells} for label, cells in sheet.bonus_rows],
            "totals": sheet.totals,
            "moves": [move.to_dict(self.names) for move in self.moves],
            "over": self.over,
            "current": sheet.on_turn,
        }
        if not self.over:
            game = table.on_turn
            out |= {
                "turn": int(game.turn),
                "dice": [int(d) for d in R.ROLLS[game.roll]],
                "rolls_left": int(game.rolls_left),
            }
            if self.coach == "always":
                out["coach"] = self.coach_view()
        else:
            out["result"] = self.result()
            out["analysis"] = self.analysis()
        return out

    def coach_view(self) -> dict:
        """The coach's numbers for the decision on turn: every legal option with its expected final score and its
        loss against the best (the solver's values); at a table, each option's chance to finish first (``odds``:
        ``"exact"`` two-player values, or the win agent's ``"estimate"``; ``None`` where there are none).

        Raises:
            WebError: the game is over (409), or the coach is off in this game (400).
        """
        if self.over:
            raise WebError("the game is over: the analysis has the coach's view of every decision", 409)
        if self.coach == "off":
            raise WebError("the coach is off in this game (start one with the coach on request or always)")
        return coach_options(self.solver_coach, self.table, self.rules)

    def result(self) -> dict:
        """The final totals, the winners, and who won in words (``"outcome"``: ``You win``; ``None`` alone)."""
        outcome = self.game.outcome() if len(self.seats) > 1 else None
        return {"totals": self.game.totals(), "winners": self.game.winners(), "outcome": outcome}

    def analysis(self) -> dict:
        """The review after the game, per person: each decision's choice and the solver's best, the points given
        away, the mean loss per decision, the count of best moves.
        """
        seats, given_away = [], self.game.given_away()
        for seat, agent in enumerate(self.game.agents):
            if agent is not None:
                continue
            rows = [
                {
                    "turn": d.turn,
                    "dice": [int(x) for x in R.ROLLS[d.roll]],
                    "rolls_left": d.rolls_left,
                    "choice": d.describe(d.action, self.rules),
                    "best": d.describe(d.best, self.rules),
                    "loss": d.cost,
                }
                for d in self.decisions
                if d.seat == seat
            ]
            seats.append(
                {
                    "seat": seat,
                    "name": self.names[seat],
                    "decisions": rows,
                    "given_away": given_away[seat],
                    "mean_loss": given_away[seat] / len(rows) if rows else 0.0,
                    "best_moves": sum(row["loss"] == 0.0 for row in rows),
                }
            )
        return {"seats": seats}


def coach_options(coach: Coach, table: TableState, rules: R.Rules) -> dict:
    """The coach's view of the decision on turn at ``table`` (see :meth:`WebGame.coach_view`): ``best`` is the option
    of the highest expected final score, ``best_to_win`` (at a table) the one of the highest win chance.
    """
    game = table.on_turn
    advice = coach.advise_at(table)
    chances = coach.chances_at(table)
    best_q = float(advice.q[advice.best])
    options = []
    for a in np.flatnonzero(table.mask).tolist():
        option = {
            "action": a,
            "words": describe(a, game.roll, rules, game.open_mask, game.upper, game.armed),
            "expected_final": advice.total + float(advice.q[a]),
            "loss": advice.cost(a),
            "best": a == advice.best,
        }
        if a < R.PICK_OFFSET:
            option["keep"] = [bool(a >> i & 1) for i in range(R.NUM_DICE)]
        else:
            option["box"] = a - R.PICK_OFFSET
        if chances is not None:
            option["win_chance"] = float(chances[a])
        options.append(option)
    options.sort(key=lambda o: (-o["expected_final"], o["action"]))
    to_win = None
    if chances is not None:  # the option with the best chance to finish first (ties: the coach's order)
        to_win = max(options, key=lambda o: o["win_chance"])["action"]
    return {
        "step_total": advice.total,
        "expected_final": advice.total + best_q,
        "best": advice.best,
        "best_to_win": to_win,
        "odds": coach.odds_source if chances is not None else None,
        "options": options,
    }


# --------------------------------------------------------------------------------------------------
# Checking a new game's request
# --------------------------------------------------------------------------------------------------
def new_game(body, allowed_agents: tuple[str, ...] = ()) -> WebGame:
    """A game from a request's JSON: ``rules`` (a preset), ``seats`` (``"human"`` or agent specs), optional
    ``seed`` (0..2**63-1; default a fresh one), ``coach`` (:data:`COACH_MODES`) and ``names``.

    Agents are the specs without a file (``random``, ``greedy``, ``optimal``, ``win``, ``win:P``, ``duel``,
    ``duel:optimal``), the shipped models (``ppo:NAME``, ``search:NAME``) and those in ``allowed_agents`` (the
    server's ``--agent``): a visitor cannot make the server read a file of its choosing.

    Raises:
        WebError: any field that is missing, of the wrong type or refused (400).
    """
    if not isinstance(body, dict):
        raise WebError("a new game is a JSON object: {rules, seats, seed, coach, names}")
    unknown = set(body) - {"rules", "seats", "seed", "coach", "names"}
    if unknown:
        raise WebError(f"unknown field {sorted(unknown)[0]!r}; a new game takes rules, seats, seed, coach, names")
    rules_name = body.get("rules", "standard")
    if not isinstance(rules_name, str) or rules_name not in R.PRESETS:
        raise WebError(f"unknown preset {_shown(rules_name)}; expected one of {', '.join(sorted(R.PRESETS))}")
    rules = R.get_rules(rules_name)
    seats = body.get("seats", [HUMAN])
    if not isinstance(seats, list) or not 1 <= len(seats) <= MAX_SEATS or not all(isinstance(s, str) for s in seats):
        raise WebError(f"seats: a list of 1..{MAX_SEATS} seats, each 'human' or an agent spec")
    for spec in seats:
        if spec != HUMAN:
            check_spec(spec, allowed_agents)
            reason = seat_unavailable(spec, rules, len(seats))
            if reason is not None:
                raise WebError(reason)
    seed = body.get("seed")
    if seed is None:
        seed = secrets.randbelow(2**32)
    if type(seed) is not int or not 0 <= seed <= MAX_SEED:
        raise WebError(f"seed: an int in 0..2**63-1, got {_shown(seed)}")
    coach = body.get("coach", "request")
    if coach not in COACH_MODES:
        raise WebError(f"coach: one of {', '.join(COACH_MODES)}, got {_shown(coach)}")
    names = _names(body.get("names"), len(seats))
    try:
        return WebGame(rules, seats, seed, coach, names)
    except ValueError as error:  # an agent that cannot play these rules or this table (in words without a path)
        raise WebError(PATH_IN_TEXT.sub("<a file of the server's>", " ".join(str(error).split()))) from None


def _names(names, seats: int) -> list[str] | None:
    if names is None:
        return None
    ok = isinstance(names, list) and len(names) == seats and all(isinstance(n, str) for n in names)
    names = [n.strip() for n in names] if ok else []
    if not ok or not all(0 < len(n) <= MAX_NAME for n in names):
        raise WebError(f"names: one distinct name of 1..{MAX_NAME} characters per seat")
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            raise WebError(f"names: {problem}")
    shown = [visible(n) for n in names]  # two names that look the same are one name
    if len(set(shown)) != len(shown):
        raise WebError(f"names: one distinct name of 1..{MAX_NAME} characters per seat")
    return names


def check_spec(spec: str, allowed_agents: tuple[str, ...] = ()) -> None:
    """Refuses an agent spec a visitor may not seat (see :func:`new_game` and
    :func:`~yacht_lab.table.web.seats.spec_refusal`).

    Raises:
        WebError: an unknown spec, a label that is not one, or one that reads a file the server did not allow.
    """
    reason = spec_refusal(spec, allowed_agents)
    if reason is not None:
        raise WebError(reason)


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --------------------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------------------
class GameStore:
    """Games by id, each owned by one visitor: a game is found only with its owner's visitor id, at most
    ``per_visitor`` games per visitor (its least recently used go first), ``per_client`` per client (a peer address:
    the visitor ids a client presents cost it nothing to make) and ``capacity`` in all, and a game untouched for
    ``idle_seconds`` is dropped.

    A new game past a bound takes the place of its visitor's own least recently used game; a visitor holding none
    gets a 503 where its client holds ``per_client`` games, so a flood of new visitors from one client locks out only
    that client's new visitors, never another client's. A full store never drops one visitor's game for another's of
    the same client; a client that holds fewer games than another gives up none to it: the store takes the least
    recently used game of the client holding the most (:func:`~yacht_lab.table.web.visitors.fairest_victim`).
    """

    def __init__(
        self,
        capacity: int = MAX_GAMES,
        per_visitor: int = MAX_GAMES_PER_VISITOR,
        idle_seconds: float = IDLE_SECONDS,
        clock=time.monotonic,
        per_client: int = MAX_GAMES_PER_CLIENT,
    ):
        self.capacity, self.per_visitor, self.idle_seconds, self.clock = capacity, per_visitor, idle_seconds, clock
        self.per_client = per_client
        # id -> (visitor, game, last use, client), least recently used first
        self._games: OrderedDict[str, tuple[str, WebGame, float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._games)

    def add(self, visitor: str, game: WebGame, client: str = "") -> None:
        """Holds ``game`` for ``visitor`` of ``client``; past the bounds, the visitor's own least recently used games
        go (or, the store full, the least recently used game of the client holding the most games, if it holds more
        than this client would).

        Raises:
            WebError: this client holds as many games as one client may, or the store is full, and this visitor holds
                no game to give up (503).
        """
        with self._lock:
            self._expire()
            mine = [gid for gid, entry in self._games.items() if entry[0] == visitor]  # in order of use
            drop = mine[: max(0, len(mine) - self.per_visitor + 1)]
            spare = mine[len(drop) :]
            clients = {gid: entry[3] for gid, entry in self._games.items() if gid not in drop}
            if sum(owner == client for owner in clients.values()) >= self.per_client:
                ours = [gid for gid in spare if clients[gid] == client]  # its games of this client, oldest first
                if not ours:
                    raise WebError(
                        f"your address holds as many games as one client may ({self.per_client:,}): "
                        "try again later, or go on with one of yours",
                        503,
                    )
                drop.append(ours[0])
                spare.remove(ours[0])
                del clients[ours[0]]
            if len(clients) >= self.capacity:
                victim = spare[0] if spare else fairest_victim(clients, client)
                if victim is None:
                    raise WebError(
                        f"the server holds as many games as it keeps ({self.capacity:,}): try again later", 503
                    )
                drop.append(victim)
            for gid in drop:
                del self._games[gid]
            self._games[game.id] = (visitor, game, self.clock(), client)

    def get(self, visitor: str, game_id: str) -> WebGame:
        """The visitor's game ``game_id``.

        Raises:
            WebError: no such game for this visitor (404): unknown, expired or another visitor's.
        """
        with self._lock:
            self._expire()
            entry = self._games.get(game_id) if isinstance(game_id, str) else None
            if entry is None or not secrets.compare_digest(entry[0], visitor):
                raise WebError(f"no game {_shown(game_id)} here: it expired, or it is not yours", 404)
            self._games[game_id] = (visitor, entry[1], self.clock(), entry[3])
            self._games.move_to_end(game_id)
            return entry[1]

    def _expire(self) -> None:
        now = self.clock()
        for gid in [gid for gid, entry in self._games.items() if now - entry[2] > self.idle_seconds]:
            del self._games[gid]
