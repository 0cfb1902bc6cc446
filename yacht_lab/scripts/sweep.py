"""Seed and hyperparameter sweeps of yacht-train's training on Ray Tune, with IQM and bootstrap CIs over seeds.

    yacht-sweep --config configs/sweep.yaml                 # a local Ray, started and stopped here
    yacht-sweep --config configs/sweep.yaml --address auto  # join a running Ray cluster (ray start ...)
    yacht-sweep --resume runs/sweeps/<name>                 # continue an interrupted sweep

(``python -m yacht_lab sweep`` and the repository's ``python sweep.py`` are the same program.) Without
``--config`` the sweep is the shipped ``configs/sweep.yaml`` (the package data ``yacht_lab/configs/sweep.yaml``
once installed: 3 configurations x 3 seeds of 2 M steps).

Each trial (a configuration with a seed) is a normal run folder under ``<storage>/<name>/runs/``; the sweep
folder ends with ``results.json``, ``results.png`` (learning curves, IQM over seeds with 95% CI bands) and
``results.txt`` (the table printed at the end). One progress line per evaluation of each trial. Ctrl-C stops
the sweep and saves its state (exit status 130); ``--resume`` continues it without redoing finished trials.
Bad input prints one ``yacht-sweep: error: ...`` line (named as the program was started) and exits with
status 2; a sweep with trials that failed for good writes its results and exits with status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

from yacht_lab.scripts import program_name, rerun_command

# Only the standard library up here: the project (numpy, torch, ray) is imported inside main(), where Ctrl-C
# during the imports ends in one line, not a traceback.
DEFAULT_STORAGE = "runs/sweeps"
COMMAND = "yacht-sweep"


def default_config() -> Path:
    """The shipped sweep file: ``yacht_lab/configs/sweep.yaml`` installed, the repository's ``configs/sweep.yaml``
    in a source checkout (an editable install).
    """
    package = Path(__file__).resolve().parents[1]  # yacht_lab/
    installed = package / "configs" / "sweep.yaml"
    if installed.is_file() or not (package.parent / "pyproject.toml").is_file():
        return installed
    return package.parent / "configs" / "sweep.yaml"


def resolve_sweep(config: str | None) -> Path:
    """The file a ``--config`` names: ``None`` or the shipped name ``sweep`` is :func:`default_config`, a path is
    read as it is (``./sweep`` for a file of that name in the working folder).

    Raises:
        ValueError: another bare name with no such file (the shipped training configs are not sweep files).
    """
    from yacht_env.util import is_bare_name

    if config is None or config == "sweep":
        return default_config()
    if is_bare_name(config, (".yaml", ".yml")) and not Path(config).exists():
        raise ValueError(
            f"cannot read sweep {config!r}: no shipped sweep of that name (shipped: sweep) and no such file; "
            "give sweep or a path to a sweep .yaml file"
        )
    return Path(config)


def parse_args(argv: list[str] | None = None, prog: str | None = None):
    """The parsed command line (one error line and exit status 2 on bad input)."""
    from yacht_lab.scripts.cli import OneLineParser, description, number

    parser = OneLineParser(prog=program_name(COMMAND, prog), description=description(__doc__))
    parser.add_argument(
        "--config", help="the sweep file: a path, or the shipped name sweep (the default: configs/sweep.yaml)"
    )
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


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Runs ``yacht-sweep``; returns its exit status."""
    prog = program_name(COMMAND, prog)
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None, prog: str) -> int:
    args = parse_args(argv, prog)
    import importlib.util

    try:
        # ray and rliable come with the sweep extra; yacht_lab.sweep.run imports ray only when a sweep runs.
        missing = [name for name in ("ray", "rliable") if importlib.util.find_spec(name) is None]
        if missing:
            raise ImportError(f"No module named {missing[0]!r}")
        from yacht_lab.sweep.run import load_saved_sweep, run_sweep
        from yacht_lab.sweep.spec import load_sweep
    except ImportError as error:
        print(f"{prog}: error: sweeps need the sweep extra (pip install 'yacht-rl[sweep]'): {error}", file=sys.stderr)
        return 2

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
            sweep = load_sweep(resolve_sweep(args.config))
            outcome = run_sweep(
                sweep,
                args.storage,
                address=args.address,
                cpus_per_trial=args.cpus_per_trial,
                max_concurrent=args.max_concurrent,
            )
    except (ValueError, OSError) as error:
        print(f"{prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if outcome.interrupted:
        print(
            f"{prog}: interrupted; continue with: {rerun_command(prog)} --resume {outcome.folder}",
            file=sys.stderr,
        )
        return 130
    print(outcome.table)
    print(f"sweep folder: {outcome.folder}")
    if outcome.failed:
        print(f"{prog}: {len(outcome.failed)} trial(s) failed for good: {', '.join(outcome.failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
