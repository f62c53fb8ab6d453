"""Which part of a cited passage to quote under an answer: the sentence that shares the most words with it.

An evidence passage is a few sentences; quoting its first 100 or 180 characters often shows the sentence before
the one that answers ("The skipper ... mended the roof" instead of "... the combination ... is 7419."). Plain
text in, plain text out; no torch, so the web page and the terminal share it.
"""

from __future__ import annotations

import re
from textwrap import shorten

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[^\W_]+")
# Words that every answer shares with every passage; they would pull the quote to the first sentence.
_COMMON = frozenset(
    "the a an and or of to in on at by for with from is are was were be been it its this that these those as "
    "which what who whom whose when where how why text above answer question sentence".split()
)


def answer_words(text: str) -> set[str]:
    """Lower-case words and numbers of `text`, without the words any answer and passage share."""
    return {w for w in (m.group(0).lower() for m in _WORD.finditer(text or "")) if w not in _COMMON}


def _best_sentence(text: str, wanted: set[str]) -> tuple[int, int]:
    """(where the sentence of `text` sharing the most words with `wanted` starts, how many it shares); the first
    sentence on a tie."""
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)]
    best, best_shared = 0, 0
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(text)
        shared = len(answer_words(text[start:end]) & wanted)
        if shared > best_shared:
            best, best_shared = start, shared
    return best, best_shared


_DOT_LEADERS = re.compile(r"(?:\.\s?){6,}")


def index_like(snippet: str) -> bool:
    """Whether the snippet is mostly a table of contents' or an index's lines ("asn1Coding program . . . . . 8"):
    words led by dots to a page number, which tell a reader where, not what."""
    text = snippet or ""
    leaders = sum(len(match.group(0)) for match in _DOT_LEADERS.finditer(text))
    return leaders >= 0.15 * len(text) > 0


def shared_words(snippet: str, answer: str) -> int:
    """How many words the snippet's sentence closest to the answer shares with it (0 without an answer)."""
    wanted = answer_words(answer)
    return _best_sentence(" ".join((snippet or "").split()), wanted)[1] if wanted else 0


def quoted_part(snippet: str, answer: str) -> str:
    """The snippet from the start of its sentence that shares the most words with the answer (the first
    sentence on a tie or when the answer shares none)."""
    text = " ".join((snippet or "").split())
    wanted = answer_words(answer)
    if not wanted:
        return text
    best, _ = _best_sentence(text, wanted)
    return text[best:] if best == 0 else "…" + text[best:]


def _sentences(text: str) -> list[str]:
    text = " ".join((text or "").split())
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)]
    ends = starts[1:] + [len(text)]
    pieces = [text[start:end].strip().lstrip("… ") for start, end in zip(starts, ends, strict=True)]
    return [piece for piece in pieces if piece]


# An answer of at least this many words found word for word in a passage is quoted as it is: it is the document's
# sentence (or log line) the answer came from. Shorter ones ("8000ms") are found inside their whole sentence.
_VERBATIM_WORDS = 5


def answer_sentence(snippet: str, answer: str, question: str = "") -> tuple[str, int]:
    """(the whole sentence of `snippet` the answer came from, how many of the answer's words it shares): the answer
    itself when the snippet holds it word for word (a log line has no stop to end it, so the stop-split sentence
    would run on into the next line), else the one sharing the most words with the answer, then with the question;
    the first on a tie."""
    wanted, asked = answer_words(answer), answer_words(question)
    verbatim = " ".join((answer or "").split())
    if len(verbatim.split()) >= _VERBATIM_WORDS and verbatim in " ".join((snippet or "").split()):
        return verbatim, len(wanted)
    best, best_key = "", (-1, -1)
    for sentence in _sentences(snippet):
        words = answer_words(sentence)
        key = (len(words & wanted), len(words & asked))
        if key > best_key:
            best, best_key = sentence, key
    return best, max(best_key[0], 0)


