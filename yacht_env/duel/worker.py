"""Worker processes for the two-player build: each computes runs of a level's states from memory-mapped files.

numpy's turn kernels hold the GIL for much of a chunk (many small array operations), so threads do not scale;
processes do. :class:`Workers` starts worker processes (interpreters of their own: no fork of a process that may
hold threads, no re-import of the caller's script), sends each one task at a time over its pipes (pickles of the
build's own tuples, between this module's two ends only) and waits for the answers. A task names the level, its
runs of states and the files: the level below and the strategy (``.npy`` files, memory-mapped read-only) and the
level being written (the output file the build created, memory-mapped for writing, each task its own disjoint
spans). The values are the same, bit for bit, as the build computes in its own process: the same chunks through
the same kernels.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np

from yacht_env.duel.layout import Layout
from yacht_env.duel.levels import Turn, solve_level

_SINGLE_THREADED = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def mapped(values: np.ndarray | None) -> tuple | None:
    """``(path, offset, dtype, shape)`` of a memory-mapped file's array (``None`` for ``None``); ``ValueError``
    for an array in memory, which another process cannot see.
    """
    if values is None:
        return None
    if not isinstance(values, np.memmap) or values.filename is None:
        raise ValueError("a worker reads its levels from files: pass memory-mapped arrays (np.load(mmap_mode='r'))")
    return str(values.filename), int(values.offset), values.dtype.str, values.shape


def _open(description: tuple | None, mode: str = "r") -> np.ndarray | None:
    if description is None:
        return None
    path, offset, dtype, shape = description
    return np.memmap(path, dtype=np.dtype(dtype), mode=mode, offset=offset, shape=shape)


class Workers:
    """``count`` worker processes for one build (one layout, one fixed policy); a context manager that stops
    them on leaving (Ctrl-C included).

    Args:
        rules: The game's rules.
        outcomes: The fixed policy's turn outcomes (``None`` for the equilibrium).
        count: The number of processes.
    """

    def __init__(self, rules, outcomes: np.ndarray | None, count: int):
        self.count = count
        env = {**os.environ, **_SINGLE_THREADED}  # one core each: BLAS threads would share the cores twice over
        home = str(Path(__file__).resolve().parents[2])  # the workers import the yacht_env this process runs
        env["PYTHONPATH"] = os.pathsep.join([home, *filter(None, [os.environ.get("PYTHONPATH")])])
        self.processes = []
        try:
            for _ in range(count):
                process = subprocess.Popen(
                    [sys.executable, "-c", "from yacht_env.duel.worker import main; main()"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=env,
                )
                self.processes.append(process)
                self._send(process, (rules, outcomes))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stops the processes (at once: a build that stops keeps only its finished levels)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                try:
                    pipe.close()
                except BrokenPipeError:  # a task a dead worker never read: the pipe is closed all the same
                    pass
        self.processes = []

    @staticmethod
    def _send(process: subprocess.Popen, message) -> None:
        try:
            pickle.dump(message, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            process.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"a duel worker process stopped (exit code {process.wait()})") from None

    @staticmethod
    def _receive(process: subprocess.Popen):
        try:
            answer = pickle.load(process.stdout)
        except (EOFError, pickle.UnpicklingError):  # it died (killed for memory, say), mid-answer or before
            code = process.wait()
            raise RuntimeError(f"a duel worker process stopped (exit code {code})") from None
        if isinstance(answer, str):  # the worker's traceback
            raise RuntimeError(f"a duel worker failed:\n{answer}")
        return answer

    def solve_level(
        self,
        n: int,
        tasks: list[list[tuple[int, int]]],
        below: np.ndarray,
        turn: Turn,
        strategy: np.ndarray | None,
        out: np.ndarray,
        on_values=None,
    ) -> None:
        """Computes level ``n``'s runs of states, a list of runs per task, into ``out`` (a memory-mapped file):
        ``turn`` over ``below`` (:func:`~yacht_env.duel.levels.solve_level`, ``strategy`` the followed table's level
        below); ``on_values`` is called with each finished task's number of values.
        """
        files = (mapped(below), mapped(strategy), mapped(out))
        pending = list(reversed(tasks))
        with selectors.DefaultSelector() as selector:
            for process in self.processes:
                if pending:
                    self._send(process, (n, pending.pop(), int(turn), *files))
                    selector.register(process.stdout, selectors.EVENT_READ, process)
            while selector.get_map():
                for key, _ in selector.select():
                    process = key.data
                    values = self._receive(process)
                    if on_values is not None:
                        on_values(values)
                    if pending:
                        self._send(process, (n, pending.pop(), int(turn), *files))
                    else:
                        selector.unregister(process.stdout)


def serve() -> None:
    """The worker's loop: the rules and the fixed policy, then tasks until its input closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    rules, outcomes = pickle.load(stdin)
    layout = Layout(rules)
    inputs: dict[tuple, np.ndarray] = {}  # the level below and the strategy, mapped once per level
    while True:
        try:
            n, runs, turn, below, strategy, out = pickle.load(stdin)
        except EOFError:
            return
        try:
            if any(key[0] != n for key in inputs):
                inputs.clear()
            source, plan = (None if d is None else inputs.setdefault((n, d), _open(d)) for d in (below, strategy))
            target = _open(out, "r+")  # the page cache is shared: the build reads what is written, no flush needed
            solve_level(layout, n, source, Turn(turn), outcomes=outcomes, strategy=plan, out=target, runs=runs)
            del target
            offset = layout.level(n).offset
            answer = sum(int(offset[s1] - offset[s0]) for s0, s1 in runs)
        except Exception:
            answer = traceback.format_exc()
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


def main() -> None:
    """A worker process's entry point (:class:`Workers` starts it with ``python -c``).

    Ctrl-C or SIGTERM (which reach the whole process group) and a build that went away (its pipe closed while an
    answer is written) end the worker without a word: the build says what stopped.
    """
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        # Nothing more can reach the build; the unflushed answer must not be flushed again at exit, which would
        # print "Exception ignored ... BrokenPipeError".
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())
        sys.exit(1)
