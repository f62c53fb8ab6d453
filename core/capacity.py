"""Whether an uncompressed KV cache of a given length fits: in the model's context and in free memory."""

from __future__ import annotations

import psutil
import torch

from . import hf_adapter
from .errors import FullContextError

# Share of the memory it could have (what it holds plus what is free) the full cache may take; the rest is left
# for activations and everything else.
_MEMORY_SHARE = 0.8


def kv_bytes_per_entry(model: torch.nn.Module) -> int:
    """Bytes one token's keys and values take over all layers."""
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dtype = next(model.parameters()).dtype
    return config.num_hidden_layers * 2 * hf_adapter.kv_heads(model) * head_dim * dtype.itemsize


def available_bytes(device: torch.device) -> int:
    """Free memory where the cache lives: the GPU's when it runs there, else the machine's."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return int(psutil.virtual_memory().available)


def check_full_context(model: torch.nn.Module, entries: int, held: int = 0) -> None:
    """Raise FullContextError unless a cache of `entries` tokens fits, `held` of them already allocated."""
    context = getattr(model.config, "max_position_embeddings", None)
    if context and entries > context:
        raise FullContextError(
            f"method 'full' keeps every token, but {entries:,} tokens exceed the model's context of {context:,}; "
            "use a memory-bounded method such as infinipot"
        )
    per_entry = kv_bytes_per_entry(model)
    free = available_bytes(next(model.parameters()).device)
    if entries * per_entry > _MEMORY_SHARE * (held * per_entry + free):  # the held part is already allocated
        raise FullContextError(
            f"method 'full' keeps every token, but a cache of {entries:,} tokens needs "
            f"{entries * per_entry / 2**30:.1f} GiB and only {free / 2**30:.1f} GiB of memory is free; "
            "use a memory-bounded method such as infinipot"
        )
