"""Storage errors: a damaged tensor file, a document or conversation that is not stored, and the faults a user can
cause (a full disk, a read-only data folder, a delete while the document is in use), each with a one-line message."""

import errno
import sqlite3


class StorageError(Exception):
    """Base of storage errors whose message can be shown to the user as one line."""


class DamagedFile(StorageError):
    """A tensor file that is missing, truncated or fails its checksum; `reason` says which, in a few words."""

    def __init__(self, path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotStored(StorageError):
    """A document, pot or conversation id that names nothing in the database."""


class WriteFailed(StorageError):
    """A write to the data folder failed for a reason the user can fix: a full disk, a quota, a permission."""


class ReadOnlyHome(StorageError):
    """The data folder cannot be written; only what reads stored data works."""


class InUse(StorageError):
    """The document is being read or answered from by a running process, so it cannot be deleted now."""


_NO_SPACE = {
    errno.ENOSPC: "no space left",
    errno.EDQUOT: "no space left (the disk quota is used up)",
    errno.EFBIG: "no space left (the file size limit was reached)",
}
_NOT_ALLOWED = {errno.EACCES, errno.EPERM, errno.EROFS}


def describe_write_error(exc: OSError, doing: str, then: str) -> str:
    """One line for an OSError met while `doing` ("saving the pot for notes.txt"), ending in what to do once it is
    fixed (`then`: "run read again to resume")."""
    if exc.errno in _NO_SPACE:
        return f"{_NO_SPACE[exc.errno]} while {doing}; free space and {then}"
    if exc.errno in _NOT_ALLOWED:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"no permission to write while {doing}{where}; make the data folder writable and {then}"
    return f"{exc.strerror or exc} while {doing}; {then}"


def describe_database_error(exc: sqlite3.Error, doing: str, then: str) -> str | None:
    """One line for a database error a user can cause (a full disk, a read-only folder) met while `doing`, as
    describe_write_error words it; None for any other error (a bug, shown as one)."""
    text = str(exc).lower()
    if "disk is full" in text:
        return f"no space left while {doing} (the database could not grow); free space and {then}"
    if "disk i/o error" in text:  # what SQLite reports for a write refused by a file size limit, or a failing disk
        return f"the database could not be written while {doing} (disk I/O error: is the disk full?); {then}"
    if "readonly" in text or "read-only" in text:
        return f"the data folder is read-only, which {doing} needs to write to; make it writable and {then}"
    if "unable to open database file" in text:
        return f"the database could not be opened while {doing}; check that the data folder can be read and {then}"
    return None


def describe_fault(exc: BaseException, doing: str, then: str) -> str | None:
    """One line for an OSError or a database error the user's machine caused, worded by describe_write_error or
    describe_database_error; None when `exc` is neither kind (a bug, shown as one)."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return describe_write_error(exc, doing, then)
    if isinstance(exc, sqlite3.OperationalError):
        return describe_database_error(exc, doing, then)
    return None
