"""Benchmark the exact solver: solving from scratch, loading from the disk cache, and querying the policy.

Usage:
    python benchmarks/solver.py [--rules standard classic] [--repeats 5] [--seed 0]

Solving runs without any cache (``solve(rules, cache=False)``); loading reads a cache file written to a temporary
folder; the queries compare ``best_action`` on one batch of 10,000 random states with a Python loop of
``action_values`` over 1,000 states. Each figure is the best of ``--repeats`` timings (the least disturbed by other
work on the machine), with one BLAS thread (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are
set to 1 unless they are set already): on a loaded machine a multi-threaded BLAS waits for cores (a median solve once
took 0.39 s there). The solve's CPU time (``solve cpu s``, this process's, best of the same timings) is the figure
that other work on the machine barely moves: its wall time grows with the load, its CPU time does not.
"""

from __future__ import annotations

import os

# Before numpy loads its BLAS: the thread count is read once, at import.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from yacht_env import rules as R  # noqa: E402
from yacht_env import solver  # noqa: E402

BATCH_STATES = 10_000
LOOP_STATES = 1_000


def best_seconds(function, repeats: int, clock=time.perf_counter) -> float:
    """The shortest of ``repeats`` timings of ``function()`` on ``clock`` (wall time, or ``time.process_time``)."""
    times = []
    for _ in range(repeats):
        start = clock()
        function()
        times.append(clock() - start)
    return min(times)


def benchmark(rules: R.Rules, repeats: int, cache_dir: str, states: tuple[np.ndarray, ...]) -> dict[str, float]:
    """Timings of one preset; ``states`` are ``(roll, rolls_left, open_mask)`` arrays of the batch."""
    solve_s = best_seconds(lambda: solver.solve(rules, cache=False), repeats)
    solve_cpu_s = best_seconds(lambda: solver.solve(rules, cache=False), repeats, time.process_time)

    solver.clear_memo()
    solution = solver.solve(rules, cache_dir=cache_dir)  # writes the cache file

    def load() -> None:
        solver.clear_memo()
        assert solver.solve(rules, cache_dir=cache_dir).source == "disk"

    load_s = best_seconds(load, repeats)
    batch_s = best_seconds(lambda: solution.best_action(*states), repeats)
    one_by_one = [
        (R.ROLL_TUPLES[r], int(t), int(o)) for r, t, o in zip(*(s[:LOOP_STATES] for s in states), strict=True)
    ]

    def loop() -> None:
        for dice, rolls_left, open_mask in one_by_one:
            solution.action_values(dice, rolls_left, open_mask).argmax()

    loop_s = best_seconds(loop, repeats)
    return {
        "expected": solution.expected_score,
        "solve_s": solve_s,
        "solve_cpu_s": solve_cpu_s,
        "load_s": load_s,
        "file_mb": solver.cache_path(rules, cache_dir).stat().st_size / 1e6,
        "batch_rate": len(states[0]) / batch_s,
        "loop_rate": LOOP_STATES / loop_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rules",
        nargs="+",
        default=list(R.YACHT_PRESETS),
        choices=sorted(R.PRESETS),
        help="rules presets to benchmark (default: Yacht's; the family has benchmarks/solver_family.py)",
    )
    parser.add_argument("--repeats", type=int, default=5, help="timings per measurement (the best is shown)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random query states")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    rng = np.random.default_rng(args.seed)
    states = (
        rng.integers(0, R.NUM_ROLLS, size=BATCH_STATES),
        rng.integers(0, R.ROLLS_PER_TURN, size=BATCH_STATES),
        rng.integers(1, R.NUM_OPEN_MASKS, size=BATCH_STATES),
    )
    print(
        f"solver benchmark: best of {args.repeats}, BLAS threads {os.environ['OMP_NUM_THREADS']}; batch = best_action "
        f"on {BATCH_STATES:,} states at once, loop = action_values on {LOOP_STATES:,} states one by one"
    )
    header = (
        f"{'rules':<10} {'expected':>10} {'solve s':>8} {'solve cpu s':>11} {'load s':>8} {'file MB':>8} "
        f"{'batch st/s':>11} {'loop st/s':>10} {'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as cache_dir:
        for name in args.rules:
            rules = R.get_rules(name)
            row = benchmark(rules, args.repeats, cache_dir, states)
            print(
                f"{rules.name:<10} {row['expected']:>10.4f} {row['solve_s']:>8.3f} {row['solve_cpu_s']:>11.3f} "
                f"{row['load_s']:>8.3f} "
                f"{row['file_mb']:>8.1f} {row['batch_rate']:>11,.0f} {row['loop_rate']:>10,.0f} "
                f"{row['batch_rate'] / row['loop_rate']:>6.0f}x"
            )


if __name__ == "__main__":
    main()
