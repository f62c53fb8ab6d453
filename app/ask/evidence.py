"""Answer mode `evidence`: the pot points, the document answers (core.answer.evidence), with the app's files.

The spans the question's attention ranks best are read from the document's stored token ids, placed between
the pot and the question, and cited: each citation is a span with its page or line and its text.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

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
from infinipot.core.engine import Engine
from infinipot.ingest import TokenLocationMap
from infinipot.ingest.errors import IngestError


@dataclass(frozen=True)
class EvidenceSearch:
    """What the search found before the reranker chose the passages read: the candidate spans (none when the pot
    holds the whole document or the text is gone), with what reading them needs."""

    candidates: list[Span]
    warnings: list[str]
    engine: Engine | None = None
    question: str = ""
    total: int = 0  # document tokens
    fetch: Callable[[int, int], list[int]] | None = None  # document token ids [start, end)
    fitted: EvidenceConfig | None = None  # the config with its budget fitted beside the pot, which spans_read reads

    def read(self) -> list[Span]:
        """The spans read, in document order (core.answer.evidence.spans_read; none without candidates)."""
        return spans_read(self.engine, self.candidates, self.question, self.total, self.fetch, self.fitted)


def search_evidence(
    library: Library, stored: StoredPot, question: str, config: EvidenceConfig, max_new_tokens: int
) -> EvidenceSearch:
    """The candidate spans the question's attention over the pot points to. None when the pot holds the whole
    document; none, with a warning, when the document's text cannot be read any more (the answer then comes from
    the pot alone). The app shows the best candidate at once, before the spans are read."""
    if holds_whole_document(stored.pot):
        return EvidenceSearch([], [])
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
    except DocumentNotFound as exc:
        return EvidenceSearch([], [f"{exc}; answering from the pot alone"])
    total = token_count(path)
    heads = None
    if config.pointer != "later-layers" and config.ranking != "words":
        heads = library.heads.get(stored.engine)

    def fetch(start: int, end: int) -> list[int]:
        return read_window(path, start, end)

    engine = stored.engine
    candidates, fitted = candidate_spans(engine, stored.pot, question, total, fetch, config, max_new_tokens, heads)
    return EvidenceSearch(candidates, [], engine, question, total, fetch, fitted)


def gather_evidence(
    library: Library, stored: StoredPot, question: str, config: EvidenceConfig, max_new_tokens: int
) -> tuple[list[Span], list[str]]:
    """(spans read in document order, warnings): search_evidence, then its spans read."""
    search = search_evidence(library, stored, question, config, max_new_tokens)
    return search.read(), search.warnings


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
