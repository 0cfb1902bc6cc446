"""What slow or many connections may hold of the browser table's server, tested with real sockets against a server on
localhost (every 127.x.y.z address is this machine on Linux: several clients without several machines): slow request
heads and bodies, uploads in flight (in all and per client), connections per client, a body answered before it is
read, the log of a flood, and the address a trusted proxy forwards.

The timeouts are the server's own, made short (a fraction of a second) so that each test takes seconds. The 300 slow
connections are ``slow`` (``python -m pytest -m slow``; ``.ci/run`` runs them).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
import urllib.error
import urllib.request

import pytest
from web_helpers import connect, port_of, post_head, read_answer

from yacht_agents import make_agent
from yacht_lab.measure.evaluation import evaluate

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

GET_OPTIONS = b"GET /api/options HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.fixture(scope="module")
def record_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("record") / "r.jsonl"
    evaluate([make_agent("greedy")], 2, record=path)
    return path.read_bytes()


def _app(**kwargs):
    from yacht_lab.table.web.app import create_app

    return create_app(allowed_hosts=["testserver", "127.0.0.1"], **kwargs)


def _serve(app, **kwargs):
    from yacht_lab.table.web.server import running

    return running(app, **kwargs)


def _get_options(port: int, source: str) -> tuple[int, dict]:
    with connect(port, source, timeout=5) as sock:
        sock.sendall(GET_OPTIONS)
        return read_answer(sock)


def _upload(port: int, source: str, data: bytes) -> tuple[int, dict]:
    with connect(port, source, timeout=10) as sock:
        sock.sendall(post_head(port, len(data)) + data)
        return read_answer(sock)


@contextlib.contextmanager
def _logged(caplog):
    """Catches what uvicorn logs (its loggers do not propagate, and its start sets their handlers: so, once started)."""
    uvicorn_log = logging.getLogger("uvicorn.error")
    uvicorn_log.addHandler(caplog.handler)
    try:
        yield
    finally:
        uvicorn_log.removeHandler(caplog.handler)


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


# --------------------------------------------------------------------------------------------------
# Slow bodies: a JSON body within seconds, an upload at a least rate
# --------------------------------------------------------------------------------------------------
def test_a_trickled_json_body_is_stopped_after_its_time():
    """Round six's M7: bodies sent a byte every 5 s held 500 connections indefinitely (every other request a 503)."""
    with _serve(_app(body_seconds=0.5)) as url:
        port = port_of(url)
        with connect(port, timeout=5) as sock:
            sock.sendall(post_head(port, 1000, "/api/games", "application/json") + b'{"seats": ')
            start = time.monotonic()
            for _ in range(3):  # a byte now and then, never the whole body
                time.sleep(0.2)
                sock.sendall(b" ")
            assert read_answer(sock) == (
                408,
                {"error": "the request's body took over 0.5 s to arrive: it was stopped"},
            )
            assert time.monotonic() - start < 3
            assert sock.recv(100) == b""  # and the connection is closed: the rest of its body is never read


def test_an_upload_trickled_below_its_least_rate_is_stopped_after_its_grace():
    with _serve(_app(upload_grace_seconds=0.5, min_upload_rate=1024)) as url:
        port = port_of(url)
        with connect(port, timeout=10) as sock:
            sock.sendall(post_head(port, 10_000) + b'{"type": ')
            start = time.monotonic()
            try:
                for _ in range(30):  # 10 bytes a second: under 1 KiB/s
                    time.sleep(0.1)
                    sock.sendall(b" ")
            except OSError:  # closed once answered
                pass
            assert read_answer(sock) == (
                408,
                {"error": "the upload arrived slower than 1 KiB/s after its first 0.5 s: it was stopped"},
            )
            assert time.monotonic() - start < 3
            assert _closed(sock)


def test_an_upload_at_its_least_rate_may_take_longer_than_its_grace(record_bytes):
    """Round seven: one deadline of 120 s for every upload, so a trickle held its slot for 120 s, and a large
    record over a slow line could not arrive. The pace is a rate: a slow upload is read as long as it keeps up."""
    with _serve(_app(upload_grace_seconds=0.3, min_upload_rate=4096)) as url:
        port = port_of(url)
        with connect(port, timeout=10) as sock:
            sock.sendall(post_head(port, len(record_bytes)))
            start = time.monotonic()
            for i in range(0, len(record_bytes), 2048):  # some 20 KB/s
                sock.sendall(record_bytes[i : i + 2048])
                time.sleep(0.1)
            status, summary = read_answer(sock)
            assert status == 201 and [a["agent"] for a in summary["agents"]] == ["greedy"]
            assert time.monotonic() - start > 0.6  # well past its grace


