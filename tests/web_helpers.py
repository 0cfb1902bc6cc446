"""What the browser table's socket-level tests share: a request head written by hand, a connection from a chosen
loopback address (every 127.x.y.z is this machine on Linux: a second client without a second machine), and the
answer read back.
"""

from __future__ import annotations

import json
import re
import socket


def post_head(port: int, length: int, path: str = "/api/replays", kind: str = "application/x-ndjson") -> bytes:
    """The head of a ``POST`` of ``length`` bytes to ``path``."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {kind}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def connect(port: int, source: str = "127.0.0.1", timeout: float = 10) -> socket.socket:
    """A connection to the server on ``127.0.0.1:port`` from the address ``source``."""
    return socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))


def read_answer(sock: socket.socket) -> tuple[int, dict | str]:
    """The status and JSON body of the response on ``sock`` (read up to its Content-Length, or the connection's end;
    a body that is not JSON as text).
    """
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
        if length and len(body) >= int(length[1]):
            break
    head, _, body = data.partition(b"\r\n\r\n")
    try:
        return int(head.split()[1]), json.loads(body)
    except ValueError:
        return int(head.split()[1]), body.decode("utf-8", "replace")


def port_of(url: str) -> int:
    """The port of ``http://127.0.0.1:PORT``."""
    return int(url.rsplit(":", 1)[1])
