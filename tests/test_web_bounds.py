"""What the browser table's server refuses and bounds: records that cannot be served (a game cut short, a lone
surrogate, a line of exactly the limit), JSON Python reads but cannot serve back, files that are not records
(``/dev/zero``, a FIFO, a 300 MB line), visitor ids the server did not issue, and a flood of new visitors; and, under
an address-space cap, the upload and replay bombs each ending in one clear error while the server goes on answering.
What slow or many connections may hold is ``tests/test_web_slow_clients.py``'s.

The API tests use Starlette's TestClient (the web extra, and the ``web-test`` extra's httpx2); the capped ones run
``yacht-web`` in a subprocess with ``RLIMIT_AS`` (Linux), and are ``slow`` (``python -m pytest -m slow``; ``.ci/run``
runs them).
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from helpers import REPO
from web_helpers import connect, post_head, read_answer

from yacht_agents import make_agent
from yacht_env import rules as R
from yacht_lab.measure.evaluation import evaluate
from yacht_lab.table.record import MAX_LINE_BYTES, read_record, read_record_file, record_lines


def _test_client():
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from starlette.testclient import TestClient

    return TestClient


@pytest.fixture(scope="module")
def record_lines_of_two_games(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("record") / "r.jsonl"
    evaluate([make_agent("greedy")], 2, record=path)
    return [json.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def record_bytes(record_lines_of_two_games) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in record_lines_of_two_games)


def _cut_short(lines: list[dict]) -> bytes:
    """The header, then game 0's decisions up to its first keep, then a game line that adds them up exactly."""
    first_keep = next(i for i, line in enumerate(lines) if line["type"] == "decision" and line["action"] < 32)
    decisions = lines[1 : first_keep + 1]
    regret = 0.0
    for decision in decisions:
        regret += decision["regret"]
    end = {"type": "game", "agent": "greedy", "game": 0, "score": 0, "regret": regret, "decisions": len(decisions)}
    return b"".join(json.dumps(line).encode() + b"\n" for line in [lines[0], *decisions, end])


def _upload(client, data: bytes):
    return client.post("/api/replays", content=data, headers={"content-type": "application/x-ndjson"})


# --------------------------------------------------------------------------------------------------
# Records the server could not serve
# --------------------------------------------------------------------------------------------------
def test_a_game_that_ends_before_its_last_pick_is_refused_at_upload_and_load(record_lines_of_two_games, tmp_path):
    data = _cut_short(record_lines_of_two_games)
    lines = [json.loads(line) for line in data.splitlines()]
    turns = sum(line.get("action", 0) >= R.PICK_OFFSET for line in lines)
    message = f"line {len(lines)}: game 0 ends after {turns} of its 12 turns"
    with pytest.raises(ValueError) as error:
        read_record(data.splitlines())
    assert str(error.value) == message
    client = _test_client()(_app())
    response = _upload(client, data)
    assert response.status_code == 400
    assert response.json() == {"error": f"not a record of evaluate.py --record: {message}"}
    (tmp_path / "short.jsonl").write_bytes(data)
    from yacht_lab.table.web.app import create_app

    with pytest.raises(ValueError, match=re.escape(message)):  # --replay: refused at start, not a 500 for everyone
        create_app([tmp_path / "short.jsonl"])


@pytest.mark.parametrize("where", ["agents", "yacht_rl"])
def test_a_lone_surrogate_in_a_record_is_refused(record_lines_of_two_games, where):
    lines = [dict(line) for line in record_lines_of_two_games]
    if where == "agents":
        lines = [{**line, "agent": "gr\ud800"} if "agent" in line else line for line in lines]
        lines[0]["agents"] = ["gr\ud800"]
    else:
        lines[0]["yacht_rl"] = "0.\udfff"
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)  # ensure_ascii: written as \ud800
    with pytest.raises(ValueError) as error:
        read_record(data.splitlines())
    assert str(error.value) == "line 1: a string with a lone surrogate (not text)"
    client = _test_client()(_app())
    response = _upload(client, data)
    assert response.status_code == 400 and response.json() == {
        "error": "not a record of evaluate.py --record: line 1: a string with a lone surrogate (not text)"
    }
    assert client.get("/api/replays").status_code == 200