# --------------------------------------------------------------------------------------------------
# Uploads in flight, and connections, per client and in all
# --------------------------------------------------------------------------------------------------
def test_uploads_past_the_limit_in_flight_are_a_503_with_its_message(record_bytes):
    with _serve(_app(max_uploads=1)) as url:
        port = port_of(url)
        with connect(port) as stalled:
            stalled.sendall(post_head(port, len(record_bytes)) + record_bytes[:100])
            time.sleep(0.5)  # the server is reading it
            assert _upload(port, "127.0.0.2", record_bytes) == (
                503,
                {"error": "the server is reading as many uploads as it takes at once (1): try again in a moment"},
            )
            stalled.sendall(record_bytes[100:])
            status, summary = read_answer(stalled)
            assert status == 201 and [a["agent"] for a in summary["agents"]] == ["greedy"]
        assert _upload(port, "127.0.0.3", record_bytes)[0] == 201  # the slot is free again


def test_a_second_upload_of_one_address_is_a_503_at_once_and_closed(record_bytes):
    """Round seven: an upload past the two read at once was drained for up to 120 s, its connection held."""
    with _serve(_app()) as url:  # an upload's grace: 10 s
        port = port_of(url)
        with connect(port) as first, connect(port) as second:
            first.sendall(post_head(port, len(record_bytes)) + record_bytes[:100])
            time.sleep(0.5)  # the server is reading it
            second.sendall(post_head(port, len(record_bytes)) + record_bytes[:100])  # and then nothing
            start = time.monotonic()
            assert read_answer(second) == (
                503,
                {
                    "error": "your address is sending as many uploads as one client may at once (1): try again when "
                    "it is done"
                },
            )
            assert _closed(second)
            assert time.monotonic() - start < 3
            assert _upload(port, "127.0.0.2", record_bytes)[0] == 201  # another address's upload is read
            first.sendall(record_bytes[100:])
            assert read_answer(first)[0] == 201


def test_slow_uploads_from_one_address_lock_out_no_one(monkeypatch, record_bytes):
    """Round seven: 520 connections from one address, each sending an upload's head and then a byte every 5 s, made
    the server answer every other client 503 for as long as they lasted. (Here: 60 connections, a server of 40.)"""
    from yacht_lab.table.web import server

    monkeypatch.setattr(server, "MAX_CONNECTIONS", 40)
    monkeypatch.setattr(server, "MAX_CONNECTIONS_PER_CLIENT", 8, raising=False)
    with _serve(_app()) as url:
        port = port_of(url)
        flood = []
        try:
            for _ in range(60):
                sock = connect(port, timeout=5)
                flood.append(sock)
                try:
                    sock.sendall(post_head(port, 10**6) + b"{")
                except OSError:  # refused at once
                    pass
            time.sleep(0.5)
            assert _get_options(port, "127.0.0.2")[0] == 200
            assert _upload(port, "127.0.0.2", record_bytes)[0] == 201
            time.sleep(1.5)  # the uploads past the bound are answered within a second of their head
            held = 0
            for sock in flood:
                sock.settimeout(0.1)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    held += 1  # still being read
                    continue
                except ConnectionResetError:
                    continue
                assert data == b"" or data.startswith(b"HTTP/1.1 503 ")
            assert held <= 1  # one upload per address is read
        finally:
            for sock in flood:
                sock.close()


def test_a_connection_past_its_clients_share_is_a_503_at_once(monkeypatch):
    from yacht_lab.table.web import server

    monkeypatch.setattr(server, "MAX_CONNECTIONS_PER_CLIENT", 3, raising=False)
    with _serve(_app()) as url:
        port = port_of(url)
        held = [connect(port) for _ in range(3)]
        try:
            for sock in held:  # kept alive after an answer
                sock.sendall(GET_OPTIONS)
                assert read_answer(sock)[0] == 200
            with connect(port, timeout=3) as fourth:  # answered before it asks anything
                assert read_answer(fourth) == (
                    503,
                    {"error": "your address holds as many connections as one client may (3): try again in a moment"},
                )
            assert _get_options(port, "127.0.0.2")[0] == 200
            held.pop().close()
            time.sleep(0.2)
            assert _get_options(port, "127.0.0.1")[0] == 200
        finally:
            for sock in held:
                sock.close()


