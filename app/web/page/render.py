"""Plain data from the workspace to what the page shows: table rows, HTML with CSS classes (assets/ui.css), text.

Pure string functions; no gradio and no torch, so they are tested directly.
"""

from __future__ import annotations

import html

LIBRARY_HEADERS = ["Document", "Status", "Tokens", "Pages", "Pot (entries / size)", "Disk", "ID"]
STATE_LABELS = {
    "sink": "sink (chat template opening)",
    "nuc": "kept by NuC (novelty)",
    "cap": "kept by CaP (catalyst attention)",
    "read": "read since the last compression",
    "dropped": "dropped",
}
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
                size(row["disk_bytes"]),
                row["doc_id"],
            ]
        )
    return table


def upload_notice(results: list[dict]) -> str:
    """One line per uploaded file: queued, or not added with the reason (Markdown)."""
    lines = []
    for result in results:
        if result["ok"]:
            lines.append(f"- **{result['name']}**: queued for reading")
        else:
            lines.append(f"- **{result['name']}** was not added: {result['message']}")
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
    """One line: '983 / 1,524 tokens (65%) · 20 compressions · 107 tokens/s · ETA 5 s'."""
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
        f"{snapshot['cycles']:,} compressions",
        f"pot {snapshot['entries']:,} / {snapshot['pot_size']:,} entries",
        f"{rate:,.0f} tokens/s" if rate else "- tokens/s",
    ]
    if status == "reading":
        parts.append(f"ETA {duration(snapshot['eta_seconds'])}")
        return f"{name}: reading · " + " · ".join(parts)
    if status == "done":
        how = "reused the stored pot" if snapshot.get("reused") else f"read in {duration(snapshot['elapsed_seconds'])}"
        return f"{name}: ready · " + " · ".join(parts) + f" · {how}"
    if status == "cancelled":
        return f"{name}: cancelled · " + " · ".join(parts) + " · Resume reads it again"
    if status == "interrupted":
        return f"{name}: interrupted · Resume continues it"
    return f"{name}: failed: {snapshot.get('error') or 'unknown error'}"


def progress_html(snapshot: dict | None) -> str:
    text = escape(progress_text(snapshot))
    if snapshot is None or snapshot["status"] in ("queued", "counting"):
        bar = '<progress class="ip-bar"></progress>' if snapshot else ""
    else:
        bar = f'<progress class="ip-bar" max="1000" value="{round(1000 * snapshot["fraction"])}"></progress>'
    return f'<div class="ip-progress">{bar}<div class="ip-progress-text">{text}</div></div>'


def legend_html(mode: str) -> str:
    if mode == "all heads":
        cells = "".join(f'<span class="ip-tok ip-h{i}">{i * 10}%</span>' for i in range(0, _SHADES + 1, 2))
        return f'<div class="ip-legend">share of heads that kept the token: {cells}</div>'
    cells = "".join(f'<span class="ip-tok ip-{state}">{escape(label)}</span>' for state, label in STATE_LABELS.items())
    return f'<div class="ip-legend">{cells}</div>'


def window_caption(window: dict) -> str:
    head = "all KV heads" if window["head"] is None else f"KV head {window['head']}"
    where = f" · starts at {window['where']}" if window.get("where") else ""
    caption = (
        f"Tokens {window['start']:,}-{max(window['start'], window['end'] - 1):,} of {window['total']:,}{where} · "
        f"layer {window['layer']} of {window['layers']}, {head}"
    )
    if window["mode"] == "one head":
        kept = window["kept"]
        caption += (
            f" · pot {window['entries']:,} entries: {kept['nuc']:,} NuC, {kept['cap']:,} CaP, "
            f"{kept['read']:,} read since the last compression, {kept['sink']:,} sinks"
        )
    return caption


def tokens_html(window: dict) -> str:
    """The window's text, one span per token, classed by why it was kept (or by how many heads kept it)."""
    spans = []
    for offset, token in enumerate(window["tokens"]):
        if not token["text"]:
            continue  # a later piece of a character split over tokens
        index = window["start"] + offset
        if window["mode"] == "all heads":
            heads = window["heads_counted"]
            shade = round(_SHADES * token["count"] / heads) if heads else 0
            title = f"token {index:,}: kept by {token['count']} of {heads} heads"
            css = f"ip-h{shade}"
        else:
            title = f"token {index:,}: {STATE_LABELS[token['state']]}"
            css = f"ip-{token['state']}"
        spans.append(f'<span class="ip-tok {css}" title="{escape(title)}">{escape(token["text"])}</span>')
    return f'<div class="ip-text">{"".join(spans)}</div>'


def retention_html(data: dict) -> str:
    """Layers (rows) x position bins or pages (columns), shaded by the share of tokens the layer still holds."""
    matrix = data["matrix"]
    peak = max((value for row in matrix for value in row), default=0.0) or 1.0
    rows = []
    for layer, values in enumerate(matrix):
        cells = "".join(
            f'<td class="ip-r{round(_SHADES * value / peak)}" '
            f'title="layer {layer}, {escape(label)}: {100 * value:.2f}% of tokens kept"></td>'
            for value, label in zip(values, data["labels"], strict=True)
        )
        rows.append(f'<tr><th class="ip-layer">{layer}</th>{cells}</tr>')
    axis = "page" if data["x"] == "page" else "token position"
    first, last = data["labels"][0], data["labels"][-1]
    return (
        f'<div class="ip-retention"><table class="ip-heatmap">{"".join(rows)}</table>'
        f'<div class="ip-axis">y: layer 0 (top) to {len(matrix) - 1} · x: {axis}, {escape(first)} (left) to '
        f"{escape(last)} (right) · darkest = {100 * peak:.2f}% kept</div></div>"
    )


def memory_caption(memory: dict) -> str:
    last = memory["last"]
    if last is None:
        return "No memory samples for this document (it was read before the app recorded them, e.g. by the CLI)."
    ratio = last["full_kv_bytes"] / last["pot_bytes"] if last["pot_bytes"] else 0
    when = "so far" if memory["live"] else "at the end of the read"
    return (
        f"{when.capitalize()}: the pot holds {last['entries']:,} entries ({size(last['pot_bytes'])}); a full KV cache "
        f"for the same {last['tokens']:,} tokens would need {size(last['full_kv_bytes'])} ({ratio:,.1f}x). "
        f"Process memory: {size(last['rss_bytes'])}."
    )
