"""The two-player solve's level kernels: a level's values from the level below, chunk by chunk, on an array backend.

Every solution is a few tables of level values, P(the mover wins; ties count half) at every ``(mover, other,
lead)`` of the level's windows, and each kind of solve is a list of steps (:data:`KINDS`), each writing one table's
level ``n`` from another table's level ``n - 1`` by one of three turns (:class:`Turn`):

* ``equilibrium``: both players maximise their chance to win. One table, ``E``: ``E_n = maxturn(E_{n-1})``.
* ``best_response``: a responder maximises against a fixed solo policy. ``A`` where the responder moves, ``B``
  where the policy moves: ``A_n = maxturn(B_{n-1})`` and ``B_n = policyturn(A_{n-1})``, the average over how the
  policy's turn from its open mask ends (box and points: it does not look at the lead).
* ``evaluation``: the equilibrium's strategy against a fixed solo policy, valued exactly. ``P`` where the
  equilibrium's player moves, ``Q`` where the policy moves: ``P_n`` is the turn ``maxturn(E_{n-1})`` plays (every
  keep and pick as the equilibrium takes them) valued by ``Q_{n-1}``, and ``Q_n = policyturn(P_{n-1})``.

A chunk is a run of states of one mover (so they share the boxes a pick can take), its columns the ``(state,
lead)`` of their windows; the turn is :mod:`yacht_env.duel.turn`'s picks then :func:`yacht_env.turn_rows.turn_values`.
The kernels take an array backend (:class:`~yacht_env.turn_rows.Arrays`): numpy's by default, a device's from
:func:`yacht_env.duel.accel.arrays_for`; the recurrence is the same code on both.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from yacht_env import rules as R
from yacht_env.duel.layout import Layout, Level, chunks
from yacht_env.duel.turn import after_picks, best_of_rows, pick_rows
from yacht_env.turn_rows import NUMPY, Arrays, turn_values

CHUNK_COLUMNS = 768  # columns (state, lead) per chunk on numpy: a chunk's rows stay in the core's cache


class Turn(enum.IntEnum):
    """How the mover plays a step's turn."""

    MAX = 0  #: maximises its chance to win over the level below
    POLICY = 1  #: plays the fixed solo policy: the average over how its turn ends (``outcomes``)
    FOLLOW = 2  #: plays the strategy table's max turn, valued by the level below


@dataclass(frozen=True)
class Step:
    """One table of a solve, level by level.

    Attributes:
        table: The table written (its files are ``<table><n:02d>``).
        below: The table whose level ``n - 1`` the turn's picks lead to.
        turn: How the mover plays.
    """

    table: str
    below: str
    turn: Turn


#: The kinds of solve: their steps, in the order a level computes them (the first is the solution's own player).
KINDS: dict[str, tuple[Step, ...]] = {
    "equilibrium": (Step("E", "E", Turn.MAX),),
    "best_response": (Step("A", "B", Turn.MAX), Step("B", "A", Turn.POLICY)),
    "evaluation": (Step("P", "Q", Turn.FOLLOW), Step("Q", "P", Turn.POLICY)),
}
#: The tables of each kind.
TABLES = {kind: tuple(step.table for step in steps) for kind, steps in KINDS.items()}


