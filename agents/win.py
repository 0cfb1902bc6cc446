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
  average over the re-rolled dice, one die at a time).

Everything above depends only on the *context*: the agent's open mask and total and the opponents' masks
and totals, which stay fixed for a whole turn. So the values are computed once per distinct context of a
batch (games in the same position share them) and kept for the next call (the same games' next decision
of the turn): about one evaluation per turn, ~2,000 two-player games per second against ``optimal``.

The family's rules (Yahtzee, Yatzy, Clubhouse) add the bonus states to every turn start, the agent's and each
opponent's: :mod:`yacht_agents.win_family` computes the same values there, from :mod:`yacht_env.family_recurrence`.

The only approximation is the assumption about the future: the agent will in fact keep playing to win
(against opponents that play the solver's policy that can only raise its chances, by the policy
improvement theorem), and opponents that do not play the solver's policy make the estimate wrong, never
the play illegal. Actions whose win probabilities are equal (within ``1e-12``; say a won or a lost game)
go to the solver's best action, so a decided game is finished with the most points.

**Over another policy** (``base=``): nothing above needs the policy that everyone is assumed to follow to be the
solver's. ``WinAgent(base=agent)`` reads a solo agent's whole policy (:func:`policy_table`), evaluates it exactly
(:func:`yacht_env.distributions.policy_distributions`) and plays to win assuming everyone plays *that* policy after
the decision: one step of policy iteration for the win from the agent's own play, with no solver in it. Over the
shipped score model (``PPOAgent("standard")``, which wins 48.4% against the solver) it wins about 51% against the
solver; it is the teacher of the policy-iteration distillation (:mod:`yacht_lab.training.sb3.distill`).
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from yacht_agents.base import Agent
from yacht_agents.win_model import after_keeps, cdf_before, final_win_probability
from yacht_env import rules as R
from yacht_env import solver as S
from yacht_env.distributions import ScoreDistributions, policy_distributions, score_distributions, unsupported
from yacht_env.encoding import MultiplayerEncoder

MAX_PLAYERS = 10
TIE_TOLERANCE = 1e-12  # win probabilities closer than this are equal: the base policy's action is taken
_CHUNK = 512  # games evaluated together: bounds the (games, categories, width) temporaries to ~15 MB
#: :func:`policy_tables` by distributions, while anything holds those (weak keys: a base policy's go with it).
_POLICY_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_POLICY_TABLES_LOCK = threading.Lock()


