"""Documents in use by running processes (an answer being written, a log being followed), seen by every process.

A delete checks here first, so the CLI's `delete` and the app see the same in-use state. A use whose process
died (killed, crashed) does not count and is swept at the next look.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sqlite_utils import Database

from .db import write_transaction
from .errors import NotStored
from .liveness import is_running, this_process
from .records import now


@dataclass(frozen=True)
class DocumentUse:
    id: int
    document_id: str
    what: str
    pid: int
    process_started: float
    since: str


class DocumentUses:
    def __init__(self, db: Database) -> None:
        self.db = db

    def begin(self, document_id: str, what: str) -> int:
        """Mark the document in use by this process; NotStored when it is not (or no longer) stored. The look
        and the mark are one transaction, so a delete lands either before it (NotStored) or waits for `end`."""
        pid, started = this_process()
        with write_transaction(self.db):
            if self.db.execute("SELECT 1 FROM documents WHERE id = ?", [document_id]).fetchone() is None:
                raise NotStored(f"no document {document_id}")
            cursor = self.db.execute(
                "INSERT INTO document_uses (document_id, what, pid, process_started, since) VALUES (?, ?, ?, ?, ?)",
                [document_id, what, pid, started, now()],
            )
        return cursor.lastrowid

    def end(self, use_id: int) -> None:
        with write_transaction(self.db):
            self.db.execute("DELETE FROM document_uses WHERE id = ?", [use_id])

    def live(self, document_id: str) -> list[DocumentUse]:
        """The document's uses by processes that still run, oldest first; those of dead processes are removed."""
        rows = self.db.execute(
            "SELECT id, document_id, what, pid, process_started, since FROM document_uses "
            "WHERE document_id = ? ORDER BY id",
            [document_id],
        ).fetchall()
        uses = [DocumentUse(*row) for row in rows]
        dead = [use.id for use in uses if not is_running(use.pid, use.process_started)]
        if dead:
            with write_transaction(self.db):
                self.db.execute(f"DELETE FROM document_uses WHERE id IN ({', '.join('?' * len(dead))})", dead)
        return [use for use in uses if use.id not in dead]


class DocumentHold:
    """A document held in use until `release` (idempotent), for work whose end is not a block's end: an answer
    streamed to a reader who may stop reading, or drop the stream, at any piece."""

    def __init__(self, uses: DocumentUses | None, document_id: str, what: str) -> None:
        """`uses` None: nothing to mark (a read-only folder, where no delete can happen)."""
        self.document_id = document_id
        self._uses = uses
        self._use_id = None if uses is None else uses.begin(document_id, what)
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            use_id, self._use_id = self._use_id, None
        if use_id is not None and self._uses is not None:
            self._uses.end(use_id)
