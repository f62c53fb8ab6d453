"""Rows of the database as frozen dataclasses: documents, pots, checkpoints, conversations, messages."""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import ClassVar, Self

from .migrations import MESSAGE_ROLES, POT_STATUSES


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Record:
    """A row as a frozen dataclass: each field is the column of its name, the json_fields stored as JSON text."""

    json_fields: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def from_row(cls, row: dict) -> Self:
        values = {f.name: row[f.name] for f in fields(cls)}
        for name in cls.json_fields:
            if values[name] is not None:
                values[name] = json.loads(values[name])
        return cls(**values)


@dataclass(frozen=True)
class DocumentRecord(_Record):
    id: str
    content_hash: str
    name: str
    path: str | None
    size_bytes: int
    mtime_ns: int | None
    kind: str
    pages: int | None
    tokens: int | None
    location_map: str | None
    created_at: str
    updated_at: str

    def __post_init__(self) -> None:
        # The id is a prefix of the hash of the content first read; a log that grew keeps it.
        if len(self.id) < 16 or not all(c in "0123456789abcdef" for c in self.id):
            raise ValueError(f"document id {self.id!r} is not 16 or more hex digits")
        if self.size_bytes < 0:
            raise ValueError(f"size must not be negative, got {self.size_bytes}")


@dataclass(frozen=True)
class PotRecord(_Record):
    json_fields = ("config", "counters")

    id: int
    document_id: str
    model: str
    model_identity: str
    config: dict
    config_key: str
    method: str
    status: str
    error: str | None
    tokens_read: int
    cycles: int
    entries: int
    peak_entries: int
    counters: dict | None
    tensor_file: str | None
    tensor_checksum: str | None
    tensor_bytes: int | None
    read_seconds: float
    reader_pid: int | None
    reader_started: float | None
    created_at: str
    updated_at: str
    completed_at: str | None
    read_bytes: int | None  # bytes of the file read into the pot (None: read before this was recorded)
    prefix_sha256: str | None  # sha256 of those bytes: a file that only grew keeps them

    def __post_init__(self) -> None:
        if self.status not in POT_STATUSES:
            raise ValueError(f"pot status must be one of {', '.join(POT_STATUSES)}, got {self.status!r}")
        if self.status == "complete" and not (self.tensor_file and self.tensor_checksum and self.tensor_bytes):
            raise ValueError(f"complete pot {self.id} has no tensor file")
        if (self.read_bytes is None) != (self.prefix_sha256 is None):
            raise ValueError(f"pot {self.id} records read bytes and their hash together, or neither")


@dataclass(frozen=True)
class CheckpointRecord(_Record):
    json_fields = ("counters", "stream")

    id: int
    pot_id: int
    document_tokens: int
    counters: dict
    stream: dict
    tensor_file: str
    tensor_checksum: str
    tensor_bytes: int
    read_seconds: float
    created_at: str

    def __post_init__(self) -> None:
        if self.document_tokens < 0:
            raise ValueError(f"a checkpoint cannot have read {self.document_tokens} tokens")


@dataclass(frozen=True)
class ConversationRecord(_Record):
    id: int
    document_id: str
    pot_id: int | None
    title: str | None
    created_at: str


@dataclass(frozen=True)
class MessageRecord(_Record):
    json_fields = ("meta",)

    id: int
    conversation_id: int
    role: str
    content: str
    meta: dict | None
    created_at: str

    def __post_init__(self) -> None:
        if self.role not in MESSAGE_ROLES:
            raise ValueError(f"message role must be one of {', '.join(MESSAGE_ROLES)}, got {self.role!r}")
