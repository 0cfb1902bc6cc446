"""Exact score distributions of a policy under the family's rules (an upper bonus, a Yahtzee bonus, a joker: Yahtzee,
Yatzy, Clubhouse), from every reachable turn start: the solver's (:func:`yacht_env.family_distributions.
solver_policy`), or any other given as its actions at every roll of a batch of turn starts (the search agent's own solo
play, :func:`yacht_agents.search_turn.family_policy`). Nothing here reads a solver.

:mod:`yacht_env.distributions` states the recurrence and computes it for Yacht's presets, whose turn start is an open
mask. Under the family's rules a turn start is ``(open_mask, upper, armed)`` (:mod:`yacht_env.family_states`): some
0.5 M reachable states for Yahtzee, 1.4 M for Yatzy, each with a distribution over up to ``max_total + 1`` values
(1,576 for Yahtzee). The recurrence is Yacht's, a level of states (one number of open boxes) at a time:

* the policy's action at every ``(state, roll, rolls_left)`` (the solver's,
  :func:`yacht_env.family_distributions.solver_actions`: exactly
  :meth:`~yacht_env.solver.Solution.best_action`, ties to the smallest action, from the same float operations);
* the turn run forwards under it (:func:`turn_ends`, Yacht's forward run laid out by rows, re-rolled one die at a
  time): the probability ``W[s, o]`` that the turn from state ``s`` ends in pick outcome ``o``
  (:class:`~yacht_env.family_states.Outcomes`: a
  box and a class of rolls that score alike there, or a five of a kind, which carries the joker and the Yahtzee
  bonus);
* ``D[s] = sum over o of W[s, o] * (D[next(s, o)] shifted by points(s, o))``, where the outcome's points include the
  bonuses it earns and ``next`` is the state it leaves: one level below, so two levels are held at a time.

**Storage.** Each state's distribution is kept as its cumulative distribution ``P(points to come <= x)``, float32,
over a trimmed support: from the first ``x`` where the exact (float64) value reaches ``2^-25`` to the first where it
passes ``1 - 2^-25`` (stored as exactly 1). So every stored value is within ``2^-24`` of the exact one, and the tails
cut off (a handful of Yahtzee bonuses more than the last stored total) hold less than ``2^-25`` each. Rows are
stored one after the other, a level at a time (states ordered by their number of open boxes, then by ``open_mask,
upper, armed``): ``offset[i]`` (the first ``x`` stored) and ``length[i]`` per state, one flat float32 array; beside
it the policy, ``(states, 3, 252)`` uint8, which a player needs at every roll of its turn. On disk both are raw
little-endian files beside the solver's cache (the solver's policy's ``<name>-dist-<key>.cdf`` and ``.policy``; a
search agent's ``<name>-search-dist-<key>``, keyed by its network's weights), memory-mapped on load,
so a process holds only the rows it reads; the ``.npz`` beside them holds the index, the key and each data file's
size and checksum, and is written last (:func:`load` checks them all).

Figures (this project's shared 2-core machine; the build's CPU time on two threads, its peak memory):

=============  =========  ==========  =====================  =========  ======
preset         states     values      files (cdf + policy)   build CPU  peak
=============  =========  ==========  =====================  =========  ======
``yahtzee``    536,448    240.6 M     963 MB + 406 MB        62 s       2.6 GB
``yatzy``      1,430,528  237.6 M     951 MB + 1,082 MB      89 s       2.6 GB
``clubhouse``  178,816    26.0 M      104 MB + 135 MB        11 s       0.5 GB
=============  =========  ==========  =====================  =========  ======

The search agent's own play (``search:selfplay_yahtzee``'s solo network, its plan of every turn start included):
240.6 M values, the same files' sizes, 134 s of CPU (99 s of wall time) and 3.7 GB at its peak.
"""

from __future__ import annotations

import contextlib
import os
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_env.family_states import Outcomes, check_bonus_states, check_state_array, outcomes_for, state_ids
from yacht_env.turn_rows import NUM_PROPER_KEPT, one_die_less
from yacht_env.util import atomic_output, check_writable, load_arrays, save_arrays

