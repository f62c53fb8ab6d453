"""The checkpoints table: the latest consistent state of a pot that is still being read."""

from __future__ import annotations

import json

from sqlite_utils import Database

from .db import write_transaction
from .records import CheckpointRecord, now


class Checkpoints:
    def __init__(self, db: Database) -> None:
        self.db = db

    def latest(self, pot_id: int) -> CheckpointRecord | None:
        rows = list(self.db["checkpoints"].rows_where("pot_id = ?", [pot_id], order_by="id DESC", limit=1))
        return CheckpointRecord.from_row(rows[0]) if rows else None

    def for_pot(self, pot_id: int) -> list[CheckpointRecord]:
        return [CheckpointRecord.from_row(r) for r in self.db["checkpoints"].rows_where("pot_id = ?", [pot_id])]

    def replace(
        self,
        pot_id: int,
        document_tokens: int,
        counters: dict,
        stream: dict,
        tensor_file: str,
        checksum: str,
        nbytes: int,
        summary: dict,
    ) -> list[str]:
        """Record a new checkpoint, drop the older ones and update the pot's progress, in one transaction.

        summary: tokens_read, cycles, entries, peak_entries, read_seconds. Returns the files now unused.
        """
        with write_transaction(self.db):
            old = [row[0] for row in self.db.execute("SELECT tensor_file FROM checkpoints WHERE pot_id = ?", [pot_id])]
            self.db.execute("DELETE FROM checkpoints WHERE pot_id = ?", [pot_id])
            stamp = now()
            self.db.execute(
                """
                INSERT INTO checkpoints (pot_id, document_tokens, counters, stream, tensor_file, tensor_checksum,
                                         tensor_bytes, read_seconds, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    pot_id,
                    document_tokens,
                    json.dumps(counters),
                    json.dumps(stream),
                    tensor_file,
                    checksum,
                    nbytes,
                    summary["read_seconds"],
                    stamp,
                ],
            )
            self.db.execute(
                """
                UPDATE pots SET tokens_read = ?, cycles = ?, entries = ?, peak_entries = ?, read_seconds = ?,
                    counters = ?, updated_at = ?
                WHERE id = ?
                """,
                [
                    summary["tokens_read"],
                    summary["cycles"],
                    summary["entries"],
                    summary["peak_entries"],
                    summary["read_seconds"],
                    json.dumps(counters),
                    stamp,
                    pot_id,
                ],
            )
        return old
