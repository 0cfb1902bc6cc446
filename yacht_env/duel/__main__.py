"""The two-player solve's command: python -m yacht_env.duel build --rules standard [--opponent optimal].

``build`` builds a solution (or finishes a stopped build) with a progress line and prints its values; ``info``
prints a finished solution's values and files; ``evaluate`` values the equilibrium exactly against a solo policy
(the solver's), building the equilibrium first where it is missing. Bad arguments are one line on stderr and exit
code 2. Ctrl-C or SIGTERM stops a build in one line (exit code 130 or 143), its workers with it; the finished levels
are kept and the next build goes on from them.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from yacht_env import rules as R

#: What a build costs, as ``build --help`` and ``evaluate --help`` say (figures of ``docs/two-players.md``).
BUILD_COST = (
    "What a build costs: the standard game's equilibrium takes about 30 minutes on 2 cores (3 minutes on a GPU), "
    "about 2.5 GB of memory with 2 workers, and 2.5 GB on disk (its evaluation against optimal: about 90 minutes "
    "and 5 GB on disk); a stopped build goes on from its finished levels."
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` so that a build stops the same way (its workers too)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    raise Terminated(signum)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m yacht_env.duel", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("build", "build a solution (resumes a stopped build)"),
        ("info", "show a finished solution"),
        ("evaluate", "value the equilibrium exactly against a solo policy (builds what is missing, resumes)"),
    ):
        cost = BUILD_COST if name != "info" else None
        command = commands.add_parser(name, help=text, description=f"{text[0].upper()}{text[1:]}.", epilog=cost)
        command.add_argument("--rules", default="standard", help="a preset without bonuses (default: standard)")
        command.add_argument(
            "--opponent",
            default="optimal" if name == "evaluate" else None,
            choices=["optimal"],
            help="the equilibrium against this solo policy (default: optimal)"
            if name == "evaluate"
            else "the best response to this solo policy (default: the equilibrium)",
        )
        command.add_argument("--precision", default="float32", choices=["float32", "float64"])
        command.add_argument(
            "--cache-dir", default=None, help="the cache folder (default: $YACHT_RL_CACHE_DIR or ~/.cache/yacht-rl)"
        )
        if name == "build":
            command.add_argument("--keep-float32", action="store_true", help="keep the float32 level files too")
        if name != "info":
            command.add_argument(
                "--device", default="auto", help="auto (a GPU where torch sees one, else numpy), numpy, cpu, cuda, ..."
            )
            command.add_argument(
                "--workers", type=int, default=None, help="worker processes of a numpy build (default: one per core)"
            )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command; returns the exit code."""
    from yacht_env import duel

    args = _parser().parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        rules = R.get_rules(args.rules)
        start = time.monotonic()
        if args.command == "evaluate":
            solution = duel.evaluate(
                rules,
                args.opponent,
                precision=args.precision,
                cache_dir=args.cache_dir,
                progress=True,
                device=args.device,
                workers=args.workers,
            )
        else:
            solution = duel.solve(
                rules,
                args.opponent,
                precision=args.precision,
                cache_dir=args.cache_dir,
                progress=args.command == "build",
                keep_float32=getattr(args, "keep_float32", False),
                build_missing=args.command == "build",
                device=getattr(args, "device", "auto"),
                workers=getattr(args, "workers", None),
            )
    except ValueError as error:
        print(f"python -m yacht_env.duel: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, "signum", signal.SIGINT)
        print(
            f"python -m yacht_env.duel: stopped ({signal.Signals(signum).name}); the finished levels are kept, run it "
            "again to go on",
            file=sys.stderr,
        )
        return 128 + signum
    finally:
        signal.signal(signal.SIGTERM, previous)
    first, second = solution.seat_values
    mean = solution.mean_value
    print(f"{rules.name} {solution.kind}: first seat {first:.9f}, second seat {second:.9f}, mean {mean:.9f}")
    print(f"files: {solution.folder} (loaded in {time.monotonic() - start:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
