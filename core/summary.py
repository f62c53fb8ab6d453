"""Summaries of a whole document: its outline, each part with what it says; a log's span, errors and incidents.

The summary starts from the document's own structure (core callers pass its headings, each with the token it
starts at: app.library.outline): the main parts in order, each with its lead sentence and the sentence of the
part the pot's general catalyst ranks most important, its sections' titles, and for a story the names that
recur. A document without headings is cut into equal parts; a log is summarized as a log (core.log_summary). The
opening's sentences that say what the document is lead (core.summary_opening). Nothing is written that the
document does not say, and every point has its page or line; the model writes none of it.

The styles before it, main points quoted from the places the pot ranks important ("extractive") and the model's
own summary written part by part ("written": it invents, a "blog post about digital wallets" for the libtasn1
manual), were removed; docs/experiments.md keeps what they measured.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from .answer.evidence import Bucket, EvidenceConfig, attention_ranking, holds_whole_document, verbatim_tail_start
from .decoding import DecodingConfig
from .engine import Engine
from .pot import Pot
from .summary_opening import (
    is_furniture,
    is_notice,
    is_whole,
    leans_on_context,
    opening_sentences,
    prose_sentences,
    says_what_it_is,
)

# A sentence that can be a main point: this many words at least (headings, table rows and page furniture are
# shorter) and at most (a run-on table or listing is longer).
_POINT_WORDS = (6, 60)
# How the catalyst's attention over the pot ranks the document's buckets (only the buckets' size and the
# attention's settings are read).
RANKING = EvidenceConfig()


@dataclass(frozen=True)
class SummaryConfig:
    """How an outline summary is cut (the module's docstring)."""

    # Parts of an outline at most: a book's chapters, not its sections; smaller parts are folded into the one
    # before them.
    parts: int = 16
    # Parts of a document without headings (equal stretches).
    equal_parts: int = 6
    # Section titles listed under a part at most (a specification's "Unified system" has 17).
    sections: int = 16

    def __post_init__(self) -> None:
        if self.parts < 2 or self.equal_parts < 1 or self.sections < 0:
            raise ValueError(
                f"an outline needs at least 2 parts and 1 equal part, and 0 or more sections a part, got "
                f"{self.parts}, {self.equal_parts}, {self.sections}"
            )


# A "word" this long is a run of fragments ("gnu-h-h-n-h-l-h-m-..."): a line of a table of contents or a
# listing, not prose.
_RUN_ON_WORD = 25


def is_run_on(text: str) -> bool:
    """Whether most of a text is in run-on fragments (long "words" of one- or two-letter pieces) rather than
    words; a long identifier such as asn1_der_decoding_startEnd is not one."""
    words = text.split()

    def fragments(word: str) -> bool:
        pieces = [piece for piece in re.split(r"[-_./]", word) if piece]
        return len(word) > _RUN_ON_WORD and bool(pieces) and len(word) / len(pieces) < 3

    letters = sum(len(word) for word in words)
    return letters > 0 and sum(len(word) for word in words if fragments(word)) > 0.3 * letters


def is_point(sentence: str) -> bool:
    """Whether a sentence reads as a statement: it starts a sentence (a capital or a quote), is long enough, is not
    a run of fragments or a web address, ends like a sentence, and is mostly words (not a table row, a listing or a
    line of dots)."""
    words = sentence.split()
    if not _POINT_WORDS[0] <= len(words) <= _POINT_WORDS[1] or not sentence.endswith((".", "!", "?", ".”", '."')):
        return False
    if not (sentence[0].isupper() or sentence[0] in "\"“'") or "://" in sentence:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence) and not is_run_on(sentence) and ". . ." not in sentence


@dataclass(frozen=True)
class OutlineEntry:
    """A heading of the document: its level (1 the top), title and the first token of its line."""

    level: int
    title: str
    token: int


@dataclass(frozen=True)
class Part:
    """A part of an outline summary: its title, first token and place, what it says, and its sections."""

    title: str
    token: int
    place: str
    points: tuple[str, ...]
    sections: tuple[str, ...] = ()

    def as_json(self) -> dict:
        """{"title", "page" or "line" (from the place), "token", "points", "sections"}."""
        out: dict = {"title": self.title, "token": self.token}
        unit, _, number = self.place.partition(" ")
        if unit and number.replace(",", "").isdigit():
            out["line" if unit == "line" else "page"] = int(number.replace(",", ""))
        return out | {"points": list(self.points), "sections": list(self.sections)}