def test_a_surrogate_pair_is_text_and_kept(record_lines_of_two_games):
    lines = [dict(line) for line in record_lines_of_two_games]
    lines = [{**line, "agent": "dice \U0001f3b2"} if "agent" in line else line for line in lines]
    lines[0]["agents"] = ["dice \U0001f3b2"]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)  # the die as the pair \ud83c\udfb2
    assert b"\\ud83c\\udfb2" in data
    assert read_record(data.splitlines()).agents == ["dice \U0001f3b2"]


def test_a_line_of_exactly_the_limit_is_read_its_line_ending_not_counted(record_bytes, tmp_path):
    header, rest = record_bytes.split(b"\n", 1)
    for ending in (b"\n", b"\r\n"):
        padded = header + b" " * (MAX_LINE_BYTES - len(header))  # JSON may end in spaces
        assert len(padded) == MAX_LINE_BYTES
        data = padded + ending + rest
        path = tmp_path / "limit.jsonl"
        path.write_bytes(data)
        assert read_record_file(path, 2**20).agents == ["greedy"]
        assert read_record(record_lines(io.BytesIO(data))).agents == ["greedy"]
        with pytest.raises(ValueError, match=f"^line 1: longer than {MAX_LINE_BYTES} bytes$"):
            read_record(record_lines(io.BytesIO(padded + b" " + ending + rest)))
    client = _test_client()(_app())
    assert _upload(client, padded + b"\n" + rest).status_code == 201


def test_record_lines_reads_a_long_line_a_piece_at_a_time():
    pieces = list(record_lines(io.BytesIO(b"a" * 10_000 + b"\nb\n")))
    assert [len(p) for p in pieces] == [
        MAX_LINE_BYTES + 2,
        MAX_LINE_BYTES + 2,
        10_000 - 2 * (MAX_LINE_BYTES + 2) + 1,
        2,
    ]
    with pytest.raises(ValueError, match="^over the limit of 10 bytes$"):
        list(record_lines(io.BytesIO(b"12345\n67890\nx\n"), max_bytes=10))


def test_a_replay_path_must_be_a_regular_file(tmp_path):
    with pytest.raises(ValueError, match=f"^'{re.escape(str(tmp_path))}' is not a regular file$"):
        read_record_file(tmp_path, 2**20)


# --------------------------------------------------------------------------------------------------
# JSON bodies the server could not serve back
# --------------------------------------------------------------------------------------------------
def _app(**kwargs):
    _test_client()
    from yacht_lab.table.web.app import create_app

    return create_app(allowed_hosts=["testserver", "127.0.0.1"], **kwargs)


def _post_json(client, path, text: str):
    return client.post(path, content=text.encode(), headers={"content-type": "application/json"})


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"seats": ["human"], "seed": 1' + "0" * 5000 + "}", "the body holds an integer of more than 4,300 digits"),
        ('{"seats": ["human"], "names": ["\\ud800"]}', "the body holds a string with a lone surrogate (not text)"),
        ('{"seats": ["human"], "names": ["x\\udc00y"]}', "the body holds a string with a lone surrogate (not text)"),
        ('{"seats": ["human"], "\\ud83d": 1}', "the body holds a string with a lone surrogate (not text)"),
    ],
)
def test_json_python_reads_but_cannot_serve_back_is_a_400(body, message):
    client = _test_client()(_app())
    response = _post_json(client, "/api/games", body)
    assert response.status_code == 400 and response.json() == {"error": message}
    assert "set-cookie" not in response.headers  # nothing was created: no visitor either


def test_a_move_with_a_huge_integer_is_a_400_and_the_game_goes_on():
    client = _test_client()(_app())
    state = client.post("/api/games", json={"seats": ["human"], "seed": 3}).json()
    response = _post_json(
        client, f"/api/games/{state['id']}/moves", '{"step": 0, "move": {"action": ' + "9" * 4301 + "}}"
    )
    assert response.status_code == 400
    assert response.json() == {"error": "the body holds an integer of more than 4,300 digits"}
    assert client.get(f"/api/games/{state['id']}").json() == state


def test_a_name_with_a_surrogate_pair_is_text_and_shown():
    client = _test_client()(_app())
    response = _post_json(client, "/api/games", '{"seats": ["human"], "names": ["\\ud83c\\udfb2"]}')
    assert response.status_code == 201 and response.json()["names"] == ["\U0001f3b2"]


