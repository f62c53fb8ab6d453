"""An answer's citations in the chat: a "Sources" line under every answer, the cited text of the best sources as
short quotes (and of every source as the hover text of its label), and clickable options under the latest answer.

Plain data in, Chatbot message dicts out; no gradio and no torch. The Chatbot shows a message's `options` as
buttons under the last answer; clicking one sends its value (the cited place's first token) to
Handlers.open_source, which opens "What the model kept" there.
"""

from __future__ import annotations

import html
import json
import re

from infinipot.app.ask.quoting import marked_words, quoted_part, shared_words
from infinipot.core.answer.answer_words import SEEMS_TO_ANSWER

QUOTED = 2  # sources quoted under an answer (all of them have their text as hover text)
QUOTE_CHARS = 360  # a quote longer than this is cut at a word, with an ellipsis (180 cut the sentence that mattered)
# The sentence an answer came from is quoted whole up to this length (a PDF's run-on table row can be longer).
WHOLE_QUOTE_CHARS = 600
HOVER_CHARS = 600
# A part of a summary's outline is named by its title up to this many characters (and its page or line).
OUTLINE_LABEL_CHARS = 60
_MARKDOWN = re.compile(r"([\\`*_\[\]#|~])")
_WORDS = re.compile(r"[^\W_]+")


def source_label(citation: dict) -> str:
    """'page 12 (41%)': the place and its share of the answer's attention; the place alone when its share rounds
    to 0% (a passage the question's words found, where the pot's attention barely looked)."""
    share = round(100 * (citation.get("score") or 0.0))
    return f"{citation['label']} ({share}%)" if share >= 1 else citation["label"]