def outline_parts(outline: list[OutlineEntry], document_tokens: int, most: int) -> list[tuple[OutlineEntry, int, list]]:
    """The outline's main parts: (heading, end token, its sections' headings), in order. The top level, or the two
    top levels when the top one has fewer than 3 headings and both fit `most`; past `most` parts, the shortest part
    is folded into the one before it until they fit."""
    if not outline:
        return []
    top = min(entry.level for entry in outline)
    depth = top
    if sum(e.level == top for e in outline) < 3 and sum(e.level <= top + 1 for e in outline) <= most:
        depth = top + 1
    heads = [entry for entry in outline if entry.level <= depth]
    while len(heads) > most:
        lengths = [
            (heads[i + 1].token if i + 1 < len(heads) else document_tokens) - heads[i].token for i in range(len(heads))
        ]
        shortest = min(range(1, len(heads)), key=lambda i: lengths[i])
        del heads[shortest]
    parts = []
    for index, head in enumerate(heads):
        end = heads[index + 1].token if index + 1 < len(heads) else document_tokens
        inside = [e for e in outline if head.token < e.token < end and e.level == min(depth + 1, e.level)]
        parts.append((head, end, [e for e in inside if e.level > head.level]))
    return parts


def _after_heading(text: str, title: str) -> str:
    """A part's text without its heading's line (the heading is the part's title already): the first line when it
    holds the title or is a heading's furniture, not when it is the part's first line of prose."""
    head, newline, rest = text.partition("\n")
    if newline and (" ".join(title.split()) in " ".join(head.split()) or is_furniture(head)):
        return rest
    return text


def _first_point(engine: Engine, fetch, head: OutlineEntry, end: int, skip: set[str], window: int = 384) -> str:
    """The first statement-like sentence of the part's first `window` tokens, its heading's line left out."""
    text = _after_heading(engine.tokenizer.decode(list(fetch(head.token, min(end, head.token + window)))), head.title)
    return next((s for s in prose_sentences(text) if _is_new_statement(s, skip)), "")


# Lower-case content words: what a part says about things; names recur in filler too ("Wim Jansen said that the
# weather would change") and are listed on their own (recurring_names).
_CONTENT_WORD = re.compile(r"\b[a-z][a-z'-]{2,}")
# Words too common in any text to say what a part is about.
_COMMON = frozenset(
    """
    the and that with this from have were they their there which would could should about into when what then them
    than also been some more very only other such each will shall must your you are was for not but all any can
    has had its one two she her his him our out who may see use used using when where while these those here
    """.split()
)


def _is_new_statement(sentence: str, said: set[str]) -> bool:
    """Whether a sentence is a whole statement, not a notice, and not said already (nor held in a longer sentence
    said: a sentence cut at its clauses in one stretch of text is whole in another)."""
    if not is_point(sentence) or not is_whole(sentence) or is_notice(sentence):
        return False
    return not any(sentence in other for other in said)


def _can_sum_up(sentence: str, said: set[str]) -> bool:
    """Whether a sentence can say what a part is about: a new whole statement that is not a side remark."""
    return _is_new_statement(sentence, said) and not leans_on_context(sentence)


def _stem(word: str) -> str:
    """A word without its common ending ("running", "runs" and "run" alike; "handling" and "handles")."""
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word[:6]


def _stems(text: str) -> set[str]:
    """A text's content words, stemmed."""
    return {_stem(word) for word in _CONTENT_WORD.findall(text.lower()) if word not in _COMMON}


