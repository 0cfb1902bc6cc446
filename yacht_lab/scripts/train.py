"""Train a player for Yacht with the trainer its config chooses (:func:`yacht_lab.train`): MaskablePPO on Yacht-v0 (SB3,
through the native vector env) or against opponents (--opponents), the distillation of the win agent into a trained
model (a config with a ``distill`` section, such as ``configs/selfplay.yaml``), PPO on the JAX core (a ``jax``
section, such as ``configs/jax_ppo.yaml``), or a learned-value search agent trained by self-play (a ``search`` section,
such as ``configs/search_standard.yaml``; it plays its own tables: --n-envs and --opponents are refused with it).

    yacht-train                                       # the defaults (configs/ppo.yaml): standard rules, <= 60 minutes
    yacht-train --config selfplay                     # policy-iteration distillation: ppo:selfplay_standard's recipe
    yacht-train --config yahtzee                      # a shipped config by name (or a path: --config my.yaml)
    yacht-train --config jax_ppo                      # the same recipe, PPO on the JAX core (the jax extra)
    yacht-train --config search_standard              # the search agent by self-play (search:standard's recipe)
    yacht-train --total-timesteps 20000 --max-minutes 1 --output-dir /tmp/runs
    yacht-train --opponents greedy --reward win       # YachtVersus-v0: one seat against greedy, rewarded for wins
    yacht-train --resume runs/<run>/checkpoints/step_<N>.zip
    yacht-train --resume runs/<run>                   # a run folder: its newest checkpoint

(``python -m yacht_lab train`` and the repository's ``python train.py`` are the same program.) Without
``--config`` the run takes the defaults of :class:`yacht_lab.training.config.TrainConfig`, which the repository's
``configs/ppo.yaml`` lists in full. Each run writes ``runs/<run name>/``: config.yaml, command.txt, model.zip,
checkpoints/, learning_curve.csv, learning_curve.png and tb/ (TensorBoard); a JAX run writes its model as data
(model.npz, model.json), as does a search run. Ctrl-C (or SIGTERM) saves a checkpoint
and exits with status 130 (143 for SIGTERM): the run can be resumed, it has not finished; a second Ctrl-C quits at once
without saving (the same statuses), even inside a long compiled call. Bad input prints one
``yacht-train: error: ...`` line (named as the program was started) and exits with status 2, writing nothing.
"""

from __future__ import annotations

import argparse
import signal
import sys

from yacht_lab.scripts import program_name, rerun_command

# Only the standard library up here: the project (numpy, torch) is imported inside main(), where Ctrl-C
# during the imports ends in one line, not a traceback.
COMMAND = "yacht-train"


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The parsed command line (one error line and exit status 2 on bad input)."""
    from yacht_env.rules import PRESETS
    from yacht_lab.scripts.cli import OneLineParser, description, number

    parser = OneLineParser(prog=program_name(COMMAND, prog), description=description(__doc__))
    parser.add_argument(
        "--config",
        help="YAML hyperparameters: a path, or a shipped config's name such as yahtzee or versus "
        "(yacht_lab.training.config.shipped_configs; default: the built-in defaults, as the shipped ppo lists them)",
    )
    parser.add_argument("--rules", choices=sorted(PRESETS), help="rules preset (config: rules)")
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
        help="train at tables against these agents: random, greedy, optimal, ppo:NAME or ppo:PATH (config: opponents)",
    )
    parser.add_argument("--reward", choices=["score", "win"], help="score, or win (with --opponents) (config: reward)")
    parser.add_argument("--seat", type=seat, help="the learner's seat: random or 0..len(opponents) (config: seat)")
    parser.add_argument("--device", help="torch device: cpu, cuda, cuda:<i> or mps, if present (config: device)")
    parser.add_argument(
        "--init",
        metavar="MODEL",
        help="start from this model's weights: a path or a shipped name such as standard (config: init)",
    )
    parser.add_argument("--output-dir", default="runs", help="where run folders go (default: %(default)s)")
    parser.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="continue a run from one of its checkpoints (or its run folder: the newest), with its own config (only "
        "the budget can change)",
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


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Runs ``yacht-train``; returns its exit status."""
    from yacht_lab.training.signals import StopFlag  # the standard library only

    prog = program_name(COMMAND, prog)
    # SIGINT and SIGTERM from the start, taken note of and acted on at safe points (an exception raised by a handler
    # inside an import or JAX's garbage-collection callback would be lost): one line and 128 + the signal, nothing
    # left half-done (a claimed run folder is removed again); during a run its RunContext's handling takes over.
    try:
        with StopFlag(line=f"{prog}: interrupted ({{name}}): quit at once, without saving") as signals:
            return _main(argv, prog, signals)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, "signum", signal.SIGINT)
        print(f"{prog}: interrupted ({signal.Signals(signum).name}): quit at once, without saving", file=sys.stderr)
        return 128 + signum


def _main(argv: list[str] | None, prog: str, signals) -> int:
    args = parse_args(argv, prog)
    signals.check()
    try:
        from yacht_lab import train
        from yacht_lab.scripts.cli import error_line
        from yacht_lab.training.config import load_config
        from yacht_lab.training.run_context import resume_config
    except ImportError as error:  # pyyaml comes with the train and the jax extras
        extras = "pip install 'yacht-rl[train]', or 'yacht-rl[jax]' for a config with a jax section"
        print(f"{prog}: error: training needs the train or the jax extra ({extras}): {error}", file=sys.stderr)
        return 2
    signals.check()

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
        "init": args.init,
    }
    try:
        if args.resume is not None:
            if args.config is not None:
                raise ValueError("--config cannot be combined with --resume: a run keeps its own config")
            config = resume_config(args.resume, overrides)
        elif args.config is not None:
            config = load_config(args.config, overrides)
        else:
            config = default_config(overrides)
        signals.check()
        # The config chooses its trainer (yacht_lab.training.trainers): SB3 PPO, the distillation, or PPO on JAX.
        stopped: list[int] = []
        run_dir = train(
            config,
            args.output_dir,
            resume=args.resume,
            progress=not args.no_progress,
            rerun=rerun_command(prog),
            on_stop=stopped.append,
        )
    except (ValueError, OSError, RuntimeError) as error:  # one line, whatever the error says (or raised again)
        print(
            error_line(prog, error, "make the run smaller (jax.seeds, n_envs, ppo.batch_size, eval.games)"),
            file=sys.stderr,
        )
        return 2
    print(f"run folder: {run_dir}")
    # Stopped by a signal (saved, but not finished): not 0, so that `train.py && evaluate.py` stops here too.
    return 128 + stopped[0] if stopped else 0


def default_config(overrides: dict):
    """The built-in defaults (:class:`~yacht_lab.training.config.TrainConfig`, what ``configs/ppo.yaml`` lists) with the
    flags given, validated as :func:`yacht_lab.training.config.load_config` validates a file's.

    Raises:
        ValueError: a bad flag value.
    """
    from yacht_lab.training.config import TrainConfig, validate

    config = TrainConfig()
    for name, value in overrides.items():
        if value is not None:
            setattr(config, name, value)
    return validate(config)


if __name__ == "__main__":
    sys.exit(main())
