"""The browser table's server and the records it replays: ``evaluate.py --record`` (the regret of every game exactly
evaluate's), the record reader (data only, every field checked), every endpoint of the API and every bad request
(one 4xx with its message), the coach's numbers against the solver's, the store's bounds, ``yacht-web``'s errors.

The API tests use Starlette's TestClient and are skipped without the web extra; the browser tests are in
``tests/test_web_browser.py``.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from helpers import REPO

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_env.solver import solve
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.table.record import MAX_LINE_BYTES, read_record, read_record_file

# --------------------------------------------------------------------------------------------------
# evaluate.py --record
# --------------------------------------------------------------------------------------------------
GAMES = 40


@pytest.fixture(scope="module", params=["standard", "yahtzee"])
def recorded(request, tmp_path_factory):
    """Three agents' games, evaluated in small batches, with their record."""
    rules = request.param
    path = tmp_path_factory.mktemp("record") / "games.jsonl"
    agents = [make_agent(spec, rules=rules, seed=1) for spec in ("random", "greedy", "optimal")]
    evaluation = evaluate(agents, GAMES, seed=5, rules=rules, batch_size=16, record=path)
    return evaluation, path


def test_the_record_holds_each_game_with_evaluates_regret_exactly(recorded):
    evaluation, path = recorded
    record = read_record_file(path, 2**30)
    assert record.agents == list(evaluation.results)
    assert record.header["games"] == GAMES and record.header["seed"] == 5
    for a, name in enumerate(record.agents):
        result = evaluation.results[name]
        games = np.flatnonzero(record.game_agent == a)
        np.testing.assert_array_equal(record.game_number[games], np.arange(GAMES))
        assert (record.game_regret[games] == result.regret).all()  # exact: the same floats, summed in the same order
        assert (record.game_score[games] == result.scores).all()
        assert ((record.game_end - record.game_start)[games] == result.decisions).all()
        for g in games:
            assert (record.category_regret(g) == result.category_regret[record.game_number[g]]).all()
            assert record.turn_regret(g).sum() == pytest.approx(record.game_regret[g], abs=1e-9)
    assert (record.game_regret[record.game_agent == 2] == 0).all()  # the optimal agent gives nothing away


def test_each_decision_is_the_solvers_view_of_its_state(recorded):
    evaluation, path = recorded
    record = read_record_file(path, 2**30)
    solution = solve(record.rules)
    rows = np.arange(0, len(record.action), 7)
    kwargs = {"upper": record.upper[rows], "armed": record.armed[rows]} if record.rules.has_bonuses else {}
    q = solution.q_values(record.roll[rows], record.rolls_left[rows], record.open_mask[rows], **kwargs)
    np.testing.assert_array_equal(record.best[rows], q.argmax(axis=1))
    np.testing.assert_array_equal(record.regret[rows], q.max(axis=1) - q[np.arange(len(rows)), record.action[rows]])


def test_the_replay_shows_the_regret_of_evaluates_report(recorded):
    from yacht_lab.table.web.replays import Replay

    evaluation, path = recorded
    replay = Replay(read_record_file(path, 2**30), "games.jsonl")
    report = evaluation.to_dict()["agents"]
    for row in replay.summary()["agents"]:
        result = evaluation.results[row["agent"]]
        assert row["mean_regret"] == float(result.regret.mean())
        assert round(row["mean_regret"], 6) == report[row["agent"]]["mean_regret"]
        assert row["mean_score"] == float(result.scores.mean())
    listed = replay.games(agent="greedy", limit=GAMES)["games"]
    assert [g["regret"] for g in listed] == evaluation.results["greedy"].regret.tolist()
    one = replay.game(listed[3]["index"])
    assert one["regret"] == evaluation.results["greedy"].regret[3]
    assert one["category_regret"] == evaluation.results["greedy"].category_regret[3].tolist()


def test_evaluate_py_record_writes_the_file_and_names_it(tmp_path, capsys):
    from yacht_lab.scripts import evaluate as script

    path = tmp_path / "r.jsonl"
    code = script.main(
        ["--agents", "greedy", "--games", "3", "--record", str(path), "--no-progress"], prog="evaluate.py"
    )
    assert code == 0
    assert capsys.readouterr().out.endswith(f"wrote {path}\n")
    lines = path.read_bytes().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    assert read_record(lines).header["agents"] == ["greedy"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--players", "2", "--agents", "greedy", "optimal"], "argument --record: records the benchmark's solo games"),
        (["--games", "100001"], "argument --record: a record keeps at most 100,000 games per agent"),
        (["--json", "{record}"], "argument --record: '{record}' is the same file as --json '{record}'"),
    ],
)
def test_evaluate_py_record_refuses_in_one_line(args, message, tmp_path, capsys):
    from yacht_lab.scripts import evaluate as script

    record = str(tmp_path / "r.jsonl")
    argv = [a.replace("{record}", record) for a in ["--record", record, *args]]
    with pytest.raises(SystemExit) as exit:
        script.parse_args(argv, prog="evaluate.py")
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err.count("\n") == 1
    assert err.startswith(f"evaluate.py: error: {message.replace('{record}', record)}")