def policy_tables(distributions: ScoreDistributions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tables a :class:`WinAgent` reads its base policy from, computed once per ``distributions`` and shared (read
    only) by every agent over them, at every table size, while any holds them (some 84 MB for Yacht's rules).

    Returns:
        ``(pick, kept, pick_score, cdf)``: ``(3, num_open_masks, 252)`` intp each, the policy's category at
        ``(rolls_left, O, roll)`` (``-1`` for a keep), its kept multiset (an index into ``KEEP_PROPER``'s columns) and
        the pick's score; and :func:`cdf_before` (``P(points to come <= x - 1)`` at column ``x``: a single gather
        gives both ``<`` and ``<=``).
    """
    with _POLICY_TABLES_LOCK:
        tables = _POLICY_TABLES.get(distributions)
        if tables is None:
            policy = distributions.policy.astype(np.intp)
            rolls = np.arange(R.NUM_ROLLS)
            pick = np.where(policy >= R.PICK_OFFSET, policy - R.PICK_OFFSET, -1)
            kept = S.KEEP_PROPER[rolls, np.where(policy >= R.PICK_OFFSET, 0, policy)]
            pick_score = R.score_table(distributions.rules).astype(np.intp)[rolls, np.maximum(pick, 0)]
            tables = (pick, kept, pick_score, cdf_before(distributions))
            for table in tables:
                table.flags.writeable = False
            _POLICY_TABLES[distributions] = tables
        return tables


def policy_table(agent: Agent, rules: str | R.Rules = "standard") -> np.ndarray:
    """A solo agent's whole deterministic policy: uint8 ``(3, num_open_masks, 252)``, its action at every
    ``(rolls_left, open_mask, roll)`` (open mask 0, a finished game, holds 0), asked in 32 batches per number of
    re-rolls left (3.1 million states: about 90 s for a PPO model on one core, 3 s for greedy).

    Raises:
        ValueError: an agent of other rules, or one that sees a table (``table_players``): its moves depend on more
            than its own game; an agent that returns other than one int action per state, or an illegal one (named
            with the state).
    """
    rules = R.get_rules(rules)
    if agent.rules != rules:
        raise ValueError(f"agent {agent.name!r} plays the {agent.rules.name!r} rules, not {rules.name!r}")
    if getattr(agent, "table_players", None) is not None:
        raise ValueError(
            f"agent {agent.name!r} sees a table of {agent.table_players}: a policy table is a solo policy's"
        )
    policy = np.zeros((R.ROLLS_PER_TURN, rules.num_open_masks, R.NUM_ROLLS), dtype=np.uint8)
    masks, rolls = np.arange(1, rules.num_open_masks), np.arange(R.NUM_ROLLS)
    mask, roll = (x.reshape(-1) for x in np.meshgrid(masks, rolls, indexing="ij"))
    for t in range(R.ROLLS_PER_TURN):
        rolls_left = np.full_like(mask, t)
        for at in np.array_split(np.arange(len(mask)), 32):
            legal = R.legal_action_mask(roll[at], rolls_left[at], mask[at], True, rules.num_categories)
            obs = agent.encoder.flat(roll[at], rolls_left[at], mask[at])
            actions = _checked_actions(agent, agent.act(obs, legal), legal, roll[at], t, mask[at])
            policy[t, mask[at], roll[at]] = actions
    return policy


def _checked_actions(agent: Agent, chosen: object, legal: np.ndarray, roll, rolls_left: int, open_mask) -> np.ndarray:
    """``chosen`` as one legal int action per state (a policy table holds nothing else), or one ``ValueError``."""
    actions = np.asarray(chosen)
    if actions.shape != (len(legal),) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(
            f"agent {agent.name!r} returned {actions.dtype} {actions.shape} for {len(legal)} states, not one int "
            "action per state"
        )
    ok = (actions >= 0) & (actions < legal.shape[1])
    ok[ok] = legal[np.flatnonzero(ok), actions[ok]]
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"agent {agent.name!r} chose action {int(actions[i])}, not a legal one, at dice {R.ROLL_TUPLES[roll[i]]}, "
            f"rolls_left={rolls_left}, open_mask={int(open_mask[i]):#b}"
        )
    return actions


class WinAgent(Agent):
    """Maximises the probability of finishing first at a table of ``players``, from the table view.

    Args:
        rules, players, name: The game, the table size (2..10) and the agent's name.
        base: The policy everyone is assumed to play after the decision: ``None`` for the solver's, or a solo
            agent (one that acts on the solo observation, e.g. ``PPOAgent("standard")``), whose whole policy is
            read once (:func:`policy_table`) and evaluated exactly (:func:`~yacht_env.distributions.
            policy_distributions`). Over an agent's own policy this is one step of policy iteration for the win
            from that agent's play: nothing of the solver enters. Ties go to the base policy's action.

    Attributes:
        table_players: The table size; the agent acts on :class:`~yacht_env.encoding.MultiplayerEncoder`
            observations of its seat.
        distributions: The :class:`~yacht_env.distributions.ScoreDistributions` of the base policy.

    Raises:
        ValueError: bad ``players``, or rules with bonuses (the family's: Yahtzee, Yatzy), whose score
            distributions are not computed (:func:`yacht_env.distributions.unsupported` says why); a ``base``
            that is not a solo agent of these rules.
    """

    def __init__(
        self, rules: str | R.Rules = "standard", players: int = 2, name: str = "win", base: Agent | None = None
    ) -> None:
        if not R.is_int(players) or not 2 <= players <= MAX_PLAYERS:
            raise ValueError(f"players must be an int in 2..{MAX_PLAYERS}, got {players!r}")
        reason = unsupported(rules)
        if reason is not None:
            raise ValueError(f"the win agent's exact score distributions {reason}; play 'optimal' there instead")
        super().__init__(name, rules)
        if base is not None and self.rules.has_bonuses:
            raise ValueError(
                f"the win agent plays over another policy than the solver's under rules without bonuses only (its "
                f"policy evaluated exactly: policy_distributions); {self.rules.name} has bonuses"
            )
        self.table_players = int(players)
        self.view = MultiplayerEncoder(self.rules, self.table_players)
        if base is None:
            self.distributions = score_distributions(self.rules)
        else:
            self.distributions = policy_distributions(self.rules, policy_table(base, self.rules))
        dist = self.distributions
        c = self.rules.num_categories
        self._score = R.score_table(self.rules).astype(np.intp)
        self._top = int(self._score.max())
        self._cache: tuple[dict[bytes, int], np.ndarray, np.ndarray] = ({}, np.empty(0), np.empty(0))
        if self.rules.has_bonuses:  # the family's turn starts carry their bonus states: yacht_agents.win_family
            from yacht_agents.win_family import FamilyModel

            self._family = FamilyModel(dist)
            self._of_pick = self._family.of_pick
            return
        self._family = None
        # A pick's outcome: box k scoring s is column k * (top + 1) + s of the values after a pick.
        self._of_pick = np.arange(c) * (self._top + 1) + self._score
        self._bits = 1 << np.arange(c)
        self._open_bits = R.open_bits(c)
        # The base policy split into its picks, keeps and pick scores, and the cdf: one copy per distributions, shared
        # by every table size (some 84 MB for Yacht's rules).
        self._pick, self._kept, self._pick_score, self._cdf_before = policy_tables(dist)
        self._roll_as_kept = R.KEEP[:, R.KEEP_ALL].astype(np.intp)  # roll r is kept multiset KEPT[...]
        # Each category's possible scores lie on an arithmetic progression (k * 0..5, 0 and 30, 5..30, ...):
        # H is computed only there, a sixth of the (C, top + 1) table, through strided views (no copies).
        self._score_slices = []
        for k in range(c):
            values = np.unique(self._score[:, k])
            step = int(np.gcd.reduce(np.diff(values))) if len(values) > 1 else 1
            self._score_slices.append(slice(int(values[0]), int(values[-1]) + 1, step))
        # The most points still to come with open mask O: the distributions' support ends there.
        self._max_rest = R.open_bits(c) @ self._score.max(axis=0)

    # ------------------------------------------------------------------------------------------------
    def read(self, observations: np.ndarray) -> tuple[np.ndarray, ...]:
        """The state behind table observations ``(N, size)``.

        Returns:
            ``(roll, rolls_left, open_mask, total, opponent_open, opponent_total)``: ``(N,)`` intp each for the
            agent's own game, ``(N, P - 1)`` intp for the opponents in seat order after it.
        """
        view = self.view.decode(observations)
        return view.roll, view.rolls_left, view.open_mask, view.total, view.opponent_open, view.opponent_total

    def final_win_probability(self, opponent_open: np.ndarray, opponent_total: np.ndarray) -> np.ndarray:
        """``(N, width)``: the win probability (ties split) if the agent's final total is ``v = 0..width-1`` (rules
        without bonuses; the family's opponents have bonus states too: :mod:`yacht_agents.win_family`).

        Args:
            opponent_open: ``(N, P - 1)`` ints: each opponent's open mask (at a turn start); the opponents play
                the base policy to the end.
            opponent_total: ``(N, P - 1)`` ints: each opponent's total.
        """
        return final_win_probability(self._cdf_before, opponent_open, opponent_total)

    def win_probabilities(
        self,
        roll,
        rolls_left,
        open_mask,
        total,
        opponent_open,
        opponent_total,
        upper=0,
        armed=0,
        opponent_upper=0,
        opponent_armed=0,
    ) -> np.ndarray:
        """Per action, the win probability if it is taken and everyone plays the base policy after.

        Args:
            roll: ``(N,)`` ints: the agent's sorted roll.
            rolls_left: ``(N,)`` ints: its re-rolls left.
            open_mask: ``(N,)`` ints: its open categories.
            total: ``(N,)`` ints: its total.
            opponent_open: ``(N, P - 1)`` ints: the opponents' open masks.
            opponent_total: ``(N, P - 1)`` ints: the opponents' totals (each at most what its filled categories
                can score, as in a game).
            upper: ``(N,)`` ints (or one): under the family's rules, the agent's upper subtotal capped at the
                threshold; 0 otherwise.
            armed: ``(N,)`` ints (or one): under the family's rules, whether its Yahtzee box holds its points.
            opponent_upper: ``(N, P - 1)`` ints (or one): the opponents' upper subtotals, likewise.
            opponent_armed: ``(N, P - 1)`` ints (or one): the opponents' Yahtzee boxes, likewise.

        Returns:
            ``(N, num_actions)`` float64; ``-inf`` for illegal actions (the env's legality, canonical keeps, the forced
            joker's placement).
        """
        roll, rolls_left, open_mask, total = (
            np.asarray(x, dtype=np.intp).reshape(-1) for x in (roll, rolls_left, open_mask, total)
        )
        n, c = len(roll), self.rules.num_categories
        opponent_open = np.asarray(opponent_open, dtype=np.intp).reshape(n, -1)
        opponent_total = np.asarray(opponent_total, dtype=np.intp).reshape(n, -1)
        # Everything but the dice and re-rolls left is fixed for a whole turn (opponents wait between turns),
        # and so is every win probability the turn's decisions read; games in the same position share them.
        if self._family is None:
            context = np.concatenate([open_mask[:, None], total[:, None], opponent_open, opponent_total], axis=1)
        else:  # the turn starts' bonus states too
            bonuses = (upper, armed, opponent_upper, opponent_armed)
            context = self._family.contexts(open_mask, total, opponent_open, opponent_total, *bonuses)
        unique, inverse = np.unique(context, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        legal = R.legal_action_mask(roll, rolls_left, R.legal_picks(self.rules, roll, open_mask), True, c)
        wanted = None
        if self._family is not None:  # the family computes the pick outcomes that are asked for only
            game, box = np.nonzero(legal[:, R.PICK_OFFSET :])
            wanted = (inverse[game], self._of_pick[roll[game], box])
        after_pick, keep = self._context_values(unique, wanted)
        values = np.full((n, self.rules.num_actions), -np.inf)
        values[:, R.PICK_OFFSET :] = after_pick[inverse[:, None], self._of_pick[roll]]
        re_roll = np.flatnonzero(rolls_left > 0)
        kept = S.KEEP_PROPER[roll[re_roll]]  # (m, 32)
        values[re_roll, : R.NUM_KEEPS] = keep[inverse[re_roll, None], rolls_left[re_roll, None] - 1, kept]
        return np.where(legal, values, -np.inf)

    def _context_values(self, contexts: np.ndarray, wanted=None) -> tuple[np.ndarray, np.ndarray]:
        """Per context (rows of ``open_mask, total, opponents' masks, opponents' totals``; under the family's rules
        ``open_mask, bonus, total``, then the opponents' masks, bonus states and totals), ``H`` and the keeps.

        Returns:
            ``(after_pick, keep)``: ``(u, outcomes)`` (the win probability after each pick outcome: ``H_k[s]``, box
            ``k`` scoring ``s``, at column ``k * (top + 1) + s`` for rules without bonuses; the family's
            :class:`~yacht_env.family_states.Outcomes`) and ``(u, 2, 210)`` (after keeping ``KEPT[K]`` with 1
            or 2 re-rolls left). The family's values are computed for the pick outcomes the solver's policy takes in
            the turn and the ``wanted`` ones (``(context, outcome)`` arrays: the decision's picks), NaN elsewhere.

        The contexts of the previous call are kept: the next call (the next decision of the same games)
        mostly finds them there, so a turn costs one evaluation, not one per decision.
        """
        u = len(contexts)
        keys = np.ascontiguousarray(contexts).view(np.dtype((np.void, contexts.shape[1] * contexts.itemsize)))
        keys = keys.reshape(-1).tolist()
        old_index, old_pick, old_keep = self._cache
        found = np.array([old_index.get(key, -1) for key in keys], dtype=np.intp)
        count = self._of_pick.max() + 1 if self._family is None else self._family.outcomes.count
        after_pick = np.empty((u, count))
        keep = np.empty((u, R.MAX_ROLLS_LEFT, S.NUM_PROPER_KEPT))
        hit = found >= 0
        if hit.any():
            after_pick[hit], keep[hit] = old_pick[found[hit]], old_keep[found[hit]]
        missing = np.flatnonzero(~hit)
        p = self.table_players
        if self._family is not None:
            if len(missing):
                position = np.full(u, -1)
                position[missing] = np.arange(len(missing))
                new = position[wanted[0]] >= 0
                after_pick[missing], keep[missing] = self._family.evaluate(
                    contexts[missing], p, (position[wanted[0][new]], wanted[1][new])
                )
            self._family.fill(after_pick, contexts, *wanted, p)  # a known context's new picks
        elif len(missing):
            open_mask, total = contexts[missing, 0], contexts[missing, 1]
            opponent_open, opponent_total = contexts[missing, 2 : p + 1], contexts[missing, p + 1 :]
            by_box = after_pick.reshape(u, self.rules.num_categories, self._top + 1)
            # Chunks of similar open masks: each chunk's sums run to its own largest points to come.
            order = np.argsort(self._max_rest[open_mask], kind="stable")
            for first in range(0, len(missing), _CHUNK):
                at = order[first : first + _CHUNK]
                by_box[missing[at]], keep[missing[at]] = self._evaluate(
                    open_mask[at], total[at], opponent_open[at], opponent_total[at]
                )
        self._cache = (dict(zip(keys, range(u), strict=True)), after_pick, keep)
        return after_pick, keep

    def _evaluate(self, open_mask, total, opponent_open, opponent_total) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_context_values` for one chunk of contexts, computed."""
        n, full, top = len(open_mask), self.distributions.width, self._top
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
        keep = np.empty((n, R.MAX_ROLLS_LEFT, S.NUM_PROPER_KEPT))
        rows = np.arange(n)[:, None]
        keep[:, 0] = after_keeps(self._turn(after_pick, rows, open_mask, 0, None), self._roll_as_kept)
        keep[:, 1] = after_keeps(self._turn(after_pick, rows, open_mask, 1, keep[:, 0]), self._roll_as_kept)
        return after_pick, keep

    def _turn(
        self, after_pick: np.ndarray, rows: np.ndarray, masks: np.ndarray, t: int, keep_values: np.ndarray | None
    ) -> np.ndarray:
        """``(n, 252)``: the win probabilities of ``(O, r', t)`` under the base policy, for every roll.

        Picks read ``after_pick`` (``H``) at the base policy's category and score; keeps read ``keep_values``
        ``(n, 210)`` (the win probabilities after each keep with ``t`` re-rolls left; ``None`` for ``t = 0``).
        """
        k = self._pick[t, masks]
        value = after_pick[rows, np.maximum(k, 0), self._pick_score[t, masks]]
        if keep_values is None:
            return value
        return np.where(k >= 0, value, np.take_along_axis(keep_values, self._kept[t, masks], axis=1))

    def _act(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        view = self.view.decode(observations)
        state = (view.roll, view.rolls_left, view.open_mask, view.total, view.opponent_open, view.opponent_total)
        values = self.win_probabilities(*state, **({} if self._family is None else self._family.bonuses(view)))
        values = np.where(action_masks, values, -np.inf)
        best = values.argmax(axis=1)
        if self._family is None:
            base = self.distributions.policy[view.rolls_left, view.open_mask, view.roll].astype(np.intp)
        else:
            base = self._family.base_actions(view)
        rows = np.arange(len(best))
        # Equal chances (a decided game, or a choice that cannot matter): the base policy's action (the solver's: the
        # most points).
        keep_base = values[rows, base] >= values[rows, best] - TIE_TOLERANCE
        return np.where(keep_base, base, best)
