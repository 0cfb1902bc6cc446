"""The browser table in a real browser: Playwright driving headless Chromium (the system's ``chromium``) against the
server on localhost. A whole solo game played by clicks, a two-player game against an agent, the coach's numbers
against the solver's for the positions shown, a record of ``evaluate.py --record`` opened and stepped through, and
bad requests answered on the page with their messages.

Slow (``.ci/run`` runs them in its browser step); skipped without Playwright, Chromium or the web extra.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)

from yacht_agents import make_agent  # noqa: E402
from yacht_env import rules as R  # noqa: E402
from yacht_env.solver import solve  # noqa: E402
from yacht_lab.measure.evaluation import evaluate  # noqa: E402
from yacht_lab.table.web.app import create_app  # noqa: E402
from yacht_lab.table.web.server import running  # noqa: E402

TIMEOUT = 20_000  # ms


@pytest.fixture(scope="module")
def record_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("record") / "games.jsonl"
    evaluate([make_agent("greedy"), make_agent("optimal")], 8, seed=4, record=path)
    return path


@pytest.fixture(scope="module")
def server(record_path):
    app = create_app([record_path])
    with running(app) as url:
        yield app, url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def open_page(browser, url, width=1280, height=900, delay=0):
    """A page of the table in a context of its own (``delay``: ms between the agents' moves in the log); yields it
    and checks, once closed, that no JavaScript error was thrown on the way.
    """
    context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)  # wait_for_function
    page = context.new_page()
    page.set_default_timeout(TIMEOUT)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{url}/?delay={delay}")
    page.wait_for_selector("body[data-ready='1']")
    yield page
    context.close()
    assert errors == []


@pytest.fixture
def page(browser, server):
    yield from open_page(browser, server[1])


def latest_game(app):
    """The game the page played last (the store keeps its games in the order they were used)."""
    return list(app.state.games._games.values())[-1][1]


def start(page, seats=("human",), seed="7", coach="request", rules="standard"):
    page.select_option("#rules", rules)
    for _ in range(len(seats) - 1):
        page.click("#add-seat")
    for row, spec in zip(page.query_selector_all(".seat"), seats, strict=True):
        options = row.eval_on_selector(".seat-spec", "s => [...s.options].map(o => o.value)")
        if spec in options:
            row.query_selector(".seat-spec").select_option(spec)
        else:
            row.query_selector(".seat-spec").select_option("")
            row.query_selector(".seat-custom").fill(spec)
    page.fill("#seed", seed)
    page.select_option("#coach-mode", coach)
    page.click("#start")


def wait_turn(page):
    """Waits until the person may act (or the game is over)."""
    page.wait_for_function(
        "!document.querySelector('#over').hidden || !document.querySelector('#roll').disabled"
        " || document.querySelector('#sheet button.score:not([disabled])') !== null"
    )
    return not page.is_hidden("#over")


def test_a_whole_solo_game_played_by_clicks(page, server):
    app, _ = server
    start(page, seed="7")
    page.wait_for_selector("#table:not([hidden])")
    rounds = 0
    while not wait_turn(page):
        assert page.text_content("#status").startswith(f"Yacht (standard rules, seed 7): round {rounds + 1} of 12")
        page.click("#dice .die[data-index='0']")  # keep the first die, then re-roll the rest
        assert "kept" in page.get_attribute("#dice .die[data-index='0']", "class")
        page.click("#roll")
        page.wait_for_selector("#roll:has-text('(1 left)')")
        page.click("#sheet button.score >> nth=0")  # score the first open box
        rounds += 1
        page.wait_for_function(f"document.querySelectorAll('#log li').length === {2 * rounds}")
    assert rounds == 12
    game = latest_game(app)
    total = int(game.table.totals()[0])
    assert page.text_content("#result") == f"final: You {total}"
    assert page.text_content("#sheet tr.total td.total-cell") == str(total)
    analysis = page.query_selector_all(".analysis-table tr")
    assert len(analysis) == 1 + 24  # the header, then a keep and a pick per round
    given = sum(d.cost for d in game.decisions)
    assert f"{given:.2f} points given away" in page.text_content("#analysis h3")
    assert page.text_content("#record").startswith("1 game, mean loss ")  # no "0 wins of 0 at a table"
    stored = json.loads(page.evaluate("localStorage.getItem('yacht-rl.record.v1')"))
    assert stored["games"] == 1 and stored["decisions"] == 24


def test_the_coachs_numbers_are_the_solvers_for_the_positions_shown(page, server):
    app, _ = server
    solution = solve("yahtzee")
    start(page, seed="12", coach="request", rules="yahtzee")
    for _ in range(5):
        wait_turn(page)
        page.click("#ask-coach")
        page.wait_for_selector("#coach-table")
        game = latest_game(app).table.on_turn
        q = solution.q_values(game.roll, game.rolls_left, game.open_mask, upper=game.upper, armed=game.armed)
        rows = page.query_selector_all("#coach-table tr[data-action]")
        assert sorted(int(r.get_attribute("data-action")) for r in rows) == np.flatnonzero(np.isfinite(q)).tolist()
        for row in rows:
            a = int(row.get_attribute("data-action"))
            assert row.query_selector(".expected").text_content() == f"{game.total + q[a]:.3f}"
            assert row.query_selector(".loss-cell").text_content() == f"{abs(q.max() - q[a]):.3f}"
        assert page.text_content("#coach h3").endswith(f"{game.total + q.max():.2f} with the best move")
        rows[-1].query_selector("button").click()  # play the coach's worst option
        page.wait_for_selector("#coach", state="hidden")


def test_a_two_player_game_against_an_agent(page, server):
    app, _ = server
    start(page, seats=("human", "optimal"), seed="3", coach="always")
    page.wait_for_selector("#coach-table")
    # The win agent's estimate; the exact values where this machine's cache holds the two-player solution.
    exact = latest_game(app).solver_coach.odds_source == "exact"
    odds = "win chance (exact two-player values" if exact else "win chance (estimate"
    assert odds in page.text_content("#coach .odds")
    view = latest_game(app).coach_view()  # the chances, as the server computes them
    for row in page.query_selector_all("#coach-table tr[data-action]"):
        option = next(o for o in view["options"] if o["action"] == int(row.get_attribute("data-action")))
        assert row.query_selector(".chance").text_content().lstrip("★ ") == f"{100 * option['win_chance']:.1f}%"
    assert (
        page.get_attribute(f"#coach-table tr[data-action='{view['best_to_win']}'] .chance", "class") == "chance to-win"
    )
    while not wait_turn(page):
        button = page.wait_for_selector("#coach-table tr.best button:not([disabled])")
        button.click()
        button.wait_for_element_state("hidden")  # the answer came: the coach's table is drawn again or hidden
    game = latest_game(app)
    totals = [int(t) for t in game.table.totals()]
    agent_moves = page.query_selector_all("#log li.agent")
    assert len(agent_moves) == sum(1 for m in game.moves if not m.person) and agent_moves
    assert all(m.text_content().startswith("optimal: ") for m in agent_moves)
    result = page.text_content("#result")
    assert result.startswith(f"final: You {totals[0]}, optimal {totals[1]}")
    assert "0.00 points given away" in page.text_content("#analysis h3")  # the coach's best moves only


def test_a_record_of_evaluate_py_is_opened_and_stepped_through(page, server, record_path):
    page.click("#tab-replays")
    page.set_input_files("#upload", str(record_path))
    page.wait_for_function("document.querySelectorAll('#replay-list option').length === 3")  # the upload listed
    page.wait_for_selector("#replay-agents")
    rows = page.query_selector_all("#replay-agents tr")
    assert [r.query_selector_all("td")[0].text_content() for r in rows[1:]] == ["greedy", "optimal"]
    listed = page.eval_on_selector("#replay-list", "s => [...s.options].map(o => o.textContent)")
    assert sum("games.jsonl" in text for text in listed) == 2  # the server's own and the upload
    page.select_option("#replay-agent", "greedy")
    page.select_option("#replay-order", "regret")
    page.wait_for_function(  # drawn: 8 games of greedy's, costliest first
        "(() => { const r = [...document.querySelectorAll('#replay-games .game-regret')].map(c => +c.textContent);"
        " return r.length === 8 && r.every((x, i) => i === 0 || r[i - 1] >= x); })()"
    )
    regrets = [float(c.text_content()) for c in page.query_selector_all("#replay-games .game-regret")]
    assert regrets == sorted(regrets, reverse=True)
    from yacht_lab.table.record import read_record_file

    record = read_record_file(record_path, 2**30)
    greedy = record.game_regret[record.game_agent == 0]
    assert regrets == [float(f"{r:.3f}") for r in sorted(greedy, reverse=True)]
    page.click("#replay-games tr[data-index] >> nth=0")
    page.wait_for_selector("#replay-game:not([hidden])")
    assert re.fullmatch(r"greedy, game \d+: score \d+, regret [\d.]+", page.text_content("#replay-game-title"))
    assert page.query_selector_all("#plot-category rect.bar") and len(page.query_selector_all("#plot-turn rect")) == 12
    assert page.text_content("#step-where").startswith("decision 1 of ")
    page.click("#step-next")
    assert page.text_content("#step-where").startswith("decision 2 of ")
    page.check("#costliest")
    card = page.text_content("#decision-card")
    assert "solver: " in card and "regret " in card
    costs = [float(c.text_content()) for c in page.query_selector_all("#decisions tr[data-decision] td:last-child")]
    assert costs == sorted(costs, reverse=True) and costs[0] > 0


def test_a_clicked_replay_game_is_scrolled_into_view(page):
    """Round six: a clicked game opened some 1,000 px below, out of view."""
    page.click("#tab-replays")
    page.wait_for_selector("#replay-games tr[data-index]")
    page.click("#replay-games tr[data-index] >> nth=-1")
    page.wait_for_selector("#replay-game:not([hidden])")
    page.wait_for_function("document.querySelector('#replay-game-title').textContent !== ''")
    top, height = page.evaluate(
        "[document.querySelector('#replay-game').getBoundingClientRect().top, window.innerHeight]"
    )
    assert 0 <= top < height / 2, (top, height)


def test_bad_requests_are_answered_on_the_page(page):
    start(page, seats=("human", "ppo:nope"))
    page.wait_for_selector("#error:not([hidden])")
    assert page.text_content("#error-text").startswith("agent 'ppo:nope': the table seats the shipped models")
    page.click("#error-close")
    page.fill("#seed", "-3")
    page.query_selector_all(".seat .remove-seat")[1].click()
    page.click("#start")
    page.wait_for_selector("#error:not([hidden])")
    assert page.text_content("#error-text") == "seed: an int in 0..2**63-1, got '-3'"
    # The tab's listing of records is held until the upload is answered: an upload made while a listing is on its way
    # is sent all the same (it once found the page busy and was dropped without a word).
    held = []
    page.route("**/api/replays", lambda r: held.append(r) if r.request.method == "GET" else r.continue_())
    page.click("#tab-replays")
    for _ in range(TIMEOUT // 10):  # route handlers run while the test waits on the page
        if held:
            break
        page.wait_for_timeout(10)
    assert len(held) == 1
    page.set_input_files("#upload", files=[{"name": "bad.jsonl", "mimeType": "text/plain", "buffer": b"{}\n"}])
    page.wait_for_selector("#error:not([hidden])")
    assert page.text_content("#error-text").startswith("not a record of evaluate.py --record: line 1:")
    with page.expect_response(lambda response: response.url.endswith("/api/replays")):
        held[0].continue_()
    page.unroute("**/api/replays")
    page.wait_for_selector("#replay-list option", state="attached")
    assert page.text_content("#error-text").startswith("not a record of evaluate.py --record: line 1:")


def held_requests(page, pattern):
    """Holds the requests to ``pattern`` until the test lets them go (``route.continue_()``): the list they go in."""
    held = []
    page.route(pattern, lambda route: held.append(route))
    return held


def wait_held(page, held):
    for _ in range(TIMEOUT // 10):  # route handlers run while the test waits on the page
        if held:
            return held[0]
        page.wait_for_timeout(10)
    raise AssertionError("no request was held")


def test_the_agents_moves_show_the_new_state_at_once_and_take_the_next_click(browser, server):
    """The agents' moves are written into the log 5 s apart; the table shows where they led as soon as the answer
    comes (new dice, round 2, the box just scored filled), and the person's next click is taken at once. While a
    move is on its way the controls cannot be pressed, so no click is dropped unseen."""
    app, url = server
    for page in open_page(browser, url, delay=5000):
        start(page, seats=("human", "optimal"), seed="3", coach="off")
        wait_turn(page)
        held = held_requests(page, "**/moves")
        page.click("#sheet button.score[data-box='0']")
        route = wait_held(page, held)
        controls = page.query_selector_all("#roll, #ask-coach, #dice .die, #sheet button.score")
        assert len(controls) == 2 + 5 + 12 and all(c.is_disabled() for c in controls)  # on its way
        with page.expect_response("**/moves"):
            route.continue_()
        page.unroute("**/moves")
        game = latest_game(app)
        page.wait_for_function("document.querySelector('#status').textContent.includes('round 2 of 12')", timeout=2000)
        assert page.text_content("#status").endswith("round 2 of 12, You to play, 2 re-rolls left")
        on_turn = game.table.on_turn
        assert [int(d.text_content()) for d in page.query_selector_all("#dice .die")] == R.ROLLS[on_turn.roll].tolist()
        assert page.query_selector("#sheet button.score[data-box='0']") is None  # the box just scored is filled
        assert page.text_content("#sheet tr[data-box='0'] td:nth-child(2)") == str(game.table.players[0].sheet[0])
        assert len(page.query_selector_all("#log li")) < len(game.moves)  # the agent's moves still being written
        step = game.step
        page.click("#dice .die[data-index='0']", timeout=2000)
        with page.expect_response("**/moves") as answer:
            page.click("#roll", timeout=2000)
        assert answer.value.status == 200
        page.wait_for_function("document.querySelector('#roll').textContent === 'Re-roll (1 left)'", timeout=2000)
        assert game.step == step + 1 and page.is_enabled("#roll")


def fits(page, width):
    """Nothing on the page is wider than the screen (no sideways scrolling)."""
    return page.evaluate("Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)") <= width


def test_a_390_px_phone_gets_the_whole_page_and_the_game_ends_clean(browser, server):
    """On a phone 390 px wide nothing overflows sideways: the setup, a table with the coach's numbers, the end of
    the game with its analysis, a replay with its plots. At the end no greyed control is left, the result is in good
    English and the browser's record counts the table game."""
    app, url = server
    for page in open_page(browser, url, width=390, height=844):
        assert fits(page, 390)
        start(page, seats=("human", "optimal"), seed="3", coach="always")
        page.wait_for_selector("#coach-table")
        assert fits(page, 390)
        while not wait_turn(page):
            with page.expect_response("**/moves"):
                page.click("#sheet button.score >> nth=0")
        assert fits(page, 390)
        assert all(page.is_hidden(control) for control in ("#roll", "#ask-coach", "#help"))
        totals = [int(t) for t in latest_game(app).table.totals()]
        assert totals[1] > totals[0]
        assert page.text_content("#result") == f"final: You {totals[0]}, optimal {totals[1]}; optimal wins"
        assert page.text_content("#record").startswith("1 game, 0 won of 1 at a table, mean loss ")
        page.click("#tab-replays")
        page.click("#replay-games tr[data-index] >> nth=0")
        page.wait_for_selector("#replay-game:not([hidden])")
        assert fits(page, 390)


def test_the_servers_record_opens_and_its_plots_have_axes_and_readable_labels(page):
    """``yacht-web --replay`` opens its record in the replays view with nothing chosen; the plots of a game have a
    named y axis with ticks, and the category names under the bars never run into each other."""
    page.click("#tab-replays")
    page.wait_for_selector("#replay-agents", timeout=5000)
    assert page.text_content("#replay-summary p").startswith("games.jsonl: standard rules, 8 games per agent")
    page.click("#replay-games tr[data-index] >> nth=0")
    page.wait_for_selector("#replay-game:not([hidden])")
    for plot, labels in (("#plot-category", 12), ("#plot-turn", 12)):
        assert page.text_content(f"{plot} text.axis-name") == "regret"
        ticks = [t.text_content() for t in page.query_selector_all(f"{plot} text.tick")]
        assert len(ticks) == 3 and ticks[0] == "0.00"
        boxes = [t.bounding_box() for t in page.query_selector_all(f"{plot} text.label")]
        assert len(boxes) == labels
        for a, b in itertools.pairwise(boxes):
            assert a["x"] + a["width"] <= b["x"] + 0.5  # each label ends before the next begins
    names = [t.text_content() for t in page.query_selector_all("#plot-category text.label")]
    assert names[6] == "Full House" and names[-1] == "Yacht"  # whole names, not cut to "Full."


def test_the_seat_menu_offers_a_model_for_the_rules_and_table_it_plays(page):
    """A shipped search model is offered for its rules, one trained at a table of P at tables of P only; a seat whose
    model no longer fits keeps its spec, typed."""

    def menu(row: int) -> list[str]:
        return page.query_selector_all(".seat")[row].eval_on_selector(
            ".seat-spec", "s => [...s.options].map(o => o.value)"
        )

    page.select_option("#rules", "standard")
    assert "search:standard" in menu(0) and "search:selfplay_standard" not in menu(0)  # a solo table
    page.click("#add-seat")
    assert {"search:standard", "search:selfplay_standard"} <= set(menu(1)) and "search:yahtzee" not in menu(1)
    page.query_selector_all(".seat")[1].query_selector(".seat-spec").select_option("search:selfplay_standard")
    page.click("#add-seat")
    assert "search:selfplay_standard" not in menu(1)
    assert page.query_selector_all(".seat")[1].eval_on_selector(".seat-custom", "c => c.value") == (
        "search:selfplay_standard"
    )
    page.select_option("#rules", "yahtzee")
    assert "search:yahtzee" in menu(0) and "search:standard" not in menu(0)