def test_a_request_out_of_memory_is_a_503_and_the_server_goes_on(monkeypatch, record_bytes):
    from yacht_lab.table.web import app as web_app

    def no_memory(lines):
        raise MemoryError

    client = _test_client()(_app())
    monkeypatch.setattr(web_app, "read_record", no_memory)
    response = _upload(client, record_bytes)
    assert response.status_code == 503
    assert response.json() == {"error": "the server has no memory left for this request"}
    monkeypatch.undo()
    assert _upload(client, record_bytes).status_code == 201


# --------------------------------------------------------------------------------------------------
# Visitors: ids the server issued, and a flood of new ones
# --------------------------------------------------------------------------------------------------
def test_an_id_the_server_did_not_issue_is_ignored_and_a_fresh_one_issued():
    app = _app()
    chosen = "A" * 32
    attacker = _test_client()(app, cookies={"yacht_visitor": chosen})
    response = attacker.post("/api/games", json={"seats": ["human"], "seed": 1})
    assert response.status_code == 201
    issued = response.cookies["yacht_visitor"]
    assert issued != chosen and len(issued) == 49
    game = response.json()["id"]
    with_chosen = _test_client()(app, cookies={"yacht_visitor": chosen})
    assert with_chosen.get(f"/api/games/{game}").status_code == 404  # the chosen id holds nothing
    with_issued = _test_client()(app, cookies={"yacht_visitor": issued})
    assert with_issued.get(f"/api/games/{game}").status_code == 200
    restarted = _test_client()(_app(), cookies={"yacht_visitor": issued})  # another process's key
    assert restarted.get("/").cookies["yacht_visitor"] != issued
    forged = issued[:-1] + ("A" if issued[-1] != "A" else "B")
    assert _test_client()(app, cookies={"yacht_visitor": forged}).get("/").cookies["yacht_visitor"] != forged


def test_visitor_ids_verify_only_their_own():
    from yacht_lab.table.web.visitors import VisitorIds

    ids, other = VisitorIds(b"k" * 32), VisitorIds(b"j" * 32)
    issued = ids.issue()
    assert re.fullmatch(r"[A-Za-z0-9_-]{24}\.[A-Za-z0-9_-]{24}", issued)
    assert ids.verify(issued) == issued and other.verify(issued) is None
    for value in (None, "", "x", issued + "x", "." + issued.split(".")[1], "é" * 10, issued * 2):
        assert ids.verify(value) is None


def test_a_request_that_creates_nothing_gets_no_visitor():
    client = _test_client()(_app())
    for path in ("/api/options", "/api/replays", "/api/games/nope"):
        assert "set-cookie" not in client.get(path).headers, path
    refused = client.post("/api/games", json={"seats": ["nobody"]})
    assert refused.status_code == 400 and "set-cookie" not in refused.headers
    assert "yacht_visitor" in client.post("/api/games", json={"seats": ["human"]}).cookies


def test_a_flood_of_new_visitors_never_drops_a_players_game():
    from yacht_lab.table.web.games import GameStore

    app = _app(games=GameStore(capacity=4, per_visitor=2))
    player = _test_client()(app)
    mine = player.post("/api/games", json={"seats": ["human"], "seed": 1}).json()
    statuses = []
    for _ in range(10):  # each without a cookie: a new visitor each time
        response = _test_client()(app).post("/api/games", json={"seats": ["human"], "seed": 2})
        statuses.append(response.status_code)
    assert statuses == [201] * 3 + [503] * 7
    assert _test_client()(app).post("/api/games", json={"seats": ["human"]}).json() == {
        "error": "the server holds as many games as it keeps (4): try again later"
    }
    assert player.get(f"/api/games/{mine['id']}").json() == mine
    # a visitor with a game may still start one: it takes the place of its own least recently used
    second = player.post("/api/games", json={"seats": ["human"], "seed": 3}).json()
    assert player.get(f"/api/games/{mine['id']}").status_code == 404
    assert player.get(f"/api/games/{second['id']}").status_code == 200
    assert len(app.state.games) == 4