def central_sentences(texts: list[str], skip: set[str], titles: list[str] | None = None) -> list[str]:
    """For each part's text, its statement-like sentence most central by the part's own words: the sum, over its
    distinct content words, of how often the part uses each against how many parts use it (tf-idf), over the
    square root of its length, raised for each word of the part's title (and its sections' titles) it uses. A
    story's chapter is told by the sentence with its own names and things ("The Kessring lifeboat, the Constance,
    went out three times before dawn."), not by the coast's weather. Side remarks ("Secondarily, ...") and notices
    are never chosen."""
    counts = []
    for text in texts:
        words: dict[str, int] = {}
        for word in _CONTENT_WORD.findall(text):
            if word not in _COMMON:
                words[word] = words.get(word, 0) + 1
        counts.append(words)
    parts_using: dict[str, int] = {}
    for words in counts:
        for word in words:
            parts_using[word] = parts_using.get(word, 0) + 1
    n = len(texts)
    chosen = []
    for k, (text, words) in enumerate(zip(texts, counts, strict=True)):
        title = _stems(titles[k]) if titles else set()
        best, best_score = "", 0.0
        for sentence in prose_sentences(text):
            if not _can_sum_up(sentence, skip):
                continue
            own = {w for w in _CONTENT_WORD.findall(sentence) if w not in _COMMON}
            score = sum(words.get(w, 0) * math.log((n + 1) / parts_using.get(w, n)) for w in own)
            score *= 1 + len(title & _stems(sentence))
            score /= math.sqrt(len(sentence.split()))
            if score > best_score:
                best, best_score = sentence, score
        chosen.append(best)
    return chosen


def _central_point(
    engine: Engine, fetch, buckets: list[Bucket], start: int, end: int, skip: set[str], size: int
) -> str:
    """The first statement-like sentence of the part's bucket the catalyst's attention ranks best (after its
    first bucket, which the lead point speaks for), widened to the sentences around it."""
    for bucket in buckets:
        first = bucket.index * size
        if start + size <= first < end:
            text = engine.tokenizer.decode(list(fetch(max(start, first - size), min(end, first + 2 * size))))
            sentence = next((s for s in prose_sentences(text) if _can_sum_up(s, skip)), "")
            if sentence:
                return sentence
    return ""


# Tokens of the document's start searched for the sentences that say what it is (a manual's title page, licence
# notice and table of contents come first).
OPENING_WINDOW = 2048
# Tokens of a part read for its central sentence: a long chapter is judged by its first 6K tokens.
CENTRAL_TOKENS = 6144
# Headings of a book's apparatus, not of its matter: no part of a summary.
_NAVIGATION = re.compile(r"(?i)\b(index|table of contents|contents|navigation|previous topic|next topic)\s*$")
# Capitalised words at the start of a sentence or everywhere in prose: no names.
_NOT_NAMES = frozenset(
    """
    The A An And But Or If In On At To Of For With By From As Then When While After Before She He It They We You I
    His Her Its Their Our Your This That These Those There Here What Which Who Where Why How Chapter Part Book Mr
    Mrs Ms Dr Sir Lady Lord Captain Master Director Yes No Not All Some One Two Three Now So Only Even Still
    """.split()
)


