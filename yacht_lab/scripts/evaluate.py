r"""Benchmark Yacht agents on the same seeded dice: score statistics, regret against the exact solver, paired
differences, and optionally a JSON report and a plot.

Usage:
    yacht-evaluate                          # random, greedy, optimal, ppo:<rules> (the shipped model)
    yacht-evaluate --agents random greedy optimal ppo:runs/x/model.zip --games 10000 --seed 0 \
        --rules standard --json results.json --plot scores.png
    yacht-evaluate --agents greedy optimal --games 1000 --record games.jsonl   # every decision, for yacht-web
    yacht-evaluate --players 2 --games 20000 --json h2h.json   # head to head: every pair of the agents
    yacht-evaluate --players 3 --agents random greedy optimal  # three agents at one table
    yacht-evaluate --players 3 --agents random greedy optimal win:3 --ratings  # every 3 of the 4 at a table
    yacht-evaluate --players 2 --games 2000 --ratings           # and the agents' ratings with their intervals

(``python -m yacht_lab evaluate`` and the repository's ``python evaluate.py`` are the same program.)
Agent specs: ``random``, ``greedy``, ``optimal``, ``win``, ``win:P``, ``duel``, ``ppo:NAME`` (a shipped model:
``standard``, ``classic``), ``ppo:PATH`` or ``jax:PATH`` (see :func:`yacht_agents.make_agent`; a model trained at
a table plays in the head to head of its size). Without ``--agents``: random,
greedy, optimal and, with the train extra installed, the shipped model of the rules (``ppo:standard``). Game ``g`` rolls
the dice of ``game_streams(seed, [g])`` for every agent, so same arguments give the same JSON byte for byte.
``--plot`` writes the format its extension names: ``.png``, ``.pdf`` or ``.svg``. At most 10,000,000 games, and
``--batch-size`` at most 20,000 games stepped together (a batch holds some 5-30 KB per game).

Every preset plays: Yacht's (``standard``, ``classic``, ``knizia``) and the family's (``yahtzee``,
``yahtzee_forced_joker``, ``yahtzee_no_joker``, ``yahtzee_no_bonus``, ``yatzy``, ``clubhouse``), whose reports list
their own sheet and add the share of games that earn the upper bonus and the mean Yahtzee bonus (JSON
``upper_bonus_rate``, ``yahtzee_bonus_mean``; Yacht's reports are unchanged). The ``win`` agent plays them all (its
score distributions under the family's rules are built into the cache on their first use, about a minute of CPU for
Yahtzee); the family's head to head has no calibration of its model (the recorded round starts lack the bonus
states).

``--record PATH`` writes every decision of the games (the dice, the state, the action, the solver's best action and
the regret) as JSON Lines (:mod:`yacht_lab.table.record`), which ``yacht-web --replay PATH`` steps through; each game's
regret there is exactly the one this report averages.

``--players P`` (2..10) plays the agents against each other instead (:mod:`yacht_lab.measure.head_to_head`): every
``P`` of the ``K >= P`` agents at a table (with 2 every pair of them, with ``K = P`` one table). ``--games`` is then
the number of deals, each played ``P * P`` times at each of the ``comb(K, P)`` tables (dice rotations x seat
rotations); ``--json`` writes the head-to-head report and
``--plot`` the 2-player win-rate matrix (not available for more players). ``--ratings`` adds the agents' ratings
(:mod:`yacht_lab.measure.ratings`: a Bradley-Terry fit on the Elo scale, 95% intervals from a bootstrap over deals) to
the report and the JSON; ``--address`` plays each table (each pair at 2 players) as a task on a Ray cluster
(:mod:`yacht_lab.measure.head_to_head_ray`; Ray comes with the sweep extra).
Bad input prints one ``yacht-evaluate: error: ...`` line (named as the program was started) and exits with
status 2, writing no file; Ctrl-C prints ``yacht-evaluate: interrupted`` and exits with status 130.
"""

from __future__ import annotations

import argparse
import os
import sys

from yacht_lab.scripts import program_name

