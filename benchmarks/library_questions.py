"""The development questions asked of a whole library (`ask --all`): is the right document cited, do the passages
read hold the answer, is the answer right, how long until the first token.

    PYTHONPATH=. .venv/bin/python -m benchmarks.library_questions --docs bench-results/devset-docs \\
        --home /tmp/ip-lib [--documents 1] [--set questions|paraphrases] [--single all|wrong] [--out results.json]

The library at `--home` must hold the development documents (read with `infinipot read`, as many other documents
beside them as the library should have). `--single all` also asks each question of its own document alone, in
the same run, so the two are compared on one machine at one time; `--single wrong` only those whose library answer
came from another document (with one answering document the library answers from the document's own pot exactly as
a question to it alone, so the other answers are the same). Scored as benchmarks/devset scores evidence mode:
the evidence holds when a cited passage holds an accepted answer or the evidence quote; the answer is right when
it holds an accepted answer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from benchmarks.devset.check import load_paraphrases, load_questions
from benchmarks.devset.documents import document_path
from benchmarks.devset.score import evidence_holds, is_correct


def ask(stream_and_stats) -> tuple[str, object, float]:
    started = time.perf_counter()
    pieces, stats = stream_and_stats()
    answer = "".join(pieces).strip()
    return answer, stats, time.perf_counter() - started


def scored(question: dict, answer: str, stats, seconds: float, doc_id: str) -> dict:
    targets = [*question["answers"], question.get("evidence") or question.get("sentence", "")]
    snippets = [c.get("snippet", "") for c in stats.citations]
    cited = [c.get("doc_id") or c.get("document") for c in stats.citations]
    return {
        "correct": is_correct(answer, question["answers"]),
        "evidence": evidence_holds(snippets, [t for t in targets if t]),
        "right_document": bool(cited) and cited[0] == doc_id,
        "ttft_seconds": round(stats.first_token_seconds or seconds, 3),
        "answer": answer,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, required=True, help="the development documents' folder")
    parser.add_argument("--home", type=Path, required=True, help="the library's data folder")
    parser.add_argument("--documents", type=int, default=1, help="documents answering each question")
    parser.add_argument("--set", choices=("questions", "paraphrases"), default="questions")
    parser.add_argument(
        "--single",
        choices=("all", "wrong"),
        help="also ask each question of its document alone: every one, or only those whose library answer came "
        "from another document (with one answering document, the others' answers are the same by construction)",
    )
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from infinipot.app.ask.library import LibraryConfig
    from infinipot.app.service import DocumentService

    service = DocumentService(args.home, device="cpu")
    config = LibraryConfig(documents=args.documents)
    asked = len(service.library_documents())
    questions = load_questions() if args.set == "questions" else load_paraphrases()
    questions = questions[: args.limit] if args.limit else questions
    doc_ids = {}
    rows = []
    for question in questions:
        key = question["document"]
        if key not in doc_ids:
            doc_ids[key] = service.find_document(str(document_path(args.docs, key))).id
        doc_id = doc_ids[key]
        answer, stats, seconds = ask(lambda q=question: service.ask_library(q["question"], config=config))
        row = {"id": question["id"], "library": scored(question, answer, stats, seconds, doc_id)}
        if args.single == "all" or (args.single == "wrong" and not row["library"]["right_document"]):
            single = lambda q=question, d=doc_id: service.ask(d, q["question"], record=False)[:2]  # noqa: E731
            answer, stats, seconds = ask(single)
            row["single"] = scored(question, answer, stats, seconds, doc_id)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n{len(rows)} questions to a library of {asked} documents (documents answering: {args.documents})")
    print("| asked | right document | evidence holds | correct | median s to first token |")
    print("|---|---:|---:|---:|---:|")
    for way in ("library", "single") if args.single else ("library",):
        # Without a single answer of its own, a question's single answer is its library answer (see --single).
        got = [row.get(way, row["library"]) for row in rows]
        counts = {k: sum(1 for g in got if g[k]) for k in ("right_document", "evidence", "correct")}
        median = statistics.median(g["ttft_seconds"] for g in got)
        print(
            f"| {way} | {counts['right_document']}/{len(got)} | {counts['evidence']}/{len(got)} "
            f"| {counts['correct']}/{len(got)} | {median:.2f} |"
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
