"""Questions across documents: the chosen documents' general pots merged into one pot of at most |M| entries
(core.merge), answered as one, with each kept entry naming its document.

The merged pot's bound is the smallest |M| of the pots (with that pot's |C| and alpha); the merge always
distils with InfiniPot's criterion and the general catalyst prompt, so it does not depend on the question
and one merged pot serves every question about the same documents (kept in memory, app.merged_cache).
Documents are merged in the order their pots were stored, so choosing them in another order reuses it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from infinipot.core.engine import Engine
from infinipot.core.merge import IncompatiblePots, entries_per_document, merge_pots
from infinipot.core.pot import Pot

from .citing import CitedDocument, cite_across
from .service import AskStats, StoredPot

if TYPE_CHECKING:
    from .service import DocumentService


@dataclass(frozen=True)
class MergedStoredPot:
    """A merged pot and where its documents came from: entry source i is doc_ids[i] (its pot pot_ids[i])."""

    doc_ids: tuple[str, ...]
    names: tuple[str, ...]
    pot_ids: tuple[int, ...]
    pot: Pot
    engine: Engine

    def documents(self) -> list[dict]:
        """Each document with the entries per layer and KV head it holds in the merged pot."""
        entries = entries_per_document(self.pot, len(self.doc_ids))
        return [
            {"doc_id": doc_id, "name": name, "pot_id": pot_id, "entries": count}
            for doc_id, name, pot_id, count in zip(self.doc_ids, self.names, self.pot_ids, entries, strict=True)
        ]


@dataclass
class AcrossStats(AskStats):
    """AskStats plus the merge: its documents, size, peak, compressions, and whether it was reused."""

    documents: list[dict] = field(default_factory=list)
    merged_entries: int = 0
    merge_peak_entries: int = 0
    merge_compressions: int = 0
    pot_size: int = 0
    reused_merge: bool = False


def general_pots(service: DocumentService, docs: list[str]) -> list[StoredPot]:
    """Each named document's general pot, in the order they were stored; refuses fewer than two documents."""
    stored: dict[str, StoredPot] = {}
    warnings: list[str] = []
    for doc in docs:
        pot, _ = service.open_pot(doc)
        stored.setdefault(pot.doc_id, pot)
        warnings += pot.warnings
    if len(stored) < 2:
        raise ValueError(f"choose at least two different documents to ask across (got {len(stored)})")
    pots = sorted(stored.values(), key=lambda pot: pot.record.id)
    first = pots[0]
    for other in pots[1:]:
        if other.engine.loaded.identity != first.engine.loaded.identity:
            raise IncompatiblePots(
                f"{first.name} was read with model {first.record.model} and {other.name} with {other.record.model}; "
                "only documents read with the same model can be asked together"
            )
    return pots


def open_merged_pot(service: DocumentService, docs: list[str]) -> tuple[MergedStoredPot, bool]:
    """The merged pot of the documents' general pots, merged now or reused; returns it and whether reused."""
    pots = general_pots(service, docs)
    key = tuple((pot.record.id, pot.record.tensor_checksum) for pot in pots)
    cached = service.merged_pots.get(key)
    if cached is not None:
        return cached, True
    bound = min(pots, key=lambda pot: pot.engine.config.pot_size).engine.config
    config = replace(bound, method="infinipot", cap_mode="general", question=None)
    engine = Engine(pots[0].engine.loaded, config)
    merged = MergedStoredPot(
        doc_ids=tuple(pot.doc_id for pot in pots),
        names=tuple(pot.name for pot in pots),
        pot_ids=tuple(pot.record.id for pot in pots),
        pot=merge_pots(engine.model, [pot.pot for pot in pots], config, engine.catalyst_ids),
        engine=engine,
    )
    service.merged_pots.put(key, merged)
    return merged, False


def ask_across(
    service: DocumentService, docs: list[str], question: str, max_new_tokens: int = 256
) -> tuple[Iterator[str], AcrossStats]:
    """Stream one answer from the documents' merged pot (not stored as a conversation: those have one document)."""
    if not (question or "").strip():
        raise ValueError("the question is empty")
    started = time.perf_counter()
    merged, reused = open_merged_pot(service, docs)
    stats = AcrossStats(
        load_seconds=time.perf_counter() - started,
        documents=merged.documents(),
        merged_entries=merged.pot.entries,
        merge_peak_entries=merged.pot.peak_entries,
        merge_compressions=merged.pot.cycles,
        pot_size=merged.engine.config.pot_size,
        reused_merge=reused,
    )
    pieces = merged.engine.answer(merged.pot, question, max_new_tokens, stats)
    return _cited(service, merged, question, pieces, stats), stats


def _cited(
    service: DocumentService, merged: MergedStoredPot, question: str, pieces: Iterator[str], stats: AcrossStats
) -> Iterator[str]:
    """Pass the answer through; once it is complete, fill stats.citations, each naming its document."""
    yield from pieces
    if stats.answer_pot is None:
        return
    kinds = {doc_id: service.store.documents.get(doc_id) for doc_id in merged.doc_ids}
    documents = [
        CitedDocument(doc_id, name, service.store.location_map_path(doc_id), getattr(kinds[doc_id], "kind", None))
        for doc_id, name in zip(merged.doc_ids, merged.names, strict=True)
    ]
    found = cite_across(merged.engine, stats.answer_pot, question, stats.token_ids, documents)
    stats.citations.extend(citation.as_json() for citation in found)  # in place: callers may hold the list
    stats.answer_pot = None  # a distilled copy is not kept alive with the stats