def marked_words(sentence: str, answer: str) -> list[str]:
    """The words of `sentence` that the answer also uses (not the common ones), in the sentence's order, each once:
    what the page marks in a quote."""
    wanted = answer_words(answer)
    seen: dict[str, None] = {}
    for match in _WORD.finditer(sentence or ""):
        word = match.group(0)
        if word.lower() in wanted:
            seen.setdefault(word, None)
    return list(seen)


def arranged_citations(citations: list[dict], answer: str, question: str = "") -> list[dict]:
    """An answer's citations as a reader wants them: one per place (the same page or line of a document cited
    twice becomes one citation, its texts joined and its shares added), the place whose sentence shares the most
    words with the answer first (the citations' own order on ties), then the others by share, each with `quote`,
    the whole sentence of its text the answer came from. A passage of a document without pages is cited at the
    line its quote begins on. Lines of an index or a table of contents (index_like) are left out when another
    place is cited: they tell where, not what."""
    if any(not index_like(c.get("snippet") or "") for c in citations):
        citations = [c for c in citations if not index_like(c.get("snippet") or "")]
    scored = []
    for citation in _one_per_place(citations):
        quote, shared = answer_sentence(citation.get("snippet") or "", answer, question)
        scored.append((-shared, _at_quoted_line({**citation, "quote": quote})))
    scored.sort(key=lambda pair: pair[0])  # stable: the citations' order on ties
    arranged = _one_per_place([citation for _, citation in scored])  # a quote's line may be another's place
    arranged[1:] = sorted(arranged[1:], key=lambda citation: -(citation.get("score") or 0.0))
    for citation in arranged:
        citation.pop("line_starts", None)
    return arranged


# What a plain-text listing shows for the first source when the answer is its sentence.
QUOTED_ABOVE = "(the sentence quoted above)"
# Characters of a source's passage a plain-text listing shows beside the answer.
SOURCE_LINE_CHARACTERS = 100


def source_lines(citations: list[dict], answer: str) -> list[tuple[str, str]]:
    """The sources under an answer in plain text, (label, what to show): the first is the sentence the answer came
    from, whole (or a note that the answer quoted it); the others the part of their passage the answer used,
    shortened."""
    lines = []
    for index, citation in enumerate(citations):
        if index == 0 and citation.get("quote"):
            quote = " ".join(citation["quote"].split())
            lines.append((citation["label"], QUOTED_ABOVE if quote in " ".join(answer.split()) else quote))
            continue
        quote = quoted_part(citation["snippet"], answer)
        lines.append((citation["label"], shorten(quote, SOURCE_LINE_CHARACTERS)))
    return lines


def _place(citation: dict) -> str:
    return f"{citation.get('doc_id') or citation.get('document') or ''}:{citation.get('label') or ''}"


def _one_per_place(citations: list[dict]) -> list[dict]:
    """Citations of the same place joined into the first one: texts joined, shares added (its quote kept)."""
    merged: dict[str, dict] = {}
    for citation in citations:
        place = _place(citation)
        if place not in merged:
            merged[place] = dict(citation)
            continue
        kept = merged[place]
        texts = [t for t in (kept.get("snippet"), citation.get("snippet")) if t]
        if len(texts) == 2 and texts[0] != texts[1]:  # the text grows: its lines are known if both parts' are
            shift = len(texts[0]) + len(" … ")
            later = [(offset + shift, line, token) for offset, line, token in citation.get("line_starts") or ()]
            kept["line_starts"] = [*kept["line_starts"], *later] if kept.get("line_starts") and later else ()
        kept["snippet"] = " … ".join(dict.fromkeys(texts))
        kept["score"] = round((kept.get("score") or 0.0) + (citation.get("score") or 0.0), 3)
    return list(merged.values())


def _at_quoted_line(citation: dict) -> dict:
    """The citation at the line its quote begins on, when its passage's lines are known (Citation.line_starts)."""
    starts, quote = citation.get("line_starts"), citation.get("quote") or ""
    at = (citation.get("snippet") or "").find(quote) if starts and quote else -1
    if at < 0:
        return citation
    _, line, token = [start for start in starts if start[0] <= at][-1]  # the first line starts at 0
    return {**citation, "line": line, "token": token, "label": f"line {line:,}"}
