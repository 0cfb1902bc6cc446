"""How fast the browser table answers: the coach's numbers for a position, and the page's first load, from localhost.

    python benchmarks/web_coach.py [--games 3] [--seed 0] [--tables yacht yahtzee duel]
    YACHT_RL_CACHE_DIR=/path/to/built/cache python benchmarks/web_coach.py --tables duel   # the exact odds

Starts the app (yacht_lab.table.web) on a free localhost port in this process and times, over HTTP as the page asks:

* the coach (GET /api/games/{id}/coach: every legal option of the position with its expected final score, its loss
  and, at two players, its win chance) at every decision of seeded games played by random legal moves: solo
  Yacht (standard), solo Yahtzee (its bonuses), and a two-player Yacht table against the optimal agent (the exact
  two-player values where $YACHT_RL_CACHE_DIR holds the built solution, else the win agent's estimate);
* the page's first load: GET / and the files it loads (app.css, app.js) and its first API call (/api/options), on
  fresh connections; and, where Playwright and a system Chromium are installed, the browser's own measure
  (navigation start to the page's ready mark, with an empty cache).

Needs the web extra (starlette, uvicorn). The first request of each table builds its coach (the solver's values
are read from the cache, the win model built): it is timed apart ("first").
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import shutil
import time
import urllib.request

import numpy as np

from yacht_lab.table.web.app import create_app
from yacht_lab.table.web.server import running

TABLES = (
    ("yacht", "coach, solo Yacht (standard)", "standard", ["human"]),
    ("yahtzee", "coach, solo Yahtzee", "yahtzee", ["human"]),
    ("duel", "coach, two players (Yacht) vs optimal", "standard", ["human", "optimal"]),
)


def client():
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def call(opener, url, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with opener.open(request) as response:
        return json.loads(response.read())


def coach_times(base, rules, seats, games, seed):
    opener, rng = client(), np.random.default_rng(seed)
    times, first, odds = [], None, None
    for g in range(games):
        start = time.perf_counter()
        state = call(opener, f"{base}/api/games", {"rules": rules, "seats": seats, "seed": seed + g})
        if first is None:
            first = time.perf_counter() - start
        while not state["over"]:
            start = time.perf_counter()
            view = call(opener, f"{base}/api/games/{state['id']}/coach")
            times.append(time.perf_counter() - start)
            odds = view["odds"]
            option = view["options"][rng.integers(len(view["options"]))]
            state = call(
                opener,
                f"{base}/api/games/{state['id']}/moves",
                {"step": state["step"], "move": {"action": option["action"]}},
            )
    return np.array(times) * 1000, first * 1000, odds


def first_load_http(base):
    times = []
    for _ in range(20):
        opener = client()
        start = time.perf_counter()
        for path in ("/", "/static/app.css", "/static/app.js", "/api/options"):
            with opener.open(base + path) as response:
                response.read()
        times.append(time.perf_counter() - start)
    return np.array(times) * 1000


def first_load_browser(base):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        for _ in range(5):
            context = browser.new_context()  # an empty cache each time
            page = context.new_page()
            page.goto(base + "/")
            page.wait_for_selector("body[data-ready='1']")
            times.append(page.evaluate("performance.now()"))  # ms since navigation start, once ready
            context.close()
        browser.close()
    return np.array(times)


def show(label, ms):
    print(
        f"{label:<44} median {np.median(ms):7.2f} ms   p95 {np.percentile(ms, 95):7.2f} ms   max {ms.max():7.2f} ms"
        f"   ({len(ms)} requests)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=[name for name, *_ in TABLES],
        default=[name for name, *_ in TABLES],
        help="the tables to time (with a read-only cache of the exact two-player values: --tables duel)",
    )
    args = parser.parse_args()
    with running(create_app()) as base:
        print(f"server: {base} (uvicorn, in this process)")
        for name, label, rules, seats in TABLES:
            if name not in args.tables:
                continue
            ms, first, odds = coach_times(base, rules, seats, args.games, args.seed)
            show(label + (f" [odds: {odds}]" if odds else ""), ms)
            print(f"{'':<44} first request of the table (its coach built): {first:.0f} ms")
        show("first load over HTTP (/, css, js, options)", first_load_http(base))
        browser = first_load_browser(base)
        if browser is None:
            print("first load in Chromium: skipped (no Playwright or no chromium)")
        else:
            show("first load in Chromium (navigation to ready)", browser)


if __name__ == "__main__":
    main()
