"""Exact score distributions of the solver's (expected-score) optimal policy, from every decision state.

The solver (:mod:`yacht_env.solver`) gives the *expected* points still to come; winning a multiplayer game
needs their whole *distribution*. Under the solver's policy (:meth:`~yacht_env.solver.Solution.best_action`,
ties to the smallest action) write ``D[O]`` for the distribution of the points still to come from the start
of a turn with open categories ``O`` (``D[0]`` is the point mass at 0). It follows the solver's recurrence:

* a pick of category ``k`` scoring ``s`` leaves ``D[O without k]`` shifted by ``s``;
* a keep of multiset ``K`` with ``t`` re-rolls left mixes the distributions from ``(O, r', t - 1)`` with
  the weights ``TRANSITION[K, r']``;
* ``D[O]`` mixes the distributions from ``(O, r, 2)`` with the first roll's weights ``TRANSITION[0, r]``.

Rather than carrying a whole distribution per ``(O, r, t)`` (4096 x 252 x 3 x 298 values), the turn is
run *forwards* once per open mask: the probability of reaching each ``(r, t)`` under the policy flows
from the first roll through the chosen keeps (one matrix product per re-roll, all masks of a popcount at
once) into the picks, which collects, per open category ``k``, the probability ``W[O, k, s]`` that the
turn ends by scoring ``s`` in ``k``. Then ``D[O] = sum over k, s of W[O, k, s] * (D[O without k] shifted
by s)``: a few hundred vector operations per popcount level, about a second for a preset.

The distributions are cached on disk beside the solver's tables (same folder, key, checksum and atomic
writes), verified on every load, and memoised in-process.

Under the family's rules (bonuses: Yahtzee, Yatzy, Clubhouse) a turn start is ``(open_mask, upper, armed)`` and a
pick's points include the bonuses it earns: :func:`score_distributions` returns the same recurrence's results for
every reachable turn start there, computed and stored by :mod:`yacht_env.family_recurrence` (float32 cumulative
distributions over trimmed supports, memory-mapped from the cache: 1.4 GB for Yahtzee).

Nothing above needs the policy to be the solver's: :func:`policy_distributions` runs the same recurrence
(:mod:`yacht_env.score_recurrence`, which reads no solver) for any policy of the solo game given as a table of actions
(``(3, num_open_masks, 252)``: one action per re-rolls left, open mask and roll), e.g. a trained agent's
(:func:`yacht_agents.win.policy_table`). That is an exact evaluation of the agent's own play: how many points it goes
on to score from every turn start, as a distribution.

Example:
    >>> from yacht_env.distributions import score_distributions
    >>> dist = score_distributions("standard")
    >>> round(float(dist.mean()[dist.rules.all_open]), 2)
    166.96
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from yacht_env import family_distributions as FD
from yacht_env import family_recurrence as FR
from yacht_env import rules as R
from yacht_env import score_recurrence as SR
from yacht_env import solver as S
from yacht_env.score_recurrence import max_total
from yacht_env.util import load_arrays, memoised_cache, save_arrays

DISTRIBUTION_FORMAT_VERSION = 1  # bump when the arrays or their meaning change; old cache files are ignored

_NUM_KEPT, _TRANSITION, _MASK_CHUNK = SR.NUM_KEPT, SR.TRANSITION, SR.MASK_CHUNK


#: The most the family's distributions may take, their rows untrimmed at float32 over every turn start (Yahtzee's
#: 6.6 GB is below it; only its 536,448 reachable states are computed, and their rows trimmed: 1.0 GB).
MAX_FAMILY_BYTES = 16e9


def unsupported(rules: str | R.Rules) -> str | None:
    """Why the distributions cannot be computed for ``rules`` (a phrase to follow "the exact score distributions"),
    or ``None`` if they can: every preset, and custom rules of any size without bonuses.

    A turn start is an open mask for Yacht (4,096 of them); the family's bonuses add the upper subtotal and the
    Yahtzee box's status to it (:mod:`yacht_env.family_recurrence`), each state with a distribution of
    ``max_total + 1`` values. Custom rules whose turn starts would take more than :data:`MAX_FAMILY_BYTES` so are
    refused.
    """
    rules = R.get_rules(rules)
    if not rules.has_bonuses:
        return None
    uppers, armed = rules.bonus_shape
    states, width = rules.num_open_masks * uppers * armed, R.max_total(rules) + 1
    if states * width * 4 <= MAX_FAMILY_BYTES:
        return None
    return (
        f"cover rules with bonuses up to {MAX_FAMILY_BYTES / 1e9:.0f} GB of rows; {rules.name} has {states:,} "
        f"turn-start states, whose distributions of {width:,} values each would take {states * width * 4 / 1e9:.1f} GB"
    )


def _policy(solution: S.Solution) -> np.ndarray:
    """``(3, num_open_masks, 252)`` uint8: the solver's best action at ``(rolls_left, open_mask, roll)``.

    The same action values as :meth:`~yacht_env.solver.Solution.q_values`, built with the same float
    operations (so the argmax, ties to the smallest action, is identical), for every state at once.
    """
    rules = solution.rules
    c = rules.num_categories
    score = R.score_table(rules).astype(np.float64)
    bits = 1 << np.arange(c)
    open_bits = R.open_bits(c)
    rolls = np.arange(R.NUM_ROLLS)
    keep_legal = R.legal_action_mask(rolls[:, None], np.arange(R.ROLLS_PER_TURN), rules.all_open, True, c)
    keep_legal = keep_legal[..., : R.NUM_KEEPS]  # (252, 3, 32): keep legality depends on the roll only
    keep_index = S.KEEP_PROPER  # (252, 32), keep-all pointed at column 0 (never legal)
    policy = np.zeros((R.ROLLS_PER_TURN, rules.num_open_masks, R.NUM_ROLLS), dtype=np.uint8)
    for first in range(1, rules.num_open_masks, _MASK_CHUNK):
        masks = np.arange(first, min(first + _MASK_CHUNK, rules.num_open_masks))
        picks = score[None] + solution.start_values[masks[:, None] & ~bits][:, None, :]  # (n, 252, C)
        picks = np.where(open_bits[masks][:, None, :], picks, -np.inf)
        policy[0, masks] = R.PICK_OFFSET + picks.argmax(axis=-1)
        for t in range(1, R.ROLLS_PER_TURN):
            keeps = solution.keep_values[t - 1, masks][:, keep_index]  # (n, 252, 32)
            keeps = np.where(keep_legal[None, :, t], keeps, -np.inf)
            policy[t, masks] = np.concatenate([keeps, picks], axis=-1).argmax(axis=-1)
    return policy


def turn_outcomes(rules: str | R.Rules, policy: np.ndarray) -> np.ndarray:
    """How a policy's turns end: ``(num_open_masks, num_categories, top + 1)`` float64, ``[O, k, s]`` the
    probability that the turn from a turn start with open mask ``O`` ends by scoring ``s`` points in box ``k``.

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules`.
        policy: The policy's table as :func:`policy_distributions` takes it (``(3, num_open_masks, 252)``, legal).
            ``top`` is the largest score of any box (``R.score_table(rules).max()``); row ``0`` is all zeros.

    Raises:
        ValueError: a policy of another shape or with an illegal action (as :func:`policy_distributions`).
    """
    rules = R.get_rules(rules)
    policy = SR.checked_policy(rules, policy)
    out = np.zeros((rules.num_open_masks, rules.num_categories, int(R.score_table(rules).max()) + 1))
    for start in range(1, rules.num_open_masks, _MASK_CHUNK):
        masks = np.arange(start, min(start + _MASK_CHUNK, rules.num_open_masks))
        out[masks] = SR.turn_ends(rules, policy, masks)
    return out


def solver_policy(rules: str | R.Rules = "standard") -> np.ndarray:
    """The solver's policy as a table (:attr:`ScoreDistributions.policy`): ``(3, num_open_masks, 252)`` uint8."""
    return _policy(S.solve(rules))


class ScoreDistributions(SR.StartDistributions):
    """The distribution of the points still to come under a policy (the solver's, or :func:`policy_distributions`'),
    from every decision state.

    Attributes:
        rules, start, width, policy: As :class:`~yacht_env.score_recurrence.StartDistributions`; the policy is the
            solver's best action (:meth:`~yacht_env.solver.Solution.best_action`, ties to the smallest action) or the
            given policy's, and ``mean()`` equals the solver's ``start_values`` for the solver's policy.
        solution: The solver's :class:`~yacht_env.solver.Solution` whose policy is followed, or ``None`` for
            another policy's distributions (:func:`policy_distributions`).
        source: ``"computed"`` or ``"disk"`` (the solver's), ``"policy"`` (:func:`policy_distributions`).
    """

    def __init__(
        self,
        rules: R.Rules,
        start: np.ndarray,
        policy: np.ndarray,
        source: str = "computed",
        solution: S.Solution | None = None,
    ):
        super().__init__(rules, start, policy)
        self.solution = solution
        self.source = source

    def turn_tables(self, open_mask: int) -> tuple[np.ndarray, np.ndarray]:
        """The distributions within one turn with open mask ``open_mask`` (at least one category open).

        Returns:
            ``(turn, keep)``: ``turn[t, r]`` (``(3, 252, width)``) is the distribution of the points to come
            from ``(roll r, t re-rolls left)`` under the policy; ``keep[t - 1, K]`` (``(2, 210,
            width)``) the distribution after keeping ``KEPT[K]`` with ``t`` re-rolls left.
        """
        width = self.width
        score = R.score_table(self.rules).astype(np.intp)
        rolls = np.arange(R.NUM_ROLLS)
        turn = np.empty((R.ROLLS_PER_TURN, R.NUM_ROLLS, width))
        keep = np.empty((R.MAX_ROLLS_LEFT, _NUM_KEPT, width))
        # Shifting row i of a table by s_i is one gather from the table padded with zeros on the left.
        column = np.arange(width)
        for t in range(R.ROLLS_PER_TURN):
            action = self.policy[t, open_mask].astype(np.intp)
            pick = action >= R.PICK_OFFSET
            k = np.where(pick, action - R.PICK_OFFSET, 0)
            shift = score[rolls, k]
            rest = self.start[open_mask & ~(1 << k)]
            source = column - shift[:, None]
            shifted = np.where(source >= 0, np.take_along_axis(rest, np.maximum(source, 0), axis=1), 0.0)
            if t == 0:
                turn[0] = shifted
            else:
                kept = R.KEEP[rolls, np.where(pick, 0, action)]
                turn[t] = np.where(pick[:, None], shifted, keep[t - 1, kept])
            if t < R.MAX_ROLLS_LEFT:
                keep[t] = _TRANSITION @ turn[t]
        return turn, keep

    def action_distributions(self, roll, rolls_left, open_mask) -> np.ndarray:
        """Per action, the distribution of the points to come if it is taken and the policy follows.

        Args:
            roll: The sorted rolls, as :meth:`~yacht_env.solver.Solution.q_values` takes them (ints or
                equal-shape int arrays).
            rolls_left: The re-rolls left, likewise.
            open_mask: The open categories, likewise (at least one open).

        Returns:
            ``(..., 44, width)`` float64; a pick includes its own points. Illegal actions (the env's
            legality, canonical keeps) get all-zero rows. For the solver's policy its means are ``q_values``.
        """
        rules = self.rules
        roll, rolls_left, open_mask = S.check_states(rules, roll, rolls_left, open_mask)
        shape = roll.shape
        roll, rolls_left, open_mask = roll.reshape(-1), rolls_left.reshape(-1), open_mask.reshape(-1)
        legal = R.legal_action_mask(roll, rolls_left, open_mask, True, rules.num_categories)
        out = np.zeros((len(roll), rules.num_actions, self.width))
        score = R.score_table(rules).astype(np.intp)
        column = np.arange(self.width)
        for mask in np.unique(open_mask):
            at = np.flatnonzero(open_mask == mask)
            _, keep = self.turn_tables(int(mask))
            for k in np.flatnonzero(R.open_bits(rules.num_categories)[mask]):
                rest = self.start[mask & ~(1 << int(k))]
                source = column - score[roll[at], k][:, None]
                out[at, R.PICK_OFFSET + k] = np.where(source >= 0, rest[np.maximum(source, 0)], 0.0)
            re_roll = at[rolls_left[at] > 0]
            kept = S.KEEP_PROPER[roll[re_roll]]  # (m, 32)
            out[re_roll, : R.NUM_KEEPS] = keep[rolls_left[re_roll, None] - 1, kept]
        out *= legal[..., None]
        return out.reshape(*shape, rules.num_actions, self.width)


# --------------------------------------------------------------------------------------------------
# The disk cache and the in-process memo
# --------------------------------------------------------------------------------------------------
_MEMO: dict[R.Rules, ScoreDistributions | FR.FamilyDistributions] = {}


def cache_key(rules: str | R.Rules = "standard") -> str:
    """The hex digest identifying the distributions: the rules, the solver's and this module's versions."""
    rules = R.get_rules(rules)
    payload = {
        "rules": rules.as_dict(),
        "solver_format_version": S.SOLVER_FORMAT_VERSION,
        "distribution_format_version": DISTRIBUTION_FORMAT_VERSION,
    }
    if rules.has_bonuses:  # the family's files (Yacht's presets keep their keys and files)
        payload["family_solver_format_version"] = S.FAMILY_FORMAT_VERSION
        payload["family_distribution_format_version"] = FR.FAMILY_DISTRIBUTION_FORMAT_VERSION
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_path(rules: str | R.Rules = "standard", cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache_dir>/<name>-dist-<key prefix>.npz``, beside the solver's file (same folder and default). The family's
    is the index of two data files beside it, ``.cdf`` and ``.policy`` (:mod:`yacht_env.family_recurrence`).
    """
    solver_file = S.cache_path(rules, cache_dir)
    name = solver_file.name.rsplit("-", 1)[0]
    return solver_file.with_name(f"{name}-dist-{cache_key(rules)[:16]}.npz")


def _save(path: Path, dist: ScoreDistributions) -> None:
    save_arrays(path, cache_key(dist.rules), {"start": dist.start, "policy": dist.policy})


def _load(path: Path, solution: S.Solution) -> ScoreDistributions | None:
    """The cached distributions at ``path``, or ``None`` if missing or failing any check."""
    rules = solution.rules
    specs = {
        "start": ((rules.num_open_masks, max_total(rules) + 1), np.float64),
        "policy": ((R.ROLLS_PER_TURN, rules.num_open_masks, R.NUM_ROLLS), np.uint8),
    }
    arrays = load_arrays(path, cache_key(rules), specs)
    if arrays is None:
        return None
    start = arrays["start"]
    if not ((start >= 0).all() and np.abs(start.sum(axis=1) - 1).max() < 1e-9):
        return None
    return ScoreDistributions(rules, start, arrays["policy"], source="disk", solution=solution)


def clear_memo() -> None:
    """Forgets the in-process distributions, so the next call reads the disk cache (or computes)."""
    _MEMO.clear()


def score_distributions(
    rules: str | R.Rules = "standard", *, cache: bool = True, cache_dir: str | os.PathLike | None = None
) -> ScoreDistributions | FR.FamilyDistributions:
    """The score distributions of the solver's policy under ``rules`` (see the module docstring).

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules`.
        cache: Use the in-process memo and the disk cache (verified on load, rebuilt when it fails a
            check); ``False`` always computes and stores nothing (the family's then lie in memory).
        cache_dir: The cache folder; defaults to the solver's (``$YACHT_RL_CACHE_DIR``, else
            ``~/.cache/yacht-rl``).

    Returns:
        :class:`ScoreDistributions` for rules without bonuses; :class:`~yacht_env.family_recurrence.
        FamilyDistributions` for the family's (Yahtzee's presets, Yatzy, Clubhouse).

    Raises:
        ValueError: unknown rules, or custom rules with bonuses too large (:func:`unsupported` says why).
    """
    rules = R.get_rules(rules)
    reason = unsupported(rules)
    if reason is not None:
        raise ValueError(f"the exact score distributions {reason}")
    solution = S.solve(rules, cache=cache, cache_dir=cache_dir)
    if rules.has_bonuses:
        return _family(solution, cache, cache_dir)

    def compute() -> ScoreDistributions:
        policy = _policy(solution)
        return ScoreDistributions(rules, SR.start_distributions(rules, policy), policy, solution=solution)

    if not cache:
        return compute()
    load = lambda path: _load(path, solution)  # noqa: E731
    return memoised_cache(_MEMO, "distribution cache", rules, cache_path(rules, cache_dir), load, compute, _save)


def _family(solution: S.Solution, cache: bool, cache_dir) -> FR.FamilyDistributions:
    """The family's distributions: the memo, else the verified cache files, else built into them (or into memory
    where the cache folder cannot be written, with a warning; or ``cache`` is False).
    """
    rules = solution.rules
    if not cache:
        return FR.build_in_memory(rules, FD.solver_policy(solution), solution)
    if rules in _MEMO:
        return _MEMO[rules]
    path, key = cache_path(rules, cache_dir), cache_key(rules)
    result = FR.cached(path, key, rules, functools.partial(FD.solver_policy, solution), solution)
    _MEMO[rules] = result
    return result


def policy_distributions(rules: str | R.Rules, policy: np.ndarray) -> ScoreDistributions:
    """The score distributions of any policy of the solo game, given as a table of its actions.

    Args:
        rules: A preset name or :class:`~yacht_env.rules.Rules` (without bonuses, as :func:`score_distributions`).
        policy: int ``(3, num_open_masks, 252)``: the action at ``(rolls_left, open_mask, roll)``, legal there
            (canonical keeps, as the env's mask) for every open mask but 0 (a finished game: not read).

    Returns:
        :class:`ScoreDistributions` with ``solution`` ``None`` and ``source`` ``"policy"``: ``start[O]`` is the
        exact distribution of the points the policy scores from a turn start with open mask ``O`` (about a second).

    Raises:
        ValueError: rules with bonuses, a policy of another shape, or an illegal action in it.
    """
    found = SR.policy_start_distributions(rules, policy)
    return ScoreDistributions(found.rules, found.start, found.policy, source="policy")
