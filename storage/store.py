"""The store: the database plus the tensor files and location maps under the data folder.

Files are written before the rows that name them are committed, and deleted only after the rows that named
them are gone, so a crash at any moment leaves at worst an unreferenced file (swept later), never a row
pointing at a file that is not there.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from sqlite_utils import Database

from .checkpoints import Checkpoints
from .conversations import Conversations
from .db import close_database, open_database, write_transaction
from .documents import Documents
from .errors import DamagedFile, InUse, NotStored, ReadOnlyHome
from .liveness import is_running, this_process
from .passages import Passages
from .pots import Pots, ReadInProgress
from .records import CheckpointRecord, DocumentRecord, PotRecord
from .tensors import VerifiedFiles, checked_bytes, read_tensor_file, write_tensor_file
from .uses import DocumentHold, DocumentUses

DATABASE_NAME = "infinipot.db"


def folder_is_writable(folder: Path) -> bool:
    """Whether this process may create files in `folder`, or in the nearest existing folder above it."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


class Store:
    """Opened lazily: constructing a Store touches nothing on disk.

    A data folder this process cannot write is opened read-only: listing and answering from stored pots work,
    and what must write (reading, deleting) raises ReadOnlyHome with one line (`require_writable`).
    """

    def __init__(self, home: Path) -> None:
        self.home = Path(home)
        self._db: Database | None = None
        self._read_only: bool | None = None
        self._verified = VerifiedFiles()  # pot files hashed once while unchanged: each question opens its pot

    @property
    def read_only(self) -> bool:
        if self._read_only is None:
            database = self.home / DATABASE_NAME
            writable = folder_is_writable(self.home) and (not database.exists() or os.access(database, os.W_OK))
            self._read_only = not writable
        return self._read_only

    def require_writable(self, doing: str) -> None:
        """Raise ReadOnlyHome, saying that `doing` ("reading notes.txt") must write, when the folder is read-only."""
        if self.read_only:
            raise ReadOnlyHome(
                f"the data folder {self.home} is read-only, and {doing} must write there; make it writable "
                "or set INFINIPOT_HOME to a folder you can write"
            )

    @property
    def db(self) -> Database:
        if self._db is None:
            self._db = open_database(self.home / DATABASE_NAME, read_only=self.read_only)
        return self._db

    @property
    def documents(self) -> Documents:
        return Documents(self.db)

    @property
    def pots(self) -> Pots:
        return Pots(self.db)

    @property
    def checkpoints(self) -> Checkpoints:
        return Checkpoints(self.db)

    @property
    def conversations(self) -> Conversations:
        return Conversations(self.db)

    @property
    def passages(self) -> Passages:
        return Passages(self.db)

    @property
    def uses(self) -> DocumentUses:
        return DocumentUses(self.db)

    @contextmanager
    def in_use(self, document_id: str, what: str) -> Iterator[None]:
        """Mark the document in use by this process for the block; NotStored when it is not stored."""
        hold = self.hold(document_id, what)
        try:
            yield
        finally:
            hold.release()

    def hold(self, document_id: str, what: str) -> DocumentHold:
        """Mark the document in use by this process until the hold is released; NotStored when it is not stored
        (a read-only folder marks nothing: no delete can happen there, but the document must still be there)."""
        if self.read_only:
            if self.documents.get(document_id) is None:
                raise NotStored(f"no document {document_id}")
            return DocumentHold(None, document_id, what)
        return DocumentHold(self.uses, document_id, what)

    def close(self) -> None:
        if self._db is not None:
            close_database(self._db)
            self._db = None

    # -- paths -------------------------------------------------------------------------------------
    def absolute(self, relative: str) -> Path:
        return self.home / relative

    def relative(self, path: Path) -> str:
        return path.relative_to(self.home).as_posix()

    def pot_folder(self, pot_id: int) -> Path:
        return self.home / "pots" / str(pot_id)

    def location_map_path(self, doc_id: str) -> Path:
        return self.home / "maps" / f"{doc_id}.map"

    def _new_tensor_path(self, pot_id: int, kind: str) -> Path:
        # A fresh name per write: a committed row never names a file that is being overwritten.
        return self.pot_folder(pot_id) / f"{kind}-{secrets.token_hex(6)}.safetensors"

    def _unlink(self, relatives: list[str]) -> None:
        for relative in relatives:
            self.absolute(relative).unlink(missing_ok=True)

    # -- reading a pot -----------------------------------------------------------------------------
    def claim_pot(
        self, document_id: str, model: str, model_identity: str, config: dict, method: str, keep_progress: bool = True
    ) -> PotRecord:
        """The pot row this process now reads (resumable when an interrupted read left checkpoints)."""
        record, unused = self.pots.claim(
            document_id, model, model_identity, config, method, this_process(), keep_progress
        )
        self._unlink(unused)
        self._sweep_pot_folder(record.id)
        return record

    def save_checkpoint(
        self,
        pot_id: int,
        tensors: dict[str, torch.Tensor],
        counters: dict,
        document_tokens: int,
        stream: dict,
        summary: dict,
    ) -> None:
        """Write the tensors exactly (no halving: resuming must continue bit for bit), then commit the row."""
        written = write_tensor_file(self._new_tensor_path(pot_id, "checkpoint"), tensors, meta={"counters": counters})
        unused = self.checkpoints.replace(
            pot_id,
            document_tokens,
            counters,
            stream,
            self.relative(written.path),
            written.checksum,
            written.nbytes,
            summary,
        )
        self._unlink(unused)

    def load_checkpoint(self, record: CheckpointRecord) -> dict[str, torch.Tensor]:
        """Raises DamagedFile when the checkpoint's file is missing, truncated or fails its checksum."""
        tensors, _ = read_tensor_file(self.absolute(record.tensor_file), record.tensor_checksum, record.tensor_bytes)
        return tensors

    def complete_pot(
        self,
        pot_id: int,
        tensors: dict[str, torch.Tensor],
        halve: frozenset[str],
        counters: dict,
        summary: dict,
        read_prefix: tuple[int, str] | None = None,
    ) -> PotRecord:
        written = write_tensor_file(self._new_tensor_path(pot_id, "pot"), tensors, halve, meta={"counters": counters})
        unused = self.pots.complete(
            pot_id, self.relative(written.path), written.checksum, written.nbytes, counters, summary, read_prefix
        )
        self._unlink(unused)
        return self.pots.get(pot_id)

    def load_pot(self, record: PotRecord) -> dict[str, torch.Tensor]:
        """The tensors of a complete pot; raises DamagedFile when its file is missing, truncated or altered."""
        if record.status != "complete":
            raise ValueError(f"pot {record.id} is {record.status}, not complete")
        path = self.absolute(record.tensor_file)
        tensors, _ = read_tensor_file(path, record.tensor_checksum, record.tensor_bytes, self._verified)
        return tensors

    def verify_pot(self, record: PotRecord) -> None:
        """Check a complete pot's file (size and checksum) without decoding it; raises DamagedFile."""
        checked_bytes(self.absolute(record.tensor_file), record.tensor_checksum, record.tensor_bytes, self._verified)

    def fail_pot(self, pot_id: int, reason: str) -> None:
        self._unlink(self.pots.fail(pot_id, reason))

    def drop_checkpoints(self, pot_id: int) -> None:
        self._unlink(self.pots.drop_checkpoints(pot_id))

    def _sweep_pot_folder(self, pot_id: int) -> None:
        """Delete files of this pot that no row names (left by a crash between a file write and its commit)."""
        folder = self.pot_folder(pot_id)
        if not folder.is_dir():
            return
        record = self.pots.get(pot_id)
        named = {record.tensor_file} if record and record.tensor_file else set()
        named |= {c.tensor_file for c in self.checkpoints.for_pot(pot_id)}
        for path in folder.iterdir():
            if self.relative(path) not in named:
                path.unlink(missing_ok=True)

    # -- documents ---------------------------------------------------------------------------------
    def pot_disk_bytes(self, record: PotRecord) -> int:
        folder = self.pot_folder(record.id)
        return sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) if folder.is_dir() else 0

    def document_disk_bytes(self, document: DocumentRecord) -> int:
        total = sum(self.pot_disk_bytes(pot) for pot in self.pots.for_document(document.id))
        if document.location_map and self.absolute(document.location_map).is_file():
            total += self.absolute(document.location_map).stat().st_size
        return total

    def delete_document(self, document: DocumentRecord) -> int:
        """Delete the document's rows (one transaction) and then its files; returns the bytes freed.

        Raises ReadInProgress while another running process is reading it, InUse while a running process
        answers from it or follows it, ReadOnlyHome when the data folder cannot be written.
        """
        self.require_writable(f"deleting {document.name}")
        with write_transaction(self.db):  # the looks and the delete at once: no use can begin in between
            for use in self.uses.live(document.id):
                raise InUse(
                    f"{document.name} is in use by process {use.pid} ({use.what}); delete it when that has finished"
                )
            pots = self.pots.for_document(document.id)
            for pot in pots:
                if (
                    pot.status == "reading"
                    and pot.reader_pid != this_process()[0]
                    and is_running(pot.reader_pid, pot.reader_started)
                ):
                    raise ReadInProgress(
                        f"{document.name} is being read by process {pot.reader_pid}; stop it before deleting"
                    )
            freed = self.document_disk_bytes(document)
            self.documents.delete(document.id)
        for pot in pots:
            shutil.rmtree(self.pot_folder(pot.id), ignore_errors=True)
        if document.location_map:
            self.absolute(document.location_map).unlink(missing_ok=True)
        self.sweep_orphans()
        return freed

    def sweep_orphans(self) -> None:
        """Remove pot folders and location maps whose rows are gone (a crash in the middle of a delete).

        Safe beside a running reader: a pot's row is committed before its folder exists, and a document's
        row before its map.
        """
        pots_root, maps_root = self.home / "pots", self.home / "maps"
        if pots_root.is_dir():
            pot_ids = {str(row[0]) for row in self.db.execute("SELECT id FROM pots")}
            for folder in pots_root.iterdir():
                if folder.name not in pot_ids:
                    shutil.rmtree(folder, ignore_errors=True)
        if maps_root.is_dir():
            doc_ids = {row[0] for row in self.db.execute("SELECT id FROM documents")}
            for path in maps_root.glob("*.map"):
                if path.stem not in doc_ids:
                    path.unlink(missing_ok=True)


__all__ = ["DamagedFile", "InUse", "ReadInProgress", "ReadOnlyHome", "Store"]
