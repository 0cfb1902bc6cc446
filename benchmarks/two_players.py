"""The two-player yardstick: agents against perfect play (``duel``) and against the solver (``optimal``).

    python benchmarks/two_players.py --agents win ppo:selfplay_standard jax:runs/RUN --deals 10000
    python benchmarks/two_players.py --agents optimal duel win --rules classic --json two_players.json
    python benchmarks/two_players.py --agents jax:runs/SOLO jax:runs/TABLE --baseline jax:runs/SOLO

Each agent plays ``--deals`` deals against the equilibrium and as many against the solver, each deal in both seats on
the same two dice streams (every agent meets each opponent on the same deals), and the report gives its win rate
(ties half) against each with a 95% interval over deals, and its share of the edge over the solver: 0% is the
solver's own play, 100% the best response to it (exact, read from its built solution's manifest, else from
``benchmarks/duel/<rules>_best_response.json``). Against the equilibrium 50% is perfect play. ``--baseline SPEC``
(one of the agents) adds every other agent's win rate minus the baseline's, deal by deal on the same deals, with its
95% interval: a learner against its start. See :mod:`yacht_lab.measure.yardstick`.

It needs the equilibrium built (``python -m yacht_env.duel build --rules R``: for ``standard`` 29 minutes on 2 cores
and 2.5 GB, 3 minutes on a GPU); where it is not, it says so in one line with that command and exits with status 2,
as for any bad argument. It never starts a build.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from yacht_lab.scripts.cli import OneLineParser, description, number, output_file

HERE = Path(__file__).resolve().parent
PROG = "two_players.py"
BUILD_NOTE = (
    "It needs the two-player solution built (python -m yacht_env.duel build --rules R): for standard about 30 minutes "
    "on 2 cores (3 minutes on a GPU), about 2.5 GB of memory and 2.5 GB on disk; it never starts a build. Its 100% "
    "mark, the best response to optimal, is read from benchmarks/duel/ where it is not built."
)


def best_response(rules, cache_dir) -> tuple[float, str] | None:
    """The best response to the solver's exact win rate and where it was read: its solution, else the figures file."""
    from yacht_lab.measure.yardstick import best_response_value

    value = best_response_value(rules, cache_dir)
    if value is not None:
        return value, "its built solution"
    recorded = HERE / "duel" / f"{rules.name}_best_response.json"
    if recorded.is_file():
        return float(json.loads(recorded.read_text())["exact_mean_value"]), str(recorded.relative_to(HERE.parent))
    return None


def main(argv: list[str] | None = None) -> int:
    from yacht_agents import AGENT_SPECS, parse_spec
    from yacht_lab.measure.evaluation import MAX_GAMES

    parser = OneLineParser(prog=PROG, description=description(__doc__), epilog=BUILD_NOTE)
    parser.add_argument("--agents", nargs="+", required=True, metavar="SPEC", help=f"any of {', '.join(AGENT_SPECS)}")
    parser.add_argument("--rules", default="standard", help="a preset without bonuses (default: standard)")
    parser.add_argument(
        "--deals", type=number(int, 1, high=MAX_GAMES), default=10_000, help="deals against each opponent (10,000)"
    )
    parser.add_argument("--seed", type=number(int, 0), default=0, help="the dice's seed (default: 0)")
    parser.add_argument("--cache-dir", default=None, help="where the solutions lie (default: the solver's cache)")
    parser.add_argument("--baseline", metavar="SPEC", help="one of --agents: the others minus it, paired on the deals")
    parser.add_argument("--json", type=output_file, help="write the report here (checked before the games)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    from yacht_env import rules as R
    from yacht_env.util import atomic_write
    from yacht_lab.measure.yardstick import build_command, check_built, make_agents, measure

    try:
        for spec in args.agents:
            parse_spec(spec)
        rules = R.get_rules(args.rules)
        check_built(rules, cache_dir=args.cache_dir)
        ceiling = best_response(rules, args.cache_dir)
        if ceiling is None:
            raise ValueError(
                f"the best response to optimal of {rules.name!r} (100% of the edge) is not built and benchmarks/duel/ "
                f"has no figure for it: build it with {build_command(rules, 'optimal', args.cache_dir)}"
            )
        agents = make_agents(args.agents, rules, args.seed, args.cache_dir)
        result = measure(
            agents,
            rules,
            args.deals,
            args.seed,
            args.cache_dir,
            ceiling[0],
            progress=not args.no_progress,
            baseline=args.baseline,
        )
    except ValueError as error:
        print(f"{PROG}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(result.format())
    print(f"(the best response's value from {ceiling[1]})")
    if args.json:
        report = {**result.to_dict(), "best_response_source": ceiling[1]}
        atomic_write(args.json, json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
