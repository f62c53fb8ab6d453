"""An answer's events in the terminal (ask.events), a summary's pieces the same way: stages and warnings on
stderr, the words on stdout as they come, then the sources; with --json only collected, for the one JSON object
printed at the end."""

from __future__ import annotations

import sys
from typing import TextIO

from infinipot.app.ask.events import Done, Piece, Sources
from infinipot.app.ask.progress import AskStage


class AnswerPrinter:
    def __init__(self, stats, quiet: bool, out: TextIO | None = None, err: TextIO | None = None) -> None:
        """`stats`: the answer's (its warnings so far are shown at once, those learnt later at its end)."""
        self.stats = stats
        self.quiet = quiet
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._text: list[str] = []
        self._sources: Sources | None = None
        self._passage: tuple | None = None  # the passage the last stage line showed
        self._warned = 0
        self._warn_new()

    def show(self, event) -> None:
        if isinstance(event, AskStage):
            self._stage(event)
        elif isinstance(event, Piece):
            self._text.append(event.text)
            if not self.quiet:
                print(event.text, end="", file=self.out, flush=True)
        elif isinstance(event, Sources):
            self._sources = event  # shown under the answer once it is done, after any warning it brought
        elif isinstance(event, Done):
            self._done()

    def answer(self) -> str:
        return "".join(self._text)

    def _stage(self, stage: AskStage) -> None:
        """The passage looked at, then what is weighed; the same passage again gives only what happens now."""
        if self.quiet:
            return
        passage = (stage.citation["label"], stage.quote) if stage.citation else None
        if passage is not None and passage == self._passage:
            print(f"infinipot: {stage.text}", file=self.err, flush=True)
            return
        self._passage = passage or self._passage
        print(f"infinipot: {stage.line()}", file=self.err, flush=True)

    def _done(self) -> None:
        if len(self.stats.warnings) > self._warned and not self.quiet:
            print(file=self.err)
        self._warn_new()
        if self.quiet:
            return
        print(file=self.out)
        if self._sources is not None:
            print("sources:" if self._sources.answerable else "closest passages:", file=self.out)
            for label, shown in self._sources.lines:
                print(f"  {label}: {shown}", file=self.out)

    def _warn_new(self) -> None:
        for warning in self.stats.warnings[self._warned :]:
            print(f"infinipot: warning: {warning}", file=self.err)
        self._warned = len(self.stats.warnings)
