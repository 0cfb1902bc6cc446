"""The browser table's visitors: who a visitor is (an id the server issued) and what one visitor may cost another.

A visitor id is a random part and its HMAC under a key this process drew at start, so only the server makes ids: a
client cannot choose one (session fixation), and an id it did not issue (a forged one, or one of a server since
restarted) is ignored and a fresh one issued. Issuing stores nothing: a request that creates nothing costs no memory,
however many come without a cookie.

Ids cost a client nothing (each request without a cookie gets a new one), so the stores are fair per *client*, the
peer address of the connection (:func:`client_of`; an IPv6 address's /64 network, which one host can fill): one
client holds at most a share of the games and uploads however many ids it presents, and a full store takes from the
client that holds the most (:func:`fairest_victim`), never from one that holds fewer. The address is the socket's
peer: a ``X-Forwarded-For`` is read only from a trusted proxy (:class:`TrustedProxies`, ``yacht-web
--trusted-proxy``), since any other client could claim any address there; so behind a reverse proxy not named
trusted, or on the loopback address the server binds by default, every visitor is one client, and fairness between
them is per visitor id only. A full :class:`~yacht_lab.table.web.games.GameStore` never drops one visitor's game to
make room for another's of the same client, so a flood of new visitors (each a new id) cannot evict the games of
those already playing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
from collections import Counter

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


def client_of(address: str | None) -> str:
    """The client a peer address stands for: an IPv4 address itself (an IPv4-mapped IPv6 one too), an IPv6 address's
    /64 network (``2001:db8::/64``: one host is given a whole /64), anything else as it is (``""`` for none).
    """
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address[:64]
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def fairest_victim(clients: dict[str, str], client: str) -> str | None:
    """What a full store gives up for a new item of ``client``: the least recently used item of the client holding
    the most, if that client holds more than ``client`` would with its new item; else ``None`` (no one holds more
    than a fair share against it).

    Args:
        clients: Each item's client, by item id, least recently used first.
        client: The client of the new item.
    """
    held = Counter(clients.values())
    if not held:
        return None
    most = max(held.values())
    if most <= held[client] + 1:
        return None
    return next(item for item, owner in clients.items() if held[owner] == most)


def _ip(address: str | None):
    """``address`` as an :mod:`ipaddress` address (an IPv4-mapped IPv6 one as IPv4, a zone dropped), or ``None``."""
    try:
        ip = ipaddress.ip_address(str(address).split("%", 1)[0])
    except ValueError:
        return None
    return ip.ipv4_mapped if ip.version == 6 and ip.ipv4_mapped is not None else ip


class TrustedProxies:
    """The reverse proxies whose word the server takes on a visitor's address (``yacht-web --trusted-proxy``).

    A request whose peer is one of them is the visitor's at the right-most address of its ``X-Forwarded-For`` that is
    not a trusted proxy's: the address the outermost trusted proxy saw (each proxy appends its peer's address, and
    whatever lies left of it is the client's word). Any other request is its peer's: a client that is not a trusted
    proxy could claim any address in the header.

    Args:
        networks: Addresses or networks (``127.0.0.1``, ``10.0.0.0/8``, ``::1``).

    Raises:
        ValueError: one that is not an IP address or network.
    """

    def __init__(self, networks=()) -> None:
        parsed = []
        for text in networks:
            try:
                parsed.append(ipaddress.ip_network(str(text).strip(), strict=False))
            except ValueError:
                raise ValueError(f"{str(text)[:80]!r} is not an IP address or network") from None
        self.networks = tuple(parsed)

    def __bool__(self) -> bool:
        return bool(self.networks)

    def trusts(self, address: str | None) -> bool:
        """Whether ``address`` is a trusted proxy's."""
        ip = _ip(address) if self.networks else None
        return ip is not None and any(ip.version == net.version and ip in net for net in self.networks)

    def address(self, peer: str | None, forwarded: list[str]) -> str | None:
        """The visitor's address of a request from ``peer`` with the ``X-Forwarded-For`` headers ``forwarded``: the
        peer itself unless it is a trusted proxy; then the header's right-most address that is not a trusted proxy's
        (or its left-most, if all are; the peer, if it has none).
        """
        if not self.trusts(peer):
            return peer
        entries = [entry.strip() for value in forwarded for entry in value.split(",")]
        entries = [entry for entry in entries if entry]
        for entry in reversed(entries):
            if not self.trusts(entry):
                return entry
        return entries[0] if entries else peer
