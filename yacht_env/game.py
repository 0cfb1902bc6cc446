"""The game of solo Yacht: the state of a batch of games and the one transition every env steps through.

:class:`GameState` is a small record per game (the sorted roll showing, rolls left, open categories, turn,
score sheet, total, the dice stream the game draws from, and the legal actions that follow from them).
:meth:`GameState.play` applies one action per game: a keep re-rolls from the game's dice stream, a pick
scores, closes the category and deals the next turn's first roll. :meth:`GameState.start` deals new
games. ``YachtEnv`` is this record with one game, ``YachtVectorEnv`` with N; the envs add only API work
(checking actions, the illegal-action policy, autoreset, observations, info, render).

:class:`TableState` is the multiplayer game on the same transition: tables of P players, each playing its own
solo game, plus whose turn it is.

This is also the one home of dice streams: :func:`draw_stream` (fresh dice from a generator),
:func:`parse_dice_stream` (the reset option ``dice_stream``) and :func:`game_streams` (the seeded
streams of numbered games that evaluations share). Like :mod:`yacht_env.rules`, pure numpy.

A game's dice stream is ``rules.stream_shape`` dice, ``(12, 3, 5)`` for Yacht: ``stream[turn, j]`` is
the row of five fresh dice behind roll ``j`` of the turn (0 = the automatic first roll); a re-roll of
``m`` dice takes the row's first ``m`` values. Inside the state it is kept as
:func:`yacht_env.rules.prefix_codes` of its rows, shape ``(rules.stream_rows, 6)``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from yacht_env import rules as R


@functools.cache
def _score_rows(rules: R.Rules) -> list[list[int]]:
    """:func:`yacht_env.rules.score_table` as Python lists (one game's picks read it without numpy scalars)."""
    return R.score_table(rules).tolist()


#: The fields of a batch's state, one row per game (what :meth:`GameState.take` copies).
_FIELDS = ("roll", "rolls_left", "open_mask", "turn", "total", "upper", "armed", "sheet", "stream", "mask")


class GameState:
    """Solo games of Yacht between two decisions: ``num_games`` of them, or one (``num_games=None``).

    With ``num_games=N`` every field is an array with a leading axis of N; with ``None`` the integers are
    Python ints and the arrays lose that axis (one game without batching costs, the single env's path).

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules` played; every size below comes from it.
        canonical_keeps: Whether only the canonical keep-mask of each kept multiset is legal.
        roll: Sorted-roll index showing (a row of ``rules.ROLLS``).
        rolls_left: Re-rolls left this turn, 0..2 (0 once a game is finished).
        open_mask: Bit ``k`` set while category ``k`` is open (0: the game is finished).
        turn: Turns completed, 0..``num_turns - 1``.
        sheet: int16 ``(..., num_categories)``: points of each filled category, ``-1`` while open.
        total: Points scored so far, bonuses included.
        upper: The family's rules with an upper bonus: the upper section's subtotal, capped at the bonus
            threshold (so the bonus is earned iff ``upper == threshold``); always 0 otherwise.
        armed: Rules with a Yahtzee bonus: whether the five-of-a-kind box holds its points, so another five of a
            kind earns the bonus (0 or 1); always 0 otherwise.
        stream: int32 ``(..., stream_rows, 6)``: the game's dice stream as prefix codes.
        mask: bool ``(..., num_actions)``: the legal actions, recomputed wherever the state changes; all True
            once a game is finished (so no mask row is ever empty). Read-only for one game (a new array at each
            change: copy it to write).
    """

    def __init__(self, rules: str | R.Rules = "standard", num_games: int | None = None, canonical_keeps: bool = True):
        self.rules = R.get_rules(rules)
        self.canonical_keeps = bool(canonical_keeps)
        self.num_games = num_games
        self._score = R.score_table(self.rules)
        batch = () if num_games is None else (num_games,)
        self.sheet = np.full((*batch, self.rules.num_categories), -1, dtype=np.int16)
        self.stream = np.zeros((*batch, self.rules.stream_rows, R.NUM_DICE + 1), dtype=np.int32)
        self.mask = np.zeros((*batch, self.rules.num_actions), dtype=bool)
        self._bonuses = self.rules.has_bonuses
        self._num_categories = self.rules.num_categories
        if num_games is None:
            self.roll = self.rolls_left = self.open_mask = self.turn = self.total = self.upper = self.armed = 0
            self._score_rows = _score_rows(self.rules)  # one game works on Python ints: its tables as lists
            self._codes = self.stream.tolist()
            # Its mask is read-only, joined from two halves of bytes (R.legal_mask_parts): half a writable copy's time.
            self._mask_keeps, self._mask_picks = R.legal_mask_parts(self.canonical_keeps, self._num_categories)
            self._all_legal = np.ones(self.rules.num_actions, dtype=bool)
            self._all_legal.flags.writeable = False
            self._legal = self._legal_one
            self.mask = self._all_legal
        else:
            self.roll = np.zeros(num_games, dtype=np.intp)
            self.rolls_left = np.zeros(num_games, dtype=np.intp)
            self.open_mask = np.zeros(num_games, dtype=np.intp)
            self.turn = np.zeros(num_games, dtype=np.intp)
            self.total = np.zeros(num_games, dtype=np.int32)
            self.upper = np.zeros(num_games, dtype=np.intp)
            self.armed = np.zeros(num_games, dtype=np.intp)
            self._index = np.arange(num_games)

    def start(self, stream: np.ndarray, games: np.ndarray | None = None) -> None:
        """Deals new games: all categories open, the first roll of ``stream`` showing, two re-rolls left.

        Args:
            stream: Dice streams as prefix codes (:func:`draw_stream`, :func:`parse_dice_stream`): shape
                ``(stream_rows, 6)`` for one game, ``(len(games), stream_rows, 6)`` for a batch.
            games: Batch only: the indices of the games to start (default: every game).
        """
        if self.num_games is None:
            self.stream = stream
            self._codes = stream.tolist()  # the same stream as Python ints: play reads it by list lookups
            self.roll = R.roll_from_code(self._codes[0][R.NUM_DICE])
            self.rolls_left, self.open_mask, self.turn, self.total = R.MAX_ROLLS_LEFT, self.rules.all_open, 0, 0
            self.upper = self.armed = 0
            self.sheet[:] = -1
            self._update_mask()
            return
        games = self._index if games is None else games
        self.stream[games] = stream
        self.roll[games] = R.roll_from_code(self.stream[games, 0, R.NUM_DICE])
        self.rolls_left[games] = R.MAX_ROLLS_LEFT
        self.open_mask[games] = self.rules.all_open
        self.turn[games] = 0
        self.sheet[games] = -1
        self.total[games] = 0
        self.upper[games] = 0
        self.armed[games] = 0
        self.mask[games] = self._legal(self.roll[games], R.MAX_ROLLS_LEFT, self.open_mask[games])

    def play(self, actions, legal: np.ndarray | None = None, games: np.ndarray | None = None):
        """Applies one action per game: the game's one transition.

        Args:
            actions: An int (one game) or an int array ``(N,)`` (or ``(len(games),)``); each must be legal in
                its game (``mask``). Checking is the env's job: an illegal action here is undefined.
            legal: Batch only: bool, the games that take their action; the others stay as they are (an
                illegal action the env ignores, a game waiting for its reset). Default: all.
            games: Batch only: distinct indices of the games the actions are for (default: every game);
                e.g. the players on turn at many tables.

        Returns:
            ``(points, finished)``: the points each pick scored (0 for a keep) and whether the action ended
            the game; an int and a bool for one game, arrays (one entry per action) for a batch.
        """
        if self.num_games is None:  # one game: the same steps on Python ints, without array overhead
            action = actions
            points, finished = 0, False
            if action < R.PICK_OFFSET:
                row = self.turn * R.ROLLS_PER_TURN + R.ROLLS_PER_TURN - self.rolls_left
                self.roll = R.reroll(self.roll, action, self._codes[row])
                self.rolls_left -= 1
            else:
                category = action - R.PICK_OFFSET
                if self._bonuses:
                    points, self.sheet[category], self.upper, self.armed = R.pick_outcome(
                        self.rules, self.roll, category, self.open_mask, self.upper, self.armed
                    )
                else:
                    points = self._score_rows[self.roll][category]
                    self.sheet[category] = points
                self.total += points
                self.open_mask &= ~(1 << category)
                finished = self.open_mask == 0
                if finished:
                    self.rolls_left = 0
                else:
                    self.turn += 1
                    self.roll = R.roll_from_code(self._codes[self.turn * R.ROLLS_PER_TURN][R.NUM_DICE])
                    self.rolls_left = R.MAX_ROLLS_LEFT
            # As _update_mask: a finished game allows every action.
            self.mask = self._all_legal if finished else self._legal(self.roll, self.rolls_left, self.open_mask)
            return points, finished

        if games is None:
            index, roll, rolls_left, open_mask, turn = (
                self._index,
                self.roll,
                self.rolls_left,
                self.open_mask,
                self.turn,
            )
        else:
            index = games
            roll, rolls_left = self.roll[games], self.rolls_left[games]
            open_mask, turn = self.open_mask[games], self.turn[games]
        legal = np.ones(len(index), dtype=bool) if legal is None else legal
        keep = legal & (actions < R.PICK_OFFSET)
        pick = legal ^ keep
        # Keeps: re-roll from the next row of each game's dice stream (the row is clipped where nothing is
        # kept; that result is discarded below).
        row = np.minimum(turn * R.ROLLS_PER_TURN + (R.ROLLS_PER_TURN - rolls_left), self.rules.stream_rows - 1)
        rerolled = R.reroll(roll, actions & R.KEEP_ALL, self.stream[index, row])
        # Picks: score, close the category, deal the next turn's first roll.
        category = np.maximum(actions - R.PICK_OFFSET, 0)
        if self._bonuses:
            upper, armed = (self.upper, self.armed) if games is None else (self.upper[games], self.armed[games])
            points, box, new_upper, new_armed = R.pick_outcome(self.rules, roll, category, open_mask, upper, armed)
            points, box = points * pick, box * pick
            upper, armed = np.where(pick, new_upper, upper), np.where(pick, new_armed, armed)
            if games is None:
                self.upper, self.armed = upper, armed
            else:
                self.upper[games], self.armed[games] = upper, armed
        else:
            points = box = self._score[roll, category] * pick
        open_mask = open_mask & ~(pick.astype(np.intp) << category)
        finished = pick & (open_mask == 0)
        next_turn = pick & ~finished
        turn = turn + next_turn
        first_row = np.minimum(turn, self.rules.num_turns - 1) * R.ROLLS_PER_TURN
        first_roll = R.roll_from_code(self.stream[index, first_row, R.NUM_DICE])
        roll = np.where(keep, rerolled, np.where(next_turn, first_roll, roll))
        rolls_left = np.where(next_turn, R.MAX_ROLLS_LEFT, rolls_left - keep) * ~finished
        picked = np.flatnonzero(pick)
        self.sheet.reshape(-1)[index[picked] * self.rules.num_categories + category[picked]] = box[picked]
        if games is None:
            self.roll, self.rolls_left, self.open_mask, self.turn = roll, rolls_left, open_mask, turn
            self.total += points
            self._update_mask()
        else:
            self.roll[games], self.rolls_left[games], self.open_mask[games], self.turn[games] = (
                roll,
                rolls_left,
                open_mask,
                turn,
            )
            self.total[games] += points
            self.mask[games] = self._legal(roll, rolls_left, open_mask) | (open_mask == 0)[:, None]
        return points, finished

    def copy(self) -> GameState:
        """An independent copy of these games (one game shares the dice stream, which it never writes in place)."""
        if self.num_games is not None:
            return self.take(self._index)
        # Every other field is an int or shared read-only (the tables, the mask, the stream): a planner copies often.
        copy = object.__new__(GameState)
        copy.__dict__.update(self.__dict__)
        copy.sheet = self.sheet.copy()
        copy._legal = copy._legal_one
        return copy

    def set_roll(self, roll, games: np.ndarray | None = None) -> None:
        """Shows ``roll`` (a sorted-roll index, or one per game of ``games``), whatever the dice stream holds, and the
        legal actions that follow: how a chance outcome a planner chose falls (:mod:`yacht_env.chance`).
        """
        if self.num_games is None:
            self.roll = int(roll)
            self._update_mask()
            return
        games = self._index if games is None else games
        self.roll[games] = roll
        self.mask[games] = self._legal(self.roll[games], self.rolls_left[games], self.open_mask[games])
        self.mask[games] |= (self.open_mask[games] == 0)[:, None]

    def take(self, games: np.ndarray) -> GameState:
        """A new batch holding copies of ``games`` (batch only; an index may repeat): branches of a position,
        which play on independently of this batch and of each other.

        Args:
            games: intp indices of the games to copy, in the new batch's order.
        """
        if self.num_games is None:
            raise ValueError("take() copies games of a batch; this GameState holds one game")
        games = np.asarray(games, dtype=np.intp)
        copy = GameState(self.rules, len(games), self.canonical_keeps)
        for name in _FIELDS:
            getattr(copy, name)[...] = getattr(self, name)[games]
        return copy

    @classmethod
    def stack(cls, parts: Sequence[GameState]) -> GameState:
        """One batch of the games of ``parts`` (batches of the same rules), in order: copies, as :meth:`take`'s."""
        first = parts[0]
        joined = cls(first.rules, sum(part.num_games for part in parts), first.canonical_keeps)
        for name in _FIELDS:
            getattr(joined, name)[...] = np.concatenate([getattr(part, name) for part in parts])
        return joined

    def redeal(self, rng: np.random.Generator, games: np.ndarray, seen: np.ndarray) -> None:
        """Draws afresh from ``rng`` the dice still to come of ``games`` (batch only): the roll showing stays
        where ``seen`` is True (the player is on turn: its roll is known), every later roll is new; where ``seen``
        is False the roll showing is dealt again too (a player waiting at a turn start has not rolled yet).
        Finished games keep their dice. Together with :meth:`take` this gives a position many futures, and
        several moves the same future: the dice, not the moves, differ between futures.

        Args:
            rng: The generator the new dice come from (one row of five per roll, as :func:`draw_stream`).
            games: Distinct intp indices of the games to re-deal.
            seen: bool ``(len(games),)``: whether each game's roll showing is kept.
        """
        games, seen = np.asarray(games, dtype=np.intp), np.asarray(seen, dtype=bool)
        fresh = draw_stream(rng, self.rules, len(games))
        turn, rolls_left = self.turn[games], self.rolls_left[games]
        first_new = turn * R.ROLLS_PER_TURN + np.where(seen, R.ROLLS_PER_TURN - rolls_left, 0)
        first_new = np.where(self.open_mask[games] == 0, self.rules.stream_rows, first_new)
        new = np.arange(self.rules.stream_rows) >= first_new[:, None]
        self.stream[games] = np.where(new[..., None], fresh, self.stream[games])
        dealt = games[~seen & (self.open_mask[games] != 0)]
        self.roll[dealt] = R.roll_from_code(self.stream[dealt, self.turn[dealt] * R.ROLLS_PER_TURN, R.NUM_DICE])
        self.mask[dealt] = self._legal(self.roll[dealt], self.rolls_left[dealt], self.open_mask[dealt])

    def _legal(self, roll, rolls_left, open_mask) -> np.ndarray:
        """The legal actions (:func:`yacht_env.rules.legal_action_mask` with the joker's placement rule)."""
        picks = R.legal_picks(self.rules, roll, open_mask) if self._bonuses else open_mask
        return R.legal_action_mask(roll, rolls_left, picks, self.canonical_keeps, self._num_categories)

    def _legal_one(self, roll: int, rolls_left: int, open_mask: int) -> np.ndarray:
        """:meth:`_legal` of one game, read-only (:func:`yacht_env.rules.legal_mask_parts`)."""
        picks = R.legal_picks(self.rules, roll, open_mask) if self._bonuses else open_mask
        return np.frombuffer(self._mask_keeps[roll * R.ROLLS_PER_TURN + rolls_left] + self._mask_picks[picks], bool)

    def _update_mask(self) -> None:
        # A finished game allows every action (pgx's convention): a masked policy never meets an empty row,
        # and the envs never step a finished game.
        if self.num_games is None:
            self.mask = (
                self._all_legal if self.open_mask == 0 else self._legal(self.roll, self.rolls_left, self.open_mask)
            )
        else:
            self.mask = self._legal(self.roll, self.rolls_left, self.open_mask)
            self.mask |= (self.open_mask == 0)[:, None]


class TableState:
    """Multiplayer Yacht: tables of ``num_players`` players who take whole turns in seat order.

    Every player plays its own solo game (its own sheet and dice stream) through :class:`GameState`; the
    table adds only whose turn it is. The player on turn keeps the turn through its re-rolls and its pick;
    after the pick the next seat plays. A table's game is over after the last seat's last pick.

    Args:
        rules: The rules every player plays.
        num_players: Players at each table (1 or more).
        num_tables: Tables played together; ``None``: one table (each player a one-game ``GameState`` on
            Python ints, the AEC env's path).
        canonical_keeps: As :class:`GameState`.

    Attributes:
        players: One table: a list of ``num_players`` one-game :class:`GameState`; a batch: one
            :class:`GameState` of ``num_tables * num_players`` games, player ``p`` of table ``t`` at row
            ``t * num_players + p``.
        current: The seat on turn (an int, or an intp array ``(num_tables,)``).
        sheets: int16 ``(..., num_players, num_categories)``: every player's sheet (a view of the games' own).
    """

    def __init__(
        self,
        rules: str | R.Rules = "standard",
        num_players: int = 2,
        num_tables: int | None = None,
        canonical_keeps: bool = True,
    ) -> None:
        self.rules = R.get_rules(rules)
        self.num_players = num_players
        self.num_tables = num_tables
        if num_tables is None:
            self.players: list[GameState] | GameState = [
                GameState(self.rules, None, canonical_keeps) for _ in range(num_players)
            ]
            # The players' sheets as rows of one array (each game writes its row in place), read in one copy.
            self.sheets = np.full((num_players, self.rules.num_categories), -1, dtype=np.int16)
            for game, row in zip(self.players, self.sheets, strict=True):
                game.sheet = row
            self.current = 0
        else:
            self.players = GameState(self.rules, num_tables * num_players, canonical_keeps)
            self.sheets = self.players.sheet.reshape(num_tables, num_players, -1)  # a view
            self.current = np.zeros(num_tables, dtype=np.intp)
            self._first_row = np.arange(num_tables) * num_players

    def start(self, streams: np.ndarray, tables: np.ndarray | None = None) -> None:
        """Deals new games: every player's first roll, seat 0 on turn.

        Args:
            streams: Prefix codes of each player's dice stream: ``(num_players, stream_rows, 6)`` for one
                table, ``(len(tables), num_players, stream_rows, 6)`` for a batch.
            tables: Batch only: the indices of the tables to start (default: all).
        """
        if self.num_tables is None:
            for game, stream in zip(self.players, streams, strict=True):
                game.start(stream)
            self.current = 0
            return
        tables = np.arange(self.num_tables) if tables is None else np.asarray(tables)
        rows = (tables[:, None] * self.num_players + np.arange(self.num_players)).reshape(-1)
        self.players.start(streams.reshape(-1, *streams.shape[2:]), rows)
        self.current[tables] = 0

    @property
    def on_turn(self) -> GameState | np.ndarray:
        """One table: the :class:`GameState` of the player on turn; a batch: that player's row per table."""
        if self.num_tables is None:
            return self.players[self.current]
        return self._first_row + self.current

    @property
    def mask(self) -> np.ndarray:
        """The legal actions of the player on turn: ``(num_actions,)``, or ``(num_tables, num_actions)``."""
        if self.num_tables is None:
            return self.players[self.current].mask
        return self.players.mask[self.on_turn]

    def totals(self) -> np.ndarray:
        """Each player's total: ``(num_players,)``, or ``(num_tables, num_players)``."""
        if self.num_tables is None:
            return np.array([game.total for game in self.players])
        return self.players.total.reshape(self.num_tables, self.num_players)

    def play(self, actions, legal: np.ndarray | None = None, tables: np.ndarray | None = None):
        """The player on turn takes one action (one per table): the solo game's transition, then the turn order.

        Args:
            actions: An int (one table), or an int array: one action per table (or per table of ``tables``),
                legal for the player on turn.
            legal: Batch only: bool, the tables that take their action (default: all).
            tables: Batch only: distinct indices of the tables the actions are for (default: every table).

        Returns:
            ``(points, game_over)``: what the action scored for the player on turn, and whether it ended the
            table's game (the last seat's last pick); ints and bools, or arrays (one entry per action).
        """
        if self.num_tables is None:
            seat = self.current
            points, finished = self.players[seat].play(actions)
            if actions >= R.PICK_OFFSET:
                self.current = (seat + 1) % self.num_players
            return points, finished and seat == self.num_players - 1
        seat = self.current if tables is None else self.current[tables]
        legal = np.ones(len(seat), dtype=bool) if legal is None else legal
        rows = (self._first_row if tables is None else self._first_row[tables]) + seat
        points, finished = self.players.play(actions, legal, rows)
        picked = legal & (actions >= R.PICK_OFFSET)
        next_seat = np.where(picked, (seat + 1) % self.num_players, seat)
        if tables is None:
            self.current = next_seat
        else:
            self.current[tables] = next_seat
        return points, finished & (seat == self.num_players - 1)

    def copy(self) -> TableState:
        """An independent copy of these tables (:meth:`GameState.copy` of every player)."""
        if self.num_tables is not None:
            return self.take(np.arange(self.num_tables))
        copy = object.__new__(TableState)
        copy.__dict__.update(self.__dict__)
        copy.players = [game.copy() for game in self.players]
        copy.sheets = self.sheets.copy()
        for game, row in zip(copy.players, copy.sheets, strict=True):
            game.sheet = row  # each game writes its row of the table's sheets, as in __init__
        return copy

    def take(self, tables: np.ndarray) -> TableState:
        """A new batch of copies of ``tables`` (batch only; an index may repeat), as :meth:`GameState.take`."""
        if self.num_tables is None:
            raise ValueError("take() copies tables of a batch; this TableState holds one table")
        tables = np.asarray(tables, dtype=np.intp)
        copy = TableState(self.rules, self.num_players, len(tables), self.players.canonical_keeps)
        rows = (tables[:, None] * self.num_players + np.arange(self.num_players)).reshape(-1)
        copy.players = self.players.take(rows)
        copy.sheets = copy.players.sheet.reshape(len(tables), self.num_players, -1)
        copy.current[:] = self.current[tables]
        return copy

    @classmethod
    def stack(cls, parts: Sequence[TableState]) -> TableState:
        """One batch of the tables of ``parts`` (batches of the same rules and players), in order."""
        first = parts[0]
        joined = cls(first.rules, first.num_players, sum(part.num_tables for part in parts))
        joined.players = GameState.stack([part.players for part in parts])
        joined.sheets = joined.players.sheet.reshape(joined.num_tables, joined.num_players, -1)
        joined.current[:] = np.concatenate([part.current for part in parts])
        return joined

    def redeal(self, rng: np.random.Generator, tables: np.ndarray | None = None) -> None:
        """Every player's dice still to come at ``tables`` (default: all) drawn afresh from ``rng``: the player on
        turn keeps the roll showing, the others (waiting at a turn start) are dealt theirs again
        (:meth:`GameState.redeal`).
        """
        if self.num_tables is None:
            raise ValueError("redeal() works on a batch of tables; this TableState holds one table")
        tables = np.arange(self.num_tables) if tables is None else np.asarray(tables, dtype=np.intp)
        rows = (tables[:, None] * self.num_players + np.arange(self.num_players)).reshape(-1)
        seen = (np.arange(self.num_players) == self.current[tables][:, None]).reshape(-1)
        self.players.redeal(rng, rows, seen)


def bonus_info(rules: R.Rules, game: GameState) -> dict[str, Any]:
    """The info keys of what the family's state adds (none for Yacht's presets): ``"upper"`` (int64, the upper
    subtotal, capped at the bonus threshold) with an upper bonus, ``"armed"`` (bool, the five-of-a-kind box holds
    its points) with a Yahtzee bonus; for one game an ``np.int64`` and a 0-d bool array (the envs' info types,
    ``Yacht-v0``'s Information), for a batch new arrays of those dtypes.
    """
    info: dict[str, Any] = {}
    one = game.num_games is None
    if rules.upper_bonus:
        info["upper"] = np.int64(game.upper) if one else game.upper.astype(np.int64)
    if rules.yahtzee_bonus:
        info["armed"] = np.array(bool(game.armed)) if one else game.armed.astype(bool)
    return info


def win_rewards(totals: np.ndarray) -> np.ndarray:
    """Zero-sum rewards of finished games (the rules: the highest total wins, ties share): the players with the
    highest total share +1, the others share -1; all tied (a lone player too): 0.

    For two or more players this is OpenSpiel's ``returns()`` (``tests/test_openspiel.py`` checks it); OpenSpiel
    gives a lone player its total / 305 instead. ``totals`` is ``(..., P)``; so is the result (float64).
    """
    totals = np.asarray(totals)
    best = totals.max(axis=-1, keepdims=True)
    winners = totals == best
    n_win = winners.sum(axis=-1, keepdims=True)
    n_lose = totals.shape[-1] - n_win
    rewards = np.where(winners, 1.0 / n_win, -1.0 / np.maximum(n_lose, 1))
    return np.where(n_lose == 0, 0.0, rewards)


# --------------------------------------------------------------------------------------------------
# Dice streams
# --------------------------------------------------------------------------------------------------
def draw_stream(rng: np.random.Generator, rules: str | R.Rules = "standard", num_games: int | None = None):
    """Fresh dice streams from ``rng`` as prefix codes: ``(stream_rows, 6)``, or ``(num_games, stream_rows, 6)``.

    One draw per row of five dice (:func:`yacht_env.rules.draw_prefix_codes`), so a drawn stream and the same
    dice given as ``dice_stream`` play alike.
    """
    rows = R.get_rules(rules).stream_rows
    return R.draw_prefix_codes(rng, (rows,) if num_games is None else (num_games, rows))


def parse_dice_stream(
    options: dict[str, Any] | None, rules: str | R.Rules = "standard", leading: tuple[int, ...] = ()
) -> np.ndarray | None:
    """The reset option ``dice_stream`` (dice in 1..6, shape ``leading + rules.stream_shape``) as prefix codes,
    shape ``leading + (stream_rows, 6)``; ``None`` if the option is absent.

    Raises:
        ValueError: options that are not a dict, an unknown option, or a stream of the wrong shape or values.
    """
    if options is None:
        return None
    if not isinstance(options, dict):
        raise ValueError(f"reset options must be a dict such as {{'dice_stream': ...}}, got {options!r}")
    unknown = set(options) - {"dice_stream"}
    if unknown:
        raise ValueError(f"unknown reset options {sorted(map(str, unknown))}; accepted: ['dice_stream']")
    if "dice_stream" not in options:
        return None
    shape = leading + R.get_rules(rules).stream_shape
    try:
        array = np.asarray(options["dice_stream"])
        ok = (
            array.shape == shape
            and np.issubdtype(array.dtype, np.integer)
            and bool(((array >= 1) & (array <= R.NUM_FACES)).all())
        )
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"dice_stream must be an int array of shape {shape} with values in 1..6")
    return R.prefix_codes(array.reshape(*leading, -1, R.NUM_DICE))


def game_streams(seed: int, games: np.ndarray | range, rules: str | R.Rules = "standard") -> np.ndarray:
    """The dice streams of numbered games under ``seed``: int8 ``(len(games), *rules.stream_shape)``.

    Game ``g``'s stream depends only on ``(seed, g)``, never on how many games are played or in which
    batch, so every policy evaluated with the same seed meets the same dice as far as its choices allow.
    """
    shape = R.get_rules(rules).stream_shape
    games = np.asarray(games, dtype=np.int64)
    streams = np.empty((len(games), *shape), dtype=np.int8)
    for i, g in enumerate(games):
        rng = np.random.Generator(np.random.PCG64([int(seed), int(g)]))
        streams[i] = rng.integers(1, R.NUM_FACES + 1, size=shape, dtype=np.int8)
    return streams
