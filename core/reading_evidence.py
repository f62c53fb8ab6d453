"""Per-entry evidence some baselines take from the reading pass itself, carried between compressions.

H2O needs the attention each entry has received since it arrived, TOVA the attention row of the latest
query, SirLLM how many compressions each entry survived. These live beside the pot while reading (they are
gathered with the kept indices at every compression) and are not stored with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from . import hf_adapter
from .scorers import ATTENTION_LAST, ATTENTION_RECEIVED, Scorer


class ReadingEvidence:
    """`tensors` maps "attention" and/or "age" to (L, H_kv, n) tensors aligned with the pot's entries."""

    def __init__(self, scorer: Scorer, kv_heads: int) -> None:
        self.attention_mode = scorer.reading_attention
        self.track_age = scorer.needs_age
        self.kv_heads = kv_heads
        self.tensors: dict[str, torch.Tensor] = {}

    def reset(self) -> None:
        self.tensors = {}

    @contextmanager
    def capture(self, model) -> Iterator[list | None]:
        """Run the forward inside with eager attention, yielding per layer this mode's reduction (H_kv, n)."""
        if self.attention_mode is None:
            yield None
            return
        last_only = self.attention_mode == ATTENTION_LAST

        def reduce(_layer_idx: int, weights: torch.Tensor) -> torch.Tensor:
            rows = weights[0, :, -1] if last_only else weights[0].sum(dim=1)  # (H_q, n)
            return hf_adapter.mean_per_kv_head(rows.float(), self.kv_heads)  # (H_kv, n)

        with hf_adapter.eager_attention(model), hf_adapter.captured_attention(model, reduce) as per_layer:
            yield per_layer

    def after_read(self, per_layer: list | None, shape: tuple[int, int, int], device: torch.device) -> None:
        """Extend the evidence to the pot's (L, H_kv, n) entries after a piece was read; new entries start at 0."""
        if per_layer is not None:
            attention = torch.stack(per_layer)  # (L, H_kv, n)
            old = self.tensors.get("attention")
            if self.attention_mode == ATTENTION_RECEIVED and old is not None:
                attention[..., : old.shape[-1]] += old
            self.tensors["attention"] = attention
        if self.track_age:
            age = torch.zeros(shape, dtype=torch.int32, device=device)  # (L, H_kv, n)
            old = self.tensors.get("age")
            if old is not None:
                age[..., : old.shape[-1]] = old
            self.tensors["age"] = age

    def after_compression(self) -> None:
        """The survivors of a compression (already gathered by it) grow one compression older."""
        if "age" in self.tensors:
            self.tensors["age"] = self.tensors["age"] + 1