FAMILY_DISTRIBUTION_FORMAT_VERSION = 1  # bump when the stored arrays or their meaning change
#: The stored cumulative distributions' trim: below it a value is 0, from ``1 - TRIM`` on it is 1 (float32's
#: half step at 1, so that every stored value is the float32 nearest the exact one, or 0 or 1 within ``TRIM``).
TRIM = 2.0**-25
_CHUNK = 256  # states per chunk: the (252, C, n) pick values and (4116, n) keep values stay a few MB
_THREADS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
_READ_BLOCK = 1 << 24  # bytes per read when the data file's checksum is verified


def _one_die_more() -> list[tuple[np.ndarray, np.ndarray]]:
    """Per size ``j = 1..5``: the kept multisets of ``j`` dice (indices in ``KEPT``; the rolls are ``KEPT[210:]``) and
    their distinct children of one die less, padded with 462 (a row of zeros).
    """
    children = one_die_less()
    sizes = np.array([len(kept) for kept in R.KEPT])
    levels = []
    for size in range(1, R.NUM_DICE + 1):
        parents = np.flatnonzero(sizes == size)
        rows = [sorted(children[int(p)]) for p in parents]
        padded = [row + [len(R.KEPT)] * (size - len(row)) for row in rows]
        levels.append((parents, np.array(padded, dtype=np.intp)))
    return levels


_ONE_DIE_MORE = _one_die_more()
_FIRST_ROLL = R.TRANSITION[0][:, None]


def turn_ends(actions: np.ndarray, outcome: np.ndarray, count: int) -> np.ndarray:
    """``(count, n)``: the probability that the turn from each of ``n`` turn starts ends in each pick outcome, the turn
    run forwards under ``actions`` (:func:`solver_actions`' ``(3, 252, n)``), as Yacht's
    (:func:`yacht_env.distributions.turn_outcomes`): the chance of reaching each ``(roll, t)`` flows from the first
    roll through the chosen keeps into the picks, laid out here by rows and re-rolled one die at a time (each kept
    multiset passes its mass on, a sixth to each multiset with one die more: some 1,300 additions per state where a
    product with the transition matrix takes 53,000), as the family's states are many.

    Args:
        actions: ``(3, 252, n)`` ints: the action at ``[rolls_left, roll, state]``, legal there.
        outcome: ``(252, C)`` ints: the outcome of scoring roll ``r`` in box ``k`` (:attr:`Outcomes.of_pick`).
        count: How many outcomes there are.
    """
    n = actions.shape[2]
    column = np.arange(n)
    rolls = np.arange(R.NUM_ROLLS)[:, None]
    ends = np.zeros(count * n)
    reach = np.broadcast_to(_FIRST_ROLL, (R.NUM_ROLLS, n))  # P(the turn reaches (r, t)), t = 2 first
    mass = np.zeros((len(R.KEPT) + 1, n))  # by kept multiset, then a row of zeros
    for t in range(R.MAX_ROLLS_LEFT, -1, -1):
        action = actions[t].astype(np.intp)
        pick = action >= R.PICK_OFFSET
        where = outcome[rolls, np.where(pick, action - R.PICK_OFFSET, 0)] * n + column
        ends += np.bincount(where.ravel(), (reach * pick).ravel(), minlength=ends.size)
        if t == 0:
            break
        where = R.KEEP[rolls, np.where(pick, 0, action)].astype(np.intp) * n + column
        mass[:NUM_PROPER_KEPT] = np.bincount(
            where.ravel(), (reach * ~pick).ravel(), minlength=NUM_PROPER_KEPT * n
        ).reshape(NUM_PROPER_KEPT, n)
        mass[NUM_PROPER_KEPT:-1] = 0.0
        for parents, children in _ONE_DIE_MORE:
            added = mass[children[:, 0]]
            for c in range(1, children.shape[1]):
                added += mass[children[:, c]]
            mass[parents] += added / R.NUM_FACES
        reach = mass[NUM_PROPER_KEPT:-1].copy()
    return ends.reshape(count, n)