def test_a_failed_evaluation_leaves_no_record_behind(tmp_path):
    class Illegal:
        name, rules, table_players = "illegal", R.get_rules("standard"), None

        def act(self, observations, masks):
            return np.full(len(observations), 31)  # keep all five: never legal

    path = tmp_path / "r.jsonl"
    with pytest.raises(ValueError, match="chose illegal action 31"):
        evaluate([make_agent("greedy"), Illegal()], 5, record=path)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------
# Reading a record: data only, every field checked
# --------------------------------------------------------------------------------------------------
def _record_lines(tmp_path) -> list[dict]:
    path = tmp_path / "r.jsonl"
    evaluate([make_agent("greedy")], 2, record=path)
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _with(lines, index, **change):
    out = [dict(line) for line in lines]
    out[index].update(change)
    return [json.dumps(line).encode() for line in out]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ls: [b"", *_with(ls, 0)[1:]], "line 2: the first line must be the header"),
        (lambda ls: [b"not json", *_with(ls, 0)[1:]], "line 1: not a JSON object"),
        (lambda ls: [b"[1, 2]"], "line 1: not a JSON object"),
        (lambda ls: _with(ls, 0, rules="monopoly"), "line 1: rules must be a preset"),
        (lambda ls: _with(ls, 0, version=2), "line 1: version must be an int in 1..1"),
        (lambda ls: _with(ls, 0, agents=[]), "line 1: agents must be a list of 1..32 names"),
        (lambda ls: _with(ls, 0, extra=1), "line 1: the header's fields must be"),
        (lambda ls: _with(ls, 1, dice=[6, 5, 4, 3, 2]), "line 2: dice must be five sorted faces 1..6"),
        (lambda ls: _with(ls, 1, dice=[1.0, 2, 3, 4, 5]), "line 2: dice must be five sorted faces 1..6"),
        (lambda ls: _with(ls, 1, action=44), "line 2: action must be an int in 0..43"),
        (lambda ls: _with(ls, 1, action=True), "line 2: action must be an int in 0..43, got true"),
        (lambda ls: _with(ls, 1, rolls_left=3), "line 2: rolls_left must be an int in 0..2"),
        (lambda ls: _with(ls, 1, regret=-1.0), "line 2: regret must be a finite number >= 0"),
        (lambda ls: _with(ls, 1, agent="optimal"), "line 2: agent must be one of the header's agents"),
        (lambda ls: _with(ls, 1, type="move"), 'line 2: type must be "decision" or "game"'),
        (lambda ls: _with(ls, 1, game=5), "line 2: game must be an int in 0..1"),
        (lambda ls: _with(ls, 1, turn=4), "line 2: turn must be an int in 0..0"),
        (lambda ls: _with(ls, 1, secret="x"), "line 2: a decision's fields must be"),
        (lambda ls: [json.dumps(line).encode() for line in ls[:-1]], "the record ends inside a game"),
        (lambda ls: [json.dumps(ls[0]).encode()], "the record holds no game"),
        (lambda ls: [b" " * (MAX_LINE_BYTES + 1)], f"line 1: longer than {MAX_LINE_BYTES} bytes"),
        (lambda ls: [b"\xff\xfe"], "line 1: not a JSON object"),
        (lambda ls: [b"[" * 4000], "line 1: not a JSON object (RecursionError)"),
        (lambda ls: [], "an empty record"),
    ],
)
def test_a_bad_record_is_one_clear_error(edit, message, tmp_path):
    lines = _record_lines(tmp_path)
    with pytest.raises(ValueError) as error:
        read_record(edit(lines))
    assert str(error.value).startswith(message), str(error.value)
    assert "\n" not in str(error.value)


