r"""Play Yacht (or Yahtzee, Yatzy) in the terminal against the agents, with the exact solver as a coach.

Usage:
    yacht-play                                                # you against the optimal agent
    yacht-play --players human optimal ppo:standard --hints   # and the shipped PPO model
    yacht-play --players human human --names Ann Bob --rules classic --seed 7
    yacht-play --rules yahtzee --players human random         # Yahtzee: bonuses and jokers on the sheet
    printf 's 1\ns 2\n...' | yacht-play --players human optimal --seed 3 --delay 0   # scripted

(``python -m yacht_lab play`` and the repository's ``python play.py`` are the same program.)
Seats (1..6): ``human`` or an agent spec (``random``, ``greedy``, ``optimal``, ``win`` (sized to the table),
``ppo:NAME`` (a shipped model: ``standard``, ``classic``) or ``ppo:PATH``); an agent that cannot play the rules
chosen (a Yacht model on Yahtzee's sheet, the greedy rule off Yacht's sheet) is refused with one line. ``--rules``
takes every preset: Yacht's (``standard``, ``classic``, ``knizia``) and the family's (``yahtzee``,
``yahtzee_forced_joker``, ``yahtzee_no_joker``, ``yahtzee_no_bonus``, ``yatzy``, ``clubhouse``), whose sheets add
the upper bonus row and, where the rules have one, the Yahtzee bonus row. Seat ``p`` rolls the dice of
``game_streams(seed, range(P))[p]``, so with ``--seed`` the same inputs give the same transcript. A ``jax:PATH``
policy sits as a ``ppo:PATH`` model does; a model trained at a table sits at tables of its size.
A person types ``keep 4 4 6`` (faces), ``k 245`` (positions under the dice), ``roll``, ``score full house`` /
``s fh`` / ``s 7`` (the number in the sheet), ``help``, ``quit``; anything else (superscript digits such as ``²``,
a 5,000-digit number, bytes that are not text) is answered with one line and the game goes on. ``--hints``: the
solver's best move and expected final score before each of your decisions, what your move gave away after it, and
a review at the end.
Colour with ``rich`` on a terminal (unless ``NO_COLOR`` is set); plain text otherwise. Bad arguments print one
``yacht-play: error: ...`` line (named as the program was started) and exit with status 2; ``quit`` and end of
input print ``bye`` and exit with 0, Ctrl-C with 130.
"""

from __future__ import annotations

import argparse
import os
import sys

from yacht_lab.scripts import program_name

