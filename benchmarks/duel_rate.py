"""The two-player build's speed per value, by kernel, and the full builds' times it implies on this machine.

    python benchmarks/duel_rate.py --rules standard --share 0.005

Times the three turns a build computes (the max turn of the equilibrium, the fixed policy's turn of the best
response, the followed turn of the equilibrium's evaluation) on the same evenly spread share of every level's
chunks, side by side in one run and in the same worker processes as a build (:mod:`yacht_env.duel.worker`), from
the equilibrium's levels on disk (built first if missing: ``python -m yacht_env.duel build``), each written as a
float32 file as a build leaves its level below. It prints each kernel's microseconds per value (wall time over
the values of all the workers together), their ratios, and each full build's time that the rates imply: the
equilibrium (one max turn per value), the best response (a max turn and a policy turn) and the evaluation (a
followed turn and a policy turn). The figures extrapolate from the sample; on quiet cores they stand for a
build's time, which a build's own recorded time (``benchmarks/duel.py``) does not when the cores are shared.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from yacht_env import distributions as D
from yacht_env import duel
from yacht_env import rules as R
from yacht_env.duel import builder
from yacht_env.duel.layout import chunks
from yacht_env.duel.levels import Turn, solve_level
from yacht_env.duel.worker import Workers
from yacht_env.util import atomic_write
from yacht_lab.scripts.cli import OneLineParser, output_file

KERNELS = {"max": Turn.MAX, "policy": Turn.POLICY, "follow": Turn.FOLLOW}  # the follow turn follows the level below


def sample_runs(level, share: float, width: int) -> list[tuple[int, int]]:
    """Every ``1 / share``-th chunk of ``level`` (at least one) of ``width`` columns, evenly spread over its movers."""
    runs = chunks(level, width)
    step = max(1, round(1 / share))
    return runs[step // 2 :: step] or runs[:1]


def time_kernel(pool, layout, n: int, runs, kernel: str, below: np.ndarray, out: np.ndarray, outcomes) -> float:
    """Seconds to compute ``kernel`` on the ``runs`` of level ``n`` as a build does: in the worker processes
    (``pool``) or, without one, in this process."""
    start = time.perf_counter()
    turn = KERNELS[kernel]
    strategy = below if turn == Turn.FOLLOW else None
    if pool is None:
        solve_level(layout, n, below, turn, outcomes=outcomes, strategy=strategy, out=out, runs=runs)
    else:
        groups = [list(group) for group in np.array_split(np.array(runs), min(len(runs), 4 * pool.count)) if len(group)]
        pool.solve_level(n, [[tuple(map(int, run)) for run in group] for group in groups], below, turn, strategy, out)
    return time.perf_counter() - start


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="standard")
    parser.add_argument("--share", type=float, default=0.005, help="the share of every level's chunks timed")
    parser.add_argument("--workers", type=int, default=builder.WORKERS, help="worker processes (a build's)")
    parser.add_argument("--kernels", nargs="+", choices=KERNELS, default=list(KERNELS), help="the turns timed")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--json", type=output_file, help="write the figures here (checked before the timing)")
    args = parser.parse_args()
    if not 0 < args.share <= 1:
        parser.error(f"--share must be in (0, 1], got {args.share}")
    if not 1 <= args.workers <= builder.MAX_WORKERS:
        parser.error(f"--workers must be in 1..{builder.MAX_WORKERS}, got {args.workers}")
    rules = R.get_rules(args.rules)
    equilibrium = duel.solve(rules, cache_dir=args.cache_dir, progress=True)
    layout, below = equilibrium.layout, equilibrium.levels("E")
    outcomes = D.turn_outcomes(rules, D.solver_policy(rules))
    seconds = dict.fromkeys(KERNELS, 0.0)
    timed_values, estimate = 0, dict.fromkeys(KERNELS, 0.0)
    pool = Workers(rules, outcomes, args.workers) if args.workers > 1 else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as temp, pool:
        for n in range(1, layout.num_levels):
            level = layout.level(n)
            np.save(Path(temp) / "below.npy", below[n - 1].astype(np.float32) / np.float32(duel.QUANT))
            values_below = np.load(Path(temp) / "below.npy", mmap_mode="r")  # float32 on disk, as in a build
            out = np.lib.format.open_memmap(Path(temp) / "out.npy", "w+", np.float32, (level.num_values,))
            runs = sample_runs(level, args.share, builder.CHUNK_COLUMNS)
            values = int(sum(level.offset[s1] - level.offset[s0] for s0, s1 in runs))
            for name in args.kernels:
                spent = time_kernel(
                    pool if args.workers > 1 else None, layout, n, runs, name, values_below, out, outcomes
                )
                seconds[name] += spent
                estimate[name] += spent / values * level.num_values
            timed_values += values
            del values_below, out
    rate = {name: seconds[name] / timed_values * 1e6 for name in args.kernels}
    needs = {"equilibrium": ("max",), "best_response": ("max", "policy"), "evaluation": ("follow", "policy")}
    builds = {
        build: sum(estimate[name] for name in kernels)
        for build, kernels in needs.items()
        if all(name in rate for name in kernels)
    }
    print(
        f"{rules.name}: {timed_values:,} of {layout.num_values():,} values timed "
        f"({timed_values / layout.num_values():.2%}) in {args.workers} worker processes, chunks of "
        f"{builder.CHUNK_COLUMNS} columns"
    )
    for name, microseconds in rate.items():
        ratio = f" ({microseconds / rate['max']:.2f}x the max turn)" if "max" in rate else ""
        print(f"  {name:7s} turn: {microseconds:.3f} us a value{ratio}")
    for name, spent in builds.items():
        print(f"  the {name.replace('_', ' ')} build: about {spent / 60:.0f} minutes")
    if args.json:
        report = {
            "rules": rules.name,
            "workers": args.workers,
            "share": args.share,
            "chunk_columns": builder.CHUNK_COLUMNS,
            "values_timed": timed_values,
            "microseconds_per_value": rate,
            "build_minutes_estimate": {name: spent / 60 for name, spent in builds.items()},
        }
        atomic_write(args.json, json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
