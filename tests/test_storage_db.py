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


def _insert_document(db, doc_id: str) -> None:
    db.execute(
        "INSERT INTO documents (id, content_hash, name, size_bytes, kind, created_at, updated_at) "
        "VALUES (?, ?, 'a.txt', 3, 'text', 'now', 'now')",
        [doc_id, doc_id * 4],
    )


def _new_conversation(db, doc_id: str) -> int:
    with write_transaction(db):
        cursor = db.execute(
            "INSERT INTO conversations (document_id, title, created_at) VALUES (?, 'q', 'now')", [doc_id]
        )
        db.execute(
            "INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'user', 'hi', 'now')",
            [cursor.lastrowid],
        )
    return cursor.lastrowid


def test_conversation_and_message_ids_are_never_given_twice_after_a_delete(tmp_path):
    db = open_database(tmp_path / "data.db")
    with write_transaction(db):
        _insert_document(db, "ab")
    first, second = _new_conversation(db, "ab"), _new_conversation(db, "ab")
    last_message = db.execute("SELECT max(id) FROM messages").fetchone()[0]
    with write_transaction(db):
        db.execute("DELETE FROM documents WHERE id = 'ab'")  # the same file uploaded again gets the same id
        _insert_document(db, "ab")
    third = _new_conversation(db, "ab")
    assert third > second > first
    assert db.execute("SELECT min(id) FROM messages").fetchone()[0] > last_message


def test_the_migration_keeps_conversations_and_stops_reusing_ids(tmp_path):
    path = tmp_path / "old.db"
    db = open_database(path)
    # The database as the versions before 0005 left it: conversations without AUTOINCREMENT.
    applied = [m.name for m in MIGRATIONS._migrations]
    db.execute("DELETE FROM _sqlite_migrations WHERE name = '0005_ids_never_reused'")
    for table in ("messages", "conversations"):
        db.execute(f"DROP TABLE {table}")
    MIGRATIONS._migrations[1].fn(db)  # 0002 as it was applied then
    db.conn.commit()
    with write_transaction(db):
        _insert_document(db, "ab")
        _insert_document(db, "cd")
    kept = [_new_conversation(db, "ab"), _new_conversation(db, "cd"), _new_conversation(db, "cd")]
    with write_transaction(db):
        db.execute("DELETE FROM conversations WHERE id = ?", [kept[2]])
    assert _new_conversation(db, "cd") == kept[2]  # the defect: the deleted id is given again
    db.close()

    migrated = open_database(path)
    assert sorted(schema_version(migrated)) == sorted(applied)  # 0005 applied again, after the later ones
    rows = migrated.execute("SELECT id, document_id FROM conversations ORDER BY id").fetchall()
    assert rows == [(kept[0], "ab"), (kept[1], "cd"), (kept[2], "cd")]
    assert migrated.execute("SELECT count(*) FROM messages").fetchone()[0] == 3  # the deleted one's went with it
    assert migrated.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with write_transaction(migrated):
        migrated.execute("DELETE FROM conversations WHERE id = ?", [kept[2]])
    assert _new_conversation(migrated, "cd") == kept[2] + 1
    with write_transaction(migrated):
        migrated.execute("DELETE FROM documents WHERE id = 'ab'")  # cascades still hold after the rebuild
    assert migrated.execute("SELECT conversation_id FROM messages ORDER BY id").fetchall() == [
        (kept[1],),
        (kept[2] + 1,),
    ]
