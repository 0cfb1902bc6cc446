"""``python -m yacht_lab <train|evaluate|play|sweep|web> [options]``: the console commands ``yacht-train``,
``yacht-evaluate``, ``yacht-play``, ``yacht-sweep`` and ``yacht-web`` without the scripts folder on ``PATH``.

Messages name the program ``python -m yacht_lab <command>`` (e.g. ``python -m yacht_lab train: error: ...``), so
that the usage line says how to run it again. A missing or unknown command is one error line, exit status 2.
"""

from __future__ import annotations

import sys

COMMANDS = ("train", "evaluate", "play", "sweep", "web")
PROG = "python -m yacht_lab"
USAGE = f"usage: {PROG} {{{','.join(COMMANDS)}}} [options]  (then: {PROG} <command> --help)"


def main(argv: list[str] | None = None) -> int:
    """``python -m yacht_lab <train|evaluate|play|sweep|web> ...``: runs that command; returns its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if not argv or argv[0] not in COMMANDS:
        got = f", got {argv[0]!r}" if argv else ""
        print(f"{PROG}: error: expected a command: {', '.join(COMMANDS)}{got}", file=sys.stderr)
        return 2
    import importlib

    script = importlib.import_module(f"yacht_lab.scripts.{argv[0]}")
    return script.main(argv[1:], prog=f"{PROG} {argv[0]}")


if __name__ == "__main__":
    sys.exit(main())
