"""What the model kept, as plain lists and dicts the UI renders: pure functions of a pot's provenance.

A pot entry of layer l and KV head h came from document token `origin[l, h, i] - prefix_len` and was kept
by `kept_by[l, h, i]` (core.selection.KEPT_*). Everything here looks at a window of positions or at
counts per bin, so a document of a million tokens is never expanded token by token.
"""

from __future__ import annotations

import torch

from infinipot.core.pot import Pot
from infinipot.core.selection import KEPT_BY_NAMES

DROPPED = "dropped"
STATES = (*KEPT_BY_NAMES.values(), DROPPED)  # sink, nuc, cap, read (not compressed yet), dropped


def _positions(pot: Pot) -> torch.Tensor:
    """(L, H_kv, n) document position of every entry; negative for the chat template's opening."""
    return pot.origin.cpu() - pot.prefix_len


def check_layer_head(pot: Pot, layer: int | None, head: int | None) -> None:
    layers, heads, _ = pot.origin.shape
    if layer is not None and not 0 <= layer < layers:
        raise ValueError(f"layer must be between 0 and {layers - 1}, got {layer}")
    if head is not None and not 0 <= head < heads:
        raise ValueError(f"KV head must be between 0 and {heads - 1}, got {head}")


def window_states(pot: Pot, layer: int, head: int, start: int, end: int) -> list[str]:
    """Why each document token in [start, end) is in the pot of (layer, head): a KEPT name, or 'dropped'."""
    check_layer_head(pot, layer, head)
    positions = _positions(pot)[layer, head]  # (n,)
    inside = (positions >= start) & (positions < end)
    states = [DROPPED] * max(0, end - start)
    codes = pot.kept_by.cpu()[layer, head][inside].tolist()
    for position, code in zip(positions[inside].tolist(), codes, strict=True):
        states[position - start] = KEPT_BY_NAMES[code]
    return states


def window_head_counts(pot: Pot, start: int, end: int, layer: int | None = None) -> tuple[list[int], int]:
    """How many KV heads kept each token in [start, end): of one layer's heads, or of all layers' heads.

    Returns the counts and the number of heads counted (the count's maximum).
    """
    check_layer_head(pot, layer, None)
    positions = _positions(pot)
    if layer is not None:
        positions = positions[layer : layer + 1]
    heads = positions.shape[0] * positions.shape[1]
    flat = positions.reshape(-1)
    inside = flat[(flat >= start) & (flat < end)] - start
    counts = torch.bincount(inside, minlength=max(0, end - start)) if len(inside) else torch.zeros(max(0, end - start))
    return [int(c) for c in counts.tolist()], heads


def kept_counts(pot: Pot, layer: int, head: int) -> dict[str, int]:
    """Entries of one (layer, head) by reason, the template opening included."""
    check_layer_head(pot, layer, head)
    codes = pot.kept_by.cpu()[layer, head].tolist()
    return {name: codes.count(code) for code, name in KEPT_BY_NAMES.items()}


def token_pieces(tokenizer, ids: list[int]) -> list[str]:
    """Each token's text; a character split over several tokens goes to the first of them ('' for the rest)."""
    pieces: list[str] = []
    group: list[int] = []
    for token in ids:
        group.append(token)
        text = tokenizer.decode(group, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if text.endswith("\ufffd") and len(group) < 4:
            continue
        pieces += [text] + [""] * (len(group) - 1)
        group = []
    if group:
        pieces += ["\ufffd"] + [""] * (len(group) - 1)
    return pieces


def page_starts(location_map, total_tokens: int, pages: int) -> list[int]:
    """First token of pages 1..pages (binary search on the location map; empty pages share a start)."""
    starts = []
    for page in range(1, pages + 1):
        low, high = 0, total_tokens
        while low < high:  # first token whose page is >= page
            middle = (low + high) // 2
            if (location_map.page_of(middle) or 0) < page:
                low = middle + 1
            else:
                high = middle
        starts.append(low)
    return starts


def retention_map(pot: Pot, total_tokens: int, bins: int = 64, starts: list[int] | None = None) -> dict:
    """Share of each bin's tokens that each layer still holds (averaged over KV heads).

    Bins are equal position ranges, or pages when `starts` (first token of each page) is given.
    Returns {"x": "position"|"page", "edges": bin start positions + [total], "labels", "matrix": L rows}.
    """
    if total_tokens < 1:
        raise ValueError("the document has no tokens")
    if starts:
        edges = [*starts, total_tokens]
        labels = [f"page {i + 1}" for i in range(len(starts))]
        kind = "page"
    else:
        count = max(1, min(bins, total_tokens))
        edges = [total_tokens * i // count for i in range(count + 1)]
        labels = [f"tokens {edges[i]:,}-{edges[i + 1] - 1:,}" for i in range(count)]
        kind = "position"
    edge_tensor = torch.tensor(edges[:-1])
    widths = [edges[i + 1] - edges[i] for i in range(len(edges) - 1)]
    positions = _positions(pot)  # (L, H, n)
    layers, heads, _ = positions.shape
    matrix = []
    for layer in range(layers):
        flat = positions[layer].reshape(-1)
        flat = flat[(flat >= 0) & (flat < total_tokens)]
        which = torch.searchsorted(edge_tensor, flat, right=True) - 1  # bin of each kept entry
        counts = torch.bincount(which, minlength=len(widths)).tolist()
        matrix.append([c / (heads * w) if w else 0.0 for c, w in zip(counts, widths, strict=True)])
    return {"x": kind, "edges": edges, "labels": labels, "matrix": matrix, "layers": layers, "heads": heads}


def memory_rows(samples: list[dict]) -> dict[str, list[dict]]:
    """Long-form rows for two line plots: the pot against a full KV cache ("kv"), and the process's memory."""
    kv = [
        {"tokens": sample["tokens"], "series": label, "MB": round(sample[key] / 2**20, 4)}
        for sample in samples
        for label, key in (("pot", "pot_bytes"), ("full KV cache", "full_kv_bytes"))
    ]
    process = [{"tokens": sample["tokens"], "MB": round(sample["rss_bytes"] / 2**20, 1)} for sample in samples]
    return {"kv": kv, "process": process}


# A quote is found by its first characters when the whole does not match (a PDF's hyphenation, a cut quote).
QUOTE_PREFIX_CHARS = 60


def find_quote(pieces: list[str], quote: str) -> tuple[int, int] | None:
    """Token offsets [first, end) of the pieces that hold `quote`, spaces ignored on both sides (a document's
    line breaks and a quote's single spaces differ); by its first QUOTE_PREFIX_CHARS characters when the whole is
    not there; None when neither is."""
    wanted = "".join(quote.replace("…", " ").split())
    if not wanted:
        return None
    text, owner = [], []  # the pieces' characters without spaces, and the piece each came from
    for index, piece in enumerate(pieces):
        for char in "".join(piece.split()):
            text.append(char)
            owner.append(index)
    joined = "".join(text)
    for target in (wanted, wanted[:QUOTE_PREFIX_CHARS]):
        at = joined.find(target)
        if at >= 0:
            return owner[at], owner[at + len(target) - 1] + 1
    return None
