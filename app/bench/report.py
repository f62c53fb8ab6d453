"""Benchmark reports: summaries, markdown tables and PNG figures (matplotlib, Agg, imported only here)."""

from __future__ import annotations

import json
from pathlib import Path

from infinipot.app.bench.results import length_label


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


# ---- needle in a haystack -----------------------------------------------------------------------------


def niah_summary(records: list[dict], methods, lengths, depths) -> list[dict]:
    """One cell per (method, length, depth) asked for: trials, found, accuracy (None when refused or not run)."""
    cells = []
    for method in methods:
        for length in lengths:
            for depth in depths:
                runs = [r for r in records if (r["method"], r["length"], r["depth"]) == (method, length, depth)]
                ok = [r for r in runs if r["status"] == "ok"]
                found = sum(r["found"] for r in ok)
                kept = [r["key_kept"] for r in ok if "key_kept" in r]
                cells.append(
                    {
                        "method": method,
                        "length": length,
                        "depth": depth,
                        "trials": len(ok),
                        "found": found,
                        "accuracy": found / len(ok) if ok else None,
                        "refused": len(runs) - len(ok),
                        "key_kept": round(sum(kept) / len(kept), 3) if kept else None,
                        "read_seconds": round(sum(r["read_seconds"] for r in ok) / len(ok), 2) if ok else None,
                    }
                )
    return cells


def _cell_text(cell: dict) -> str:
    if cell["accuracy"] is not None:
        return f"{100 * cell['accuracy']:.0f}"
    return "refused" if cell["refused"] else "-"


def _mean_text(cells: list[dict]) -> str:
    """' (mean 27)': the accuracy averaged over depths, when there are several and all ran."""
    accuracies = [c["accuracy"] for c in cells]
    if len(accuracies) < 2 or None in accuracies:
        return ""
    return f" (mean {100 * sum(accuracies) / len(accuracies):.0f})"


def niah_table(cells: list[dict], settings, labels) -> str:
    """Rows: methods (`labels`); columns: lengths; each cell the accuracy (%) at every depth, like Table 4."""
    depths = "/".join(f"{d:g}" for d in settings.depths)
    lines = [
        f"Passkey retrieval accuracy (%) at depths {depths} (and their mean); model `{settings.model}`, "
        f"pot |M| = {settings.pot_size}, "
        + _pot_settings_text(settings.pot_config(settings.methods[0]))
        + f", {settings.trials} trial(s) per cell"
        + (f", keys from seed {settings.seed}" if settings.seed else "")
        + (", question-aware catalyst (CaP-Q)" if settings.cap == "question" else "")
        + (
            f"; `+focus{settings.focus}`: the same pots answered from a copy distilled to {settings.focus} entries "
            "with the question as catalyst (`ask --focus`)."
            if settings.focus is not None
            else "."
        )
        + (
            " `+evidence`: the same pots answered with the document spans that the question's attention over the "
            "pot and its words in the document rank best (`ask --answer-from evidence`), read verbatim after the "
            "chat template's opening alone; `+evidence+pot`: read after the whole pot; `+evidence+potN`: after a "
            "copy of the pot distilled to N entries with the question."
            if settings.evidence_pots
            else ""
        ),
        "",
        *_grid(cells, labels, settings.lengths, lambda mine: "/".join(map(_cell_text, mine)) + _mean_text(mine)),
        "",
        f"Share of (layer, KV head) slots whose pot held the whole key after reading (%), at depths {depths}: "
        "a low accuracy beside a high share is the model failing to read a needle the pot kept.",
        "",
        *_grid(cells, settings.methods, settings.lengths, lambda mine: "/".join(map(_kept_text, mine))),
    ]
    return "\n".join(lines) + "\n"


def _pot_settings_text(config) -> str:
    """What else shaped the memory-bounded pots, so a table read alone says which ablation it is."""
    text = f"|C| = {config.keep_size}, alpha = {config.nuc_ratio:g}, NuC per {config.nuc_unit}, "
    return text + f"{config.min_sink_tokens} sinks" + ("" if config.cr_rope else ", CR-RoPE off")


def _kept_text(cell: dict) -> str:
    return "-" if cell["key_kept"] is None else f"{100 * cell['key_kept']:.0f}"


