"""Train MaskablePPO on Yacht-v0 (the native vector env through the SB3 adapter), or against opponents.

    python train.py                                   # configs/ppo.yaml: standard rules, <= 60 minutes
    python train.py --total-timesteps 20000 --max-minutes 1 --output-dir /tmp/runs
    python train.py --opponents greedy --reward win   # YachtVersus-v0: one seat against greedy, rewarded for wins
    python train.py --resume runs/<run>/checkpoints/step_<N>.zip

Each run writes ``runs/<run name>/``: config.yaml, command.txt, model.zip, checkpoints/,
learning_curve.csv, learning_curve.png and tb/ (TensorBoard). Ctrl-C (or SIGTERM) saves a checkpoint and
exits; a second Ctrl-C quits at once without saving (exit status 130; 143 for SIGTERM). Bad input prints one
``train.py: error: ...`` line and exits with status 2, writing nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys

# Only the standard library up here: the project (numpy, torch) is imported inside main(), where Ctrl-C
# during the imports ends in one line, not a traceback.
DEFAULT_CONFIG = "configs/ppo.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    from yacht_lab.cli import OneLineParser, number

    parser = OneLineParser(prog="train.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help=f"YAML hyperparameters (default: {DEFAULT_CONFIG})")
    parser.add_argument("--rules", choices=["standard", "classic"], help="rules preset (config: rules)")
    parser.add_argument("--total-timesteps", type=number(int, 1), help="environment steps (config: total_timesteps)")
    parser.add_argument(
        "--max-minutes", type=number(float, 0, inclusive=False), help="wall-clock limit (config: max_minutes)"
    )
    parser.add_argument("--seed", type=number(int, 0), help="seed (config: seed)")
    parser.add_argument("--n-envs", type=number(int, 1), help="games stepped together (config: n_envs)")
    parser.add_argument(
        "--opponents",
        nargs="+",
        metavar="SPEC",
        help="train at tables against these agents: random, greedy, optimal, ppo:PATH (config: opponents)",
    )
    parser.add_argument("--reward", choices=["score", "win"], help="score, or win (with --opponents) (config: reward)")
    parser.add_argument("--seat", type=seat, help="the learner's seat: random or 0..len(opponents) (config: seat)")
    parser.add_argument("--device", help="torch device: cpu, cuda, cuda:<i> or mps, if present (config: device)")
    parser.add_argument("--output-dir", default="runs", help="where run folders go (default: %(default)s)")
    parser.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="continue a run from one of its checkpoints, with its own config (only the budget can change)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def seat(text: str) -> str | int:
    """An argparse ``type``: ``random`` or an int >= 0 (its upper bound depends on the opponents: checked later)."""
    if text == "random":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 'random' or an integer >= 0, got {text!r}")
    return value


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's ``KeyboardInterrupt`` (``yacht_lab.training.Abort`` once that is imported)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    raise Terminated(signum)


def main(argv: list[str] | None = None) -> int:
    # SIGTERM like SIGINT from the start: an exception, so that nothing is left half-done (a claimed run
    # folder is removed again); during training yacht_lab.training's own handling takes over.
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, "signum", signal.SIGINT)
        print(f"train.py: interrupted ({signal.Signals(signum).name}): quit at once, without saving", file=sys.stderr)
        return 128 + signum
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    try:
        from yacht_lab.config import load_config
        from yacht_lab.training import resume_config, train
    except ImportError as error:  # yaml, torch, stable-baselines3 come with the train extra
        extra = "pip install 'yacht-rl[train]'"
        print(f"train.py: error: training needs the train extra ({extra}): {error}", file=sys.stderr)
        return 2

    overrides = {
        "rules": args.rules,
        "total_timesteps": args.total_timesteps,
        "max_minutes": args.max_minutes,
        "seed": args.seed,
        "n_envs": args.n_envs,
        "device": args.device,
        "opponents": args.opponents,
        "reward": args.reward,
        "seat": args.seat,
    }
    try:
        if args.resume is not None:
            if args.config is not None:
                raise ValueError("--config cannot be combined with --resume: a run keeps its own config")
            config = resume_config(args.resume, overrides)
        else:
            config = load_config(args.config or DEFAULT_CONFIG, overrides)
        run_dir = train(config, args.output_dir, resume=args.resume, progress=not args.no_progress)
    except (ValueError, OSError) as error:
        message = " ".join(str(error).split())  # one line, whatever the error says
        print(f"train.py: error: {message}", file=sys.stderr)
        return 2
    print(f"run folder: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
