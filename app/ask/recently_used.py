"""A small map of what is kept in memory between calls (loaded pots, merged pots): the least recently used goes
first once it holds more than its limit; safe to share between the app's threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable


class RecentlyUsed:
    def __init__(self, limit: int, too_small: str) -> None:
        """`limit`: how many items it keeps, at least one (else ValueError(`too_small`))."""
        if limit < 1:
            raise ValueError(too_small)
        self.limit = limit
        self._items: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        """The item under `key`, now the most recently used; None when there is none."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, item) -> None:
        with self._lock:
            self._items[key] = item
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)

    def keys(self) -> list:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def drop(self, gone: Callable[[Hashable, object], bool]) -> None:
        """Drop every item for which `gone(key, item)` is true."""
        with self._lock:
            for key in [key for key, item in self._items.items() if gone(key, item)]:
                del self._items[key]
