"""Objects the browser table's games share by key (the agents, the coaches): one per key while anything holds it.

A game seats the object already built for its key as long as any game (or anything else) still holds it, however
many other keys were asked for since, and the last few built are kept for the games to come; an object no one holds
and not among those is let go. So the objects alive are at most one per key in use, whatever the number of games: a
server that builds a table of some 80 MB per key holds one per key, never one per game.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable


class SharedObjects:
    """Builds an object per key (``build(*key)``) and shares it.

    Args:
        build: Makes the object of a key (its elements are the arguments); it may raise, and then nothing is kept.
        keep: How many of the objects last asked for are kept when nothing else holds them.
    """

    def __init__(self, build: Callable, keep: int) -> None:
        self.build, self.keep = build, keep
        self._live: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._recent: OrderedDict = OrderedDict()
        self._building: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many objects are alive (held by a game, or among the last asked for)."""
        with self._lock:
            return len(self._live)

    def get(self, *key):
        """The object of ``key``: the one alive if there is one, else a new one (built once however many ask at once:
        the others wait for it).
        """
        with self._lock:
            found = self._find(key)
            if found is not None:
                return found
            building = self._building.setdefault(key, threading.Lock())
        with building:  # one build per key; other keys build meanwhile
            with self._lock:
                found = self._find(key)
                if found is not None:
                    return found
            try:
                made = self.build(*key)
            except BaseException:
                with self._lock:
                    self._building.pop(key, None)
                raise
            with self._lock:
                self._live[key] = made
                self._remember(key, made)
                self._building.pop(key, None)
            return made

    def clear(self) -> None:
        """Forgets the objects kept (those still held by games stay alive with them, and are no longer shared)."""
        with self._lock:
            self._live.clear()
            self._recent.clear()

    def _find(self, key):
        found = self._live.get(key)
        if found is not None:
            self._remember(key, found)
        return found

    def _remember(self, key, made) -> None:
        self._recent[key] = made
        self._recent.move_to_end(key)
        while len(self._recent) > self.keep:
            self._recent.popitem(last=False)
