"""Recorded games: every decision an agent made in ``evaluate.py --record PATH``, as JSON Lines, and its reader.

A record is UTF-8 text, one JSON object per line, each with a ``"type"``:

* the first line, ``"header"``: ``format`` (``"yacht-rl-record"``), ``version`` (:data:`FORMAT_VERSION`),
  ``yacht_rl`` (the package version that wrote it), ``rules`` (a preset's name), ``categories`` (its sheet),
  ``seed``, ``games`` (per agent), ``agents`` (their names, in the order they played) and
  ``optimal_expected_score``;
* ``"decision"``: one decision of one game, in the order played: ``agent``, ``game`` (0-based; it rolled the dice
  of ``game_streams(seed, [game])``), ``turn`` (0-based), ``dice`` (the five dice showing, sorted), ``rolls_left``,
  ``open`` (the open boxes' bit mask), ``upper`` and ``armed`` (the family's upper subtotal and Yahtzee box; 0 for
  Yacht), ``total`` (the points before the decision), ``action`` (the env's action index), ``best`` (the solver's
  best action there, the smallest index among ties) and ``regret`` (``max q - q[action]``, the points it gave away);
* ``"game"``, after a game's last decision: ``agent``, ``game``, ``score`` (the final total), ``regret`` (the sum
  of the game's decision regrets, in order, which is exactly :attr:`~yacht_lab.measure.evaluation.AgentResult.regret`)
  and ``decisions``.

The games of each agent follow each other in order (all of the first agent's, then the next one's), each game's
decisions together. :class:`Recorder` writes a record while :func:`yacht_lab.measure.evaluation.evaluate` plays (to a
temporary file renamed at the end: nothing half-written is left behind); :func:`read_record` reads one back as
data only, checking every field, and gives the columns as arrays (:class:`Record`).
"""

from __future__ import annotations

import json
import math
import os
import stat
import sys
from array import array
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from yacht_env import rules as R

FORMAT = "yacht-rl-record"
FORMAT_VERSION = 1
#: At most this many games per agent are recorded (a game is some 30 lines of about 150 bytes: 10,000 games of an
#: agent make about 45 MB).
MAX_RECORD_GAMES = 100_000
#: The longest line :func:`read_record` reads, its line ending not counted (a decision line is about 150 bytes, the
#: header under 1 KB).
MAX_LINE_BYTES = 4096
#: At most this many agents in a record.
MAX_AGENTS = 32

