"""Diagnostic (no generation): evidence recall of the evidence spans under other bucket rankings.

    .venv/bin/python benchmarks/devset/results/evidence_rank_diag.py   (from the repository root; ~1 min)

Uses the pots stored in /tmp/ip-home-devset-modes by run_modes (read first when missing). For each question:
the attention over the pot of the whole answer prompt ("all") or of the question's own tokens ("question"),
buckets ranked by "app" (core.evidence.ranked_buckets as the code stands), "sum", "mean" (per kept token) or
"max"; spans chosen by core.evidence.choose_spans at the default budget; recall = score.evidence_holds on the
spans' text. Writes evidence_rank_diag.json beside this file.
"""

from __future__ import annotations

import collections
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.devset.check import load_questions  # noqa: E402
from benchmarks.devset.documents import document_path  # noqa: E402
from benchmarks.devset.score import evidence_holds  # noqa: E402

HOME = Path("/tmp/ip-home-devset-modes")
DOCS = Path("bench-results/devset-docs")


def rank(pot, attention, total, config, how):
    from infinipot.core.citations import document_token_scores
    from infinipot.core.evidence import Bucket, ranked_buckets

    if how == "app":
        return ranked_buckets(pot, attention, total, config)
    tokens, scores = document_token_scores(pot, attention, config.attention)
    inside = tokens < total
    tokens, scores = tokens[inside], scores[inside].double()
    buckets = tokens // config.bucket_tokens
    size = int(buckets.max()) + 1
    totals = torch.zeros(size, dtype=torch.float64).index_add_(0, buckets, scores)
    if how == "mean":
        counts = torch.zeros(size, dtype=torch.float64).index_add_(0, buckets, torch.ones_like(scores))
        totals = totals / counts.clamp(min=1)
    elif how == "max":
        totals = torch.zeros(size, dtype=torch.float64).scatter_reduce_(0, buckets, scores, "amax")
    best: dict[int, int] = {}
    for index in torch.argsort(scores, descending=True, stable=True).tolist():
        best.setdefault(int(buckets[index]), int(tokens[index]))
    order = torch.argsort(totals, descending=True, stable=True)
    return [Bucket(int(b), float(totals[b]), best[int(b)]) for b in order if totals[b] > 0]


def question_span(prompt: list[int], question_ids: list[int]) -> tuple[int, int] | None:
    """Where the question's tokens sit in the prompt (the first token may merge with what precedes it)."""
    for skip in (0, 1):
        sub = question_ids[skip:]
        for i in range(len(prompt) - len(sub), -1, -1):
            if prompt[i : i + len(sub)] == sub:
                return i, i + len(sub)
    return None


def main() -> None:
    torch.set_num_threads(1)
    from infinipot.app.library.documents import require_document, stored_token_ids
    from infinipot.app.library.token_ids import read_window, token_count
    from infinipot.app.service import DocumentService
    from infinipot.core.citations import answer_attention
    from infinipot.core.config import PotConfig
    from infinipot.core.decoding import DecodingConfig
    from infinipot.core.evidence import EvidenceConfig, choose_spans, span_breaks

    service = DocumentService(HOME, device="cpu")
    questions = load_questions()
    base = EvidenceConfig()
    results: dict[str, list] = collections.defaultdict(list)
    positions: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    started = time.time()
    for doc in ("libtasn1", "mime-spec", "story", "log"):
        report = service.read(document_path(DOCS, doc), PotConfig())
        stored = service.open_pot(report.doc_id)
        engine, pot = stored.engine, stored.pot
        document = require_document(service.library.store, stored.doc_id)
        path = stored_token_ids(service.library.files, document, engine.loaded)
        total = token_count(path)
        breaks = span_breaks(engine)

        def fetch(start, end, path=path):
            return read_window(path, start, end)

        for q in (q for q in questions if q["document"] == doc):
            room = engine.evidence_room(q["question"], DecodingConfig().max_new_tokens, base.max_spans)
            config = EvidenceConfig(budget_tokens=min(base.budget_tokens, room))
            prompt = engine.answer_prompt_ids(q["question"])
            at = question_span(prompt, engine.tokenizer.encode(" " + q["question"].strip(), add_special_tokens=False))
            attn_all = answer_attention(engine.model, pot, [], prompt)
            attn_q = answer_attention(engine.model, pot, prompt[: at[0]], prompt[at[0] : at[1]]) if at else attn_all
            targets = [*q["answers"], q["evidence"]]
            for name, attention in (("all", attn_all), ("question", attn_q)):
                for how in ("app", "sum", "mean", "max"):
                    ranked = rank(pot, attention, total, config, how)
                    spans = choose_spans(ranked, total, fetch, breaks, config)
                    texts = [
                        " ".join(engine.tokenizer.decode(list(s.ids), skip_special_tokens=True).split()) for s in spans
                    ]
                    results[f"{name}-{how}"].append((q["id"], doc, evidence_holds(texts, targets)))
                    for s in spans:
                        share = s.start / total
                        where = "first5" if share < 0.05 else "last5" if share > 0.95 else "mid"
                        positions[f"{name}-{how}"][where] += 1
            located = "" if at else "(question not located)"
            print(q["id"], {k: v[-1][2] for k, v in results.items()}, located, flush=True)
    print(f"{(time.time() - started) / 60:.1f} min")
    summary = {}
    for key, rows in results.items():
        summary[key] = {
            "recall": round(100 * sum(held for *_, held in rows) / len(rows), 1),
            "held": sum(held for *_, held in rows),
            "n": len(rows),
            "per_document": dict(collections.Counter(d for _, d, held in rows if held)),
            "span_positions": dict(positions[key]),
        }
        print(key, summary[key])
    out = Path(__file__).with_name("evidence_rank_diag.json")
    out.write_text(json.dumps({"results": summary, "per_question": dict(results)}, indent=1) + "\n")


if __name__ == "__main__":
    main()
