"""A Pot as storage keeps it (flat tensors plus counters) and back: the bridge between core and storage."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import LoadedModel
from infinipot.core.pot import Pot
from infinipot.storage.records import DocumentRecord, PotRecord
from infinipot.storage.store import Store

_BULK_PREFIXES = ("keys.", "values.")


def bulk_names(tensors: dict[str, torch.Tensor]) -> frozenset[str]:
    """The keys and values: stored in half precision in a finished pot.

    Provenance (origin, kept_by, positions), NuC scores and the carried log-probs stay exact: they are small
    and decide what a later read of a grown log keeps.
    """
    return frozenset(name for name in tensors if name.startswith(_BULK_PREFIXES))


def pot_summary(pot: Pot, read_seconds: float) -> dict:
    """The progress columns of a pot row."""
    return {
        "tokens_read": pot.document_tokens,
        "cycles": pot.cycles,
        "entries": pot.entries,
        "peak_entries": pot.peak_entries,
        "read_seconds": read_seconds,
    }


def pot_from_storage(
    tensors: dict[str, torch.Tensor], counters: dict, device: torch.device, dtype: torch.dtype | None = None
) -> Pot:
    """Rebuild a Pot on `device`; keys and values cast to `dtype` (the model's) when given."""
    placed = {}
    for name, tensor in tensors.items():
        bulk = name.startswith(_BULK_PREFIXES) and dtype is not None
        placed[name] = tensor.to(device=device, dtype=dtype) if bulk else tensor.to(device)
    return Pot.from_tensors(placed, counters)


@dataclass
class StoredPot:
    """A document's stored pot, loaded and ready to answer from, with the engine of its settings."""

    doc_id: str
    name: str
    record: PotRecord
    pot: Pot
    engine: Engine
    warnings: list[str] = field(default_factory=list)


def load_stored_pot(store: Store, document: DocumentRecord, record: PotRecord, loaded: LoadedModel) -> StoredPot:
    """A complete pot of the document, on the model's device and in its dtype (DamagedFile when it is damaged)."""
    tensors = store.load_pot(record)
    pot = pot_from_storage(tensors, record.counters, loaded.device, next(loaded.model.parameters()).dtype)
    return StoredPot(document.id, document.name, record, pot, Engine(loaded, PotConfig(**record.config)))
