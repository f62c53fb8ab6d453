"""The latest tokens of a stream, held back unread: truncation's last half without ever reading the middle."""

from __future__ import annotations

from collections import deque


class TailQueue:
    """Keeps the newest `size` token ids pushed (older ones fall out) and counts every id pushed."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"tail size must not be negative, got {size}")
        self.size = size
        self.ids: deque[int] = deque(maxlen=size)
        self.pushed = 0

    def push(self, ids: list[int]) -> None:
        """Queue `ids` after the ids pushed before them; the oldest fall out beyond `size`."""
        # Only a piece's newest `size` ids can stay, so a long piece is cut before it goes through the deque.
        # ids[-0:] would be the whole piece, hence the size-0 case.
        self.ids.extend(ids[-self.size :] if self.size else [])
        self.pushed += len(ids)

    def drain(self) -> tuple[list[int], int]:
        """The held ids and how many ids pushed before them fell out; the queue is empty afterwards."""
        held = list(self.ids)
        skipped = self.pushed - len(held)
        self.ids.clear()
        self.pushed = 0
        return held, skipped
