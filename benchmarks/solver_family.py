"""Benchmark the exact solver on the Yacht family against yatzy-solver (PyPI ``yatzy-solver``, Rust).

Usage:
    python benchmarks/solver_family.py [--repeats 3] [--games 2000] [--yatzy] [--seed 0]

In one run: our ``yahtzee`` solution (``solve(..., cache=False)``) and yatzy-solver's ``american`` built side by
side, alternating, ``--repeats`` times each (min and median, and their ratio); the peak memory of our build
(``ru_maxrss`` of a fresh subprocess that only solves); and the optimal policy's games per second on Yahtzee,
``--games`` games batched through the game core (``GameState``: ``best_action`` on every game still playing,
then ``play``, until every game is over). ``--yatzy`` adds Scandinavian Yatzy (``yatzy-scandinavian``).
Figures only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from yacht_env import rules as R
from yacht_env.game import GameState, draw_stream
from yacht_env.solver import solve

THEIR_VARIANTS = {"yahtzee": "american", "yatzy": "yatzy-scandinavian"}
PEAK_MEMORY = """
import resource, sys
from yacht_env.solver import solve
solve(sys.argv[1], cache=False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux
"""


def seconds(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def build_times(name: str, repeats: int) -> tuple[list[float], list[float]]:
    """Our build and theirs, alternating, ``repeats`` times each: ``(ours, theirs)`` in seconds."""
    import yatzy_solver as ys

    variant = ys.Variant(THEIR_VARIANTS[name])
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(seconds(lambda: solve(name, cache=False)))
        theirs.append(seconds(lambda: ys.Solver.build(variant)))
    return ours, theirs


def peak_memory_mb(name: str) -> float:
    """Peak resident memory of a fresh process that imports the solver and solves ``name`` (MiB)."""
    out = subprocess.run([sys.executable, "-c", PEAK_MEMORY, name], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / 1024


def games_per_second(name: str, games: int, seed: int) -> tuple[float, float, float]:
    """``(games per second, mean score, expected score)`` of the optimal policy, batched through ``GameState``."""
    solution = solve(name)
    game = GameState(name, num_games=games)
    start = time.perf_counter()
    game.start(draw_stream(np.random.default_rng(seed), name, games))
    while (playing := np.flatnonzero(game.open_mask)).size:
        state = (game.roll, game.rolls_left, game.open_mask, game.upper, game.armed)
        game.play(solution.best_action(*(field[playing] for field in state)), games=playing)
    elapsed = time.perf_counter() - start
    return games / elapsed, float(game.total.mean()), solution.expected_score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="builds of each solver (alternating)")
    parser.add_argument("--games", type=int, default=2000, help="games of the optimal policy, batched")
    parser.add_argument("--yatzy", action="store_true", help="also Scandinavian Yatzy")
    parser.add_argument("--seed", type=int, default=0, help="seed of the games' dice")
    args = parser.parse_args()
    if args.repeats < 1 or args.games < 1:
        parser.error("--repeats and --games must be at least 1")

    names = ["yahtzee", "yatzy"] if args.yatzy else ["yahtzee"]
    print(f"$ python benchmarks/solver_family.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"build: solve(rules, cache=False) vs yatzy_solver.Solver.build, alternating, {args.repeats} each")
    header = (
        f"{'rules':<8} {'states':>10} {'ours min':>9} {'ours med':>9} {'theirs min':>11} {'theirs med':>11} "
        f"{'ratio':>6} {'peak MB':>8}"
    )
    print(header)
    print("-" * len(header))
    for name in names:
        ours, theirs = build_times(name, args.repeats)
        states = int(np.isfinite(solve(name).start_values).sum())
        print(
            f"{name:<8} {states:>10,} {min(ours):>9.2f} {statistics.median(ours):>9.2f} {min(theirs):>11.2f} "
            f"{statistics.median(theirs):>11.2f} {min(ours) / min(theirs):>5.2f}x {peak_memory_mb(name):>8.0f}"
        )
    print("(ratio: our fastest build over theirs; states: the reachable turn starts we solve)")
    print()
    print(f"optimal policy, {args.games:,} games batched through GameState (best_action, then play)")
    for name in names:
        rate, mean, expected = games_per_second(name, args.games, args.seed)
        rules = R.get_rules(name)
        print(
            f"{name:<8} {rate:>8,.0f} games/s  mean score {mean:.2f} (expected {expected:.2f}, {rules.num_turns} turns)"
        )


if __name__ == "__main__":
    main()
