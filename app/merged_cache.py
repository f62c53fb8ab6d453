"""Pots merged for questions across documents, kept in memory per set of source pots.

A merge costs a few catalyst passes and no reading, so merged pots are not written to disk; within one
process (the app) a follow-up question about the same documents reuses the merged pot. The key names each
source pot by its id and its file's checksum: a pot read again after damage keeps its id but not its bytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

# Merged pots kept: each is as large as one document's pot (|M| entries per layer and head).
MERGED_POTS_KEPT = 2


class MergedPotCache:
    """A small least-recently-used map, safe to share between the app's threads."""

    def __init__(self, limit: int = MERGED_POTS_KEPT) -> None:
        if limit < 1:
            raise ValueError(f"the merged pot cache needs room for at least one pot, got {limit}")
        self.limit = limit
        self._items: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Hashable, merged) -> None:
        with self._lock:
            self._items[key] = merged
            self._items.move_to_end(key)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)

    def forget_document(self, doc_id: str) -> None:
        """Drop merged pots built from a document (it was deleted or read again)."""
        with self._lock:
            for key in [key for key, merged in self._items.items() if doc_id in merged.doc_ids]:
                del self._items[key]
