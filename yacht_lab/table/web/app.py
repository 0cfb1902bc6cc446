"""The browser table's web app (Starlette): the page, its static files, and a JSON API over the games and replays.

Every request is checked before anything is done with it; a request that cannot be served is answered with a 4xx
status and ``{"error": "<one line>"}``, which the page shows. A JSON body must arrive within ``body_seconds`` of its
request's head, an upload at ``min_upload_rate`` after its first ``upload_grace_seconds`` (then a 408, and the
connection is closed: :mod:`yacht_lab.table.web.bodies`), so a client that trickles its bodies cannot hold the
server's connections; a body answered before it is read to its end has the rest read and dropped up to a small bound
first (then the connection is closed); a client that goes away mid-body is let go without a word in the log. The API
(all under ``/api``):

* ``GET /api/options``: the presets, the agent specs a seat takes (those this install can play), the coach's modes,
  the seats' bound.
* ``POST /api/games`` ``{rules, seats, seed, coach, names}``: a new game (201), its state as
  :meth:`~yacht_lab.table.web.games.WebGame.state` gives it; ``GET /api/games/{id}``: that state again.
* ``POST /api/games/{id}/moves`` ``{step, move}``: a person's move (``{"keep": [positions]}``, ``{"score": box}``
  or ``{"action": index}``) at decision ``step``, then the agents' moves; answers the new state.
* ``GET /api/games/{id}/coach``: the coach's numbers for the decision on turn.
* ``GET /api/replays``: the replays this visitor sees; ``POST /api/replays`` (the body is a record's bytes,
  ``Content-Type: application/x-ndjson``, at most ``max_upload_bytes``, received at its pace, at most ``max_uploads``
  read at once and ``max_uploads_per_client`` of one client: past that a 503 at once): an upload (201); ``GET
  /api/replays/{id}``: its summary; ``GET /api/replays/{id}/games?agent=&order=game|regret|score&offset=&limit=``:
  a page of its games; ``GET /api/replays/{id}/games/{index}``: one game decision by decision.

A visitor is an id the server issued (:mod:`yacht_lab.table.web.visitors`) in a cookie (``SameSite=Strict``,
``HttpOnly``), set by the page and by the first request that creates something (a game, an upload); an id the
server did not issue is ignored. Games and uploads are found only with their visitor's id, so two visitors never
share state; the stores are fair per client (the peer address, or the one a trusted proxy forwards:
:class:`~yacht_lab.table.web.visitors.TrustedProxies`, :func:`~yacht_lab.table.web.visitors.client_of`);
another site's page cannot act for a visitor (its requests carry no cookie, and a JSON or record body needs a CORS
preflight that is never granted). Requests must name one of ``allowed_hosts`` (DNS rebinding), and
the page may only load its own files (``Content-Security-Policy``). A request the server has no memory for
(:class:`MemoryError`) is a 503, and the server goes on.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from importlib import resources

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from yacht_env import rules as R
from yacht_env.render import game_title
from yacht_lab.table.record import Record, parse_json, read_record, read_record_file, record_lines
from yacht_lab.table.web.bodies import Body, Pace, finish
from yacht_lab.table.web.games import COACH_MODES, MAX_SEATS, GameStore, WebError, new_game
from yacht_lab.table.web.replays import (
    MAX_UPLOAD_BYTES,
    MAX_UPLOADS_IN_FLIGHT,
    MAX_UPLOADS_PER_CLIENT_IN_FLIGHT,
    MIN_UPLOAD_RATE,
    UPLOAD_GRACE_SECONDS,
    ReplayStore,
)
from yacht_lab.table.web.seats import model_tables, offered_agents
from yacht_lab.table.web.visitors import TrustedProxies, VisitorIds, client_of

COOKIE = "yacht_visitor"
MAX_JSON_BYTES = 16 * 1024
#: How long a JSON body may take to arrive after its request's head (an upload has its :class:`Uploads` pace).
BODY_SECONDS = 10.0
#: The largest record the server is started with (``--replay PATH``).
MAX_REPLAY_FILE_BYTES = 2**31
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
RECORD_TYPES = ("application/x-ndjson", "application/jsonl", "application/octet-stream")
HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
log = logging.getLogger("yacht_lab.table.web")


class SecurityHeaders:
    """ASGI middleware: :data:`HEADERS` on every response."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        """Passes the request on, adding the headers to the response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _json(request: Request, seconds: float = BODY_SECONDS):
    body = await Body(request, Pace(seconds)).read(MAX_JSON_BYTES, ("application/json",))
    data = body.getvalue()
    try:
        return parse_json(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):  # RecursionError: nested too deep
        raise WebError("the body is not JSON") from None
    except ValueError as error:  # JSON that cannot be served back: an integer too long, a lone surrogate
        raise WebError(f"the body holds {error}") from None


