"""The two-player solve, level by level: the kernels that compute a level from the one below, and the build that
streams the levels to disk, resumes an interrupted run and shows its progress.

Two solutions come from the same kernels (:mod:`yacht_env.duel.turn`), each a table of level values, P(the mover
wins; ties count half) at every ``(mover, other, lead)`` of the level's windows:

* ``equilibrium``: both players maximise their chance to win. One table, ``E``; a level's values are the max
  turn over the level below: ``E_n = maxturn(E_{n-1})``.
* ``best_response``: a responder maximises against a fixed solo policy. Two tables: ``A`` where the responder
  moves, ``B`` where the policy moves: ``A_n = maxturn(B_{n-1})``, and ``B_n = policyturn(A_{n-1})``, the
  average over how the policy's turn from its open mask ends (box and points: it does not look at the lead).
* ``evaluation``: the equilibrium's strategy against a fixed solo policy, valued exactly. ``P`` where the
  equilibrium's player moves, ``Q`` where the policy moves: ``P_n`` is the turn ``maxturn(E_{n-1})`` plays (every
  keep and pick as the equilibrium takes them) valued by ``Q_{n-1}``, and ``Q_n = policyturn(P_{n-1})``.

A level is cut in chunks of states that share the mover's open mask (so they share the boxes a pick can take).
A big level's chunks are computed by worker processes, one per core (:mod:`yacht_env.duel.worker`: numpy's kernels
hold the GIL too much of the time for threads to scale), straight into the level's ``.npy`` file of float32 values,
memory-mapped; its CRC-32 goes in the folder's ``manifest.json`` before the next level starts. A run that stops
keeps every finished level; the next run checks the last one and goes on from there. When every level is done the
values are stored as uint16 (``round(65535 * value)``, at most 7.7e-6 from the float32 value; the float32 files can
be kept).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from yacht_env.duel.accel import DeviceTurn, device_for
from yacht_env.duel.layout import Layout, Level, chunks
from yacht_env.duel.turn import (
    QUANT,
    after_picks,
    best_of_rows,
    follow_best_of_rows,
    follow_turn_start,
    pick_rows,
    turn_start,
)
from yacht_env.duel.worker import Workers
from yacht_env.util import atomic_output

FORMAT_VERSION = 1  # bump when the recurrence, the layout or the files change; old folders are rebuilt
CHUNK_COLUMNS = 768  # columns (state, lead) per chunk: a chunk's rows stay in the core's cache
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
WORKERS = CORES if os.name == "posix" else 1  # a build's worker processes (their pipes are waited on, POSIX's way)
MAX_WORKERS = 256
WORKER_VALUES = 1 << 18  # a level of at least this many values goes to the workers (a second or so of work)
TASK_VALUES = 1 << 21  # a worker's task: at most this many values (a few seconds), so the last task ends soon
MAX_MANIFEST_BYTES = 1 << 20
TABLES = {"equilibrium": ("E",), "best_response": ("A", "B"), "evaluation": ("P", "Q")}


# --------------------------------------------------------------------------------------------------
# Kernels: one chunk of a level from the level below
# --------------------------------------------------------------------------------------------------
def columns(level: Level, s0: int, s1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mover, other, lead)`` ``(columns,)`` int64 of the states ``[s0, s1)`` of ``level``, window by window."""
    length = level.length[s0:s1]
    state = np.repeat(np.arange(s0, s1), length)
    position = np.arange(int(length.sum())) - (level.offset[state] - level.offset[s0])
    mover = level.movers[state // len(level.others)]
    other = level.others[state % len(level.others)]
    return mover, other, level.low[state] + position


def max_turn(layout: Layout, level: Level, below: np.ndarray, s0: int, s1: int) -> np.ndarray:
    """The values of states ``[s0, s1)`` (one mover) when the mover maximises its chance to win."""
    mover, other, lead = columns(level, s0, s1)
    picks = after_picks(layout, level.n, below, mover, other, lead)
    is_open = np.flatnonzero([int(mover[0]) >> c & 1 for c in range(layout.rules.num_categories)])
    return turn_start(best_of_rows(picks, pick_rows(layout.rules).of_roll[:, is_open]))


def policy_turn(layout: Layout, level: Level, below: np.ndarray, s0: int, s1: int, outcomes: np.ndarray) -> np.ndarray:
    """The values of states ``[s0, s1)`` (one mover) when the mover plays the fixed policy whose turn from open
    mask ``O`` ends scoring ``s`` in box ``k`` with probability ``outcomes[O, k, s]``.
    """
    mover, other, lead = columns(level, s0, s1)
    picks = after_picks(layout, level.n, below, mover, other, lead)
    rows = pick_rows(layout.rules)
    weight = outcomes[int(mover[0]), rows.category, rows.points]
    used = np.flatnonzero(weight > 0)
    return weight[used].astype(picks.dtype) @ picks[used]


def follow_turn(layout: Layout, level: Level, strategy: np.ndarray, below: np.ndarray, s0: int, s1: int) -> np.ndarray:
    """The values of states ``[s0, s1)`` (one mover) when the mover plays the max turn of ``strategy`` (a table's
    level below, e.g. the equilibrium's) and the game goes on as ``below`` says (another table's level below).
    """
    mover, other, lead = columns(level, s0, s1)
    decide = after_picks(layout, level.n, strategy, mover, other, lead)
    value = after_picks(layout, level.n, below, mover, other, lead).astype(decide.dtype, copy=False)
    is_open = np.flatnonzero([int(mover[0]) >> c & 1 for c in range(layout.rules.num_categories)])
    return follow_turn_start(*follow_best_of_rows(decide, value, pick_rows(layout.rules).of_roll[:, is_open]))


def solve_level(
    layout: Layout,
    n: int,
    below: np.ndarray | None,
    outcomes: np.ndarray | None = None,
    dtype=np.float32,
    strategy: np.ndarray | None = None,
    out: np.ndarray | None = None,
    runs: list[tuple[int, int]] | None = None,
) -> np.ndarray:
    """Level ``n``'s values (flat, ``dtype``) from level ``n - 1``'s (``None`` for level 0), in this process: the
    max turn, with ``outcomes`` the fixed policy's turn (:func:`policy_turn`), with ``strategy`` (a table's level
    ``n - 1``) the turn that table's max turn plays, valued by ``below`` (:func:`follow_turn`).

    ``out`` (the level's values, e.g. a memory-mapped file) receives them, and ``runs`` (of
    :func:`~yacht_env.duel.layout.chunks` at :data:`CHUNK_COLUMNS`) limits them to those states' spans.
    """
    level = layout.level(n)
    out = np.empty(level.num_values, dtype=dtype) if out is None else out
    if n == 0:
        out[:] = 0.5  # both sheets full, level: a tie
        return out
    for s0, s1 in chunks(level, CHUNK_COLUMNS) if runs is None else runs:
        span = slice(level.offset[s0], level.offset[s1])
        if strategy is not None:
            out[span] = follow_turn(layout, level, strategy, below, s0, s1)
        elif outcomes is None:
            out[span] = max_turn(layout, level, below, s0, s1)
        else:
            out[span] = policy_turn(layout, level, below, s0, s1, outcomes)
    return out


def tasks(level: Level, workers: int) -> list[list[tuple[int, int]]]:
    """The level's chunks in consecutive groups for ``workers`` processes: at most :data:`TASK_VALUES` values
    each, and at least four groups a worker where the level is small.
    """
    size = max(1, min(TASK_VALUES, -(-level.num_values // (4 * workers))))
    groups, group, filled = [], [], 0
    for s0, s1 in chunks(level, CHUNK_COLUMNS):
        values = int(level.offset[s1] - level.offset[s0])
        if group and filled + values > size:
            groups.append(group)
            group, filled = [], 0
        group.append((s0, s1))
        filled += values
    return [*groups, group] if group else groups


# --------------------------------------------------------------------------------------------------
# The build: levels streamed to disk, resumable, with progress
# --------------------------------------------------------------------------------------------------
def _file_crc(path: Path) -> int:
    checksum = 0
    with open(path, "rb") as file:
        while block := file.read(1 << 24):
            checksum = zlib.crc32(block, checksum)
    return checksum


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, or ``None`` if it is missing or not one of ours."""
    path = folder / "manifest.json"
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:  # ours are a few kB: a huge one is not read into memory
            return None
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT_VERSION else None


def write_manifest(folder: Path, manifest: dict) -> None:
    """Writes ``manifest.json`` atomically."""
    with atomic_output(folder / "manifest.json") as temp:
        temp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _save_level(folder: Path, name: str, values: np.ndarray) -> dict:
    path = folder / f"{name}.npy"
    with atomic_output(path) as temp, open(temp, "wb") as file:
        np.save(file, values, allow_pickle=False)
    return {"file": path.name, "dtype": str(values.dtype), "count": int(values.size), "crc32": _file_crc(path)}


def _write_level(folder: Path, name: str, count: int, dtype, fill: Callable[[np.ndarray], None]) -> dict:
    """Writes a level file of ``count`` values that ``fill`` computes into the file itself, memory-mapped."""
    path = folder / f"{name}.npy"
    with atomic_output(path) as temp:
        values = np.lib.format.open_memmap(temp, mode="w+", dtype=dtype, shape=(count,))
        try:
            fill(values)
            values.flush()
        finally:
            del values
    return {"file": path.name, "dtype": np.dtype(dtype).name, "count": count, "crc32": _file_crc(path)}


def load_level(folder: Path, entry: dict, mmap: bool = True, verify: bool = True) -> np.ndarray | None:
    """A level file of the manifest ``entry`` (memory-mapped), or ``None`` if it is missing or damaged."""
    path = folder / entry["file"]
    try:
        if verify and _file_crc(path) != entry["crc32"]:
            return None
        values = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError):
        return None
    ok = values.ndim == 1 and values.size == entry["count"] and str(values.dtype) == entry["dtype"]
    return values if ok else None


class Progress:
    """A progress line on stderr: the share of the work done, the time spent and an estimate of the time left."""

    def __init__(self, total: float, enabled: bool = True, label: str = "duel"):
        self.total, self.done, self.enabled, self.label = total, 0.0, enabled, label
        self.start = time.monotonic()
        self.tty = enabled and sys.stderr.isatty()

    def advance(self, work: float, note: str, show: bool = True) -> None:
        """Counts ``work`` more done and shows the line (``note``: where the build is; ``show=False``: counts only)."""
        self.done += work
        if not (self.enabled and show):
            return
        spent = time.monotonic() - self.start
        share = self.done / self.total if self.total else 1.0
        left = spent * (1 - share) / share if share > 0 else float("nan")
        bar = "#" * int(30 * share) + "." * (30 - int(30 * share))
        line = f"{self.label} [{bar}] {100 * share:5.1f}%  {note}  spent {_clock(spent)}  left ~{_clock(left)}"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        """Ends the line."""
        if self.tty:
            print(file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class _Compute:
    """Where a build computes a level: on the device, in the worker processes (started at the first big level and
    kept for the rest of the build) or in this process; a context manager that stops the workers.
    """

    def __init__(self, layout: Layout, outcomes, dtype, device_turn: DeviceTurn | None, workers: int):
        self.layout, self.outcomes, self.dtype = layout, outcomes, dtype
        self.device_turn, self.workers, self.pool = device_turn, workers, None

    def __enter__(self) -> _Compute:
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.close()

    def fill(self, out: np.ndarray, n: int, below, policy, strategy, on_values: Callable[[int], None]) -> None:
        """Level ``n``'s values into ``out`` (as :func:`solve_level`'s, with ``policy`` its ``outcomes``)."""
        level = self.layout.level(n)
        if self.device_turn is not None and n > 0:
            out[:] = self.device_turn.solve_level(n, below, policy, strategy)
        elif self.workers > 1 and level.num_values >= WORKER_VALUES:
            if self.pool is None:
                self.pool = Workers(self.layout.rules, self.outcomes, self.workers)
            work = tasks(level, self.workers)
            self.pool.solve_level(n, work, below, policy is not None, strategy, out, on_values)
        else:
            solve_level(self.layout, n, below, policy, dtype=self.dtype, strategy=strategy, out=out)


def build(
    folder: Path,
    layout: Layout,
    kind: str,
    key: str,
    outcomes: np.ndarray | None = None,
    progress: bool = True,
    keep_float32: bool = False,
    workers: int = WORKERS,
    dtype=np.float32,
    on_level: Callable[[int], None] | None = None,
    device: str = "auto",
    strategy: list[np.ndarray] | None = None,
) -> dict:
    """Builds (or finishes building) a solution's levels in ``folder`` and returns its manifest.

    Args:
        folder: The solution's folder (created if needed).
        layout: The game's layout.
        kind: ``"equilibrium"``, ``"best_response"`` or ``"evaluation"``.
        key: The solution's key; a folder of another key is built afresh.
        outcomes: The fixed policy (best response, evaluation), as :func:`~yacht_env.distributions.turn_outcomes`.
        progress: Show a progress line on stderr.
        keep_float32: Keep the float32 level files beside the uint16 ones.
        workers: The worker processes for the big levels (:mod:`yacht_env.duel.worker`); 1: all in this process.
        dtype: The float type of the computation and of the level files (float32, or float64 for exactness).
        on_level: Called with each level's number once it is on disk (tests stop a build with it).
        device: Where the levels are computed (:func:`yacht_env.duel.accel.device_for`): ``"auto"`` takes a GPU
            where torch sees one, else numpy in the workers; ``"numpy"``, ``"cpu"`` (torch), ``"cuda"``, ...
        strategy: The evaluation's strategy: the equilibrium's levels (its ``E`` table, memory-mapped files),
            whose max turn ``P`` plays against the fixed policy.
    """
    folder.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("key") != key:
        manifest = {"format": FORMAT_VERSION, "key": key, "kind": kind, "levels": {}, "complete": False}
    if manifest["complete"]:
        return manifest
    tables = TABLES[kind]
    done, below = _last_finished(folder, manifest, tables, layout.num_levels)
    accelerator = device_for(device)
    device_turn = None if accelerator is None else DeviceTurn(layout, accelerator, dtype)
    weights = [layout.level(n).num_values for n in range(layout.num_levels)]
    meter = Progress(float(sum(weights)), progress, f"duel {layout.rules.name} {kind}")
    meter.advance(float(sum(weights[: done + 1])), f"resuming after level {done}" if done >= 0 else "start")
    with _Compute(layout, outcomes, dtype, device_turn, workers) as compute:
        for n in range(done + 1, layout.num_levels):
            start, before, note = time.monotonic(), meter.done, f"level {n}/{layout.num_levels - 1}"
            if kind == "equilibrium":
                steps = {"E": (below.get("E"), None, None)}
            elif kind == "evaluation":
                steps = {
                    "P": (below.get("Q"), None, strategy[n - 1] if n else None),
                    "Q": (below.get("P"), outcomes, None),
                }
            else:
                steps = {"A": (below.get("B"), None, None), "B": (below.get("A"), outcomes, None)}

            def on_values(count: int, note=note) -> None:  # a worker's task: the line moves on a terminal
                meter.advance(count / len(tables), note, show=meter.tty)

            for t, step in steps.items():
                name = f"{t}{n:02d}"
                fill = functools.partial(
                    compute.fill, n=n, below=step[0], policy=step[1], strategy=step[2], on_values=on_values
                )
                manifest["levels"][name] = _write_level(folder, name, weights[n], dtype, fill)
            below = {t: load_level(folder, manifest["levels"][f"{t}{n:02d}"], verify=False) for t in tables}
            spent = time.monotonic() - start
            manifest["seconds"] = manifest.get("seconds", 0.0) + spent
            manifest.setdefault("level_seconds", {})[str(n)] = round(spent, 3)
            write_manifest(folder, manifest)
            meter.done = before  # the level counts whole once it is on disk
            meter.advance(float(weights[n]), note)
            if on_level is not None:
                on_level(n)
    meter.close()
    manifest["values"] = {t: float(below[t][0]) for t in tables}  # the one state of the top level, lead 0
    manifest["peak_rss_bytes"], manifest["peak_worker_rss_bytes"] = _peak_memory(), _peak_memory(children=True)
    manifest["workers"] = 0 if device_turn is not None else workers
    manifest["device"] = "numpy" if accelerator is None else str(accelerator)
    if dtype == np.float32:  # float64 (small games, exact) keeps its files as they are
        _quantise(folder, manifest, keep_float32)
    manifest["complete"] = True
    write_manifest(folder, manifest)
    return manifest


def _last_finished(folder: Path, manifest: dict, tables: tuple[str, ...], num_levels: int):
    """``(n, values)``: the last level whose every table is on disk and sound, with its values (``-1, {}``: none)."""
    levels, done = manifest["levels"], -1
    for n in range(num_levels):
        if not all(f"{t}{n:02d}" in levels for t in tables):
            break
        done = n
    below = {}
    for t in tables if done >= 0 else ():
        values = load_level(folder, levels[f"{t}{done:02d}"])
        if values is None:
            return -1, {}
        below[t] = values
    return done, below


def _peak_memory(children: bool = False) -> int | None:
    """This process's peak resident memory in bytes (Linux and macOS; ``children``: the largest of its finished
    child processes', the workers'), or ``None``.
    """
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _quantise(folder: Path, manifest: dict, keep_float32: bool) -> None:
    """Adds uint16 files of every level (``q`` entries) and, unless kept, removes the float32 ones."""
    levels = manifest["levels"]
    for name in sorted(levels):
        if name.endswith("q"):
            continue
        entry = levels[name]
        values = load_level(folder, entry, mmap=True, verify=False)
        quantised = np.rint(np.asarray(values, dtype=np.float64) * QUANT).astype(np.uint16)
        levels[name + "q"] = _save_level(folder, name + ".u16", quantised)
    manifest["float32"] = keep_float32
    write_manifest(folder, manifest)
    if not keep_float32:
        for name in [n for n in levels if not n.endswith("q")]:
            with contextlib.suppress(OSError):
                (folder / levels[name]["file"]).unlink()
            del levels[name]


def level_entries(manifest: dict, table: str, n: int, quantised_first: bool = True) -> Iterator[dict]:
    """The manifest entries holding ``table``'s level ``n``: the uint16 file first (or the float one first)."""
    names = (f"{table}{n:02d}q", f"{table}{n:02d}")
    for name in names if quantised_first else names[::-1]:
        if name in manifest["levels"]:
            yield manifest["levels"][name]
