"""Summaries without inventions, measured: each document summarized in each style, with the content words of the
summary (names, numbers, nouns: core.grounding.content_words) that the document's text does not hold (its own
frame aside: the "Main points:" header and the "(page 3)" / "(line 120)" locations of the points).

    python -m benchmarks.devset.summaries [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev]
        [--extra /usr/share/common-licenses/GPL-3] [--styles extractive,written] [--threads 2]
        [--out benchmarks/devset/results/summaries]

Documents: the development set's libtasn1 manual, shared-mime-info spec and story, plus --extra files (the GPL-3
text that Debian's base-files installs). Each is read into a stored pot under --home (reused when there), then
summarized anew (DocumentService.summarize(new=True)) in each style. <out>/summaries.jsonl gets one record per
(document, style): the summary verbatim, seconds, and the unsupported words; <out>/report.md a table and every
summary.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from .doctext import DocText
from .documents import DEFAULT_DIR, document_path

RESULTS = Path(__file__).parent / "results" / "summaries"
DOCUMENTS = ("libtasn1", "mime-spec", "story")


# The summary's own frame, not claims about the document: the points' header and their locations.
_FRAME = re.compile(r"^Main points:$|\((?:page|line|chapter) [\d,]+\)", re.MULTILINE)


def said(summary: str) -> str:
    """What a summary says about the document: without its "Main points:" header and "(page 3)" locations."""
    return _FRAME.sub(" ", summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--extra", type=Path, nargs="*", default=[Path("/usr/share/common-licenses/GPL-3")])
    parser.add_argument("--styles", default="extractive,written")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig
    from infinipot.core.grounding import content_words, unsupported_words
    from infinipot.core.summary import SummaryConfig

    args.out.mkdir(parents=True, exist_ok=True)
    service = DocumentService(args.home, device="cpu")
    paths = [document_path(args.docs, key) for key in DOCUMENTS] + list(args.extra)
    records = []
    for path in paths:
        doc_id = service.read(path, PotConfig()).doc_id
        text = DocText.load(path).text
        for style in [s for s in args.styles.split(",") if s]:
            began = time.perf_counter()
            pieces, _ = service.summarize(doc_id, new=True, config=SummaryConfig(style=style))
            summary = "".join(pieces).strip()
            seconds = round(time.perf_counter() - began, 1)
            missing = unsupported_words(said(summary), [text])
            record = {
                "document": path.name,
                "style": style,
                "summary": summary,
                "seconds": seconds,
                "content_words": len(content_words(summary)),
                "unsupported": missing,
            }
            records.append(record)
            with open(args.out / "summaries.jsonl", "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            print(f"{path.name} {style}: {seconds} s, {len(missing)} unsupported {missing}", flush=True)
    lines = [
        "# Summaries and the words they do not take from the document",
        "",
        "| document | style | seconds | content words | unsupported words |",
        "|---|---|---:|---:|---|",
    ]
    for r in records:
        shown = ", ".join(r["unsupported"]) or "-"
        lines.append(
            f"| {r['document']} | {r['style']} | {r['seconds']} | {r['content_words']} | "
            f"{len(r['unsupported'])}: {shown} |"
        )
    lines += ["", "## The summaries", ""]
    for r in records:
        lines += [f"### {r['document']} ({r['style']}, {r['seconds']} s)", "", r["summary"], ""]
    (args.out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[: 4 + len(records)]))


if __name__ == "__main__":
    main()