def test_a_game_line_must_sum_its_decisions_and_follow_them(tmp_path):
    lines = _record_lines(tmp_path)
    ends = [i for i, line in enumerate(lines) if line["type"] == "game"]
    with pytest.raises(ValueError, match=rf"line {ends[0] + 1}: regret must be the sum of the game's decision"):
        read_record(_with(lines, ends[0], regret=lines[ends[0]]["regret"] + 1.0))
    with pytest.raises(ValueError, match=rf"line {ends[0] + 1}: decisions must be an int"):
        read_record(_with(lines, ends[0], decisions=1))
    moved = [json.dumps(line).encode() for line in lines]
    moved.insert(ends[0] + 2, moved.pop(ends[0]))  # the first game's line after a decision of the second game
    with pytest.raises(ValueError, match="a game's decisions must end with its game line"):
        read_record(moved)
    twice = [json.dumps(line).encode() for line in lines[: ends[0] + 1]] * 2
    with pytest.raises(ValueError, match="game 0 of 'greedy' appears twice"):
        read_record([twice[0], *twice[1 : ends[0] + 1], *twice[ends[0] + 2 :]])


def test_a_records_turns_come_in_order(tmp_path):
    lines = _record_lines(tmp_path)
    after = next(i for i, line in enumerate(lines) if line.get("action", 0) >= R.PICK_OFFSET) + 1  # turn 1's first
    with pytest.raises(ValueError, match=rf"line {after + 1}: turn must be an int in 1..1, got 0"):
        read_record(_with(lines, after, turn=0))


def test_a_record_file_over_its_limit_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    evaluate([make_agent("greedy")], 1, record=path)
    with pytest.raises(ValueError, match="over the limit of 100 bytes"):
        read_record_file(path, 100)
    with pytest.raises(ValueError, match="cannot read"):
        read_record_file(tmp_path / "missing.jsonl", 100)


# --------------------------------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------------------------------
def _test_client():
    pytest.importorskip("starlette")
    try:
        from starlette.testclient import TestClient
    except (ImportError, RuntimeError):  # no httpx / httpx2 for the test client
        pytest.skip("Starlette's TestClient needs httpx2 (or httpx)")
    return TestClient


@pytest.fixture(scope="module")
def app():
    _test_client()
    from yacht_lab.table.web.app import create_app

    return create_app(allowed_hosts=["testserver"])


@pytest.fixture
def client(app):
    return _test_client()(app)


def new(client, **body):
    response = client.post("/api/games", json={"rules": "standard", "seats": ["human"], "seed": 3, **body})
    assert response.status_code == 201, response.text
    return response.json()


def play(client, state, move):
    response = client.post(f"/api/games/{state['id']}/moves", json={"step": state["step"], "move": move})
    assert response.status_code == 200, response.text
    return response.json()


def test_the_page_and_its_files_are_served_with_a_visitor_cookie(client):
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "yacht_visitor" in page.cookies
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name, kind in (("app.js", "javascript"), ("app.css", "text/css")):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    assert "http" not in client.get("/static/app.js").text.replace("http://www.w3.org/2000/svg", "")  # no CDN


def test_options_list_the_presets_agents_and_bounds(client, monkeypatch):
    from yacht_lab.table.web import seats

    monkeypatch.setattr(seats, "seat_unavailable", lambda *args: None)  # an install that plays every seat
    options = client.get("/api/options").json()
    assert [p["name"] for p in options["presets"]] == list(R.PRESETS)
    assert {"human", "optimal", "win", "duel", "ppo:standard"} <= set(options["agents"])
    assert options["max_seats"] == 6 and options["coach_modes"] == ["off", "request", "always"]


def test_options_offer_only_the_seats_this_install_can_play(client, monkeypatch, tmp_path):
    """Without the train extra and the two-player solution, the page offers neither ``ppo:*`` nor ``duel`` (the
    search models need nothing but numpy)."""
    from yacht_lab.table.web import seats

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    real = seats.importlib.util.find_spec
    monkeypatch.setattr(
        seats.importlib.util, "find_spec", lambda name, *a: None if name == "sb3_contrib" else real(name)
    )
    search = [f"search:{name}" for name in sorted(seats.shipped_search_models())]
    assert client.get("/api/options").json()["agents"] == ["human", "optimal", "greedy", "random", "win", *search]
    response = client.post("/api/games", json={"seats": ["human", "duel"]})
    assert response.status_code == 400 and str(tmp_path) not in response.text


