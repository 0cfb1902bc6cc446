"""Train MaskablePPO on Yacht-v0 (the native vector env through the SB3 adapter).

    python train.py                                   # configs/ppo.yaml: standard rules, <= 60 minutes
    python train.py --total-timesteps 20000 --max-minutes 1 --output-dir /tmp/runs
    python train.py --resume runs/<run>/checkpoints/step_<N>.zip

Each run writes ``runs/<run name>/``: config.yaml, command.txt, model.zip, checkpoints/,
learning_curve.csv, learning_curve.png and tb/ (TensorBoard). Ctrl-C saves a checkpoint and exits.
"""

from __future__ import annotations

import argparse
import sys

from agents.cli import OneLineParser, number

DEFAULT_CONFIG = "configs/ppo.yaml"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog="train.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help=f"YAML hyperparameters (default: {DEFAULT_CONFIG})")
    parser.add_argument("--rules", choices=["standard", "classic"], help="rules preset (config: rules)")
    parser.add_argument("--total-timesteps", type=number(int, 1), help="environment steps (config: total_timesteps)")
    parser.add_argument(
        "--max-minutes", type=number(float, 0, inclusive=False), help="wall-clock limit (config: max_minutes)"
    )
    parser.add_argument("--seed", type=number(int, 0), help="seed (config: seed)")
    parser.add_argument("--n-envs", type=number(int, 1), help="games stepped together (config: n_envs)")
    parser.add_argument("--device", help="torch device, e.g. cpu or cuda (config: device)")
    parser.add_argument("--output-dir", default="runs", help="where run folders go (default: %(default)s)")
    parser.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="continue a run from one of its checkpoints, with its own config (only the budget can change)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from agents.training import load_config, resume_config, train
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
    }
    try:
        if args.resume is not None:
            if args.config is not None:
                raise ValueError("--config cannot be combined with --resume: a run keeps its own config")
            config = resume_config(args.resume, overrides)
        else:
            config = load_config(args.config or DEFAULT_CONFIG, overrides)
        run_dir = train(config, args.output_dir, resume=args.resume, progress=not args.no_progress)
    except ValueError as error:
        print(f"train.py: error: {error}", file=sys.stderr)
        return 2
    print(f"run folder: {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
