"""Seed and hyperparameter sweeps of train.py's training on Ray Tune, with IQM and bootstrap CIs over seeds.

    python sweep.py --config configs/sweep.yaml                 # a local Ray, started and stopped here
    python sweep.py --config configs/sweep.yaml --address auto  # join a running Ray cluster (ray start ...)
    python sweep.py --resume runs/sweeps/<name>                 # continue an interrupted sweep

Each trial (a configuration with a seed) is a normal run folder under ``<storage>/<name>/runs/``; the sweep
folder ends with ``results.json``, ``results.png`` (learning curves, IQM over seeds with 95% CI bands) and
``results.txt`` (the table printed at the end). One progress line per evaluation of each trial. Ctrl-C stops
the sweep and saves its state (exit status 130); ``--resume`` continues it without redoing finished trials.
Bad input prints one ``sweep.py: error: ...`` line and exits with status 2; a sweep with trials that failed
for good writes its results and exits with status 1.
"""

from __future__ import annotations

import sys

# Only the standard library up here: the project (numpy, torch, ray) is imported inside main(), where Ctrl-C
# during the imports ends in one line, not a traceback.
DEFAULT_CONFIG = "configs/sweep.yaml"
DEFAULT_STORAGE = "runs/sweeps"


def parse_args(argv: list[str] | None = None):
    from yacht_lab.cli import OneLineParser, number

    parser = OneLineParser(prog="sweep.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help=f"the sweep file (default: {DEFAULT_CONFIG})")
    parser.add_argument(
        "--resume", metavar="SWEEP_DIR", help="continue the sweep in this folder (its own sweep.yaml and settings)"
    )
    parser.add_argument(
        "--address",
        help="join the Ray cluster at this address: auto (the one `ray start` made on this machine) or HOST:PORT; "
        "default: start a local Ray",
    )
    parser.add_argument(
        "--cpus-per-trial",
        type=number(int, 1, high=256),
        default=1,
        help="CPUs Ray reserves for each trial, also its torch threads (default: %(default)s)",
    )
    parser.add_argument(
        "--max-concurrent",
        type=number(int, 1),
        help="at most this many trials at once (default: as many as the CPUs hold)",
    )
    parser.add_argument(
        "--storage",
        default=DEFAULT_STORAGE,
        help="folder of the sweep folders; on several machines one that all of them see at the same path "
        "(default: %(default)s)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("sweep.py: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    try:
        from yacht_lab.sweep import load_saved_sweep, load_sweep, run_sweep
    except ImportError as error:  # ray, rliable come with the sweep extra
        print(f"sweep.py: error: sweeps need the sweep extra (pip install 'yacht-rl[sweep]'): {error}", file=sys.stderr)
        return 2
    from pathlib import Path

    try:
        if args.resume is not None:
            if args.config is not None:
                raise ValueError("--config cannot be combined with --resume: a sweep keeps its own sweep file")
            sweep, settings = load_saved_sweep(Path(args.resume))
            outcome = run_sweep(
                sweep,
                args.storage,
                address=args.address,
                cpus_per_trial=settings["cpus_per_trial"],
                max_concurrent=settings["max_concurrent"],
                resume=args.resume,
            )
        else:
            sweep = load_sweep(args.config or DEFAULT_CONFIG)
            outcome = run_sweep(
                sweep,
                args.storage,
                address=args.address,
                cpus_per_trial=args.cpus_per_trial,
                max_concurrent=args.max_concurrent,
            )
    except (ValueError, OSError) as error:
        print(f"sweep.py: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if outcome.interrupted:
        print(
            f"sweep.py: interrupted; continue with: python sweep.py --resume {outcome.folder}",
            file=sys.stderr,
        )
        return 130
    print(outcome.table)
    print(f"sweep folder: {outcome.folder}")
    if outcome.failed:
        print(f"sweep.py: {len(outcome.failed)} trial(s) failed for good: {', '.join(outcome.failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
