"""The exact optimal policy of solo Yacht, by backward induction over the rules core's tables.

A decision state is ``(open_mask, roll, rolls_left)`` (see :mod:`yacht_env.rules`). Write ``SCORE`` for
``score_table(rules)``, ``P`` for ``TRANSITION`` and ``S[O]`` for the expected points from the start of a
turn with open categories ``O`` to the end of the game (``S[0] = 0``). For each open mask, in order of
increasing popcount (so every ``O`` without ``k`` is already solved):

* ``V0[O, r] = max over open k of SCORE[r, k] + S[O without k]``: no re-rolls left, a category must be
  picked;
* ``EK_t[O, K] = sum over r' of P[K, r'] * V_{t-1}[O, r']``: keeping multiset ``K`` with ``t`` re-rolls
  left re-rolls the other dice and goes on with ``t - 1``;
* ``V_t[O, r] = max(V0[O, r], max over sub-multisets K of r of EK_t[O, K])`` for ``t = 1, 2``;
* ``S[O] = sum over r of P[empty, r] * V2[O, r]``: a turn starts with a roll of all five dice.

The expected final score of optimal play is ``S[ALL_OPEN]``. Keeping all five dice (mask ``31``) is never
legal and never needed: it leads to the same roll with fewer re-rolls, which cannot beat acting now.

All masks of one popcount are solved together: ``EK_t`` is one matrix product ``V_{t-1} @ P.T`` and the
max over a roll's sub-multisets is taken level by level (the best sub-multiset of ``K`` is ``K`` itself or
the best sub-multiset of one of its children, ``K`` less one die), so a preset solves in well under a
second (about 0.05 s on two cores). :class:`Solution` keeps ``S`` and ``EK_1``, ``EK_2`` (for the 210
multisets of 0..4 dice a legal keep can keep; 14 MB in float64); every action value is a lookup into them.

Solutions are cached on disk (``$YACHT_RL_CACHE_DIR`` or ``~/.cache/yacht-rl``), one ``.npz`` per rules,
verified on every load, and memoised in-process.

Example:
    >>> from yacht_env.solver import solve
    >>> solution = solve("standard")
    >>> round(solution.expected_score, 2)
    166.96
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.util import load_arrays, memoised_cache, save_arrays

SOLVER_FORMAT_VERSION = 1  # bump when the recurrence or the stored arrays change; old cache files are ignored
CACHE_DIR_ENV = "YACHT_RL_CACHE_DIR"
DEFAULT_CACHE_DIR = Path("~/.cache/yacht-rl")

_KEPT_SIZE = np.array([len(kept) for kept in R.KEPT])
#: Kept multisets of 0..4 dice (all a legal keep can keep) come first in ``KEPT``; only they get values.
NUM_PROPER_KEPT = int((_KEPT_SIZE < R.NUM_DICE).sum())
assert (_KEPT_SIZE[:NUM_PROPER_KEPT] < R.NUM_DICE).all(), "rules.KEPT is expected to be ordered by size"
assert (np.delete(R.KEEP, R.KEEP_ALL, axis=1) < NUM_PROPER_KEPT).all()


def keep_values_shape(rules: str | R.Rules = "standard") -> tuple[int, int, int]:
    """Shape of :attr:`Solution.keep_values`: ``(2, num_open_masks, 210)``."""
    return (R.MAX_ROLLS_LEFT, R.get_rules(rules).num_open_masks, NUM_PROPER_KEPT)


#: Yacht's (12 categories): (2, 4096, 210).
KEEP_VALUES_SHAPE = keep_values_shape()


def _category_bits(rules: R.Rules) -> np.ndarray:
    return 1 << np.arange(rules.num_categories)


# KEEP with the keep-all column (never legal, and never valued) pointed at column 0, so gathers stay in bounds.
_KEEP_PROPER = R.KEEP.astype(np.intp)
_KEEP_PROPER[:, R.KEEP_ALL] = 0


def _child_tables() -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """The "one die less" relation between kept multisets, read off ``KEEP``.

    Returns ``levels`` and ``roll_children``. ``levels[j - 1] = (parents, children)``: the kept multisets
    of ``j`` dice and, per parent, its distinct children (``j - 1`` dice), padded to ``j`` columns by
    repeating one. ``roll_children[r]``: the multisets of four dice under roll ``r``, padded to 5.
    """
    children: dict[int, set[int]] = {}
    for r in range(R.NUM_ROLLS):
        for m in range(R.NUM_KEEPS):
            parent = int(R.KEEP[r, m])
            children.setdefault(parent, set()).update(
                int(R.KEEP[r, m & ~(1 << i)]) for i in range(R.NUM_DICE) if m >> i & 1
            )

    def padded(parents: np.ndarray, width: int) -> np.ndarray:
        rows = [sorted(children[int(p)]) for p in parents]
        return np.array([row + row[:1] * (width - len(row)) for row in rows], dtype=np.intp)

    levels = []
    for size in range(1, R.NUM_DICE):
        parents = np.flatnonzero(_KEPT_SIZE == size)
        levels.append((parents, padded(parents, size)))
    rolls_as_kept = R.KEEP[:, R.KEEP_ALL]  # roll r is the kept multiset of all its dice
    return levels, padded(rolls_as_kept, R.NUM_DICE)


_LEVELS, _ROLL_CHILDREN = _child_tables()


def _best_keep(keep_values: np.ndarray) -> np.ndarray:
    """``(n, 252)``: per roll, the best of ``keep_values`` (``(n, 210)``) over its proper sub-multisets."""
    best = keep_values.copy()
    for parents, children in _LEVELS:
        below = best[:, children[:, 0]]
        for c in range(1, children.shape[1]):
            np.maximum(below, best[:, children[:, c]], out=below)
        best[:, parents] = np.maximum(best[:, parents], below)
    result = best[:, _ROLL_CHILDREN[:, 0]]
    for c in range(1, _ROLL_CHILDREN.shape[1]):
        np.maximum(result, best[:, _ROLL_CHILDREN[:, c]], out=result)
    return result


def _solve_arrays(rules: R.Rules) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction: returns ``start_values`` (4096,) and ``keep_values`` (2, 4096, 210), float64
    (for Yacht's 12 categories; ``num_open_masks`` in general)."""
    score = R.score_table(rules).astype(np.float64)  # (252, num_categories)
    transition_t = np.ascontiguousarray(R.TRANSITION[:NUM_PROPER_KEPT].T)  # (252, 210)
    first_roll = R.TRANSITION[0]
    open_bits, category_bits = R.open_bits(rules.num_categories), _category_bits(rules)
    popcounts = open_bits.sum(axis=1)
    start_values = np.zeros(rules.num_open_masks)
    keep_values = np.zeros(keep_values_shape(rules))
    for popcount in range(1, rules.num_categories + 1):
        masks = np.flatnonzero(popcounts == popcount)
        # Picking k scores it now and leaves O without k, whose value is already known.
        leave = np.where(open_bits[masks], start_values[masks[:, None] & ~category_bits], -np.inf)
        value = np.full((len(masks), R.NUM_ROLLS), -np.inf)  # V0, (n, 252)
        for k in range(rules.num_categories):  # one pass per category beats one max over a short last axis
            np.maximum(value, leave[:, k, None] + score[:, k], out=value)
        pick_now = value
        for t in range(1, R.MAX_ROLLS_LEFT + 1):
            expected = value @ transition_t  # EK_t, (n, 210)
            keep_values[t - 1, masks] = expected
            value = np.maximum(pick_now, _best_keep(expected))  # V_t
        start_values[masks] = value @ first_roll
    return start_values, keep_values