@dataclass(frozen=True)
class Uploads:
    """The bounds of uploads (records posted to ``/api/replays``).

    Args:
        max_bytes: The largest record.
        in_flight: How many are read at once (another is a 503).
        per_client: How many one client may send at once (another is a 503): one address cannot take every slot.
        grace_seconds: How long an upload may take before its pace is checked.
        min_rate: The least mean rate (bytes a second) of an upload after ``grace_seconds`` (then a 408).
    """

    max_bytes: int = MAX_UPLOAD_BYTES
    in_flight: int = MAX_UPLOADS_IN_FLIGHT
    per_client: int = MAX_UPLOADS_PER_CLIENT_IN_FLIGHT
    grace_seconds: float = UPLOAD_GRACE_SECONDS
    min_rate: float = MIN_UPLOAD_RATE


class Api:
    """The API's handlers over one game store and one replay store: each takes the request and the visitor's id and
    returns the JSON answer, or raises :class:`~yacht_lab.table.web.games.WebError`.
    """

    def __init__(
        self,
        games: GameStore,
        replays: ReplayStore,
        allowed_agents: tuple[str, ...],
        uploads: Uploads,
        body_seconds: float = BODY_SECONDS,
        trusted_proxies: TrustedProxies | None = None,
    ):
        self.store, self.replays = games, replays
        self.allowed_agents, self.limits, self.body_seconds = allowed_agents, uploads, body_seconds
        self.trusted_proxies = trusted_proxies or TrustedProxies()
        # in flight, in all and by client (the handlers run on the event loop: no lock needed)
        self.uploads = 0
        self.uploads_of: Counter[str] = Counter()

    def client(self, request: Request) -> str:
        """The client of ``request``: its peer's address, or the visitor's a trusted proxy forwards (an IPv6 /64)."""
        peer = request.client.host if request.client else None
        return client_of(self.trusted_proxies.address(peer, request.headers.getlist("x-forwarded-for")))

    async def options(self, request: Request, visitor: str) -> dict:
        """``GET /api/options``."""
        presets = [{"name": name, "title": game_title(R.get_rules(name))} for name in R.PRESETS]
        return {
            "presets": presets,
            "agents": await run_in_threadpool(offered_agents, self.allowed_agents),
            "tables": await run_in_threadpool(model_tables),
            "coach_modes": list(COACH_MODES),
            "max_seats": MAX_SEATS,
        }

    async def create_game(self, request: Request, visitor: str) -> dict:
        """``POST /api/games``."""
        body = await _json(request, self.body_seconds)
        game = await run_in_threadpool(new_game, body, self.allowed_agents)
        self.store.add(visitor, game, self.client(request))
        return game.state()

    def _game(self, request: Request, visitor: str):
        return self.store.get(visitor, request.path_params["game"])

    async def get_game(self, request: Request, visitor: str) -> dict:
        """``GET /api/games/{id}``."""
        game = self._game(request, visitor)

        def state():
            with game.lock:  # a move of another request may hold it while its agents play
                return game.state()

        return await run_in_threadpool(state)

    async def move(self, request: Request, visitor: str) -> dict:
        """``POST /api/games/{id}/moves``."""
        game = self._game(request, visitor)
        body = await _json(request, self.body_seconds)
        if not isinstance(body, dict) or set(body) != {"step", "move"}:
            raise WebError('a move is {"step": <the state\'s step>, "move": {...}}')

        def play():
            with game.lock:
                game.act(body["step"], body["move"])
                return game.state()

        return await run_in_threadpool(play)

    async def coach(self, request: Request, visitor: str) -> dict:
        """``GET /api/games/{id}/coach``."""
        game = self._game(request, visitor)

        def view():
            with game.lock:
                return game.coach_view()

        return await run_in_threadpool(view)

    async def list_replays(self, request: Request, visitor: str) -> dict:
        """``GET /api/replays``."""
        return {"replays": self.replays.listed(visitor), "max_upload_bytes": self.limits.max_bytes}

    async def upload(self, request: Request, visitor: str) -> dict:
        """``POST /api/replays``: the body is the record (at most ``in_flight`` at once, ``per_client`` of one client,
        each arriving at its pace: :class:`Uploads`). One past a bound is a 503 at once (:func:`endpoint` reads and
        drops a little of its body, then closes its connection).
        """
        limits, client = self.limits, self.client(request)
        if self.uploads_of[client] >= limits.per_client:
            raise WebError(
                f"your address is sending as many uploads as one client may at once ({limits.per_client}): "
                "try again when it is done",
                503,
            )
        if self.uploads >= limits.in_flight:
            raise WebError(
                f"the server is reading as many uploads as it takes at once ({limits.in_flight}): "
                "try again in a moment",
                503,
            )
        self.uploads += 1
        self.uploads_of[client] += 1
        try:
            record = await self._read_upload(request)
        finally:
            self.uploads -= 1
            self.uploads_of[client] -= 1
            if not self.uploads_of[client]:
                del self.uploads_of[client]
        name = request.headers.get("x-file-name", "upload.jsonl")
        replay = self.replays.add_upload(visitor, record, "".join(c for c in name if c.isprintable()), client)
        return await run_in_threadpool(replay.summary)

    async def _read_upload(self, request: Request) -> Record:
        pace = Pace(self.limits.grace_seconds, self.limits.min_rate)
        data = await Body(request, pace, "the upload").read(self.limits.max_bytes, RECORD_TYPES)
        try:
            return await run_in_threadpool(lambda: read_record(record_lines(data)))
        except ValueError as error:
            raise WebError(f"not a record of evaluate.py --record: {error}") from None

    def _replay(self, request: Request, visitor: str):
        return self.replays.get(visitor, request.path_params["replay"])

    async def replay_summary(self, request: Request, visitor: str) -> dict:
        """``GET /api/replays/{id}``."""
        return await run_in_threadpool(self._replay(request, visitor).summary)

    async def replay_games(self, request: Request, visitor: str) -> dict:
        """``GET /api/replays/{id}/games``."""
        replay = self._replay(request, visitor)
        query = request.query_params
        unknown = set(query) - {"agent", "order", "offset", "limit"}
        if unknown:
            raise WebError(f"unknown parameter {sorted(unknown)[0][:40]!r}; expected agent, order, offset, limit")
        offset, limit = (_query_int(query, name, default) for name, default in (("offset", 0), ("limit", 50)))
        return replay.games(query.get("agent"), query.get("order", "game"), offset, limit)

    async def replay_game(self, request: Request, visitor: str) -> dict:
        """``GET /api/replays/{id}/games/{index}``."""
        replay = self._replay(request, visitor)
        index = request.path_params["index"]
        if not index.isascii() or not index.isdigit() or len(index) > 9:
            raise WebError(f"a game's index is a number, got {index[:40]!r}", 404)
        return await run_in_threadpool(replay.game, int(index))


