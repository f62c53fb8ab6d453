"""Adapters that tokenize a Block and tell how many tokens each of its segments produced."""

from __future__ import annotations

import numpy as np

from .blocks import Block


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
    """Rust ``tokenizers`` backend: every segment (a line, or a piece of a very long line) is encoded on its
    own, all of a block's segments in one batch.

    Encoding each line alone makes a document's tokens depend only on its lines, not on where blocks or
    batches happen to be cut: lines appended to a log get exactly the tokens a read of the whole file gives
    them, so a stored pot can continue with them. The price is whitespace at line boundaries: a blank line,
    or an indentation after a newline, is not merged with that newline into one token as tokenizing the
    whole text at once may do.
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
        pieces = [segment.text for segment in block.segments()]
        encodings = self._tokenizer.encode_batch(pieces, add_special_tokens=False)
        ids: list[int] = []
        counts = np.empty(len(pieces), dtype=np.int64)
        for index, encoding in enumerate(encodings):
            counts[index] = len(encoding.ids)
            ids.extend(encoding.ids)
        return ids, counts


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
