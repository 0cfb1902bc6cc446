"""The two-player build's speed per value, by kernel, and the full builds' times it implies on this machine.

    python benchmarks/duel_rate.py --rules standard --share 0.005

Times the three turns a build computes (the max turn of the equilibrium, the fixed policy's turn of the best
response, the followed turn of the equilibrium's evaluation) on the same evenly spread share of every level's
chunks, side by side in one run and on the same threads as a build, from the equilibrium's levels on disk (built
first if missing: ``python -m yacht_env.duel build``), each read into memory as float32 as a build holds its
level below. It prints each kernel's microseconds per value, their ratios, and each full build's time that the
rates imply: the equilibrium (one max turn per value), the best response (a max turn and a policy turn) and the
evaluation (a followed turn and a policy turn). The figures extrapolate from the sample; on quiet cores they
stand for a build's time, which a build's own recorded time (``benchmarks/duel.py``) does not when the cores are
shared.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from yacht_env import distributions as D
from yacht_env import duel
from yacht_env import rules as R
from yacht_env.duel import builder
from yacht_env.duel.layout import chunks

KERNELS = ("max", "policy", "follow")


def sample_runs(level, share: float, width: int) -> list[tuple[int, int]]:
    """Every ``1 / share``-th chunk of ``level`` (at least one) of ``width`` columns, evenly spread over its movers."""
    runs = chunks(level, width)
    step = max(1, round(1 / share))
    return runs[step // 2 :: step] or runs[:1]


def time_kernel(kernel, runs, threads: int) -> float:
    """Seconds to compute ``kernel(run)`` for every run, on ``threads`` threads as a build does."""
    start = time.perf_counter()
    if threads <= 1:
        for run in runs:
            kernel(run)
    else:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(kernel, runs))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="standard")
    parser.add_argument("--share", type=float, default=0.005, help="the share of every level's chunks timed")
    parser.add_argument("--threads", type=int, default=builder._THREADS)
    parser.add_argument("--chunk", type=int, default=builder.CHUNK_COLUMNS, help="columns per chunk (a build's)")
    parser.add_argument("--kernels", nargs="+", choices=KERNELS, default=list(KERNELS), help="the turns timed")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if not 0 < args.share <= 1:
        parser.error(f"--share must be in (0, 1], got {args.share}")
    rules = R.get_rules(args.rules)
    equilibrium = duel.solve(rules, cache_dir=args.cache_dir, progress=True)
    layout, below = equilibrium.layout, equilibrium.levels("E")
    outcomes = D.turn_outcomes(rules, D.solver_policy(rules))
    seconds = dict.fromkeys(KERNELS, 0.0)
    timed_values, estimate = 0, dict.fromkeys(KERNELS, 0.0)
    for n in range(1, layout.num_levels):
        level = layout.level(n)
        values_below = below[n - 1].astype(np.float32) / np.float32(duel.QUANT)  # in memory, float32, as in a build
        runs = sample_runs(level, args.share, args.chunk)
        values = int(sum(level.offset[s1] - level.offset[s0] for s0, s1 in runs))
        kernels = {
            "max": lambda run, level=level, values_below=values_below: builder.max_turn(
                layout, level, values_below, *run
            ),
            "policy": lambda run, level=level, values_below=values_below: builder.policy_turn(
                layout, level, values_below, *run, outcomes
            ),
            "follow": lambda run, level=level, values_below=values_below: builder.follow_turn(
                layout, level, values_below, values_below, *run
            ),
        }
        for name in args.kernels:
            kernel = kernels[name]
            spent = time_kernel(kernel, runs, args.threads)
            seconds[name] += spent
            estimate[name] += spent / values * level.num_values
        timed_values += values
    rate = {name: seconds[name] / timed_values * 1e6 for name in args.kernels}
    needs = {"equilibrium": ("max",), "best_response": ("max", "policy"), "evaluation": ("follow", "policy")}
    builds = {
        build: sum(estimate[name] for name in kernels)
        for build, kernels in needs.items()
        if all(name in rate for name in kernels)
    }
    print(
        f"{rules.name}: {timed_values:,} of {layout.num_values():,} values timed "
        f"({timed_values / layout.num_values():.2%}) on {args.threads} threads, chunks of {args.chunk} columns"
    )
    for name, microseconds in rate.items():
        ratio = f" ({microseconds / rate['max']:.2f}x the max turn)" if "max" in rate else ""
        print(f"  {name:7s} turn: {microseconds:.3f} us a value{ratio}")
    for name, spent in builds.items():
        print(f"  the {name.replace('_', ' ')} build: about {spent / 60:.0f} minutes")
    if args.json:
        report = {
            "rules": rules.name,
            "threads": args.threads,
            "share": args.share,
            "chunk_columns": args.chunk,
            "values_timed": timed_values,
            "microseconds_per_value": rate,
            "build_minutes_estimate": {name: spent / 60 for name, spent in builds.items()},
        }
        with open(args.json, "w") as file:
            json.dump(report, file, indent=1)
            file.write("\n")


if __name__ == "__main__":
    main()
