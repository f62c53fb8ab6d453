"""A question to the whole library (or a chosen set of documents): the words find the documents, the pots point,
the reranker picks, the passages answer.

1. The question's words are sought in every chosen document at once through the library's FTS5 index (bm25 over
   passages of 128 tokens, storage/passages.py), not by scanning each document's tokens; the documents whose
   best passages rank highest answer.
2. Each answering document has its pot asked as for one document (core.answer.evidence: the question's attention over
   the pot plus its words, reranked by how likely the model finds the question after each span); a pot that holds
   its whole short document points at nothing, and its best passages by words stand in.
3. With several answering documents, their spans are reranked together (core.answer.rerank) and the best few read; the
   answer is made from them as for one document (core.answer.grounded_answer), and each citation names its document.
4. Documents ranked close to the first (LibraryConfig.others_within) are then asked each on its own; when the first
   states an answer and others do too, the answer names each with its place and sentence, one line each
   ("GPL-2 (line 93): ... a) You must cause the modified files to carry prominent notices ...").

A library answer is not stored in any document's conversation: it belongs to none of them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from infinipot.app.ask import evidence
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.documents import DocumentNotFound, stored_token_ids
from infinipot.app.library.home import Library
from infinipot.app.library.passage_index import ensure_indexed
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.library.token_ids import read_window
from infinipot.core.answer.evidence import EvidenceConfig, Span, likeliest
from infinipot.core.answer.grounding import content_words
from infinipot.core.model import LoadedModel
from infinipot.storage.passages import PassageHit
from infinipot.storage.records import DocumentRecord

NOTHING_MATCHES = "None of the {count} documents asked contains the question's words, so none of them answers it."


@dataclass(frozen=True)
class LibraryConfig:
    # Passages the word index ranks (bm25) to choose the documents that answer.
    passages: int = 40
    # Documents answering, those whose best passages rank highest: each has its pot asked as for one document
    # (loading it takes about 2 s on a 2-core CPU when it is not loaded, and one pass of the question over it).
    # With one, the answer is exactly the one its document alone gives; with more, their spans are reranked
    # together and the best `read_spans` read.
    documents: int = 1
    # Spans read to answer when several documents answer (as EvidenceConfig.read_spans for one).
    read_spans: int = 3
    # Further documents asked beside those, each on its own as if asked alone, when their rank comes close to the
    # first's: a question two licences answer ("modified files must carry prominent notices") names both, each with
    # its sentence, where the first alone answered before. Each costs about as much as a question to it alone.
    others: int = 3
    # How close: a further document's rank (ranked_documents' weight) at least this share of the first's. Over the
    # seven licences of /usr/share/common-licenses: the other licences holding "prominent notices" rank 0.97, 0.94
    # and 0.86 of Apache-2.0, BSD's "endorse or promote" 0.78 of Artistic's; those that do not answer 0.68 or less.
    others_within: float = 0.75

    def __post_init__(self) -> None:
        for name in ("passages", "documents", "read_spans"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"library {name.replace('_', ' ')} must be at least 1, got {value!r}")
        if isinstance(self.others, bool) or not isinstance(self.others, int) or self.others < 0:
            raise ValueError(f"library others must be 0 or more, got {self.others!r}")
        if not 0.0 < self.others_within <= 1.0:
            raise ValueError(f"library others within must be in (0, 1], got {self.others_within!r}")


@dataclass
class LibraryStats(AskStats):
    """AskStats plus the search: documents asked, those the pots pointed from, and the search's time."""

    documents_asked: int = 0
    documents_pointed: list[str] = field(default_factory=list)
    candidates: int = 0
    search_seconds: float = 0.0
    # Each document that answered on its own (DocumentAnswer.as_json), the first first; empty when only the first
    # was asked (no document ranked close to it, or it stated no answer).
    answers: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    doc_id: str
    span: Span
    source: str  # "words" (the library's index) or "pot" (the document's own evidence)


