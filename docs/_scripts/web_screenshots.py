"""The screenshots of docs/web.md: the browser table's main screens, taken with Playwright and the system's Chromium.

    python docs/_scripts/web_screenshots.py [--out docs/_static/web]

Starts the app in this process on a free localhost port, records 200 games of greedy and optimal
(evaluate(..., record=...)), and writes:

* ``table.png``: a two-player Yacht table against the optimal agent, the coach always on (expected final scores,
  losses, win chances), a few rounds in;
* ``analysis.png``: the end of a solo Yahtzee game played with a few of the coach's worse options, and its analysis;
* ``replay.png``: the record opened, greedy's games costliest first, one game stepped through.

Every game is seeded, so the screenshots come out the same (the coach's win chances included).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from yacht_agents import make_agent
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.table.web.app import create_app
from yacht_lab.table.web.server import running

REPO = Path(__file__).resolve().parents[2]


def start(page, rules, seats, seed, coach):
    page.select_option("#rules", rules)
    for _ in range(len(seats) - 1):
        page.click("#add-seat")
    for row, spec in zip(page.query_selector_all(".seat"), seats, strict=True):
        row.query_selector(".seat-spec").select_option(spec)
    page.fill("#seed", str(seed))
    page.select_option("#coach-mode", coach)
    page.click("#start")
    page.wait_for_selector("#coach-table")


def play_option(page, rank):
    """Plays the coach's option of this rank (0: the best), then waits for the next decision or the end."""
    buttons = page.query_selector_all("#coach-table tr[data-action] button")
    button = buttons[min(rank, len(buttons) - 1)]
    button.click()
    button.wait_for_element_state("hidden")  # detached: the answer is drawn
    page.wait_for_function(
        "!document.querySelector('#over').hidden || "
        "(document.querySelector('#coach-table button') && !document.querySelector('#coach-table button').disabled)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "_static" / "web"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "greedy_optimal_200.jsonl"
        evaluate([make_agent("greedy"), make_agent("optimal")], 200, seed=0, record=record)
        with running(create_app()) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            context = browser.new_context(viewport={"width": 1280, "height": 860}, bypass_csp=True)
            page = context.new_page()
            page.goto(base + "/?delay=0")
            page.wait_for_selector("body[data-ready='1']")

            start(page, "standard", ["human", "optimal"], seed=5, coach="always")
            for _ in range(7):
                play_option(page, 0)
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=out / "table.png", full_page=True, clip={"x": 0, "y": 0, "width": 1280, "height": 980})

            page.click("#new-game")
            page.click(".seat .remove-seat >> nth=1")
            start(page, "yahtzee", ["human"], seed=2, coach="always")
            move = 0
            while page.is_hidden("#over"):
                play_option(page, 3 if move % 7 == 3 else 0)  # now and then a worse option
                move += 1
            page.screenshot(path=out / "analysis.png", full_page=True)

            page.click("#tab-replays")
            page.set_input_files("#upload", str(record))
            page.wait_for_selector("#replay-agents")
            page.select_option("#replay-agent", "greedy")
            page.select_option("#replay-order", "regret")
            page.wait_for_timeout(500)
            page.click("#replay-games tr[data-index] >> nth=0")
            page.wait_for_selector("#replay-game:not([hidden])")
            page.check("#costliest")
            page.screenshot(path=out / "replay.png", full_page=True)
            browser.close()
    for name in ("table.png", "analysis.png", "replay.png"):
        print(f"wrote {out / name}")


if __name__ == "__main__":
    main()
