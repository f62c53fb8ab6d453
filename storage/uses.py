"""Documents in use by running processes (an answer being written, a log being followed), seen by every process.

A delete checks here first, so the CLI's `delete` and the app see the same in-use state. A use whose process
died (killed, crashed) does not count and is swept at the next look.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from .db import write_transaction
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
        pid, started = this_process()
        with write_transaction(self.db):
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
