"""One read of a document into its pot record: checkpoints while reading, resume after a crash, status on failure."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from infinipot.app.library.pot_files import bulk_names, pot_from_storage, pot_summary
from infinipot.core.engine import Engine
from infinipot.core.errors import InfiniPotError
from infinipot.core.pot import Pot
from infinipot.ingest import Document, IngestError, TokenLocationMap
from infinipot.ingest.span import TextSpan
from infinipot.storage.errors import DamagedFile, WriteFailed, describe_fault
from infinipot.storage.records import PotRecord
from infinipot.storage.store import Store


@dataclass(frozen=True)
class ReadOutcome:
    pot: Pot
    record: PotRecord
    resumed_from: int  # document tokens restored from a checkpoint (0: read from the start)
    warnings: list[str]


@dataclass(frozen=True)
class ReadScope:
    """What of the file a read covers and what it continues (default: the whole file, from the start).

    A growing log is read up to its last complete line (`span`), and a file that only grew continues its
    stored pot (`base`) and location map from where they stopped, never reading the earlier bytes again.
    """

    span: TextSpan | None = None
    base: Pot | None = None
    location_map: TokenLocationMap | None = None
    end_sha256: str | None = None  # sha256 of the file up to the span's end, hashed before a continuation
    exact: bool = False  # keep keys and values unrounded, so a later continuation goes on bit for bit

    def __post_init__(self) -> None:
        continues = self.span is not None and self.span.start_byte > 0
        if continues != (self.base is not None) or continues != (self.location_map is not None):
            raise ValueError("a read continues from a stored pot and its map exactly when its span starts mid-file")
        if continues and (self.span.end_byte is None or self.end_sha256 is None):
            raise ValueError("a continued read needs the end of its span and the hash of the file up to it")


def aligned_chunks(chunks: Iterable[list[int]], already_read: int, size: int) -> Iterator[list[int]]:
    """Re-cut a continued stream so chunks end at multiples of `size` counted from the document's start.

    A read of the whole file cuts its stream there, so the reader's forward pieces after a continuation
    fall where they would have fallen in one read.
    """
    pending: list[int] = []
    first = size - already_read % size
    for ids in chunks:
        pending.extend(ids)
        while len(pending) >= first:
            yield pending[:first]
            del pending[:first]
            first = size
    if pending:
        yield pending


class CheckpointAheadOfDocument(ValueError):
    """A checkpoint claims more tokens than the document has: it cannot belong to this content."""


class Checkpointer:
    """The reader's on_step: saves the pot when `interval` seconds of reading have passed since the last save.

    on_step fires right after a forward piece, before any compression the next piece may need. That is
    a consistent state: the pot carries the log-probs that score the next piece's first token (NuC), and
    the reader's next piece depends only on the pot's size and the tokens left, so a resumed reader
    splits the rest of the stream exactly as the uninterrupted one would.
    """

    def __init__(
        self,
        store: Store,
        pot_id: int,
        interval: float,
        stream_spec: dict,
        prior_seconds: float,
        on_progress: Callable[[Pot], None] | None,
    ) -> None:
        if interval < 0:
            raise ValueError(f"checkpoint interval must not be negative, got {interval}")
        self.store = store
        self.pot_id = pot_id
        self.interval = interval
        self.stream_spec = stream_spec
        self.prior_seconds = prior_seconds
        self.on_progress = on_progress
        self.started = time.monotonic()
        self.last_saved = self.started
        self.saved = 0

    def read_seconds(self) -> float:
        return self.prior_seconds + time.monotonic() - self.started

    def on_step(self, pot: Pot) -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(pot)
            except Exception:
                # A stop asked for by the caller (the app's Cancel): the state after a piece is a consistent
                # resume point, so keep all the work done so far instead of the last timed checkpoint.
                self.save(pot)
                raise
        if time.monotonic() - self.last_saved >= self.interval:
            self.save(pot)

    def save(self, pot: Pot) -> None:
        # Exact dtype (fp32 on CPU): a checkpoint rounded to fp16 would shift the next NuC and CaP scores
        # slightly, which can change which entries later compressions keep; only the final pot is halved.
        self.store.save_checkpoint(
            self.pot_id,
            pot.tensors(),
            pot.counters(),
            pot.document_tokens,
            self.stream_spec,
            pot_summary(pot, self.read_seconds()),
        )
        self.last_saved = time.monotonic()
        self.saved += 1


def skip_tokens(chunks: Iterable[list[int]], count: int) -> Iterator[list[int]]:
    """The stream without its first `count` tokens, chunk boundaries otherwise unchanged."""
    for ids in chunks:
        if count >= len(ids):
            count -= len(ids)
            continue
        yield ids[count:] if count else ids
        count = 0
    if count:
        raise CheckpointAheadOfDocument(f"the checkpoint is {count} tokens ahead of the document")


def _release_quietly(store: Store, pot_id: int, note: str) -> None:
    """Mark the pot resumable; when the disk is too full even for that, its reader's death marks it the same way
    (a `reading` pot whose process is gone resumes with the next read)."""
    try:
        store.pots.release(pot_id, note)
    except (OSError, sqlite3.Error):
        pass


def store_pot(
    store: Store,
    record: PotRecord,
    pot: Pot,
    location_map: TokenLocationMap,
    read_prefix: tuple[int | None, str | None],
    read_seconds: float,
    exact: bool = False,
) -> PotRecord:
    """Store a finished read: its location map, then the row that completes the pot (no committed row ever lacks
    its files). The one writer does this, whoever read (a worker, on Ray); then mark_read."""
    map_path = store.location_map_path(record.document_id)
    map_path.parent.mkdir(parents=True, exist_ok=True)
    location_map.save(map_path)
    tensors = pot.tensors()
    final = store.complete_pot(
        record.id,
        tensors,
        frozenset() if exact else bulk_names(tensors),
        pot.counters(),
        pot_summary(pot, read_seconds),
        read_prefix,
    )
    return final


def mark_read(store: Store, record: PotRecord, pot: Pot) -> None:
    """The document's token count and location map, once its pot is complete."""
    map_path = store.location_map_path(record.document_id)
    store.documents.set_read(record.document_id, pot.document_tokens, store.relative(map_path))


