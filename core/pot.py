"""The memory pot: the distilled KV cache of a document and where every kept entry came from."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import DynamicCache

from . import hf_adapter


@dataclass
class Pot:
    """KV entries of every layer plus their provenance; n entries per head, the same n in every layer."""

    keys: list[torch.Tensor]  # per layer (1, H_kv, n, D), rotated at `positions`
    values: list[torch.Tensor]  # per layer (1, H_kv, n, D)
    origin: torch.Tensor  # (L, H_kv, n) int64: index of the entry's token in the stream (prefix included)
    kept_by: torch.Tensor  # (L, H_kv, n) uint8: core.selection.KEPT_*
    novelty: torch.Tensor  # (L, H_kv, n) float32: NuC score of the entry's token
    positions: torch.Tensor  # (L, H_kv, n) int64: rotary position each key is rotated at
    next_position: int  # rotary position of the next token appended
    prefix_len: int  # tokens of the chat template's opening before the document
    tokens_read: int  # stream tokens read so far, prefix included
    cycles: int  # compressions performed
    peak_entries: int  # most entries per head held at any moment
    last_logprobs: torch.Tensor | None  # (V,) log-probs of the token after the last one read (for NuC)
    # (L, H_kv, n) int64: which document each entry came from, in a pot merged from several (core.merge);
    # None for a single document's pot. `origin` then counts tokens in that document's own stream.
    source: torch.Tensor | None = None

    @property
    def entries(self) -> int:
        return int(self.origin.shape[-1])

    def sink_masks(self, sink_tokens: int) -> torch.Tensor:
        """(L, H_kv, n) bool: the entries never evicted, the first `sink_tokens` of the stream.

        In a merged pot only the first document's opening is a sink: the others' were dropped at the merge.
        """
        protected = self.origin < sink_tokens
        return protected if self.source is None else protected & (self.source == 0)

    def sink_count(self, sink_tokens: int) -> int | None:
        """How many leading entries of every head are sinks, known without looking at the tensors: in one
        document's pot (entries in stream order, sinks never evicted) the first min(sink_tokens, tokens read).
        None for a merged pot, whose sinks are counted from its tensors."""
        return min(sink_tokens, self.tokens_read) if self.source is None else None

    @property
    def document_tokens(self) -> int:
        return self.tokens_read - self.prefix_len

    def as_cache(self) -> DynamicCache:
        """A fresh cache over the pot's keys and values (shared, not copied), to read or answer on after it.

        The pot is not changed by what the cache is then given: a cache layer grows into new tensors.
        """
        return hf_adapter.cache_from_layers(list(zip(self.keys, self.values, strict=True)))

    def nbytes(self) -> int:
        tensors = [*self.keys, *self.values]
        return sum(t.numel() * t.element_size() for t in tensors)

    def tensors(self) -> dict[str, torch.Tensor]:
        """Flat name -> tensor mapping for storage (no pickle)."""
        out = {"origin": self.origin, "kept_by": self.kept_by, "novelty": self.novelty, "positions": self.positions}
        for i, (k, v) in enumerate(zip(self.keys, self.values, strict=True)):
            out[f"keys.{i}"] = k.contiguous()  # a reader's pot is views of its slab (core.slab)
            out[f"values.{i}"] = v.contiguous()
        if self.last_logprobs is not None:
            out["last_logprobs"] = self.last_logprobs
        if self.source is not None:
            out["source"] = self.source
        return out

    def clone(self) -> Pot:
        """A copy sharing no tensor with this pot (a reader snapshot must survive later reads)."""
        return Pot.from_tensors({name: t.clone() for name, t in self.tensors().items()}, self.counters())

    def counters(self) -> dict[str, int]:
        return {
            "next_position": self.next_position,
            "prefix_len": self.prefix_len,
            "tokens_read": self.tokens_read,
            "cycles": self.cycles,
            "peak_entries": self.peak_entries,
        }

    @classmethod
    def from_tensors(cls, tensors: dict[str, torch.Tensor], counters: dict[str, int]) -> Pot:
        layers = sum(1 for name in tensors if name.startswith("keys."))
        return cls(
            keys=[tensors[f"keys.{i}"] for i in range(layers)],
            values=[tensors[f"values.{i}"] for i in range(layers)],
            origin=tensors["origin"],
            kept_by=tensors["kept_by"],
            novelty=tensors["novelty"],
            positions=tensors["positions"],
            last_logprobs=tensors.get("last_logprobs"),
            source=tensors.get("source"),
            **{name: int(counters[name]) for name in cls._counter_names()},
        )

    @staticmethod
    def _counter_names() -> tuple[str, ...]:
        return ("next_position", "prefix_len", "tokens_read", "cycles", "peak_entries")