def columns(level: Level, s0: int, s1: int, xp: Arrays = NUMPY) -> tuple:
    """``(mover, other, lead)`` ``(columns,)`` int64 of the states ``[s0, s1)`` of ``level``, window by window."""
    low, length, offset, movers, others = (
        xp.table(a) for a in (level.low, level.length, level.offset, level.movers, level.others)
    )
    state = xp.repeat(xp.arange(s0, s1), length[s0:s1])
    position = xp.arange(0, len(state)) - (offset[state] - offset[s0])
    return movers[state // len(level.others)], others[state % len(level.others)], low[state] + position


def _open_rows(layout: Layout, level: Level, s0: int, xp: Arrays):
    """``of_roll`` (:class:`~yacht_env.duel.turn.PickRows`) of the boxes the chunk's mover has open."""
    mask = int(level.movers[s0 // len(level.others)])
    is_open = [c for c in range(layout.rules.num_categories) if mask >> c & 1]
    return xp.table(pick_rows(layout.rules).of_roll)[:, is_open]


def max_turn(layout: Layout, level: Level, below, s0: int, s1: int, xp: Arrays = NUMPY):
    """The values of states ``[s0, s1)`` (one mover) when the mover maximises its chance to win."""
    picks = after_picks(layout, level.n, below, *columns(level, s0, s1, xp), xp)
    return turn_values(best_of_rows((picks,), _open_rows(layout, level, s0, xp), xp), R.ROLLS_PER_TURN, xp)


def policy_turn(layout: Layout, level: Level, below, s0: int, s1: int, outcomes: np.ndarray, xp: Arrays = NUMPY):
    """The values of states ``[s0, s1)`` (one mover) when the mover plays the fixed policy whose turn from open
    mask ``O`` ends scoring ``s`` in box ``k`` with probability ``outcomes[O, k, s]``.
    """
    picks = after_picks(layout, level.n, below, *columns(level, s0, s1, xp), xp)
    rows = pick_rows(layout.rules)
    weight = outcomes[int(level.movers[s0 // len(level.others)]), rows.category, rows.points]
    used = np.flatnonzero(weight > 0)
    return xp.asarray(weight[used], picks.dtype) @ picks[xp.asarray(used)]


def follow_turn(layout: Layout, level: Level, strategy, below, s0: int, s1: int, xp: Arrays = NUMPY):
    """The values of states ``[s0, s1)`` (one mover) when the mover plays the max turn of ``strategy`` (a table's
    level below, e.g. the equilibrium's) and the game goes on as ``below`` says (another table's level below).
    """
    mover, other, lead = columns(level, s0, s1, xp)
    decide = after_picks(layout, level.n, strategy, mover, other, lead, xp)
    value = xp.astype(after_picks(layout, level.n, below, mover, other, lead, xp), decide.dtype)
    return turn_values(best_of_rows((decide, value), _open_rows(layout, level, s0, xp), xp), R.ROLLS_PER_TURN, xp)


def solve_level(
    layout: Layout,
    n: int,
    below: np.ndarray | None,
    turn: Turn = Turn.MAX,
    *,
    outcomes: np.ndarray | None = None,
    strategy: np.ndarray | None = None,
    dtype=np.float32,
    out: np.ndarray | None = None,
    runs: list[tuple[int, int]] | None = None,
    xp: Arrays = NUMPY,
) -> np.ndarray:
    """Level ``n``'s values (flat, ``dtype``) from level ``n - 1``'s (``None`` for level 0), in this process.

    Args:
        layout: The game's layout.
        n: The level.
        below: Level ``n - 1``'s values of the table the picks lead to (float, or uint16 as stored).
        turn: How the mover plays.
        outcomes: The fixed policy's turn outcomes (:attr:`Turn.POLICY`), as
            :func:`~yacht_env.distributions.turn_outcomes`.
        strategy: Level ``n - 1`` of the table whose max turn is played (:attr:`Turn.FOLLOW`).
        dtype: The values' type where ``out`` is not given.
        out: Receives the values (e.g. the level's memory-mapped file).
        runs: The states' spans to compute (:func:`~yacht_env.duel.layout.chunks`); default: every chunk of
            :data:`CHUNK_COLUMNS`.
        xp: The array backend the kernels compute on.

    Raises:
        ValueError: a policy's turn without ``outcomes``, or a followed one without ``strategy``.
    """
    level = layout.level(n)
    out = np.empty(level.num_values, dtype=dtype) if out is None else out
    if n == 0:
        out[:] = 0.5  # both sheets full, level: a tie
        return out
    turn = Turn(turn)
    needs = {Turn.POLICY: ("outcomes", outcomes), Turn.FOLLOW: ("strategy", strategy)}.get(turn)
    if needs is not None and needs[1] is None:
        raise ValueError(f"a {turn.name.lower()} turn needs its {needs[0]}")
    below = xp.asarray(below)
    plan = xp.asarray(strategy) if turn == Turn.FOLLOW else None
    for s0, s1 in chunks(level, CHUNK_COLUMNS) if runs is None else runs:
        if turn == Turn.MAX:
            value = max_turn(layout, level, below, s0, s1, xp)
        elif turn == Turn.POLICY:
            value = policy_turn(layout, level, below, s0, s1, outcomes, xp)
        else:
            value = follow_turn(layout, level, plan, below, s0, s1, xp)
        out[level.offset[s0] : level.offset[s1]] = xp.host(value)
    return out
