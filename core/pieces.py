"""Where a read's forward pieces end when they keep to a grid: a read of any length then runs a handful of shapes.

A forward's attention shape is (query rows, key rows). Pieces cut wherever the caller's chunks end give a new
key length at almost every piece (~86 shapes in a 128K read, ~650 in a 1M read), and on a GPU each new shape
can cost a kernel plan or graph of its own. On the grid, the piece that fills the pot ends at |M| exactly (its
document tokens up to |M| - |P|, then the catalyst riding along), and every other piece ends a whole multiple of
F below that: at the default settings pieces of F rows end at F, 2F, 3F and |M| entries, four shapes in all. (A
catalyst longer than F makes the filling piece the whole multiple of F that holds it.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PieceGrid:
    """The grid of one read: `forward` (F) query rows a piece at most; `limit` the most entries after a read
    (|M| - |P|), None for a read without bound; `rider` the rows that follow the document's in the piece that
    fills the pot (the catalyst prompt riding along), 0 when the catalyst runs a pass of its own."""

    forward: int
    limit: int | None
    rider: int = 0

    def __post_init__(self) -> None:
        if self.forward < 1:
            raise ValueError(f"a forward piece needs at least one row, got {self.forward}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"a pot must leave room to read, got a limit of {self.limit}")

    def end(self, entries: int) -> int:
        """Entries held at the end of the next piece from `entries`, its rider or padding included."""
        if self.limit is None:
            return (entries // self.forward + 1) * self.forward
        if entries >= self.limit:
            raise ValueError(f"a pot of {entries} entries is full: compress it before reading on")
        top = self.limit + self.rider
        nearest = top - ((top - entries - 1) // self.forward) * self.forward  # the first grid point past `entries`
        # past the document's part of the filling piece: that piece it is, longer than F when the rider is
        return top if nearest > self.limit else nearest

    def document_tokens(self, entries: int) -> int:
        """Tokens of the document the next piece from `entries` reads when enough are at hand."""
        end = self.end(entries)
        return end - entries if self.limit is None else min(end, self.limit) - entries

    def fills(self, entries: int) -> bool:
        """Whether the next piece from `entries` fills the pot (a compression follows it if the document goes on)."""
        return self.limit is not None and entries + self.document_tokens(entries) == self.limit