def recurring_names(text: str, most: int = 8, least: int = 4) -> list[str]:
    """The names (capitalised words and runs of them, never a sentence's first word) a text uses at least `least`
    times, most used first: the people, places and things a story is about."""
    counts: dict[str, int] = {}
    for sentence in re.split(r"(?<=[.!?])\s+|(?<=[.!?][\"”’])\s+|\n\s*\n", text):
        words = re.findall(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*", sentence)
        first = sentence.lstrip("\"“'‘ ")
        for name in words:
            parts = [w for w in name.split() if w not in _NOT_NAMES]
            if not parts or first.startswith(name) and len(name.split()) == 1:
                continue
            key = " ".join(parts)
            counts[key] = counts.get(key, 0) + 1
    # A single word counts its uses inside longer names too ("Marlowe" in "Ida Marlowe").
    ranked = sorted((n for n, c in counts.items() if c >= least), key=lambda n: (-counts[n], n))
    chosen: list[str] = []
    for name in ranked:
        if not any(name in other.split() or other in name.split() for other in chosen):
            chosen.append(name)
        if len(chosen) == most:
            break
    return chosen


def outline_summary(
    engine: Engine,
    pot: Pot,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    outline: list[OutlineEntry],
    config: SummaryConfig,
    decoding: DecodingConfig,
    locate: Callable[[int], str] | None = None,
    log_lines: list[str] | None = None,
    line_tokens: dict[int, int] | None = None,
    on_part: Callable[[int, int], None] | None = None,
) -> tuple[str, list[Part]]:
    """The summary text and its parts (the module's docstring). `outline`: the document's headings in order;
    `log_lines`: the document's lines when it is a log (summarized as one), and `line_tokens` the first token of
    each line (by its number); `locate(token)`: a token's place. `on_part` is called with (1, 2) before the
    overview and (2, 2) before the parts."""
    from .log_summary import log_summary_text, summarize_log

    if log_lines is not None and (log := summarize_log(log_lines)) is not None:
        text, parts = log_summary_text(log)
        tokens = line_tokens or {}
        return text, [
            Part(p["title"], tokens.get(p["line"], 0), f"line {p['line']}", tuple(p["points"])) for p in parts
        ]
    locate = locate or (lambda token: "")
    if on_part is not None:
        on_part(1, 2)
    opening = list(fetch(0, min(OPENING_WINDOW, document_tokens))) if document_tokens else []
    lead_sentences = opening_sentences(engine.tokenizer.decode(opening, skip_special_tokens=True), is_point)
    lead = " ".join(lead_sentences)
    if on_part is not None:
        on_part(2, 2)
    size = RANKING.bucket_tokens
    if holds_whole_document(pot):
        buckets = [Bucket(i, 1.0, i * size) for i in range(-(-document_tokens // size))]
    else:
        until = verbatim_tail_start(pot)  # the attention favours the pot's verbatim tail whatever it is asked
        buckets = attention_ranking(engine, pot, engine.catalyst_ids, [], document_tokens, RANKING, until)
    chosen = outline_parts([e for e in outline if not _NAVIGATION.search(e.title)], document_tokens, config.parts)
    chapters = bool(chosen) and all(re.match(r"(?i)(chapter|part|book)\b", head.title) for head, _, _ in chosen)
    if len(chosen) < 2:
        step = max(1, -(-document_tokens // config.equal_parts))
        chosen = [
            (OutlineEntry(1, f"Part {k + 1} of {config.equal_parts}", start), min(document_tokens, start + step), [])
            for k, start in enumerate(range(0, document_tokens, step))
        ]
        chapters = True  # a text without headings is read as a story is: its stretches and its names
    seen = {lead, *lead_sentences}
    firsts = [_first_point(engine, fetch, head, end, seen) for head, end, _ in chosen]
    seen |= set(firsts)
    # The part's own words pick its central sentence (over at most CENTRAL_TOKENS of it); where they find none,
    # the sentence the pot's catalyst ranks best.
    texts = [
        _after_heading(
            engine.tokenizer.decode(list(fetch(head.token, min(end, head.token + CENTRAL_TOKENS)))), head.title
        )
        for head, end, _ in chosen
    ]
    titles = [" ".join([head.title, *(section.title for section in sections)]) for head, _, sections in chosen]
    centrals = central_sentences(texts, seen, titles)
    parts: list[Part] = []
    for (head, end, sections), first, central in zip(chosen, firsts, centrals, strict=True):
        # One sentence says what the part is about: its first when that one names it ("This chapter describes
        # ...") or the part's subject (its title's words), else its central one, else its first, else the one the
        # pot's catalyst ranks best.
        names_subject = bool(first) and bool(_stems(head.title) & _stems(first))
        point = first if first and (says_what_it_is(first, at_start=True) or names_subject or not central) else central
        point = point or _central_point(engine, fetch, buckets, head.token, end, seen, size)
        points = [point] if point else []
        seen.update(points)
        titles = tuple(section.title for section in sections[: config.sections])
        parts.append(Part(head.title, head.token, locate(head.token), tuple(points), titles))
    text = lead
    lines = []
    for part in parts:
        where = f" ({part.place})" if part.place else ""
        lines.append(f"- {part.title}{where}: {' '.join(part.points)}".rstrip(": "))
        if part.sections:
            lines.append(f"  Sections: {'; '.join(part.sections)}")
    text += "\n\nOutline:\n" + "\n".join(lines)
    if chapters:
        body = engine.tokenizer.decode(list(fetch(0, document_tokens)), skip_special_tokens=True)
        names = recurring_names(body)
        if names:
            text += f"\n\nNames that recur: {', '.join(names)}."
    return text.strip(), parts