def passage_span(hit: PassageHit, ids: list[int]) -> Span:
    """An index hit as a span of its document's tokens; its citation points at the passage's middle."""
    return Span(hit.first_token, hit.first_token + len(ids), tuple(ids), hit.score, hit.first_token + len(ids) // 2)


def word_candidates(
    library: Library, hits: list[PassageHit], records: dict[str, DocumentRecord], loaded: LoadedModel
) -> list[Candidate]:
    """The index's passages as spans read from each document's stored token ids (a document whose text is
    gone is passed over)."""
    paths = {}
    found = []
    for hit in hits:
        if hit.document_id not in paths:
            try:
                paths[hit.document_id] = stored_token_ids(library.files, records[hit.document_id], loaded)
            except DocumentNotFound:
                paths[hit.document_id] = None
        path = paths[hit.document_id]
        if path is None:
            continue
        ids = read_window(path, hit.first_token, hit.end_token)
        if ids:
            found.append(Candidate(hit.document_id, passage_span(hit, ids), "words"))
    return found


def pointed_candidates(
    library: Library, stored: StoredPot, question: str, config: EvidenceConfig, max_new_tokens: int
) -> tuple[list[Candidate], list[str]]:
    """The spans the document's pot and words point at for the question, reranked within the document exactly as
    a question to it alone is (core.answer.evidence); none when its pot holds the whole document."""
    spans, warnings = evidence.gather_evidence(library, stored, question, config, max_new_tokens)
    return [Candidate(stored.doc_id, span, "pot") for span in spans if not span.held], warnings


def standing_in(
    stored: StoredPot, words: list[Candidate], question: str, config: EvidenceConfig, max_new_tokens: int
) -> list[Candidate]:
    """The best of a document's passages by words, as many as the spans read for one document and as fit the
    answer's room beside the question (Engine.evidence_room)."""
    room = stored.engine.evidence_room(
        question, max_new_tokens, config.max_spans, config.pot_entries, config.question_first
    )
    chosen, used = [], 0
    for candidate in words[: config.read_spans or len(words)]:
        if used + len(candidate.span) > room:
            break
        chosen.append(candidate)
        used += len(candidate.span)
    return chosen


# A document's passages after its best count this much each (its second and third best): they break near ties
# between documents' best passages. Measured on the 200-document library (docs/experiments.md, "A whole library"):
# the right document first for 49 of the 54 development questions and 22 of the 44 paraphrased ones with 0.1,
# 48 and 22 with 0.3, 51 and 18 with the best passage alone, 47 and 23 with the three summed (1.0).
NEXT_PASSAGES_WEIGHT = 0.1


def ranked_documents(hits: list[PassageHit]) -> list[str]:
    """Documents by their best passage, their second and third best adding NEXT_PASSAGES_WEIGHT of theirs: a
    document that matches the question's rare word once (a log's "max_connections") outranks one that holds its
    commoner words in many places (a story's "set")."""
    weights = document_weights(hits)
    return sorted(weights, key=lambda doc_id: -weights[doc_id])


def document_weights(hits: list[PassageHit]) -> dict[str, float]:
    """Each document's rank: its best passage's score plus NEXT_PASSAGES_WEIGHT of its second and third best."""
    best: dict[str, list[float]] = {}
    for hit in hits:
        best.setdefault(hit.document_id, []).append(hit.score)
    weights = {}
    for doc_id, scores in best.items():
        first, *rest = sorted(scores, reverse=True)
        weights[doc_id] = first + NEXT_PASSAGES_WEIGHT * sum(rest[:2])
    return weights


def close_documents(hits: list[PassageHit], config: LibraryConfig) -> tuple[list[str], list[str]]:
    """(the documents that answer together, as ranked_documents chose them; the further documents whose rank
    comes within config.others_within of the first's, config.others at most, each to answer on its own)."""
    weights = document_weights(hits)
    ranked = sorted(weights, key=lambda doc_id: -weights[doc_id])
    chosen = ranked[: config.documents]
    top = weights[ranked[0]] if ranked else 0.0
    close = [doc_id for doc_id in ranked[config.documents :] if weights[doc_id] >= config.others_within * top]
    return chosen, close[: config.others]


def search_words(question: str) -> str:
    """What the library's index is searched with: the question's content words (core.answer.grounding), or the question
    itself when it has none. Function words point nowhere, and summed over many passages they carried "What is
    max_connections set to?" to the story rather than the log."""
    return " ".join(content_words(question)) or question


def reranked(stored: StoredPot, candidates: list[Candidate], question: str, keep: int) -> list[Candidate]:
    """The `keep` candidates after which the question is likeliest, the likeliest last (read right before the
    question, as for one document); each span's score becomes its share of the kept likelihoods."""
    if not candidates:
        return []
    if len(candidates) == 1:
        return [replace(candidates[0], span=replace(candidates[0].span, score=1.0))]
    best = likeliest(stored.engine, [c.span for c in candidates], question, keep)
    total = sum(math.exp(score) for _, score in best) or 1.0
    kept = [
        replace(candidates[index], span=replace(candidates[index].span, score=math.exp(score) / total))
        for index, score in best
    ]
    return list(reversed(kept))


def library_citations(library: Library, stored: StoredPot, read: list[Candidate], names: dict[str, str]) -> list[dict]:
    """Citations of the spans read, best first, each naming its document (`document`: the stored name, and
    `doc_id`), each score its share of the spans read (the index's own scores, when no reranker ran, are no
    shares: 13.05 would read "1305%")."""
    total = sum(c.span.score for c in read)
    scale = 1.0 / total if total > 1.0 else 1.0
    citations = []
    for candidate in sorted(read, key=lambda c: -c.span.score):
        for citation in evidence.document_span_citations(
            library, candidate.doc_id, stored.engine.tokenizer, [candidate.span]
        ):
            shared = {**citation.as_json(), "score": round(citation.score * scale, 3)}
            citations.append({**shared, "document": names[candidate.doc_id], "doc_id": candidate.doc_id})
    return citations


@dataclass(frozen=True)
class CloseDocument:
    """A document asked on its own beside the first (LibraryConfig.others): its id and its passages the words
    found, which stand in when its pot points at nothing (document_candidates)."""

    doc_id: str
    words: list[Candidate]


def document_candidates(
    library: Library,
    stored: StoredPot,
    own_words: list[Candidate],
    loaded: LoadedModel,
    question: str,
    evidence_config: EvidenceConfig,
    max_new_tokens: int,
    stats: LibraryStats,
) -> list[Candidate]:
    """The spans a document's pot and words point at, as for a question to it alone; a pot that holds its whole
    document points at nothing, and its best passages by words (`own_words`) stand in."""
    stats.warnings += stored.warnings
    found: list[Candidate] = []
    if stored.engine.loaded.identity == loaded.identity:
        found, warnings = pointed_candidates(library, stored, question, evidence_config, max_new_tokens)
        stats.warnings += warnings
        stats.documents_pointed.append(stored.doc_id)
    return found or standing_in(stored, own_words, question, evidence_config, max_new_tokens)


def gather_library_evidence(
    library: Library,
    open_pot: Callable[[str], StoredPot],
    documents: list[DocumentRecord],
    loaded: LoadedModel,
    question: str,
    config: LibraryConfig,
    evidence_config: EvidenceConfig,
    max_new_tokens: int,
    stats: LibraryStats,
) -> tuple[StoredPot | None, list[Candidate], list[CloseDocument]]:
    """(the pot that answers, the candidates read, likeliest last; the further documents whose rank comes close,
    to answer each on its own, one pot at a time: document_candidates); (None, [], []) when no document holds any
    of the question's words. `open_pot` loads a document's general pot (the service keeps the loaded ones)."""
    started = time.perf_counter()
    store = library.store
    records = {document.id: document for document in documents}
    stats.documents_asked = len(records)
    stats.warnings += ensure_indexed(store, library.files, documents, loaded)
    hits = store.passages.search(search_words(question), loaded.identity, config.passages, list(records))
    stats.search_seconds = time.perf_counter() - started
    if not hits:
        return None, [], []
    chosen, close = close_documents(hits, config)
    wanted = {*chosen, *close}
    words = word_candidates(library, [hit for hit in hits if hit.document_id in wanted], records, loaded)
    candidates: list[Candidate] = []
    answering: StoredPot | None = None
    for doc_id in chosen:
        stored = open_pot(doc_id)
        answering = answering or stored
        own_words = [c for c in words if c.doc_id == doc_id]
        candidates += document_candidates(
            library, stored, own_words, loaded, question, evidence_config, max_new_tokens, stats
        )
    stats.candidates = len(candidates)
    others = [CloseDocument(doc_id, [c for c in words if c.doc_id == doc_id]) for doc_id in close]
    if len(chosen) == 1:  # already ranked within its document, as a question to it alone
        return answering, candidates, others
    return answering, reranked(answering, candidates, question, config.read_spans), others


@dataclass
class DocumentAnswer:
    """One document's own answer to a library question: its text, verdict and citations (best first)."""

    doc_id: str
    name: str
    text: str
    state: str  # AskStats.answer_state: "stated", "closest" or "not_found"
    sentence: str  # the document's sentence it was answered with ("" when none)
    citations: list[dict]
    reason: str = ""  # AskStats.answered_by

    @property
    def place(self) -> str:
        """Where its answer is: its first citation's place in its document ('line 95', 'page 2')."""
        if not self.citations:
            return ""
        label = self.citations[0].get("label") or ""
        return label.removeprefix(f"{self.name}, ")

    def as_json(self) -> dict:
        return {
            "document": self.name,
            "doc_id": self.doc_id,
            "answer": self.text,
            "answer_state": self.state,
            "place": self.place,
            "token": self.citations[0].get("token") if self.citations else None,
        }


def named_answers(answers: list[DocumentAnswer]) -> list[DocumentAnswer]:
    """The documents' answers that name their document in the answer: when the first states an answer and others
    do too, each that does, in rank order; [] when the first document's answer stands as it is. A further document
    is heard only beside the first: alone, its check's rare false "stated" would replace the first's "No direct
    answer found" ("What is the address of the Free Software Foundation?": GPL-3's "... any later version published
    by the Free Software Foundation." where GPL-2, which holds the address, found none)."""
    stated = [answer for answer in answers if answer.state == "stated" and (answer.sentence or answer.text).strip()]
    if len(stated) < 2 or stated[0] is not answers[0]:
        return []
    return stated


def named_line(answer: DocumentAnswer) -> str:
    """'GPL-2 (line 95): a) You must cause the modified files to carry prominent notices ...'"""
    sentence = " ".join((answer.sentence or answer.text).split())
    return f"{answer.name} ({answer.place}): {sentence}" if answer.place else f"{answer.name}: {sentence}"


def named_citations(answers: list[DocumentAnswer]) -> list[dict]:
    """The citations of answers named together: each one's own place first, in the answers' order, then the
    rest of theirs by share; each document's shares (of its own answer) scaled to an equal part of the whole."""
    shared = []
    for answer in answers:
        total = sum(c.get("score") or 0.0 for c in answer.citations) or 1.0
        part = 1.0 / (len(answers) * total)
        shared.append([{**c, "score": round((c.get("score") or 0.0) * part, 3)} for c in answer.citations])
    first = [citations[0] for citations in shared if citations]
    rest = [citation for citations in shared for citation in citations[1:]]
    return first + sorted(rest, key=lambda citation: -(citation.get("score") or 0.0))


def nothing_matches(count: int) -> Iterator[str]:
    yield NOTHING_MATCHES.format(count=count)
