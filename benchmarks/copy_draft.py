"""Copy drafts (core.copy_drafts) measured: the same answers decoded with and without them, one run, one process.

    python -m benchmarks.copy_draft [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev] [--limit 54]
        [--draft 8] [--summaries] [--threads 2] [--out bench-results/copy-draft.jsonl]

Every answerable development question (benchmarks/devset/questions.jsonl, the first --limit) is asked through the
app's Python API (DocumentService.ask, default settings) twice: with DecodingConfig.copy_draft 0 and --draft, the
order alternating from one question to the next so that neither setting always runs on a warmer machine. For each
it records the seconds to the first token shown (the grounded answer shows its checked answer whole, so the
model's written answer is all inside it), the answer's seconds, the tokens the model wrote and the forwards it
took to write them. With --summaries, "Summarize this file" of libtasn1 and the story is made both ways too
(each stored in --home as its summary, as the app would).

Prints per setting the medians, the ratio of the medians, the summed forwards, and how many answers differ
(copy drafts keep the choices of token-by-token decoding; a forward over several tokens may round a near tie
the other way).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path


class ForwardCounter:
    """Counts core.generate.read_after calls (one per forward of the answer after its prefill)."""

    def __init__(self) -> None:
        self.count = 0

    def install(self) -> None:
        from infinipot.core import generate

        original = generate.read_after

        def counted(*args, **kwargs):
            self.count += 1
            return original(*args, **kwargs)

        generate.read_after = counted


def _ask(service, doc_id: str, question: str, settings, counter: ForwardCounter) -> dict:
    counter.count = 0
    began = time.perf_counter()
    pieces, stats, _ = service.ask(doc_id, question, settings, record=False)
    answer = "".join(pieces).strip()
    return {
        "answer": answer,
        "written": stats.written_answer,
        "ttft_seconds": stats.first_token_seconds,
        "seconds": round(time.perf_counter() - began, 3),
        "forwards": counter.count,
    }


def _summary(service, doc_id: str, settings, counter: ForwardCounter) -> dict:
    counter.count = 0
    began = time.perf_counter()
    pieces, stats = service.summarize(doc_id, settings.decoding, new=True)
    text = "".join(pieces).strip()
    return {
        "answer": text,
        "written": text,
        "ttft_seconds": stats.first_token_seconds,
        "seconds": round(time.perf_counter() - began, 3),
        "forwards": counter.count,
    }


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=None)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--limit", type=int, default=54)
    parser.add_argument("--draft", type=int, default=8)
    parser.add_argument("--summaries", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench-results/copy-draft.jsonl"))
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig

    from .devset.check import load_questions
    from .devset.documents import DEFAULT_DIR, document_path

    docs = args.docs or DEFAULT_DIR
    service = DocumentService(args.home, device="cpu")
    counter = ForwardCounter()
    counter.install()
    base = AnswerSettings()
    settings = {
        "off": replace(base, decoding=replace(base.decoding, copy_draft=0)),
        "on": replace(base, decoding=replace(base.decoding, copy_draft=args.draft)),
    }
    doc_ids: dict[str, str] = {}
    work = [("question", q) for q in load_questions()[: args.limit]]
    if args.summaries:
        work += [("summary", {"id": f"summary-{key}", "document": key}) for key in ("libtasn1", "story")]
    rows = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for index, (kind, q) in enumerate(work):
            if q["document"] not in doc_ids:
                doc_ids[q["document"]] = service.read(document_path(docs, q["document"]), PotConfig()).doc_id
            doc_id = doc_ids[q["document"]]
            order = ("off", "on") if index % 2 == 0 else ("on", "off")
            row = {"id": q["id"], "kind": kind}
            for name in order:
                if kind == "question":
                    row[name] = _ask(service, doc_id, q["question"], settings[name], counter)
                else:
                    row[name] = _summary(service, doc_id, settings[name], counter)
            row["same"] = row["off"]["answer"] == row["on"]["answer"] and row["off"]["written"] == row["on"]["written"]
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(
                f"{q['id']}: ttft off {row['off']['ttft_seconds']} on {row['on']['ttft_seconds']}, forwards "
                f"{row['off']['forwards']} -> {row['on']['forwards']}, same {row['same']}",
                flush=True,
            )
    for kind, plural in (("question", "questions"), ("summary", "summaries")):
        chosen = [row for row in rows if row["kind"] == kind]
        if not chosen:
            continue
        print(f"\n{plural}: {len(chosen)}, answers differing: {sum(not row['same'] for row in chosen)}")
        medians = {}
        for name in ("off", "on"):
            # A summary is timed whole (its parts are made before the first piece is shown).
            medians[name] = _median(row[name]["ttft_seconds" if kind == "question" else "seconds"] for row in chosen)
            seconds = _median(row[name]["seconds"] for row in chosen)
            forwards = sum(row[name]["forwards"] for row in chosen)
            timed = "median ttft" if kind == "question" else "median seconds"
            print(f"  {name}: {timed} {medians[name]} s, median seconds {seconds}, forwards {forwards}")
        if medians["off"] and medians["on"]:
            print(f"  on / off: {medians['on'] / medians['off']:.2f}")


if __name__ == "__main__":
    main()
