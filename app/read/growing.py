"""Growing logs: decide whether a read continues a stored pot with the lines appended since it was read.

The already-read prefix of a pot is the bytes of the file it read (`read_bytes`) and their sha256
(`prefix_sha256`, both on the pot row). A text file that still starts with those bytes, where they end with
a newline, only grew: the pot and the document's location map continue after them and the earlier bytes are
never read again. A file that shrank, whose prefix changed, or that grew inside the line a read stopped in
is read from the start (a new document, since its content is new), with one warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infinipot.app.library.pot_files import pot_from_storage
from infinipot.app.read.checkpointed import ReadScope
from infinipot.core.engine import Engine
from infinipot.core.scorers import make_scorer
from infinipot.ingest import Document, IngestError, TokenLocationMap
from infinipot.ingest.span import TextSpan, ends_a_line, last_line_end, prefix_hashes
from infinipot.storage.errors import DamagedFile
from infinipot.storage.records import DocumentRecord, PotRecord
from infinipot.storage.store import Store


@dataclass(frozen=True)
class ReadPlan:
    """How service.read goes on: continue `pot` of `document`, or (pot None) read as usual with `scope`."""

    scope: ReadScope
    document: DocumentRecord | None = None
    pot: PotRecord | None = None
    warning: str | None = None
    may_reuse: bool = True  # False: the stored pot no longer fits the file, even where its content hash does


def readable_end(path: Path, document: Document, follow: bool) -> int:
    """Where a read stops: the file's end, or when following, the end of its last complete line."""
    if follow and document.can_grow:
        return last_line_end(path, document.size_bytes)
    return document.size_bytes


def plan_read(store: Store, path: Path, document: Document, fingerprint: str, engine: Engine, follow: bool) -> ReadPlan:
    """Find a stored pot that this file continues; records the grown content on its document when found."""
    end = readable_end(path, document, follow)
    # Logs and followed files keep exact pots (fp32 on CPU): a continuation from fp16 keys would drift.
    exact = document.can_grow and (follow or document.subtype == "log")
    plain = ReadPlan(ReadScope(span=TextSpan(0, end) if follow and document.can_grow else None, exact=exact))
    if not document.can_grow:
        return plain
    stored = store.documents.by_hash(fingerprint) or store.documents.last_read_from(str(path.resolve()))
    pot = None if stored is None else store.pots.find(stored.id, engine.loaded.pot_key, engine.config.identity())
    if pot is None or pot.status != "complete" or pot.read_bytes is None:
        return plain
    name = document.name
    read_bytes = pot.read_bytes
    if read_bytes > document.size_bytes:
        return _restart(plain, f"{name} shrank since it was read")
    before, through_end = prefix_hashes(path, [read_bytes, max(end, read_bytes)])
    if before != pot.prefix_sha256:
        return _restart(plain, f"{name} was rewritten since it was read (not only appended to)")
    if read_bytes >= end:  # nothing new to read yet (following: only an unfinished line was added)
        if stored.content_hash != fingerprint:
            store.documents.grew(stored.id, fingerprint, document.size_bytes, path.stat().st_mtime_ns)
        return plain
    if not ends_a_line(path, read_bytes):
        return _restart(plain, f"{name} grew inside the unfinished last line it was read with")
    if make_scorer(engine.config.method, engine.config.nuc_ratio).reads_ends_only:
        return _restart(plain, f"{name} grew and method {engine.config.method} keeps its end")
    try:
        location_map = TokenLocationMap.load(store.absolute(stored.location_map or "missing.map"))
        location_map.reopen()
        tensors = store.load_pot(pot)
    except (IngestError, DamagedFile) as exc:
        return _restart(plain, f"{name} grew but its stored read cannot be continued ({exc})")
    loaded = engine.loaded
    base = pot_from_storage(tensors, pot.counters, loaded.device, next(loaded.model.parameters()).dtype)
    span = TextSpan(read_bytes, end, location_map.next_line, location_map.chars_end)
    store.documents.grew(stored.id, fingerprint, document.size_bytes, path.stat().st_mtime_ns)
    scope = ReadScope(span=span, base=base, location_map=location_map, end_sha256=through_end, exact=exact)
    return ReadPlan(scope, store.documents.get(stored.id), pot)


def _restart(plain: ReadPlan, what_changed: str) -> ReadPlan:
    return ReadPlan(plain.scope, warning=f"{what_changed}; reading it from the start", may_reuse=False)
