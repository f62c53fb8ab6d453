"""Questions across documents: the chosen documents' general pots merged into one pot of at most |M| entries
(core.merge), answered as one, with each kept entry naming its document.

The merged pot's bound is the smallest |M| of the pots (with that pot's |C| and alpha); the merge always
distils with InfiniPot's criterion and the general catalyst prompt, so it does not depend on the question
and one merged pot serves every question about the same documents (kept in memory, see MergedPotCache).
Documents are merged in the order their pots were stored, so choosing them in another order reuses it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from infinipot.app.ask.citing import CitedDocument, cite_across
from infinipot.app.ask.recently_used import RecentlyUsed
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.core.decoding import DecodingConfig
from infinipot.core.engine import Engine
from infinipot.core.merge import IncompatiblePots, entries_per_document, merge_pots
from infinipot.core.pot import Pot

# Merged pots kept: each is as large as one document's pot (|M| entries per layer and head).
MERGED_POTS_KEPT = 2


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


def distinct_pots(opened: list[StoredPot]) -> list[StoredPot]:
    """The documents' general pots, each once, in the order they were stored; refuses fewer than two documents."""
    stored: dict[str, StoredPot] = {}
    for pot in opened:
        stored.setdefault(pot.doc_id, pot)
    if len(stored) < 2:
        raise ValueError(f"choose at least two different documents to ask across (got {len(stored)})")
    pots = sorted(stored.values(), key=lambda pot: pot.record.id)
    first = pots[0]
    for other in pots[1:]:
        if other.engine.loaded.pot_key != first.engine.loaded.pot_key:
            raise IncompatiblePots(
                f"{first.name} was read with model {first.record.model_identity} and {other.name} with "
                f"{other.record.model_identity}; only documents read with the same model and dtype can be asked "
                "together"
            )
    return pots


def open_merged_pot(opened: list[StoredPot], cache: MergedPotCache) -> tuple[MergedStoredPot, bool]:
    """The merged pot of the documents' general pots, merged now or reused; returns it and whether reused."""
    pots = distinct_pots(opened)
    key = tuple((pot.record.id, pot.record.tensor_checksum) for pot in pots)
    cached = cache.get(key)
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
    cache.put(key, merged)
    return merged, False


def ask_across(
    library: Library,
    opened: list[StoredPot],
    cache: MergedPotCache,
    question: str,
    decoding: DecodingConfig | None = None,
) -> tuple[Iterator[str], AcrossStats]:
    """Stream one answer from the documents' merged pot (not stored as a conversation: those have one document)."""
    if not (question or "").strip():
        raise ValueError("the question is empty")
    started = time.perf_counter()
    merged, reused = open_merged_pot(opened, cache)
    stats = AcrossStats(
        load_seconds=time.perf_counter() - started,
        warnings=[warning for pot in opened for warning in pot.warnings],
        documents=merged.documents(),
        merged_entries=merged.pot.entries,
        merge_peak_entries=merged.pot.peak_entries,
        merge_compressions=merged.pot.cycles,
        pot_size=merged.engine.config.pot_size,
        reused_merge=reused,
    )
    pieces = merged.engine.answer(merged.pot, question, decoding, stats)
    return _cited(library, merged, question, pieces, stats), stats


def _cited(
    library: Library, merged: MergedStoredPot, question: str, pieces: Iterator[str], stats: AcrossStats
) -> Iterator[str]:
    """Pass the answer through; once it is complete, fill stats.citations, each naming its document."""
    yield from pieces
    if stats.answer_pot is None:
        return
    kinds = {doc_id: library.store.documents.get(doc_id) for doc_id in merged.doc_ids}
    documents = [
        CitedDocument(doc_id, name, library.store.location_map_path(doc_id), getattr(kinds[doc_id], "kind", None))
        for doc_id, name in zip(merged.doc_ids, merged.names, strict=True)
    ]
    found = cite_across(merged.engine, stats.answer_pot, question, stats.token_ids, documents)
    stats.citations.extend(citation.as_json() for citation in found)  # in place: callers may hold the list
    stats.answer_pot = None  # a distilled copy is not kept alive with the stats


class MergedPotCache(RecentlyUsed):
    """The merged pots kept in memory, by the documents merged."""

    def __init__(self, limit: int = MERGED_POTS_KEPT) -> None:
        super().__init__(limit, f"the merged pot cache needs room for at least one pot, got {limit}")

    def forget_document(self, doc_id: str) -> None:
        """Drop merged pots built from a document (it was deleted or read again)."""
        self.drop(lambda key, merged: doc_id in merged.doc_ids)