# Only the standard library up here: numpy (and torch for a PPO model) are imported inside main(), where
# Ctrl-C during the imports ends in one line, not a traceback.
DEFAULT_PLAYERS = ("human", "optimal")
DEFAULT_DELAY = 0.6
MAX_DELAY = 60.0
COMMAND = "yacht-play"


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The parsed command line (one error line and exit status 2 on bad input)."""
    from yacht_agents import AGENT_SPECS, parse_spec
    from yacht_env.rules import PRESETS
    from yacht_lab.scripts.cli import OneLineParser, description, number
    from yacht_lab.table.terminal import HUMAN, MAX_SEATS

    parser = OneLineParser(prog=program_name(COMMAND, prog), description=description(__doc__))
    parser.add_argument(
        "--players",
        nargs="+",
        metavar="SEAT",
        default=list(DEFAULT_PLAYERS),
        help=f"1..{MAX_SEATS} seats in order, each '{HUMAN}' or an agent: {', '.join(AGENT_SPECS)} "
        f"(default: {' '.join(DEFAULT_PLAYERS)})",
    )
    parser.add_argument(
        "--rules", choices=sorted(PRESETS), default="standard", help="rules preset (default: %(default)s)"
    )
    parser.add_argument("--seed", type=number(int, 0), help="seed of the dice (default: a fresh one, printed)")
    parser.add_argument(
        "--hints", action="store_true", help="the solver coaches every person at the table and reviews the game"
    )
    parser.add_argument("--names", nargs="+", metavar="NAME", help="one name per seat (default: You, the specs)")
    parser.add_argument(
        "--delay",
        type=number(float, 0, high=MAX_DELAY),
        default=DEFAULT_DELAY,
        help="seconds between the agents' shown moves (default: %(default)s; 0 for none)",
    )
    args = parser.parse_args(argv)
    seats = len(args.players)
    if seats > MAX_SEATS:
        parser.error(f"argument --players: a table seats 1..{MAX_SEATS} players, got {seats}")
    for spec in args.players:
        if spec != HUMAN:
            try:
                parse_spec(spec)
            except ValueError:
                parser.error(f"argument --players: unknown seat {spec!r}; expected {HUMAN} or {', '.join(AGENT_SPECS)}")
    if args.names is not None:
        names = [name.strip() for name in args.names]
        if len(names) != seats:
            parser.error(f"argument --names: give one name per seat: {seats} seats, got {len(names)}")
        if not all(names) or len(set(names)) != len(names):
            parser.error(f"argument --names: names must be non-empty and different, got {' '.join(args.names)!r}")
        args.names = names
    return args


def choose_screen():
    """Colour (``rich``) on a terminal unless ``NO_COLOR`` is set; plain text when piped or without ``rich``."""
    from yacht_lab.table.screen import PlainScreen, RichScreen

    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        try:
            from rich.console import Console
        except ImportError:
            pass
        else:
            return RichScreen(Console(highlight=False))
    return PlainScreen(sys.stdout)


def make_reader():
    """``read(prompt)``: ``input`` on a terminal; from a pipe, the prompt and the line read are both written, so a
    scripted game's transcript shows what was typed.

    Bytes that are not text in the input's encoding (a strict UTF-8 stdin given Latin-1 or binary) are read as
    U+FFFD, so such a line is an unknown command (one line, the game goes on), not a ``UnicodeDecodeError``. A line
    longer than a command may be (:data:`~yacht_lab.table.commands.MAX_LINE`) is read no further than two characters
    past it (the rest is skipped, not kept) and echoed cut: it is refused as too long, and the game goes on.
    """
    from yacht_lab.table.commands import MAX_LINE

    try:
        sys.stdin.reconfigure(errors="replace")
    except (AttributeError, ValueError, OSError):  # not a text stream of its own (a test's stand-in), or closed
        pass
    if sys.stdin.isatty():
        return input

    def read(prompt: str) -> str:
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline(MAX_LINE + 2)  # a line of MAX_LINE characters, "\r\n" and all
        if not line:
            sys.stdout.write("\n")
            raise EOFError
        if not line.endswith("\n"):
            while (rest := sys.stdin.readline(2**16)) and not rest.endswith("\n"):
                pass  # the rest of a line too long to be a command, in bounded pieces, dropped
        line = line.rstrip("\r\n")
        sys.stdout.write((line if len(line) <= MAX_LINE else line[:40] + "...") + "\n")
        return line

    return read


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Runs ``yacht-play``; returns its exit status."""
    prog = program_name(COMMAND, prog)
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:
        print("\nbye", flush=True)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None, prog: str) -> int:
    args = parse_args(argv, prog)
    import secrets

    from yacht_agents import make_agent
    from yacht_env.render import game_title
    from yacht_env.rules import get_rules
    from yacht_lab.table.game import default_names, seat_seed
    from yacht_lab.table.terminal import HUMAN, Quit, TableGame

    seed = secrets.randbelow(2**32) if args.seed is None else args.seed
    names = args.names or default_names(args.players)
    screen = choose_screen()
    try:
        agents = [
            None
            if spec == HUMAN
            else make_agent(
                spec,
                args.rules,
                seat_seed(seed, p),
                players=len(args.players) if spec == "win" else None,  # the win agent sized to this table
            )
            for p, spec in enumerate(args.players)
        ]
        game = TableGame(agents, names, args.rules, seed, screen, make_reader(), hints=args.hints, delay=args.delay)
    except ValueError as error:
        print(f"{prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    seats = ", ".join(
        name if spec in (HUMAN, name) else f"{name} ({spec})" for name, spec in zip(names, args.players, strict=True)
    )
    intro = f"{game_title(get_rules(args.rules))}, {args.rules} rules, dice seed {seed}: {seats}."
    if HUMAN in args.players:
        intro += " Type help for the commands."
    screen.say(intro, "result")
    try:
        game.play()
    except (Quit, EOFError):
        screen.say("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
