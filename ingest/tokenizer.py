"""Adapters that tokenize a Block and tell how many tokens each of its segments produced."""

from __future__ import annotations

import numpy as np

from .blocks import Block

# Hugging Face tokenizers slow down on long inputs, and a batch of many short
# inputs spreads over all cores; about 2 KB per input measured fastest.
SUB_BLOCK_CHARS = 2048


class BlockEncoder:
    """Turns a Block into (token ids, tokens per segment); no special tokens are added."""

    def encode(self, block: Block) -> tuple[list[int], np.ndarray]:
        raise NotImplementedError


def make_encoder(tokenizer) -> BlockEncoder:
    """Pick the encoder for a ``tokenizers.Tokenizer``, a transformers tokenizer, or anything with ``encode``."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - tokenizers ships with transformers
        Tokenizer = None
    if Tokenizer is not None:
        backend = tokenizer if isinstance(tokenizer, Tokenizer) else getattr(tokenizer, "backend_tokenizer", None)
        if isinstance(backend, Tokenizer):
            try:
                return FastEncoder(backend)
            except Exception:
                # Backends with custom Python components cannot be copied; a wrapper
                # can still be used segment by segment.
                if backend is tokenizer:
                    raise
    if callable(getattr(tokenizer, "encode", None)):
        return PerSegmentEncoder(tokenizer)
    raise TypeError("tokenizer must be a Hugging Face tokenizer (or any object with an encode(text) method)")


class FastEncoder(BlockEncoder):
    """Rust ``tokenizers`` backend: the block is encoded in ~2 KB batches cut at segment
    boundaries, and segment token counts come from the encodings' character alignment.
    """

    def __init__(self, backend) -> None:
        from tokenizers import Tokenizer

        # A private copy, so the caller's tokenizer keeps its settings: ours must not
        # truncate or pad, and must read "<|im_end|>" in a document as plain text
        # rather than as a control token.
        self._tokenizer = Tokenizer.from_str(backend.to_str())
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()
        self._tokenizer.encode_special_tokens = True

    def encode(self, block: Block) -> tuple[list[int], np.ndarray]:
        text = block.text
        starts = np.frombuffer(block.starts, dtype=np.int64)
        count = len(starts)
        cuts = [0]
        if len(text) > SUB_BLOCK_CHARS:
            wanted = np.searchsorted(starts, np.arange(SUB_BLOCK_CHARS, len(text), SUB_BLOCK_CHARS))
            cuts += [int(i) for i in np.unique(wanted) if 0 < i < count]
        cuts.append(count)
        char_bounds = [int(starts[i]) for i in cuts[:-1]] + [len(text)]
        pieces = [text[a:b] for a, b in zip(char_bounds, char_bounds[1:], strict=False)]
        encodings = self._tokenizer.encode_batch(pieces, add_special_tokens=False)
        ids: list[int] = []
        first_token = np.empty(count, dtype=np.int64)
        for index, encoding in enumerate(encodings):
            low, high = cuts[index], cuts[index + 1]
            positions = (starts[low:high] - char_bounds[index]).tolist()
            first_token[low:high] = len(ids) + _first_tokens(encoding, positions)
            ids.extend(encoding.ids)
        return ids, np.diff(first_token, append=len(ids))


def _first_tokens(encoding, positions: list[int]) -> np.ndarray:
    """Index of the first token starting at or after each position (positions ascending, first is 0)."""
    firsts = []
    char_to_token, token_to_chars = encoding.char_to_token, encoding.token_to_chars
    for position in positions:
        token = char_to_token(position)
        if token is None:
            # The character belongs to no token (e.g. whitespace a normalizer removed).
            return _first_tokens_by_offsets(encoding, positions)
        if token_to_chars(token)[0] < position:
            token += 1  # a token that started in the previous segment stays there
        firsts.append(token)
    result = np.maximum.accumulate(np.asarray(firsts, dtype=np.int64))
    result[0] = 0  # tokens before the first character (e.g. a prefix marker) belong to the first segment
    return result


def _first_tokens_by_offsets(encoding, positions: list[int]) -> np.ndarray:
    token_starts = np.fromiter((offset[0] for offset in encoding.offsets), dtype=np.int64, count=len(encoding))
    result = np.searchsorted(np.maximum.accumulate(token_starts), positions, side="left").astype(np.int64)
    result[0] = 0
    return result


class PerSegmentEncoder(BlockEncoder):
    """Fallback for tokenizers without a Rust backend: each segment is encoded on its own."""

    def __init__(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._split_special = True

    def _encode(self, text: str) -> list[int]:
        if self._split_special:
            try:
                return list(self._tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True))
            except TypeError:
                self._split_special = False
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def encode(self, block: Block) -> tuple[list[int], np.ndarray]:
        ids: list[int] = []
        counts = np.empty(len(block), dtype=np.int64)
        for index, segment in enumerate(block.segments()):
            encoded = self._encode(segment.text)
            counts[index] = len(encoded)
            ids.extend(encoded)
        return ids, counts
