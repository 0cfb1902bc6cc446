"""Serving the browser table's app with uvicorn: on a socket of the caller's (``yacht-web``), or in a thread of this
process for the browser tests, the benchmark and the docs' screenshots (:func:`running`).

Both serve with the settings of :func:`server_config`: a connection must send a whole request head within
:data:`HEADER_SECONDS` (of opening, or of its last answer), so slow senders cannot hold connections open; at most
:data:`MAX_CONNECTIONS` connections (uvicorn answers 503 past that); a request head of at most :data:`MAX_HEAD_BYTES`.
A client's address is its socket's peer (no ``X-Forwarded-For`` is read: the stores' fairness per client rests on
it); how long a body may take is the app's to bound (:mod:`yacht_lab.table.web.app`).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

#: How long a connection may take to send a request's line and headers.
HEADER_SECONDS = 10.0
#: Connections and requests in progress at once (uvicorn's ``limit_concurrency``).
MAX_CONNECTIONS = 500
#: The longest request head h11 buffers (uvicorn's ``h11_max_incomplete_event_size``; past it a 400).
MAX_HEAD_BYTES = 16 * 1024


class HeaderDeadlineProtocol(H11Protocol):
    """The h11 protocol of uvicorn, closing a connection that has not sent a whole request head within
    ``header_seconds`` of opening or of its last answer (uvicorn itself waits for one forever).
    """

    def __init__(self, *args, header_seconds: float = HEADER_SECONDS, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.header_seconds = header_seconds
        self._deadline = None

    def connection_made(self, transport) -> None:
        """As uvicorn's, and the deadline for the first request head starts."""
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        """As uvicorn's, and the deadline for the next request head starts."""
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc) -> None:
        """As uvicorn's, and the deadline is dropped."""
        if self._deadline is not None:
            self._deadline.cancel()
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


def server_config(app, header_seconds: float = HEADER_SECONDS) -> uvicorn.Config:
    """The uvicorn settings for ``app``: h11 with the request-head deadline, the bounds above, warnings only."""
    return uvicorn.Config(
        app,
        http=functools.partial(HeaderDeadlineProtocol, header_seconds=header_seconds),
        limit_concurrency=MAX_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # the peer is the socket's: a client's X-Forwarded-For is no one's word
    )


def serve(app, listener: socket.socket) -> None:
    """Serves ``app`` on the bound socket ``listener`` until Ctrl-C."""
    uvicorn.Server(server_config(app)).run(sockets=[listener])


@contextlib.contextmanager
def running(
    app, host: str = "127.0.0.1", timeout: float = 30.0, header_seconds: float = HEADER_SECONDS
) -> Iterator[str]:
    """Serves ``app`` in a background thread on a free port of ``host``; yields its URL (``http://127.0.0.1:PORT``)
    and stops the server when the block ends.

    Raises:
        RuntimeError: the server did not start within ``timeout`` seconds.
    """
    listener = socket.create_server((host, 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(server_config(app, header_seconds))
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
