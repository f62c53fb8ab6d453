"""The pot's keys and values as one preallocated slab per kind: (L, H_kv, capacity, D), written in place.

A reader holds one slab for the whole read. Each forward writes its piece's keys and values into the rows after the
entries held (transformers' own cache concatenates every layer into a new tensor instead, copying the whole pot at
every piece), and a compression writes the kept rows back to the top of the slab with a few batched ops over all
layers at once (core.eviction), whatever the layer count. What the model sees are per-layer views of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class KVSlab:
    """Keys and values of every layer, (L, H_kv, capacity, D_k) and (L, H_kv, capacity, D_v); allocated by the first
    forward that writes into it (its shapes come from the model's own key and value states)."""

    layers: int
    capacity: int
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None

    @property
    def allocated(self) -> bool:
        return self.keys is not None

    def allocate_like(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Make room for `capacity` entries shaped like one layer's states (1, H_kv, T, D)."""
        _, heads, _, key_dim = key_states.shape
        value_dim = value_states.shape[-1]
        self.keys = key_states.new_empty(self.layers, heads, self.capacity, key_dim)
        self.values = value_states.new_empty(self.layers, heads, self.capacity, value_dim)

    def layer_view(self, index: int, entries: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Layer `index`'s keys and values, (1, H_kv, entries, D) views of its first `entries` rows (no copy)."""
        return self.keys[index, None, :, :entries], self.values[index, None, :, :entries]

    def layer_views(self, entries: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Per layer (1, H_kv, entries, D) views of the first `entries` rows (no copy)."""
        views = [self.layer_view(index, entries) for index in range(self.layers)]
        return [keys for keys, _ in views], [values for _, values in views]

    def fill(self, keys: list[torch.Tensor], values: list[torch.Tensor]) -> None:
        """Copy a pot's per-layer (1, H_kv, n, D) keys and values into the first n rows (a resumed or restored read)."""
        if not self.allocated:
            self.allocate_like(keys[0], values[0])
        entries = keys[0].shape[2]
        if entries > self.capacity:
            raise ValueError(f"a pot of {entries} entries does not fit a slab of {self.capacity}")
        for layer, (k, v) in enumerate(zip(keys, values, strict=True)):
            self.keys[layer, :, :entries].copy_(k[0])
            self.values[layer, :, :entries].copy_(v[0])

    @classmethod
    def stacked(cls, keys: list[torch.Tensor], values: list[torch.Tensor]) -> KVSlab:
        """A slab holding exactly these per-layer (1, H_kv, n, D) tensors: one copy of each kind (a pot distilled at
        answer time, which has no reader's slab)."""
        entries = keys[0].shape[2]
        return cls(len(keys), entries, torch.cat(keys), torch.cat(values))  # (L, H_kv, n, D) each
