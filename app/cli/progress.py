"""Reading progress in the terminal: a tqdm bar on a terminal, a plain line every few seconds otherwise (a log
file or a pipe gets whole lines, never carriage returns)."""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

# Seconds between two plain progress lines when stderr is not a terminal.
PLAIN_EVERY_SECONDS = 10.0


class ReadProgress:
    """The reader's on_progress: shows tokens read and compressions; `close()` ends the bar or line."""

    def __init__(self, stream: TextIO | None = None, plain_every: float = PLAIN_EVERY_SECONDS) -> None:
        self.stream = stream or sys.stderr
        self.plain_every = plain_every
        self._bar = None
        self._last_line = time.monotonic()  # the first line after `plain_every` s: short reads print none
        self._tokens = 0

    def __call__(self, pot) -> None:
        if self.stream.isatty():
            self._advance_bar(pot)
            return
        now = time.monotonic()
        if now - self._last_line >= self.plain_every:
            self._last_line = now
            print(f"read {pot.document_tokens:,} tokens, {pot.cycles} compressions", file=self.stream, flush=True)

    def _advance_bar(self, pot) -> None:
        if self._bar is None:
            from tqdm import tqdm

            # A terminal that reports no size (a pty nobody sized) would hide the bar: 80 x 24 then.
            size = shutil.get_terminal_size()
            self._bar = tqdm(
                desc="reading",
                unit=" tokens",
                unit_scale=True,
                file=self.stream,
                leave=False,
                ncols=size.columns,
                nrows=size.lines,
            )
        self._bar.update(pot.document_tokens - self._tokens)
        self._tokens = pot.document_tokens
        self._bar.set_postfix_str(f"{pot.cycles} compressions, pot {pot.entries:,} entries", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
