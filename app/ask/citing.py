"""An answer's citations: the document tokens it drew on (core.answer.citations), as pages, chapters or lines.

Documents with pages (PDF, paginated Word) or chapters (EPUB) are cited by page or chapter; text, HTML and
logs by line. Each citation carries the first token of its page or line, where the visualization opens.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from infinipot.core.answer.citations import CitationConfig, answer_attention, document_token_scores, source_token_scores
from infinipot.ingest import TokenLocationMap
from infinipot.ingest.errors import IngestError


@dataclass(frozen=True)
class CitingConfig:
    # Most places cited for one answer: a short answer rarely draws on more, and more would be noise.
    top: int = 3
    # Places holding less than this share of the answer's counted attention are not cited (the first always
    # is): on a passkey answer the needle's page holds a large share and the runner-up pages a few percent.
    min_share: float = 0.1
    attention: CitationConfig = field(default_factory=CitationConfig)

    def __post_init__(self) -> None:
        if self.top < 1:
            raise ValueError(f"citations per answer must be at least 1, got {self.top}")
        if not 0.0 <= self.min_share <= 1.0:
            raise ValueError(f"least cited share must be between 0 and 1, got {self.min_share}")


@dataclass(frozen=True)
class Citation:
    document: str  # doc_id
    page: int | None  # page, or chapter for EPUB; None for documents without pages
    line: int | None  # line for documents without pages; None when a whole page is cited
    token: int  # first document token of the cited page or line
    score: float  # share of the answer's counted attention on this place (0..1)
    label: str  # "page 12", "chapter 3", "line 1,234"
    snippet: str = ""  # the cited text: an evidence span, or the sentence around the place's most attended token
    best_token: int | None = None  # the place's most attended document token (where a snippet is read)
    # (offset in the snippet, line, first token) of each line a passage of a document without pages crosses, so
    # the line shown is the quoted sentence's (ask.quoting.arranged_citations, which drops them); () otherwise.
    line_starts: tuple[tuple[int, int, int], ...] = ()

    def as_json(self) -> dict:
        return asdict(self)


def page_label(kind: str | None) -> str:
    """What a document's pages are called: EPUB's are chapters."""
    return "chapter" if kind == "epub" else "page"


def cite_tokens(
    location_map: TokenLocationMap,
    tokens: np.ndarray,
    scores: np.ndarray,
    document: str,
    config: CitingConfig,
    unit_name: str = "page",
) -> list[Citation]:
    """Group token scores (document token indexes and their shares) by page, or by line without pages.

    Returns at most `config.top` citations, highest score first.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    inside = tokens < len(location_map)
    tokens, scores = tokens[inside], scores[inside]
    if not len(tokens):
        return []
    pages = location_map.pages_of(tokens)
    by_page = bool(pages.any())
    units = pages if by_page else location_map.lines_of(tokens)
    names, slot = np.unique(units, return_inverse=True)
    totals = np.bincount(slot, weights=scores, minlength=len(names))
    best = {}  # unit slot -> its most attended token
    for index in np.argsort(-scores, kind="stable").tolist():
        best.setdefault(int(slot[index]), int(tokens[index]))
    order = np.argsort(-totals, kind="stable")[: config.top]
    citations = []
    for rank, index in enumerate(order.tolist()):
        share = float(totals[index])
        if rank and share < config.min_share:
            break
        unit = int(names[index])
        if by_page:
            first = _first_token(location_map, unit, lambda t: location_map.page_of(t) or 0)
            citations.append(
                Citation(document, unit, None, first, round(share, 3), f"{unit_name} {unit:,}", best_token=best[index])
            )
        else:
            first = _first_token(location_map, unit, lambda t: location_map.location(t).line or 0)
            citations.append(
                Citation(document, None, unit, first, round(share, 3), f"line {unit:,}", best_token=best[index])
            )
    return citations


def _first_token(location_map: TokenLocationMap, unit: int, unit_of) -> int:
    """First token whose page (or line) is `unit`: pages and lines never decrease along the document."""
    low, high = 0, len(location_map)
    while low < high:
        middle = (low + high) // 2
        if unit_of(middle) < unit:
            low = middle + 1
        else:
            high = middle
    return low


def cite_answer(
    engine,
    pot,
    question: str,
    answer_ids: list[int],
    location_map_path: Path,
    document: str,
    kind: str | None = None,
    config: CitingConfig | None = None,
) -> list[Citation]:
    """The places an answer drew on, from its attention over the pot it was generated from.

    `pot` must be the pot the answer was generated from (the stored one, or the copy distilled to make
    room for the request). No citations (an empty list) when the answer is empty, and none rather than an
    error when the document's location map is missing or damaged.
    """
    config = config or CitingConfig()
    if not answer_ids:
        return []
    try:
        location_map = TokenLocationMap.load(location_map_path)
    except IngestError:
        return []
    attention = answer_attention(engine.model, pot, engine.answer_prompt_ids(question), answer_ids)  # (L, H_kv, n)
    tokens, scores = document_token_scores(pot, attention, config.attention)
    return cite_tokens(location_map, tokens.numpy(), scores.numpy(), document, config, page_label(kind))


@dataclass(frozen=True)
class CitedDocument:
    """One document of a merged pot, in source order: what citing needs to name and locate it."""

    doc_id: str
    name: str
    location_map_path: Path
    kind: str | None = None


def cite_across(
    engine,
    pot,
    question: str,
    answer_ids: list[int],
    documents: list[CitedDocument],
    config: CitingConfig | None = None,
) -> list[Citation]:
    """Citations of an answer from a merged pot, each naming its document ("notes.txt, line 12").

    Shares are of the answer's attention over all documents together; at most `config.top` places in all,
    best first, the first always cited and the others only above `config.min_share`. A document whose
    location map is missing is not cited.
    """
    config = config or CitingConfig()
    if not answer_ids:
        return []
    attention = answer_attention(engine.model, pot, engine.answer_prompt_ids(question), answer_ids)  # (L, H_kv, n)
    per_document = source_token_scores(pot, attention, config.attention, len(documents))
    found: list[Citation] = []
    for document, (tokens, scores) in zip(documents, per_document, strict=True):
        try:
            location_map = TokenLocationMap.load(document.location_map_path)
        except IngestError:
            continue
        places = cite_tokens(
            location_map, tokens.numpy(), scores.numpy(), document.doc_id, config, page_label(document.kind)
        )
        found += [replace(place, label=f"{document.name}, {place.label}") for place in places]
    found.sort(key=lambda place: -place.score)
    return [place for rank, place in enumerate(found[: config.top]) if rank == 0 or place.score >= config.min_share]
