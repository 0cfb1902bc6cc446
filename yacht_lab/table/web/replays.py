"""The browser table's replays: records of ``evaluate.py --record`` (:mod:`yacht_lab.table.record`) held by id, and the
views the page steps through (the games with their scores, one game's decisions beside the solver's, where the
points went).

A replay is read as data only (JSON, every field checked) and held as arrays. The files the server was started with
(``yacht-web --replay PATH``) are everyone's; an uploaded one belongs to its visitor, as a game does, and the store
keeps a few of them, fairly per client (:mod:`yacht_lab.table.web.visitors`): a visitor's, then its client's, least
recently used go first, and a full store takes from the client holding the most, so uploads from new visitors of
one client never evict another client's replays.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from yacht_env import rules as R
from yacht_lab.table.commands import describe, display_name
from yacht_lab.table.record import Record
from yacht_lab.table.web.games import WebError
from yacht_lab.table.web.visitors import fairest_victim

MAX_UPLOAD_BYTES = 128 * 2**20
#: Uploads read at once (each holds its body, up to ``MAX_UPLOAD_BYTES``, and its arrays while it is read), and by one
#: client (a peer address: one address cannot hold every slot).
MAX_UPLOADS_IN_FLIGHT = 2
MAX_UPLOADS_PER_CLIENT_IN_FLIGHT = 1
#: An upload's pace: after its first ``UPLOAD_GRACE_SECONDS``, at least ``MIN_UPLOAD_RATE`` bytes a second on average
#: (512 kbit/s: the largest upload, 128 MiB, may take 34 minutes; one trickled a byte at a time is stopped in 10 s).
UPLOAD_GRACE_SECONDS = 10.0
MIN_UPLOAD_RATE = 64 * 2**10
MAX_REPLAYS_PER_VISITOR = 2
MAX_REPLAYS_PER_CLIENT = 4
MAX_REPLAYS = 8
MAX_PAGE = 200
ORDERS = ("game", "regret", "score")


class Replay:
    """One record and its views.

    Args:
        record: The record read back.
        name: What the page calls it (the file's name).
    """

    def __init__(self, record: Record, name: str) -> None:
        self.record = record
        self.name = name[:100]
        self.id = secrets.token_urlsafe(12)
        self._summary: dict | None = None

    def summary(self) -> dict:
        """The header, and per agent its games, mean score and mean regret, and its mean regret per category."""
        if self._summary is not None:
            return self._summary
        rec = self.record
        # Each decision is charged to the box its turn ends in: the pick at or after it (every turn ends in one).
        picks = np.flatnonzero(rec.action >= R.PICK_OFFSET)
        box = rec.action[picks[np.searchsorted(picks, np.arange(len(rec.action)))]] - R.PICK_OFFSET
        per_category = np.zeros((len(rec.agents), rec.rules.num_categories))
        np.add.at(per_category, (rec.agent, box), rec.regret)
        agents = []
        for a, name in enumerate(rec.agents):
            rows = np.flatnonzero(rec.game_agent == a)
            if not len(rows):
                continue
            agents.append(
                {
                    "agent": name,
                    "games": len(rows),
                    "mean_score": float(rec.game_score[rows].mean()),
                    "mean_regret": float(rec.game_regret[rows].mean()),
                    "decisions": int((rec.game_end[rows] - rec.game_start[rows]).sum()),
                    "category_regret": (per_category[a] / len(rows)).tolist(),
                }
            )
        header = rec.header
        self._summary = {
            "id": self.id,
            "name": self.name,
            "rules": header["rules"],
            "categories": [display_name(c) for c in rec.rules.categories],
            "seed": header["seed"],
            "games": header["games"],
            "yacht_rl": header["yacht_rl"],
            "optimal_expected_score": header["optimal_expected_score"],
            "agents": agents,
        }
        return self._summary

    def games(self, agent: str | None = None, order: str = "game", offset: int = 0, limit: int = 50) -> dict:
        """A page of the games, of one agent or all: by number, costliest first (``regret``) or lowest score first.

        Raises:
            WebError: an unknown agent or order, a bad offset or limit (400).
        """
        rec = self.record
        if order not in ORDERS:
            raise WebError(f"order: one of {', '.join(ORDERS)}, got {order!r}")
        if not 1 <= limit <= MAX_PAGE or offset < 0:
            raise WebError(f"limit: 1..{MAX_PAGE}; offset: 0 or more")
        rows = np.arange(len(rec.game_number))
        if agent is not None:
            if agent not in rec.agents:
                raise WebError(f"agent: one of the record's ({', '.join(rec.agents)}), got {agent[:40]!r}")
            rows = rows[rec.game_agent == rec.agents.index(agent)]
        if order == "regret":
            rows = rows[np.argsort(-rec.game_regret[rows], kind="stable")]
        elif order == "score":
            rows = rows[np.argsort(rec.game_score[rows], kind="stable")]
        page = rows[offset : offset + limit].tolist()
        return {
            "total": len(rows),
            "offset": offset,
            "games": [
                {
                    "index": g,
                    "agent": rec.agents[rec.game_agent[g]],
                    "game": int(rec.game_number[g]),
                    "score": int(rec.game_score[g]),
                    "regret": float(rec.game_regret[g]),
                    "decisions": int(rec.game_end[g] - rec.game_start[g]),
                }
                for g in page
            ],
        }

    def game(self, index: int) -> dict:
        """Game ``index`` (a row of :meth:`games`) decision by decision with the solver's annotation, its regret per
        category and per turn, and its decisions costliest first.

        Raises:
            WebError: no such game (404).
        """
        rec, rules = self.record, self.record.rules
        if not 0 <= index < len(rec.game_number):
            raise WebError(f"no game {index} in this replay (it has {len(rec.game_number)})", 404)
        start, end = int(rec.game_start[index]), int(rec.game_end[index])
        decisions = []
        for i in range(start, end):
            roll, action, best = int(rec.roll[i]), int(rec.action[i]), int(rec.best[i])
            state = (int(rec.open_mask[i]), int(rec.upper[i]), int(rec.armed[i]))
            decisions.append(
                {
                    "turn": int(rec.turn[i]),
                    "dice": [int(d) for d in R.ROLLS[roll]],
                    "rolls_left": int(rec.rolls_left[i]),
                    "open": [display_name(c) for k, c in enumerate(rules.categories) if state[0] >> k & 1],
                    "total": int(rec.total[i]),
                    "action": action,
                    "choice": describe(action, roll, rules, *state),
                    "best_action": best,
                    "best": describe(best, roll, rules, *state),
                    "regret": float(rec.regret[i]),
                }
            )
        costliest = sorted(range(len(decisions)), key=lambda j: -decisions[j]["regret"])
        return {
            "index": index,
            "agent": rec.agents[rec.game_agent[index]],
            "game": int(rec.game_number[index]),
            "score": int(rec.game_score[index]),
            "regret": float(rec.game_regret[index]),
            "categories": [display_name(c) for c in rules.categories],
            "category_regret": rec.category_regret(index).tolist(),
            "turn_regret": rec.turn_regret(index).tolist(),
            "decisions": decisions,
            "costliest": [j for j in costliest if decisions[j]["regret"] > 0],
        }


class ReplayStore:
    """Replays by id: the server's own (everyone's) and the visitors' uploads (each visitor's own)."""

    def __init__(
        self,
        per_visitor: int = MAX_REPLAYS_PER_VISITOR,
        capacity: int = MAX_REPLAYS,
        per_client: int = MAX_REPLAYS_PER_CLIENT,
    ) -> None:
        self.per_visitor, self.capacity, self.per_client = per_visitor, capacity, per_client
        self._shared: dict[str, Replay] = {}
        self._uploads: OrderedDict[str, tuple[str, Replay, str]] = OrderedDict()  # id -> (visitor, replay, client)
        self._lock = threading.Lock()

    def add_shared(self, record: Record, path: str) -> Replay:
        """A replay of the server's (``--replay PATH``), listed for every visitor."""
        replay = Replay(record, Path(path).name)
        self._shared[replay.id] = replay
        return replay

    def add_upload(self, visitor: str, record: Record, name: str, client: str = "") -> Replay:
        """A visitor's uploaded replay. Over the bounds the visitor's least recently used go, then its client's; a full
        store gives up the least recently used of the client holding the most if it holds more than this client
        would, else this client's own, else the least recently used of all (every client holds one).
        """
        replay = Replay(record, name)
        with self._lock:
            mine = [rid for rid, entry in self._uploads.items() if entry[0] == visitor]
            for rid in mine[: max(0, len(mine) - self.per_visitor + 1)]:
                del self._uploads[rid]
            ours = [rid for rid, entry in self._uploads.items() if entry[2] == client]
            for rid in ours[: max(0, len(ours) - self.per_client + 1)]:
                del self._uploads[rid]
            while len(self._uploads) >= self.capacity:
                clients = {rid: entry[2] for rid, entry in self._uploads.items()}
                ours = [rid for rid, owner in clients.items() if owner == client]
                victim = fairest_victim(clients, client) or (ours[0] if ours else next(iter(clients)))
                del self._uploads[victim]
            self._uploads[replay.id] = (visitor, replay, client)
        return replay

    def listed(self, visitor: str) -> list[dict]:
        """The replays this visitor sees: the server's, then its own uploads."""
        with self._lock:
            mine = [entry[1] for entry in self._uploads.values() if entry[0] == visitor]
        return [
            {"id": r.id, "name": r.name, "rules": r.record.header["rules"], "agents": r.record.agents}
            for r in [*self._shared.values(), *mine]
        ]

    def get(self, visitor: str, replay_id: str) -> Replay:
        """The replay ``replay_id`` if this visitor may see it.

        Raises:
            WebError: unknown, dropped or another visitor's (404).
        """
        if replay_id in self._shared:
            return self._shared[replay_id]
        with self._lock:
            entry = self._uploads.get(replay_id)
            if entry is None or not secrets.compare_digest(entry[0], visitor):
                raise WebError(f"no replay {replay_id[:40]!r} here: it was dropped, or it is not yours", 404)
            self._uploads.move_to_end(replay_id)
            return entry[1]
