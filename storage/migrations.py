"""Numbered schema migrations (sqlite-utils Migrations); append new ones, never edit an applied one."""

from __future__ import annotations

import sqlite3

from sqlite_utils import Database, Migrations

MIGRATIONS = Migrations("infinipot")

POT_STATUSES = ("reading", "complete", "failed")
MESSAGE_ROLES = ("user", "assistant")


@MIGRATIONS(name="0001_documents_pots_checkpoints")
def m0001(db: Database) -> None:
    _run_script(
        db,
        f"""
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,               -- first 16 hex digits of content_hash
            content_hash TEXT NOT NULL UNIQUE, -- sha256 of the file's bytes
            name TEXT NOT NULL,
            path TEXT,                         -- where it was last read from
            size_bytes INTEGER NOT NULL,
            mtime_ns INTEGER,                  -- with size and path: recognise the file without hashing it
            kind TEXT NOT NULL,
            pages INTEGER,
            tokens INTEGER,
            location_map TEXT,                 -- relative to the data folder
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE TABLE pots (
            id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a pot's folder is named by its id
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            model TEXT NOT NULL,               -- what was asked for: 'default', a folder, a hub id
            model_identity TEXT NOT NULL,      -- which weights: part of the reuse key
            config TEXT NOT NULL,              -- JSON of the pot settings that change its contents
            config_key TEXT NOT NULL,          -- sha256 of that JSON
            method TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in POT_STATUSES)})),
            error TEXT,
            tokens_read INTEGER NOT NULL DEFAULT 0,
            cycles INTEGER NOT NULL DEFAULT 0,
            entries INTEGER NOT NULL DEFAULT 0,
            peak_entries INTEGER NOT NULL DEFAULT 0,
            counters TEXT,                     -- JSON of the pot's counters (next position, prefix length...)
            tensor_file TEXT,                  -- relative to the data folder; set when complete
            tensor_checksum TEXT,
            tensor_bytes INTEGER,
            read_seconds REAL NOT NULL DEFAULT 0,  -- reading time over all sessions (resumes included)
            reader_pid INTEGER,                -- the process reading it now, with its start time
            reader_started REAL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            completed_at TEXT,
            UNIQUE (document_id, model_identity, config_key)
        );
        CREATE TABLE checkpoints (
            id INTEGER PRIMARY KEY,
            pot_id INTEGER NOT NULL REFERENCES pots(id) ON DELETE CASCADE,
            document_tokens INTEGER NOT NULL,  -- tokens of the document's stream already read into it
            counters TEXT NOT NULL,
            stream TEXT NOT NULL,              -- JSON: how the stream was chunked, to continue identically
            tensor_file TEXT NOT NULL,
            tensor_checksum TEXT NOT NULL,
            tensor_bytes INTEGER NOT NULL,
            read_seconds REAL NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX checkpoints_pot ON checkpoints(pot_id);
        """,
    )


@MIGRATIONS(name="0002_conversations_messages")
def m0002(db: Database) -> None:
    _run_script(
        db,
        f"""
        CREATE TABLE conversations (
            id INTEGER PRIMARY KEY,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            pot_id INTEGER REFERENCES pots(id) ON DELETE SET NULL,
            title TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX conversations_document ON conversations(document_id);
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ({", ".join(repr(r) for r in MESSAGE_ROLES)})),
            content TEXT NOT NULL,
            meta TEXT,                         -- JSON: timings, the pot used
            created_at TEXT NOT NULL
        );
        CREATE INDEX messages_conversation ON messages(conversation_id);
        """,
    )


@MIGRATIONS(name="0003_pot_read_prefix")
def m0003(db: Database) -> None:
    # Growing logs: what of the file a pot has read, so a file that only grew continues the pot. A grown
    # document keeps its id (the hash prefix of the content it was first read with) while its content_hash
    # follows the file. (Numbered after 0002; renumber at merge if another branch adds a 0003.)
    _run_script(
        db,
        """
        ALTER TABLE pots ADD COLUMN read_bytes INTEGER;     -- bytes of the file read into the pot
        ALTER TABLE pots ADD COLUMN prefix_sha256 TEXT;     -- sha256 of those bytes
        """,
    )