def test_the_default_store_keeps_games_from_a_flood():
    from yacht_lab.table.web.games import GameStore

    assert type(_app().state.games) is GameStore


def _from(app, address: str):
    """A test client whose connections come from ``address`` (each request without a cookie: a new visitor)."""
    return _test_client()(app, client=(address, 40000))


def test_a_flood_from_one_client_locks_out_no_other_client():
    """Round six's M8: 1,000 cookieless creations filled the store and every new visitor got a 503 for an hour. Now
    one client (a peer address) holds at most its share, and a full store takes from the client holding the most."""
    from yacht_lab.table.web.games import GameStore

    app = _app(games=GameStore(capacity=6, per_visitor=2, per_client=3))
    player = _from(app, "192.0.2.7")
    mine = player.post("/api/games", json={"seats": ["human"], "seed": 1}).json()
    flood = [_from(app, "198.51.100.1").post("/api/games", json={"seats": ["human"]}) for _ in range(20)]
    assert [response.status_code for response in flood] == [201] * 3 + [503] * 17
    assert flood[-1].json() == {
        "error": "your address holds as many games as one client may (3): try again later, or go on with one of yours"
    }
    for address in ("203.0.113.1", "203.0.113.2", "203.0.113.3"):  # the last finds the store full
        assert _from(app, address).post("/api/games", json={"seats": ["human"]}).status_code == 201
    assert player.get(f"/api/games/{mine['id']}").json() == mine
    held = Counter(entry[3] for entry in app.state.games._games.values())
    assert held == {"198.51.100.1": 2, "192.0.2.7": 1, "203.0.113.1": 1, "203.0.113.2": 1, "203.0.113.3": 1}
    assert _from(app, "203.0.113.4").post("/api/games", json={"seats": ["human"]}).status_code == 201
    assert _from(app, "203.0.113.5").post("/api/games", json={"seats": ["human"]}).json() == {
        "error": "the server holds as many games as it keeps (6): try again later"  # no client holds more than 1
    }
    roomy = _app(games=GameStore(per_client=2))
    ipv6 = [_from(roomy, f"2001:db8::{i:x}").post("/api/games", json={"seats": ["human"]}) for i in range(1, 6)]
    assert [response.status_code for response in ipv6] == [201] * 2 + [503] * 3  # one /64: one client


def test_uploads_from_new_visitors_of_one_client_evict_no_other_clients_replays(record_bytes):
    """Round six's M8: 8 uploads from new visitors evicted everyone's replays. Now they evict their client's own, and
    a full store takes from the client holding the most."""
    app = _app()
    owner = _from(app, "192.0.2.7")
    kept = _upload(owner, record_bytes).json()["id"]
    for _ in range(8):
        assert _upload(_from(app, "198.51.100.1"), record_bytes).status_code == 201
    for address in ("203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"):  # the last finds the store full
        assert _upload(_from(app, address), record_bytes).status_code == 201
    assert kept in [replay["id"] for replay in owner.get("/api/replays").json()["replays"]]
    held = Counter(entry[2] for entry in app.state.replays._uploads.values())
    assert held == {"198.51.100.1": 3, "192.0.2.7": 1, **{f"203.0.113.{i}": 1 for i in range(1, 5)}}


@pytest.mark.parametrize(
    ("address", "client"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("fe80::1%eth0", "fe80::/64"),
        ("testclient", "testclient"),
        (None, ""),
    ],
)
def test_a_client_is_its_address_or_its_ipv6_64(address, client):
    from yacht_lab.table.web.visitors import client_of

    assert client_of(address) == client


# --------------------------------------------------------------------------------------------------
# Under an address-space cap: yacht-web in a subprocess with RLIMIT_AS
# --------------------------------------------------------------------------------------------------
CAP_BYTES = 640 * 2**20


