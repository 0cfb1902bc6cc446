"""The head to head's tables: who sits where with which dice in the ``P * P`` games of a deal (:func:`seating`,
:func:`table_streams`), and a batch of tables played to the end, all stepping together (:func:`play_tables`).

The rotations are described in :mod:`yacht_lab.measure.head_to_head`, which plays every lineup of its agents with
these and counts the outcomes; the yardstick and the JAX self-play use them too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from yacht_agents.base import Agent
from yacht_env import rules as R
from yacht_env.encoding import MultiplayerEncoder, ObservationEncoder
from yacht_env.game import TableState, game_streams
from yacht_env.opponents import act_at_tables


def seating(num_players: int) -> tuple[np.ndarray, np.ndarray]:
    """Who sits where in the ``P * P`` games of a deal, game ``d * P + r`` (dice rotation ``d``, seat rotation ``r``).

    Returns:
        ``(agent_at, stream_at)``, both intp ``(P * P, P)``: the agent (its index at the table) at each seat,
        and the stream of the deal that seat plays (the stream that agent holds).
    """
    p = num_players
    d, r, seat = np.meshgrid(np.arange(p), np.arange(p), np.arange(p), indexing="ij")
    agent_at = (seat - r) % p
    return agent_at.reshape(p * p, p), ((agent_at + d) % p).reshape(p * p, p)


def table_streams(seed: int, deals: range, num_players: int, rules: str | R.Rules = "standard") -> np.ndarray:
    """The dice of every seat of every game of ``deals``: int8 ``(len(deals) * P * P, P, *rules.stream_shape)``.

    Game ``k = (deal - deals.start) * P * P + d * P + r``, seat ``s``: stream ``stream_at[d * P + r, s]`` of the
    deal (see :func:`seating`).
    """
    p = num_players
    shape = R.get_rules(rules).stream_shape
    streams = game_streams(seed, range(deals.start * p, deals.stop * p), rules).reshape(len(deals), p, *shape)
    _, stream_at = seating(p)
    return streams[:, stream_at].reshape(len(deals) * p * p, p, *shape)


def play_tables(
    agents: Sequence[Agent],
    dice: np.ndarray,
    agent_at: np.ndarray,
    rules: str | R.Rules = "standard",
    round_starts: np.ndarray | None = None,
    on_turns_done: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Plays one game at each of ``len(dice)`` tables to the end, all tables stepping together.

    Args:
        agents: The ``P`` agents of the table.
        dice: int8 ``(N, P, *rules.stream_shape)``: each seat's dice stream.
        agent_at: intp ``(N, P)``: the index into ``agents`` of the agent at each seat.
        rules: The rules played.
        round_starts: If given, an int ``(N, C, 2, P)`` array filled in place: at the start of round ``k``
            (``k = 0..C-1``, every player at a turn start after ``k`` picks each), ``[:, k, 0]`` every seat's open
            mask and ``[:, k, 1]`` its total.
        on_turns_done: Called with the number of turns that ended (picks made) at each step: progress within tables
            that all end together (for a progress bar).

    Returns:
        The final totals by seat, int ``(N, P)``.

    Raises:
        ValueError: an agent chose an illegal action (naming it, the table and the action).
    """
    rules = R.get_rules(rules)
    n, p = agent_at.shape
    table = TableState(rules, p, n)
    table.start(R.prefix_codes(dice.reshape(n, p, -1, R.NUM_DICE)))
    games = table.players
    solo, view = ObservationEncoder(rules), MultiplayerEncoder(rules, p)
    playing = np.ones(n, dtype=bool)
    if round_starts is not None:
        filled = rules.num_categories - R.open_bits(rules.num_categories).sum(axis=1)  # per open mask
        round_starts[:, 0, 0], round_starts[:, 0, 1] = rules.all_open, 0
    while playing.any():
        at = np.flatnonzero(playing)
        actions = np.zeros(n, dtype=np.intp)
        actions[at] = act_at_tables(agents, agent_at[at, table.current[at]], table, at, solo, view)
        last_seat = table.current == p - 1
        if on_turns_done is not None:
            on_turns_done(int((actions[at] >= R.PICK_OFFSET).sum()))
        _, over = table.play(actions, playing)
        if round_starts is not None:  # the last seat's pick ends a round: every player is at a turn start
            ended = np.flatnonzero(playing & last_seat & (actions >= R.PICK_OFFSET) & ~over)
            if ended.size:
                masks = games.open_mask.reshape(n, p)[ended]
                k = filled[masks[:, -1]]
                round_starts[ended, k, 0] = masks
                round_starts[ended, k, 1] = table.totals()[ended]
        playing &= ~over
    return table.totals().astype(np.int64)
