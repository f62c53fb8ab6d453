"""Conversations about a document and their messages, so a chat's history survives restarts."""

from __future__ import annotations

import json

from sqlite_utils import Database

from .db import write_transaction
from .errors import NotStored
from .records import ConversationRecord, MessageRecord, now


class Conversations:
    def __init__(self, db: Database) -> None:
        self.db = db

    def create(self, document_id: str, pot_id: int | None = None, title: str | None = None) -> ConversationRecord:
        with write_transaction(self.db):
            cursor = self.db.execute(
                "INSERT INTO conversations (document_id, pot_id, title, created_at) VALUES (?, ?, ?, ?)",
                [document_id, pot_id, title, now()],
            )
        return self.get(cursor.lastrowid)

    def get(self, conversation_id: int) -> ConversationRecord:
        rows = list(self.db["conversations"].rows_where("id = ?", [conversation_id], limit=1))
        if not rows:
            raise NotStored(f"no conversation {conversation_id}")
        return ConversationRecord.from_row(rows[0])

    def for_document(self, document_id: str) -> list[ConversationRecord]:
        rows = self.db["conversations"].rows_where("document_id = ?", [document_id], order_by="id")
        return [ConversationRecord.from_row(row) for row in rows]

    def append(self, conversation_id: int, role: str, content: str, meta: dict | None = None) -> MessageRecord:
        return self.append_many(conversation_id, [(role, content, meta)])[0]

    def append_many(self, conversation_id: int, messages: list[tuple[str, str, dict | None]]) -> list[MessageRecord]:
        """Append messages in one transaction (a question and its answer are stored together or not at all)."""
        self.get(conversation_id)
        ids = []
        with write_transaction(self.db):
            for role, content, meta in messages:
                MessageRecord(0, conversation_id, role, content, meta, "")  # validates the role before writing
                cursor = self.db.execute(
                    "INSERT INTO messages (conversation_id, role, content, meta, created_at) VALUES (?, ?, ?, ?, ?)",
                    [conversation_id, role, content, None if meta is None else json.dumps(meta), now()],
                )
                ids.append(cursor.lastrowid)
        return [m for m in self.messages(conversation_id) if m.id in ids]

    def messages(self, conversation_id: int) -> list[MessageRecord]:
        rows = self.db["messages"].rows_where("conversation_id = ?", [conversation_id], order_by="id")
        return [MessageRecord.from_row(row) for row in rows]
