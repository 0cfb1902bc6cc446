"""``win``: plays to finish first, not to maximise its expected total (one step of policy improvement).

At a table the goal is the highest total. At each decision the agent takes the action that maximises its
probability of winning (a tie among ``m`` leaders counts ``1 / m``), assuming that from then on everyone,
itself included, plays the solver's expected-score policy. Under that assumption every final total is a
known distribution (:mod:`yacht_env.distributions`): the agent's own is its total plus the points to come
after the action, an opponent's is its total plus ``D[its open mask]`` (opponents are between turns while
the agent is on turn), and the players' dice are independent, so the win probability is exact:

* ``F(v)``, the win probability if the agent finishes on ``v``: with ``a_j = P(opponent j < v)`` and
  ``b_j = P(opponent j = v)``, ``E[1 / (1 + ties) * [no opponent above v]] = integral over u in [0, 1] of
  prod_j (a_j + b_j u)`` (since ``1 / (1 + m) = integral of u^m``): a polynomial in ``u`` integrated term by
  term (for two players ``a + b / 2``);
* a pick of category ``k`` scoring ``s``: ``H_k[s] = sum over y of D[O without k][y] F(total + s + y)``;
* a keep: the win probabilities of the turn's states under the solver's policy (picks read ``H``, keeps
  mix with ``TRANSITION``), two matrix products per decision.

The only approximation is the assumption about the future (the agent will in fact keep playing to win,
which only helps it; opponents that do not play the solver's policy make the estimate wrong, not the
play illegal). All games of a batch are evaluated together (about 300k multiply-adds each per decision).
Actions whose win probabilities are equal (within ``1e-12``; say a won or a lost game) go to the solver's
best action, so a decided game is finished with the most points.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from agents.base import Agent
from yacht_env import rules as R
from yacht_env import solver as S
from yacht_env.distributions import score_distributions
from yacht_env.encoding import MultiplayerEncoder

MAX_PLAYERS = 10
TIE_TOLERANCE = 1e-12  # win probabilities closer than this are equal: the solver's action is taken
_CHUNK = 512  # games evaluated together: bounds the (games, categories, width) temporaries to ~15 MB


class WinAgent(Agent):
    """Maximises the probability of finishing first at a table of ``players``, from the table view.

    Attributes:
        table_players: The table size; the agent acts on :class:`~yacht_env.encoding.MultiplayerEncoder`
            observations of its seat.
        distributions: The :class:`~yacht_env.distributions.ScoreDistributions` of the solver's policy.
    """

    def __init__(self, rules: str | R.Rules = "standard", players: int = 2, name: str = "win") -> None:
        if not R.is_int(players) or not 2 <= players <= MAX_PLAYERS:
            raise ValueError(f"players must be an int in 2..{MAX_PLAYERS}, got {players!r}")
        super().__init__(name, rules)
        self.table_players = int(players)
        self.view = MultiplayerEncoder(self.rules, self.table_players)
        self.distributions = score_distributions(self.rules)
        dist = self.distributions
        c = self.rules.num_categories
        self._bits = 1 << np.arange(c)
        self._open_bits = R.open_bits(c)
        self._score = R.score_table(self.rules).astype(np.intp)
        self._top = int(self._score.max())
        self._cdf = np.minimum(np.cumsum(dist.start, axis=1), 1.0)  # P(points to come <= x)
        self._cdf[:, -1] = 1.0  # exactly 1 past the support, whatever the float rounding
        # The solver's policy split into its picks (category, or -1 for a keep) and keeps (kept multiset).
        policy = dist.policy.astype(np.intp)
        rolls = np.arange(R.NUM_ROLLS)
        self._pick = np.where(policy >= R.PICK_OFFSET, policy - R.PICK_OFFSET, -1)
        self._kept = S._KEEP_PROPER[rolls, np.where(policy >= R.PICK_OFFSET, 0, policy)]
        self._pick_score = self._score[rolls, np.maximum(self._pick, 0)]
        self._transition_t = np.ascontiguousarray(R.TRANSITION[: S.NUM_PROPER_KEPT].T)  # (252, 210)
        # Each category's possible scores lie on an arithmetic progression (k * 0..5, 0 and 30, 5..30, ...):
        # H is computed only there, a sixth of the (C, top + 1) table, through strided views (no copies).
        self._score_slices = []
        for k in range(c):
            values = np.unique(self._score[:, k])
            step = int(np.gcd.reduce(np.diff(values))) if len(values) > 1 else 1
            self._score_slices.append(slice(int(values[0]), int(values[-1]) + 1, step))
        # The most points still to come with open mask O: the distributions' support ends there.
        self._max_rest = R.open_bits(c) @ self._score.max(axis=0)
        # P(points to come <= x - 1) at column x, for x = 0..width: a single gather gives both < and <=.
        self._cdf_before = np.concatenate([np.zeros((len(self._cdf), 1)), self._cdf], axis=1)

    # ------------------------------------------------------------------------------------------------
    def read(self, observations: np.ndarray) -> tuple[np.ndarray, ...]:
        """The state behind table observations ``(N, size)``.

        Returns:
            ``(roll, rolls_left, open_mask, total, opponent_open, opponent_total)``: ``(N,)`` intp each for the
            agent's own game, ``(N, P - 1)`` intp for the opponents in seat order after it.
        """
        view, c, p = self.view, self.rules.num_categories, self.table_players
        solo = view.solo.size
        roll, rolls_left, open_mask = self.encoder.decode(observations[:, :solo])
        parts = observations[:, solo : solo + (p - 1) * view.opponent_size].reshape(len(observations), p - 1, -1)
        opponent_open = (parts[..., :c] > 0.5) @ self._bits
        opponent_total = np.rint(parts[..., c] * view.max_total).astype(np.intp)
        total = np.rint(observations[:, solo + (p - 1) * view.opponent_size] * view.max_total).astype(np.intp)
        return roll, rolls_left, open_mask, total, opponent_open, opponent_total

    def final_win_probability(self, opponent_open: np.ndarray, opponent_total: np.ndarray) -> np.ndarray:
        """``(N, width)``: the win probability (ties split) if the agent's final total is ``v = 0..width-1``.

        Args:
            opponent_open, opponent_total: ``(N, P - 1)`` ints: each opponent's open mask (at a turn start) and
                total; the opponents play the solver's policy to the end.
        """
        width = self.distributions.width
        columns = self._cdf_before.shape[1]
        n, opponents = opponent_open.shape
        flat = self._cdf_before.reshape(-1)
        less, equal = [], []
        for j in range(opponents):
            # Opponent j's final total is below v iff its points to come are <= v - 1 - total_j.
            start = opponent_open[:, j, None] * columns
            shift = np.arange(width) - opponent_total[:, j, None]  # v - total_j
            below = flat[start + np.clip(shift, 0, columns - 1)]
            at_most = flat[start + np.clip(shift + 1, 0, columns - 1)]
            less.append(below)
            equal.append(at_most - below)
        if opponents == 1:  # the common case, without the polynomial
            return less[0] + 0.5 * equal[0]
        coefficients = np.ones((n, width, 1))  # of prod_j (a_j + b_j u), lowest degree first
        for a, b in zip(less, equal, strict=True):
            grown = np.zeros((n, width, coefficients.shape[2] + 1))
            grown[..., :-1] += coefficients * a[..., None]
            grown[..., 1:] += coefficients * b[..., None]
            coefficients = grown
        return coefficients @ (1.0 / np.arange(1, coefficients.shape[2] + 1))

    def win_probabilities(self, roll, rolls_left, open_mask, total, opponent_open, opponent_total) -> np.ndarray:
        """Per action, the win probability if it is taken and everyone plays the solver's policy after.

        Args:
            roll, rolls_left, open_mask, total: ``(N,)`` ints: the agent's state and total.
            opponent_open, opponent_total: ``(N, P - 1)`` ints: the opponents' open masks and totals.

        Returns:
            ``(N, 44)`` float64; ``-inf`` for illegal actions (the env's legality, canonical keeps).
        """
        roll, rolls_left, open_mask, total = (
            np.asarray(x, dtype=np.intp).reshape(-1) for x in (roll, rolls_left, open_mask, total)
        )
        opponent_open = np.asarray(opponent_open, dtype=np.intp).reshape(len(roll), -1)
        opponent_total = np.asarray(opponent_total, dtype=np.intp).reshape(len(roll), -1)
        out = np.empty((len(roll), self.rules.num_actions))
        # Chunks of similar open masks: each chunk's sums run to its own largest points to come.
        order = np.argsort(self._max_rest[open_mask], kind="stable")
        for first in range(0, len(roll), _CHUNK):
            at = order[first : first + _CHUNK]
            out[at] = self._win_probabilities(
                roll[at], rolls_left[at], open_mask[at], total[at], opponent_open[at], opponent_total[at]
            )
        return out

    def _win_probabilities(self, roll, rolls_left, open_mask, total, opponent_open, opponent_total) -> np.ndarray:
        n, full, top = len(roll), self.distributions.width, self._top
        c = self.rules.num_categories
        final = self.final_win_probability(opponent_open, opponent_total)  # (n, full) by final total
        # Own points to come never exceed the most the open categories can score: the sums stop there.
        width = int(self._max_rest[open_mask].max()) + 1
        # F(x) = final[total + x] for the agent's points to come x (clipped: past the end D is 0 anyway).
        reach = np.minimum(total[:, None] + np.arange(width + top), full - 1)
        padded = np.take_along_axis(final, reach, axis=1)  # (n, width + top)
        windows = sliding_window_view(padded, width, axis=1)  # (n, top + 1, width): window s is F(s + .)
        rest = self.distributions.start[:, :width][open_mask[:, None] & ~self._bits]  # (n, C, width): D[O - k]
        after_pick = np.zeros((n, c, top + 1))  # H_k[s], at the scores category k can make
        for k, scores in enumerate(self._score_slices):
            after_pick[:, k, scores] = np.einsum("ny,nsy->ns", rest[:, k], windows[:, scores])
        rows = np.arange(n)[:, None]
        values = np.full((n, self.rules.num_actions), -np.inf)
        picks = after_pick[rows, np.arange(c), self._score[roll]]
        values[:, R.PICK_OFFSET :] = np.where(self._open_bits[open_mask], picks, -np.inf)
        re_roll = np.flatnonzero(rolls_left > 0)
        if re_roll.size:
            one = self._turn(after_pick, re_roll, open_mask[re_roll], 0, None) @ self._transition_t
            keep = one  # (m, 210): the win probability after keeping K, with one re-roll left
            two = np.flatnonzero(rolls_left[re_roll] == 2)
            if two.size:
                rows_two = re_roll[two]
                turn_one = self._turn(after_pick, rows_two, open_mask[rows_two], 1, one[two])
                keep[two] = turn_one @ self._transition_t  # with two re-rolls left
            kept = S._KEEP_PROPER[roll[re_roll]]  # (m, 32)
            values[re_roll, : R.NUM_KEEPS] = np.take_along_axis(keep, kept, axis=1)
        legal = R.legal_action_mask(roll, rolls_left, open_mask, True, c)
        return np.where(legal, values, -np.inf)

    def _turn(
        self, after_pick: np.ndarray, rows: np.ndarray, masks: np.ndarray, t: int, keep_values: np.ndarray | None
    ) -> np.ndarray:
        """``(m, 252)``: the win probabilities of ``(O, r', t)`` under the solver's policy, for every roll.

        Picks read ``after_pick`` (``H``) at the solver's category and score; keeps read ``keep_values``
        ``(m, 210)`` (the win probabilities after each keep with ``t`` re-rolls left; ``None`` for ``t = 0``).
        """
        k = self._pick[t, masks]
        value = after_pick[rows[:, None], np.maximum(k, 0), self._pick_score[t, masks]]
        if keep_values is None:
            return value
        return np.where(k >= 0, value, np.take_along_axis(keep_values, self._kept[t, masks], axis=1))

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        roll, rolls_left, open_mask, total, opponent_open, opponent_total = self.read(observations)
        values = self.win_probabilities(roll, rolls_left, open_mask, total, opponent_open, opponent_total)
        values = np.where(action_masks, values, -np.inf)
        best = values.argmax(axis=1)
        solver = self.distributions.policy[rolls_left, open_mask, roll].astype(np.intp)
        rows = np.arange(len(best))
        # Equal chances (a decided game, or a choice that cannot matter): the solver's action, the most points.
        keep_solver = values[rows, solver] >= values[rows, best] - TIE_TOLERANCE
        return np.where(keep_solver, solver, best)
