"""The game of solo Yacht: the state of a batch of games and the one transition every env steps through.

:class:`GameState` is a small record per game (the sorted roll showing, rolls left, open categories, turn,
score sheet, total, the dice stream the game draws from, and the legal actions that follow from them).
:meth:`GameState.play` applies one action per game: a keep re-rolls from the game's dice stream, a pick
scores, closes the category and deals the next turn's first roll. :meth:`GameState.start` deals new
games. ``YachtEnv`` is this record with one game, ``YachtVectorEnv`` with N; the envs add only API work
(checking actions, the illegal-action policy, autoreset, observations, info, render).

This is also the one home of dice streams: :func:`draw_stream` (fresh dice from a generator),
:func:`parse_dice_stream` (the reset option ``dice_stream``) and :func:`game_streams` (the seeded
streams of numbered games that evaluations share). Like :mod:`yacht_env.rules`, pure numpy.

A game's dice stream is ``rules.stream_shape`` dice, ``(12, 3, 5)`` for Yacht: ``stream[turn, j]`` is
the row of five fresh dice behind roll ``j`` of the turn (0 = the automatic first roll); a re-roll of
``m`` dice takes the row's first ``m`` values. Inside the state it is kept as
:func:`yacht_env.rules.prefix_codes` of its rows, shape ``(rules.stream_rows, 6)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from yacht_env import rules as R


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
        total: Points scored so far.
        stream: int32 ``(..., stream_rows, 6)``: the game's dice stream as prefix codes.
        mask: bool ``(..., num_actions)``: the legal actions, recomputed wherever the state changes.
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
        if num_games is None:
            self.roll = self.rolls_left = self.open_mask = self.turn = self.total = 0
        else:
            self.roll = np.zeros(num_games, dtype=np.intp)
            self.rolls_left = np.zeros(num_games, dtype=np.intp)
            self.open_mask = np.zeros(num_games, dtype=np.intp)
            self.turn = np.zeros(num_games, dtype=np.intp)
            self.total = np.zeros(num_games, dtype=np.int32)
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
            self.roll = R.roll_from_code(stream[0, R.NUM_DICE])
            self.rolls_left, self.open_mask, self.turn, self.total = R.MAX_ROLLS_LEFT, self.rules.all_open, 0, 0
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
        self.mask[games] = R.legal_action_mask(
            self.roll[games], R.MAX_ROLLS_LEFT, self.open_mask[games], self.canonical_keeps, self.rules.num_categories
        )

    def play(self, actions, legal: np.ndarray | None = None):
        """Applies one action per game: the game's one transition.

        Args:
            actions: An int (one game) or an int array ``(N,)``; each must be legal in its game (``mask``).
                Checking is the env's job: an illegal action here is undefined.
            legal: Batch only: bool ``(N,)``, the games that take their action; the others stay as they
                are (an illegal action the env ignores, a game waiting for its reset). Default: all.

        Returns:
            ``(points, finished)``: the points each pick scored (0 for a keep) and whether the action ended
            the game; an int and a bool for one game, arrays ``(N,)`` for a batch.
        """
        if self.num_games is None:  # one game: the same steps on Python ints, without array overhead
            action = actions
            points, finished = 0, False
            if action < R.PICK_OFFSET:
                row = self.turn * R.ROLLS_PER_TURN + R.ROLLS_PER_TURN - self.rolls_left
                self.roll = R.reroll(self.roll, action, self.stream[row])
                self.rolls_left -= 1
            else:
                category = action - R.PICK_OFFSET
                points = int(self._score[self.roll, category])
                self.sheet[category] = points
                self.total += points
                self.open_mask &= ~(1 << category)
                finished = self.open_mask == 0
                if finished:
                    self.rolls_left = 0
                else:
                    self.turn += 1
                    self.roll = R.roll_from_code(self.stream[self.turn * R.ROLLS_PER_TURN, R.NUM_DICE])
                    self.rolls_left = R.MAX_ROLLS_LEFT
            self._update_mask()
            return points, finished

        index, roll, rolls_left, turn = self._index, self.roll, self.rolls_left, self.turn
        legal = np.ones(len(index), dtype=bool) if legal is None else legal
        keep = legal & (actions < R.PICK_OFFSET)
        pick = legal ^ keep
        # Keeps: re-roll from the next row of each game's dice stream (the row is clipped where nothing is
        # kept; that result is discarded below).
        row = np.minimum(turn * R.ROLLS_PER_TURN + (R.ROLLS_PER_TURN - rolls_left), self.rules.stream_rows - 1)
        rerolled = R.reroll(roll, actions & R.KEEP_ALL, self.stream[index, row])
        # Picks: score, close the category, deal the next turn's first roll.
        category = np.maximum(actions - R.PICK_OFFSET, 0)
        points = self._score[roll, category] * pick
        open_mask = self.open_mask & ~(pick.astype(np.intp) << category)
        finished = pick & (open_mask == 0)
        next_turn = pick & ~finished
        turn += next_turn
        first_row = np.minimum(turn, self.rules.num_turns - 1) * R.ROLLS_PER_TURN
        first_roll = R.roll_from_code(self.stream[index, first_row, R.NUM_DICE])

        self.roll = np.where(keep, rerolled, np.where(next_turn, first_roll, roll))
        self.rolls_left = np.where(next_turn, R.MAX_ROLLS_LEFT, rolls_left - keep) * ~finished
        self.open_mask = open_mask
        picked = np.flatnonzero(pick)
        self.sheet.reshape(-1)[picked * self.rules.num_categories + category[picked]] = points[picked]
        self.total += points
        self._update_mask()
        return points, finished

    def _update_mask(self) -> None:
        self.mask = R.legal_action_mask(
            self.roll, self.rolls_left, self.open_mask, self.canonical_keeps, self.rules.num_categories
        )


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