def endpoint(handler, ids: VisitorIds, status: int = 200, creates: bool = False):
    """An ASGI endpoint of an :class:`Api` handler: the visitor's id from its cookie (``""`` for none: an id the
    server did not issue is none), the answer as JSON, a :class:`~yacht_lab.table.web.games.WebError` as its status and
    ``{"error": message}``. A handler that ``creates`` something for its visitor gets a fresh id where there is none,
    set in the cookie if it succeeds.
    """

    async def answer(request: Request) -> Response:
        visitor = ids.verify(request.cookies.get(COOKIE))
        fresh = visitor is None and creates
        visitor = ids.issue() if fresh else visitor or ""
        try:
            response = JSONResponse(await handler(request, visitor), status_code=status)
        except WebError as error:
            response = JSONResponse({"error": str(error)}, status_code=error.status)
        except ClientDisconnect:  # the client went away mid-body: no one to answer, nothing to log
            return Response(status_code=400)
        except MemoryError:  # a bound too generous for the machine: this request fails, the server goes on
            log.warning("out of memory answering %s %s", request.method, request.url.path)
            response = JSONResponse({"error": "the server has no memory left for this request"}, status_code=503)
        except Exception:  # a bug: logged with its traceback, answered in one line
            log.exception("error answering %s %s", request.method, request.url.path)
            response = JSONResponse({"error": "internal error (see the server's log)"}, status_code=500)
        if fresh and response.status_code < 400:
            _set_visitor(response, visitor)
        try:  # a body not read to its end: a little more is read so that a client still sending sees the answer
            if not await finish(request):
                response.headers["connection"] = "close"  # the rest is never read: the connection is done
        except ClientDisconnect:
            return Response(status_code=400)
        return response

    return answer


