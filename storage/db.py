"""The SQLite database: opened in WAL mode with a busy timeout, numbered migrations applied on open."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database, Migrations

from .errors import ReadOnlyHome
from .migrations import MIGRATIONS

# How long a writer waits for another process's write transaction before "database is locked".
# Writes here are short (a few rows), so 30 s only matters for a stalled disk.
BUSY_TIMEOUT_SECONDS = 30.0

# One lock per open Database: the UI may write from several threads through one connection.
_LOCKS: dict[int, threading.RLock] = {}


def open_database(path: Path, read_only: bool = False) -> Database:
    """Open (creating if needed) the database at `path` and bring its schema up to date.

    `read_only`: the data folder cannot be written (open_read_only); nothing is created or migrated.
    """
    if read_only:
        return open_read_only(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    db = Database(conn, execute_plugins=False)
    db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
    db.execute("PRAGMA foreign_keys = ON")  # per connection in SQLite; deletes cascade to pots and messages
    db.enable_wal()  # readers never block the writer and the writer never blocks readers
    # FULL: a commit is on disk when it returns. Commits happen once a minute at most while reading,
    # and a lost commit would point the database at a checkpoint file that was already replaced.
    db.execute("PRAGMA synchronous = FULL")
    migrate(db)
    return db


def open_read_only(path: Path) -> Database:
    """The database of a folder nobody may write to: listing and answering from stored pots still work.

    SQLite opens a WAL database read-only only while its -shm file exists or can be created; in a folder that
    cannot be written and after a clean close (which removes it) neither holds, so the file is then opened as
    immutable, which is true of it while the folder stays read-only. No database yet: an empty one in memory.
    """
    if not path.is_file():
        db = Database(sqlite3.connect(":memory:", check_same_thread=False), execute_plugins=False)
        migrate(db)
        return db
    for flags in ("mode=ro", "mode=ro&immutable=1"):
        uri = f"{path.as_uri()}?{flags}"
        conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            conn.close()
            continue
        db = Database(conn, execute_plugins=False)
        if MIGRATIONS.pending(db):
            db.close()
            raise ReadOnlyHome(
                f"the database in {path.parent} was made by an older version and must be upgraded, "
                "but the folder is read-only; make it writable and try again"
            )
        return db
    raise ReadOnlyHome(f"the database in {path.parent} cannot be opened, even read-only")


def migrate(db: Database, migrations: Migrations = MIGRATIONS) -> None:
    """Apply pending migrations under a write lock, so two processes opening a new database never race.

    All pending migrations commit together or not at all: a failing one leaves the schema as it was.
    """
    if not migrations.pending(db):
        return
    # Foreign keys off while migrating, so a migration may rebuild a table (SQLite's procedure: a DROP TABLE
    # would otherwise cascade into the rows that refer to it); they are checked before the commit instead.
    # The pragma is a no-op inside a transaction, hence outside it.
    enforced = db.execute("PRAGMA foreign_keys").fetchone()[0]
    db.execute("PRAGMA foreign_keys = OFF")
    try:
        with write_transaction(db):
            migrations.apply(db)  # each migration runs in a savepoint inside this transaction
            broken = db.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"a migration left {len(broken)} rows referring to missing rows, first {broken[0]}")
    finally:
        db.execute(f"PRAGMA foreign_keys = {'ON' if enforced else 'OFF'}")


def schema_version(db: Database) -> list[str]:
    """Names of the applied migrations, oldest first."""
    return [migration.name for migration in MIGRATIONS.applied(db)]


@contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """BEGIN IMMEDIATE ... COMMIT: takes the write lock up front.

    A deferred transaction that reads first and writes later can fail at once with "database is locked"
    when another process writes in between; IMMEDIATE waits for the busy timeout instead.
    """
    lock = _LOCKS.setdefault(id(db.conn), threading.RLock())
    with lock:
        if db.conn.in_transaction:  # nested: the outer transaction commits
            with db.atomic():
                yield db
            return
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.rollback()
            raise
        db.conn.execute("COMMIT")


def close_database(db: Database) -> None:
    _LOCKS.pop(id(db.conn), None)
    db.close()
