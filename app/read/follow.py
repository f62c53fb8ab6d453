"""Following a growing log: poll the file and read what was appended, one report per growth step.

`follow` is the loop that `infinipot read --follow` runs; `LogFollower` runs it in one thread per file for the
app's "Follow a growing log" (uploads are copies and never grow, so the app follows a path on this machine).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from infinipot.app.errors import USER_ERRORS, one_line
from infinipot.app.read.growing import readable_end
from infinipot.app.read.report import ReadReport
from infinipot.core.config import PotConfig
from infinipot.ingest import open_document

# Reads a file into its stored pot: FileReader.read (path, settings, model, on_progress, follow=...).
ReadFile = Callable[..., ReadReport]
# Holds a document in use while the block runs (Store.in_use with what a follow is doing).
MarkInUse = Callable[[str], AbstractContextManager]

log = logging.getLogger(__name__)


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
    read: ReadFile,
    path: Path,
    config: PotConfig,
    model: str,
    settings: FollowSettings,
    on_report: Callable[[ReadReport], None],
    stop: threading.Event | None = None,
    on_progress=None,
    sleep: Callable[[float], object] | None = None,
    mark_in_use: MarkInUse | None = None,
) -> int:
    """Read `path` now and after every change; returns the number of growth steps read.

    Every look that finds the file changed reads it (continuing the stored pot when it only grew) and passes
    the report to `on_report`; an unfinished last line waits for its newline. `mark_in_use(doc_id)` holds the
    document in use from its first read until following stops, so a delete from any process waits for the stop.
    """
    check_followable(path)
    stop = stop or threading.Event()
    sleep = sleep or stop.wait  # an Event wait ends as soon as Ctrl-C sets the stop
    seen, steps, polls, reported = None, 0, 0, False
    with ExitStack() as held:
        while not stop.is_set():
            state = _file_state(path)
            if state is not None and state != seen and readable_end(path, open_document(path), follow=True) > 0:
                report = read(path, config, model, on_progress, follow=True)
                if not reported and mark_in_use is not None:
                    held.enter_context(mark_in_use(report.doc_id))
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


FOLLOWING, STOPPED, FAILED = "following", "stopped", "failed"


@dataclass
class FollowedLog:
    path: Path
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    status: str = FOLLOWING
    doc_id: str | None = None
    steps: int = 0  # growth steps read after the first look
    tokens: int = 0
    cycles: int = 0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    def snapshot(self) -> dict:
        return {
            "path": str(self.path),
            "status": self.status,
            "doc_id": self.doc_id,
            "steps": self.steps,
            "tokens": self.tokens,
            "cycles": self.cycles,
            "error": self.error,
            "warnings": list(self.warnings),
        }


class LogFollower:
    """Starts, stops and reports the followed files of one app."""

    def __init__(
        self,
        read: ReadFile,
        on_report: Callable[[ReadReport], None] | None = None,
        poll_seconds: float = 2.0,
        mark_in_use: MarkInUse | None = None,
    ) -> None:
        FollowSettings(poll_seconds=poll_seconds)  # validates the interval
        self.read = read
        self.mark_in_use = mark_in_use
        self.on_report = on_report  # e.g. the service forgetting its loaded pot: the next question sees the growth
        self.poll_seconds = poll_seconds
        self._logs: dict[str, FollowedLog] = {}
        self._lock = threading.Lock()

    def start(self, path: str, config: PotConfig, model: str) -> dict:
        """Follow `path` (a growing text file on this machine); ValueError with one line when it cannot be."""
        if not (path or "").strip():
            raise ValueError("type the path of a log file on this machine")
        target = Path(path.strip()).expanduser()
        if not target.is_file():
            raise ValueError(f"no file at {target}")
        check_followable(target)
        key = str(target.resolve())
        with self._lock:
            current = self._logs.get(key)
            if current is not None and current.status == FOLLOWING:
                raise ValueError(f"{target.name} is already being followed")
            followed = FollowedLog(Path(key))
            followed.thread = threading.Thread(
                target=self._run, args=(followed, config, model), name=f"infinipot-follow-{target.name}", daemon=True
            )
            self._logs[key] = followed
        followed.thread.start()
        return followed.snapshot()

    def stop(self, path: str, timeout: float = 30.0) -> dict:
        """Stop following: a read in progress finishes and stores its pot first."""
        key = str(Path((path or "").strip()).expanduser().resolve())
        followed = self._logs.get(key)
        if followed is None:
            raise ValueError(f"{path!r} is not being followed")
        followed.stop.set()
        if followed.thread is not None:
            followed.thread.join(timeout)
        return followed.snapshot()

    def snapshots(self) -> list[dict]:
        return [followed.snapshot() for followed in self._logs.values()]

    def close(self) -> None:
        for followed in list(self._logs.values()):
            followed.stop.set()
        for followed in list(self._logs.values()):
            if followed.thread is not None:
                followed.thread.join(timeout=30)

    def _run(self, followed: FollowedLog, config: PotConfig, model: str) -> None:
        try:
            settings = FollowSettings(poll_seconds=self.poll_seconds)
            report = lambda r: self._reported(followed, r)  # noqa: E731
            follow(
                self.read, followed.path, config, model, settings, report, followed.stop, mark_in_use=self.mark_in_use
            )
            followed.status = STOPPED
        except USER_ERRORS as exc:
            followed.error, followed.status = one_line(exc), FAILED
        except Exception as exc:  # a bug, not the user's doing: say what happened instead of dying silently
            log.exception("following %s failed", followed.path)
            followed.error, followed.status = f"unexpected error: {type(exc).__name__}: {one_line(exc)}", FAILED

    def _reported(self, followed: FollowedLog, report: ReadReport) -> None:
        followed.doc_id = report.doc_id
        followed.tokens = report.tokens
        followed.cycles = report.cycles
        followed.steps += 0 if report.reused else 1
        followed.warnings = list(report.warnings)
        if self.on_report is not None:
            self.on_report(report)
