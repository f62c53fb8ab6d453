"""Evidence recall alone (no answers generated): which evidence ranking finds the passage that holds the answer.

    .venv/bin/python -m benchmarks.devset.recall --docs bench-results/devset-docs --home /tmp/ip-home-devset-modes \\
        --rankings attention,words,both --budgets 512,768 [--max-spans 12] [--max-span-tokens 192] \\
        [--set questions|paraphrases] [--pointer retrieval-heads|later-layers] [--words-per-attention N]
        [--words-lead-score S] [--word-neighbours N] [--word-index tokens|fts5]

Each document is read once into the default pot (reused when the home has it); for each question the spans of
`evidence` mode are chosen (app.ask.evidence.gather_evidence, as `ask` does) and decoded; recall is the share of
questions where one span holds an accepted answer or the evidence quote (score.evidence_holds), as run_modes
scores evidence mode. `--set paraphrases` asks paraphrases.jsonl's questions instead (they share no content
word with the sentence that answers them; the sentence counts as the evidence quote). Retrieval is measured
apart from reading: a span that holds the answer is the ceiling of what the model can then read out of it.

`--word-index fts5` measures whether the library's FTS5 index (storage/passages.py: bm25 over 128-token passages,
the index `ask --all` searches) could serve a single document's word ranking too: the words' buckets come from the
document's best passages there (each passage's buckets in turn, the passage's bm25 as their score) instead of
core.answer.word_match over its token ids. It swaps core.answer.evidence.word_ranked_buckets for the run; nothing
else changes.
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
from benchmarks.devset.score import evidence_holds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--rankings", default="attention,words,both")
    parser.add_argument("--budgets", default="1024")
    parser.add_argument("--set", choices=("questions", "paraphrases"), default="questions")
    parser.add_argument("--max-spans", type=int, help="most spans read (EvidenceConfig's default when omitted)")
    parser.add_argument("--max-span-tokens", type=int, help="longest span (EvidenceConfig's default when omitted)")
    parser.add_argument("--pointer", help="whose attention points (EvidenceConfig's default when omitted)")
    parser.add_argument("--words-per-attention", type=int, help="how 'both' interleaves (default when omitted)")
    parser.add_argument("--words-lead-score", type=float, help="when the words lead (default when omitted)")
    parser.add_argument("--word-neighbours", type=int, help="neighbour words per question word (default when omitted)")
    parser.add_argument("--word-index", choices=("tokens", "fts5"), default="tokens", help="what finds the words")
    parser.add_argument("--out", type=Path, help="write per-question results here (JSON)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from infinipot.app.ask.evidence import gather_evidence
    from infinipot.app.service import DocumentService
    from infinipot.core.answer.evidence import EvidenceConfig
    from infinipot.core.config import PotConfig

    rankings = args.rankings.split(",")
    budgets = [int(b) for b in args.budgets.split(",")]
    shaping = ("max_spans", "max_span_tokens", "pointer", "words_per_attention", "words_lead_score", "word_neighbours")
    shape = {name: getattr(args, name) for name in shaping if getattr(args, name) is not None}
    service = DocumentService(args.home, device="cpu")
    found: dict[tuple[str, int], list[bool]] = {}
    seconds: dict[tuple[str, int], list[float]] = {}
    rows = []
    by_document: dict[str, list[dict]] = {}
    for question in load_questions() if args.set == "questions" else load_paraphrases():
        by_document.setdefault(question["document"], []).append(question)
    for document, items in by_document.items():
        report = service.read(document_path(args.docs, document), PotConfig())
        stored = service.open_pot(report.doc_id)
        tokenizer = stored.engine.tokenizer
        for question in items:
            if args.word_index == "fts5":
                use_fts5_words(service, stored, question["question"])
            targets = list(question["answers"]) + [question.get("evidence") or question["sentence"]]
            for ranking in rankings:
                for budget in budgets:
                    config = EvidenceConfig(budget_tokens=budget, ranking=ranking, **shape)
                    began = time.perf_counter()
                    spans, _ = gather_evidence(service.library, stored, question["question"], config, 256)
                    took = time.perf_counter() - began
                    texts = [tokenizer.decode(list(s.ids), skip_special_tokens=True) for s in spans]
                    hit = evidence_holds(texts, targets)
                    found.setdefault((ranking, budget), []).append(hit)
                    seconds.setdefault((ranking, budget), []).append(took)
                    rows.append(
                        {
                            "id": question["id"],
                            "ranking": ranking,
                            "budget": budget,
                            "holds": hit,
                            "tokens": sum(len(s) for s in spans),
                            "seconds": round(took, 3),
                        }
                    )
        print(f"{document}: {len(items)} questions", flush=True)
    print("| ranking | budget | evidence recall | median s ranking |")
    print("|---|---:|---:|---:|")
    for (ranking, budget), hits in found.items():
        share = 100 * sum(hits) / len(hits)
        median = statistics.median(seconds[(ranking, budget)])
        print(f"| {ranking} | {budget} | {share:.1f}% ({sum(hits)}/{len(hits)}) | {median:.2f} |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


# Passages of the FTS5 index taken per question (each gives its buckets; word_match's ranking keeps every matching
# bucket, and the spans chosen stop at the budget either way).
FTS5_PASSAGES = 40


def use_fts5_words(service, stored, question: str) -> None:
    """Make core.answer.evidence rank the words' buckets of `stored`'s document for `question` by the FTS5 index."""
    from infinipot.app.library.passage_index import ensure_indexed
    from infinipot.core import evidence as core_evidence
    from infinipot.core.answer.evidence import Bucket

    store, loaded = service.library.store, stored.engine.loaded
    ensure_indexed(store, service.library.files, [store.documents.get(stored.doc_id)], loaded)
    hits = store.passages.search(question, loaded.identity, FTS5_PASSAGES, [stored.doc_id])

    def fts5_buckets(document_ids, question_ids, keys, config, until, neighbours=frozenset()):
        size, seen, buckets = config.bucket_tokens, set(), []
        for hit in hits:
            for index in range(hit.first_token // size, -(-hit.end_token // size)):
                if index * size < until and index not in seen and hit.score > 0:
                    seen.add(index)
                    buckets.append((index, hit.score))
        total = sum(score for _, score in buckets)
        return [Bucket(index, score / total, index * size, score) for index, score in buckets]

    core_evidence.word_ranked_buckets = fts5_buckets


if __name__ == "__main__":
    raise SystemExit(main())