_HEADER_KEYS = {
    "type",
    "format",
    "version",
    "yacht_rl",
    "rules",
    "categories",
    "seed",
    "games",
    "agents",
    "optimal_expected_score",
}
_DECISION_KEYS = (
    "type",
    "agent",
    "game",
    "turn",
    "dice",
    "rolls_left",
    "open",
    "upper",
    "armed",
    "total",
    "action",
    "best",
    "regret",
)
_GAME_KEYS = {"type", "agent", "game", "score", "regret", "decisions"}
#: The sorted roll index of each sorted tuple of dice.
_ROLL_OF = {tuple(int(d) for d in dice): i for i, dice in enumerate(R.ROLLS)}


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------
class Recorder:
    """Writes the record of an evaluation to an open text file, batch by batch.

    :func:`~yacht_lab.measure.evaluation.play_games` hands it each step's decisions (:meth:`decisions`) and each
    finished game (:meth:`finished`); at the end of a batch (:meth:`flush`) the batch's games are written in order.

    Args:
        out: The text file (a temporary file that the caller renames once everything is written).
        header: The header's fields (without ``type``).
    """

    def __init__(self, out, header: dict) -> None:
        self.out = out
        self.out.write(json.dumps({"type": "header", **header}, separators=(",", ":")) + "\n")
        self.agent = ""
        self._steps: list[tuple[np.ndarray, ...]] = []
        self._scores: dict[int, int] = {}
        self._regret: dict[int, float] = {}

    def start_agent(self, name: str) -> None:
        """The decisions that follow are agent ``name``'s."""
        self.agent = json.dumps(name)

    def decisions(self, games, state, total, chosen, best, regret) -> None:
        """One step's decisions: ``state`` is ``(roll, rolls_left, open_mask[, upper, armed])`` per game."""
        roll, rolls_left, open_mask = state[:3]
        zeros = np.zeros(len(games), dtype=np.int64)
        upper, armed = (state[3], state[4]) if len(state) > 3 else (zeros, zeros)
        upper, armed = np.broadcast_to(upper, zeros.shape), np.broadcast_to(armed, zeros.shape)
        columns = (games, roll, rolls_left, open_mask, upper, armed, total, chosen, best)
        self._steps.append((*(np.asarray(c, dtype=np.int64).copy() for c in columns), np.asarray(regret).copy()))

    def finished(self, games, scores) -> None:
        """Games ``games`` ended with these final totals."""
        for game, score in zip(np.asarray(games).tolist(), np.asarray(scores).tolist(), strict=True):
            self._scores[game] = score

    def flush(self) -> None:
        """Writes the games of the batch just played, each game's decisions in order, then its game line."""
        if not self._steps:
            return
        columns = [np.concatenate(column) for column in zip(*self._steps, strict=True)]
        self._steps = []
        order = np.argsort(columns[0], kind="stable")  # by game; each game's decisions stay in the order played
        games, roll, rolls_left, open_mask, upper, armed, total, chosen, best = (c[order].tolist() for c in columns[:9])
        regret = columns[9][order].tolist()
        lines, agent, write = [], self.agent, self.out.write
        turn, game_regret, count = 0, 0.0, 0
        for i, game in enumerate(games):
            dice = ",".join(str(int(d)) for d in R.ROLLS[roll[i]])
            lines.append(
                f'{{"type":"decision","agent":{agent},"game":{game},"turn":{turn},"dice":[{dice}],'
                f'"rolls_left":{rolls_left[i]},"open":{open_mask[i]},"upper":{upper[i]},"armed":{armed[i]},'
                f'"total":{total[i]},"action":{chosen[i]},"best":{best[i]},"regret":{regret[i]!r}}}\n'
            )
            game_regret += regret[i]  # the order evaluation sums in: the same float
            count += 1
            turn += chosen[i] >= R.PICK_OFFSET
            if i + 1 == len(games) or games[i + 1] != game:
                score = self._scores.pop(game)
                lines.append(
                    f'{{"type":"game","agent":{agent},"game":{game},"score":{score},"regret":{game_regret!r},'
                    f'"decisions":{count}}}\n'
                )
                turn, game_regret, count = 0, 0.0, 0
            if len(lines) >= 10_000:
                write("".join(lines))
                lines = []
        write("".join(lines))


def record_header(rules: R.Rules, seed: int, games: int, agents: Iterable[str], optimal: float) -> dict:
    """The header's fields (without ``type``) of a record of these games."""
    from yacht_env import __version__

    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "yacht_rl": __version__,
        "rules": rules.name,
        "categories": list(rules.categories),
        "seed": int(seed),
        "games": int(games),
        "agents": list(agents),
        "optimal_expected_score": round(float(optimal), 6),
    }


def open_record(stack: ExitStack, path: str | os.PathLike, header: dict) -> Recorder:
    """A :class:`Recorder` writing to a temporary file beside ``path`` that replaces ``path`` when ``stack`` closes
    without an error (and is removed on one, leaving ``path`` as it was).
    """
    from yacht_env.util import atomic_output

    temp = stack.enter_context(atomic_output(path))
    out = stack.enter_context(open(temp, "w", encoding="utf-8", newline="\n"))
    return Recorder(out, header)


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------
@dataclass
class Record:
    """A record read back: the header and one row per decision, one per game.

    Attributes:
        header: The header line's fields.
        rules: Its preset's :class:`~yacht_env.rules.Rules`.
        agent, game, turn, roll, rolls_left, open_mask, upper, armed, total, action, best: int ``(D,)`` per
            decision (``agent`` indexes ``header["agents"]``, ``roll`` the sorted rolls ``R.ROLLS``).
        regret: float64 ``(D,)`` per decision.
        game_agent, game_number, game_score, game_start, game_end: int ``(G,)`` per game: its decisions are rows
            ``game_start:game_end``.
        game_regret: float64 ``(G,)``: each game's regret, the sum of its decisions' in order.
    """

    header: dict
    rules: R.Rules
    agent: np.ndarray
    game: np.ndarray
    turn: np.ndarray
    roll: np.ndarray
    rolls_left: np.ndarray
    open_mask: np.ndarray
    upper: np.ndarray
    armed: np.ndarray
    total: np.ndarray
    action: np.ndarray
    best: np.ndarray
    regret: np.ndarray
    game_agent: np.ndarray
    game_number: np.ndarray
    game_score: np.ndarray
    game_start: np.ndarray
    game_end: np.ndarray
    game_regret: np.ndarray

    @property
    def agents(self) -> list[str]:
        """The agents' names, in the order they played."""
        return list(self.header["agents"])

    def category_regret(self, g: int) -> np.ndarray:
        """Game ``g``'s regret by category ``(C,)``: each turn's decisions charged to the box the turn ends in, summed
        as :func:`~yacht_lab.measure.evaluation.play_games` sums them (so equal to its ``category_regret`` row).
        """
        out = np.zeros(self.rules.num_categories, dtype=np.float64)
        turn = 0.0
        for i in range(self.game_start[g], self.game_end[g]):
            turn += float(self.regret[i])
            if self.action[i] >= R.PICK_OFFSET:
                out[self.action[i] - R.PICK_OFFSET] += turn
                turn = 0.0
        return out

    def turn_regret(self, g: int) -> np.ndarray:
        """Game ``g``'s regret by turn ``(num_turns,)``."""
        out = np.zeros(self.rules.num_turns, dtype=np.float64)
        rows = slice(self.game_start[g], self.game_end[g])
        np.add.at(out, self.turn[rows], self.regret[rows])
        return out