# --------------------------------------------------------------------------------------------------
# The build: a level of states at a time
# --------------------------------------------------------------------------------------------------
def _stored_rows(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offset, length, values)`` of distributions ``(n, width)`` float64 as the store keeps them (the module
    docstring): each row's cumulative distribution, float32, from its first value ``>= TRIM`` to its first ``>= 1 -
    TRIM`` (stored as 1), the rows one after the other.
    """
    cdf = np.cumsum(dist, axis=1)
    offset = (cdf < TRIM).sum(axis=1)
    end = (cdf < 1 - TRIM).sum(axis=1)  # the first x at 1 - TRIM or more: the last value stored
    length = end - offset + 1
    columns = np.arange(cdf.shape[1])
    keep = (columns >= offset[:, None]) & (columns <= end[:, None])
    values = cdf.astype(np.float32)
    values[np.arange(len(cdf)), end] = 1.0
    return offset.astype(np.int32), length.astype(np.int32), values[keep]


def _level(
    outcomes: Outcomes,
    policy,
    flat: np.ndarray,
    previous: np.ndarray,
    previous_row: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The policy's actions ``(n, 3, 252)`` and the distributions ``(n, width)`` float64 of the states ``flat`` (one
    level), from the level below: ``previous`` ``(m, w)``, whose row for a flat state ``x`` is ``previous_row[x]``.
    """
    width = outcomes.picks.width
    open_mask, bonus = np.divmod(flat, width)
    actions = np.asarray(policy(open_mask, bonus), dtype=np.uint8)
    ends = turn_ends(actions, outcomes.of_pick, outcomes.count)  # (outcomes, n)
    points, after = outcomes.at(open_mask, bonus)
    outcome, state = np.nonzero(ends)
    weight = ends[outcome, state]
    shift = points[outcome, state]
    source = previous_row[after[outcome, state]]
    top = int(points.max(initial=0))
    out = np.zeros((len(flat), previous.shape[1] + top))
    # One batch per outcome and shift: a state appears at most once in it, so the rows add without a scatter.
    order = np.lexsort((shift, outcome))
    state, weight, shift, source, outcome = state[order], weight[order], shift[order], source[order], outcome[order]
    key = outcome * (top + 1) + shift
    cuts = np.flatnonzero(np.diff(key)) + 1
    w = previous.shape[1]
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(key)], strict=True):
        s = shift[lo]
        rows = state[lo:hi]
        out[rows, s : s + w] += weight[lo:hi, None] * previous[source[lo:hi]]
    return actions.transpose(2, 0, 1), out


