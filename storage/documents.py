"""The documents table: one row per distinct content (sha256 of the bytes), whatever its path."""

from __future__ import annotations

from sqlite_utils import Database

from .db import write_transaction
from .records import DocumentRecord, now

# Characters of the content hash that make the doc_id users type (64 bits: collisions are not a concern).
DOC_ID_LENGTH = 16


class Documents:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _one(self, where: str, params: list) -> DocumentRecord | None:
        rows = list(self.db["documents"].rows_where(where, params, limit=1))
        return DocumentRecord.from_row(rows[0]) if rows else None

    def get(self, doc_id: str) -> DocumentRecord | None:
        return self._one("id = ?", [doc_id])

    def by_hash(self, content_hash: str) -> DocumentRecord | None:
        return self._one("content_hash = ?", [content_hash])

    def by_file(self, path: str, size_bytes: int, mtime_ns: int) -> DocumentRecord | None:
        """The document last read from `path`, if the file still has the size and mtime it had then."""
        return self._one("path = ? AND size_bytes = ? AND mtime_ns = ?", [path, size_bytes, mtime_ns])

    def with_prefix(self, prefix: str) -> list[DocumentRecord]:
        if not prefix or not all(c in "0123456789abcdef" for c in prefix.lower()):
            return []
        rows = self.db["documents"].rows_where("id LIKE ?", [prefix.lower() + "%"], order_by="id")
        return [DocumentRecord.from_row(row) for row in rows]

    def named(self, name: str) -> list[DocumentRecord]:
        """The documents with this name (as `list` shows it), oldest first."""
        rows = self.db["documents"].rows_where("name = ?", [name], order_by="created_at, id")
        return [DocumentRecord.from_row(row) for row in rows]

    def all(self) -> list[DocumentRecord]:
        return [DocumentRecord.from_row(row) for row in self.db["documents"].rows_where(order_by="created_at, id")]

    def record(
        self,
        content_hash: str,
        name: str,
        path: str | None,
        size_bytes: int,
        mtime_ns: int | None,
        kind: str,
        pages: int | None,
    ) -> DocumentRecord:
        """Insert the document, or refresh where it was seen last (the same content from a new path). A copy under
        another name keeps the name the library knows it by, as a duplicate upload does in other document apps:
        the entry a person chose is not renamed behind their back."""
        stamp = now()
        with write_transaction(self.db):
            doc_id = self.id_for(content_hash)
            self.db.execute(
                """
                INSERT INTO documents (id, content_hash, name, path, size_bytes, mtime_ns, kind, pages,
                                       created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET path = excluded.path,
                    size_bytes = excluded.size_bytes, mtime_ns = excluded.mtime_ns, kind = excluded.kind,
                    pages = excluded.pages, updated_at = excluded.updated_at
                """,
                [doc_id, content_hash, name, path, size_bytes, mtime_ns, kind, pages, stamp, stamp],
            )
        return self.get(doc_id)

    def id_for(self, content_hash: str) -> str:
        """The doc_id of this content: its stored document's, else the shortest free prefix of the hash (16+ digits).

        A grown log keeps the id of the content it was first read with, so a copy of that earlier content
        needs a longer prefix of its own hash.
        """
        known = self.by_hash(content_hash)
        if known is not None:
            return known.id
        for length in range(DOC_ID_LENGTH, len(content_hash) + 1):
            if self.get(content_hash[:length]) is None:
                return content_hash[:length]
        raise ValueError(f"no free document id for content {content_hash}")

    def last_read_from(self, path: str) -> DocumentRecord | None:
        """The document most recently read from `path` (whatever the file holds now)."""
        rows = list(self.db["documents"].rows_where("path = ?", [path], order_by="updated_at DESC, id", limit=1))
        return DocumentRecord.from_row(rows[0]) if rows else None

    def grew(self, doc_id: str, content_hash: str, size_bytes: int, mtime_ns: int | None) -> None:
        """The document's file grew at the end: it keeps its id, pots and conversations, with the new content."""
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE documents SET content_hash = ?, size_bytes = ?, mtime_ns = ?, updated_at = ? WHERE id = ?",
                [content_hash, size_bytes, mtime_ns, now(), doc_id],
            )

    def set_read(self, doc_id: str, tokens: int, location_map: str | None) -> None:
        with write_transaction(self.db):
            self.db.execute(
                "UPDATE documents SET tokens = ?, location_map = ?, updated_at = ? WHERE id = ?",
                [tokens, location_map, now(), doc_id],
            )

    def delete(self, doc_id: str) -> None:
        """Remove the row; pots, checkpoints, conversations and messages go with it (ON DELETE CASCADE)."""
        with write_transaction(self.db):
            self.db.execute("DELETE FROM documents WHERE id = ?", [doc_id])