# --------------------------------------------------------------------------------------------------
# The solution and its queries
# --------------------------------------------------------------------------------------------------
def _check_state_array(name: str, value: object, low: int, high: int, what: str) -> np.ndarray:
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.integer):
        shown = f"{value!r} of " if array.ndim == 0 else "an array of "
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {shown}dtype {array.dtype}")
    if array.size and (array.min() < low or array.max() > high):
        bad = array[(array < low) | (array > high)].ravel()[0]
        raise ValueError(f"{name} must be int(s) in {low}..{high} ({what}), got {bad}")
    return array.astype(np.intp, copy=False)


def _check_states(rules: R.Rules, roll, rolls_left, open_mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    roll = _check_state_array("roll", roll, 0, R.NUM_ROLLS - 1, "a sorted-roll index, see rules.roll_index")
    rolls_left = _check_state_array("rolls_left", rolls_left, 0, R.MAX_ROLLS_LEFT, "re-rolls left this turn")
    open_mask = _check_state_array(
        "open_mask",
        open_mask,
        1,
        rules.all_open,
        f"a {rules.num_categories}-bit mask of the open categories, at least one open",
    )
    try:
        return tuple(np.broadcast_arrays(roll, rolls_left, open_mask))  # type: ignore[return-value]
    except ValueError:
        raise ValueError(
            f"roll, rolls_left and open_mask must have equal (or broadcastable) shapes, got "
            f"{roll.shape}, {rolls_left.shape} and {open_mask.shape}"
        ) from None


def _scalar_or_array(result: np.ndarray, kind: type):
    return kind(result) if result.ndim == 0 else result


class Solution:
    """The optimal policy of one rules preset: state values and action values of every decision state.

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules` solved.
        expected_score: The expected final score of optimal play from the start of a game.
        start_values: ``(4096,)`` float64: expected points from the start of a turn with that open mask to
            the end of the game (``start_values[0] == 0``).
        keep_values: ``(2, 4096, 210)`` float64: ``keep_values[t - 1, O, K]`` is the expected points to the
            end of the game after keeping ``KEPT[K]`` (0..4 dice) with ``t`` re-rolls left, open mask ``O``.
        source: ``"solved"`` if computed in this process, ``"disk"`` if loaded from the disk cache.

    States are the rules core's integers: ``roll`` 0..251, ``rolls_left`` 0..2, ``open_mask`` 1..4095.
    The batched methods take ints or equal-shape int arrays and do no Python loop per state.
    """

    def __init__(self, rules: R.Rules, start_values: np.ndarray, keep_values: np.ndarray, source: str = "solved"):
        self.rules = rules
        self.start_values = np.asarray(start_values, dtype=np.float64)
        self.keep_values = np.asarray(keep_values, dtype=np.float64)
        self.start_values.flags.writeable = False
        self.keep_values.flags.writeable = False
        self.expected_score = float(self.start_values[rules.all_open])
        self.source = source
        self._score = R.score_table(rules).astype(np.float64)
        self._category_bits = _category_bits(rules)

    def __repr__(self) -> str:
        return f"Solution(rules={self.rules.name!r}, expected_score={self.expected_score:.4f})"

    def q_values(self, roll, rolls_left, open_mask, canonical_keeps: bool = True) -> np.ndarray:
        """Action values of states, shape ``(..., 44)`` float64, ``-inf`` for illegal actions.

        The value of an action is the expected points from this decision to the end of the game (a pick
        includes its own points) if it is taken and optimal play follows. Legality is exactly
        :func:`yacht_env.rules.legal_action_mask` with ``canonical_keeps``.
        """
        rules = self.rules
        roll, rolls_left, open_mask = _check_states(rules, roll, rolls_left, open_mask)
        legal = R.legal_action_mask(roll, rolls_left, open_mask, canonical_keeps, rules.num_categories)
        picks = self._score[roll] + self.start_values[open_mask[..., None] & ~self._category_bits]
        # Row (t - 1) * 4096 + O of the flattened keep values; rolls_left 0 reads row O (masked out anyway).
        row = np.maximum(rolls_left - 1, 0)[..., None] * rules.num_open_masks + open_mask[..., None]
        keeps = self.keep_values.reshape(-1, NUM_PROPER_KEPT)[row, _KEEP_PROPER[roll]]
        return np.where(legal, np.concatenate([keeps, picks], axis=-1), -np.inf)

    def values(self, roll, rolls_left, open_mask) -> np.ndarray | float:
        """The optimal value of states (the largest action value), shape of the inputs, float64."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask).max(axis=-1), float)

    def best_action(self, roll, rolls_left, open_mask) -> np.ndarray | int:
        """The optimal action of states (canonical keeps; ties go to the smallest action index)."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask).argmax(axis=-1), int)

    def action_values(self, dice, rolls_left: int, open_categories, canonical_keeps: bool = True) -> np.ndarray:
        """Action values of one state given as the player sees it, shape ``(44,)`` float64.

        Args:
            dice: Five values in 1..6, in any order. Keep-mask bits refer to the dice sorted ascending.
            rolls_left: Re-rolls left this turn, an int in 0..2.
            open_categories: The open categories: names/indices, a 12-long boolean mask or an int mask.
            canonical_keeps: Whether only the canonical mask of each kept multiset is legal (as the env).

        Returns:
            Per action (0..31 keep-masks, ``32 + k`` pick category ``k``) the expected points from this
            decision to the end of the game if taken and followed by optimal play; ``-inf`` if illegal.

        Raises:
            ValueError: bad dice, rolls_left or open categories; the message says what is accepted.
        """
        values = R.validate_dice(dice)
        if not isinstance(rolls_left, (int, np.integer)) or isinstance(rolls_left, bool):
            raise ValueError(f"rolls_left must be an int in 0..{R.MAX_ROLLS_LEFT}, got {rolls_left!r}")
        if not 0 <= rolls_left <= R.MAX_ROLLS_LEFT:
            raise ValueError(f"rolls_left must be an int in 0..{R.MAX_ROLLS_LEFT}, got {rolls_left!r}")
        open_mask = R.open_mask_from(open_categories, self.rules)
        if open_mask == 0:
            raise ValueError(
                f"open_categories must name at least one open category (the game is over otherwise), "
                f"got {open_categories!r}"
            )
        return self.q_values(R.roll_index(values), int(rolls_left), open_mask, canonical_keeps)


# --------------------------------------------------------------------------------------------------
# Solving, the disk cache and the in-process memo
# --------------------------------------------------------------------------------------------------
_MEMO: dict[R.Rules, Solution] = {}


def cache_key(rules: str | R.Rules = "standard") -> str:
    """The hex digest identifying a solution: the rules' fields and :data:`SOLVER_FORMAT_VERSION`."""
    payload = {"rules": R.get_rules(rules).as_dict(), "solver_format_version": SOLVER_FORMAT_VERSION}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_path(rules: str | R.Rules = "standard", cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache file of a rules preset: ``<cache_dir>/<name>-<key prefix>.npz``.

    ``cache_dir`` defaults to ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``.

    Raises:
        ValueError: unknown rules, or a folder whose ``~`` or ``~user`` cannot be expanded (no such user, no home).
    """
    rules = R.get_rules(rules)
    source = ""
    if cache_dir is None:
        source = f" (from ${CACHE_DIR_ENV})" if os.environ.get(CACHE_DIR_ENV) else ""
        cache_dir = os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", rules.name)[:40]
    try:
        folder = Path(cache_dir).expanduser()
    except RuntimeError:  # "~nosuchuser/x", or "~" without a home directory
        home = os.fspath(cache_dir).split("/", 1)[0]
        raise ValueError(
            f"cannot use the cache folder '{os.fspath(cache_dir)}'{source}: '{home}' names no user's home directory"
        ) from None
    return folder / f"{name}-{cache_key(rules)[:16]}.npz"


def _save(path: Path, solution: Solution) -> None:
    """Writes the solution's arrays with their key and checksum, atomically (:func:`yacht_env.util.save_arrays`)."""
    arrays = {"start_values": solution.start_values, "keep_values": solution.keep_values}
    save_arrays(path, cache_key(solution.rules), arrays)


def _load(path: Path, rules: R.Rules) -> Solution | None:
    """The cached solution at ``path``, or ``None`` if it is missing or fails any check."""
    specs = {
        "start_values": ((rules.num_open_masks,), np.float64),
        "keep_values": (keep_values_shape(rules), np.float64),
    }
    arrays = load_arrays(path, cache_key(rules), specs)
    if arrays is None or arrays["start_values"][0] != 0.0:
        return None
    return Solution(rules, arrays["start_values"], arrays["keep_values"], source="disk")


def clear_memo() -> None:
    """Forgets the in-process solutions, so the next :func:`solve` reads the disk cache (or solves)."""
    _MEMO.clear()


def solve(
    rules: str | R.Rules = "standard", *, cache: bool = True, cache_dir: str | os.PathLike | None = None
) -> Solution:
    """The exact optimal policy of solo Yacht under ``rules``.

    Args:
        rules: A preset name (``"standard"``, ``"classic"``) or a :class:`~yacht_env.rules.Rules`.
        cache: Use the in-process memo and the disk cache: return a memoised solution, else load a
            verified cache file, else solve and write one. ``False`` always solves and stores nothing.
        cache_dir: The cache folder; defaults to ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``.

    Raises:
        ValueError: unknown rules, or a cache folder whose ``~user`` cannot be expanded (see :func:`cache_path`).

    A cache file that is missing, damaged, of another rules or solver version, or fails its checksum is
    rebuilt and overwritten; a cache folder that cannot be written, or a directory, FIFO, device or read-only
    file at the cache file's path, only warns.
    """
    rules = R.get_rules(rules)
    if not cache:
        return Solution(rules, *_solve_arrays(rules))
    compute = lambda: Solution(rules, *_solve_arrays(rules))  # noqa: E731
    load = lambda path: _load(path, rules)  # noqa: E731
    return memoised_cache(_MEMO, "solver cache", rules, cache_path(rules, cache_dir), load, compute, _save)