def build(rules: R.Rules, policy, write_cdf, write_policy) -> tuple[np.ndarray, np.ndarray]:
    """The distributions of a policy from every reachable turn start, a level at a time, streamed out.

    Args:
        rules: A family's rules.
        policy: ``(open_mask, bonus) -> (3, 252, n)`` uint8: the action at ``[rolls_left, roll, state]`` of states
            ``(n,)`` (:func:`solver_policy`, or an agent's own), legal there (canonical keeps); called from two
            threads at once.
        write_cdf: Called with each level's stored cumulative distributions (float32, the rows one after the other),
            and last with as many zeros as the longest row has values.
        write_policy: Called with each level's actions (uint8 ``(states, 3, 252)``).

    Returns:
        ``(offset, length)`` int32 per state (:func:`state_ids`' order).
    """
    outcomes = outcomes_for(rules)
    ids = state_ids(rules).ravel()
    flat_of = np.empty(int((ids >= 0).sum()), dtype=np.intp)
    flat_of[ids[ids >= 0]] = np.flatnonzero(ids >= 0)
    width = outcomes.picks.width
    popcount = R.open_bits(rules.num_categories).sum(axis=1)[flat_of // width]
    offset = np.zeros(len(flat_of), dtype=np.int32)
    length = np.zeros(len(flat_of), dtype=np.int32)
    bounds = np.searchsorted(popcount, np.arange(rules.num_categories + 2))
    previous = np.ones((bounds[1], 1))  # every box filled: nothing more to come
    offset[: bounds[1]], length[: bounds[1]] = 0, 1
    write_cdf(np.ones(bounds[1], dtype=np.float32))
    write_policy(np.zeros((bounds[1], R.ROLLS_PER_TURN, R.NUM_ROLLS), dtype=np.uint8))
    for level in range(1, rules.num_categories + 1):
        first, stop = bounds[level], bounds[level + 1]
        previous_row = np.zeros(len(ids), dtype=np.intp)
        below = slice(bounds[level - 1], first)
        previous_row[flat_of[below]] = np.arange(first - bounds[level - 1])
        flat = flat_of[first:stop]
        starts = range(0, len(flat), _CHUNK)
        work = lambda s: _level(outcomes, policy, flat[s : s + _CHUNK], previous, previous_row)  # noqa: E731,B023
        if _THREADS == 1 or len(starts) == 1:
            parts = [work(s) for s in starts]
        else:
            with ThreadPoolExecutor(_THREADS) as pool:
                parts = list(pool.map(work, starts))
        columns = max(part[1].shape[1] for part in parts)
        current = np.zeros((len(flat), columns))
        for s, (actions, dist) in zip(starts, parts, strict=True):
            current[s : s + len(dist), : dist.shape[1]] = dist
            write_policy(actions)
        del parts
        used = np.flatnonzero(current.any(axis=0))
        current = current[:, : used[-1] + 1]
        for s in range(0, len(flat), 4096):
            o, n, values = _stored_rows(current[s : s + 4096])
            offset[first + s : first + s + len(o)], length[first + s : first + s + len(o)] = o, n
            write_cdf(values)
        previous = current
    write_cdf(np.zeros(length.max(), dtype=np.float32))  # so that every row reads as a window of the longest's length
    return offset, length


# --------------------------------------------------------------------------------------------------
# The distributions, their disk cache and the in-process memo
# --------------------------------------------------------------------------------------------------
class FamilyDistributions:
    """The distribution of the points still to come under a policy (the solver's, or an agent's own) from every
    reachable turn start of a family's rules (see the module docstring), with the policy itself.

    Attributes:
        rules: The :class:`~yacht_env.rules.Rules`.
        solution: The solver's :class:`~yacht_env.solver.Solution` whose policy is followed, or ``None`` (another
            policy's).
        ids: ``(num_open_masks, *bonus_shape)`` int32: each turn start's row (:func:`state_ids`), -1 where no game goes.
        offset, length: ``(states,)`` int32: row ``i`` stores ``P(points to come <= x)`` for ``x = offset[i] ..
            offset[i] + length[i] - 1`` (0 below, 1 from the last on, which is stored as 1).
        start: ``(states,)`` int64: where row ``i`` begins in ``cdf``.
        cdf: ``(values,)`` float32: the rows one after the other, then as many zeros as the longest row has values (so
            every row reads as a window of that length; memory-mapped when read from the cache).
        policy: ``(states, 3, 252)`` uint8: the solver's action at ``[row, rolls_left, roll]``
            (:meth:`~yacht_env.solver.Solution.best_action`; memory-mapped when read from the cache).
        width: ``max_total + 1``: every total a game can make.
        source: ``"computed"`` or ``"disk"``.
    """

    def __init__(self, rules: R.Rules, offset, length, cdf, policy, source: str = "computed", solution=None):
        self.rules = rules
        self.solution = solution
        self.ids = state_ids(self.rules)
        self.offset = np.asarray(offset, dtype=np.int32)
        self.length = np.asarray(length, dtype=np.int32)
        self.start = np.concatenate([[0], np.cumsum(self.length, dtype=np.int64)[:-1]])
        self.cdf, self.policy = cdf, policy
        for array in (self.offset, self.length, self.start, self.cdf, self.policy):
            array.flags.writeable = False
        self.width = R.max_total(self.rules) + 1
        self.source = source
        self.outcomes = outcomes_for(self.rules)

    def __repr__(self) -> str:
        return f"FamilyDistributions(rules={self.rules.name!r}, states={len(self.offset):,}, values={len(self.cdf):,})"

    @property
    def nbytes(self) -> int:
        """The bytes of the stored rows and policy (what the cache's data files hold)."""
        return self.cdf.nbytes + self.policy.nbytes

    def rows(self, open_mask, upper=0, armed=0) -> np.ndarray:
        """The rows (:attr:`ids`) of turn starts, as the solver's queries take them (broadcast int arrays).

        Raises:
            ValueError: a state out of range, or one no game reaches (as :meth:`~yacht_env.solver.Solution.q_values`).
        """
        open_mask = check_state_array(
            "open_mask", open_mask, 0, self.rules.all_open, f"a {self.rules.num_categories}-bit mask of the open boxes"
        )
        upper, armed = check_bonus_states(self.rules, upper, armed)
        open_mask, upper, armed = np.broadcast_arrays(open_mask, upper, armed)
        rows = self.ids[open_mask, upper, armed]
        if (rows < 0).any():
            i = np.unravel_index(np.flatnonzero(rows.ravel() < 0)[0], rows.shape)
            raise ValueError(
                f"no game reaches open_mask={open_mask[i]}, upper={upper[i]}, armed={armed[i]}: upper must be a "
                f"subtotal the filled upper boxes can make and armed needs the Yahtzee box filled"
            )
        return rows.astype(np.intp)

    def cdf_at(self, rows: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``P(points to come <= x)`` float64 of rows ``rows`` at ints ``x`` (broadcast): 0 below each row's support,
        1 from its last stored value on.
        """
        rows, x = np.broadcast_arrays(np.asarray(rows), np.asarray(x))
        at = x - self.offset[rows]
        inside = np.clip(at, 0, self.length[rows] - 1)
        return np.where(at >= 0, self.cdf[self.start[rows] + inside], 0.0).astype(np.float64)

    def distribution(self, open_mask: int, upper: int = 0, armed: int = 0) -> np.ndarray:
        """``(width,)`` float64: ``P(x more points)`` from the turn start ``(open_mask, upper, armed)``."""
        row = int(self.rows(open_mask, upper, armed))
        cdf = self.cdf_at(row, np.arange(self.width))
        return np.diff(cdf, prepend=0.0)

    def mean(self) -> np.ndarray:
        """``(num_open_masks, *bonus_shape)``: the mean of each turn start's distribution, NaN where no game goes (the
        solver's ``start_values``, to the stored rows' precision).
        """
        stored = self.cdf[: self.start[-1] + self.length[-1]]
        above = self.length - np.add.reduceat(stored, self.start, dtype=np.float64)  # sum over x of P(X > x)
        out = np.full(self.ids.shape, np.nan)
        reached = self.ids >= 0
        out[reached] = (self.offset + above)[self.ids[reached]]
        return out

    def actions(self, rows: np.ndarray) -> np.ndarray:
        """``(n, 3, 252)`` uint8: the solver's policy at rows ``rows`` (``[state, rolls_left, roll]``)."""
        return np.asarray(self.policy[np.asarray(rows)])


def _data_paths(index: Path) -> tuple[Path, Path]:
    return index.with_suffix(".cdf"), index.with_suffix(".policy")


class _Writer:
    """Appends arrays to a binary file, keeping its CRC-32 and size."""

    def __init__(self, file) -> None:
        self.file, self.crc, self.size = file, 0, 0

    def __call__(self, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array).tobytes()
        self.file.write(data)
        self.crc, self.size = zlib.crc32(data, self.crc), self.size + len(data)


def build_in_memory(rules: R.Rules, policy, solution=None) -> FamilyDistributions:
    """The distributions of ``policy`` (:func:`build`'s; ``solution``: the solver's whose it is) built into memory (no
    files: ``cache=False``, or a cache folder that cannot be written).
    """
    cdf, actions = [], []
    offset, length = build(rules, policy, cdf.append, actions.append)
    return FamilyDistributions(rules, offset, length, np.concatenate(cdf), np.concatenate(actions), solution=solution)


def build_to_disk(path: Path, key: str, rules: R.Rules, policy) -> None:
    """Builds ``policy``'s distributions (:func:`build`'s) and writes the data files, then the index (atomically
    each: the index last, naming their size and checksum, so an index never refers to a half-written file).
    """
    cdf_path, policy_path = _data_paths(path)
    with (
        atomic_output(cdf_path, follow_links=False) as cdf_temp,
        atomic_output(policy_path, follow_links=False) as policy_temp,
        open(cdf_temp, "wb") as cdf_file,
        open(policy_temp, "wb") as policy_file,
    ):
        cdf, actions = _Writer(cdf_file), _Writer(policy_file)
        offset, length = build(rules, policy, cdf, actions)
    sizes = np.array([cdf.size, actions.size], dtype=np.int64)
    checksums = np.array([cdf.crc, actions.crc], dtype=np.int64)
    save_arrays(path, key, {"offset": offset, "length": length, "sizes": sizes, "checksums": checksums})


def cached(path: Path, key: str, rules: R.Rules, make_policy, solution=None) -> FamilyDistributions:
    """A policy's distributions: the verified files at ``path`` (the index) and beside it, else built into them, else,
    where the folder cannot be written, built into memory with a warning; ``make_policy()`` gives the policy
    (:func:`build`'s), called only to build.
    """
    result = load(path, key, rules, solution=solution)
    if result is None:
        policy = make_policy()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            check_writable(path)
            build_to_disk(path, key, rules, policy)
            result = load(path, key, rules, source="computed", solution=solution)
        except (OSError, ValueError) as error:
            warnings.warn(f"could not write the distribution cache {path}: {error}", RuntimeWarning, stacklevel=3)
        if result is None:
            result = build_in_memory(rules, policy, solution)
    return result


def _file_crc(path: Path) -> int:
    """CRC-32 of a file, read in blocks (not mapped: checking it adds nothing to the process's memory)."""
    crc = 0
    with open(path, "rb") as file:
        while block := file.read(_READ_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def index_specs(rules: R.Rules) -> dict[str, tuple[tuple[int, ...], type]]:
    """The cache index's arrays, ``name -> (shape, dtype)``: each reachable turn start's row ``offset`` and
    ``length``, and the two data files' ``sizes`` and ``checksums``.
    """
    states = int((state_ids(rules) >= 0).sum())
    return {
        "offset": ((states,), np.int32),
        "length": ((states,), np.int32),
        "sizes": ((2,), np.int64),
        "checksums": ((2,), np.int64),
    }


def load(path: Path, key: str, rules: R.Rules, source: str = "disk", solution=None) -> FamilyDistributions | None:
    """The cached distributions at ``path`` (the index) and beside it, or ``None`` if any file is missing or fails a
    check: the index's key, checksum, shapes and bounds (every row inside ``0 .. max_total``, the data files of
    exactly the sizes the rows need), and each data file's size and checksum.
    """
    specs = index_specs(rules)
    states = specs["offset"][0][0]
    arrays = load_arrays(path, key, specs)
    if arrays is None:
        return None
    offset, length, sizes, checksums = (arrays[name] for name in specs)
    width = R.max_total(rules) + 1
    policy_bytes = states * R.ROLLS_PER_TURN * R.NUM_ROLLS
    if (length < 1).any() or (offset < 0).any() or (offset.astype(np.int64) + length > width).any():
        return None
    if sizes[0] != 4 * (length.sum(dtype=np.int64) + length.max()) or sizes[1] != policy_bytes:
        return None
    files = _data_paths(path)
    for file, size, checksum in zip(files, sizes, checksums, strict=True):
        with contextlib.suppress(OSError):
            if file.is_file() and file.stat().st_size == size and _file_crc(file) == checksum:
                continue
        return None
    cdf = np.memmap(files[0], dtype="<f4", mode="r")
    policy = np.memmap(files[1], dtype=np.uint8, mode="r", shape=(states, R.ROLLS_PER_TURN, R.NUM_ROLLS))
    return FamilyDistributions(rules, offset, length, cdf, policy, source=source, solution=solution)
