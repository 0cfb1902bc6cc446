"""Serving the browser table's app with uvicorn: on a socket of the caller's (``yacht-web``), or in a thread of this
process for the browser tests, the benchmark and the docs' screenshots (:func:`running`).

Both serve with the settings of :func:`server_config`: a connection must send a whole request head within
:data:`HEADER_SECONDS` (of opening, or of its last answer), so slow senders cannot hold connections open; at most
:data:`MAX_CONNECTIONS` connections in all (uvicorn answers 503 past that) and :data:`MAX_CONNECTIONS_PER_CLIENT` per
client (a peer address, or an IPv6 /64: :func:`~yacht_lab.table.web.visitors.client_of`; past that a 503 at once and
the connection closed), so that one address cannot hold the connections every other visitor needs; a request head of
at most :data:`MAX_HEAD_BYTES`. The lines uvicorn logs per refused connection or bad request are rate-limited
(:class:`RateLimitedLog`: one line per :data:`LOG_EVERY_SECONDS` with a count), so a flood does not flood the log.

A client's address is its socket's peer; a trusted proxy's connections (``trusted_proxies``) are not bounded per
client, since all its visitors come through them: the app reads the visitor's address it forwards
(:class:`~yacht_lab.table.web.visitors.TrustedProxies`). How long a body may take is the app's to bound
(:mod:`yacht_lab.table.web.bodies`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from yacht_lab.table.web.visitors import TrustedProxies, client_of

#: How long a connection may take to send a request's line and headers.
HEADER_SECONDS = 10.0
#: Connections and requests in progress at once (uvicorn's ``limit_concurrency``).
MAX_CONNECTIONS = 500
#: Connections one client may hold open at once (a browser opens 6 per server; a house or office behind one address,
#: a few browsers).
MAX_CONNECTIONS_PER_CLIENT = 32
#: The longest request head h11 buffers (uvicorn's ``h11_max_incomplete_event_size``; past it a 400).
MAX_HEAD_BYTES = 16 * 1024
#: How often a warning that a flood repeats (a connection refused, a bad request) is logged: one line, with a count.
LOG_EVERY_SECONDS = 10.0
#: What uvicorn and this server log once per refused connection or bad request.
FLOOD_WARNINGS = (
    "Exceeded concurrency limit.",
    "Invalid HTTP request received.",
    "refused a connection: its address holds as many as one client may (%d)",
)


def _refusal(message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    return f"{head}content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body


class OverError(Exception):
    """A client holds as many connections as it may."""


class ClientConnections:
    """The connections each client holds open on one server (its protocols count them on the event loop's thread).

    Args:
        per_client: How many one client may hold.
        trusted_proxies: Peers not counted (a reverse proxy's connections carry every visitor).
    """

    def __init__(self, per_client: int, trusted_proxies: TrustedProxies | None = None) -> None:
        self.per_client = per_client
        self.trusted_proxies = trusted_proxies or TrustedProxies()
        self.held: Counter[str] = Counter()

    def open(self, address: str | None) -> str | None:
        """Counts a new connection of peer ``address``; returns its client (``None``: a trusted proxy, not counted).

        Raises:
            OverError: the client holds as many connections as it may (this one is not counted: close it).
        """
        if self.trusted_proxies.trusts(address):
            return None
        client = client_of(address)
        if self.held[client] >= self.per_client:
            raise OverError(client)
        self.held[client] += 1
        return client

    def close(self, client: str | None) -> None:
        """Forgets a connection :meth:`open` counted."""
        if client is None:
            return
        self.held[client] -= 1
        if self.held[client] <= 0:
            del self.held[client]


class RateLimitedLog:
    """A logger (uvicorn's) that logs one line of each warning of ``kinds`` (a flood's: its message's format) per
    ``seconds``; the next one logged says how many were left out since. Every other call goes to the logger as it is.
    The protocols of one server share one (they run on its event loop's thread).

    Args:
        logger: The logger.
        kinds: The warnings to limit.
        seconds: The least time between two lines of one kind.
        clock: The time (seconds).
    """

    def __init__(
        self,
        logger: logging.Logger,
        kinds: tuple[str, ...] = FLOOD_WARNINGS,
        seconds: float = LOG_EVERY_SECONDS,
        clock=time.monotonic,
    ) -> None:
        self.logger, self.kinds, self.seconds, self.clock = logger, frozenset(kinds), seconds, clock
        self._last: dict[str, float] = {}
        self._left_out: Counter[str] = Counter()

    def __getattr__(self, name: str):
        return getattr(self.logger, name)

    def warning(self, msg, *args, **kwargs) -> None:
        """As the logger's, limited where ``msg`` is one of ``kinds``."""
        if msg in self.kinds:
            now, last = self.clock(), self._last.get(msg)
            if last is not None and now - last < self.seconds:
                self._left_out[msg] += 1
                return
            self._last[msg] = now
            left_out = self._left_out.pop(msg, 0)
            if left_out:
                msg = f"{msg} ({left_out} more like it in the last {now - last:.0f} s not logged)"
        self.logger.warning(msg, *args, **kwargs)


class HeaderDeadlineProtocol(H11Protocol):
    """The h11 protocol of uvicorn, closing a connection that has not sent a whole request head within
    ``header_seconds`` of opening or of its last answer (uvicorn itself waits for one forever), refusing one past
    its client's share of connections (``connections``) with a 503 at once, and logging to ``log`` (a
    :class:`RateLimitedLog`).
    """

    def __init__(
        self,
        *args,
        header_seconds: float = HEADER_SECONDS,
        connections: ClientConnections | None = None,
        log: RateLimitedLog | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        if log is not None:
            self.logger = log
        self.header_seconds = header_seconds
        self.client_connections = connections
        self._counted: str | None = None
        self._deadline = None

    def connection_made(self, transport) -> None:
        """As uvicorn's, and the deadline for the first request head starts; a connection past its client's share
        is answered 503 and closed at once (before its request is read: it holds nothing).
        """
        super().connection_made(transport)
        if self.client_connections is not None:
            address = self.client[0] if self.client else None
            try:
                self._counted = self.client_connections.open(address)
            except OverError:
                limit = self.client_connections.per_client
                self.logger.warning(FLOOD_WARNINGS[2], limit)
                message = f"your address holds as many connections as one client may ({limit}): try again in a moment"
                transport.write(_refusal(message))
                transport.close()
                return
        self._arm()

    def on_response_complete(self) -> None:
        """As uvicorn's, and the deadline for the next request head starts."""
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc) -> None:
        """As uvicorn's, and the deadline is dropped and the connection no longer counted."""
        if self._deadline is not None:
            self._deadline.cancel()
        if self.client_connections is not None:
            self.client_connections.close(self._counted)
            self._counted = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.header_seconds, self._expire, self.cycle)

    def _expire(self, answered) -> None:
        self._deadline = None
        # No request head since: the cycle is the one answered then (None: none yet). A pipelined request that
        # started at once is a cycle not yet answered: its own answer arms the deadline again.
        waiting = self.cycle is answered and (answered is None or answered.response_complete)
        if waiting and not self.transport.is_closing():
            self.transport.close()


def server_config(
    app,
    header_seconds: float = HEADER_SECONDS,
    max_connections: int | None = None,
    per_client: int | None = None,
    trusted_proxies: TrustedProxies | None = None,
) -> uvicorn.Config:
    """The uvicorn settings for ``app``: h11 with the request-head deadline and the bound per client (``per_client``:
    :data:`MAX_CONNECTIONS_PER_CLIENT`; a trusted proxy's connections not counted), at most ``max_connections``
    (:data:`MAX_CONNECTIONS`), warnings only, a flood's rate-limited.
    """
    per_client = MAX_CONNECTIONS_PER_CLIENT if per_client is None else per_client
    protocol = functools.partial(
        HeaderDeadlineProtocol,
        header_seconds=header_seconds,
        connections=ClientConnections(per_client, trusted_proxies),
        log=RateLimitedLog(logging.getLogger("uvicorn.error")),
    )
    return uvicorn.Config(
        app,
        http=protocol,
        limit_concurrency=MAX_CONNECTIONS if max_connections is None else max_connections,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # a forwarded address is read by the app, and only from a trusted proxy
    )


def serve(app, listener: socket.socket, **limits) -> None:
    """Serves ``app`` on the bound socket ``listener`` until Ctrl-C (``limits``: :func:`server_config`'s)."""
    uvicorn.Server(server_config(app, **limits)).run(sockets=[listener])


@contextlib.contextmanager
def running(
    app, host: str = "127.0.0.1", timeout: float = 30.0, header_seconds: float = HEADER_SECONDS, **limits
) -> Iterator[str]:
    """Serves ``app`` in a background thread on a free port of ``host``; yields its URL (``http://127.0.0.1:PORT``)
    and stops the server when the block ends (``limits``: :func:`server_config`'s).

    Raises:
        RuntimeError: the server did not start within ``timeout`` seconds.
    """
    listener = socket.create_server((host, 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(server_config(app, header_seconds, **limits))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the web server did not start")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        listener.close()
