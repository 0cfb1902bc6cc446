"""What games seating the win agent cost the browser table's server: its resident memory before and after a run of
cookieless game creations at tables cycling through several (rules, table size) pairs.

    python benchmarks/web_memory.py [--games 27] [--rules standard classic knizia] [--players 2 3 4]

Starts ``yacht-web`` (``python -m yacht_lab web``) in a subprocess on a free localhost port, creates ``--games``
games, each without a cookie (a new visitor each time), seating ``human`` and ``win`` at the tables of the pairs
in turn, and prints the server's resident memory (``VmRSS``) after its start, after the first game (the rules'
tables loaded) and after the last: the games hold the agents the server shares, so the last figure should not grow
with the number of games. Linux only (it reads ``/proc``). Needs the web extra.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, in MB (10**6 bytes)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) * 1024 / 1e6


def create(url: str, rules: str, players: int) -> int:
    """Creates a game without a cookie; returns the answer's status."""
    body = json.dumps({"rules": rules, "seats": ["human"] + ["win"] * (players - 1), "seed": 1}).encode()
    request = urllib.request.Request(url + "/api/games", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=27)
    parser.add_argument("--rules", nargs="+", default=["standard", "classic", "knizia"])
    parser.add_argument("--players", nargs="+", type=int, default=[2, 3, 4])
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-m", "yacht_lab", "web", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        url = re.search(r"(http://\S+)/ ", server.stdout.readline())[1]
        print(f"after start: {rss_mb(server.pid):,.0f} MB")
        pairs = itertools.cycle(itertools.product(args.rules, args.players))
        statuses = []
        for game in range(args.games):
            statuses.append(create(url, *next(pairs)))
            if game == 0:
                print(f"after 1 game: {rss_mb(server.pid):,.0f} MB")
        print(f"after {args.games} games: {rss_mb(server.pid):,.0f} MB (answers: {sorted(set(statuses))})")
    finally:
        server.terminate()
        server.wait(60)


if __name__ == "__main__":
    main()