def test_a_flood_of_refused_connections_is_one_line_in_the_log(monkeypatch, caplog):
    """Round seven: uvicorn logged a warning line per connection refused."""
    from yacht_lab.table.web import server

    monkeypatch.setattr(server, "MAX_CONNECTIONS", 2)
    with _serve(_app()) as url, _logged(caplog):
        port = port_of(url)
        with connect(port) as held:
            held.sendall(GET_OPTIONS)
            assert read_answer(held)[0] == 200
            for _ in range(30):
                with connect(port) as sock:
                    sock.sendall(GET_OPTIONS)
                    assert sock.recv(100).startswith(b"HTTP/1.1 503 ")
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == ["Exceeded concurrency limit."]


def test_a_rate_limited_log_says_how_many_lines_it_left_out():
    from yacht_lab.table.web.server import RateLimitedLog

    logged, now = [], [0.0]

    class Logger:
        level = logging.WARNING

        def warning(self, msg, *args):
            logged.append(msg % args if args else msg)

    log = RateLimitedLog(Logger(), kinds=("flood %d",), seconds=10, clock=lambda: now[0])
    for t in range(5):
        now[0] = float(t)
        log.warning("flood %d", t)
        log.warning("other")
    now[0] = 12.0
    log.warning("flood %d", 12)
    assert logged == ["flood 0", *["other"] * 5, "flood 12 (4 more like it in the last 12 s not logged)"]
    assert log.level == logging.WARNING  # the rest is the logger's


# --------------------------------------------------------------------------------------------------
# A body answered before it is read to its end
# --------------------------------------------------------------------------------------------------
def test_a_body_just_over_its_limit_is_read_before_its_413_and_the_connection_kept():
    """Round seven: a body over the limit was answered 413 while the client was still sending it, and the
    connection closed under it (the client saw a reset, not the answer)."""
    with _serve(_app(), header_seconds=0.2) as url:
        port = port_of(url)
        body = b" " * 20_000  # over 16 KiB
        with connect(port, timeout=5) as sock:
            sock.sendall(post_head(port, len(body), "/api/games", "application/json"))
            for i in range(0, len(body), 5000):  # sent over 0.4 s: past the deadline of the next head
                sock.sendall(body[i : i + 5000])
                time.sleep(0.1)
            assert read_answer(sock) == (413, {"error": "the body is over the limit of 16,384 bytes"})
            sock.sendall(GET_OPTIONS)  # and the connection serves the next request
            assert read_answer(sock)[0] == 200


# --------------------------------------------------------------------------------------------------
# Who the client is: the socket's peer, or the address a trusted proxy forwards
# --------------------------------------------------------------------------------------------------
def _create(port: int, source: str, forwarded: str | None) -> int:
    body = b'{"seats": ["human"]}'
    extra = f"X-Forwarded-For: {forwarded}\r\n" if forwarded is not None else ""
    head = post_head(port, len(body), "/api/games", "application/json").replace(
        b"\r\n\r\n", f"\r\n{extra}\r\n".encode()
    )
    with connect(port, source) as sock:
        sock.sendall(head + body)
        return read_answer(sock)[0]