def create_app(
    replays=(),
    allowed_agents: tuple[str, ...] = (),
    max_upload_bytes: int = MAX_UPLOAD_BYTES,
    allowed_hosts=LOOPBACK_HOSTS,
    games: GameStore | None = None,
    max_uploads: int = MAX_UPLOADS_IN_FLIGHT,
    body_seconds: float = BODY_SECONDS,
    max_uploads_per_client: int = MAX_UPLOADS_PER_CLIENT_IN_FLIGHT,
    upload_grace_seconds: float = UPLOAD_GRACE_SECONDS,
    min_upload_rate: float = MIN_UPLOAD_RATE,
    trusted_proxies: TrustedProxies | None = None,
) -> Starlette:
    """The web app.

    Args:
        replays: Paths of records every visitor sees (read now: a bad one raises).
        allowed_agents: Agent specs a seat may take besides the fileless ones and the shipped models (the server's
            ``--agent``: e.g. ``ppo:runs/x/model.zip``).
        max_upload_bytes: The largest record a visitor may upload.
        allowed_hosts: The ``Host`` names requests may name (``["*"]``: any).
        games: The game store (default: a new :class:`~yacht_lab.table.web.games.GameStore`).
        max_uploads: How many uploads are read at once (another is a 503).
        body_seconds: How long a JSON body may take to arrive (then a 408).
        max_uploads_per_client: How many uploads one client may send at once (another is a 503).
        upload_grace_seconds: How long an upload may take before its rate is checked.
        min_upload_rate: The least mean rate of an upload after ``upload_grace_seconds``, in bytes a second (then a
            408, its connection closed).
        trusted_proxies: The reverse proxies whose ``X-Forwarded-For`` names a visitor's address (default: none).

    Raises:
        ValueError: a replay that cannot be read.
    """
    replay_store = ReplayStore()
    for path in replays:
        replay_store.add_shared(read_record_file(path, MAX_REPLAY_FILE_BYTES), str(path))
    store = games if games is not None else GameStore()
    uploads = Uploads(max_upload_bytes, max_uploads, max_uploads_per_client, upload_grace_seconds, min_upload_rate)
    api = Api(store, replay_store, tuple(allowed_agents), uploads, body_seconds, trusted_proxies)
    ids = VisitorIds()
    page = resources.files("yacht_lab.table.web").joinpath("static/index.html").read_text(encoding="utf-8")

    async def index(request: Request) -> Response:
        response = HTMLResponse(page)
        if ids.verify(request.cookies.get(COOKIE)) is None:
            _set_visitor(response, ids.issue())
        return response

    routes = [
        Route("/", index),
        Route("/api/options", endpoint(api.options, ids)),
        Route("/api/games", endpoint(api.create_game, ids, 201, creates=True), methods=["POST"]),
        Route("/api/games/{game}", endpoint(api.get_game, ids)),
        Route("/api/games/{game}/moves", endpoint(api.move, ids), methods=["POST"]),
        Route("/api/games/{game}/coach", endpoint(api.coach, ids)),
        Route("/api/replays", endpoint(api.list_replays, ids)),
        Route("/api/replays", endpoint(api.upload, ids, 201, creates=True), methods=["POST"]),
        Route("/api/replays/{replay}", endpoint(api.replay_summary, ids)),
        Route("/api/replays/{replay}/games", endpoint(api.replay_games, ids)),
        Route("/api/replays/{replay}/games/{index}", endpoint(api.replay_game, ids)),
        Mount("/static", StaticFiles(packages=[("yacht_lab.table.web", "static")]), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders), Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={404: _not_found, 405: _not_allowed})
    app.state.games, app.state.replays = api.store, replay_store
    return app


def _query_int(query, name: str, default: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        raise WebError(f"{name}: a number, got {text[:40]!r}")
    return int(text)


def _set_visitor(response: Response, visitor: str) -> None:
    response.set_cookie(COOKIE, visitor, httponly=True, samesite="strict", path="/")


async def _not_found(request: Request, exc) -> Response:
    return JSONResponse({"error": f"no such page: {request.url.path[:80]}"}, status_code=404)


async def _not_allowed(request: Request, exc) -> Response:
    return JSONResponse({"error": f"{request.method} is not allowed on {request.url.path[:80]}"}, status_code=405)
