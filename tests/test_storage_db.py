"""The SQLite database: migrations from an empty file, WAL and busy timeout, constraints and cascades."""

import sqlite3

import pytest
from sqlite_utils import Migrations

from infinipot.storage.db import migrate, open_database, schema_version, write_transaction
from infinipot.storage.migrations import MIGRATIONS

TABLES = {"documents", "pots", "checkpoints", "conversations", "messages"}


def test_migrations_build_the_schema_on_an_empty_database(tmp_path):
    path = tmp_path / "fresh.db"
    assert not path.exists()
    db = open_database(path)
    assert TABLES <= set(db.table_names())
    assert schema_version(db) == [m.name for m in MIGRATIONS._migrations]
    assert schema_version(db)[0].startswith("0001")
    assert {"content_hash", "name", "size_bytes", "kind", "pages", "tokens"} <= set(db["documents"].columns_dict)
    pot_columns = set(db["pots"].columns_dict)
    assert {"model_identity", "config", "method", "status", "tokens_read", "cycles"} <= pot_columns
    assert {"tensor_file", "tensor_checksum", "read_seconds", "completed_at"} <= pot_columns
    assert db.journal_mode == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000


def test_reopening_applies_nothing_again_and_keeps_rows(tmp_path):
    path = tmp_path / "data.db"
    db = open_database(path)
    with write_transaction(db):
        db.execute(
            "INSERT INTO documents (id, content_hash, name, size_bytes, kind, created_at, updated_at) "
            "VALUES ('ab', 'abcd', 'a.txt', 3, 'text', 'now', 'now')"
        )
    db.close()
    again = open_database(path)
    assert again.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == len(MIGRATIONS._migrations)
    assert [row["name"] for row in again["documents"].rows] == ["a.txt"]


def test_a_failing_migration_applies_nothing(tmp_path):
    db = open_database(tmp_path / "data.db")
    extra = Migrations("experiment")

    @extra(name="0001_good")
    def good(db):
        db.execute("CREATE TABLE good (x INTEGER)")

    @extra(name="0002_bad")
    def bad(db):
        db.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("broken migration")

    with pytest.raises(RuntimeError, match="broken migration"):
        migrate(db, extra)
    assert "good" not in db.table_names() and "half_done" not in db.table_names()
    assert [m.name for m in extra.pending(db)] == ["0001_good", "0002_bad"]
    assert not db.conn.in_transaction


def test_constraints_and_cascades(tmp_path):
    db = open_database(tmp_path / "data.db")
    with write_transaction(db):
        db.execute(
            "INSERT INTO documents (id, content_hash, name, size_bytes, kind, created_at, updated_at) "
            "VALUES ('ab', 'abcd', 'a.txt', 3, 'text', 'now', 'now')"
        )
        db.execute(
            "INSERT INTO pots (document_id, model, model_identity, config, config_key, method, status, created_at,"
            " updated_at) VALUES ('ab', 'm', 'mi', '{}', 'k', 'infinipot', 'reading', 'now', 'now')"
        )
        db.execute(
            "INSERT INTO checkpoints (pot_id, document_tokens, counters, stream, tensor_file, tensor_checksum,"
            " tensor_bytes, read_seconds, created_at) VALUES (1, 5, '{}', '{}', 'f', 'c', 10, 1.0, 'now')"
        )
    with pytest.raises(sqlite3.IntegrityError):  # unknown status
        with write_transaction(db):
            db.execute("UPDATE pots SET status = 'half-done' WHERE id = 1")
    with pytest.raises(sqlite3.IntegrityError):  # a pot of no document
        with write_transaction(db):
            db.execute(
                "INSERT INTO pots (document_id, model, model_identity, config, config_key, method, status,"
                " created_at, updated_at) VALUES ('zz', 'm', 'mi', '{}', 'k2', 'infinipot', 'reading', 'now', 'now')"
            )
    assert db.execute("SELECT status FROM pots").fetchall() == [("reading",)]
    with write_transaction(db):
        db.execute("DELETE FROM documents WHERE id = 'ab'")
    assert db.execute("SELECT count(*) FROM pots").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
