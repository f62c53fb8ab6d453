"""What the evidence passages are read after: the whole pot (the `evidence` mode) or nothing (the passages alone).

    python -m benchmarks.devset.passages_context [--docs bench-results/devset-docs] [--home /tmp/ip-home-devset-modes]
        [--max-new-tokens 64] [--out FILE.jsonl]

Every development question gets the same passages (app.ask.evidence.gather_evidence with the default
EvidenceConfig, the spans `ask --answer-from evidence` reads), answered twice with greedy decoding: after the
stored pot, as `ask` does, and in a fresh context holding only the passages. Prints one line per question and
the totals; --out keeps one JSON line per question. A measurement for choosing what an evidence answer reads
before its passages; the app's behaviour does not change with it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .check import load_questions
from .documents import DEFAULT_DIR, DOCUMENTS, document_path
from .run_modes import DEFAULT_HOME
from .score import is_correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from infinipot.app.ask import evidence
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig
    from infinipot.core.decoding import DecodingConfig
    from infinipot.core.evidence import spans_to_read

    service = DocumentService(args.home, device="cpu")
    doc_ids = {key: service.read(document_path(args.docs, key), PotConfig()).doc_id for key in DOCUMENTS}
    settings, decoding = AnswerSettings(), DecodingConfig(max_new_tokens=args.max_new_tokens)
    totals = {"after_pot": 0, "alone": 0, "n": 0}
    records = []
    for question in load_questions():
        stored = service.open_pot(doc_ids[question["document"]])
        engine = stored.engine
        spans, _ = evidence.gather_evidence(
            service.library, stored, question["question"], settings.evidence, settings.decoding.max_new_tokens
        )
        passages = spans_to_read(spans)
        after_pot = "".join(engine.answer(stored.pot, question["question"], decoding, evidence=passages)).strip()
        alone = after_pot
        if passages:
            fresh = engine.read([engine.joined_spans(passages)])
            alone = "".join(engine.answer(fresh, question["question"], decoding)).strip()
        record = {
            "id": question["id"],
            "after_pot": after_pot,
            "alone": alone,
            "after_pot_correct": is_correct(after_pot, question["answers"]),
            "alone_correct": is_correct(alone, question["answers"]),
        }
        records.append(record)
        totals["after_pot"] += record["after_pot_correct"]
        totals["alone"] += record["alone_correct"]
        totals["n"] += 1
        print(question["id"], int(record["after_pot_correct"]), int(record["alone_correct"]), flush=True)
    if args.out is not None:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(json.dumps(totals))


if __name__ == "__main__":
    main()
