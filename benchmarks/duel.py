"""The two-player solve: its build's time, memory and disk, its exact values, and simulated games that confirm them.

    python benchmarks/duel.py --rules standard --deals 100000
    python benchmarks/duel.py --rules standard --opponent optimal --deals 100000
    python benchmarks/duel.py --rules standard --evaluate --deals 100000

Reads a built solution: a missing one is one line naming the command that builds it (``python -m yacht_env.duel
build``) and exit status 2, unless ``--build`` asks for the build here (for ``standard`` 29 minutes on 2 cores and
2.5 GB). Then it prints: the build's time on this machine (recorded in the solution's manifest), its peak memory
(the build's process and its largest worker process, each counting the pages of the memory-mapped level files it
touched; the sum of the process's and ``workers`` times the worker's bounds the whole) and the size of its files; the
exact win rates of the solution's player against its opponent in each seat (the equilibrium: ``V*`` and ``1 - V*``);
and ``--deals`` deals of simulated games against the ``optimal`` agent, each deal played in both seats on the same two
dice streams (``2 * deals`` games: :func:`yacht_lab.measure.yardstick.seat_games`, as ``benchmarks/two_players.py``
plays any agent), with each seat's win rate (ties half), its 95% CI, whether the exact value lies in it (the best
response; the equilibrium where its exact evaluation against the solver is built, ``python -m yacht_env.duel evaluate``,
or with ``--evaluate``, which builds it), and the games per second. With ``--float32`` (a build that kept its float32
files) it also measures what the uint16 storage loses: the largest difference of a stored value, and the same deals
played from the float32 values.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from yacht_agents.duel import DuelAgent
from yacht_agents.optimal import OptimalAgent
from yacht_env import duel
from yacht_env import rules as R
from yacht_env.util import atomic_write
from yacht_lab.measure.yardstick import check_built, seat_games
from yacht_lab.scripts.cli import OneLineParser, number, output_file

PROG = "duel.py"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--rules", default="standard")
    parser.add_argument(
        "--opponent", default=None, choices=["optimal"], help="the best response to it (default: the equilibrium)"
    )
    parser.add_argument(
        "--deals", type=number(int, 0), default=2000, help="deals against optimal, each played in both seats"
    )
    parser.add_argument("--seed", type=number(int, 0), default=0)
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument(
        "--float32", action="store_true", help="also play from the kept float32 files (the storage's loss)"
    )
    parser.add_argument(
        "--evaluate", action="store_true", help="build the equilibrium's exact evaluation against optimal if missing"
    )
    parser.add_argument(
        "--build", action="store_true", help="build the solution if it is missing (for standard: 29 minutes, 2.5 GB)"
    )
    parser.add_argument("--json", type=output_file, help="write the figures here (checked before the games)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        rules = R.get_rules(args.rules)
        if not args.build:
            check_built(rules, args.opponent, args.cache_dir)
        solution = duel.solve(rules, args.opponent, cache_dir=args.cache_dir, progress=True)
    except ValueError as error:
        print(f"{PROG}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    manifest = duel.read_manifest(solution.folder)
    files = [p for p in solution.folder.iterdir() if p.is_file()]
    compact = sum(p.stat().st_size for p in files if p.name.endswith(".u16.npy"))
    report = {
        "rules": rules.name,
        "kind": solution.kind,
        "build_seconds": manifest.get("seconds"),
        "peak_memory_bytes": manifest.get("peak_rss_bytes"),
        "peak_worker_memory_bytes": manifest.get("peak_worker_rss_bytes"),
        "workers": manifest.get("workers"),
        "disk_bytes": sum(p.stat().st_size for p in files),
        "disk_bytes_uint16": compact,
        "values": int(duel.Layout(rules).num_values()),
        "load_seconds": time.perf_counter() - start,
        "exact_seat_values": list(solution.seat_values),
        "exact_mean_value": solution.mean_value,
    }
    name = "duel" if args.opponent is None else "duel:optimal"
    peak, worker, workers = report["peak_memory_bytes"], report["peak_worker_memory_bytes"], report["workers"]
    peak = f"{peak / 2**30:.2f} GiB" if peak else "not recorded"
    if worker and workers:
        peak += f" + {workers} workers of at most {worker / 2**30:.2f} GiB"
    print(
        f"{rules.name} {solution.kind}: {report['values']:,} values; built in {report['build_seconds'] or 0:.0f} s, "
        f"peak memory {peak}, files {report['disk_bytes'] / 1e9:.2f} GB "
        f"(uint16: {compact / 1e9:.2f} GB)"
    )
    first, second = solution.seat_values
    print(f"exact: first seat {first:.9f}, second seat {second:.9f}, mean {solution.mean_value:.9f}")
    against = solution if solution.kind == "best_response" else None
    if solution.kind == "equilibrium":
        try:
            against = duel.evaluate(
                rules, "optimal", cache_dir=args.cache_dir, progress=True, build_missing=args.evaluate
            )
        except ValueError:
            print(f"exact against optimal: not built (python -m yacht_env.duel evaluate --rules {rules.name})")
        else:
            manifest = duel.read_manifest(against.folder)
            report["evaluation_seconds"] = manifest.get("seconds")
            report["exact_against_optimal"] = list(against.seat_values)
            first, second = against.seat_values
            print(
                f"exact against optimal: first seat {first:.9f}, second seat {second:.9f}, mean "
                f"{against.mean_value:.9f} (evaluated in {manifest.get('seconds') or 0:.0f} s)"
            )
    if args.deals:
        agent = DuelAgent(rules, args.opponent, name=name, cache_dir=args.cache_dir)
        games = seat_games(agent, OptimalAgent(rules), rules, args.deals, args.seed)
        played = {**games.summary(), "games_per_second": games.games_per_second, "seconds": games.seconds}
        report["against_optimal"] = played
        for seat in (0, 1):
            low, high = played["seat_ci95"][seat]
            line = f"{name} vs optimal, seat {seat + 1}: {played['seat_win_rates'][seat]:.5f} [{low:.5f}, {high:.5f}]"
            if against is not None:
                exact = against.seat_values[seat]
                line += f"  exact {exact:.5f} {'inside' if low <= exact <= high else 'OUTSIDE'}"
            print(line)
        print(
            f"{name} vs optimal, both seats: {played['mean_win_rate']:.5f} [{played['mean_ci95'][0]:.5f}, "
            f"{played['mean_ci95'][1]:.5f}] over {played['games']:,} games, {played['games_per_second']:.0f} games/s"
        )
        if args.float32:
            exact = duel.solve(rules, args.opponent, cache_dir=args.cache_dir, storage="exact", build_missing=False)
            largest = 0.0
            for table, levels in solution._tables.items():
                for compact_level, exact_level in zip(levels, exact._tables[table], strict=True):
                    difference = np.abs(compact_level / duel.QUANT - exact_level.astype(np.float64))
                    largest = max(largest, float(difference.max()))
            exact_agent = DuelAgent(rules, args.opponent, name=name, cache_dir=args.cache_dir)
            exact_agent.solution = exact
            other = seat_games(exact_agent, OptimalAgent(rules), rules, args.deals, args.seed)
            paired = games.wins.mean(axis=0) - other.wins.mean(axis=0)
            report["storage"] = {
                "largest_value_difference": largest,
                "float32_mean_win_rate": other.win_rate()[0],
                "uint16_minus_float32": float(paired.mean()),
                "uint16_minus_float32_se": float(paired.std(ddof=1) / np.sqrt(args.deals)),
                "deals_that_differ": int((paired != 0).sum()),
            }
            print(
                f"uint16 storage: largest difference of a stored value {largest:.2e}; from float32 values "
                f"{other.win_rate()[0]:.5f} on the same deals ({int((paired != 0).sum())} of {args.deals} deals end "
                f"otherwise; uint16 - float32 = {paired.mean():+.6f} "
                f"+- {1.96 * paired.std(ddof=1) / np.sqrt(args.deals):.6f})"
            )
    if args.json:
        atomic_write(args.json, json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
