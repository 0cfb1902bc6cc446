r"""Serve the browser table: play Yacht (and Yahtzee, Yatzy) against the agents with the solver as coach, and step
through the games an agent played (``evaluate.py --record``).

Usage:
    yacht-web                                   # http://127.0.0.1:8000
    yacht-web --port 8080 --replay games.jsonl  # and a record every visitor can open
    yacht-web --agent ppo:runs/x/model.zip      # a model of your own may sit at the table
    yacht-web --trusted-proxy 127.0.0.1         # behind a reverse proxy on this machine: its X-Forwarded-For

(``python -m yacht_lab web`` is the same program.) It needs the web extra: ``pip install 'yacht-rl[web]'``. The server
binds 127.0.0.1 unless ``--host`` says otherwise, answers only requests that name that host (or ``localhost``), and
serves its own page, which needs nothing from the internet. A seat takes ``human``, the agents without a file
(``random``, ``greedy``, ``optimal``, ``win``, ``win:P``, ``duel``, ``duel:optimal`` where the two-player solution is
built), the shipped search models (``search:standard``, ...) and, with the train extra, the shipped PPO models
(``ppo:standard``, ...): the page offers only what this install can play. A visitor cannot name a file on the server:
a model file sits at the table only when the server is started with ``--agent ppo:PATH`` (or ``search:PATH``,
``jax:PATH``), each loaded before the server answers anyone, and a network of at most ``--max-agent-params``
parameters. Bad arguments (a record or ``--agent`` model that cannot be read, or not a regular file, a network over
the budget, a port in use) print one ``yacht-web: error: ...`` line and exit with status 2; Ctrl-C stops the server.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from yacht_lab.scripts import program_name

COMMAND = "yacht-web"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_UPLOAD_MB = 128


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """The parsed command line (one error line and exit status 2 on bad input)."""
    from yacht_lab.scripts.cli import OneLineParser, description, number
    from yacht_lab.table.web.seats import MAX_AGENT_PARAMETERS

    parser = OneLineParser(prog=program_name(COMMAND, prog), description=description(__doc__))
    parser.add_argument("--host", default=DEFAULT_HOST, help="the address to bind (default: %(default)s)")
    parser.add_argument(
        "--port", type=number(int, 0, high=65535), default=DEFAULT_PORT, help="the port (default: %(default)s)"
    )
    parser.add_argument(
        "--replay",
        action="append",
        default=[],
        metavar="PATH",
        help="a record of evaluate.py --record that every visitor can open (may be given more than once)",
    )
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="SPEC",
        help="an agent spec a seat may take besides the built-in ones and the shipped models (ppo:PATH, search:PATH, "
        "jax:PATH), loaded at start",
    )
    parser.add_argument(
        "--max-agent-params",
        type=number(int, 1, high=10**12),
        default=MAX_AGENT_PARAMETERS,
        metavar="N",
        help="the most parameters an --agent network may have: its cost per decision (default: %(default)s)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a reverse proxy's address or network whose X-Forwarded-For names the visitor (may be given more than "
        "once; default: none, every client is its connection's peer)",
    )
    parser.add_argument(
        "--max-upload-mb",
        type=number(int, 1, high=4096),
        default=DEFAULT_MAX_UPLOAD_MB,
        help="the largest record a visitor may upload, in MiB (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    from yacht_agents import parse_spec

    for spec in args.agent:
        try:
            parse_spec(spec)
        except ValueError as error:
            parser.error(f"argument --agent: {error}")
    from yacht_lab.table.web.visitors import TrustedProxies

    try:
        args.trusted_proxy = TrustedProxies(args.trusted_proxy)
    except ValueError as error:
        parser.error(f"argument --trusted-proxy: {error}")
    return args


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Runs ``yacht-web``; returns its exit status."""
    prog = program_name(COMMAND, prog)
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:
        print(f"{prog}: stopped", file=sys.stderr)
        return 130


def _main(argv: list[str] | None, prog: str) -> int:
    args = parse_args(argv, prog)
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"{prog}: error: the browser table needs the web extra ({' and '.join(missing)} missing): "
            "pip install 'yacht-rl[web]'",
            file=sys.stderr,
        )
        return 2
    import socket

    from yacht_lab.table.web.app import LOOPBACK_HOSTS, create_app
    from yacht_lab.table.web.seats import load_server_agent
    from yacht_lab.table.web.server import serve

    hosts = LOOPBACK_HOSTS if args.host in LOOPBACK_HOSTS else (*LOOPBACK_HOSTS, args.host)
    if args.host in ("0.0.0.0", "::", ""):  # every interface: any name the machine is reached by
        hosts = ("*",)
    try:
        for spec in args.agent:  # a model that cannot be read is refused now, not at a visitor's first game
            try:
                load_server_agent(spec, args.max_agent_params)
            except ValueError as error:
                raise ValueError(f"argument --agent {spec}: {error}") from None
        app = create_app(
            args.replay, tuple(args.agent), args.max_upload_mb * 2**20, hosts, trusted_proxies=args.trusted_proxy
        )
        listener = socket.create_server((args.host, args.port))  # the port is checked here: one line if it is taken
    except (ValueError, OSError) as error:
        print(f"{prog}: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    except MemoryError:  # a record or model too big for the memory this process may have
        print(f"{prog}: error: out of memory loading the --replay records and --agent models", file=sys.stderr)
        return 2
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"{prog}: serving the table on http://{shown}:{listener.getsockname()[1]}/ (Ctrl-C stops it)", flush=True)
    serve(app, listener, trusted_proxies=args.trusted_proxy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
