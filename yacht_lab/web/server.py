"""Serving the browser table's app with uvicorn: on a socket of the caller's (``yacht-web``), or in a thread of this
process for the browser tests, the benchmark and the docs' screenshots (:func:`running`).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator


def serve(app, listener: socket.socket) -> None:
    """Serves ``app`` on the bound socket ``listener`` until Ctrl-C."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listener])


@contextlib.contextmanager
def running(app, host: str = "127.0.0.1", timeout: float = 30.0) -> Iterator[str]:
    """Serves ``app`` in a background thread on a free port of ``host``; yields its URL (``http://127.0.0.1:PORT``)
    and stops the server when the block ends.

    Raises:
        RuntimeError: the server did not start within ``timeout`` seconds.
    """
    import uvicorn

    listener = socket.create_server((host, 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
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
