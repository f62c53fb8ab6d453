"""The library's word index: every stored document's text in passages, searched with SQLite FTS5 and bm25.

A passage is a few dozen tokens of one document, with where they lie in that document's token ids for one
model. The app cuts the passages (it has the tokenizer); storage keeps them, replaces a document's set in one
transaction, and ranks passages for a query. Deleting a document removes its passages (a trigger, migration 6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlite_utils import Database

from .db import write_transaction

# Words FTS5 would take for its own syntax (AND, OR, NOT, NEAR) are quoted like every other word.
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class PassageHit:
    document_id: str
    first_token: int
    end_token: int
    text: str
    score: float  # bm25, higher is better (FTS5's own bm25() is lower-is-better; its sign is turned)


def match_query(text: str) -> str:
    """An FTS5 query that matches passages holding any of the text's words, each quoted (no operator
    syntax reaches FTS5 from a user's question); empty when the text has no words."""
    words = dict.fromkeys(word.lower() for word in _WORD.findall(text))
    return " OR ".join(f'"{word}"' for word in words)


class Passages:
    def __init__(self, db: Database) -> None:
        self.db = db

    def replace(
        self, document_id: str, model_identity: str, content_hash: str, passages: list[tuple[int, int, str]]
    ) -> None:
        """The document's passages for this model become `passages`, (first_token, end_token, text) each."""
        with write_transaction(self.db):
            self.db.execute(
                "DELETE FROM passages WHERE document_id = ? AND model_identity = ?", [document_id, model_identity]
            )
            self.db.conn.executemany(
                "INSERT INTO passages (text, document_id, model_identity, first_token, end_token) "
                "VALUES (?, ?, ?, ?, ?)",
                [(text, document_id, model_identity, first, end) for first, end, text in passages],
            )
            self.db.execute(
                "INSERT OR REPLACE INTO passage_sets (document_id, model_identity, content_hash, passages) "
                "VALUES (?, ?, ?, ?)",
                [document_id, model_identity, content_hash, len(passages)],
            )

    def indexed(self, model_identity: str) -> dict[str, str]:
        """doc_id -> content hash of every document whose passages for this model are in the index."""
        rows = self.db.execute(
            "SELECT document_id, content_hash FROM passage_sets WHERE model_identity = ?", [model_identity]
        )
        return dict(rows.fetchall())

    def count(self, document_id: str | None = None) -> int:
        if document_id is None:
            return self.db.execute("SELECT count(*) FROM passages").fetchone()[0]
        return self.db.execute("SELECT count(*) FROM passages WHERE document_id = ?", [document_id]).fetchone()[0]

    def search(
        self, text: str, model_identity: str, limit: int = 40, documents: list[str] | None = None
    ) -> list[PassageHit]:
        """The passages best matching the text's words (bm25), best first; among `documents` when given."""
        query = match_query(text)
        if not query or limit < 1:
            return []
        where = "passages MATCH ? AND model_identity = ?"
        params: list = [query, model_identity]
        if documents is not None:
            if not documents:
                return []
            where += f" AND document_id IN ({', '.join('?' for _ in documents)})"
            params += list(documents)
        rows = self.db.execute(
            f"SELECT document_id, first_token, end_token, text, bm25(passages) AS rank FROM passages "
            f"WHERE {where} ORDER BY rank LIMIT ?",
            [*params, limit],
        )
        return [PassageHit(doc, int(first), int(end), text, -float(rank)) for doc, first, end, text, rank in rows]
