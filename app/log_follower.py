"""The app's "Follow a growing log": keep reading a text file on this machine as it grows, one thread per file.

Each followed file runs app.follow's loop (the same one as `infinipot read --follow`): the first look reads
the file (or reuses its stored pot), every later growth continues the stored pot with the appended lines
only. Uploads are copies and never grow, so the app follows a path on this machine instead. The page polls
`snapshots()` for each file's state; its document appears in the library like any other.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from infinipot.core.config import PotConfig

from .errors import USER_ERRORS, one_line
from .follow import FollowSettings, check_followable, follow
from .service import ReadReport

log = logging.getLogger(__name__)

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

    def __init__(self, backend, poll_seconds: float = 2.0) -> None:
        FollowSettings(poll_seconds=poll_seconds)  # validates the interval
        self.backend = backend
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
            self.backend.loaded_model(model)
            settings = FollowSettings(poll_seconds=self.poll_seconds)
            service = self.backend.service
            follow(
                service, followed.path, config, model, settings, lambda r: self._reported(followed, r), followed.stop
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
        self.backend.forget_pot(report.doc_id)  # the next question answers from the grown pot