def test_a_solo_game_played_by_the_coachs_moves_gives_nothing_away(client):
    state = new(client, coach="always", seed=11)
    solution = solve("standard")
    while not state["over"]:
        coach = state["coach"]
        best = next(o for o in coach["options"] if o["best"])
        assert best["action"] == coach["best"] and best["loss"] == 0.0
        state = play(client, state, {"action": best["action"]})
    (seat,) = state["analysis"]["seats"]
    assert seat["given_away"] == 0.0 and seat["best_moves"] == len(seat["decisions"])
    # the same game as the optimal agent's on the same dice
    from yacht_env.game import GameState, game_streams

    own = GameState("standard")
    own.start(R.prefix_codes(game_streams(11, range(1))[0].reshape(-1, R.NUM_DICE)))
    while own.open_mask:
        own.play(int(solution.q_values(own.roll, own.rolls_left, own.open_mask).argmax()))
    assert state["totals"] == [own.total]


def test_the_coachs_numbers_are_the_solvers(client):
    state = new(client, rules="yahtzee", coach="request", seed=4)
    solution = solve("yahtzee")
    from yacht_lab.table.web.app import create_app  # noqa: F401 - the app is up

    for _ in range(8):
        coach = client.get(f"/api/games/{state['id']}/coach").json()
        game = client.app.state.games.get(client.cookies["yacht_visitor"], state["id"]).table.on_turn
        q = solution.q_values(game.roll, game.rolls_left, game.open_mask, upper=game.upper, armed=game.armed)
        assert sorted(o["action"] for o in coach["options"]) == np.flatnonzero(np.isfinite(q)).tolist()
        for option in coach["options"]:
            assert option["expected_final"] == game.total + float(q[option["action"]])
            assert option["loss"] == pytest.approx(float(q.max() - q[option["action"]]), abs=1e-9)
        assert coach["expected_final"] == game.total + float(q.max()) and coach["odds"] is None
        worst = coach["options"][-1]
        state = play(client, state, {"action": worst["action"]})
    assert "coach" not in state


def test_a_two_player_game_against_an_agent_shows_its_moves_and_the_odds(client):
    state = new(client, seats=["human", "optimal"], coach="always", seed=2)
    assert state["names"] == ["You", "optimal"] and state["coach"]["odds"] == "estimate"
    chances = {o["action"]: o["win_chance"] for o in state["coach"]["options"]}
    assert all(0.0 <= c <= 1.0 for c in chances.values())
    assert chances[state["coach"]["best_to_win"]] == max(chances.values())
    while not state["over"]:
        state = play(client, state, {"score": next(row["box"] for row in state["sheet"] if row["now"] is not None)})
        if not state["over"]:
            assert state["current"] == 0
    agent_moves = [m for m in state["moves"] if not m["person"]]
    assert sum(m["action"] >= R.PICK_OFFSET for m in agent_moves) == 12
    assert state["result"]["totals"] == state["totals"] and state["result"]["winners"] == [1]
    assert len(state["analysis"]["seats"]) == 1


def test_a_seeded_game_replays_identically(client):
    a = new(client, seats=["random", "human", "greedy"], seed=99)
    b = new(client, seats=["random", "human", "greedy"], seed=99)
    for _ in range(6):
        assert {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}
        move = (
            {"keep": [0]} if a["rolls_left"] else {"score": next(r["box"] for r in a["sheet"] if r["now"] is not None)}
        )
        a, b = play(client, a, move), play(client, b, move)
    assert sum(m["person"] for m in a["moves"]) == 6 and len(a["moves"]) > 6


def test_an_all_agent_table_plays_through_at_once(client):
    state = new(client, seats=["greedy", "optimal", "random", "win:4"], seed=1)
    assert state["over"] and len(state["moves"]) >= 48 and state["analysis"]["seats"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rules": "monopoly"}, "unknown preset 'monopoly'; expected one of classic"),
        ({"rules": 3}, "unknown preset 3"),
        ({"seats": []}, "seats: a list of 1..6 seats"),
        ({"seats": ["human"] * 7}, "seats: a list of 1..6 seats"),
        ({"seats": ["human", "grandmaster"]}, "unknown agent 'grandmaster'; expected human or one of"),
        ({"seats": ["human", "ppo:/etc/passwd"]}, "agent 'ppo:/etc/passwd': the table seats the shipped models"),
        ({"seats": ["win"]}, "players must be an int in 2..10, got 1"),
        ({"seats": ["human", "human", "duel"]}, "agent 'duel' plays at two-player tables only"),
        ({"seats": ["human", "win:3"]}, "'win:3' plays at a table of 3 players; this one has 2"),
        ({"seats": ["human"], "rules": "yahtzee", "seed": 1, "coach": "request", "names": ["A", "B"]}, "names: one"),
        ({"seed": -1}, "seed: an int in 0..2**63-1, got -1"),
        ({"seed": "7"}, "seed: an int in 0..2**63-1, got '7'"),
        ({"seed": 2**63}, "seed: an int in 0..2**63-1"),
        ({"coach": "loud"}, "coach: one of off, request, always, got 'loud'"),
        ({"colour": "red"}, "unknown field 'colour'"),
        ({"seats": "human"}, "seats: a list of 1..6 seats"),
        ({"seats": [["human"]]}, "seats: a list of 1..6 seats"),
        ({"seats": ["x" * 400]}, "an agent spec is at most 300 characters"),
        ({"names": "Ann"}, "names: one distinct name"),
        ({"seats": ["human", "human"], "names": ["Ann", "Ann"]}, "names: one distinct name"),
        ({"names": [" "]}, "names: one distinct name"),
    ],
)
def test_a_bad_new_game_is_a_400_with_its_message(client, body, message):
    response = client.post("/api/games", json={"seats": ["human"], **body})
    assert response.status_code == 400
    assert response.json()["error"].startswith(message), response.json()


