"""Plain data from the workspace to what the page shows: table rows, HTML with CSS classes (assets/ui.css), text.

Pure string functions; no gradio and no torch, so they are tested directly.
"""

from __future__ import annotations

import html

from infinipot.app.web.shared_phrases import RESUME_CONTINUES

LIBRARY_HEADERS = ["Document", "Status", "Tokens", "Pages", "Memory (kept / size)", "Disk", "ID"]
# Why a token is in the model's memory, in plain words (the hover text of each token).
STATE_LABELS = {
    "sink": "kept always: the start of the model's prompt",
    "nuc": "kept: it surprised the model",
    "cap": "kept: a summary of the text looks at it",
    "read": "kept: read after the memory was last full",
    "recent": "kept: among the latest text, all that this local layer can see",
    "dropped": "forgotten",
}
# The legend's words for the states a document token can have (sinks are template tokens, never in the text).
LEGEND_LABELS = {
    "cap": "important to a summary of the text",
    "nuc": "surprising to the model",
    "read": "read after the memory was last full",
    "recent": "the latest text, all that a local layer sees",
}
LEGEND_NOTE = "The model remembers only the coloured text; grey text it forgot when its memory was full."
# A document shorter than the memory: nothing was forgotten, and green means only "read".
LEGEND_WHOLE = "The model remembers all of this text: the whole document fits in its memory."
# The fold with the paper's words for what the kept view says in plain words (its title is asserted by tests).
PAPER_TERMS = "In the paper's terms"
_SHADES = 10


def escape(text: str) -> str:
    """HTML-escape, also `$` and backticks (the HTML component fills a JS template)."""
    return html.escape(text).replace("$", "&#36;").replace("`", "&#96;")


