"""The game's model for planners: every action split into a decision and the dice it leaves to fall.

A planner (expectimax, MCTS with chance nodes, Stochastic MuZero) needs what OpenSpiel's games offer: which outcomes
an action leads to, with what probability, and the state each one gives. Here, from any state of the numpy core
(:class:`~yacht_env.game.GameState`: solo games; :class:`~yacht_env.game.TableState`: tables of players), one game or
a batch, for every preset:

* :func:`afterstate`: the decision taken, the dice not yet fallen (an :class:`Afterstate`). After a keep: the kept
  multiset stays and the others are to be rolled, one roll fewer left. After a pick: the box closed, its points and
  bonuses scored, and the next turn about to be rolled: the picker's own solo, the next seat's at a table (as in
  OpenSpiel's ``yacht``). After the pick that ends the game: nothing falls.
* :func:`chance_outcomes`: the outcomes with their exact probabilities in OpenSpiel's convention, a list of
  ``(outcome, probability)`` with outcomes as sorted rolls (rows of :data:`yacht_env.rules.ROLLS`), ascending;
  :func:`outcome_probabilities` as arrays (``(..., 252)``, for a batch), :func:`outcome_counts` as exact integers
  (the count of ordered dice giving each roll over ``6 ** rolled``).
* :func:`step_outcome`: the afterstate plus the dice that fell, the next decision state.

The probabilities are the rules' :data:`~yacht_env.rules.TRANSITION` (the kept multiset -> roll table the solver
reads), as integers. The transition is the core's own: :func:`afterstate` plays the action on a copy through
:meth:`GameState.play <yacht_env.game.GameState.play>`, so scoring, bonuses and jokers are not written twice, and
:func:`step_outcome` sets the roll of the seat whose dice fall (:meth:`GameState.set_roll
<yacht_env.game.GameState.set_roll>`) whatever the dice stream holds. Stepping by the outcome the stream's dice give
is therefore exactly the core's step (``tests/test_chance.py`` checks it, and that the probabilities match the envs'
sampled frequencies). One caveat at a table: the core deals a picker's next first roll from its stream as soon as it
picks, so a waiting player's roll is already showing; to the model that roll has not fallen (it is the chance outcome
of the previous seat's pick), and nothing depends on it until then.

Pure numpy, like the rules and the game core.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from yacht_env import rules as R
from yacht_env.game import GameState, TableState

#: ``KEPT_SIZE[K]``: how many dice kept multiset ``KEPT[K]`` holds.
KEPT_SIZE = np.array([len(kept) for kept in R.KEPT], dtype=np.intp)
KEPT_SIZE.flags.writeable = False
#: ``DENOMINATOR[K]``: ``6 ** (5 - KEPT_SIZE[K])``, the ordered outcomes of the dice re-rolled around ``KEPT[K]``.
DENOMINATOR = R.NUM_FACES ** (R.NUM_DICE - KEPT_SIZE)
DENOMINATOR.flags.writeable = False
#: ``OUTCOME_COUNTS[K, r]``: how many of those ordered outcomes give roll ``r`` (int64 ``(462, 252)``): the rules'
#: ``TRANSITION`` times ``DENOMINATOR``, exact.
OUTCOME_COUNTS = np.rint(R.TRANSITION * DENOMINATOR[:, None]).astype(np.int64)
OUTCOME_COUNTS.flags.writeable = False
NO_CHANCE = -1  # an afterstate's ``kept`` where nothing falls

State = GameState | TableState


@dataclass
class Afterstate:
    """A decision taken, the dice it leaves not yet fallen: one game (ints) or a batch (arrays, one entry per game).

    Attributes:
        state: The position after the action (a copy): the box closed and scored, turns and seats moved on, rolls
            left counted down. The roll of ``seat`` there is a placeholder (what its dice stream holds) until
            :func:`step_outcome` sets it.
        kept: Index in :data:`yacht_env.rules.KEPT` of the dice that stay (0: none, a turn's first roll);
            :data:`NO_CHANCE` (-1) where nothing falls: the action ended the game (or the game was already over).
        seat: The seat whose dice fall (0 for a :class:`~yacht_env.game.GameState`).
        points: What the action scored for the player who took it (0 for a keep), bonuses included.
    """

    state: State
    kept: int | np.ndarray
    seat: int | np.ndarray
    points: int | np.ndarray

    @property
    def is_chance(self) -> bool | np.ndarray:
        """Whether dice fall (OpenSpiel's ``is_chance_node``); False once the game is over."""
        return self.kept >= 0 if isinstance(self.kept, np.ndarray) else self.kept != NO_CHANCE


def _one(state: State) -> bool:
    return (state.num_tables if isinstance(state, TableState) else state.num_games) is None


def _solo_batch(state: State) -> tuple[GameState, np.ndarray, np.ndarray]:
    """A batch's games, the row of the game on turn in each position, and each position's last seat's row."""
    if isinstance(state, GameState):
        rows = np.arange(state.num_games)
        return state, rows, rows
    first = np.arange(state.num_tables) * state.num_players
    return state.players, first + state.current, first + state.num_players - 1


def afterstate(state: State, action) -> Afterstate:
    """The afterstate of ``action``: the decision taken, its dice not yet fallen (module docstring).

    Args:
        state: Solo games or tables of the numpy core, one or a batch; not changed.
        action: One game: an int legal in it (or a 0-d int array, as the envs' ``step`` takes it:
            :func:`yacht_env.rules.as_int`); a batch: an int array with one action per game (or table), each legal
            there; a finished game's action is ignored and nothing falls there.

    Raises:
        ValueError: one game that is over, or an action that is not legal (named, with why).
    """
    if _one(state):
        game = state.on_turn if isinstance(state, TableState) else state
        over = (state.players[-1] if isinstance(state, TableState) else state).open_mask == 0
        if over:
            raise ValueError("the game is over: no action has an afterstate")
        number = R.as_int(action)  # the envs' rule: an integer, or a 0-d integer array
        if number is None or not 0 <= number < state.rules.num_actions:
            raise ValueError(f"action {action!r} is out of range: an int in 0..{state.rules.num_actions - 1}")
        if not game.mask[number]:
            raise ValueError(
                R.describe_illegal(number, game.roll, game.rolls_left, state.rules.categories, game.open_mask)
            )
        action = number
        keep = action < R.PICK_OFFSET
        kept = int(R.KEEP[game.roll, action]) if keep else 0
        seat = state.current if isinstance(state, TableState) else 0
        after = state.copy()
        points, over = after.play(action)
        if not keep and isinstance(state, TableState):
            seat = after.current
        return Afterstate(after, NO_CHANCE if over else kept, seat, points)

    games, rows, last = _solo_batch(state)
    count = len(rows)
    actions = np.asarray(action)
    if actions.shape != (count,) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"actions must be an int array of shape ({count},), got {actions.dtype} {actions.shape}")
    actions = actions.astype(np.intp)
    if count and (actions.min() < 0 or actions.max() >= state.rules.num_actions):
        raise ValueError(f"actions must be in 0..{state.rules.num_actions - 1}")
    live = games.open_mask[last] != 0
    illegal = live & ~games.mask[rows, actions]
    if illegal.any():
        i = int(np.flatnonzero(illegal)[0])
        row = rows[i]
        why = R.describe_illegal(
            int(actions[i]), games.roll[row], games.rolls_left[row], state.rules.categories, games.open_mask[row]
        )
        raise ValueError(f"game {i}: {why}")
    keep = actions < R.PICK_OFFSET
    kept = np.where(keep, R.KEEP[games.roll[rows], actions & R.KEEP_ALL], 0).astype(np.intp)
    after = state.copy()
    points, over = after.play(actions, live)
    seat = np.zeros(count, dtype=np.intp)
    if isinstance(state, TableState):
        seat = np.where(keep, state.current, after.current)
    return Afterstate(after, np.where(live & ~over, kept, NO_CHANCE), seat, points)


def outcome_counts(after: Afterstate) -> tuple[np.ndarray, int | np.ndarray]:
    """The outcomes' exact probabilities as integers: ``(counts, denominator)``, ``counts[..., r] / denominator`` the
    chance of roll ``r``.

    Returns:
        ``counts``: int64 ``(252,)`` (one game) or ``(N, 252)``; ``denominator``: ``6 ** rolled`` (an int, or an int64
        ``(N,)``). Where nothing falls: counts all 0, denominator 1.
    """
    kept = np.asarray(after.kept)
    falls = kept >= 0
    counts = np.where(falls[..., None], OUTCOME_COUNTS[np.maximum(kept, 0)], 0)
    denominator = np.where(falls, DENOMINATOR[np.maximum(kept, 0)], 1)
    return (counts, int(denominator)) if kept.ndim == 0 else (counts, denominator)


def outcome_probabilities(after: Afterstate) -> np.ndarray:
    """The chance of each sorted roll falling, float64 ``(252,)`` (one game) or ``(N, 252)``: each row sums to 1, or
    is all 0 where nothing falls.
    """
    kept = after.kept
    if np.ndim(kept) == 0:
        return R.TRANSITION[kept].copy() if kept >= 0 else np.zeros(R.NUM_ROLLS)
    return np.where((kept >= 0)[:, None], R.TRANSITION[np.maximum(kept, 0)], 0.0)  # counts / 6 ** rolled, bit for bit


def chance_outcomes(after: Afterstate) -> list[tuple[int, float]] | list[list[tuple[int, float]]]:
    """The outcomes with their probabilities, OpenSpiel's ``chance_outcomes()``: ``[(roll, probability), ...]`` over
    the rolls that can fall (ascending sorted-roll indices), empty where nothing falls; a list of them for a batch.
    """
    counts, denominator = outcome_counts(after)
    if counts.ndim == 1:
        return [(int(r), int(counts[r]) / denominator) for r in np.flatnonzero(counts)]
    rows = zip(counts, denominator, strict=True)
    return [[(int(r), int(row[r]) / int(d)) for r in np.flatnonzero(row)] for row, d in rows]


def step_outcome(after: Afterstate, outcome) -> State:
    """The next decision state: ``after`` with ``outcome`` fallen (a copy; ``after`` is not changed).

    Args:
        after: An :func:`afterstate`.
        outcome: The sorted roll that falls (a row of :data:`yacht_env.rules.ROLLS`): an int (or a 0-d int array), or
            an int array with one per game of a batch. Ignored where nothing falls (pass ``None`` there for one game).

    Raises:
        ValueError: an outcome that is not a sorted roll, or one the kept dice cannot reach.
    """
    state = after.state.copy()
    if np.ndim(after.kept) == 0:
        if after.kept == NO_CHANCE:
            return state
        number = R.as_int(outcome)  # as an action: an integer, or a 0-d integer array
        if number is None or not 0 <= number < R.NUM_ROLLS:
            raise ValueError(f"outcome must be a sorted-roll index in 0..{R.NUM_ROLLS - 1}, got {outcome!r}")
        if not OUTCOME_COUNTS[after.kept, number]:
            raise ValueError(f"roll {R.ROLL_TUPLES[number]} cannot follow keeping {R.KEPT[after.kept]}")
        (state.players[after.seat] if isinstance(state, TableState) else state).set_roll(number)
        return state
    outcomes = np.asarray(outcome)
    kept = np.asarray(after.kept)
    if outcomes.shape != kept.shape or not np.issubdtype(outcomes.dtype, np.integer):
        raise ValueError(f"outcomes must be an int array of shape {kept.shape}, got {outcomes.dtype} {outcomes.shape}")
    falls = np.flatnonzero(kept >= 0)
    outcomes = outcomes[falls].astype(np.intp)
    if len(falls) and (outcomes.min() < 0 or outcomes.max() >= R.NUM_ROLLS):
        raise ValueError(f"outcomes must be sorted-roll indices in 0..{R.NUM_ROLLS - 1}")
    unreachable = OUTCOME_COUNTS[kept[falls], outcomes] == 0
    if unreachable.any():
        i = int(np.flatnonzero(unreachable)[0])
        raise ValueError(
            f"game {falls[i]}: roll {R.ROLL_TUPLES[outcomes[i]]} cannot follow keeping {R.KEPT[kept[falls[i]]]}"
        )
    if isinstance(state, TableState):
        state.players.set_roll(outcomes, falls * state.num_players + np.asarray(after.seat)[falls])
    else:
        state.set_roll(outcomes, falls)
    return state