def test_a_body_that_is_not_json_or_too_big_or_not_an_object(client):
    assert client.post("/api/games", content=b"{", headers={"content-type": "application/json"}).json() == {
        "error": "the body is not JSON"
    }
    response = client.post("/api/games", content=b"x", headers={"content-type": "text/plain"})
    assert response.status_code == 415 and "Content-Type must be application/json" in response.json()["error"]
    big = client.post("/api/games", content=b" " * 20_000, headers={"content-type": "application/json"})
    assert big.status_code == 413 and "over the limit of 16,384 bytes" in big.json()["error"]
    assert client.post("/api/games", json=[1]).json()["error"].startswith("a new game is a JSON object")
    deep = client.post("/api/games", content=b"[" * 10_000, headers={"content-type": "application/json"})
    assert deep.status_code == 400 and deep.json() == {"error": "the body is not JSON"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"step": 1e400, "move": {"score": 0}}',
        b'{"step": NaN, "move": {"score": 0}}',
        {"step": 0, "move": None},
        {"step": 0, "move": {"keep": [0.5]}},
        {"step": 0, "move": {"keep": [True]}},
        {"step": 0, "move": {"score": "ones"}},
        {"step": 0, "move": {"action": -1}},
        {"step": 0, "move": {"action": 10**400}},
        {"step": None, "move": {}},
        {"step": 0, "move": [["keep", [0]]]},
        [0, {"score": 0}],
        "move",
        None,
    ],
)
def test_odd_moves_are_4xx_never_500(client, body):
    state = new(client)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(
        f"/api/games/{state['id']}/moves", content=data, headers={"content-type": "application/json"}
    )
    assert 400 <= response.status_code < 500 and response.json()["error"], response.text
    assert client.get(f"/api/games/{state['id']}").json() == state


@pytest.mark.parametrize(
    ("move", "status", "message"),
    [
        ({"keep": [0, 1, 2, 3, 4]}, 400, "keeping all five dice re-rolls nothing"),
        ({"keep": [5]}, 400, "keep: a list of dice positions 0..4"),
        ({"keep": [1, 1]}, 400, "keep: each position once"),
        ({"keep": "all"}, 400, "keep: a list of dice positions 0..4"),
        ({"score": 12}, 400, "score: a box number 0..11"),
        ({"action": 31}, 400, "action 31 keeps all five dice"),
        ({"action": 99}, 400, "action: an index 0..43"),
        ({"jump": 1}, 400, "unknown move 'jump'"),
        ({"keep": [0], "score": 1}, 400, "a move is one of"),
    ],
)
def test_a_bad_move_is_a_400_and_changes_nothing(client, move, status, message):
    state = new(client)
    response = client.post(f"/api/games/{state['id']}/moves", json={"step": 0, "move": move})
    assert response.status_code == status
    assert response.json()["error"].startswith(message), response.json()
    assert client.get(f"/api/games/{state['id']}").json() == state


