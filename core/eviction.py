"""Taking a compression's kept entries out of the pot: one row copy for all layers, then CR-RoPE in one pass.

Both work on every layer at once ((L, H_kv, ...) tensors), so a compression costs the same few ops whatever the
layer count: on a GPU each op is a kernel launch and each host sync a stall, and on a CPU shared with other work
every op waits for its threads. The results equal the plain per-layer gather and reposition_keys within float
rounding (tests/test_eviction.py compares them).
"""

from __future__ import annotations

import torch

from . import hf_adapter
from .rope import inverse_rotation, rotate_in_place, rotation

# Most bytes of one fp32 temporary of the CR-RoPE pass on a CPU (its cos/sin per kept key); larger pots are moved in
# as many slices of rows as that needs, so a compression's transient memory stays small and in the CPU's caches
# (the bundled model's default pot moves in 45 slices of 2 (layer, head) rows: 33-35 ms, against 47-50 ms in 3 slices
# of 32). A GPU moves them in one.
CPU_ROTATION_BYTES = 2**20


def kept_rows(slab: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """The kept entries (L, H_kv, keep, D) of a contiguous (L, H_kv, capacity, D) slab, for idx (L, H_kv, keep).

    Each head's entries are rows of the slab's (L * H_kv * capacity, D) view, so one index_select copies whole rows
    of every layer; a gather with the index expanded over D reads an int64 per float and measured 1.5-4x slower.
    """
    layers, heads, capacity, dim = slab.shape
    offsets = torch.arange(layers * heads, device=idx.device).view(layers, heads, 1) * capacity  # (L, H_kv, 1)
    rows = (idx + offsets).flatten()  # (L * H_kv * keep,)
    return slab.view(-1, dim).index_select(0, rows).view(layers, heads, -1, dim)


def move_keys(model, keys: torch.Tensor, old_positions: torch.Tensor, fixed: int, next_position: int) -> None:
    """CR-RoPE in place: kept keys (L, H_kv, keep, D), rotated at old_positions (L, H_kv, keep), move to positions
    0..keep-1. `keys` must own their storage (kept_rows' output does).

    The first `fixed` entries (the sinks, at 0..fixed-1 already) stay as they are, bit for bit. Every other key is
    rotated back from its old position and on to its new one, with cos/sin looked up in a table of positions
    0..next_position-1 (every position a pot holds is below the next one to be read): one table per rotary
    embedding, each layer moved with its own (Gemma 3's local and global layers have different bases). All of it
    without reading anything back to the host.
    """
    keep = keys.shape[2]
    if fixed >= keep:
        return
    device = old_positions.device
    table_positions = torch.arange(max(next_position, keep), device=device)
    tables = {}
    for kind, layers in layer_runs(hf_adapter.rotary_kinds(model)):
        if kind not in tables:
            tables[kind] = hf_adapter.rotary_cos_sin(model, table_positions, kind)  # (top, rot) each
        table = tables[kind]
        undo = inverse_rotation(table)  # (top, rot) each
        redo = rotation((table[0][fixed:keep], table[1][fixed:keep]))  # (m, rot) each: positions fixed..keep-1
        old = old_positions[layers, :, fixed:].flatten(0, 1)  # (l * H_kv, m)
        part = keys[layers, :, fixed:].flatten(0, 1)  # (l * H_kv, m, D) view
        for rows in _row_slices(part, table[0].shape[-1]):
            back = (undo[0][old[rows]], undo[1][old[rows]])  # (r, m, rot) each
            rotate_in_place(part[rows], back, redo)


def layer_runs(kinds: list) -> list[tuple[object, slice]]:
    """Runs of consecutive layers of one kind: [(kind, slice of layers)], one run for a model whose layers are
    alike (so its keys move in one pass, as before per-layer kinds)."""
    runs: list[tuple[object, slice]] = []
    start = 0
    for layer in range(1, len(kinds) + 1):
        if layer == len(kinds) or kinds[layer] != kinds[start]:
            runs.append((kinds[start], slice(start, layer)))
            start = layer
    return runs


def _row_slices(part: torch.Tensor, rot: int) -> list[slice]:
    """Slices of the (L * H_kv) rows that each keep one fp32 (rows, m, rot) temporary within CPU_ROTATION_BYTES."""
    rows, entries = part.shape[0], part.shape[1]
    if part.device.type != "cpu":
        return [slice(0, rows)]
    per_row = max(1, entries * rot * 4)
    step = max(1, CPU_ROTATION_BYTES // per_row)
    return [slice(start, min(rows, start + step)) for start in range(0, rows, step)]
