"""The win agent's model under the family's rules (Yahtzee, Yatzy, Clubhouse): a turn's win probabilities from the
family's score distributions (:mod:`yacht_env.family_recurrence`).

:mod:`yacht_agents.win` states the model: every player plays the solver's policy after the decision, so each final
total is known in distribution, and the agent takes the action most likely to finish first. Under the family's rules
a turn start is ``(open_mask, upper, armed)``, and a pick's outcome (:class:`~yacht_env.family_states.
Outcomes`: its box and a class of alike rolls, or a five of a kind) earns points that include the bonuses and leaves
a turn start of its own. So for a context (the agent's turn start and total, each opponent's turn start and total):

* ``F(x)``, the win probability if the agent's points from here on total ``x`` (each opponent's final total: its
  total plus the points its turn start's distribution gives it; :func:`yacht_agents.win.first_place`);
* per pick outcome ``o`` of an open box, earning ``s`` and leaving the row ``D``: ``H[o] = sum over y of D[y]
  F(s + y)``. The rows are stored as cumulative distributions ``C`` (``P(X <= y)``, from ``off`` to ``end``, where
  ``C = 1``), so it is summed by parts: ``H[o] = F(s + end) - sum over y in off .. end - 1 of C[y] (F(s + y + 1) -
  F(s + y))``. A decided game (``F`` flat over the row) is then exactly 0 or 1, as with Yacht's rules;
* the keeps: the turn under the solver's policy (stored with the distributions), one die at a time.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from yacht_agents.win_model import after_keeps, distinct_rows, first_place
from yacht_env import rules as R
from yacht_env.encoding import TableView
from yacht_env.family_recurrence import FamilyDistributions
from yacht_env.turn_rows import KEEP_PROPER, NUM_PROPER_KEPT

_CHUNK = 256  # contexts evaluated together
_THREADS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
_PAIR_VALUES = 1 << 21  # pair x column values gathered at once: ~16 MB per array


@functools.lru_cache(maxsize=4)
def _below(longest: int) -> np.ndarray:
    """``(longest + 1, longest)`` float32, read only: row ``c`` is 1 in the columns below ``c``, 0 from ``c`` on."""
    below = np.tril(np.ones((longest + 1, longest), dtype=np.float32), -1)
    below.flags.writeable = False
    return below


class FamilyModel:
    """A :class:`~yacht_agents.win.WinAgent`'s values under a family's rules, per context.

    Args:
        distributions: The rules' :class:`~yacht_env.family_recurrence.FamilyDistributions`.
    """

    def __init__(self, distributions: FamilyDistributions):
        self.distributions = distributions
        rules = distributions.rules
        self.rules = rules
        self.outcomes = distributions.outcomes
        self.of_pick = self.outcomes.of_pick.astype(np.intp)
        self.bonus_width = self.outcomes.picks.width
        # The distributions' own arrays, read only and shared by every agent over them (no copies).
        self._rows = distributions.ids.reshape(-1)  # flat state open_mask * width + bonus -> row
        self._offset, self._length, self._start = distributions.offset, distributions.length, distributions.start
        self._cdf = distributions.cdf
        self._roll_as_kept = R.KEEP[:, R.KEEP_ALL].astype(np.intp)
        self._rolls = np.arange(R.NUM_ROLLS)
        self._below = _below(int(self._length.max()))

    def row(self, open_mask: np.ndarray, bonus: np.ndarray) -> np.ndarray:
        """The distributions' rows of turn starts ``(open_mask, bonus)`` (``bonus = upper * armed_states + armed``)."""
        return self._rows[np.asarray(open_mask) * self.bonus_width + np.asarray(bonus)]

    def contexts(self, open_mask, total, opponent_open, opponent_total, upper, armed, opponent_upper, opponent_armed):
        """``(N, 3 + 3 (P - 1))`` intp: the contexts :meth:`evaluate` takes (``bonus = upper * armed_states + armed``),
        from :meth:`~yacht_agents.win.WinAgent.win_probabilities`' arguments (``(N,)`` and ``(N, P - 1)`` ints).
        """
        armed_states = self.rules.bonus_shape[1]
        bonus = np.broadcast_to(np.asarray(upper) * armed_states + np.asarray(armed), open_mask.shape)
        others = np.broadcast_to(
            np.asarray(opponent_upper) * armed_states + np.asarray(opponent_armed), opponent_open.shape
        )
        columns = [open_mask[:, None], bonus[:, None], total[:, None], opponent_open, others, opponent_total]
        return np.concatenate(columns, axis=1).astype(np.intp)

    def bonuses(self, view: TableView) -> dict[str, np.ndarray]:
        """The bonus states of a table view (:class:`~yacht_env.encoding.TableView`), as
        :meth:`~yacht_agents.win.WinAgent.win_probabilities` takes them.
        """
        return {
            "upper": view.upper,
            "armed": view.armed,
            "opponent_upper": view.opponent_upper,
            "opponent_armed": view.opponent_armed,
        }

    def base_actions(self, view: TableView) -> np.ndarray:
        """``(N,)`` intp: the solver's action at each state of a table view (the stored policy)."""
        rows = self.row(view.open_mask, view.upper * self.rules.bonus_shape[1] + view.armed)
        return np.asarray(self.distributions.policy[rows, view.rolls_left, view.roll]).astype(np.intp)

    def _cdf_window(self, rows: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
        """``(n, count)`` float64: ``P(points to come <= first + j)``, ``j = 0 .. count - 1``, of ``rows`` ``(n,)``."""
        at = (first - self._offset[rows])[:, None] + np.arange(count)
        inside = np.minimum(np.maximum(at, 0), (self._length[rows] - 1)[:, None])
        return np.where(at >= 0, self._cdf[self._start[rows, None] + inside], 0.0)

    def evaluate(self, contexts: np.ndarray, players: int, wanted=None) -> tuple[np.ndarray, np.ndarray]:
        """Per context, ``H`` of the pick outcomes the solver's policy takes in its turn, and the keeps' values.

        Args:
            contexts: ``(n, 3 + 3 (P - 1))`` ints: the agent's ``open_mask, bonus, total``, then the opponents' open
                masks, bonus states and totals (``P - 1`` columns each).
            players: ``P``.
            wanted: ``(context, outcome)`` int arrays: more pick outcomes to compute (a decision's own picks).

        Returns:
            ``(after_pick, keep)``: ``(n, outcomes)``, the win probability after each pick outcome the solver's policy
            takes from the context's turn start and each wanted (NaN for the others: :meth:`fill` computes those)
            and ``(n, 2, 210)``, after keeping ``KEPT[K]`` with 1 or 2 re-rolls left.
        """
        n = len(contexts)
        after_pick = np.full((n, self.outcomes.count), np.nan)
        keep = np.empty((n, R.MAX_ROLLS_LEFT, NUM_PROPER_KEPT))
        actions = np.asarray(self.distributions.policy[self.row(contexts[:, 0], contexts[:, 1])]).astype(np.intp)
        pick = actions[:, :2] >= R.PICK_OFFSET  # no re-roll left, one: the solver's pick's outcome, -1 for a keep
        taken = np.where(pick, self.of_pick[self._rolls, np.where(pick, actions[:, :2] - R.PICK_OFFSET, 0)], -1)
        marks = self._marks(taken.reshape(n, -1))
        if wanted is not None:
            marks[wanted] = True
        context, outcome = np.nonzero(marks)
        self._fill(after_pick, contexts, context, outcome, players)
        index = np.arange(n)[:, None]
        value = after_pick[index, taken[:, 0]]  # (n, 252): no re-roll left, the solver's pick
        for t in range(1, R.ROLLS_PER_TURN):
            keep[:, t - 1] = after_keeps(value, self._roll_as_kept)
            if t == R.MAX_ROLLS_LEFT:
                break
            kept = KEEP_PROPER[self._rolls, np.where(taken[:, t] < 0, actions[:, t], 0)]
            kept = np.take_along_axis(keep[:, t - 1], kept, axis=1)
            value = np.where(taken[:, t] >= 0, after_pick[index, taken[:, t]], kept)
        return after_pick, keep

    def fill(self, after_pick: np.ndarray, contexts: np.ndarray, context, outcome, players: int) -> None:
        """Computes the entries of ``after_pick`` ``(u, outcomes)`` at pairs ``(context, outcome)`` that are still NaN
        (outcomes a decision asks for beyond the solver's own picks), in place.
        """
        todo = np.isnan(after_pick[context, outcome])
        if todo.any():
            marks = np.zeros(after_pick.shape, dtype=bool)
            marks[context[todo], outcome[todo]] = True
            context, outcome = np.nonzero(marks)
            self._fill(after_pick, contexts, context, outcome, players)

    def _marks(self, outcomes: np.ndarray) -> np.ndarray:
        """``(n, count)`` bool: which outcome ids each row of ``outcomes`` ``(n, m)`` names (-1: none)."""
        marks = np.zeros((len(outcomes), self.outcomes.count + 1), dtype=bool)
        marks[np.arange(len(outcomes))[:, None], outcomes] = True  # -1 marks the last column, dropped
        return marks[:, :-1]

    def _fill(self, after_pick, contexts, context, outcome, players) -> None:
        """``after_pick[context, outcome] = H`` for pairs of contexts and outcomes (``context`` ascending), in chunks of
        contexts, on two threads (numpy lets go of the GIL in the gathers and sums).
        """
        opponents = players - 1
        bounds = np.searchsorted(context, np.arange(0, len(contexts) + _CHUNK, _CHUNK))
        spans = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if lo < hi]

        def work(span: tuple[int, int]) -> None:
            lo, hi = span
            at = np.unique(context[lo:hi])
            c = contexts[at]
            local = np.searchsorted(at, context[lo:hi])
            opponent_rows = self.row(c[:, 3 : 3 + opponents], c[:, 3 + opponents : 3 + 2 * opponents])
            after_pick[context[lo:hi], outcome[lo:hi]] = self._after_pick(
                c[:, 0], c[:, 1], c[:, 2], opponent_rows, c[:, 3 + 2 * opponents :], local, outcome[lo:hi]
            )

        if len(spans) < 2 or _THREADS == 1:
            for span in spans:
                work(span)
            return
        with ThreadPoolExecutor(_THREADS) as pool:
            list(pool.map(work, spans))

    def start_chances(self, rows: np.ndarray, totals: np.ndarray, placing: float = 0.0) -> np.ndarray:
        """``(m,)``: the first seat's chance of finishing first (ties split) at tables of turn starts, ``rows`` (the
        distributions' rows, :meth:`row`) and ``totals`` ``(m, P)`` ints each, if every seat plays the distributions'
        policy to the end, the dice independent; with ``placing`` ``w``, that chance weighs ``1 - w`` and the
        expected fraction of the opponents it finishes ahead of (ties half: each opponent's two-seat race) ``w``.
        """
        rows, totals = np.asarray(rows, dtype=np.intp), np.asarray(totals, dtype=np.intp)
        chance = self._race(rows, totals, list(range(1, rows.shape[1])))
        if placing and rows.shape[1] > 2:  # at two seats the race is the placing's
            ahead = [self._race(rows, totals, [j]) for j in range(1, rows.shape[1])]
            chance = (1.0 - placing) * chance + placing * np.mean(ahead, axis=0)
        return chance

    def _race(self, rows: np.ndarray, totals: np.ndarray, opponents: list[int]) -> np.ndarray:
        """The first seat's chance of finishing ahead of the seats ``opponents`` (columns of ``rows`` and ``totals``).

        Rows that share those opponents (a turn's afterstates do) share one context of :meth:`_chances`: its total the
        least of theirs, each row's own points to come shifted by the rest of its total.
        """
        radix = max(len(self._offset), int(totals.max(initial=0)) + 1)
        first, inverse = distinct_rows([rows[:, j] for j in opponents] + [totals[:, j] for j in opponents], radix)
        base = np.full(len(first), np.iinfo(np.intp).max)
        np.minimum.at(base, inverse, totals[:, 0])
        shift = totals[:, 0] - base[inverse]
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(0, len(first) + _CHUNK, _CHUNK))
        out = np.empty(len(rows))
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            pairs = order[lo:hi]
            if not len(pairs):
                continue
            at = first[inverse[pairs[0]] : inverse[pairs[-1]] + 1]  # the chunk's contexts, in order
            local = inverse[pairs] - inverse[pairs[0]]
            out[pairs] = self._chances(
                base[inverse[pairs[0]] : inverse[pairs[-1]] + 1],
                rows[at][:, opponents],
                totals[at][:, opponents],
                local,
                shift[pairs],
                rows[pairs, 0],
            )
        return out

    def _after_pick(self, open_mask, bonus, total, opponent_rows, opponent_total, context, outcome) -> np.ndarray:
        """``H`` of pairs ``(context, outcome)`` ``(m,)`` of one chunk of contexts (the module docstring)."""
        points, after = self.outcomes.at(open_mask, bonus)
        return self._chances(
            total, opponent_rows, opponent_total, context, points[outcome, context], self._rows[after[outcome, context]]
        )

    def _chances(self, total, opponent_rows, opponent_total, context, shift, rest) -> np.ndarray:
        """``H`` of pairs ``(context, ...)`` ``(m,)`` of one chunk of contexts ``(total, opponent_rows,
        opponent_total)``: each pair earns ``shift`` points and goes on from the row ``rest``.
        """
        shift = np.broadcast_to(shift, np.shape(rest))
        low = shift + self._offset[rest]  # each pair's first own points to come x with C > 0
        length = self._length[rest]
        span = int((low + length).max())  # every x read: 0 .. span - 1
        # F(x) for the own points to come x = 0 .. span: each opponent's final below / on total + x.
        less, equal = [], []
        for j in range(opponent_rows.shape[1]):
            window = self._cdf_window(opponent_rows[:, j], total - 1 - opponent_total[:, j], span + 2)
            less.append(window[:, :-1])
            equal.append(window[:, 1:] - window[:, :-1])
        final = first_place(less, equal)  # (n, span + 1)
        values = final[context, low + length - 1]
        # The sum by parts, over windows of F's steps (float32, as the rows: a decided game's steps are exact zeros).
        # F steps only where an opponent's final total can land (its row's support): each pair sums over its row's
        # columns there, pairs of similar counts together.
        steps = np.diff(final, axis=1).astype(np.float32)  # (n, span)
        moves = steps != 0
        band_low = np.argmax(moves, axis=1)
        band_high = np.where(moves.any(axis=1), span - np.argmax(moves[:, ::-1], axis=1), 0)
        first = np.maximum(low, band_low[context])  # x of the first step summed
        counts = np.maximum(np.minimum(low + length - 1, band_high[context]) - first, 0)
        longest = max(int(counts.max()), 1)
        padded = np.zeros((len(steps), span + longest), dtype=np.float32)
        padded[:, :span] = steps
        first_step = context * padded.shape[1] + first
        first_value = self._start[rest] + (first - low)
        padded = padded.reshape(-1)
        order = np.argsort(counts, kind="stable")
        order = order[counts[order] > 0]
        batch = max(1, _PAIR_VALUES // longest)
        for at in range(0, len(order), batch):
            pairs = order[at : at + batch]
            shortest, columns = int(counts[pairs[0]]), int(counts[pairs[-1]])
            rises = sliding_window_view(padded, columns)[first_step[pairs]]
            if columns > shortest:  # past a pair's count: nothing to add (only there can a pair end)
                rises[:, shortest:] *= self._below[counts[pairs] - shortest, : columns - shortest]
            stored = sliding_window_view(self._cdf, columns)[first_value[pairs]]
            values[pairs] -= np.einsum("pj,pj->p", stored, rises)
        return values