def test_moves_the_state_does_not_allow(client):
    state = new(client, seed=5)
    filled = play(client, state, {"score": 0})
    again = client.post(f"/api/games/{state['id']}/moves", json={"step": filled["step"], "move": {"score": 0}})
    assert again.status_code == 400 and again.json()["error"].startswith("Ones is already filled")
    stale = client.post(f"/api/games/{state['id']}/moves", json={"step": 0, "move": {"score": 1}})
    assert stale.status_code == 409 and stale.json()["error"] == (
        "stale move: the game is at step 1, the move was for step 0"
    )
    state = play(client, play(client, filled, {"keep": []}), {"keep": [0]})
    assert state["rolls_left"] == 0
    late = client.post(f"/api/games/{state['id']}/moves", json={"step": state["step"], "move": {"keep": [1]}})
    assert late.status_code == 400 and late.json()["error"].startswith("no re-rolls left this turn")
    for body in ({"move": {"score": 1}}, {"step": "1", "move": {"score": 1}}):
        response = client.post(f"/api/games/{state['id']}/moves", json=body)
        assert response.status_code in (400, 409)


def test_a_finished_game_refuses_moves_and_the_coach(client):
    state = new(client, seed=8)
    while not state["over"]:
        state = play(client, state, {"score": next(row["box"] for row in state["sheet"] if row["now"] is not None)})
    response = client.post(f"/api/games/{state['id']}/moves", json={"step": state["step"], "move": {"score": 0}})
    assert response.status_code == 409 and response.json()["error"] == "the game is over: start a new one"
    assert client.get(f"/api/games/{state['id']}/coach").status_code == 409


def test_the_coach_off_is_refused_on_request(client):
    state = new(client, coach="off")
    response = client.get(f"/api/games/{state['id']}/coach")
    assert response.status_code == 400 and response.json()["error"].startswith("the coach is off in this game")


def test_games_of_two_visitors_never_meet(app, client):
    mine = new(client)
    other = _test_client()(app)
    other.get("/")
    for path in (f"/api/games/{mine['id']}", f"/api/games/{mine['id']}/coach"):
        response = other.get(path)
        assert response.status_code == 404
        assert response.json()["error"] == f"no game {mine['id']!r} here: it expired, or it is not yours"
    moved = other.post(f"/api/games/{mine['id']}/moves", json={"step": 0, "move": {"score": 0}})
    assert moved.status_code == 404
    assert client.get("/api/games/nope").status_code == 404
    assert client.get(f"/api/games/{mine['id']}").json() == mine


def test_unknown_paths_methods_and_hosts_are_refused(client, app):
    assert client.get("/api/nothing").json() == {"error": "no such page: /api/nothing"}
    assert client.delete("/api/games").status_code == 405
    foreign = _test_client()(app, base_url="http://evil.example")
    assert foreign.get("/api/options").status_code == 400  # DNS rebinding: a host not ours


def test_the_store_is_bounded_and_forgets_idle_games():
    from yacht_lab.table.web.games import GameStore, WebError, WebGame

    now = [0.0]
    store = GameStore(capacity=3, per_visitor=2, idle_seconds=10, clock=lambda: now[0])
    games = [WebGame(R.get_rules("standard"), ["human"], seed) for seed in range(4)]
    store.add("a", games[0])
    store.add("a", games[1])
    store.add("a", games[2])  # over a's two: its oldest goes
    with pytest.raises(WebError, match="no game"):
        store.get("a", games[0].id)
    store.add("b", games[3])
    assert len(store) == 3
    now[0] = 5.0
    store.get("a", games[1].id)
    now[0] = 12.0
    store.get("a", games[1].id)  # touched at 5: kept
    with pytest.raises(WebError, match="no game"):
        store.get("b", games[3].id)  # idle since 0: gone
    assert len(store) == 1


# --------------------------------------------------------------------------------------------------
# Replays through the API
# --------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def record_bytes(tmp_path_factory):
    path = tmp_path_factory.mktemp("upload") / "games.jsonl"
    evaluate([make_agent("greedy"), make_agent("optimal")], 6, seed=2, record=path)
    return path.read_bytes()


def upload(client, data, kind="application/x-ndjson"):
    return client.post("/api/replays", content=data, headers={"content-type": kind, "x-file-name": "games.jsonl"})