def _grid(cells: list[dict], labels, lengths, text) -> list[str]:
    """Markdown rows: one per label, one column per length; `text` writes a length's cells (one per depth)."""
    lines = ["| method | " + " | ".join(length_label(n) for n in lengths) + " |", "|---|" + "---|" * len(lengths)]
    for label in labels:
        row = [text([c for c in cells if c["method"] == label and c["length"] == length]) for length in lengths]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    return lines


def niah_heatmap(cells: list[dict], method: str, settings, path: Path) -> Path:
    """Depth (rows) by length (columns), coloured by accuracy; refused or missing cells stay grey."""
    import numpy as np

    plt = _pyplot()
    grid = np.full((len(settings.depths), len(settings.lengths)), np.nan)
    labels = [["" for _ in settings.lengths] for _ in settings.depths]
    for cell in cells:
        if cell["method"] != method:
            continue
        row, col = settings.depths.index(cell["depth"]), settings.lengths.index(cell["length"])
        labels[row][col] = _cell_text(cell)
        if cell["accuracy"] is not None:
            grid[row, col] = 100 * cell["accuracy"]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 + 0.9 * len(settings.lengths)), 1.2 + 0.6 * len(settings.depths)))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for row in range(len(settings.depths)):
        for col in range(len(settings.lengths)):
            ax.text(col, row, labels[row][col], ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(settings.lengths)), [length_label(n) for n in settings.lengths])
    ax.set_yticks(range(len(settings.depths)), [f"{d:g}" for d in settings.depths])
    ax.set_xlabel("document tokens")
    ax.set_ylabel("needle depth")
    ax.set_title(f"{method}: passkey accuracy (%)")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---- reading speed and memory -------------------------------------------------------------------------


def speed_rows(records: list[dict], methods, lengths) -> list[dict]:
    """Records in (method, length) order with the throughput ratio to the plain chunked forward added."""
    plain = {r["length"]: r for r in records if r["method"] == "plain" and r["status"] == "ok"}
    rows = []
    for method in ("plain", *methods):
        for length in lengths:
            found = [r for r in records if (r["method"], r["length"]) == (method, length)]
            if not found:
                continue
            row = dict(found[-1])
            base = plain.get(length)
            if row["status"] == "ok" and base:
                row["vs_plain"] = round(row["tokens_per_s"] / base["tokens_per_s"], 3)
            rows.append(row)
    return rows


def speed_table(rows: list[dict], settings) -> str:
    lines = [
        f"Reading throughput and peak memory; model `{settings.model}` on {rows[0]['device'] if rows else '?'}, "
        f"pot |M| = {settings.pot_size}; `plain` is the model's own chunked forward over a sliding window of "
        "the same size (no scoring, no compression); throughput is the median of "
        f"{settings.repeats} read(s), each (method, length) in a fresh process.",
        "",
        "| method | tokens | tokens/s | vs plain | peak RSS (MiB) | RSS growth while reading (MiB) "
        "| peak KV entries | load average |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"| {r['method']} | {length_label(r['length'])} | refused | | | | | |")
            continue
        lines.append(
            f"| {r['method']} | {length_label(r['length'])} | {r['tokens_per_s']:.0f} | {r.get('vs_plain', '')} | "
            f"{r['peak_rss_mib']:.0f} | {r['peak_rss_mib'] - r['rss_before_mib']:.0f} | {r['peak_entries']} "
            f"| {r.get('load_average', '')} |"
        )
    return "\n".join(lines) + "\n"


def speed_plot(rows: list[dict], settings, path: Path) -> Path:
    """Two panels against document length: tokens/s, and peak RSS, one line per method."""
    plt = _pyplot()
    fig, (speed_ax, memory_ax) = plt.subplots(1, 2, figsize=(10, 4))
    for method in ("plain", *settings.methods):
        mine = sorted((r for r in rows if r["method"] == method and r["status"] == "ok"), key=lambda r: r["length"])
        if not mine:
            continue
        x = [r["length"] for r in mine]
        style = "--" if method == "plain" else "-"
        speed_ax.plot(x, [r["tokens_per_s"] for r in mine], style, marker="o", label=method)
        memory_ax.plot(x, [r["peak_rss_mib"] for r in mine], style, marker="o", label=method)
    for ax, label in ((speed_ax, "tokens/s (reading)"), (memory_ax, "peak RSS (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(settings.lengths, [length_label(n) for n in settings.lengths])
        ax.set_xlabel("document tokens")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    speed_ax.legend()
    fig.suptitle(f"{settings.model}, pot {settings.pot_size}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