def size(nbytes: int | None) -> str:
    if not nbytes:
        return "0 B"
    value = float(nbytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def library_rows(rows: list[dict]) -> list[list]:
    table = []
    for row in rows:
        pot = "" if row["pot_size"] is None else f"{_count(row['pot_entries']) or '-'} / {row['pot_size']:,}"
        table.append(
            [
                row["name"],
                row["status"],
                _count(row["tokens"]),
                _count(row["pages"]),
                pot,
                "-" if row["disk_bytes"] is None else size(row["disk_bytes"]),
                row["doc_id"],
            ]
        )
    return table


def upload_notice(results: list[dict], known: dict[str, str] | None = None) -> str:
    """One line per uploaded file: queued, already in the library (`known`: the names of the documents stored
    before the upload, by doc_id; a document's id is its content's), or not added with the reason (Markdown)."""
    known = known or {}
    lines = []
    for result in results:
        if result["ok"] and result.get("doc_id") in known:
            same = known[result["doc_id"]]
            if same == result["name"]:
                lines.append(f"- **{same}** is already in the library (the same file): its memory is reused")
            else:
                lines.append(f"- **{result['name']}** has the same content as **{same}**, already in the library")
        elif result["ok"]:
            lines.append(f"- **{result['name']}** added to the library")
        else:
            lines.append(f"- ⚠️ **{result['name']}** was not added: {result['message']}")
    return "\n".join(lines)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"


def progress_text(snapshot: dict | None) -> str:
    """One line: '983 / 1,524 tokens (65%) · memory 3,096 / 4,096, compressed 20 times · 107 tokens/s · ETA 5 s'."""
    if snapshot is None:
        return "Choose or upload a document."
    status = snapshot["status"]
    name = snapshot["name"]
    if status == "queued":
        return f"{name}: queued, waiting for the read before it"
    if status == "counting":
        return f"{name}: counting tokens ({snapshot['tokens_counted']:,} so far)"
    total = snapshot["tokens_total"]
    of_total = f"{snapshot['tokens_read']:,} / {total:,} tokens" if total else f"{snapshot['tokens_read']:,} tokens"
    rate = snapshot["tokens_per_second"]
    parts = [
        f"{of_total} ({100 * snapshot['fraction']:.0f}%)",
        f"memory {snapshot['entries']:,} / {snapshot['pot_size']:,}, compressed {_times(snapshot['cycles'])}",
        f"{rate:,.0f} tokens/s" if rate else "- tokens/s",
    ]
    if status == "reading":
        eta = snapshot["eta_seconds"]
        parts.append("ETA after the first steps" if eta is None else f"ETA {duration(eta)}")
        return f"{name}: reading · " + " · ".join(parts)
    if status == "done":
        notes = "".join(f" · {warning}" for warning in snapshot.get("warnings", []))
        if snapshot.get("reused"):  # nothing was read now: a rate would be the stored pot's loading, not reading
            return f"{name}: ready · " + " · ".join(parts[:2]) + f" · read before, reused{notes}"
        return f"{name}: ready · " + " · ".join(parts) + f" · read in {duration(snapshot['elapsed_seconds'])}{notes}"
    if status == "cancelled":
        return f"{name}: cancelled · " + " · ".join(parts) + f" · {RESUME_CONTINUES}"
    if status == "interrupted":
        return f"{name}: interrupted · {RESUME_CONTINUES}"
    return f"{name}: failed: {snapshot.get('error') or 'unknown error'}"


def _times(count: int) -> str:
    return {0: "not yet", 1: "once", 2: "twice"}.get(count, f"{count:,} times")


# The first screen, before any document: what to do and what happens then.
EMPTY_LIBRARY = (
    "Your library is empty. Drop a document above: a PDF, Word, EPUB, HTML, text or log file of any length. The "
    "model reads it once (a 100-page PDF takes a few minutes on a laptop), keeps its memory of it, and then answers "
    "questions about it and summarizes it in the Chat tab."
)


def empty_library_html() -> str:
    return f'<div class="ip-progress ip-empty"><div class="ip-progress-text">{escape(EMPTY_LIBRARY)}</div></div>'


def library_progress_text(rows: list[dict], batch: dict) -> str:
    """The library's line while several files are read one after another: 'Library: 3 of 10 documents done (1 not
    read); reading manual.pdf; 6 waiting; about 4 min left'; "" for a single file (its own line says everything).

    It counts the library as its table lists it (`rows`, the workspace's library()), so "3 of 3 done" is never said
    beside 4 documents listed; the time left is the batch's (`batch`: the read queue's batch())."""
    if len(batch["jobs"]) < 2:
        return ""
    states = [row["state"] for row in rows]
    done = states.count("ready")
    not_read = sum(states.count(state) for state in ("failed", "cancelled", "interrupted"))
    reading = [row["name"] for row in rows if row["state"] in ("counting", "reading")]
    waiting = states.count("queued")
    text = f"Library: {done} of {len(rows)} documents done" + (f" ({not_read} not read)" if not_read else "")
    if reading:
        text += f"; reading {', '.join(reading)}"
    if waiting:
        text += f"; {waiting} waiting"
    if batch["seconds_left"] is not None and (reading or waiting):
        text += f"; about {duration(batch['seconds_left'])} left"
    return text


def with_library_line(progress: str, rows: list[dict], batch: dict) -> str:
    """A progress block with the library's line above it while several files are read."""
    line = library_progress_text(rows, batch)
    if not line:
        return progress
    block = f'<div class="ip-progress ip-library-line"><div class="ip-progress-text">{escape(line)}</div></div>'
    return block + progress


def all_documents_html(ready: int) -> str:
    """What "All documents" does, where a document's progress line would be."""
    text = (
        f"Questions go to all {ready} ready documents at once: their words find the passages, each document's "
        "memory points at more, and every source names its document. Summaries are made per document."
    )
    return f'<div class="ip-progress ip-all"><div class="ip-progress-text">{escape(text)}</div></div>'


def progress_html(snapshot: dict | None) -> str:
    text = escape(progress_text(snapshot))
    if snapshot is None or snapshot["status"] in ("queued", "counting"):
        bar = '<progress class="ip-bar"></progress>' if snapshot else ""
    else:
        bar = f'<progress class="ip-bar" max="1000" value="{round(1000 * snapshot["fraction"])}"></progress>'
    return f'<div class="ip-progress">{bar}<div class="ip-progress-text">{text}</div></div>'


def head_shade(count: int, heads: int) -> int:
    """The colour step (0 to _SHADES) of a token kept by `count` of `heads` KV heads."""
    return round(_SHADES * count / heads) if heads else 0


def legend_html(mode: str, heads: int = 0, local: bool = False, whole: bool = False, quoted: bool = False) -> str:
    """The legend in plain words (the paper's terms are in the PAPER_TERMS fold). All groups: one step per possible
    share (3 groups: 0, 33, 67 and 100%). `local`: the layer shown is a local one, which keeps the latest text;
    `whole`: the memory holds the whole document; `quoted`: the view underlines a sentence an answer quoted."""
    underline = ' <span class="ip-tok ip-quoted">underlined: the sentence the answer quoted</span>' if quoted else ""
    if mode == "all heads":
        steps = range(heads + 1) if 0 < heads <= _SHADES else range(0, _SHADES + 1, 2)
        total = heads if 0 < heads <= _SHADES else _SHADES
        cells = "".join(f'<span class="ip-tok ip-h{head_shade(k, total)}">{100 * k / total:.0f}%</span>' for k in steps)
        note = "The darker the text, the more of the layer's groups remember it; grey: none do."
        return f'<div class="ip-legend">{escape(note)} Share of groups: {cells}{underline}</div>'
    if whole:
        kept = '<span class="ip-tok ip-read">read and kept</span>'
        return f'<div class="ip-legend"><b>{escape(LEGEND_WHOLE)}</b> {kept}{underline}</div>'
    labels = {state: label for state, label in LEGEND_LABELS.items() if local or state != "recent"}
    cells = "".join(f'<span class="ip-tok ip-{state}">{escape(label)}</span>' for state, label in labels.items())
    forgotten = '<span class="ip-tok ip-dropped">forgotten</span>'
    return f'<div class="ip-legend"><b>{escape(LEGEND_NOTE)}</b> {cells} {forgotten}{underline}</div>'


def marks_quote(window: dict, quoted: list[int] | None) -> bool:
    return bool(quoted) and quoted[0] < window["end"] and quoted[1] > window["start"]


def _group(window: dict) -> str:
    """The layer and group shown, in words: 'layer 3, group 1' or 'layer 3, in any of its groups'."""
    group = "in any of its groups" if window["head"] is None else f"group {window['head']}"
    return f"layer {window['layer']}, {group}"


def _held_counts(kept: dict) -> str:
    """'1,990 important to a summary, 1,000 surprising, ...': the document tokens held by reason, none of them 0."""
    parts = [
        (kept.get("recent", 0), "of the latest text"),
        (kept["cap"], "important to a summary"),
        (kept["nuc"], "surprising"),
        (kept["read"], "read after the memory was last full"),
    ]
    return ", ".join(f"{count:,} {words}" for count, words in parts if count)


def window_caption(window: dict, quoted: list[int] | None = None) -> str:
    """Where the window is and what the chosen layer and group remember, then (a source opened) what it holds of
    the quoted sentence."""
    where = f" · starts at {window['where']}" if window.get("where") else ""
    group = "all groups" if window["head"] is None else f"group {window['head']} of {window['kv_heads']}"
    caption = (
        f"Tokens {window['start']:,}-{max(window['start'], window['end'] - 1):,} of {window['total']:,}{where} · "
        f"layer {window['layer']} of {window['layers']}, {group}"
    )
    local = window.get("local_window")
    if local:
        caption += f" · a local layer: it sees only the latest {local:,} tokens, so its memory keeps the newest text"
    if window["mode"] == "one head":
        if window.get("whole"):
            caption += f" · it remembers the whole document ({window['total']:,} tokens)"
        else:
            held = window["entries"] - window["kept"]["sink"]
            caption += f" · it remembers {held:,} tokens of the document: {_held_counts(window['kept'])}"
    note = quote_note(window, quoted)
    return f"{caption}\n\n{note}" if note else caption


def _quote_words(window: dict, quoted: list[int]) -> list[bool]:
    """For each word of the quoted sentence shown in the window: whether the chosen layer and group (or any of the
    layer's groups) still hold some of it. A word starts at a token that starts with a space."""
    words: list[bool] = []
    first, end = max(quoted[0], window["start"]), min(quoted[1], window["end"])
    for token in window["tokens"][first - window["start"] : end - window["start"]]:
        text = token["text"]
        if not text.strip():
            continue  # a space, or a later piece of a character split over tokens
        held = token["count"] > 0 if window["mode"] == "all heads" else token["state"] != "dropped"
        if not words or text[0].isspace():
            words.append(held)
        else:
            words[-1] = words[-1] or held
    return words


def quote_note(window: dict, quoted: list[int] | None) -> str:
    """Whether the model still holds the words of the sentence an answer quoted (underlined in the view): all of
    them, some (the coloured ones) or none; the quote itself is always read from the document's stored text."""
    if not marks_quote(window, quoted):
        return ""
    words = _quote_words(window, quoted)
    held = sum(words)
    intro = f"The underlined sentence is the one the answer quoted. In {_group(window)},"
    stored = (
        "The quote comes from the document's text, which the app keeps beside the model's memory; answers "
        "search that text and read the passages they need again."
    )
    if held == len(words):
        return f"{intro} the model still holds all {len(words):,} of its words."
    if held == 0:
        return f"{intro} the model no longer holds these words. {stored}"
    return f"{intro} the model still holds {held:,} of these {len(words):,} words (the coloured ones). {stored}"


def tokens_html(window: dict, quoted: list[int] | None = None) -> str:
    """The window's text, one span per token, classed by why it was kept (or by how many heads kept it); the
    tokens of a quoted sentence [first, end) are also classed ip-quoted (a source opened from the chat)."""
    first, end = quoted if quoted else (-1, -1)
    spans = []
    for offset, token in enumerate(window["tokens"]):
        if not token["text"]:
            continue  # a later piece of a character split over tokens
        index = window["start"] + offset
        if window["mode"] == "all heads":
            heads = window["heads_counted"]
            shade = head_shade(token["count"], heads)
            title = f"token {index:,}: kept by {token['count']} of {heads} heads"
            css = f"ip-h{shade}"
        else:
            title = f"token {index:,}: {STATE_LABELS[token['state']]}"
            css = f"ip-{token['state']}"
        if first <= index < end:
            css += " ip-quoted"
        spans.append(f'<span class="ip-tok {css}" title="{escape(title)}">{escape(token["text"])}</span>')
    return f'<div class="ip-text">{"".join(spans)}</div>'


# Layers labelled on the retention map's y axis: every LAYER_TICK-th (and the last), so labels never overlap.
LAYER_TICK = 5
# Ticks on its x axis, evenly spaced, the first and last columns included.
X_TICKS = 5


def retention_html(data: dict) -> str:
    """Layers (rows) x position bins or pages (columns), shaded by the share of tokens the layer still holds.

    The colours are scaled to the map's highest share (a 4K memory of a long book keeps a few percent of each
    part, which a 0-100% scale would show as blank), and the colour scale under the map says what they mean."""
    matrix = data["matrix"]
    labels = data["labels"]
    peak = max((value for row in matrix for value in row), default=0.0) or 1.0
    last_layer = len(matrix) - 1
    rows = []
    for layer, values in enumerate(matrix):
        cells = "".join(
            f'<td class="ip-r{round(_SHADES * value / peak)}" '
            f'title="layer {layer}, {escape(label)}: {100 * value:.2f}% of tokens kept"></td>'
            for value, label in zip(values, labels, strict=True)
        )
        tick = str(layer) if layer % LAYER_TICK == 0 or layer == last_layer else ""
        rows.append(f'<tr><th class="ip-layer">{tick}</th>{cells}</tr>')
    axis = "page of the PDF" if data["x"] == "page" else "position in the document (tokens)"
    scale = "".join(f'<span class="ip-r{step}"></span>' for step in range(_SHADES + 1))
    return (
        f'<div class="ip-retention"><div class="ip-ytitle">layer (0 at the top to {last_layer})</div>'
        f'<table class="ip-heatmap">{"".join(rows)}</table>'
        f"{x_ticks_html(labels)}"
        f'<div class="ip-xtitle">{axis}</div>'
        f'<div class="ip-scale">share of the tokens the layer still holds: 0% {scale} {100 * peak:.1f}% '
        "(the highest in this map)</div></div>"
    )


def x_ticks_html(labels: list[str]) -> str:
    """X_TICKS labels under the map's columns, each centred on its column's middle, the first and last kept inside
    the map (aligned to its left and right edges) so that no label runs past it."""
    columns = len(labels)
    ticks = sorted({round(i * (columns - 1) / (X_TICKS - 1)) for i in range(X_TICKS)}) if columns > 1 else [0]
    spans = []
    for i in ticks:
        where = "ip-first" if i == 0 else "ip-last" if i == columns - 1 else "ip-mid"
        left = 100 * (i + 0.5) / max(columns, 1)
        spans.append(f'<span class="{where}" style="left: {left:.2f}%">{escape(labels[i])}</span>')
    return f'<div class="ip-xticks">{"".join(spans)}</div>'


def memory_caption(memory: dict) -> str:
    last = memory["last"]
    if last is None:
        return "There is no record of memory for this document: it was read before the app kept one (e.g. by the CLI)."
    when = "So far" if memory["live"] else "At the end of the read"
    return (
        f"{when}: the model's memory of the document took {size(last['pot_bytes'])}, against "
        f"{size(last['full_kv_bytes'])} to keep every one of the {last['tokens']:,} tokens read; the app's whole "
        f"memory was {_mb(last['rss_bytes'])}."
    )


# The app's memory "stayed flat" once the model's memory was full when it moved by at most FLAT_SHARE, "nearly flat"
# by at most NEARLY_FLAT_SHARE; past that, the text says where it went.
FLAT_SHARE = 0.02
NEARLY_FLAT_SHARE = 0.1


def _mb(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.0f} MB"


def process_memory_text(samples: list[dict], full_at: int) -> str:
    """How the app's whole memory (the model included) went while it read: flat once the model's memory was full
    (from document token `full_at` on), or from where to where for a document that never filled it."""
    if not samples:
        return (
            "There is no record of the app's memory while it read this document (it was read before the app kept "
            "one, e.g. from the command line)."
        )
    rss = [sample["rss_bytes"] for sample in samples]
    full = [sample["rss_bytes"] for sample in samples if sample["tokens"] >= full_at]
    whole = "While it read, the app's whole memory (the model included)"
    if len(full) < 2:
        return f"{whole} went from {_mb(rss[0])} to {_mb(rss[-1])} as the model's memory took the document in."
    low, high = min(full), max(full)
    if high - low > NEARLY_FLAT_SHARE * high:
        return f"{whole} went from {_mb(rss[0])} to {_mb(high)} at most, and ended at {_mb(rss[-1])}."
    level = f"at {_mb(high)}" if _mb(low) == _mb(high) else f"between {_mb(low)} and {_mb(high)}"
    flat = "flat" if high - low <= FLAT_SHARE * high else "nearly flat"
    return (
        f"{whole} stayed {flat} once the model's memory was full: {level} from token {full_at:,} to token "
        f"{samples[-1]['tokens']:,} (before that, it grew from {_mb(rss[0])} as that memory filled)."
    )


def kept_summary_html(summary: dict, memory: dict) -> str:
    """The kept view's opening in plain words: what the model remembers of the document, what that memory takes
    against keeping every token, and how the app's memory went while it read."""
    name, total, held = escape(summary["name"]), summary["total"], summary["held"]
    share = summary["bytes"] / summary["full_bytes"] if summary["full_bytes"] else 1.0
    if summary["whole"]:
        remembers = (
            f"The model remembers the whole of {name}: all {total:,} tokens (words and pieces of words). "
            f"The document fits in its memory, which has room for {summary['pot_size']:,} tokens, so nothing was "
            "forgotten."
        )
        takes = (
            f"That memory takes {size(summary['bytes'])}, as much as keeping everything: the memory saves room "
            f"only on documents longer than {summary['pot_size']:,} tokens."
        )
    else:
        remembers = (
            f"The model read all {total:,} tokens of {name} (words and pieces of words) and remembers "
            f"{held:,} of them: those most important to a summary of the text, those that surprised it, and the "
            f"latest it read. The rest it forgot as it read, so that its memory never grows past its set size "
            f"({summary['pot_size']:,} tokens). Each of its "
            f"{summary['layers']} layers keeps its memory in {summary['kv_heads']} groups, and each group chooses "
            "its own tokens: below, pick a layer and a group to see what they remember."
        )
        takes = (
            f"That memory takes {size(summary['bytes'])} instead of {size(summary['full_bytes'])}: "
            f"{held:,} of {total:,} tokens, {100 * share:.0f}% of what keeping everything would take."
        )
    process = process_memory_text(memory["samples"], summary["pot_size"])
    paragraphs = "".join(f"<p>{text}</p>" for text in (remembers, takes, escape(process)))
    return f'<div class="ip-summary"><b>What the model remembers</b>{paragraphs}</div>'


# Why an entry is kept (kept_view.STATES), as the paper names it.
TERM_OF_STATE = {
    "sink": "attention sinks",
    "cap": "by CaP",
    "nuc": "by NuC",
    "read": "in the uncompressed tail",
    "recent": "in the sliding window",
}


def paper_terms_md(summary: dict, window: dict | None = None) -> str:
    """What the kept view says in plain words, in the InfiniPot paper's terms, with this document's numbers (and
    those of the layer and KV head shown)."""
    mode = "CaP-G: a request to summarize the text" if summary["cap_mode"] == "general" else "CaP-Q: your question"
    cycles = summary["cycles"]
    compressed = f"{cycles:,} times for this document" if cycles else "never for this document, which fits in the pot"
    opening = f" and {summary['sinks']:,} of the chat template's opening" if summary["sinks"] else ""
    sinks = ", kept always as attention sinks" if summary["sinks"] and cycles else ""
    lines = [
        f"- **The model's memory** is the paper's *pot*: a KV cache of at most |M| = {summary['pot_size']:,} "
        f"entries per KV head, compressed to |C| = {summary['keep_size']:,} each time it is full (Continual "
        f"Context Distillation), {compressed}. Every (layer, KV head) holds {summary['entries']:,} entries: "
        f"{summary['held']:,} document tokens{opening}{sinks}.",
        "- **A group** is a KV head (grouped-query attention: one key and value head shared by a group of "
        f"attention heads); this model has {summary['layers']} layers of {summary['kv_heads']} KV heads, and "
        "each selects its own entries.",
        f"- **Blue, important to a summary**: kept by the catalyst prompt's attention (CaP; the catalyst prompt here "
        f"is {mode}). **Orange, surprising**: kept by novelty under compression (NuC), the tokens the model "
        "predicted worst. **Green, read after the memory was last full**: the uncompressed tail. **Tan**: a "
        "sliding-window (local) layer's window, e.g. Gemma 3's.",
        "- **Keeping everything** is the full KV cache of every token read; **the app's whole memory** is the "
        "process's resident set size (RSS).",
    ]
    if window is not None and window.get("mode") == "one head":
        kept = window["kept"]
        counts = ", ".join(f"{count:,} {TERM_OF_STATE[name]}" for name, count in kept.items() if count)
        lines.append(f"- **Layer {window['layer']}, KV head {window['head']}** holds, by reason: {counts}.")
    return "\n".join(lines)
