"""The exact optimal policy of solo Yacht and its family, by backward induction over the rules core's tables.

A decision state is ``(open_mask, roll, rolls_left)`` (see :mod:`yacht_env.rules`); under the family's rules
(``rules.has_bonuses``: Yahtzee, Yatzy) a turn start also carries the bonus state ``(upper, armed)``, the upper
subtotal capped at the threshold and whether the Yahtzee box holds its points. Write ``S`` for the expected
points from the start of a turn to the end of the game (``S = 0`` once every category is filled), ``P`` for
``TRANSITION``. For each turn-start state, in order of increasing number of open categories (so every state a
pick leads to is already solved):

* ``V0[r] = max over legal k of points(r, k) + S[the state after k]``: no re-rolls left, a category must be
  picked (Yacht: ``SCORE[r, k] + S[O without k]``; the family: :func:`yacht_env.rules.pick_outcome`, bonuses
  and jokers included, over the picks :func:`yacht_env.rules.legal_picks` allows);
* ``EK_t[K] = sum over r' of P[K, r'] * V_{t-1}[r']``: keeping multiset ``K`` with ``t`` re-rolls left re-rolls
  the other dice and goes on with ``t - 1``;
* ``V_t[r] = max(V0[r], max over sub-multisets K of r of EK_t[K])`` for ``t = 1, 2``;
* ``S = sum over r of P[empty, r] * V2[r]``: a turn starts with a roll of all five dice.

Keeping all five dice (mask ``31``) is never legal and never needed: it leads to the same roll with fewer
re-rolls, which cannot beat acting now.

**Yacht's presets** (no bonuses; 4,096 open masks): all masks of one popcount are solved together, ``EK_t`` as
one matrix product ``V_{t-1} @ P.T`` and the max over a roll's sub-multisets level by level (the best
sub-multiset of ``K`` is ``K`` itself or the best sub-multiset of one of its children, ``K`` less one die); about
0.05 s. :class:`Solution` keeps ``S`` ``(4096,)`` and ``EK_1``, ``EK_2`` ``(2, 4096, 210)`` (for the 210 multisets
of 0..4 dice a legal keep can keep; 14 MB); every action value is a lookup into them.

**The family** (about 0.5 M reachable turn-start states for Yahtzee, 1.4 M for Yatzy): only ``S`` is kept,
``(num_open_masks, *rules.bonus_shape)``, NaN at the states no game reaches (an upper subtotal the filled
upper boxes cannot make, an armed Yahtzee box that is not filled). :mod:`yacht_env.family_solver` solves it, a
level of turn-start states at once, in a few seconds for Yahtzee. Within-turn values are recomputed on demand for
the batch of positions a query asks about (a pick: its points plus ``S``; a keep: the same recurrence for its
state).

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
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.family_solver import in_chunks, solve_family, turn
from yacht_env.family_states import check_bonus_states, check_state_array, picks_for, reachable_states
from yacht_env.turn_rows import KEEP_PROPER, KEEP_ROW, KEPT_SIZE, NUM_PROPER_KEPT, one_die_less
from yacht_env.util import CACHE_DIR_ENV as CACHE_DIR_ENV  # the cache folder's variable, the solver's name for it
from yacht_env.util import cache_folder, cache_stem, load_arrays, memoised_cache, save_arrays

SOLVER_FORMAT_VERSION = 1  # bump when the recurrence or the stored arrays change; old cache files are ignored
FAMILY_FORMAT_VERSION = 1  # likewise for the family's files only (Yacht's presets keep their keys and files)


def keep_values_shape(rules: str | R.Rules = "standard") -> tuple[int, int, int]:
    """Shape of :attr:`Solution.keep_values`: ``(2, num_open_masks, 210)``."""
    return (R.MAX_ROLLS_LEFT, R.get_rules(rules).num_open_masks, NUM_PROPER_KEPT)


#: Yacht's (12 categories): (2, 4096, 210).
KEEP_VALUES_SHAPE = keep_values_shape()


def _category_bits(rules: R.Rules) -> np.ndarray:
    return 1 << np.arange(rules.num_categories)


def _child_tables() -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """The "one die less" relation between kept multisets as padded tables.

    Returns ``levels`` and ``roll_children``. ``levels[j - 1] = (parents, children)``: the kept multisets
    of ``j`` dice and, per parent, its distinct children (``j - 1`` dice), padded to ``j`` columns by
    repeating one. ``roll_children[r]``: the multisets of four dice under roll ``r``, padded to 5.
    """
    children = one_die_less()

    def padded(parents: np.ndarray, width: int) -> np.ndarray:
        rows = [sorted(children[int(p)]) for p in parents]
        return np.array([row + row[:1] * (width - len(row)) for row in rows], dtype=np.intp)

    levels = []
    for size in range(1, R.NUM_DICE):
        parents = np.flatnonzero(KEPT_SIZE == size)
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
    (for Yacht's 12 categories; ``num_open_masks`` in general).
    """
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
def check_states(rules: R.Rules, roll, rolls_left, open_mask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(roll, rolls_left, open_mask)`` as broadcast ``intp`` arrays, each checked against ``rules`` (at least one
    category open): one ``ValueError`` naming the first bad value.
    """
    roll = check_state_array("roll", roll, 0, R.NUM_ROLLS - 1, "a sorted-roll index, see rules.roll_index")
    rolls_left = check_state_array("rolls_left", rolls_left, 0, R.MAX_ROLLS_LEFT, "re-rolls left this turn")
    open_mask = check_state_array(
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
        start_values: Expected points from the start of a turn to the end of the game, bonuses included
            (0 once every category is filled). Yacht's presets: ``(4096,)`` float64 by open mask (``(2 **
            num_categories,)`` in general). The family (``rules.has_bonuses``): ``(num_open_masks,
            *rules.bonus_shape)`` float64 by ``(open_mask, upper, armed)``, ``(8192, 64, 2)`` for Yahtzee, NaN
            at the states no game reaches (an upper subtotal the filled upper boxes cannot make, an armed
            Yahtzee box that is not filled).
        keep_values: Yacht's presets: ``(2, 4096, 210)`` float64: ``keep_values[t - 1, O, K]`` is the expected
            points to the end of the game after keeping ``KEPT[K]`` (0..4 dice) with ``t`` re-rolls left, open
            mask ``O``. ``None`` for the family, whose within-turn values (gigabytes) are computed on demand for
            the positions a query asks about.
        source: ``"solved"`` if computed in this process, ``"disk"`` if loaded from the disk cache.

    States are the rules core's integers: ``roll`` 0..251, ``rolls_left`` 0..2, ``open_mask`` 1..2 **
    num_categories - 1, and for the family ``upper`` (0..threshold) and ``armed`` (0/1; only with a Yahtzee
    bonus). The batched methods take ints or broadcastable int arrays and do no Python loop per state.
    """

    def __init__(
        self, rules: R.Rules, start_values: np.ndarray, keep_values: np.ndarray | None = None, source: str = "solved"
    ):
        self.rules = rules
        self.start_values = np.asarray(start_values, dtype=np.float64)
        self.start_values.flags.writeable = False
        self.keep_values = None if keep_values is None else np.asarray(keep_values, dtype=np.float64)
        if self.keep_values is not None:
            self.keep_values.flags.writeable = False
        self.expected_score = float(self.start_values[(rules.all_open, 0, 0) if rules.has_bonuses else rules.all_open])
        self.source = source
        self._score = R.score_table(rules).astype(np.float64)
        self._category_bits = _category_bits(rules)
        if rules.has_bonuses:  # ahead[1 + flat state]: S of every turn start, -inf in front (see family_states.Picks)
            self._ahead = np.concatenate([[-np.inf], self.start_values.ravel()])

    def __repr__(self) -> str:
        return f"Solution(rules={self.rules.name!r}, expected_score={self.expected_score:.4f})"

    def q_values(self, roll, rolls_left, open_mask, upper=0, armed=0, canonical_keeps: bool = True) -> np.ndarray:
        """Action values of states, shape ``(..., num_actions)`` float64, ``-inf`` for illegal actions.

        The value of an action is the expected points from this decision to the end of the game (a pick
        includes its own points, bonuses included) if it is taken and optimal play follows. Legality is exactly
        :func:`yacht_env.rules.legal_action_mask` with ``canonical_keeps`` over the picks
        :func:`yacht_env.rules.legal_picks` allows.

        Raises:
            ValueError: a state out of range, ``upper`` or ``armed`` other than 0 for rules without them, or a
                family state no game reaches.
        """
        rules = self.rules
        roll, rolls_left, open_mask = check_states(rules, roll, rolls_left, open_mask)
        upper, armed = check_bonus_states(rules, upper, armed)
        try:
            roll, rolls_left, open_mask, upper, armed = np.broadcast_arrays(roll, rolls_left, open_mask, upper, armed)
        except ValueError:
            raise ValueError(
                f"upper and armed must broadcast with the states' shape {roll.shape}, got {upper.shape} and "
                f"{armed.shape}"
            ) from None
        if rules.has_bonuses:
            return self._family_q_values(roll, rolls_left, open_mask, upper, armed, canonical_keeps)
        legal = R.legal_action_mask(roll, rolls_left, open_mask, canonical_keeps, rules.num_categories)
        picks = self._score[roll] + self.start_values[open_mask[..., None] & ~self._category_bits]
        # Row (t - 1) * 4096 + O of the flattened keep values; rolls_left 0 reads row O (masked out anyway).
        row = np.maximum(rolls_left - 1, 0)[..., None] * rules.num_open_masks + open_mask[..., None]
        keeps = self.keep_values.reshape(-1, NUM_PROPER_KEPT)[row, KEEP_PROPER[roll]]
        return np.where(legal, np.concatenate([keeps, picks], axis=-1), -np.inf)

    def _family_q_values(self, roll, rolls_left, open_mask, upper, armed, canonical_keeps: bool) -> np.ndarray:
        rules = self.rules
        armed_states = rules.bonus_shape[1]
        reachable = reachable_states(rules)[open_mask, upper, armed]
        if not reachable.all():
            i = np.unravel_index(np.flatnonzero(~reachable.ravel())[0], reachable.shape)
            raise ValueError(
                f"no game reaches open_mask={open_mask[i]}, upper={upper[i]}, armed={armed[i]}: upper must be a "
                f"subtotal the filled upper boxes can make and armed needs the Yahtzee box filled"
            )
        picks_word = R.legal_picks(rules, roll, open_mask)
        legal = R.legal_action_mask(roll, rolls_left, picks_word, canonical_keeps, rules.num_categories)
        # A pick: its points (pick_outcome) plus the start of the next turn in the state it leaves.
        categories = np.arange(rules.num_categories)
        state = (roll[..., None], categories, open_mask[..., None], upper[..., None], armed[..., None])
        points, _, next_upper, next_armed = R.pick_outcome(rules, *state)
        after = (open_mask[..., None] & ~self._category_bits) * rules.bonus_shape[0] + next_upper
        picks = points + self._ahead[1 + after * armed_states + next_armed]
        # A keep: the recurrence for just the states with re-rolls left, each distinct state once.
        keeps = np.zeros((*roll.shape, R.NUM_KEEPS))
        picks_table = picks_for(rules)
        width = picks_table.width
        for t in range(1, R.MAX_ROLLS_LEFT + 1):
            at = rolls_left == t
            if at.any():
                states, column = np.unique(
                    open_mask[at] * width + upper[at] * armed_states + armed[at], return_inverse=True
                )
                values = in_chunks(lambda o, b, t=t: turn(picks_table, self._ahead, o, b, t), *np.divmod(states, width))
                keeps[at] = values[KEEP_ROW[roll[at]], column.reshape(-1, 1)]
        return np.where(legal, np.concatenate([keeps, picks], axis=-1), -np.inf)

    def values(self, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray | float:
        """The optimal value of states (the largest action value), shape of the inputs, float64."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask, upper, armed).max(axis=-1), float)

    def best_action(self, roll, rolls_left, open_mask, upper=0, armed=0) -> np.ndarray | int:
        """The optimal action of states (canonical keeps; ties go to the smallest action index)."""
        return _scalar_or_array(self.q_values(roll, rolls_left, open_mask, upper, armed).argmax(axis=-1), int)

    def action_values(
        self, dice, rolls_left: int, open_categories, canonical_keeps: bool = True, *, upper: int = 0, armed=False
    ) -> np.ndarray:
        """Action values of one state given as the player sees it, shape ``(num_actions,)`` float64.

        Args:
            dice: Five values in 1..6, in any order. Keep-mask bits refer to the dice sorted ascending.
            rolls_left: Re-rolls left this turn, an int in 0..2.
            open_categories: The open categories: names/indices, a boolean mask (one entry per category) or an
                int mask.
            canonical_keeps: Whether only the canonical mask of each kept multiset is legal (as the env).
            upper: The family's rules with an upper bonus: the upper subtotal so far, capped at the threshold
                (an int in ``0..bonus_shape[0] - 1``); 0 otherwise.
            armed: Rules with a Yahtzee bonus: whether the Yahtzee box holds its points (a bool, or 0 / 1).

        Returns:
            Per action (0..31 keep-masks, ``32 + k`` pick category ``k``) the expected points from this
            decision to the end of the game if taken and followed by optimal play; ``-inf`` if illegal.

        Raises:
            ValueError: bad dice, rolls_left, open categories, upper or armed (or a state no game reaches); the
                message says what is accepted.
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
        uppers, armed_states = self.rules.bonus_shape
        if not R.is_int(upper) or not 0 <= upper < uppers:
            raise ValueError(
                f"upper must be an int in 0..{uppers - 1} (the upper subtotal, capped at the bonus threshold), "
                f"got {upper!r}"
                if uppers > 1
                else f"upper must be 0: rules {self.rules.name!r} have no upper bonus, got {upper!r}"
            )
        if not (isinstance(armed, (bool, np.bool_)) or R.is_int(armed)) or not 0 <= armed < armed_states:
            raise ValueError(
                f"armed must be True or False (whether the Yahtzee box holds its points), got {armed!r}"
                if armed_states > 1
                else f"armed must be False: rules {self.rules.name!r} have no Yahtzee bonus, got {armed!r}"
            )
        roll = R.roll_index(values)
        return self.q_values(roll, int(rolls_left), open_mask, int(upper), int(armed), canonical_keeps)


# --------------------------------------------------------------------------------------------------
# Solving, the disk cache and the in-process memo
# --------------------------------------------------------------------------------------------------
_MEMO: dict[R.Rules, Solution] = {}


def cache_key(rules: str | R.Rules = "standard") -> str:
    """The hex digest identifying a solution: the rules' fields and :data:`SOLVER_FORMAT_VERSION` (and, for rules
    with bonuses, :data:`FAMILY_FORMAT_VERSION`).
    """
    rules = R.get_rules(rules)
    payload = {"rules": rules.as_dict(), "solver_format_version": SOLVER_FORMAT_VERSION}
    if rules.has_bonuses:
        payload["family_format_version"] = FAMILY_FORMAT_VERSION
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def cache_path(rules: str | R.Rules = "standard", cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache file of a rules preset: ``<cache_dir>/<name>-<key prefix>.npz``.

    ``cache_dir`` defaults to ``$YACHT_RL_CACHE_DIR``, else ``~/.cache/yacht-rl``.

    Raises:
        ValueError: unknown rules, or a folder whose ``~`` or ``~user`` cannot be expanded (no such user, no home).
    """
    rules = R.get_rules(rules)
    return cache_folder(cache_dir) / f"{cache_stem(rules.name)}-{cache_key(rules)[:16]}.npz"


def _save(path: Path, solution: Solution) -> None:
    """Writes the solution's arrays with their key and checksum, atomically (:func:`yacht_env.util.save_arrays`).

    The family's file holds only the start values of the reachable states (the rest are NaN, by rule).
    """
    rules = solution.rules
    if rules.has_bonuses:
        arrays = {"start_values": solution.start_values[reachable_states(rules)]}
    else:
        arrays = {"start_values": solution.start_values, "keep_values": solution.keep_values}
    save_arrays(path, cache_key(rules), arrays)


def _load(path: Path, rules: R.Rules) -> Solution | None:
    """The cached solution at ``path``, or ``None`` if it is missing or fails any check."""
    if rules.has_bonuses:
        reachable = reachable_states(rules)
        arrays = load_arrays(path, cache_key(rules), {"start_values": ((int(reachable.sum()),), np.float64)})
        if arrays is None:
            return None
        start_values = np.full(reachable.shape, np.nan)
        start_values[reachable] = arrays["start_values"]
        return Solution(rules, start_values, source="disk") if (start_values[0] == 0.0).all() else None
    specs = {
        "start_values": ((rules.num_open_masks,), np.float64),
        "keep_values": (keep_values_shape(rules), np.float64),
    }
    arrays = load_arrays(path, cache_key(rules), specs)
    if arrays is None or arrays["start_values"][0] != 0.0:
        return None
    return Solution(rules, arrays["start_values"], arrays["keep_values"], source="disk")


def _solution(rules: R.Rules) -> Solution:
    return Solution(rules, solve_family(rules)) if rules.has_bonuses else Solution(rules, *_solve_arrays(rules))


def clear_memo() -> None:
    """Forgets the in-process solutions, so the next :func:`solve` reads the disk cache (or solves)."""
    _MEMO.clear()


def solve(
    rules: str | R.Rules = "standard", *, cache: bool = True, cache_dir: str | os.PathLike | None = None
) -> Solution:
    """The exact optimal policy of solo Yacht (or a game of its family) under ``rules``.

    Args:
        rules: A preset name (``"standard"``, ``"yahtzee"``, ...) or a :class:`~yacht_env.rules.Rules`.
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
        return _solution(rules)
    compute = lambda: _solution(rules)  # noqa: E731
    load = lambda path: _load(path, rules)  # noqa: E731
    return memoised_cache(_MEMO, "solver cache", rules, cache_path(rules, cache_dir), load, compute, _save)
