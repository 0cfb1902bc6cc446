"""Joining Ray, as the sweeps and head to head on a cluster both do: the ``--address`` check and the signal handlers
Ray replaces.

:func:`check_ray_address` says in seconds whether a sweep or a head to head can run where it is asked to: a local Ray
only with its token authentication, ``HOST:PORT`` only where a gRPC server answers as Ray's GCS does
(:func:`grpc_problem`). :func:`restore_signals` puts back the handlers Ray's start replaced.

Ray's own connection attempt to an address where something else listens waits minutes. :func:`grpc_problem` speaks
the first words of a gRPC call (HTTP/2, RFC 9113) to the peer and reads its answer: HTTP/2's connection preface and
a request of Ray's GCS (``NodeInfoGcsService/GetClusterId``, the first call Ray makes; without a token an
authenticated cluster refuses it, but in a gRPC response all the same). A gRPC server answers ``:status 200``; an
HTTP/1 server, a silent one, or an HTTP/2 proxy that knows no such service (``:status 404``) does not.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import threading
import time

__all__ = ["ADDRESS_TIMEOUT_S", "check_ray_address", "grpc_problem", "restore_signals"]

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _SETTINGS, _GOAWAY = 0, 1, 4, 7
_END_STREAM, _ACK, _END_HEADERS, _PADDED, _PRIORITY = 1, 1, 4, 8, 0x20
#: The HPACK encoding of ``:status 200`` (static table entry 8): how a gRPC server's response starts.
_STATUS_200 = 0x88
_GCS_CALL = "/ray.rpc.NodeInfoGcsService/GetClusterId"


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _literal(name_index: int, value: str) -> bytes:
    """An HPACK header field without indexing, its name from the static table, its value plain (under 127 bytes)."""
    prefix = bytes([name_index]) if name_index < 15 else bytes([15, name_index - 15])
    return prefix + bytes([len(value)]) + value.encode()


def _request(authority: str) -> bytes:
    """The client's first bytes: the preface, empty settings, and the unary GCS call with an empty message."""
    headers = (
        bytes([0x83, 0x86])  # :method POST, :scheme http
        + _literal(4, _GCS_CALL)  # :path
        + _literal(1, authority[:100])  # :authority
        + _literal(31, "application/grpc")  # content-type
        + b"\x00\x02te\x08trailers"
    )
    message = b"\x00\x00\x00\x00\x00"  # gRPC's frame of an empty protobuf message
    return (
        _PREFACE
        + _frame(_SETTINGS, 0, 0)
        + _frame(_HEADERS, _END_HEADERS, 1, headers)
        + _frame(_DATA, _END_STREAM, 1, message)
    )


def _read_exactly(connection: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("closed")
        data += chunk
    return data


def _status_of(payload: bytes, flags: int) -> int:
    """The first byte of a HEADERS frame's header block (its padding and priority fields skipped)."""
    start = (1 if flags & _PADDED else 0) + (5 if flags & _PRIORITY else 0)
    return payload[start] if len(payload) > start else -1


def grpc_problem(host: str, port: int, timeout: float) -> str | None:
    """Why ``host:port`` is not a gRPC server (one phrase), or ``None`` if it answers the GCS call as one.

    At most ``timeout`` seconds in all, the connection included.

    Raises:
        OSError: the connection cannot be made (refused, unreachable, no answer: ``TimeoutError``).
    """
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        connection.sendall(_request(f"{host}:{port}"))
        try:
            for _ in range(64):  # the server's settings, window updates, pings, then the response's headers
                header = _read_exactly(connection, 9, deadline)
                length, kind, flags = int.from_bytes(header[:3], "big"), header[3], header[4]
                if header[:3] == b"HTT" or length > 1 << 20:
                    return f"it answered {header!r}, not HTTP/2"
                payload = _read_exactly(connection, length, deadline)
                if kind == _SETTINGS and not flags & _ACK:
                    connection.sendall(_frame(_SETTINGS, _ACK, 0))
                elif kind == _GOAWAY:
                    return "it ended the HTTP/2 connection (GOAWAY) without answering"
                elif kind == _HEADERS and int.from_bytes(header[5:9], "big") & 0x7FFFFFFF == 1:
                    status = _status_of(payload, flags)
                    return None if status == _STATUS_200 else "it is an HTTP/2 server, but not gRPC (no :status 200)"
        except TimeoutError:
            return f"it did not answer a gRPC call within {timeout:g} s"
        except ConnectionResetError:
            return "it closed the connection instead of answering a gRPC call"
    return "it did not answer a gRPC call"


def restore_signals(handlers: dict) -> None:
    """Puts back signal handlers saved with ``signal.getsignal`` (only the main thread may set them)."""
    if threading.current_thread() is threading.main_thread():
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)


#: How long ``--address HOST:PORT`` may take to accept a connection and answer as Ray does, in all, before the
#: sweep gives up (Ray itself waits minutes).
ADDRESS_TIMEOUT_S = 10.0


def check_ray_address(address: str | None, timeout: float = ADDRESS_TIMEOUT_S) -> None:
    """Checks, before Ray is started, that a sweep can run where it is asked to.

    * No address (a local Ray): Ray binds its services on every network interface (Ray 2.x has no setting to
      keep them on localhost), so the sweep requires Ray's token authentication, on by default since Ray 2.52:
      ``RAY_AUTH_MODE=disabled`` is refused.
    * ``HOST:PORT``: something must accept a TCP connection there and answer a gRPC call of Ray's GCS as a gRPC
      server does (:func:`yacht_lab.ray_cluster.grpc_problem`), within ``timeout`` seconds in all: Ray's own
      connection attempt waits many minutes on an address where nothing listens or where another server does.
      (With ``RAY_USE_TLS`` set, the peer speaks TLS first: only the connection is checked.)
    * ``auto``: Ray finds the cluster started on this machine, or says it found none.

    Raises:
        ValueError: one line saying what is wrong.
    """
    if address is None:
        if os.environ.get("RAY_AUTH_MODE", "").strip().lower() == "disabled":
            raise ValueError(
                "RAY_AUTH_MODE=disabled: the local Ray listens on every network interface, so without its token "
                "authentication anyone who reaches this machine could run code in the sweep; unset RAY_AUTH_MODE"
            )
        return
    if address == "auto":
        return
    host, _, port = address.rpartition(":")
    if address.startswith("ray://"):
        host = host[len("ray://") :]
    if not host or not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"--address must be 'auto' or HOST:PORT (a port in 1..65535), got {address!r}")
    tls = os.environ.get("RAY_USE_TLS", "").strip().lower() in ("1", "true", "yes")
    try:
        if tls:  # the peer speaks TLS first: only the connection is checked
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
            problem = None
        else:
            problem = grpc_problem(host.strip("[]"), int(port), timeout)
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else (error.strerror or str(error))
        raise ValueError(
            f"cannot reach Ray at {address}: {reason} within {timeout:g} s (is `ray start --head` running there?)"
        ) from None
    if problem is not None:
        raise ValueError(f"{address} is not a Ray cluster: something listens there, but not Ray's GCS: {problem}")
