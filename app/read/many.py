"""Reading a whole library: every file under folders, paths and globs, one after another or on workers.

A document already read is reused at once; a file that cannot be read gets its one line and the rest go on; a
stop (Ctrl-C) ends after the pieces under way, and the next run continues: finished documents are reused and a
partly read one resumes from its checkpoint. Progress is over the library: documents done of all, tokens, the
time left and the files being read. The reading itself is done here (`read_here`) or by Ray workers
(app/read/workers.py); either way this process alone writes the database.
"""

from __future__ import annotations

import glob
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.memory_trim import return_freed_memory
from infinipot.app.read.file_reader import FileChangedWhileRead
from infinipot.app.read.report import ReadReport
from infinipot.core.errors import InfiniPotError
from infinipot.ingest import IngestError
from infinipot.storage.errors import StorageError

# What a file that cannot be read raises: its one line is given, and the library goes on.
FILE_ERRORS = (IngestError, InfiniPotError, DocumentNotFound, StorageError, ValueError, OSError, sqlite3.Error)


def library_files(paths: list[str]) -> tuple[list[Path], list[tuple[str, str]]]:
    """(the files named, in order and each once; (path, why) for each path that names none).

    A folder gives every file under it (hidden ones and those in hidden folders left out), a glob the files it
    matches; a file is taken as it is, whatever its kind (reading it then says whether it is a document)."""
    files: dict[Path, None] = {}
    missing = []
    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            found = [p for p in sorted(path.rglob("*")) if p.is_file() and not _hidden(p.relative_to(path))]
            if not found:
                missing.append((given, "the folder holds no files"))
            files.update(dict.fromkeys(found))
        elif path.is_file():
            files[path] = None
        elif glob.has_magic(given):
            found = [Path(p) for p in sorted(glob.glob(str(path), recursive=True)) if Path(p).is_file()]
            if not found:
                missing.append((given, "no file matches it"))
            files.update(dict.fromkeys(found))
        else:
            missing.append((given, "no such file or folder"))
    return list(files), missing


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


@dataclass
class LibraryProgress:
    """Where a library read stands: documents done of all, tokens read, the files under way."""

    total: int
    total_bytes: int
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    read: int = 0
    reused: int = 0
    failed: int = 0
    tokens: int = 0  # of the documents done (read or reused)
    bytes_read: int = 0  # of the documents read here (not reused), for the time left
    read_seconds: float = 0.0
    bytes_done: int = 0
    current: dict[str, int] = field(default_factory=dict)  # name -> tokens read so far

    def finished(self, size: int, report: ReadReport | None) -> None:
        self.done += 1
        self.bytes_done += size
        if report is None:
            self.failed += 1
            return
        self.tokens += report.tokens
        if report.reused:
            self.reused += 1
        else:
            self.read += 1
            self.bytes_read += size
            self.read_seconds += report.seconds

    def seconds_left(self) -> float | None:
        """From the bytes per second of the documents read so far (None before the first one)."""
        if not self.bytes_read or not self.read_seconds:
            return None
        workers = max(1, len(self.current))
        return (self.total_bytes - self.bytes_done) / (self.bytes_read / self.read_seconds) / workers

    def line(self) -> str:
        """'12 of 40 documents (3 reused, 1 failed), 81,200 tokens, about 4 min left; reading a.pdf (2,048)'."""
        extra = [f"{self.reused} reused" if self.reused else "", f"{self.failed} failed" if self.failed else ""]
        extra = [e for e in extra if e]
        text = f"{self.done} of {self.total} documents" + (f" ({', '.join(extra)})" if extra else "")
        text += f", {self.tokens + sum(self.current.values()):,} tokens"
        left = self.seconds_left()
        if left is not None:
            text += f", about {_duration(left)} left"
        if self.current:
            text += "; reading " + ", ".join(f"{name} ({tokens:,})" for name, tokens in self.current.items())
        return text

    def summary(self, seconds: float) -> dict:
        return {
            "documents": self.total,
            "read": self.read,
            "reused": self.reused,
            "failed": self.failed,
            "tokens": self.tokens,
            "seconds": round(seconds, 3),
        }


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class DocumentDone:
    """One document of the library finished: its report, or the one line saying why it could not be read."""

    path: Path
    report: ReadReport | None
    error: str | None = None

    def as_json(self) -> dict:
        if self.report is None:
            return {"path": str(self.path), "error": self.error}
        return {**self.report.as_json(), "path": str(self.path)}


def error_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text


def read_here(
    read_one: Callable[[Path, Callable | None], ReadReport],
    files: list[Path],
    progress: LibraryProgress,
    on_progress: Callable[[LibraryProgress], None] | None = None,
    discard: Callable[[str], object] | None = None,
) -> Iterator[DocumentDone]:
    """Read the files one after another in this process (`read_one(path, on_pot_progress)` is the service's
    read); each finished document as it completes. A stop (KeyboardInterrupt, or an exception from
    `on_progress`) propagates after the read under way has kept its work (read/checkpointed.py). `discard`
    deletes a stale document (read_again_if_changed)."""
    for path in files:
        name = path.name

        def on_pot(pot, name=name) -> None:
            progress.current[name] = pot.document_tokens
            if on_progress is not None:
                on_progress(progress)

        progress.current[name] = 0
        try:
            report = read_again_if_changed(read_one, path, on_pot, discard)
        except FILE_ERRORS as exc:
            progress.current.pop(name, None)
            progress.finished(file_size(path), None)
            yield DocumentDone(path, None, error_line(exc))
            continue
        progress.current.pop(name, None)
        progress.finished(file_size(path), report)
        if on_progress is not None:
            on_progress(progress)
        yield DocumentDone(path, report)


def read_again_if_changed(
    read_one: Callable[[Path, Callable | None], ReadReport],
    path: Path,
    on_pot,
    discard: Callable[[str], object] | None = None,
) -> ReadReport:
    """read_one, and once more when the file changed while it was read (the second read continues a grown text
    file's pot, or reads the new content); the report then says so. A document the first read added and the second
    did not continue is discarded (`discard(doc_id)`): the library keeps the file as it is now, once."""
    try:
        return read_one(path, on_pot)
    except FileChangedWhileRead as exc:
        report = read_one(path, on_pot)
        if exc.new_doc_id is not None and exc.new_doc_id != report.doc_id and discard is not None:
            discard(exc.new_doc_id)
        report.warnings.insert(0, f"{exc}; read again as it is now")
        return report


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def total_bytes(files: list[Path]) -> int:
    return sum(file_size(path) for path in files)


def each_forgotten(done: Iterator[DocumentDone], forget: Callable[[str], None]) -> Iterator[DocumentDone]:
    """Each finished document, its loaded pot (if any) forgotten (`forget(doc_id)`), and the memory its read needed
    given back after each."""
    for item in done:
        if item.report is not None:
            forget(item.report.doc_id)
        return_freed_memory()
        yield item
