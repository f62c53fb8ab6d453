"""Raw file access: a hashing sequential reader and the streamed document fingerprint."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .errors import IngestError

READ_CHUNK = 1 << 20


def describe_os_error(name: str, exc: OSError) -> str:
    """One-line user message for an OS error on ``name``."""
    if isinstance(exc, FileNotFoundError):
        return f"'{name}' was not found (was it moved or deleted?)"
    if isinstance(exc, IsADirectoryError):
        return f"'{name}' is a folder, not a file"
    if isinstance(exc, PermissionError):
        return f"'{name}' cannot be read: permission denied"
    return f"'{name}' cannot be read: {exc.strerror or exc}"


def special_file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is ("a named pipe (FIFO)"), from its st_mode; None for a regular
    file or a folder. Opening a FIFO blocks until something writes to it, so this is checked before any open."""
    kinds = (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((kind for test, kind in kinds if test(mode)), None)


def not_a_regular_file(name: str, kind: str) -> str:
    return f"'{name}' is {kind}, not a regular file; save what it gives to a file and read that"


def file_fingerprint(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of the file's raw bytes, read in chunks without parsing."""
    path = Path(path)
    try:
        _require_regular(path)
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        raise IngestError(describe_os_error(path.name, exc)) from None


def file_bytes(path: str | os.PathLike) -> tuple[bytes, str]:
    """The file's raw bytes and their SHA-256 hex digest (file_fingerprint's), read once: what is sent to a worker
    is then exactly what was fingerprinted, whatever happens to the file meanwhile."""
    path = Path(path)
    try:
        _require_regular(path)
        data = path.read_bytes()
    except OSError as exc:
        raise IngestError(describe_os_error(path.name, exc)) from None
    return data, hashlib.sha256(data).hexdigest()


def _require_regular(path: Path) -> None:
    kind = special_file_kind(path.stat().st_mode)
    if kind is not None:
        raise IngestError(not_a_regular_file(path.name, kind))


class RawReader:
    """Reads the first ``size`` bytes of a file once, front to back, hashing them on the way.

    Sequential readers (text, compressed text, HTML) read through it, so the fingerprint
    costs no second pass. Readers of random-access formats (PDF, DOCX, EPUB) parse the
    file by other means and call ``advance_to`` as they make progress, so hashing is spread
    over the pass and ``bytes_done`` doubles as progress.

    ``size`` is the size seen when the document was opened: a log that is still being
    written is read as the snapshot it was then. ``start`` skips bytes an earlier read of a
    growing log already covered (the hash then covers only the bytes read here).
    """

    def __init__(self, path: Path, size: int, name: str, *, hashing: bool = True, start: int = 0) -> None:
        self._name = name
        self._size = size
        self._hash = hashlib.sha256() if hashing else None
        self.bytes_done = start
        self.grew = False
        try:
            self._handle = open(path, "rb")
            self._handle.seek(start)
        except OSError as exc:
            raise IngestError(describe_os_error(name, exc)) from None

    def read(self, n: int = -1) -> bytes:
        left = self._size - self.bytes_done
        n = left if n is None or n < 0 else min(n, left)
        if n <= 0:
            return b""
        try:
            data = self._handle.read(n)
        except OSError as exc:
            raise IngestError(describe_os_error(self._name, exc)) from None
        if not data:
            raise IngestError(f"'{self._name}' got shorter while it was being read; try again")
        self.bytes_done += len(data)
        if self._hash is not None:
            self._hash.update(data)
        return data

    def readable(self) -> bool:
        return True

    def advance_to(self, position: int) -> None:
        """Hash (and skip) bytes up to ``position``; without hashing, just move the position."""
        position = min(position, self._size)
        if self._hash is None:
            self.bytes_done = max(self.bytes_done, position)
            return
        while self.bytes_done < position:
            self.read(min(READ_CHUNK, position - self.bytes_done))

    def finish(self) -> str | None:
        """Hash whatever is left of the snapshot and return the hex digest (None if not hashing)."""
        self.advance_to(self._size)
        try:
            self.grew = os.fstat(self._handle.fileno()).st_size > self._size
        except OSError:
            pass
        return self._hash.hexdigest() if self._hash is not None else None

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> RawReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
