"""Conversations and their messages in one JSON file: a stop-gap until the storage rewrite (issue 5) lands.

Its shape follows storage.conversations in that rewrite (integer conversation ids, messages with role,
content and meta, a question and its answer appended together), so app/backend.py switches to the
database by changing the calls that use this class and nothing else.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

from infinipot.storage.atomic import write_atomically

ROLES = ("user", "assistant")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class ChatHistory:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict:
        if not self.path.is_file():
            return {"next_id": 1, "conversations": {}}
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {"next_id": 1, "conversations": {}}

    def _save(self, data: dict) -> None:
        write_atomically(self.path, lambda p: p.write_text(json.dumps(data), encoding="utf-8"))

    def create(self, document_id: str, title: str) -> int:
        with self._lock:
            data = self._load()
            conversation_id = data["next_id"]
            data["next_id"] += 1
            data["conversations"][str(conversation_id)] = {
                "id": conversation_id,
                "document_id": document_id,
                "title": title,
                "created_at": _now(),
                "messages": [],
            }
            self._save(data)
        return conversation_id

    def document_of(self, conversation_id: int) -> str | None:
        conversation = self._load()["conversations"].get(str(conversation_id))
        return conversation["document_id"] if conversation else None

    def for_document(self, document_id: str) -> list[dict]:
        """Conversations about a document, oldest first, without their messages."""
        found = [c for c in self._load()["conversations"].values() if c["document_id"] == document_id]
        return [{k: c[k] for k in ("id", "document_id", "title", "created_at")} for c in sorted(found, key=_id)]

    def append_many(self, conversation_id: int, messages: list[tuple[str, str, dict | None]]) -> None:
        """Append messages together (a question and its answer are stored both or neither)."""
        for role, _, _ in messages:
            if role not in ROLES:
                raise ValueError(f"message role must be one of {', '.join(ROLES)}, got {role!r}")
        with self._lock:
            data = self._load()
            conversation = data["conversations"].get(str(conversation_id))
            if conversation is None:
                raise ValueError(f"no conversation {conversation_id}")
            stamp = _now()
            conversation["messages"] += [
                {"role": role, "content": content, "meta": meta, "created_at": stamp}
                for role, content, meta in messages
            ]
            self._save(data)

    def messages(self, conversation_id: int) -> list[dict]:
        conversation = self._load()["conversations"].get(str(conversation_id))
        return list(conversation["messages"]) if conversation else []

    def delete_document(self, document_id: str) -> None:
        with self._lock:
            data = self._load()
            data["conversations"] = {
                key: c for key, c in data["conversations"].items() if c["document_id"] != document_id
            }
            self._save(data)


def _id(conversation: dict) -> int:
    return conversation["id"]
