"""Taking a compression's kept entries out of the pot: one row copy per layer, CR-RoPE only where positions move.

A rolling window (streaming, h2o) compresses every |M|/16 tokens, so this runs ~80 times in a 24K read and
its op count matters: on a CPU shared with other work every torch op waits for its threads. The results equal
the plain per-layer gather and reposition_keys within float rounding (tests/test_eviction.py compares them).
"""

from __future__ import annotations

import torch

from . import hf_adapter
from .rope import inverse_rotation, rotate_in_place, rotation, rotation_between


def kept_rows(layers: list[torch.Tensor], idx: torch.Tensor) -> list[torch.Tensor]:
    """Per layer (1, H_kv, n, D) -> its kept entries (1, H_kv, keep, D), for kept indices idx (L, H_kv, keep).

    A head's entries are rows of the layer's (H_kv * n, D) view, so one index_select copies whole rows; a gather
    with the index expanded over D reads an int64 per float and measured 1.5-4x slower.
    """
    _, heads, n, dim = layers[0].shape
    rows = idx + torch.arange(heads, device=idx.device)[:, None] * n  # (L, H_kv, keep): row in (H_kv * n, D)
    rows = rows.reshape(len(layers), -1)  # (L, H_kv * keep)
    return [
        t.reshape(heads * n, dim).index_select(0, rows[layer]).view(1, heads, -1, dim)  # (1, H_kv, keep, D)
        for layer, t in enumerate(layers)
    ]


def move_keys(model, keys: list[torch.Tensor], old_positions: torch.Tensor) -> None:
    """CR-RoPE in place: each layer's kept keys (1, H_kv, keep, D), rotated at old_positions (L, H_kv, keep), move
    to positions 0..keep-1. `keys` must own their storage (kept_rows' output does).

    Only entries from the first one whose position changes in some head are rotated (the sinks stay as they are,
    bit for bit). When every layer and head holds the same positions (streaming keeps the same entries everywhere)
    one composed rotation, computed once, moves them all; otherwise each key is rotated back from its old position
    and on to its new one, with cos/sin looked up in a table of the few thousand positions a pot holds.
    """
    keep = old_positions.shape[-1]
    new_positions = torch.arange(keep, device=old_positions.device)  # (keep,)
    changed = (old_positions != new_positions).flatten(0, -2).any(dim=0)  # (keep,)
    if not bool(changed.any()):
        return
    start = int(changed.int().argmax())
    old = old_positions[..., start:]  # (L, H_kv, m)
    new = hf_adapter.rotary_cos_sin(model, new_positions[start:])  # (m, rot) each
    table = _cos_sin_table(model, old_positions)
    if bool((old == old[:1, :1]).all()):
        moved = rotation_between(_cos_sin_at(model, table, old[0, 0]), new)  # (m, rot) each
        for k in keys:
            rotate_in_place(k[0, :, start:], moved)
        return
    undo = None if table is None else inverse_rotation(table)  # (top, rot) each
    redo = rotation(new)  # (m, rot) each
    for layer, k in enumerate(keys):
        rows = old[layer]  # (H_kv, m)
        if undo is None:
            back = inverse_rotation(hf_adapter.rotary_cos_sin(model, rows))
        else:
            back = (undo[0][rows], undo[1][rows])  # (H_kv, m, rot) each
        rotate_in_place(k[0, :, start:], back, redo)


def _cos_sin_table(model, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """cos, sin (top, rot) at 0..top-1 for top = the largest position + 1 (so a dynamic rope scales as it would for
    `positions` themselves); None when that table would outgrow computing each position directly."""
    top = int(positions.max()) + 1
    if top >= positions.numel():
        return None
    return hf_adapter.rotary_cos_sin(model, torch.arange(top, device=positions.device))


def _cos_sin_at(model, table, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (..., T, rot) at positions (..., T): looked up in the table (the same few thousand positions
    recur in every layer and head), or computed when there is none."""
    if table is None:
        return hf_adapter.rotary_cos_sin(model, positions)
    cos, sin = table
    return cos[positions], sin[positions]