class _Problem(ValueError):
    pass


def _int(value, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise _Problem(f"{name} must be an int in {low}..{high}, got {_shown(value)}")
    return value


def _float(value, name: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise _Problem(f"{name} must be a finite number >= 0, got {_shown(value)}")
    return float(value)


def _shown(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _object(line: bytes, number: int) -> dict:
    try:
        value = parse_json(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:  # RecursionError: nested too deep
        raise ValueError(f"line {number}: not a JSON object ({error.__class__.__name__})") from None
    except ValueError as error:  # what parse_json refuses in valid JSON
        raise ValueError(f"line {number}: {error}") from None
    if not isinstance(value, dict):
        raise ValueError(f"line {number}: not a JSON object")
    return value


def parse_json(data: bytes):
    r"""``data`` (UTF-8) parsed as JSON, as data only.

    Raises:
        ValueError: not JSON (:class:`UnicodeDecodeError`, :class:`json.JSONDecodeError`, or :class:`RecursionError`
            for JSON nested too deep), or JSON that Python reads but cannot serve back: an integer of more digits
            than Python converts (``sys.get_int_max_str_digits()``, 4,300), a string with a lone surrogate (an
            escape of one half of a pair, ``\ud800``, which is not text: it cannot be written as UTF-8).
    """
    text = data.decode("utf-8")
    try:
        value = json.loads(text)
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        # int() past the digits limit
        digits = getattr(sys, "get_int_max_str_digits", lambda: 4300)()
        raise ValueError(f"an integer of more than {digits:,} digits") from None
    if "\\u" in text and _has_lone_surrogate(value):  # only an escape makes one: UTF-8 cannot hold it
        raise ValueError("a string with a lone surrogate (not text)")
    return value


def _has_lone_surrogate(value) -> bool:
    stack = [value]  # a loop, not recursion: the value may be nested as deep as json.loads goes
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _header(value: dict) -> tuple[dict, R.Rules]:
    if value.get("type") != "header" or value.get("format") != FORMAT:
        raise _Problem(f'the first line must be the header ({{"type": "header", "format": "{FORMAT}", ...}})')
    if set(value) != _HEADER_KEYS:
        raise _Problem(f"the header's fields must be {', '.join(sorted(_HEADER_KEYS))}")
    _int(value["version"], "version", FORMAT_VERSION, FORMAT_VERSION)
    if not isinstance(value["rules"], str) or value["rules"] not in R.PRESETS:
        raise _Problem(f"rules must be a preset ({', '.join(sorted(R.PRESETS))}), got {_shown(value['rules'])}")
    rules = R.get_rules(value["rules"])
    if value["categories"] != list(rules.categories):
        raise _Problem(f"categories must be the {rules.name} preset's")
    _int(value["seed"], "seed", 0, 2**63 - 1)
    _int(value["games"], "games", 1, MAX_RECORD_GAMES)
    agents = value["agents"]
    if not isinstance(agents, list) or not 1 <= len(agents) <= MAX_AGENTS:
        raise _Problem(f"agents must be a list of 1..{MAX_AGENTS} names")
    if not all(isinstance(a, str) and 0 < len(a) <= 200 for a in agents) or len(set(agents)) != len(agents):
        raise _Problem("agents must be distinct non-empty names of at most 200 characters")
    if not isinstance(value["yacht_rl"], str) or len(value["yacht_rl"]) > 64:
        raise _Problem("yacht_rl must be a version string")
    _float(value["optimal_expected_score"], "optimal_expected_score")
    return value, rules


class _Reader:
    """Reads the lines after the header, checking each one and the order of the games."""

    def __init__(self, header: dict, rules: R.Rules) -> None:
        self.rules, self.header = rules, header
        self.agents = {name: i for i, name in enumerate(header["agents"])}
        self.rows = array("q")  # the decisions' 11 int fields, one after another
        self.regrets = array("d")
        self.count = 0
        self.games: list[tuple] = []
        self.seen: set[tuple[int, int]] = set()
        self.current: tuple[int, int] | None = None  # (agent, game) whose decisions are being read
        self.start, self.sum, self.turn = 0, 0.0, 0

    def line(self, value: dict) -> None:
        kind = value.get("type")
        if kind == "decision":
            self.decision(value)
        elif kind == "game":
            self.game_line(value)
        else:
            raise _Problem(f'type must be "decision" or "game", got {_shown(kind)}')

    def _agent_game(self, value: dict) -> tuple[int, int]:
        agent = value["agent"]
        if not isinstance(agent, str) or agent not in self.agents:
            raise _Problem(f"agent must be one of the header's agents, got {_shown(agent)}")
        return self.agents[agent], _int(value["game"], "game", 0, self.header["games"] - 1)

    def decision(self, value: dict) -> None:
        if set(value) != set(_DECISION_KEYS):
            raise _Problem(f"a decision's fields must be {', '.join(_DECISION_KEYS)}")
        rules = self.rules
        key = self._agent_game(value)
        if self.current is None:
            if key in self.seen:
                raise _Problem(f"game {key[1]} of {value['agent']!r} appears twice")
            self.current, self.start, self.sum, self.turn = key, self.count, 0.0, 0
        elif key != self.current:
            raise _Problem(f"a game's decisions must end with its game line before game {key[1]}'s")
        dice = value["dice"]
        if not isinstance(dice, list) or tuple(dice) not in _ROLL_OF or not all(type(d) is int for d in dice):
            raise _Problem(f"dice must be five sorted faces 1..6, got {_shown(dice)}")
        if self.turn >= rules.num_turns:
            raise _Problem(f"a game has {rules.num_turns} turns: no decision after its last pick")
        turn = _int(value["turn"], "turn", self.turn, self.turn)  # the turns in order, each ended by its pick
        row = (
            key[0],
            key[1],
            turn,
            _ROLL_OF[tuple(dice)],
            _int(value["rolls_left"], "rolls_left", 0, R.MAX_ROLLS_LEFT),
            _int(value["open"], "open", 1, (1 << rules.num_categories) - 1),
            _int(value["upper"], "upper", 0, rules.upper_bonus_threshold if rules.upper_bonus else 0),
            _int(value["armed"], "armed", 0, 1 if rules.yahtzee_bonus else 0),
            _int(value["total"], "total", 0, 100_000),
            _int(value["action"], "action", 0, rules.num_actions - 1),
            _int(value["best"], "best", 0, rules.num_actions - 1),
        )
        if self.count - self.start >= rules.num_turns * (R.MAX_ROLLS_LEFT + 1):
            raise _Problem(f"a game has at most {rules.num_turns * (R.MAX_ROLLS_LEFT + 1)} decisions")
        regret = _float(value["regret"], "regret")
        self.turn = turn + (row[9] >= R.PICK_OFFSET)
        self.rows.extend(row)
        self.regrets.append(regret)
        self.count += 1
        self.sum += regret

    def game_line(self, value: dict) -> None:
        if set(value) != _GAME_KEYS:
            raise _Problem(f"a game line's fields must be {', '.join(sorted(_GAME_KEYS))}")
        key = self._agent_game(value)
        if key != self.current:
            raise _Problem(f"game {key[1]}'s game line must follow its decisions")
        count = self.count - self.start
        _int(value["decisions"], "decisions", count, count)
        score = _int(value["score"], "score", 0, 100_000)
        regret = _float(value["regret"], "regret")
        if regret != self.sum:
            raise _Problem(f"regret must be the sum of the game's decision regrets ({self.sum!r}), got {regret!r}")
        if self.turn != self.rules.num_turns:  # a game ends with its last turn's pick: every turn ends in a box
            raise _Problem(f"game {key[1]} ends after {self.turn} of its {self.rules.num_turns} turns")
        self.games.append((*key, score, self.start, self.count, regret))
        self.seen.add(key)
        self.current = None

    def finish(self) -> Record:
        if self.current is not None:
            raise ValueError("the record ends inside a game (no game line after its last decision)")
        if not self.games:
            raise ValueError("the record holds no game")
        rows = np.frombuffer(self.rows, dtype=np.int64).reshape(-1, 11)  # over the arrays' memory: no second copy
        games = np.array([g[:5] for g in self.games], dtype=np.int64)
        columns = dict(zip(_DECISION_KEYS[1:], rows.T, strict=False))
        return Record(
            header=self.header,
            rules=self.rules,
            agent=columns["agent"],
            game=columns["game"],
            turn=columns["turn"],
            roll=rows[:, 3],
            rolls_left=rows[:, 4],
            open_mask=rows[:, 5],
            upper=rows[:, 6],
            armed=rows[:, 7],
            total=rows[:, 8],
            action=rows[:, 9],
            best=rows[:, 10],
            regret=np.frombuffer(self.regrets, dtype=np.float64),
            game_agent=games[:, 0],
            game_number=games[:, 1],
            game_score=games[:, 2],
            game_start=games[:, 3],
            game_end=games[:, 4],
            game_regret=np.array([g[5] for g in self.games], dtype=np.float64),
        )


def read_record(lines: Iterable[bytes]) -> Record:
    """Reads a record (its lines as bytes, e.g. :func:`record_lines` of a binary file) as data: JSON only, every field
    checked.

    Raises:
        ValueError: one line that names the line and what is wrong with it.
    """
    reader, number = None, 0
    for number, line in enumerate(lines, start=1):
        text = line[:-1] if line.endswith(b"\n") else line  # the line ending is not counted
        text = text[:-1] if text.endswith(b"\r") else text
        if len(text) > MAX_LINE_BYTES:
            raise ValueError(f"line {number}: longer than {MAX_LINE_BYTES} bytes")
        if not text.strip():
            continue
        value = _object(text, number)
        try:
            if reader is None:
                reader = _Reader(*_header(value))
            else:
                reader.line(value)
        except _Problem as problem:
            raise ValueError(f"line {number}: {problem}") from None
    if reader is None:
        raise ValueError("an empty record: the first line must be its header")
    return reader.finish()


def record_lines(file: BinaryIO, max_bytes: int | None = None) -> Iterator[bytes]:
    """The lines of a binary file, read one at a time, each at most :data:`MAX_LINE_BYTES` and its line ending: a
    longer line is not read whole (:func:`read_record` refuses its first piece).

    Raises:
        ValueError: more than ``max_bytes`` in all (a file that grew after its size was checked).
    """
    read = 0
    while line := file.readline(MAX_LINE_BYTES + 2):
        read += len(line)
        if max_bytes is not None and read > max_bytes:
            raise ValueError(f"over the limit of {max_bytes:,} bytes")
        yield line


def read_record_file(path: str | os.PathLike, max_bytes: int) -> Record:
    """:func:`read_record` of a regular file of at most ``max_bytes``: its kind and size are checked before anything
    is read (a device such as ``/dev/zero`` or a FIFO is refused at once), and its lines are bounded while reading.

    Raises:
        ValueError: a missing or unreadable file, not a regular file, a bigger one, or a bad record.
    """
    try:
        with ExitStack() as stack:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO would wait for a writer
            stack.callback(os.close, descriptor)
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise ValueError(f"'{path}' is not a regular file")
            if status.st_size > max_bytes:
                raise ValueError(f"'{path}' is {status.st_size:,} bytes, over the limit of {max_bytes:,} bytes")
            file = stack.enter_context(open(descriptor, "rb", closefd=False))
            return read_record(record_lines(file, max_bytes))
    except OSError as error:
        raise ValueError(f"cannot read '{path}': {error.strerror or error}") from None
