"""Summaries measured: which of the topics a person would name each one covers, the words it does not take from
the document, and its seconds.

    python -m benchmarks.devset.summaries [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev]
        [--threads 2] [--out benchmarks/results/devset/summaries] [--note TEXT]

Documents and topics: summary_topics.jsonl, 5-8 topics for each of ten development documents (two PDF manuals, a
story, two logs, a licence, a Word file, an HTML reference page, an EPUB book, release notes), written by someone
who read only the documents, before the outline summaries were built. A topic is covered when the summary holds
one of its phrases as whole words (score.contains: case, punctuation and whitespace aside). Unsupported words:
the summary's content words (core.answer.grounding.content_words) that the document's text lacks, its own frame aside
(the "Outline:", "Sections:", "Errors and warnings:" headers, "(page 3)" / "(line 120)" places,
and a log summary's counts: "194 INFO", "api-gateway (128)", "3 times"). Each document is read into a stored pot
under --home (reused when there), then summarized anew (DocumentService.summarize(new=True): the outline); a
PDF's bookmarks count as its words. <out>/summaries.jsonl gets one record per document, its run named "outline"
and --note; <out>/report.md the coverage table of every run recorded there and its summaries.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from .doctext import DocText
from .documents import DEFAULT_DIR, document_path
from .records import read_jsonl
from .score import contains

RESULTS = Path(__file__).resolve().parents[1] / "results" / "devset" / "summaries"
TOPICS = Path(__file__).with_name("summary_topics.jsonl")

# The summary's own frame, not claims about the document.
_FRAME = re.compile(
    r"^(?:Outline|Errors and warnings|Incidents in time order):$|^\s*Sections:|Names that recur:"
    r"|\((?:page|line|chapter) [\d,]+\)|\b(?:Part \d+ of \d+)\b"
    r"|A log of [\d,]+ timestamped lines from|\b\d+ (?:times|h|min)\b|\b[\d,]+ (?:ERROR|WARN|INFO|DEBUG)\b"
    r"|\b(?:ERROR|WARN|INFO|DEBUG)\b|\([\d,]+\)"
    r"|warning or error lines?|Most lines come from|\blines? [\d,]+(?:-[\d,]+)?|\.\.\. and \d+ more distinct"
    r" warnings and errors",
    re.MULTILINE,
)


def said(summary: str) -> str:
    """What a summary says about the document: without its frame (headers, places, a log summary's counts)."""
    return _FRAME.sub(" ", summary)


def load_topics(path: Path = TOPICS) -> dict[str, list[dict]]:
    topics: dict[str, list[dict]] = {}
    for topic in read_jsonl(path):
        topics.setdefault(topic["document"], []).append(topic)
    return topics


def covered(summary: str, topics: list[dict]) -> list[bool]:
    """Whether the summary holds one of each topic's phrases, as whole words."""
    return [any(contains(summary, phrase) for phrase in topic["any_of"]) for topic in topics]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--note", default="", help="added to each record's label")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.service import DocumentService
    from infinipot.core.answer.grounding import content_words, unsupported_words
    from infinipot.core.config import PotConfig
    from infinipot.ingest.outline import pdf_bookmarks

    args.out.mkdir(parents=True, exist_ok=True)
    service = DocumentService(args.home, device="cpu")
    topics = load_topics()
    run = "outline" + (f", {args.note}" if args.note else "")
    records = []
    for key, wanted in topics.items():
        path = document_path(args.docs, key)
        doc_id = service.read(path, PotConfig()).doc_id
        text = DocText.load(path).text
        if path.suffix == ".pdf":  # a PDF's bookmarks are its own words too (a part's title may be one)
            text += "\n" + "\n".join(heading.title for heading in pdf_bookmarks(path))
        began = time.perf_counter()
        pieces, stats = service.summarize(doc_id, new=True)
        summary = "".join(pieces).strip()
        seconds = round(time.perf_counter() - began, 1)
        missing = unsupported_words(said(summary), [text])
        hits = covered(summary, wanted)
        record = {
            "run": run,
            "document": key,
            "summary": summary,
            "parts": getattr(stats, "summary_parts", []),
            "seconds": seconds,
            "content_words": len(content_words(summary)),
            "unsupported": missing,
            "covered": [t["topic"] for t, hit in zip(wanted, hits, strict=True) if hit],
            "missed": [t["topic"] for t, hit in zip(wanted, hits, strict=True) if not hit],
        }
        records.append(record)
        with open(args.out / "summaries.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"{key}: {sum(hits)}/{len(hits)} topics, {seconds} s, {len(missing)} unsupported {missing}")
    report(args.out)


def report(out: Path) -> str:
    """report.md from every record in summaries.jsonl that has topics (the latest record per run and document)."""
    latest: dict[tuple[str, str], dict] = {}
    for record in read_jsonl(out / "summaries.jsonl"):
        if "covered" in record:
            latest[(record["run"], record["document"])] = record
    runs = list(dict.fromkeys(run for run, _ in latest))
    lines = [
        "# Summaries: the topics a person would name, and the words not taken from the document",
        "",
        "Written by `python -m benchmarks.devset.summaries` (topics: `benchmarks/devset/summary_topics.jsonl`).",
        "",
        "| run | topics covered | unsupported words | median seconds | per document (covered / topics, seconds) |",
        "|---|---:|---:|---:|---|",
    ]
    for run in runs:
        mine = [r for (name, _), r in latest.items() if name == run]
        hit = sum(len(r["covered"]) for r in mine)
        total = hit + sum(len(r["missed"]) for r in mine)
        unsupported = sum(len(r["unsupported"]) for r in mine)
        seconds = sorted(r["seconds"] for r in mine)
        median = seconds[len(seconds) // 2] if seconds else None
        per = ", ".join(
            f"{r['document']} {len(r['covered'])}/{len(r['covered']) + len(r['missed'])} ({r['seconds']} s)"
            for r in mine
        )
        lines.append(f"| {run} | {hit}/{total} ({100 * hit / max(total, 1):.0f}%) | {unsupported} | {median} | {per} |")
    lines += ["", "## The summaries", ""]
    for (run, key), r in latest.items():
        lines += [
            f"### {key} ({run}, {r['seconds']} s): {len(r['covered'])} topics covered",
            "",
            f"Missed: {'; '.join(r['missed']) or '-'}. Unsupported words: {', '.join(r['unsupported']) or '-'}.",
            "",
            r["summary"],
            "",
        ]
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text, encoding="utf-8")
    print("\n".join(lines[: 6 + len(runs)]))
    return text


if __name__ == "__main__":
    main()
