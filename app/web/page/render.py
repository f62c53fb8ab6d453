"""Plain data from the workspace to what the page shows: table rows, HTML with CSS classes (assets/ui.css), text.

Pure string functions; no gradio and no torch, so they are tested directly.
"""

from __future__ import annotations

import html

from infinipot.app.web.wording import RESUME_CONTINUES

LIBRARY_HEADERS = ["Document", "Status", "Tokens", "Pages", "Memory (kept / size)", "Disk", "ID"]
# Why a token is in the model's memory, in plain words (the paper's terms in brackets, for the hover text).
STATE_LABELS = {
    "sink": "kept always: the chat template's opening (sink)",
    "nuc": "kept: it surprised the model (NuC, novelty under compression)",
    "cap": "kept: a summary of the text looks at it (CaP, catalyst prompt attention)",
    "read": "kept: read after the last compression",
    "recent": "kept: among the latest text, all that this local (sliding-window) layer can see",
    "dropped": "forgotten",
}
# The legend's words for the states a document token can have (sinks are template tokens, never in the text).
LEGEND_LABELS = {
    "cap": "important to a summary of the text",
    "nuc": "surprising to the model",
    "read": "read after the last compression",
    "recent": "the latest text, all that a local layer sees",
}
LEGEND_NOTE = "The model remembers only the coloured text; grey text was forgotten when the memory was compressed."
LEGEND_TERMS = (
    "In the InfiniPot paper's terms: blue is kept by the catalyst prompt's attention (CaP), orange by novelty "
    "under compression (NuC), green is the uncompressed tail. An attention view is one of the model's KV heads (a "
    "group of attention heads); each remembers its own tokens."
)
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


def library_progress_text(batch: list[dict]) -> str:
    """The library's progress while several files are read: '3 of 10 documents read (1 not read), 2 reading,
    about 4 min left'; "" for a single file (its own line says everything)."""
    if len(batch) < 2:
        return ""
    finished = [job for job in batch if job["status"] not in ("queued", "counting", "reading")]
    failed = sum(1 for job in finished if job["status"] in ("failed", "cancelled"))
    reading = [job for job in batch if job["status"] in ("counting", "reading")]
    waiting = sum(1 for job in batch if job["status"] == "queued")
    text = f"Library: {len(finished)} of {len(batch)} documents done" + (f" ({failed} not read)" if failed else "")
    if reading:
        text += f"; reading {', '.join(job['name'] for job in reading)}"
    if waiting:
        text += f"; {waiting} waiting"
    left = _library_seconds_left(batch)
    if left is not None:
        text += f"; about {duration(left)} left"
    return text


def _library_seconds_left(batch: list[dict]) -> float | None:
    """From the reading speed of the batch so far: the tokens left of the documents counted, and the mean length of
    the documents done for those not yet counted."""
    rates = [job["tokens_per_second"] for job in batch if job.get("tokens_per_second")]
    if not rates or all(job["status"] not in ("queued", "counting", "reading") for job in batch):
        return None
    known = [job["tokens_total"] for job in batch if job.get("tokens_total")]
    mean = sum(known) / len(known) if known else 0
    left = 0.0
    for job in batch:
        if job["status"] in ("counting", "reading") and job.get("tokens_total"):
            left += max(0, job["tokens_total"] - job["tokens_read"])
        elif job["status"] in ("queued", "counting"):
            left += mean
    return left / rates[-1] if left else None


def with_library_line(progress: str, batch: list[dict]) -> str:
    """A progress block with the library's line above it while several files are read."""
    line = library_progress_text(batch)
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


def legend_html(mode: str, heads: int = 0, local: bool = False) -> str:
    """The legend in plain words, with the paper's terms in small print. All heads: one step per possible share
    (3 heads: 0, 33, 67 and 100%). `local`: the layer shown is a local one, which keeps the latest text."""
    if mode == "all heads":
        steps = range(heads + 1) if 0 < heads <= _SHADES else range(0, _SHADES + 1, 2)
        total = heads if 0 < heads <= _SHADES else _SHADES
        cells = "".join(f'<span class="ip-tok ip-h{head_shade(k, total)}">{100 * k / total:.0f}%</span>' for k in steps)
        note = "The darker the text, the more of the model's attention views remember it; grey: none do."
        return f'<div class="ip-legend">{escape(note)} Share of views: {cells}</div>'
    labels = {state: label for state, label in LEGEND_LABELS.items() if local or state != "recent"}
    cells = "".join(f'<span class="ip-tok ip-{state}">{escape(label)}</span>' for state, label in labels.items())
    forgotten = '<span class="ip-tok ip-dropped">forgotten</span>'
    return (
        f'<div class="ip-legend"><b>{escape(LEGEND_NOTE)}</b> {cells} {forgotten}</div>'
        f'<div class="ip-small">{escape(LEGEND_TERMS)}</div>'
    )


def _marks_quote(window: dict, quoted: list[int] | None) -> bool:
    return bool(quoted) and quoted[0] < window["end"] and quoted[1] > window["start"]


def window_caption(window: dict, quoted: list[int] | None = None) -> str:
    head = "all attention views" if window["head"] is None else f"attention view {window['head']}"
    where = f" · starts at {window['where']}" if window.get("where") else ""
    caption = (
        f"Tokens {window['start']:,}-{max(window['start'], window['end'] - 1):,} of {window['total']:,}{where} · "
        f"layer {window['layer']} of {window['layers']}, {head}"
    )
    local = window.get("local_window")
    if local:
        caption += f" · a local layer: it sees only the latest {local:,} tokens, so its memory keeps the newest text"
    if window["mode"] == "one head":
        kept = window["kept"]
        recent = f"{kept['recent']:,} of the latest text, " if kept.get("recent") else ""
        caption += (
            f" · its memory holds {window['entries']:,} tokens: {recent}{kept['cap']:,} important to a summary, "
            f"{kept['nuc']:,} surprising, {kept['read']:,} read since the last compression, "
            f"{kept['sink']:,} of the chat template kept always"
        )
    if _marks_quote(window, quoted):
        caption += " · the sentence the answer quoted is highlighted in yellow"
    return caption


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
        return "No memory samples for this document (it was read before the app recorded them, e.g. by the CLI)."
    ratio = last["full_kv_bytes"] / last["pot_bytes"] if last["pot_bytes"] else 0
    when = "so far" if memory["live"] else "at the end of the read"
    return (
        f"{when.capitalize()}: the memory holds {last['entries']:,} tokens ({size(last['pot_bytes'])}); a full "
        f"KV cache for the same {last['tokens']:,} tokens would need {size(last['full_kv_bytes'])} ({ratio:,.1f}x). "
        f"Process memory: {size(last['rss_bytes'])}."
    )
