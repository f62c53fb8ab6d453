"""Retrieval alone: how often the spans the reranker would read hold the answer, per rerank prompt and candidate set.

    python -m benchmarks.devset.rerank_recall [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev]
        [--candidates 1024:12,2048:24] [--prompts current,which,ask,none] [--out benchmarks/devset/results/rerank]
        [--threads 1]

Each --candidates entry is budget:max_spans[:span_tokens[:ranking]] (EvidenceConfig's budget_tokens, max_spans,
span_tokens and ranking; the last two default to EvidenceConfig's). For every development question, the
document's default pot (read once, or reused from --home) finds its candidate spans exactly as `ask` does
(`gather_evidence` with those settings and read_spans=0); each candidate is then scored by the question's mean
log-probability after it (core.rerank.question_likelihoods) with each request wording of --prompts, and by the
share of the question's attention in the bucket that found it. No answer is generated. Reports recall@k
(k = 1..5): the share of questions where one of the k best spans holds an accepted answer or the evidence quote
(score.evidence_holds), beside the share whose candidates hold it at all. Writes rerank_recall.json and
rerank_recall.md under --out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from infinipot.core.rerank import best_spans

from .check import load_questions
from .documents import DEFAULT_DIR, document_path
from .score import evidence_holds

RESULTS = Path(__file__).with_name("results") / "rerank"
# name -> the request written after each span (None: the engine's own, assets/cap_prompts.json "rerank";
# "": the question follows the span directly)
PROMPTS = {
    "current": None,
    "which": "Which question does the text above answer?",
    "ask": "Ask a question about the text above.",
    "none": "",
}


def _wording(name: str) -> str:
    wording = PROMPTS[name]
    if wording is None:
        return 'assets/cap_prompts.json\'s "rerank", the one `ask` uses'
    return repr(wording) if wording else "none, the question follows the span"


def recall_at(records: list[dict], scorer: str, k: int) -> int:
    """Questions where one of the k best candidates by `scorer` holds the answer."""
    return sum(any(r["holds"][i] for i in best_spans(r["scores"][scorer], k)) for r in records)


def candidate_config(entry: str):
    """EvidenceConfig from a --candidates entry budget:max_spans[:span_tokens[:ranking]]."""
    from infinipot.core.evidence import EvidenceConfig

    parts = entry.split(":")
    if not 2 <= len(parts) <= 4:
        raise ValueError(f"a candidate set is budget:max_spans[:span_tokens[:ranking]], got {entry!r}")
    fields = {"budget_tokens": int(parts[0]), "max_spans": int(parts[1]), "read_spans": 0}
    if len(parts) > 2:
        fields["span_tokens"] = int(parts[2])
    if len(parts) > 3:
        fields["ranking"] = parts[3]
    return EvidenceConfig(**fields)


def score_candidates(args: argparse.Namespace, config, prompts: list[str]) -> list[dict]:
    from infinipot.app.ask.evidence import gather_evidence
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig
    from infinipot.core.rerank import question_likelihoods

    service = DocumentService(args.home, device="cpu")
    stored_by_document: dict[str, object] = {}
    records = []
    for question in load_questions():
        document = question["document"]
        if document not in stored_by_document:
            report = service.read(document_path(args.docs, document), PotConfig())
            stored_by_document[document] = service.open_pot(report.doc_id)
        stored = stored_by_document[document]
        engine = stored.engine
        spans, _ = gather_evidence(service.library, stored, question["question"], config, 256)
        candidates = [span for span in spans if not span.held]
        targets = [question["evidence"], *question["answers"]] if question.get("evidence") else question["answers"]
        texts = [engine.tokenizer.decode(list(span.ids), skip_special_tokens=True) for span in candidates]
        _, question_ids = engine.question_parts(question["question"])
        scores = {"attention share": [span.score for span in candidates]}
        for name in prompts:
            wording = PROMPTS[name]
            request = engine.rerank_request_ids if wording is None else (engine.request_ids(wording) if wording else [])
            spans_ids = [span.ids for span in candidates]
            scores[name] = question_likelihoods(engine.model, engine.opening_pot(), spans_ids, request, question_ids)
        records.append(
            {
                "id": question["id"],
                "holds": [evidence_holds([text], targets) for text in texts],
                "tokens": [len(span) for span in candidates],
                "scores": scores,
            }
        )
        print(f"  {question['id']}: {sum(records[-1]['holds'])} of {len(candidates)} candidates hold it", flush=True)
    return records


def report(results: dict[str, list[dict]], prompts: list[str]) -> str:
    lines = [
        "# Reranker recall on the development set (no answers generated)",
        "",
        "recall@k: questions where one of the k best candidates holds an accepted answer or the evidence quote.",
        "`attention share`: the share of the question's attention over the pot in the bucket that found the",
        "candidate; the others: the question's mean",
        f"log-probability after the span and the request ({'; '.join(f'`{p}`: {_wording(p)}' for p in prompts)}).",
        "",
        "| candidates (budget:max spans:span tokens:ranking) | held by any | scorer | @1 | @2 | @3 | @4 | @5 |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, records in results.items():
        held = sum(any(r["holds"]) for r in records)
        for scorer in ["attention share", *prompts]:
            cells = " | ".join(str(recall_at(records, scorer, k)) for k in (1, 2, 3, 4, 5))
            lines.append(f"| {name} | {held} of {len(records)} | {scorer} | {cells} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument(
        "--candidates", default="1024:12,2048:24", help="budget:max_spans[:span_tokens[:ranking]], comma-separated"
    )
    parser.add_argument("--prompts", default=",".join(PROMPTS))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    prompts = [p.strip() for p in args.prompts.split(",") if p.strip()]
    unknown = [p for p in prompts if p not in PROMPTS]
    if unknown:
        parser.error(f"unknown prompts {unknown}; choose from {', '.join(PROMPTS)}")
    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    results = {}
    for entry in args.candidates.split(","):
        config = candidate_config(entry)
        name = f"{config.budget_tokens}:{config.max_spans}:{config.span_tokens}:{config.ranking}"
        print(f"candidates {name}", flush=True)
        results[name] = score_candidates(args, config, prompts)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.devset.rerank_recall " + " ".join(sys.argv[1:])
    (args.out / "rerank_recall.json").write_text(json.dumps({"command": command, "results": results}) + "\n")
    text = report(results, prompts) + f"\nCommand: `{command}` ({(time.perf_counter() - started) / 60:.1f} min)\n"
    (args.out / "rerank_recall.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
