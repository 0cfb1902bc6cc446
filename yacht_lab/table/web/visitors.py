"""The browser table's visitors: who a visitor is (an id the server issued) and what one visitor may cost another.

A visitor id is a random part and its HMAC under a key this process drew at start, so only the server makes ids: a
client cannot choose one (session fixation), and an id it did not issue (a forged one, or one of a server since
restarted) is ignored and a fresh one issued. Issuing stores nothing: a request that creates nothing costs no memory,
however many come without a cookie.

A full :class:`~yacht_lab.table.web.games.GameStore` never drops one visitor's game to make room for another's, so a
flood of new visitors (each a new id) cannot evict the games of those already playing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

#: The longest cookie value read as an id (an issued one is 49 characters).
MAX_ID_LENGTH = 64


class VisitorIds:
    """Issues visitor ids and tells the ones it issued.

    Args:
        key: The HMAC key (default: 32 random bytes, so the ids of one server process only).
    """

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def issue(self) -> str:
        """A fresh id: ``<random>.<its HMAC>``."""
        nonce = secrets.token_urlsafe(18)
        return f"{nonce}.{self._mac(nonce)}"

    def verify(self, value: str | None) -> str | None:
        """``value`` if it is an id this object issued, else None."""
        if not value or len(value) > MAX_ID_LENGTH or not value.isascii():
            return None
        nonce, _, mac = value.partition(".")
        return value if hmac.compare_digest(mac, self._mac(nonce)) else None

    def _mac(self, nonce: str) -> str:
        digest = hmac.digest(self._key, nonce.encode("ascii"), hashlib.sha256)[:18]
        return base64.urlsafe_b64encode(digest).decode("ascii")