def test_an_uploaded_record_is_listed_paged_and_stepped_through(client, record_bytes):
    response = upload(client, record_bytes)
    assert response.status_code == 201, response.text
    summary = response.json()
    assert summary["name"] == "games.jsonl" and [a["agent"] for a in summary["agents"]] == ["greedy", "optimal"]
    assert client.get("/api/replays").json()["replays"][0]["id"] == summary["id"]
    assert client.get(f"/api/replays/{summary['id']}").json() == summary
    base = f"/api/replays/{summary['id']}/games"
    page = client.get(base, params={"agent": "greedy", "order": "regret", "limit": 3}).json()
    assert page["total"] == 6 and len(page["games"]) == 3
    regrets = [g["regret"] for g in page["games"]]
    assert regrets == sorted(regrets, reverse=True)
    game = client.get(f"{base}/{page['games'][0]['index']}").json()
    assert game["regret"] == regrets[0] and sum(d["regret"] for d in game["decisions"]) == pytest.approx(regrets[0])
    assert [game["decisions"][i]["regret"] for i in game["costliest"]] == sorted(
        (d["regret"] for d in game["decisions"] if d["regret"] > 0), reverse=True
    )
    assert game["decisions"][0]["choice"] and game["decisions"][0]["best"]
    assert len(game["turn_regret"]) == 12 and len(game["category_regret"]) == 12


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"order": "luck"}, "order: one of game, regret, score"),
        ({"limit": "0"}, "limit: 1..200"),
        ({"limit": "x"}, "limit: a number"),
        ({"agent": "nobody"}, "agent: one of the record's (greedy, optimal)"),
        ({"colour": "red"}, "unknown parameter 'colour'"),
    ],
)
def test_a_bad_replay_query_is_a_400(client, record_bytes, query, message):
    summary = upload(client, record_bytes).json()
    response = client.get(f"/api/replays/{summary['id']}/games", params=query)
    assert response.status_code == 400 and response.json()["error"].startswith(message)


def test_bad_uploads_and_foreign_replays_are_refused(app, client, record_bytes):
    bad = upload(client, b'{"type": "header"}\n')
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("not a record of evaluate.py --record: line 1: the first line must be")
    assert upload(client, record_bytes, kind="text/plain").status_code == 415
    summary = upload(client, record_bytes).json()
    assert client.get(f"/api/replays/{summary['id']}/games/999").status_code == 404
    assert client.get(f"/api/replays/{summary['id']}/games/-1").status_code == 404
    other = _test_client()(app)
    response = other.get(f"/api/replays/{summary['id']}")
    assert response.status_code == 404 and "it is not yours" in response.json()["error"]
    assert summary["id"] not in [r["id"] for r in other.get("/api/replays").json()["replays"]]


def test_an_upload_over_the_limit_is_a_413(record_bytes):
    test_client = _test_client()
    from yacht_lab.table.web.app import create_app

    small = test_client(create_app(max_upload_bytes=1000, allowed_hosts=["testserver"]))
    response = upload(small, record_bytes)
    assert response.status_code == 413 and response.json()["error"] == "the body is over the limit of 1,000 bytes"


def test_a_replay_the_server_was_started_with_is_everyones(tmp_path, record_bytes):
    _test_client()
    from yacht_lab.table.web.app import create_app

    path = tmp_path / "games.jsonl"
    path.write_bytes(record_bytes)
    app = create_app([path], allowed_hosts=["testserver"])
    clients = [_test_client()(app) for _ in range(2)]
    listed = [c.get("/api/replays").json()["replays"] for c in clients]
    assert listed[0] == listed[1] and listed[0][0]["name"] == "games.jsonl"
    with pytest.raises(ValueError, match="line 1"):
        (tmp_path / "bad.jsonl").write_text("{}\n")
        create_app([tmp_path / "bad.jsonl"])


# --------------------------------------------------------------------------------------------------
# The coach's exact two-player odds
# --------------------------------------------------------------------------------------------------
def test_the_coach_view_gives_the_exact_two_player_values_where_built(tmp_path):
    from yacht_env import duel
    from yacht_env.game import TableState, game_streams, parse_dice_stream
    from yacht_lab.table.terminal import Coach
    from yacht_lab.table.web.games import coach_options

    rules = R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))
    solution = duel.solve(rules, cache_dir=tmp_path)
    coach = Coach(rules, players=2, cache_dir=tmp_path)
    table = TableState(rules, 2)
    table.start(parse_dice_stream({"dice_stream": game_streams(0, range(2), rules)}, rules, leading=(2,)))
    table.play(R.PICK_OFFSET + int(np.flatnonzero(table.mask[R.PICK_OFFSET :])[0]))  # seat 0 scores a box
    view = coach_options(coach, table, rules)
    game, other = table.on_turn, table.players[0]
    exact = solution.q_values(game.open_mask, other.open_mask, game.total - other.total, game.roll, game.rolls_left)
    assert view["odds"] == "exact"
    for option in view["options"]:
        assert option["win_chance"] == float(exact[option["action"]])


