"""The library's word index kept in step with reads: a read document's text goes into storage's FTS5 passages.

Passages are cut from the document's stored token ids (the same ids its evidence and citations use), so a
passage found by its words is a token span the answer can read and cite directly. Documents read before the
index existed, or whose passages are missing, are indexed the first time the library is asked (`ensure_indexed`).
"""

from __future__ import annotations

from pathlib import Path

from infinipot.app.library.documents import DocumentNotFound, stored_token_ids
from infinipot.app.library.token_ids import read_window, token_count
from infinipot.core.model import LoadedModel
from infinipot.storage.records import DocumentRecord
from infinipot.storage.store import Store

# Tokens a passage holds: about two sentences of prose, the evidence's bucket of 64 tokens twice over. bm25 ranks
# short passages sharply; this is also about what the reranker reads as one span (core.answer.rerank).
PASSAGE_TOKENS = 128
# Tokens decoded at a time while cutting passages: bounds the memory for a document of any length.
_WINDOW_PASSAGES = 64


def cut_passages(path: Path, tokenizer, passage_tokens: int = PASSAGE_TOKENS) -> list[tuple[int, int, str]]:
    """(first_token, end_token, text) for each run of `passage_tokens` tokens of the token id file."""
    if passage_tokens < 1:
        raise ValueError(f"a passage needs at least one token, got {passage_tokens}")
    total = token_count(path)
    passages = []
    step = passage_tokens * _WINDOW_PASSAGES
    for window_start in range(0, total, step):
        window = read_window(path, window_start, window_start + step)
        for offset in range(0, len(window), passage_tokens):
            ids = window[offset : offset + passage_tokens]
            text = " ".join(tokenizer.decode(ids, skip_special_tokens=True).split())
            if text:
                first = window_start + offset
                passages.append((first, first + len(ids), text))
    return passages


def index_document(store: Store, token_ids: Path, document: DocumentRecord, loaded: LoadedModel) -> int:
    """Put the document's passages (from its token id file for `loaded`) into the index; returns how many."""
    passages = cut_passages(token_ids, loaded.tokenizer)
    store.passages.replace(document.id, loaded.identity, document.content_hash, passages)
    return len(passages)


def ensure_indexed(store: Store, files, documents: list[DocumentRecord], loaded: LoadedModel) -> list[str]:
    """Index those of `documents` whose passages for this model are missing or were cut from other content.

    Returns a warning for each document that cannot be indexed (its file is gone and its text was never kept).
    """
    indexed = store.passages.indexed(loaded.identity)
    warnings = []
    for document in documents:
        if indexed.get(document.id) == document.content_hash:
            continue
        try:
            path = stored_token_ids(files, document, loaded)
        except DocumentNotFound as exc:
            warnings.append(f"{exc}; it is left out of the library's word search")
            continue
        index_document(store, path, document, loaded)
    return warnings