def test_the_client_is_the_sockets_peer_not_a_forwarded_header():
    from yacht_lab.table.web.games import GameStore

    with _serve(_app(games=GameStore(per_visitor=1, per_client=1))) as url:

        def create(forwarded: str) -> int:
            request = urllib.request.Request(
                url + "/api/games",
                data=b'{"seats": ["human"]}',
                headers={"Content-Type": "application/json", "X-Forwarded-For": forwarded},
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        assert [create("192.0.2.1"), create("192.0.2.2")] == [201, 503]  # both 127.0.0.1: one client


def test_behind_a_trusted_proxy_each_forwarded_address_is_a_client():
    """Round seven: behind a reverse proxy every visitor was one client, so 100 cookieless games locked everyone out
    for an hour."""
    from yacht_lab.table.web.games import GameStore
    from yacht_lab.table.web.visitors import TrustedProxies

    proxy = TrustedProxies(["127.0.0.1"])
    app = _app(games=GameStore(per_visitor=1, per_client=1), trusted_proxies=proxy)
    with _serve(app, trusted_proxies=proxy) as url:
        port = port_of(url)
        assert _create(port, "127.0.0.1", "192.0.2.1") == 201
        assert _create(port, "127.0.0.1", "192.0.2.1") == 503  # that client's share
        assert _create(port, "127.0.0.1", "192.0.2.2") == 201  # another visitor behind the proxy
        assert _create(port, "127.0.0.1", "192.0.2.3, 127.0.0.1") == 201  # a proxy before it, trusted too
        assert _create(port, "127.0.0.1", "198.51.100.9, 192.0.2.3") == 503  # the left is the client's word
        assert _create(port, "127.0.0.1", None) == 201  # the proxy itself
        assert _create(port, "127.0.0.2", "192.0.2.4") == 201  # not a trusted proxy: its own address
        assert _create(port, "127.0.0.2", "192.0.2.5") == 503


def test_a_trusted_proxys_connections_are_not_bounded_per_client():
    from yacht_lab.table.web.visitors import TrustedProxies

    proxy = TrustedProxies(["127.0.0.1"])
    with _serve(_app(trusted_proxies=proxy), per_client=2, trusted_proxies=proxy) as url:
        port = port_of(url)
        held = [connect(port, source) for source in ["127.0.0.1"] * 4 + ["127.0.0.2"] * 2]
        try:
            for sock in held:
                sock.sendall(GET_OPTIONS)
                assert read_answer(sock)[0] == 200
            with connect(port, "127.0.0.2", timeout=3) as third:
                assert read_answer(third)[0] == 503
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize(
    ("peer", "forwarded", "address"),
    [
        ("192.0.2.7", ["198.51.100.1"], "192.0.2.7"),  # not a proxy: its header is no one's word
        ("127.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["203.0.113.5, 198.51.100.1"], "198.51.100.1"),  # the right-most: what the proxy saw
        ("127.0.0.1", ["203.0.113.5", "198.51.100.1, 10.1.2.3"], "198.51.100.1"),  # headers joined; 10/8 trusted
        ("127.0.0.1", ["10.0.0.1, 127.0.0.1"], "10.0.0.1"),  # all trusted: the left-most
        ("127.0.0.1", [], "127.0.0.1"),  # no header: the proxy itself
        ("::ffff:127.0.0.1", ["2001:db8::1"], "2001:db8::1"),  # an IPv4-mapped peer
        ("::1", ["198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["not-an-address"], "not-an-address"),
    ],
)
def test_a_trusted_proxy_names_the_right_most_address_it_does_not_trust(peer, forwarded, address):
    from yacht_lab.table.web.visitors import TrustedProxies

    assert TrustedProxies(["127.0.0.1", "10.0.0.0/8", "::1"]).address(peer, forwarded) == address


def test_a_trusted_proxy_must_be_an_address_or_network():
    from yacht_lab.table.web.visitors import TrustedProxies

    with pytest.raises(ValueError, match="^'localhost' is not an IP address or network$"):
        TrustedProxies(["localhost"])


# --------------------------------------------------------------------------------------------------
# Slow request heads, and a client gone mid-body
# --------------------------------------------------------------------------------------------------
def test_a_client_gone_mid_body_is_not_an_error_in_the_log(caplog, record_bytes):
    """Round six: a client that went away mid-body was logged as an internal error with a 17-line traceback."""
    with _serve(_app()) as url, _logged(caplog):
        port = port_of(url)
        for path, kind, body in (
            ("/api/games", "application/json", b'{"seats": '),
            ("/api/replays", "application/x-ndjson", record_bytes[:100]),
        ):
            with connect(port) as sock:
                sock.sendall(post_head(port, 1000, path, kind) + body)
                time.sleep(0.3)  # the server is reading it; then the client goes
        time.sleep(0.3)
        with urllib.request.urlopen(url + "/api/options", timeout=10) as response:
            assert response.status == 200
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


@pytest.mark.slow
def test_slow_request_heads_are_closed_and_others_are_answered_meanwhile():
    with _serve(_app(), header_seconds=3.0) as url:
        port = port_of(url)
        slow = []
        try:
            for i in range(300):  # 30 from each of 10 addresses: within each one's share of connections
                sock = connect(port, f"127.0.0.{1 + i % 10}")
                sock.sendall(b"GET /api/options HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # the head never ends
                slow.append(sock)
            start = time.monotonic()
            assert _get_options(port, "127.0.0.100")[0] == 200
            assert time.monotonic() - start < 2.0  # before the slow ones' deadline: not kept waiting by them
            deadline = time.monotonic() + 15
            for sock in slow:  # each closed by the server at its deadline
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                assert _closed(sock)
        finally:
            for sock in slow:
                sock.close()


def test_a_kept_alive_connection_is_closed_when_its_next_head_is_slow():
    with _serve(_app(), header_seconds=0.5) as url:
        port = port_of(url)
        with connect(port) as sock:
            sock.sendall(GET_OPTIONS)
            assert read_answer(sock)[0] == 200
            sock.sendall(b"GET /api/options HTTP/1.1\r\n")  # the next head, and then nothing
            start = time.monotonic()
            assert sock.recv(100) == b""
            assert time.monotonic() - start < 3
