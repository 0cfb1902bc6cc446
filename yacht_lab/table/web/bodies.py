"""Reading a request's body within its bounds: its type (else a 415), its size (past the limit a 413), and its pace
(:class:`Pace`, else a 408): a JSON body must arrive within a few seconds of its request's head, an upload at a
least rate after a grace period, so that however long a body may be, a client trickling it holds its connection no
longer than a client sending it at that rate would.

A request answered before its body is read to its end (refused, over its limit, a bad field) has the rest of its
body read and dropped, up to :data:`DISCARD_BYTES` within :data:`DISCARD_SECONDS` (:func:`finish`): a client still
sending then reads the answer (a connection closed with data unread is reset, answer and all). Past that bound the
connection is closed after the answer, so that no client holds it by sending a body no one reads.
"""

from __future__ import annotations

import asyncio
import io
import math
import time
from dataclasses import dataclass

from starlette.requests import ClientDisconnect, Request

from yacht_lab.table.web.games import WebError

#: What is read and dropped of a body not read to its end before its request is answered.
DISCARD_BYTES = 2**20
DISCARD_SECONDS = 1.0


@dataclass(frozen=True)
class Pace:
    """How fast a body must arrive: wholly within ``grace_seconds`` of its request's head (``min_rate`` infinite), or
    at ``min_rate`` bytes a second on average after the first ``grace_seconds``.
    """

    grace_seconds: float
    min_rate: float = math.inf

    def deadline(self, start: float, received: int) -> float:
        """When a body begun at ``start`` that has ``received`` bytes is too slow."""
        return start + self.grace_seconds + (received / self.min_rate if math.isfinite(self.min_rate) else 0.0)

    def too_slow(self, what: str) -> str:
        """The 408's message for ``what`` (``"the upload"``)."""
        if not math.isfinite(self.min_rate):
            return f"{what} took over {self.grace_seconds:g} s to arrive: it was stopped"
        rate = rate_text(self.min_rate)
        return f"{what} arrived slower than {rate} after its first {self.grace_seconds:g} s: it was stopped"


def rate_text(rate: float) -> str:
    """``65536`` as ``64 KiB/s``."""
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if rate >= size:
            return f"{rate / size:g} {unit}/s"
    return f"{rate:g} bytes/s"


class Body:
    """A request's body, read a chunk at a time at its :class:`Pace` (from when this is made: the request's head has
    just arrived).
    """

    def __init__(self, request: Request, pace: Pace, what: str = "the request's body") -> None:
        self.request, self.pace, self.what = request, pace, what
        self.start = time.monotonic()
        self.received = 0
        self.ended = False
        request.state.body = self  # for finish(): whether it was read to its end

    async def chunk(self, until: float = math.inf) -> bytes | None:
        """The next piece of the body (``None`` at its end), or a :class:`TimeoutError` at ``until`` (monotonic).

        Raises:
            WebError: the body is too slow for its pace (408).
            ClientDisconnect: the client went away.
        """
        if self.ended:
            return None
        deadline = self.pace.deadline(self.start, self.received)
        timeout = min(deadline, until) - time.monotonic()
        try:
            if timeout <= 0:
                raise asyncio.TimeoutError
            message = await asyncio.wait_for(self.request.receive(), timeout)
        except asyncio.TimeoutError:  # TimeoutError from Python 3.11
            if until < deadline:
                raise TimeoutError from None
            raise WebError(self.pace.too_slow(self.what), 408) from None
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        data = message.get("body", b"")
        self.received += len(data)
        self.ended = not message.get("more_body", False)
        return data

    async def read(self, limit: int, types: tuple[str, ...]) -> io.BytesIO:
        """The whole body, of a Content-Type of ``types`` and at most ``limit`` bytes.

        Raises:
            WebError: another type (415), over the limit (413), too slow (408).
            ClientDisconnect: the client went away.
        """
        headers = self.request.headers
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in types:
            raise WebError(f"Content-Type must be {' or '.join(types)}, got {kind or 'none'!r}", 415)
        declared = headers.get("content-length")
        over = WebError(f"the body is over the limit of {limit:,} bytes", 413)
        if declared is not None and (not declared.isascii() or not declared.isdigit() or int(declared) > limit):
            raise over
        body = io.BytesIO()  # grown in place: no list of chunks joined into a second copy
        while (data := await self.chunk()) is not None:
            if body.tell() + len(data) > limit:
                raise over
            body.write(data)
        body.seek(0)
        return body


async def finish(request: Request) -> bool:
    """Reads and drops what is left of ``request``'s body, at most :data:`DISCARD_BYTES` within
    :data:`DISCARD_SECONDS` (and its pace); whether the body has ended (then the connection may serve another request).

    Raises:
        ClientDisconnect: the client went away.
    """
    headers = request.headers
    if "content-length" not in headers and "transfer-encoding" not in headers:
        return True  # no body
    body = getattr(request.state, "body", None) or Body(request, Pace(DISCARD_SECONDS))
    until, dropped = time.monotonic() + DISCARD_SECONDS, 0
    try:
        while not body.ended and dropped <= DISCARD_BYTES:
            dropped += len(await body.chunk(until) or b"")
    except (TimeoutError, WebError):
        return False
    return body.ended
