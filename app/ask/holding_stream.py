"""An answer's stream that holds its document in use from the moment the answer is asked for.

Holding from the first piece left a gap: a delete could land between a question being accepted and its first
piece (for a queued question, minutes), and the answer then streamed for a document that no longer existed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from infinipot.storage.uses import DocumentHold

T = TypeVar("T")


class HeldStream(Iterator[T], Generic[T]):
    """The items (an answer's pieces or events), with the hold released when they end, fail, are closed (Stop) or
    are dropped unread; `after` runs once then (the app gives the answer's freed memory back)."""

    def __init__(self, pieces: Iterator[T], hold: DocumentHold, after: Callable[[], object] | None = None) -> None:
        self._pieces = pieces
        self._hold = hold
        self._after = after

    def __iter__(self) -> HeldStream[T]:
        return self

    def __next__(self) -> T:
        try:
            return next(self._pieces)
        except BaseException:
            self._end()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._pieces, "close", None)
            if close is not None:
                close()
        finally:
            self._end()

    def _end(self) -> None:
        hold, self._hold = self._hold, None
        if hold is None:
            return
        hold.release()
        if self._after is not None:
            self._after()

    def __del__(self) -> None:
        self.close()
