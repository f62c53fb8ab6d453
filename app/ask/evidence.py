"""Answer mode `evidence`: the pot points, the document answers (core.answer.evidence), with the app's files.

The spans the question's attention ranks best are read from the document's stored token ids, placed between
the pot and the question, and cited: each citation is a span with its page or line and its text.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

import torch

from infinipot.app.ask.citing import Citation, page_label
from infinipot.app.library.documents import DocumentNotFound, require_document, stored_token_ids
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.library.token_ids import read_window, token_count
from infinipot.core.answer.evidence import (
    EvidenceConfig,
    Span,
    candidate_spans,
    holds_whole_document,
    span_breaks,
    spans_read,
    widen,
)
from infinipot.core.answer.grounding import content_words, holds_any_form, word_keys
from infinipot.core.answer.question_names import asked_names, rarely_mentioned
from infinipot.ingest import TokenLocationMap
from infinipot.ingest.errors import IngestError


def gather_evidence(
    library: Library,
    stored: StoredPot,
    question: str,
    config: EvidenceConfig,
    max_new_tokens: int,
    on_candidates: Callable[[list[Span]], None] | None = None,
) -> tuple[list[Span], list[str]]:
    """(spans in document order, warnings). No spans when the pot holds the whole document; none, with a
    warning, when the document's text cannot be read any more (the answer then comes from the pot alone).
    `on_candidates` is given the candidate spans the moment the search finds them, before the reranker chooses
    the ones read (the app shows the best at once)."""
    if holds_whole_document(stored.pot):
        return [], []
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
    except DocumentNotFound as exc:
        return [], [f"{exc}; answering from the pot alone"]
    total = token_count(path)
    heads = None
    if config.pointer != "later-layers" and config.ranking != "words":
        heads = library.heads.get(stored.engine)

    def fetch(start: int, end: int) -> list[int]:
        return read_window(path, start, end)

    engine = stored.engine
    candidates, fitted = candidate_spans(engine, stored.pot, question, total, fetch, config, max_new_tokens, heads)
    if candidates and on_candidates is not None:
        on_candidates(candidates)
    return spans_read(engine, candidates, question, total, fetch, fitted), []


def rare_names(library: Library, stored: StoredPot, question: str, most: int | None) -> list[str]:
    """The names `question` asks about that the document mentions at most `most` times (core.answer.question_names);
    none when the rule is off (`most` None), the question names nothing, or the document's text is gone."""
    if most is None or not asked_names(question):
        return []
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
    except DocumentNotFound:
        return []
    document_ids = torch.tensor(read_window(path, 0, token_count(path)), dtype=torch.int64)  # (T,)
    return rarely_mentioned(question, document_ids, stored.engine.tokenizer, most)


# Word keys of the documents last asked about (a document's whole text, decoded once): few are asked at a time.
_DOCUMENT_WORDS: OrderedDict[tuple[str, int], set[str]] = OrderedDict()
DOCUMENT_WORDS_KEPT = 8
# The question's words a not-found answer names as never used: whole words of at least this many letters.
ABSENT_LETTERS = 4
ABSENT_NAMED = 3


# A word hyphenated across a line break ("docu-\n  ment", groff's U+2010), and a hyphen inside a word ("e-mail").
_BROKEN_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010\u00ad][ \t]*\n\s*(?=[^\W\d_])")
_INNER_HYPHEN = re.compile(r"(?<=[^\W\d_])[-\u2010](?=[^\W\d_])")


def written_forms(text: str) -> list[str]:
    """The text as written, with words hyphenated at line breaks joined, and with inner hyphens dropped: a word
    the document writes in any of these forms ("e-mail" for "email") is one it uses."""
    joined = _BROKEN_HYPHEN.sub("", text)
    return [text, joined, _INNER_HYPHEN.sub("", joined)]


