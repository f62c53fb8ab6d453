"""Following a growing log: poll the file and read what was appended, one report per growth step."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.ingest import open_document

from .growing import readable_end
from .service import DocumentService, ReadReport


@dataclass(frozen=True)
class FollowSettings:
    # Seconds between two looks at the file; a look that finds it unchanged costs one stat call.
    poll_seconds: float = 2.0
    # Looks before stopping (None: until stopped); for tests and scripts.
    max_polls: int | None = None

    def __post_init__(self) -> None:
        if not self.poll_seconds >= 0:
            raise ValueError(f"poll interval must not be negative, got {self.poll_seconds}")
        if self.max_polls is not None and self.max_polls < 1:
            raise ValueError(f"max polls must be at least 1, got {self.max_polls}")


class StopRequest:
    """Set by Ctrl-C while following: the read in progress finishes and stores its pot, then following stops.

    A second Ctrl-C interrupts at once (the read then resumes from its checkpoint next time).
    """

    def __init__(self) -> None:
        self.event = threading.Event()

    def install(self) -> None:
        def handle(signum, frame) -> None:
            if self.event.is_set():
                raise KeyboardInterrupt
            self.event.set()

        signal.signal(signal.SIGINT, handle)


def check_followable(path: Path) -> None:
    """Raise ValueError (one line for the user) unless `path` is a text file that can be read as it grows."""
    document = open_document(path)
    if not document.can_grow:
        raise ValueError(
            f"--follow reads uncompressed text (UTF-8 or an 8-bit encoding) as it grows; {document.name} is "
            f"{document.kind if document.kind != 'text' else 'compressed or UTF-16 text'}"
        )


def _file_state(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:  # between a log rotation's rename and the new file: wait for it
        return None
    return stat.st_size, stat.st_mtime_ns


def follow(
    service: DocumentService,
    path: Path,
    config: PotConfig,
    model: str,
    settings: FollowSettings,
    on_report: Callable[[ReadReport], None],
    stop: threading.Event | None = None,
    on_progress=None,
    sleep: Callable[[float], object] | None = None,
) -> int:
    """Read `path` now and after every change; returns the number of growth steps read.

    Every look that finds the file changed reads it (continuing the stored pot when it only grew) and passes
    the report to `on_report`; an unfinished last line waits for its newline.
    """
    check_followable(path)
    stop = stop or threading.Event()
    sleep = sleep or stop.wait  # an Event wait ends as soon as Ctrl-C sets the stop
    seen, steps, polls, reported = None, 0, 0, False
    while not stop.is_set():
        state = _file_state(path)
        if state is not None and state != seen and readable_end(path, open_document(path), follow=True) > 0:
            report = service.read(path, config, model, on_progress, follow=True)
            if not report.reused or not reported:  # the state found first, then one report per growth step
                on_report(report)
                reported = True
            steps += not report.reused
            seen = state
        polls += 1
        if (settings.max_polls is not None and polls >= settings.max_polls) or stop.is_set():
            break
        sleep(settings.poll_seconds)
    return steps