def test_a_game_against_the_exact_two_player_agent_with_the_exact_odds(tmp_path, monkeypatch):
    """At a two-player table of rules whose two-player solution is built, the duel agent sits and the coach's
    chances are the exact values (a small game, solved in seconds in a cache of its own)."""
    from yacht_env import duel
    from yacht_lab.table.web.games import WebGame

    monkeypatch.setenv("YACHT_RL_CACHE_DIR", str(tmp_path))
    rules = R.Rules(name="ones-threes-yacht", categories=("ones", "threes", "yacht"))
    solution = duel.solve(rules)
    game = WebGame(rules, ["human", "duel"], seed=3, coach="always")
    while not game.over:
        view = game.coach_view()
        table = game.table
        me, other = table.on_turn, table.players[1]
        exact = solution.q_values(me.open_mask, other.open_mask, me.total - other.total, me.roll, me.rolls_left)
        assert view["odds"] == "exact"
        assert {o["action"]: o["win_chance"] for o in view["options"]} == {
            a: float(exact[a]) for a in np.flatnonzero(table.mask).tolist()
        }
        game.act(game.step, {"action": view["best"]})
    assert sum(not m.person for m in game.moves) >= 3  # the duel agent played its three turns
    assert game.analysis()["seats"][0]["given_away"] == 0.0


@pytest.mark.slow
def test_a_shipped_model_sits_at_the_table(client):
    pytest.importorskip("sb3_contrib")
    state = new(client, seats=["human", "ppo:standard"], seed=6)
    state = play(client, state, {"score": 0})
    assert [m["name"] for m in state["moves"]][1:] and all(m["name"] == "ppo:standard" for m in state["moves"][1:])


# --------------------------------------------------------------------------------------------------
# yacht-web
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "70000"], "argument --port: expected an integer >= 0 and <= 65,535"),
        (["--agent", "grandmaster"], "argument --agent: unknown agent 'grandmaster'"),
        (["--max-upload-mb", "0"], "argument --max-upload-mb: expected an integer >= 1"),
    ],
)
def test_yacht_web_bad_arguments_are_one_line(args, message, capsys):
    from yacht_lab.scripts import web

    with pytest.raises(SystemExit) as exit:
        web.parse_args(args, prog="yacht-web")
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err.count("\n") == 1 and err.startswith(f"yacht-web: error: {message}")


def test_yacht_web_refuses_a_bad_replay_or_model_in_one_line(tmp_path, capsys):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from yacht_lab.scripts import web

    (tmp_path / "bad.jsonl").write_text("nope\n")
    for args, message in (
        (["--replay", str(tmp_path / "bad.jsonl")], "line 1: not a JSON object"),
        (["--replay", str(tmp_path / "missing.jsonl")], "cannot read"),
    ):
        assert web.main([*args, "--port", "0"], prog="yacht-web") == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("yacht-web: error: ") and message in err


def test_yacht_web_without_the_web_extra_says_how_to_install_it(monkeypatch, capsys):
    import importlib.util

    from yacht_lab.scripts import web

    real = importlib.util.find_spec
    missing = ("starlette", "uvicorn")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name in missing else real(name))
    assert web.main([], prog="yacht-web") == 2
    assert capsys.readouterr().err == (
        "yacht-web: error: the browser table needs the web extra (starlette and uvicorn missing): "
        "pip install 'yacht-rl[web]'\n"
    )


def test_python_m_yacht_lab_web_serves_the_page_on_localhost(tmp_path, record_bytes):
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    import re
    import subprocess
    import urllib.request

    (tmp_path / "games.jsonl").write_bytes(record_bytes)
    command = [sys.executable, "-m", "yacht_lab", "web", "--port", "0", "--replay", str(tmp_path / "games.jsonl")]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path) as server:
        try:
            line = server.stdout.readline()
            url = re.fullmatch(r"python -m yacht_lab web: serving the table on (http://127\.0\.0\.1:\d+/) .*\n", line)
            with urllib.request.urlopen(url[1], timeout=60) as response:
                assert response.status == 200 and b"/static/app.js" in response.read()
            with urllib.request.urlopen(url[1] + "api/replays", timeout=60) as response:
                assert json.loads(response.read())["replays"][0]["name"] == "games.jsonl"
        finally:
            server.terminate()
            _, err = server.communicate(timeout=60)
    assert err == ""


def test_importing_the_lab_needs_no_web_extra():
    import subprocess

    code = (
        "import sys\n"
        "import yacht_lab, yacht_lab.table.record, yacht_lab.measure.evaluation, yacht_lab.scripts.web\n"
        "print(sorted(m for m in ('starlette', 'uvicorn', 'httpx', 'playwright') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
