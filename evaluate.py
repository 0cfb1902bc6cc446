"""Benchmark Yacht agents on the same seeded dice: score statistics, regret against the exact solver, paired
differences, and optionally a JSON report and a plot.

Usage:
    python evaluate.py                      # random, greedy, optimal (+ ppo:models/ppo_<rules>.zip if present)
    python evaluate.py --agents random greedy optimal ppo:models/x.zip --games 10000 --seed 0 \\
        --rules standard --json results.json --plot scores.png

Agent specs: ``random``, ``greedy``, ``optimal``, ``ppo:PATH`` (see ``agents/__init__.py``). Game ``g`` rolls
the dice of ``game_streams(seed, [g])`` for every agent, so same arguments give the same JSON byte for byte.
Bad input prints one ``evaluate.py: error: ...`` line and exits with status 2, writing no file.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from agents import AGENT_SPECS, make_agent
from agents.cli import OneLineParser, number
from agents.evaluation import DEFAULT_BATCH_SIZE, evaluate, format_report, render_json, render_plot, write_atomically
from yacht_env.rules import PRESETS

DEFAULT_AGENTS = ("random", "greedy", "optimal")
DEFAULT_GAMES = 10_000  # ~2 s for random, greedy and optimal on two cores; a small PPO MLP adds ~2-5 s


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog="evaluate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--agents",
        nargs="+",
        metavar="SPEC",
        help=f"agents to compare, each one of {', '.join(AGENT_SPECS)} "
        f"(default: {' '.join(DEFAULT_AGENTS)}, plus ppo:models/ppo_<rules>.zip if that file exists)",
    )
    parser.add_argument(
        "--games", type=number(int, 1), default=DEFAULT_GAMES, help="games per agent (default: %(default)s)"
    )
    parser.add_argument("--seed", type=number(int, 0), default=0, help="seed of the dice (default: %(default)s)")
    parser.add_argument(
        "--rules", choices=sorted(PRESETS), default="standard", help="rules preset (default: %(default)s)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the statistics as JSON to PATH")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of score distributions and category means to PATH")
    parser.add_argument(
        "--batch-size",
        type=number(int, 1),
        default=DEFAULT_BATCH_SIZE,
        help="games stepped together (default: %(default)s)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    if args.agents is None:
        args.agents = list(DEFAULT_AGENTS)
        model = Path("models") / f"ppo_{args.rules}.zip"
        if model.is_file() and importlib.util.find_spec("sb3_contrib") is not None:  # the train extra
            args.agents.append(f"ppo:{model}")
    for option in ("json", "plot"):
        problem = output_problem(getattr(args, option))
        if problem:
            parser.error(f"argument --{option}: {problem}")
    return args


def output_problem(path: str | None) -> str | None:
    """Why ``path`` cannot be written (checked before the run, so a bad path costs no time), or ``None``."""
    if path is None:
        return None
    folder = Path(path).parent
    if Path(path).is_dir():
        return f"'{path}' is a directory"
    if not folder.is_dir():
        return f"cannot write '{path}': folder '{folder}' does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write '{path}': folder '{folder}' is not writable"
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if len(set(args.agents)) != len(args.agents):
            raise ValueError(f"each agent may be given once, got {' '.join(args.agents)}")
        agents = [make_agent(spec, rules=args.rules, seed=args.seed) for spec in args.agents]
        evaluation = evaluate(
            agents, args.games, args.seed, args.rules, batch_size=args.batch_size, progress=not args.no_progress
        )
        # Both files are rendered before either is written, each written atomically.
        outputs = [(args.plot, render_plot), (args.json, render_json)]
        rendered = [(path, render(evaluation)) for path, render in outputs if path]
        for path, data in rendered:
            write_atomically(path, data)
    except (ValueError, OSError) as error:
        message = " ".join(str(error).split())  # one line, whatever the error says
        print(f"evaluate.py: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("evaluate.py: interrupted", file=sys.stderr)
        return 130
    try:
        print(format_report(evaluation))
        for path, _ in rendered:
            print(f"wrote {path}")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`: the files are written; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