# Only the standard library up here: the project (numpy, torch) is imported inside main(), where Ctrl-C
# during the imports ends in one line, not a traceback.
DEFAULT_AGENTS = ("random", "greedy", "optimal")
DEFAULT_GAMES = 10_000  # ~2 s for random, greedy and optimal on two cores; a small PPO MLP adds ~2-5 s
COMMAND = "yacht-evaluate"


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The parsed command line (one error line and exit status 2 on bad input)."""
    import importlib.util

    from yacht_agents import AGENT_SPECS
    from yacht_agents.ppo import shipped_models
    from yacht_env.rules import PRESETS
    from yacht_lab.measure.evaluation import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, MAX_GAMES
    from yacht_lab.measure.head_to_head import MAX_PLAYERS
    from yacht_lab.measure.report import PLOT_FORMATS
    from yacht_lab.scripts.cli import OneLineParser, description, number

    parser = OneLineParser(prog=program_name(COMMAND, prog), description=description(__doc__))
    parser.add_argument(
        "--agents",
        nargs="+",
        metavar="SPEC",
        help=f"agents to compare, each one of {', '.join(AGENT_SPECS)}, optionally followed by #LABEL "
        "to seat copies (optimal optimal#2) "
        f"(default: {' '.join(DEFAULT_AGENTS)}, plus ppo:<rules>, the shipped model, with the train extra)",
    )
    parser.add_argument(
        "--players",
        type=number(int, 1, high=MAX_PLAYERS),
        default=1,
        help="players at a table: 1 (default) benchmarks each agent alone; P in "
        f"2..{MAX_PLAYERS} plays every P of the agents (at least P of them) at a table: with 2 every pair",
    )
    parser.add_argument(
        "--games",
        type=number(int, 1, high=MAX_GAMES),
        default=DEFAULT_GAMES,
        help=f"games per agent, at most {MAX_GAMES:,} (default: %(default)s); with --players P >= 2 the number "
        "of deals, each played P * P times at each table (dice rotations x seat rotations)",
    )
    parser.add_argument("--seed", type=number(int, 0), default=0, help="seed of the dice (default: %(default)s)")
    parser.add_argument(
        "--rules", choices=sorted(PRESETS), default="standard", help="rules preset (default: %(default)s)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the statistics as JSON to PATH")
    parser.add_argument(
        "--plot",
        metavar="PATH",
        help="write score distributions and category means (with --players 2: the win-rate matrix) to PATH, "
        "in the format its extension names: " + ", ".join(f".{fmt}" for fmt in PLOT_FORMATS),
    )
    parser.add_argument(
        "--batch-size",
        type=number(int, 1, high=MAX_BATCH_SIZE),
        default=DEFAULT_BATCH_SIZE,
        help=f"games stepped together, at most {MAX_BATCH_SIZE:,} (a batch holds some 5-30 KB per game; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--ratings",
        action="store_true",
        help="with --players 2 or more: fit the agents' ratings (Bradley-Terry, Elo scale, 95%% intervals from a "
        "bootstrap over deals) and add them to the report and the JSON",
    )
    parser.add_argument(
        "--address",
        help="with --players 2 or more: play each table (each pair at 2 players) as a task on the Ray cluster at "
        "this address: auto (the one `ray start` made on this machine) or HOST:PORT",
    )
    parser.add_argument(
        "--record",
        metavar="PATH",
        help="write every decision of the games (the dice, the state, the action, the solver's best action, the "
        "regret) to PATH as JSON Lines, for yacht-web's replays (--players 1 only; at most 100,000 games)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    left_out = None
    if args.agents is None:
        args.agents = list(DEFAULT_AGENTS)
        if args.rules in shipped_models():
            if importlib.util.find_spec("sb3_contrib") is not None:  # the train extra
                args.agents.append(f"ppo:{args.rules}")
            else:
                left_out = f"ppo:{args.rules}"
    problem = players_problem(args)
    if problem:
        parser.error(problem)
    problem = outputs_problem(args.json, args.plot, args.record)
    if problem:
        parser.error(problem)
    if left_out is not None:  # said, not dropped silently: the table would look complete without it
        print(
            f"{parser.prog}: note: the default agents leave out {left_out}, the shipped model: it needs the train "
            "extra (pip install 'yacht-rl[train]')",
            file=sys.stderr,
        )
    return args


def players_problem(args: argparse.Namespace) -> str | None:
    """Why the agents cannot play ``--players`` (checked before the run), or ``None``."""
    from yacht_lab.table.record import MAX_RECORD_GAMES

    p, count = args.players, len(args.agents)
    if len(set(args.agents)) != count:
        return f"argument --agents: each agent may be given once, got {' '.join(args.agents)}"
    if p == 2 and count < 2:
        return f"argument --agents: --players 2 plays every pair of the agents; give at least 2, got {count}"
    if p > 2 and count < p:
        agents = " ".join(args.agents)
        return (
            f"argument --agents: --players {p} seats every {p} of the agents at a table; give at least {p}, "
            f"got {count}: {agents}"
        )
    if p > 2 and args.plot:
        return f"argument --plot: the plot is the 2-player win-rate matrix; there is none for --players {p}"
    if p == 1 and args.ratings:
        return "argument --ratings: ratings come from a head to head: give --players 2 (every pair) or more"
    if p > 1 and args.record is not None:
        return "argument --record: records the benchmark's solo games: give --players 1 (the default)"
    if args.record is not None and args.games > MAX_RECORD_GAMES:
        return f"argument --record: a record keeps at most {MAX_RECORD_GAMES:,} games per agent, got {args.games:,}"
    if p == 1 and args.address is not None:
        return "argument --address: Ray plays a head to head's tables: give --players 2 (every pair) or more"
    return None


def plot_format(path: str) -> str | None:
    """The format a plot path names by its extension (``.png``, ``.pdf``, ``.svg``), or ``None``."""
    from yacht_lab.measure.report import PLOT_FORMATS

    fmt = os.path.splitext(path)[1].lower().lstrip(".")
    return fmt if fmt in PLOT_FORMATS else None


def outputs_problem(json_path: str | None, plot_path: str | None, record_path: str | None = None) -> str | None:
    """Why the outputs cannot be written (checked before the run, so a bad path costs no time), or ``None``.

    Each path must be a regular file or a new one in an existing folder where a file can really be created
    (a symlink is written through); the plot's extension must name a format; they must be different files.
    """
    from yacht_env.util import check_writable
    from yacht_lab.measure.report import PLOT_FORMATS

    targets = {}
    for option, path in (("--json", json_path), ("--plot", plot_path), ("--record", record_path)):
        if path is None:
            continue
        if option == "--plot" and plot_format(path) is None:
            formats = ", ".join(f".{fmt}" for fmt in PLOT_FORMATS)
            return f"argument --plot: '{path}' must end in one of {formats} (the format it is written in)"
        try:
            targets[option] = check_writable(path)
        except ValueError as error:
            return f"argument {option}: {error}"
    paths = {"--json": json_path, "--plot": plot_path, "--record": record_path}
    options = list(targets)
    for i, later in enumerate(options):
        for earlier in options[:i]:
            a, b = targets[earlier], targets[later]
            if a == b or (a.exists() and b.exists() and os.path.samefile(a, b)):
                return f"argument {later}: '{paths[later]}' is the same file as {earlier} '{paths[earlier]}'"
    return None


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Runs ``yacht-evaluate``; returns its exit status."""
    prog = program_name(COMMAND, prog)
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:  # during the imports, the games or the writing (each file is written atomically)
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None, prog: str) -> int:
    args = parse_args(argv, prog)
    import importlib.util

    from yacht_agents import make_agent
    from yacht_agents.base import check_agents
    from yacht_env.rules import get_rules
    from yacht_env.util import atomic_write
    from yacht_lab.measure import head_to_head, head_to_head_report
    from yacht_lab.measure.evaluation import evaluate, format_report, render_json, render_plot
    from yacht_lab.measure.ratings import fit_ratings
    from yacht_lab.scripts.cli import error_line

    if args.address is not None and importlib.util.find_spec("ray") is None:
        print(
            f"{prog}: error: --address needs Ray, in the sweep extra (pip install 'yacht-rl[sweep]')", file=sys.stderr
        )
        return 2

    if args.players > 1:  # the head to head's report, JSON and plot
        format_report, render_json, render_plot = (
            head_to_head_report.format_report,
            head_to_head_report.render_json,
            head_to_head_report.render_plot,
        )
    try:
        agents = [make_agent(spec, rules=args.rules, seed=args.seed) for spec in args.agents]
        progress = not args.no_progress
        extra = ()  # the ratings, as the head to head's report and JSON take them
        if args.players == 1:
            evaluation = evaluate(
                agents, args.games, args.seed, args.rules, args.batch_size, progress, record=args.record
            )
        elif args.address is not None:
            from yacht_lab.measure.head_to_head_ray import head_to_head_on_ray

            check_agents(agents, get_rules(args.rules), args.players)  # here, before the cluster is asked for anything
            evaluation = head_to_head_on_ray(
                args.agents, args.players, args.games, args.seed, args.rules, args.batch_size, address=args.address
            )
        else:
            evaluation = head_to_head.head_to_head(
                agents, args.players, args.games, args.seed, args.rules, args.batch_size, progress
            )
        if args.ratings:
            extra = (fit_ratings(evaluation),)
        # Both files are rendered before either is written, each written atomically.
        rendered = []
        if args.plot:
            rendered.append((args.plot, render_plot(evaluation, plot_format(args.plot))))
        if args.json:
            rendered.append((args.json, render_json(evaluation, *extra)))
        for path, data in rendered:
            atomic_write(path, data)
    except (ValueError, OSError, RuntimeError) as error:  # one line, whatever the error says (or raised again)
        print(error_line(prog, error, "play fewer games at a time (--batch-size)"), file=sys.stderr)
        return 2
    try:
        print(format_report(evaluation, *extra))
        for path in [path for path, _ in rendered] + [args.record] * (args.record is not None):
            print(f"wrote {path}")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`: the files are written; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
