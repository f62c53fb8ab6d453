"""The document's summary: its outline, each part with what it says, in the document's own sentences
(core.summary), stored beside the document so that asking again is instant, and made anew on request."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from infinipot.app.ask.citing import page_label
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.documents import DocumentNotFound, require_document, stored_token_ids
from infinipot.app.library.home import Library
from infinipot.app.library.outline import document_outline, text_lines
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.library.token_ids import read_window, token_count
from infinipot.app.memory_trim import then_freed
from infinipot.core.decoding import DecodingConfig
from infinipot.core.log_summary import is_log
from infinipot.core.summary import OutlineEntry, SummaryConfig, outline_summary
from infinipot.ingest import TokenLocationMap
from infinipot.ingest.errors import IngestError
from infinipot.storage.errors import describe_write_error

# What made a stored summary: one made another way (an older method: "outline-3", "extractive-2", "written-2") is
# made anew, not served. The outline's limits (SummaryConfig) are not part of it.
SUMMARY_METHOD = "outline-4"


def stored_summary(library: Library, stored: StoredPot, config: SummaryConfig) -> dict | None:
    """The summary kept for this pot and made by this method ({"summary", "parts", ...}; a pot read again, another
    pot, or a summary made by an older method has none yet). Whatever `config` asks, a kept summary is served."""
    kept = library.files.load_summary(stored.doc_id)
    if not kept or kept.get("pot_id") != stored.record.id or kept.get("method") != SUMMARY_METHOD:
        return None
    return kept


def place_labeller(library: Library, stored: StoredPot) -> Callable[[int], str]:
    """Where a document token is, as a citation names it ("page 3", "line 120"); "" when unknown."""
    document = library.store.documents.get(stored.doc_id)
    try:
        location_map = TokenLocationMap.load(library.store.location_map_path(stored.doc_id))
    except IngestError:
        return lambda token: ""
    unit = page_label(document.kind if document else None)

    def label(token: int) -> str:
        if token >= len(location_map):
            return ""
        where = location_map.location(token)
        return f"{unit} {where.page:,}" if where.page else (f"line {where.line:,}" if where.line else "")

    return label


def document_summary(
    library: Library,
    stored: StoredPot,
    decoding: DecodingConfig,
    config: SummaryConfig,
    new: bool,
    on_part: Callable[[int, int], None] | None,
    stats: AskStats,
) -> Iterator[str]:
    """The document's summary as it streams: the stored one (stats.reused_summary), or, with `new` or when there
    is none for its pot, a new one made part by part, stored once complete; the memory it needed given back."""
    kept = None if new else stored_summary(library, stored, config)
    if kept is not None:
        stats.reused_summary = True
        stats.summary_parts = list(kept.get("parts") or [])
        return iter([kept["summary"]])
    return then_freed(summary_pieces(library, stored, decoding, stats, config, on_part))


def summary_pieces(
    library: Library,
    stored: StoredPot,
    decoding: DecodingConfig,
    stats: AskStats,
    config: SummaryConfig,
    on_part: Callable[[int, int], None] | None = None,
) -> Iterator[str]:
    """Stream a new summary of the document; once it is complete it is stored (a stopped one is not)."""
    started = time.perf_counter()
    document = require_document(library.store, stored.doc_id)
    try:
        path = stored_token_ids(library.files, document, stored.engine.loaded)
        total, fetch = token_count(path), (lambda start, end: read_window(path, start, end))
    except DocumentNotFound as exc:  # the pot alone can still be summarized
        stats.warnings.append(f"{exc}; summarizing the pot alone")
        total, fetch = 0, (lambda start, end: [])
    if total:
        locate = place_labeller(library, stored)
        made = outline_pieces(library, stored, document, path, total, fetch, config, decoding, locate, on_part)
        summary, parts = made
        stats.summary_parts = [part.as_json() for part in parts]
        yield summary
    else:  # without the document's text the model summarizes the pot
        text = []
        for piece in stored.engine.summarize(stored.pot, decoding, stats):
            text.append(piece)
            yield piece
        summary = "".join(text).strip()
    seconds = round(time.perf_counter() - started, 3)
    if library.store.read_only:
        stats.warnings.append(f"the data folder {library.home} is read-only, so this summary is not kept")
        return
    try:
        library.files.save_summary(
            stored.doc_id,
            {
                "pot_id": stored.record.id,
                "summary": summary,
                "parts": stats.summary_parts,
                "seconds": seconds,
                "method": SUMMARY_METHOD,
            },
        )
    except OSError as exc:
        stats.warnings.append(describe_write_error(exc, "keeping the summary", "summarize again to keep one"))


def outline_pieces(library, stored, document, path, total, fetch, config, decoding, locate, on_part=None):
    """The outline summary's text and parts: the document's headings (app.library.outline), and its lines when it
    is a log."""
    engine = stored.engine
    try:
        location_map = TokenLocationMap.load(library.store.location_map_path(stored.doc_id))
    except IngestError:
        location_map = None
    outline, log_lines, line_tokens = [], None, None
    if location_map is not None:
        lines = text_lines(path, location_map, engine.tokenizer)
        sections = document_outline(library.files, document, path, location_map, engine.tokenizer, lines)
        outline = [OutlineEntry(section.level, section.title, section.token) for section in sections]
        unpaged = [line for line in lines if line.location.page is None and line.location.line]
        texts = [""] * max((line.location.line for line in unpaged), default=0)  # by line number, blanks too
        for line in unpaged:
            texts[line.location.line - 1] = line.text
        if is_log(texts):
            log_lines = texts
            line_tokens = {line.location.line: line.token for line in unpaged}
    return outline_summary(
        engine, stored.pot, total, fetch, outline, config, decoding, locate, log_lines, line_tokens, on_part
    )