def _capped():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def _yacht_web(args: list[str], cwd: Path, **kwargs) -> subprocess.Popen:
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS is Linux's")
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    env = {**os.environ, "MALLOC_ARENA_MAX": "2", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "yacht_lab", "web", "--port", "0", *args]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        preexec_fn=_capped,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("bomb", ["/dev/zero", "fifo", "a 300 MB line", "a folder"])
def test_a_replay_bomb_under_a_memory_cap_is_one_line_and_exit_2(bomb, tmp_path):
    path = {"/dev/zero": Path("/dev/zero"), "fifo": tmp_path / "fifo", "a folder": tmp_path}.get(bomb)
    if bomb == "fifo":
        os.mkfifo(path)
    elif bomb == "a 300 MB line":
        path = tmp_path / "line.jsonl"
        with open(path, "wb") as file:
            file.truncate(300 * 2**20)  # sparse: 300 MB of zero bytes and no newline
    message = {"a 300 MB line": f"line 1: longer than {MAX_LINE_BYTES} bytes"}.get(
        bomb, f"'{path}' is not a regular file"
    )
    server = _yacht_web(["--replay", str(path)], tmp_path)
    try:
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert (server.returncode, out, err) == (2, "", f"python -m yacht_lab web: error: {message}\n")


def _post_in_two_halves(port: int, body: bytes, halfway: threading.Barrier, source: str) -> int | str:
    """Uploads ``body`` from ``source``, waiting at ``halfway`` (every upload half sent, or refused) before its second
    half; returns the status, or ``"closed"`` where the connection was closed on a body the server would not read.
    """
    with connect(port, source, timeout=120) as sock:
        try:
            sock.sendall(post_head(port, len(body)) + body[: len(body) // 2])
        except OSError:  # refused: the rest of the body is not read
            halfway.wait(120)
            return _status_or_closed(sock)
        halfway.wait(120)
        try:
            sock.sendall(body[len(body) // 2 :])
        except OSError:
            pass
        return _status_or_closed(sock)


def _status_or_closed(sock: socket.socket) -> int | str:
    try:
        return read_answer(sock)[0]
    except (OSError, IndexError, ValueError):
        return "closed"


@pytest.mark.slow
def test_an_upload_bomb_under_a_memory_cap_is_refused_and_others_are_answered(tmp_path, record_bytes):
    """Eight uploads of 64 MiB at once from eight addresses, under a 640 MiB address space: two are read (and
    refused: not a record), six are a 503 at once (a little of their bodies read and dropped, then their connections
    closed: the client sees the 503, or the reset); nothing runs out of memory, and the server answers the next
    visitor."""
    server = _yacht_web(["--max-upload-mb", "64"], tmp_path)
    try:
        url = re.fullmatch(
            r"python -m yacht_lab web: serving the table on (http://\S+)/ .*\n", server.stdout.readline()
        )
        assert url, server.stderr.read()
        port = int(url[1].rsplit(":", 1)[1])
        body, halfway, statuses = b"x" * (64 * 2**20), threading.Barrier(8), []

        def upload(source: str):
            statuses.append(_post_in_two_halves(port, body, halfway, source))

        threads = [threading.Thread(target=upload, args=(f"127.0.0.{i}",)) for i in range(1, 9)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        assert len(statuses) == 8 and statuses.count(400) == 2 and set(statuses) <= {400, 503, "closed"}
        with urllib.request.urlopen(url[1] + "/api/options", timeout=30) as response:
            assert response.status == 200
        request = urllib.request.Request(
            url[1] + "/api/replays", data=record_bytes, headers={"Content-Type": "application/x-ndjson"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert err == ""


# --------------------------------------------------------------------------------------------------
# The test extras
# --------------------------------------------------------------------------------------------------
def _extra(name: str, extras: dict) -> set[str]:
    """The distributions extra ``name`` brings, through the project's own extras."""
    out = set()
    for requirement in extras[name]:
        match = re.match(r"yacht-rl\[([^\]]+)\]", requirement)
        if match:
            for inner in match[1].split(","):
                out |= _extra(inner.strip(), extras)
        else:
            out.add(re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower())
    return out


def test_the_test_extra_brings_every_web_test_dependency_and_ci_adds_none_by_hand():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    web_tests = {"starlette", "uvicorn", "httpx2", "playwright", "pytest"}  # httpx2: Starlette's TestClient
    assert web_tests <= _extra("web-test", extras)
    assert web_tests <= _extra("test", extras)  # so the README's test command runs tests/test_web*.py
    installs = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if "pip install" in line]
    assert not [line for line in installs if re.search(r"\b(httpx2?|playwright|starlette|uvicorn)\b", line)]
    assert any('-e ".[web-test]"' in line for line in installs)
