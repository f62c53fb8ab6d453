"""The pots table: one pot per (document, model weights, pot settings), with its reading status."""

from __future__ import annotations

import hashlib
import json

from sqlite_utils import Database

from .db import write_transaction
from .errors import StorageError
from .liveness import is_running
from .records import PotRecord, now


class ReadInProgress(StorageError):
    """Another running process is reading the same document with the same settings."""


def config_key(config: dict) -> str:
    """The reuse key of pot settings: sha256 of their canonical JSON."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


class Pots:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _many(self, where: str, params: list, order_by: str = "id") -> list[PotRecord]:
        return [PotRecord.from_row(row) for row in self.db["pots"].rows_where(where, params, order_by=order_by)]

    def get(self, pot_id: int) -> PotRecord | None:
        found = self._many("id = ?", [pot_id])
        return found[0] if found else None

    def find(self, document_id: str, model_identity: str, config: dict) -> PotRecord | None:
        found = self._many(
            "document_id = ? AND model_identity = ? AND config_key = ?",
            [document_id, model_identity, config_key(config)],
        )
        return found[0] if found else None

    def for_document(self, document_id: str) -> list[PotRecord]:
        return self._many("document_id = ?", [document_id])

    def complete_by_document(self) -> dict[str, list[PotRecord]]:
        """Every complete pot, grouped by its document, in one query (a library question looks at them all)."""
        grouped: dict[str, list[PotRecord]] = {}
        for pot in self._many("status = 'complete'", []):
            grouped.setdefault(pot.document_id, []).append(pot)
        return grouped

    def latest_complete(self, document_id: str) -> PotRecord | None:
        found = self._many(
            "document_id = ? AND status = 'complete'", [document_id], order_by="completed_at DESC, id DESC"
        )
        return found[0] if found else None

    def claim(
        self,
        document_id: str,
        model: str,
        model_identity: str,
        config: dict,
        method: str,
        reader: tuple[int, float],
        keep_progress: bool,
    ) -> tuple[PotRecord, list[str]]:
        """Mark the pot `reading` by `reader` (a new row, or the existing one), in one transaction.

        keep_progress: an interrupted read's checkpoints stay (to resume from); otherwise the row starts over.
        Returns the row and the tensor files it no longer references (the caller deletes them after commit).
        Raises ReadInProgress when another live process holds the row.
        """
        key = config_key(config)
        stamp = now()
        with write_transaction(self.db):
            existing = self.find(document_id, model_identity, config)
            if existing is None:
                cursor = self.db.execute(
                    """
                    INSERT INTO pots (document_id, model, model_identity, config, config_key, method, status,
                                      reader_pid, reader_started, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, 'reading', ?, ?, ?, ?)
                    """,
                    [
                        document_id,
                        model,
                        model_identity,
                        json.dumps(config, sort_keys=True),
                        key,
                        method,
                        *reader,
                        stamp,
                        stamp,
                    ],
                )
                return self.get(cursor.lastrowid), []
            holder = (existing.reader_pid, existing.reader_started)
            if existing.status == "reading" and holder != reader and is_running(*holder):
                raise ReadInProgress(
                    f"this document is already being read with these settings by process {existing.reader_pid}; "
                    "wait for it to finish"
                )
            unused = [existing.tensor_file] if existing.tensor_file else []
            resume = keep_progress and existing.status == "reading"
            if not resume:
                unused += self._drop_checkpoints(existing.id)
            self.db.execute(
                f"""
                UPDATE pots SET model = ?, status = 'reading', error = NULL, reader_pid = ?, reader_started = ?,
                    tensor_file = NULL, tensor_checksum = NULL, tensor_bytes = NULL, completed_at = NULL,
                    {"" if resume else "tokens_read = 0, cycles = 0, entries = 0, peak_entries = 0, read_seconds = 0,"}
                    updated_at = ?
                WHERE id = ?
                """,
                [model, *reader, stamp, existing.id],
            )
            return self.get(existing.id), unused

    def complete(
        self,
        pot_id: int,
        tensor_file: str,
        checksum: str,
        nbytes: int,
        counters: dict,
        summary: dict,
        read_prefix: tuple[int, str] | None = None,
    ) -> list[str]:
        """Record the finished pot and drop its checkpoints in one transaction; returns the files to delete.

        summary: tokens_read, cycles, entries, peak_entries, read_seconds. read_prefix: the bytes of the
        file that were read and their sha256.
        """
        read_bytes, prefix_sha256 = read_prefix or (None, None)
        with write_transaction(self.db):
            unused = self._drop_checkpoints(pot_id)
            stamp = now()
            self.db.execute(
                """
                UPDATE pots SET status = 'complete', error = NULL, tensor_file = ?, tensor_checksum = ?,
                    tensor_bytes = ?, counters = ?, tokens_read = ?, cycles = ?, entries = ?, peak_entries = ?,
                    read_seconds = ?, reader_pid = NULL, reader_started = NULL, updated_at = ?, completed_at = ?,
                    read_bytes = ?, prefix_sha256 = ?
                WHERE id = ?
                """,
                [
                    tensor_file,
                    checksum,
                    nbytes,
                    json.dumps(counters),
                    summary["tokens_read"],
                    summary["cycles"],
                    summary["entries"],
                    summary["peak_entries"],
                    summary["read_seconds"],
                    stamp,
                    stamp,
                    read_bytes,
                    prefix_sha256,
                    pot_id,
                ],
            )
        return unused

    def fail(self, pot_id: int, reason: str) -> list[str]:
        """Status failed with the reason; its checkpoints go (a failed read is not resumed)."""
        with write_transaction(self.db):
            unused = self._drop_checkpoints(pot_id)
            self.db.execute(
                "UPDATE pots SET status = 'failed', error = ?, reader_pid = NULL, reader_started = NULL, "
                "updated_at = ? WHERE id = ?",
                [reason, now(), pot_id],
            )
        return unused

    def release(self, pot_id: int, note: str | None = None) -> None:
        """The reader stopped (interrupted) but its checkpoints stay for the next `read` to resume from."""
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE pots SET reader_pid = NULL, reader_started = NULL, error = ?, updated_at = ? WHERE id = ?",
                [note, now(), pot_id],
            )

    def mark_damaged(self, pot_id: int, reason: str) -> None:
        """A complete pot whose file failed its check: failed, so nothing trusts the file again."""
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE pots SET status = 'failed', error = ?, updated_at = ? WHERE id = ? AND status = 'complete'",
                [f"stored pot damaged: {reason}", now(), pot_id],
            )

    def drop_checkpoints(self, pot_id: int) -> list[str]:
        with write_transaction(self.db):
            return self._drop_checkpoints(pot_id)

    def _drop_checkpoints(self, pot_id: int) -> list[str]:
        files = [row[0] for row in self.db.execute("SELECT tensor_file FROM checkpoints WHERE pot_id = ?", [pot_id])]
        self.db.execute("DELETE FROM checkpoints WHERE pot_id = ?", [pot_id])
        return files