def read_document(
    store: Store,
    engine: Engine,
    document: Document,
    record: PotRecord,
    checkpoint_seconds: float,
    on_progress: Callable[[Pot], None] | None = None,
    scope: ReadScope | None = None,
) -> ReadOutcome:
    """Read (or resume reading, or continue after a grown file's stored pot) `document` into the claimed
    pot `record`, and its location map.

    A bad document or impossible settings mark the pot failed (its checkpoints go). Anything else, Ctrl-C
    included, leaves it resumable: the next read continues from the last checkpoint.
    """
    scope = scope or ReadScope()
    warnings: list[str] = []
    loaded = engine.loaded
    stream_spec = {"chunk_tokens": max(engine.config.forward_tokens, 256)}
    resume_pot, skip, prior_seconds = None, 0, 0.0
    checkpoint = store.checkpoints.latest(record.id) if scope.base is None else None
    if scope.base is not None:
        resume_pot, skip = scope.base, 0
    elif checkpoint is not None:
        try:
            tensors = store.load_checkpoint(checkpoint)
            # Same dtype as when saved unless the model now runs in another (a CUDA checkpoint resumed on CPU).
            model_dtype = next(loaded.model.parameters()).dtype
            resume_pot = pot_from_storage(tensors, checkpoint.counters, loaded.device, model_dtype)
            skip, prior_seconds = checkpoint.document_tokens, checkpoint.read_seconds
            stream_spec = checkpoint.stream  # the same chunking, so pieces fall where they fell before
        except DamagedFile as exc:
            warnings.append(f"checkpoint of {document.name} is damaged ({exc.reason}); reading from the start")
            store.drop_checkpoints(record.id)

    checkpointer = Checkpointer(store, record.id, checkpoint_seconds, stream_spec, prior_seconds, on_progress)
    chunk_tokens = stream_spec["chunk_tokens"]
    stream = document.token_stream(
        engine.tokenizer, chunk_tokens=chunk_tokens, span=scope.span, location_map=scope.location_map
    )
    chunks = stream if scope.base is None else aligned_chunks(stream, scope.base.document_tokens, chunk_tokens)
    try:
        if scope.base is not None:
            # The continued pot is the pot's only copy now: an interrupted continuation resumes from here.
            checkpointer.save(scope.base)
        reader = engine.new_reader(on_step=checkpointer.on_step)
        if resume_pot is not None:
            reader.resume(resume_pot)
        else:
            reader.start(engine.prefix_ids)
        for ids in skip_tokens(chunks, skip):
            reader.feed(ids)
        pot = reader.finish()  # truncation reads its held-back end here
        if pot.document_tokens == 0:
            raise IngestError(f"{document.name} contains no text to read")
        read_prefix = (stream.end_byte, scope.end_sha256 if scope.base is not None else stream.fingerprint)
        seconds = checkpointer.read_seconds()
        final = store_pot(store, record, pot, stream.location_map, read_prefix, seconds, scope.exact)
    except (IngestError, InfiniPotError, CheckpointAheadOfDocument) as exc:
        store.fail_pot(record.id, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        raise
    except (OSError, sqlite3.OperationalError) as exc:  # a full disk, a quota, no permission: the user can fix it
        _release_quietly(store, record.id, f"interrupted: {exc}".splitlines()[0])
        message = describe_fault(exc, f"saving the pot for {document.name}", "run read again to resume")
        if message is None:
            raise
        raise WriteFailed(message) from None
    except BaseException as exc:
        note = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"interrupted: {exc}".splitlines()[0]
        store.pots.release(record.id, note)
        raise
    mark_read(store, record, pot)
    warnings += list(stream.warnings)
    resumed_from = scope.base.document_tokens if scope.base is not None else skip
    return ReadOutcome(pot=pot, record=final, resumed_from=resumed_from, warnings=warnings)
