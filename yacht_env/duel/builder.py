"""The two-player build: the levels of a solution streamed to disk, an interrupted run resumed, its progress shown.

The levels come from the kernels of :mod:`yacht_env.duel.levels` (the kinds of solve and their tables are its
:data:`~yacht_env.duel.levels.KINDS`), level by level from the game's end (level 0: both sheets full) to its start.
A big level's chunks are computed by worker processes, one per core (:mod:`yacht_env.duel.worker`: numpy's kernels
hold the GIL too much of the time for threads to scale), straight into the level's ``.npy`` file of float32 values,
memory-mapped; on a device (:mod:`yacht_env.duel.accel`) the same kernels run on its array backend. A level's
CRC-32 goes in the folder's ``manifest.json`` before the next level starts. A run that stops keeps every finished
level; the next run verifies them all and goes on from the last sound one (a damaged level is built again), after
removing the temporary file of a level a killed run was writing. One build runs in a folder at a time (a lock on
the folder); loading checks the manifest's structure, each file's kind, size and checksum, and the manifest's
values against the top level. When every level is done the values are stored as uint16 (``round(65535 * value)``,
at most 7.7e-6 from the float32 value; the float32 files can be kept).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from yacht_env.duel.accel import DEVICE_COLUMNS, arrays_for
from yacht_env.duel.layout import Layout, Level, chunks
from yacht_env.duel.levels import CHUNK_COLUMNS, KINDS, TABLES, Turn, solve_level
from yacht_env.duel.turn import QUANT
from yacht_env.duel.worker import Workers
from yacht_env.turn_rows import NUMPY, Arrays
from yacht_env.util import atomic_output, folder_lock, remove_stale_temps

__all__ = ["CHUNK_COLUMNS", "TABLES", "build", "load_level", "read_manifest", "solve_level", "tasks"]

FORMAT_VERSION = 1  # bump when the recurrence, the layout or the files change; old folders are rebuilt
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
WORKERS = CORES if os.name == "posix" else 1  # a build's worker processes (their pipes are waited on, POSIX's way)
MAX_WORKERS = 256
WORKER_VALUES = 1 << 18  # a level of at least this many values goes to the workers (a second or so of work)
TASK_VALUES = 1 << 21  # a worker's task: at most this many values (a few seconds), so the last task ends soon
MAX_MANIFEST_BYTES = 1 << 20
MAX_NPY_HEADER = 4096  # a level file's bytes beyond its values: numpy's header (128 bytes for ours)
LEVEL_DTYPES = ("float32", "float64", "uint16")


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


def _regular_size(path: Path) -> int | None:
    """The size of the regular file at ``path`` (through symlinks), or ``None``: missing, a device, a FIFO, ...
    (none of which is opened: ``/dev/zero`` never ends, a FIFO blocks).
    """
    try:
        status = path.stat()
    except (OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def read_manifest(folder: Path) -> dict | None:
    """The folder's manifest, or ``None`` if it is missing or not one of ours.

    Raises:
        ValueError: one of ours (its format) whose structure is damaged, e.g. by an edit.
    """
    path = folder / "manifest.json"
    size = _regular_size(path)
    if size is None or size > MAX_MANIFEST_BYTES:  # ours are a few kB: a huge one is not read into memory
        return None
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the parser's depth
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        return None
    problem = manifest_problem(manifest)
    if problem is not None:
        raise ValueError(
            f"the two-player solution in {folder} is damaged (its manifest: {problem}): remove the folder to rebuild it"
        )
    return manifest


def manifest_problem(manifest: dict) -> str | None:
    """What is wrong with the structure of a manifest of ours (a phrase), or ``None``."""
    kind, levels = manifest.get("kind"), manifest.get("levels")
    if not isinstance(manifest.get("key"), str) or kind not in TABLES:
        return "no key or no kind of solve"
    if not isinstance(levels, dict) or not isinstance(manifest.get("complete"), bool):
        return "no levels or no completion flag"
    for name, entry in levels.items():
        problem = _entry_problem(name, entry, TABLES[kind])
        if problem is not None:
            return f"level {name!r}: {problem}"
    if not _is_number(manifest.get("seconds", 0.0)) or not isinstance(manifest.get("level_seconds", {}), dict):
        return "its times"
    values = manifest.get("values")
    if manifest["complete"] and not (
        isinstance(values, dict)
        and sorted(values) == sorted(TABLES[kind])
        and all(_is_number(v) and 0.0 <= v <= 1.0 for v in values.values())
    ):
        return f"values {values!r}"
    return None


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and bool(np.isfinite(value))


def _entry_problem(name: str, entry, tables: tuple[str, ...]) -> str | None:
    match = re.fullmatch(r"([A-Z])([0-9]{2})(q?)", name)
    if match is None or match[1] not in tables:
        return "not a level of this kind of solve"
    file = f"{match[1]}{match[2]}{'.u16' if match[3] else ''}.npy"
    if not isinstance(entry, dict) or entry.get("file") != file:
        return f"its file is not {file!r}"
    count, crc = entry.get("count"), entry.get("crc32")
    if entry.get("dtype") not in LEVEL_DTYPES or not isinstance(count, int) or not isinstance(crc, int):
        return "its dtype, count or checksum"
    return None


def write_manifest(folder: Path, manifest: dict) -> None:
    """Writes ``manifest.json`` atomically (a symlink there is replaced, never written through, as the levels are)."""
    with atomic_output(folder / "manifest.json", follow_links=False) as temp:
        temp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _save_level(folder: Path, name: str, values: np.ndarray) -> dict:
    path = folder / f"{name}.npy"
    with atomic_output(path, follow_links=False) as temp, open(temp, "wb") as file:
        np.save(file, values, allow_pickle=False)
    return {"file": path.name, "dtype": str(values.dtype), "count": int(values.size), "crc32": _file_crc(path)}


def _write_level(folder: Path, name: str, count: int, dtype, fill: Callable[[np.ndarray], None]) -> dict:
    """Writes a level file of ``count`` values that ``fill`` computes into the file itself, memory-mapped."""
    path = folder / f"{name}.npy"
    with atomic_output(path, follow_links=False) as temp:
        values = np.lib.format.open_memmap(temp, mode="w+", dtype=dtype, shape=(count,))
        try:
            fill(values)
            values.flush()
        finally:
            del values
    return {"file": path.name, "dtype": np.dtype(dtype).name, "count": count, "crc32": _file_crc(path)}


def load_level(folder: Path, entry: dict, mmap: bool = True, verify: bool = True) -> np.ndarray | None:
    """A level file of the manifest ``entry`` (memory-mapped), or ``None`` if it is missing or damaged (its
    checksum, size, shape or type; what is not a regular file of about its size is not read).
    """
    path = folder / entry["file"]
    size, data = _regular_size(path), entry["count"] * np.dtype(entry["dtype"]).itemsize
    if size is None or not data <= size <= data + MAX_NPY_HEADER:
        return None
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
    """Where a build computes a level: on its array backend in this process (a device's, or numpy's) or in the worker
    processes (numpy's big levels: started at the first one and kept for the rest of the build); a context manager
    that stops the workers.

    Args:
        layout: The game's layout.
        outcomes: The fixed policy's turn outcomes (``None``: no policy turn).
        strategy: The followed table's levels (``None``: no followed turn).
        dtype: The values' float type.
        xp: The array backend.
        workers: The worker processes for numpy's big levels.
    """

    def __init__(self, layout: Layout, outcomes, strategy, dtype, xp: Arrays, workers: int):
        self.layout, self.outcomes, self.strategy, self.dtype = layout, outcomes, strategy, dtype
        self.xp, self.workers, self.pool = xp, workers, None

    def __enter__(self) -> _Compute:
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.close()

    def fill(self, out: np.ndarray, n: int, turn: Turn, below, on_values: Callable[[int], None]) -> None:
        """Level ``n``'s values into ``out``: ``turn`` over ``below`` (:func:`~yacht_env.duel.levels.solve_level`)."""
        level = self.layout.level(n)
        plan = self.strategy[n - 1] if turn == Turn.FOLLOW and n > 0 else None
        if self.xp is NUMPY and self.workers > 1 and level.num_values >= WORKER_VALUES:
            if self.pool is None:
                self.pool = Workers(self.layout.rules, self.outcomes, self.workers)
            self.pool.solve_level(n, tasks(level, self.workers), below, turn, plan, out, on_values)
            return
        runs = chunks(level, CHUNK_COLUMNS if self.xp is NUMPY else DEVICE_COLUMNS)  # a core's cache; a GPU's fill
        solve_level(self.layout, n, below, turn, outcomes=self.outcomes, strategy=plan, out=out, runs=runs, xp=self.xp)


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
    with _claimed(folder):
        manifest = read_manifest(folder)
        if manifest is None or manifest.get("key") != key:
            manifest = {"format": FORMAT_VERSION, "key": key, "kind": kind, "levels": {}, "complete": False}
        if manifest["complete"]:
            return manifest
        steps = KINDS[kind]
        tables = TABLES[kind]
        done, below = _last_finished(folder, manifest, tables, layout)
        xp = arrays_for(device)
        weights = [layout.level(n).num_values for n in range(layout.num_levels)]
        meter = Progress(float(sum(weights)), progress, f"duel {layout.rules.name} {kind}")
        meter.advance(float(sum(weights[: done + 1])), f"resuming after level {done}" if done >= 0 else "start")
        with _Compute(layout, outcomes, strategy, dtype, xp, workers) as compute:
            for n in range(done + 1, layout.num_levels):
                start, before, note = time.monotonic(), meter.done, f"level {n}/{layout.num_levels - 1}"

                def on_values(count: int, note=note) -> None:  # a worker's task: the line moves on a terminal
                    meter.advance(count / len(tables), note, show=meter.tty)

                for step in steps:
                    name = f"{step.table}{n:02d}"
                    fill = functools.partial(
                        compute.fill, n=n, turn=step.turn, below=below.get(step.below), on_values=on_values
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
        manifest["workers"] = workers if xp is NUMPY else 0
        manifest["device"] = xp.name
        if dtype == np.float32:  # float64 (small games, exact) keeps its files as they are
            _quantise(folder, manifest, keep_float32)
        manifest["complete"] = True
        write_manifest(folder, manifest)
        return manifest


@contextlib.contextmanager
def _claimed(folder: Path) -> Iterator[None]:
    """Creates ``folder`` and holds it for one build: another build of it at once is refused, the temporary files
    of a build killed mid-level are removed, and a folder that cannot be written is one ``ValueError``.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        busy = (
            f"another build of this two-player solution is running in {folder}: let it finish (or stop it) and run "
            "again"
        )
        with folder_lock(folder, busy):
            remove_stale_temps(folder)
            yield
    except OSError as error:
        raise ValueError(f"cannot build the two-player solution in {folder}: {error.strerror or error}") from error


def _last_finished(folder: Path, manifest: dict, tables: tuple[str, ...], layout: Layout):
    """``(n, values)``: the last level below which every level of every table is on disk and sound (its checksum
    verified: a resume builds on them all), with its values (``-1, {}``: none).
    """
    levels, done, below = manifest["levels"], -1, {}
    for n in range(layout.num_levels):
        entries = [levels.get(f"{t}{n:02d}") for t in tables]
        if any(entry is None or entry["count"] != layout.level(n).num_values for entry in entries):
            break
        values = [load_level(folder, entry) for entry in entries]
        if any(v is None for v in values):
            break
        done, below = n, dict(zip(tables, values, strict=True))
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
        values = load_level(folder, levels[name])  # verified: the uint16 file gets a checksum of its own
        if values is None:
            raise ValueError(f"level {name} in {folder} changed after it was built: run the build again to rebuild it")
        quantised = np.rint(np.asarray(values, dtype=np.float64) * QUANT).astype(np.uint16)
        levels[name + "q"] = _save_level(folder, name + ".u16", quantised)
    manifest["float32"] = keep_float32
    write_manifest(folder, manifest)
    if not keep_float32:
        for name in [n for n in levels if not n.endswith("q")]:
            with contextlib.suppress(OSError):
                (folder / levels[name]["file"]).unlink()
            del levels[name]


def load_tables(folder: Path, manifest: dict, layout: Layout, storage: str = "compact") -> dict[str, list[np.ndarray]]:
    """A finished solution's tables, level by level, memory-mapped, every file's checksum verified.

    Args:
        folder: The solution's folder.
        manifest: Its manifest (:func:`read_manifest`, complete).
        layout: The game's layout.
        storage: ``"compact"``: the uint16 files first; ``"exact"``: the float files first.

    Raises:
        ValueError: a level missing or damaged, or a manifest whose values are not those of its levels.
    """
    names = ("q", "") if storage == "compact" else ("", "q")
    tables = {}
    for table in TABLES[manifest["kind"]]:
        levels = []
        for n in range(layout.num_levels):
            entries = [manifest["levels"].get(f"{table}{n:02d}{q}") for q in names]
            count = layout.level(n).num_values
            found = (load_level(folder, e) for e in entries if e is not None and e["count"] == count)
            values = next((v for v in found if v is not None), None)
            if values is None:
                raise ValueError(
                    f"the two-player solution in {folder} is damaged (level {table}{n:02d}): remove the folder to "
                    "rebuild it"
                )
            levels.append(values)
        top, value = levels[-1][0], manifest["values"][table]  # the top level's one state, lead 0
        if (np.rint(value * QUANT) if top.dtype == np.uint16 else value) != top:
            raise ValueError(
                f"the two-player solution in {folder} is damaged (its manifest's value of {table}, {value!r}, is not "
                "its top level's): remove the folder to rebuild it"
            )
        tables[table] = levels
    return tables
