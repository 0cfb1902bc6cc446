"""The exact score distributions of any policy of a solo game given as a table of its actions, by the recurrence of
:mod:`yacht_env.distributions` (whose docstring derives it): the turn run forwards under the policy from every open
mask, then ``D[O]`` mixed from ``D[O without k]`` level by level. Nothing here reads a solver: an agent's own policy
(the search agent's solo network, :mod:`yacht_agents.search`) is evaluated here as exactly as the solver's.
"""

from __future__ import annotations

import numpy as np

from yacht_env import rules as R
from yacht_env.turn_rows import NUM_PROPER_KEPT

NUM_KEPT = NUM_PROPER_KEPT
TRANSITION = np.ascontiguousarray(R.TRANSITION[:NUM_KEPT])  # (210, 252): the kept multisets a legal keep keeps
MASK_CHUNK = 256  # masks per block: bounds the (masks, 252, 44) temporaries to ~20 MB


class StartDistributions:
    """The distribution of the points a policy still scores from every turn start of a solo game (rules without
    bonuses: a turn start is its open mask).

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules`.
        start: ``(num_open_masks, max_total + 1)`` float64, read only: ``start[O, x]`` is the probability that exactly
            ``x`` more points are scored from the start of a turn with open mask ``O`` to the end of the game
            (``start[0]`` is the point mass at 0).
        width: ``max_total + 1`` (298 for ``standard``): the length of every distribution.
        policy: ``(3, num_open_masks, 252)`` uint8, read only: the policy's action at ``(rolls_left, O, roll)``.
    """

    def __init__(self, rules: R.Rules, start: np.ndarray, policy: np.ndarray) -> None:
        self.rules = rules
        self.start = np.asarray(start, dtype=np.float64)
        self.policy = np.asarray(policy, dtype=np.uint8)
        self.start.flags.writeable = False
        self.policy.flags.writeable = False
        self.width = self.start.shape[1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rules={self.rules.name!r}, width={self.width})"

    def mean(self) -> np.ndarray:
        """``(num_open_masks,)``: the mean of each ``start`` row (the policy's expected points to come)."""
        return self.start @ np.arange(self.width)


def policy_start_distributions(rules: str | R.Rules, policy: np.ndarray) -> StartDistributions:
    """The exact :class:`StartDistributions` of a policy table (as :func:`checked_policy` takes it; rules without
    bonuses), in about a second.

    Raises:
        ValueError: rules with bonuses, a policy of another shape, or an illegal action in it.
    """
    rules = R.get_rules(rules)
    if rules.has_bonuses:
        raise ValueError(
            f"the exact score distributions cover rules without bonuses for a policy table; {rules.name} has bonuses, "
            "where only the solver's policy is evaluated (yacht_env.distributions.score_distributions)"
        )
    policy = checked_policy(rules, policy)
    return StartDistributions(rules, start_distributions(rules, policy), policy)


def max_total(rules: str | R.Rules = "standard") -> int:
    """The largest total of a game: each category's best score, summed (297 for ``standard``)."""
    return int(R.score_table(rules).max(axis=0).sum())


def turn_ends(rules: R.Rules, policy: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``(n, num_categories, top + 1)``: ``W[O, k, s]``, P(the turn from open mask ``O`` ends scoring ``s`` in ``k``),
    the turn run forwards under ``policy`` (see the module docstring) for the masks ``masks`` at once.
    """
    c = rules.num_categories
    score = R.score_table(rules).astype(np.intp)
    top = int(score.max())
    n = len(masks)
    ends = np.zeros(n * c * (top + 1))
    reach = np.broadcast_to(R.TRANSITION[0], (n, R.NUM_ROLLS))  # P(the turn reaches (r, t)), t = 2 first
    for t in range(R.MAX_ROLLS_LEFT, -1, -1):
        action = policy[t, masks].astype(np.intp)
        pick = action >= R.PICK_OFFSET
        rows, rolls = np.nonzero(pick)
        k = action[rows, rolls] - R.PICK_OFFSET
        where = (rows * c + k) * (top + 1) + score[rolls, k]
        ends += np.bincount(where, reach[rows, rolls], minlength=ends.size)
        if t == 0:
            break
        rows, rolls = np.nonzero(~pick)
        kept = R.KEEP[rolls, action[rows, rolls]]
        flow = np.bincount(rows * NUM_KEPT + kept, reach[rows, rolls], minlength=n * NUM_KEPT)
        reach = flow.reshape(n, NUM_KEPT) @ TRANSITION
    return ends.reshape(n, c, top + 1)


def start_distributions(rules: R.Rules, policy: np.ndarray) -> np.ndarray:
    """``(num_open_masks, max_total + 1)`` float64: ``D[O]``, by popcount level (see the module docstring)."""
    c = rules.num_categories
    width = max_total(rules) + 1
    bits = 1 << np.arange(c)
    popcounts = R.open_bits(c).sum(axis=1)
    dist = np.zeros((rules.num_open_masks, width))
    dist[0, 0] = 1.0
    for popcount in range(1, c + 1):
        level = np.flatnonzero(popcounts == popcount)
        for start in range(0, len(level), MASK_CHUNK):
            masks = level[start : start + MASK_CHUNK]
            ends = turn_ends(rules, policy, masks)
            out = np.zeros((len(masks), width))
            for k in range(c):
                rest = dist[masks & ~bits[k]]  # D[O without k]; rows where k is filled get no weight
                for s in np.flatnonzero(ends[:, k].any(axis=0)):
                    out[:, s:] += ends[:, k, s, None] * rest[:, : width - s]
            dist[masks] = out
    return dist


def checked_policy(rules: R.Rules, policy: np.ndarray) -> np.ndarray:
    """``policy`` as a uint8 table (row ``0`` zeroed), or one ``ValueError`` naming the first illegal action."""
    shape = (R.ROLLS_PER_TURN, rules.num_open_masks, R.NUM_ROLLS)
    policy = np.asarray(policy)
    if policy.shape != shape or not np.issubdtype(policy.dtype, np.integer):
        raise ValueError(f"a policy table is an int array of shape {shape}, got {policy.dtype} {policy.shape}")
    t, mask, roll = (x.reshape(-1) for x in np.meshgrid(*map(np.arange, shape), indexing="ij"))
    live = mask > 0
    t, mask, roll, action = t[live], mask[live], roll[live], policy.reshape(-1)[live]
    inside = (action >= 0) & (action < rules.num_actions)
    legal = R.legal_action_mask(roll, t, mask, True, rules.num_categories)
    ok = inside & legal[np.arange(len(action)), np.clip(action, 0, rules.num_actions - 1)]
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise ValueError(
            f"the policy's action {int(action[i])} is illegal at rolls_left={int(t[i])}, open_mask={int(mask[i])}, "
            f"roll={int(roll[i])} ({int((~ok).sum()):,} illegal in all)"
        )
    return np.where(np.arange(rules.num_open_masks)[None, :, None] > 0, policy, 0).astype(np.uint8)


__all__ = [
    "MASK_CHUNK",
    "NUM_KEPT",
    "TRANSITION",
    "StartDistributions",
    "checked_policy",
    "max_total",
    "policy_start_distributions",
    "start_distributions",
    "turn_ends",
]