@MIGRATIONS(name="0004_document_uses")
def m0004(db: Database) -> None:
    # Who is using a document right now (answering from it, following it), so a delete from another process
    # waits its turn instead of pulling the rows from under an answer about to be recorded. No foreign key:
    # a use outlives nothing, and rows of dead processes are swept by the next look.
    _run_script(
        db,
        """
        CREATE TABLE document_uses (
            id INTEGER PRIMARY KEY,
            document_id TEXT NOT NULL,
            what TEXT NOT NULL,                -- 'answering a question', 'following the file'
            pid INTEGER NOT NULL,
            process_started REAL NOT NULL,     -- with pid: the process, even after its pid is reused
            since TEXT NOT NULL
        );
        CREATE INDEX document_uses_document ON document_uses(document_id);
        """,
    )


@MIGRATIONS(name="0005_ids_never_reused")
def m0005(db: Database) -> None:
    # A conversation's id was the highest free one, so after a delete the next conversation took the deleted
    # one's id, and a session still holding that id wrote into a stranger's conversation. AUTOINCREMENT never
    # gives an id twice. SQLite cannot add it to a table, so both tables are rebuilt (its documented
    # procedure; migrate() runs this with foreign keys off and checks them before committing). Ids of rows
    # deleted before this migration are unknown, so the sequence starts above the highest id still stored.
    _run_script(
        db,
        f"""
        CREATE TABLE conversations_rebuilt (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            pot_id INTEGER REFERENCES pots(id) ON DELETE SET NULL,
            title TEXT,
            created_at TEXT NOT NULL
        );
        INSERT INTO conversations_rebuilt (id, document_id, pot_id, title, created_at)
            SELECT id, document_id, pot_id, title, created_at FROM conversations ORDER BY id;
        DROP TABLE conversations;
        ALTER TABLE conversations_rebuilt RENAME TO conversations;
        CREATE INDEX conversations_document ON conversations(document_id);
        CREATE TABLE messages_rebuilt (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ({", ".join(repr(r) for r in MESSAGE_ROLES)})),
            content TEXT NOT NULL,
            meta TEXT,                         -- JSON: timings, the pot used
            created_at TEXT NOT NULL
        );
        INSERT INTO messages_rebuilt (id, conversation_id, role, content, meta, created_at)
            SELECT id, conversation_id, role, content, meta, created_at FROM messages ORDER BY id;
        DROP TABLE messages;
        ALTER TABLE messages_rebuilt RENAME TO messages;
        CREATE INDEX messages_conversation ON messages(conversation_id);
        """,
    )


def _run_script(db: Database, script: str) -> None:
    """Run statements one by one: sqlite3's executescript would COMMIT first and break the migration's transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
    if statement.strip():
        raise ValueError(f"incomplete SQL statement in a migration: {statement.strip()[:60]}")


@MIGRATIONS(name="0006_passages_fts5")
def m0006(db: Database) -> None:
    # The words of every stored document, in passages of a few dozen tokens, for questions to the whole library:
    # SQLite's FTS5 ranks them with bm25 without a scan of every document's tokens. A passage names its document
    # and its tokens [first_token, end_token) in that document's token ids for the model `model_identity`. FTS5
    # tables take no foreign keys, so a trigger keeps the index in step with deleted documents.
    _run_script(
        db,
        """
        CREATE VIRTUAL TABLE passages USING fts5(
            text,
            document_id UNINDEXED,
            model_identity UNINDEXED,
            first_token UNINDEXED,
            end_token UNINDEXED,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TABLE passage_sets (
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            model_identity TEXT NOT NULL,
            content_hash TEXT NOT NULL,        -- the document content the passages were cut from
            passages INTEGER NOT NULL,
            PRIMARY KEY (document_id, model_identity)
        );
        CREATE TRIGGER passages_follow_documents AFTER DELETE ON documents BEGIN
            DELETE FROM passages WHERE document_id = old.id;
        END;
        """,
    )
