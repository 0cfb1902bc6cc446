"""The exact solver as a coach at a table: the best move and its expected final score, what a move gave away, and
at a table of two or more each move's chance of finishing first.

* :class:`Advice` is the solver's view of one decision (its action values);
* :class:`Coach` gives it (:meth:`Coach.advise`, or :meth:`Coach.advise_at` for the player on turn at a table),
  the win chances (:meth:`Coach.win_chances`, :meth:`Coach.chances_at`) and the coach's lines in words.

Both faces of the table game (:mod:`yacht_lab.table.terminal`, the terminal; :mod:`yacht_lab.table.web.games`, the
browser) ask the same coach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from yacht_env import rules as R
from yacht_env.game import TableState
from yacht_env.solver import Solution, solve
from yacht_lab.table.commands import describe


@dataclass(frozen=True)
class Advice:
    """The solver's view of one decision.

    Attributes:
        q: ``(num_actions,)`` expected points from this decision to the end of the game per action (-inf illegal).
        best: The best action (ties: the smallest index, as the optimal agent).
        total: The player's points so far; ``total + q[a]`` is the expected final score after action ``a``.
        open_mask, upper, armed: The state's sheet (the family's ``upper`` and ``armed``: 0 for Yacht), so that a
            pick is put in words with what it earns there (:func:`~yacht_lab.table.commands.describe`).
    """

    q: np.ndarray
    best: int
    total: int
    open_mask: int | None = None
    upper: int = 0
    armed: int = 0

    def describe(self, action: int, roll: int, rules: R.Rules) -> str:
        """``action`` in words in this decision's state."""
        return describe(action, roll, rules, self.open_mask, self.upper, self.armed)

    @property
    def expected_final(self) -> float:
        """The expected final total from here under the solver's play."""
        return self.total + float(self.q[self.best])

    def cost(self, action: int) -> float:
        """Expected points ``action`` gives away: best q - chosen q (0 for a best move)."""
        gap = float(self.q[self.best] - self.q[action])
        return gap if gap > 1e-9 else 0.0


class Coach:
    """The exact solver as a coach: advice before a decision, its cost after; at a table of two or more, also
    each move's chance of finishing first (:meth:`win_chances`).

    At two players the chances are exact where the two-player solve of the rules is on disk (:mod:`yacht_env.duel`:
    the chance to win if both players play perfectly after the move); elsewhere they are the win agent's estimate
    (everyone plays the solver's policy after the move), where that agent plays the rules (it refuses the ones its
    model does not cover; the coach then gives no odds). :attr:`odds_source` says which.
    """

    def __init__(self, rules: R.Rules, solution: Solution | None = None, players: int = 1, cache_dir=None) -> None:
        self.rules = rules
        self.solution = solution or solve(rules)
        self.win = None
        self.exact = None
        self.odds_source = None
        if players == 2 and not rules.has_bonuses:
            from yacht_env import duel

            try:
                self.exact = duel.solve(rules, cache_dir=cache_dir, build_missing=False)
                self.odds_source = "exact"
            except ValueError:  # not built: the win agent's estimate below
                self.exact = None
        if players >= 2 and self.exact is None:
            from yacht_agents.win import WinAgent

            try:
                self.win = WinAgent(rules, players, name="coach")
                self.odds_source = "estimate"
            except ValueError:  # rules the win agent's model does not cover
                self.win = None

    def win_chances(
        self, roll: int, rolls_left: int, open_mask: int, total: int, opponent_open, opponent_total, **bonuses
    ):
        """Per action ``(num_actions,)``: the chance of finishing first (ties split) if it is taken: exact against
        perfect play, or the win agent's model (everyone plays the solver's policy after); ``None`` for a lone
        player. Opponents are listed in seat order after the player, each at a turn start (as they are during the
        player's turn). Under the family's rules ``bonuses`` gives the bonus states (``upper``, ``armed``,
        ``opponent_upper``, ``opponent_armed``, as :meth:`yacht_agents.win.WinAgent.win_probabilities` takes them).
        """
        if self.exact is not None:  # one opponent: a number, or a list of one (as a table lists its opponents)
            other_open, other_total = (int(np.asarray(x).reshape(-1)[0]) for x in (opponent_open, opponent_total))
            return self.exact.q_values(open_mask, other_open, total - other_total, roll, rolls_left)
        if self.win is None:
            return None
        chances = self.win.win_probabilities(
            roll, rolls_left, open_mask, total, [opponent_open], [opponent_total], **bonuses
        )
        return chances[0]

    def chances_at(self, table: TableState):
        """:meth:`win_chances` of the player on turn at a one-table ``table``: its opponents are the other seats in
        turn order after it; ``None`` for a lone player or where the coach gives no odds.
        """
        if table.num_players == 1:
            return None
        seat, game = table.current, table.on_turn
        others = [table.players[(seat + j) % table.num_players] for j in range(1, table.num_players)]
        bonuses = {}
        if self.rules.has_bonuses:
            bonuses = {
                "upper": game.upper,
                "armed": game.armed,
                "opponent_upper": [[other.upper for other in others]],
                "opponent_armed": [[other.armed for other in others]],
            }
        return self.win_chances(
            game.roll,
            game.rolls_left,
            game.open_mask,
            game.total,
            [other.open_mask for other in others],
            [other.total for other in others],
            **bonuses,
        )

    def odds(self, chances, advice: Advice, roll: int) -> str:
        """``odds: win chance 48.2% with the coach's move; to win: keep 6 6 (51.0%)`` before a decision."""
        label = " (exact, against perfect play)" if self.odds_source == "exact" else ""
        line = f"odds{label}: win chance {chances[advice.best]:.1%} with the coach's move"
        best = int(np.argmax(chances))
        if chances[best] > chances[advice.best] + 1e-12:
            line += f"; to win: {advice.describe(best, roll, self.rules)} ({chances[best]:.1%})"
        return line

    def advise(
        self, roll: int, rolls_left: int, open_mask: int, total: int = 0, upper: int = 0, armed: int = 0
    ) -> Advice:
        """The solver's action values in a state (the family's with its ``upper`` and ``armed``)."""
        if self.rules.has_bonuses:
            q = self.solution.q_values(roll, rolls_left, open_mask, upper=upper, armed=armed)
        else:
            q = self.solution.q_values(roll, rolls_left, open_mask)
        return Advice(q, int(np.argmax(q)), int(total), int(open_mask), int(upper), int(armed))

    def advise_at(self, table: TableState) -> Advice:
        """:meth:`advise` for the player on turn at a one-table ``table``."""
        game = table.on_turn
        return self.advise(game.roll, game.rolls_left, game.open_mask, game.total, game.upper, game.armed)

    def hint(self, advice: Advice, roll: int) -> str:
        """``coach: keep 4 4 (+2.31 over re-rolling all); expected final score 160.12``."""
        best = advice.best
        words = advice.describe(best, roll, self.rules)
        if 0 < best < R.PICK_OFFSET:
            words += f" ({advice.q[best] - advice.q[0]:+.2f} over re-rolling all)"
        return f"coach: {words}; expected final score {advice.expected_final:.2f}"

    def verdict(self, advice: Advice, action: int, roll: int) -> str:
        """After a move: ``coach: best move (0.00 given away)`` or what it gave away and the best move."""
        cost = advice.cost(action)
        if cost == 0.0:
            return "coach: best move (0.00 given away)"
        return (
            f"coach: that gave away {cost:.2f} expected points (best: {advice.describe(advice.best, roll, self.rules)})"
        )