def shortened(text: str, limit: int) -> str:
    """The text on one line, cut at a word before `limit` characters with an ellipsis."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] or text[:limit]
    return cut.rstrip(",;:.") + "…"


def _hovered(citation: dict) -> str:
    """The label, with the cited text as its hover text when there is one."""
    label = source_label(citation)
    snippet = shortened(citation.get("snippet", ""), HOVER_CHARS)
    if not snippet:
        return label
    return f'<span title="{html.escape(snippet, quote=True)}">{html.escape(label)}</span>'


# What the percentage after each source means, said once per answer that shows one.
SHARE_MEANING = " (%: the share of the answer's attention each place drew)"


def by_share(citations: list[dict]) -> list[dict]:
    """The citations as the Sources line lists them: the largest share of the answer's attention first, those whose
    share is not shown (under 1%) after them, in their own order ("page 34 (4%) · page 2 (2%) · page 27 (1%)", not
    the answer's own place first and the rest after it, which read as unsorted)."""
    return sorted(citations, key=lambda citation: -max(round(100 * (citation.get("score") or 0.0)), 0))


def sources_line(citations: list[dict]) -> str:
    """'Sources: page 34 (4%) · page 2 (2%) · page 27' by share, and what the % means when a share is shown."""
    if not citations:
        return ""
    shown = by_share(citations)
    meaning = SHARE_MEANING if any(source_label(c) != c["label"] for c in shown) else ""
    return "Sources: " + " · ".join(_hovered(c) for c in shown) + meaning


def markdown_text(text: str) -> str:
    """Document text shown as is inside Markdown: its markup characters escaped, HTML made inert."""
    return _MARKDOWN.sub(r"\\\1", html.escape(text, quote=False))


def quotes(citations: list[dict], answer: str = "") -> str:
    """Sources' text as a Markdown block quote: '> **line 12** “the cited sentence…”', each from the sentence that
    shares the most words with the answer. The QUOTED sources whose sentence shares the most are quoted, the
    citations' own order breaking ties: the passage the answer came from is often not the one the question's
    attention ranked first ("Mount Aster is 1,206 meters high" is read out of the third source, "the mountain was
    1,206 metres high", while the first only names the mountain)."""
    with_text = [c for c in citations if (c.get("snippet") or "").strip()]
    chosen = sorted(with_text, key=lambda c: -shared_words(c["snippet"], answer))[:QUOTED]  # stable on ties
    quoted = []
    said = " ".join((answer or "").split())
    for index, c in enumerate(chosen):
        if index == 0 and c.get("quote") and c["quote"] in said:
            continue  # the answer is (or quotes) that sentence already
        if c.get("quote") and index == 0:  # the whole sentence the answer came from, its words marked
            text = marked(shortened(c["quote"], WHOLE_QUOTE_CHARS), answer)
        else:
            text = markdown_text(shortened(quoted_part(c["snippet"], answer), QUOTE_CHARS))
        quoted.append(f"> **{markdown_text(c['label'])}** “{text}”")
    return "\n>\n".join(quoted)


def verbatim_source(citations: list[dict], answer: str) -> dict | None:
    """The citation whose quote is the whole answer (spaces aside): the answer is that place's sentence."""
    said = " ".join((answer or "").split())
    return next((c for c in citations if said and " ".join((c.get("quote") or "").split()) == said), None)


def named_sources(citations: list[dict], answer: str) -> list[tuple[dict, str]]:
    """(citation, sentence) for each line of an answer that names several documents ('GPL-2 (line 95): the
    sentence', ask.library.named_line), in the answer's order: the citation of that document and place whose quote
    is that sentence or a part of it (a passage's text may start inside the sentence); [] unless every line of
    the answer is one."""
    lines = [" ".join(line.split()) for line in (answer or "").splitlines() if line.strip()]
    if len(lines) < 2:
        return []
    found = []
    for line in lines:
        cited = next(((c, said) for c in citations if (said := _named_sentence(c, line))), None)
        if cited is None:
            return []
        found.append(cited)
    return found


def _named_sentence(citation: dict, line: str) -> str:
    """The sentence of a line naming this citation's document and place ('GPL-2 (line 95): ...') that holds its
    quote, or is held in it; '' when the line is not this citation's."""
    document, quote = citation.get("document"), " ".join((citation.get("quote") or "").split())
    if not document or not quote:
        return ""
    place = citation["label"].removeprefix(f"{document}, ")
    sentence = line.removeprefix(f"{document} ({place}): ")
    return sentence if sentence != line and (quote in sentence or sentence in quote) else ""


def _quoted_whole(citation: dict, sentence: str) -> str:
    quote = markdown_text(shortened(sentence, WHOLE_QUOTE_CHARS))
    return f"> **{markdown_text(citation['label'])}** “{quote}”"


def marked(sentence: str, answer: str) -> str:
    """The sentence as Markdown, with the words the answer shares with it in bold."""
    words = {w.lower() for w in marked_words(sentence, answer)}
    pieces, last = [], 0
    for match in _WORDS.finditer(sentence):
        if match.group(0).lower() in words:
            pieces += [markdown_text(sentence[last : match.start()]), f"**{markdown_text(match.group(0))}**"]
            last = match.end()
    return "".join(pieces) + markdown_text(sentence[last:])


# Added to an answer that Stop cut short, on the page and after a reload.
STOPPED_MARK = " *(stopped)*"


def chat_message(
    role: str, content: str, citations: list[dict] | None = None, stopped: bool = False, answerable: bool = True
) -> dict:
    """A Chatbot message: an answer with citations gets a Sources line, quotes of its best sources' text, and
    one option per citation; a stopped answer ends with the stopped mark; an answer that says the document does
    not hold the answer is marked so, and its sources are called the closest passages."""
    if stopped:
        content = (content or "").rstrip() + STOPPED_MARK
    if role == "assistant" and not answerable and content.startswith(SEEMS_TO_ANSWER):  # the words before the quote
        content = f"**{SEEMS_TO_ANSWER}**{content[len(SEEMS_TO_ANSWER) :]}"
    elif role == "assistant" and not answerable:  # its first sentence says so, in bold
        lead, stop, rest = content.partition(". ")
        content = f"**{lead}.**{' ' + rest if rest else ''}" if stop else f"**{content}**"
    if role != "assistant" or not citations:
        return {"role": role, "content": content}
    citations = one_per_place(citations)
    source = verbatim_source(citations, content) if answerable and not stopped else None
    named = named_sources(citations, content) if answerable and not stopped else []
    if source is not None:
        # The answer is a sentence of the document: it is shown as that place's quote, and no other quote stands
        # under it as if it were the answer's source.
        content, quoted = f"> **{markdown_text(source['label'])}** “{markdown_text(content.strip())}”", ""
    elif named:  # several documents answered, each with its sentence: each is shown as its place's quote
        content, quoted = "\n>\n".join(_quoted_whole(c, sentence) for c, sentence in named), ""
    else:
        quoted = quotes(citations, content)
    line = sources_line(citations)
    if not answerable:
        line = "Closest passages: " + line.removeprefix("Sources: ")
    return {
        "role": role,
        "content": f"{content}\n\n*{line}*" + (f"\n\n{quoted}" if quoted else ""),
        "options": [{"value": source_value(c, content), "label": source_label(c)} for c in _listed(citations, named)],
    }


def _listed(citations: list[dict], named: list[tuple[dict, str]]) -> list[dict]:
    """The sources' buttons: by share, or, under an answer naming several documents, each named place first in the
    answer's order (the place each document's sentence is in), then the others by share."""
    first = [citation for citation, _ in named]
    return first + [c for c in by_share(citations) if not any(c is f for f in first)]


def folded_summary(content: str) -> str:
    """A summary as the page shows it: its opening (the first paragraph: what the document is), then the rest (the
    outline with what each part says, or a log's errors and incidents) in a fold one click away, named by its
    headings, so that the whole fits a screen."""
    opening, gap, rest = content.partition("\n\n")
    if not gap or not rest.strip():
        return content
    lines = rest.strip().splitlines()
    headings = [line[:-1] for line in lines if line.endswith(":") and not line.startswith(("-", " "))]
    if len(headings) == 1 and lines[0] == f"{headings[0]}:":  # the fold's label says it: not twice
        parts = sum(line.startswith("- ") for line in lines)
        label, lines = f"{headings[0]}: {parts} part{'s' * (parts != 1)}", lines[1:]
    else:
        label = " · ".join(headings) or "More"
    body = "\n".join(lines).strip()
    return f"{opening}\n\n<details><summary>{label}</summary>\n\n{body}\n\n</details>"


def outline_message(content: str, parts: list[dict], stopped: bool = False) -> dict:
    """A summary's Chatbot message: its text, and its outline as one option per part ("2 ASN.1 structure handling
    · page 5"), each opening the document at the part's first token, as a source does, marking its first point."""
    content = folded_summary(content or "")
    if stopped:
        content = content.rstrip() + STOPPED_MARK
    options = []
    for part in parts:
        place = f"page {part['page']:,}" if part.get("page") else (f"line {part['line']:,}" if part.get("line") else "")
        label = shortened(part["title"], OUTLINE_LABEL_CHARS) + (f" · {place}" if place else "")
        value = {"token": int(part.get("token") or 0), "quote": shortened((part.get("points") or [""])[0], 200)}
        options.append({"value": json.dumps(value), "label": label})
    return {"role": "assistant", "content": content, "options": options}


def one_per_place(citations: list[dict]) -> list[dict]:
    """The citations with each place (label) once: the first of a place keeps its text, and its share becomes the
    place's share in all (two passages of one page were listed as that page twice)."""
    merged: dict[str, dict] = {}
    for citation in citations:
        label = citation["label"]
        if label in merged:
            kept = merged[label]
            merged[label] = {**kept, "score": (kept.get("score") or 0.0) + (citation.get("score") or 0.0)}
        else:
            merged[label] = dict(citation)
    return list(merged.values())


def source_value(citation: dict, answer: str) -> str:
    """What a source's button sends when clicked: the place's first token and the sentence to mark there (the
    one quoted under the answer), as JSON."""
    quote = citation.get("quote") or quoted_part(citation.get("snippet", ""), answer)
    value = {"token": int(citation["token"]), "quote": shortened(quote, WHOLE_QUOTE_CHARS)}
    if citation.get("doc_id"):  # an answer from several documents: which one the place is in
        value["doc_id"] = citation["doc_id"]
    return json.dumps(value)


def source_document(value) -> str | None:
    """The document a clicked option's place is in, when its answer came from several documents; else None."""
    text = str(value).strip()
    try:
        data = json.loads(text) if text.startswith("{") else {}
    except json.JSONDecodeError:
        return None
    doc_id = data.get("doc_id") if isinstance(data, dict) else None
    return doc_id if isinstance(doc_id, str) and doc_id else None


def library_citations(citations: list[dict]) -> list[dict]:
    """An answer from several documents' citations, each labelled with its document: 'GPL-3, line 12'."""
    return [{**c, "label": f"{c['document']}, {c['label']}"} if c.get("document") else c for c in citations]


def source_reference(value) -> tuple[int, str]:
    """(document token, sentence to mark) that a clicked option names: source_value's JSON, or a bare token (an
    answer stored before sources marked their sentence); ValueError for anything else."""
    text = str(value).strip()
    try:
        data = json.loads(text) if text.startswith("{") else {"token": int(text), "quote": ""}
        token, quote = int(data["token"]), str(data.get("quote") or "")
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"not a source reference: {value!r}") from None
    if token < 0:
        raise ValueError(f"not a source reference: {value!r}")
    return token, quote


def source_token(value) -> int:
    """The document token a clicked option names (ValueError for anything else)."""
    return source_reference(value)[0]