def absent_words(library: Library, stored: StoredPot, question: str) -> list[str]:
    """The question's content words (ABSENT_LETTERS letters or more, ABSENT_NAMED at most) that the document
    never uses in any form core.answer.grounding folds ("football" asked of a manual), when they are at least half of
    them; none when its text is gone."""
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
    except DocumentNotFound:
        return []
    key = (str(path), path.stat().st_size)
    found = _DOCUMENT_WORDS.get(key)
    if found is None:
        text = stored.engine.tokenizer.decode(read_window(path, 0, token_count(path)), skip_special_tokens=True)
        found = _DOCUMENT_WORDS[key] = word_keys(written_forms(text))
        while len(_DOCUMENT_WORDS) > DOCUMENT_WORDS_KEPT:
            _DOCUMENT_WORDS.popitem(last=False)
    _DOCUMENT_WORDS.move_to_end(key)
    words = list(dict.fromkeys(w for w in content_words(question) if w.isalpha() and len(w) >= ABSENT_LETTERS))
    absent = [w for w in words if not holds_any_form(found, w)]
    # Named only when the question is mostly about what the document lacks: one unused word of several ("What
    # happens when you write past the end of a blob?") is a wording, not the reason no answer was found.
    return absent[:ABSENT_NAMED] if 2 * len(absent) >= len(words) else []


def span_citations(library: Library, stored: StoredPot, spans: list[Span]) -> list[Citation]:
    """Each span as a citation: its page (or line), first token, share of the question's attention, text.

    Best first, as the other answer modes cite.
    """
    return document_span_citations(library, stored.doc_id, stored.engine.tokenizer, spans)


def document_span_citations(library: Library, doc_id: str, tokenizer, spans: list[Span]) -> list[Citation]:
    """span_citations for spans of the document `doc_id` (whose pot need not be loaded), best first."""
    if not spans:
        return []
    document = library.store.documents.get(doc_id)
    try:
        location_map = TokenLocationMap.load(library.store.location_map_path(doc_id))
    except IngestError:
        location_map = None
    unit = page_label(document.kind if document else None)
    citations = []
    for span in sorted(spans, key=lambda s: -s.score):
        page = line = None
        if location_map is not None and span.best < len(location_map):
            where = location_map.location(span.best)
            page, line = where.page, where.line
        label = f"{unit} {page:,}" if page else (f"line {line:,}" if line else f"token {span.start:,}")
        snippet = " ".join(tokenizer.decode(list(span.ids), skip_special_tokens=True).split())
        line = None if page else line
        starts = _line_starts(tokenizer, location_map, span, snippet) if line is not None else ()
        citation = Citation(doc_id, page, line, span.start, round(span.score, 3), label, snippet, line_starts=starts)
        citations.append(citation)
    return citations


def _line_starts(tokenizer, location_map: TokenLocationMap, span: Span, snippet: str) -> tuple:
    """Citation.line_starts of a span: where in its snippet each line it crosses begins; () when the lines'
    texts, joined, are not the snippet (a line's edge inside a word)."""
    ids = list(span.ids)
    lines = location_map.lines_of(range(span.start, span.start + len(ids)))  # (n,) line of each token
    starts, texts, offset, first = [], [], 0, 0
    for index in range(1, len(ids) + 1):
        if index < len(ids) and lines[index] == lines[first]:
            continue
        text = " ".join(tokenizer.decode(ids[first:index], skip_special_tokens=True).split())
        if text:
            starts.append((offset, int(lines[first]), span.start + first))
            texts.append(text)
            offset += len(text) + 1
        first = index
    return tuple(starts) if " ".join(texts) == snippet else ()


def with_snippets(library: Library, stored: StoredPot, citations: list[Citation], reach: int = 48) -> list[Citation]:
    """Attention citations with the sentence (or line) around each place's most attended token as its text.

    Unchanged when the document's text cannot be read any more.
    """
    if not citations:
        return citations
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
    except DocumentNotFound:
        return citations
    breaks = span_breaks(stored.engine)
    total = token_count(path)
    found = []
    for citation in citations:
        center = citation.token if citation.best_token is None else citation.best_token
        window_start = max(0, center - reach)
        window = read_window(path, window_start, min(total, center + 1 + reach))
        start, end = widen(center, center + 1, window, window_start, breaks, reach)
        ids = window[start - window_start : end - window_start]
        text = " ".join(stored.engine.tokenizer.decode(ids, skip_special_tokens=True).split())
        found.append(replace(citation, snippet=text))
    return found
