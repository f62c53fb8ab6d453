"""An answer's work as it happens: the stages a reader sees before the answer, and its Stop.

The checked answer comes in one piece after seconds of work (the search, the reranker, the judge, maybe the
writer). Its stages say what the work looks at meanwhile: the passage the search points at, with its page or line,
then how many passages are weighed. A Stop from another thread ends the work within a layer of the model
(core.stopping) and the answer is kept as far as it had been given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from infinipot.app.ask.quoting import index_like, quoted_part, shared_words
from infinipot.core.errors import AnswerStopped
from infinipot.core.stopping import stopping_when

if TYPE_CHECKING:  # the page imports this module's stages and must not import torch (app.ask.stats does)
    from infinipot.app.ask.stats import AskStats

WRITING = "writing a short answer to check against the passages"

# Words of the passage shown while the answer is checked: enough to see what is being read.
LOOKING_WORDS = 30


@dataclass(frozen=True)
class AskStage:
    """A step of an answer's work, shown until the answer comes (the app's answer bubble, the CLI's stderr)."""

    kind: str  # "looking": the search found passages; "weighing": the judge reads those read; "writing"
    text: str  # what happens now, one line: "checking 7 passages"
    citation: dict | None = None  # the passage looked at (ask.citing.Citation.as_json()); None: as before

    @property
    def quote(self) -> str:
        """The passage's first LOOKING_WORDS words, "" without a passage."""
        if self.citation is None:
            return ""
        words = str(self.citation.get("snippet", "")).split()
        return " ".join(words[:LOOKING_WORDS]) + (" …" if len(words) > LOOKING_WORDS else "")

    def line(self) -> str:
        """One plain line: "looking at page 8: “Usage: ...” (checking 7 passages)"."""
        if self.citation is None:
            return self.text
        return f"looking at {self.citation['label']}: “{self.quote}” ({self.text})"


def looked_at(citations: list[dict], question: str) -> dict:
    """Of the passages' citations (best first), the one to show while the answer is checked: the one whose
    sentence shares the most words with the question (the search's best on a tie), its snippet from that
    sentence on: what a reader would look at first. An index's or contents' line only when nothing else was found."""
    best = max(citations, key=lambda c: (not index_like(c["snippet"]), shared_words(c["snippet"], question)))
    return {**best, "snippet": quoted_part(best["snippet"], question)}


def passages(count: int) -> str:
    return f"{count} passage" if count == 1 else f"{count} passages"


def until_stopped(pieces: Iterator[str], stopped: Callable[[], bool], stats: AskStats) -> Iterator[str]:
    """`pieces` until `stopped()`: each piece's work runs where a Stop ends it within a layer of the model, and a
    piece made after the Stop is not given. A stopped answer ends normally with stats.stopped_by "reader", so
    the stream's reader keeps it as far as it was given."""
    try:
        while True:
            if stopped():
                break
            try:
                with stopping_when(stopped):
                    piece = next(pieces)
            except StopIteration:
                return
            except AnswerStopped:
                break
            if stopped():  # made after the Stop: never shown, so never kept
                break
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()
    stats.stopped_by = "reader"
