"""What the checked answer could decide from, recorded per question so that decision rules can be replayed offline.

    python -m benchmarks.devset.signals [--half tuning] [--docs bench-results/devset-docs]
        [--home /tmp/ip-home-dev] [--out benchmarks/results/devset/signals] [--threads 2]

For every answerable and unanswerable question of the half, through the app's own evidence (the passages the
default settings read) and the checked answer's own parts (core.answer.grounded_answer), it records the passages, the
judge's ranked sentences with their scores and per-token log-probabilities, the question's likelihood after no
text, the rare names asked about, and the writer's short answer (core.answer.written_answer, written for every
question): everything core.answer.answer_confidence and core.answer.learned_judge decide from. One JSON line per
question in <out>/signals-<half>.jsonl (a rerun skips what is there), and the judge's last hidden states in
<out>/states-<half>/<set>-<id>.pt. benchmarks.devset.decide fits and replays the decision over them;
benchmarks.judge.replay replays the learned judge.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .check import load_questions, load_unanswerable
from .documents import DEFAULT_DIR, DOCUMENTS, HALVES, document_path
from .records import append_jsonl, read_jsonl

RESULTS = Path(__file__).resolve().parents[1] / "results" / "devset" / "signals"


def record_signals(service, doc_id: str, question: str, settings, states: list | None = None) -> dict:
    """The passages, the judge's ranking (each sentence's question-token log-probabilities too), the no-text
    likelihood, the rare names and the writer's answer for one question. `states`, when given, receives the
    judge's last hidden states, (ranked + 1, hidden) float16: each ranked sentence's, then no text's (what
    core.answer.learned_judge reads)."""
    import torch

    from infinipot.app.ask import evidence
    from infinipot.core.answer.answer_sentences import judged_in_detail
    from infinipot.core.answer.evidence import spans_to_read
    from infinipot.core.answer.written_answer import written_answer
    from infinipot.core.engine import AnswerStats

    grounding = settings.grounding
    stored = service.open_pot(doc_id)
    engine = stored.engine
    began = time.perf_counter()
    spans, _ = evidence.gather_evidence(
        service.library, stored, question, settings.evidence, settings.decoding.max_new_tokens
    )
    passages = spans_to_read(spans)
    names = evidence.rare_names(service.library, stored, question, grounding.rare_name_mentions)
    texts = [engine.tokenizer.decode(list(ids), skip_special_tokens=True) for ids in passages]
    ranked, blank = judged_in_detail(engine, texts, question, grounding.sentences)
    no_text = blank.score
    judged = time.perf_counter()
    if states is not None:
        states.append(torch.stack([s.judgement.state for s in ranked] + [blank.state]).half())
    pot_entries = settings.evidence.pot_entries
    written = written_answer(engine, stored.pot, question, passages, None, AnswerStats(), pot_entries=pot_entries)
    return {
        "passages": texts,
        "ranked": [[s.text, s.span, round(s.score, 5)] for s in ranked],
        "tokens": [[round(x, 4) for x in s.judgement.tokens] for s in ranked],
        "no_text": round(no_text, 5),
        "no_text_tokens": [round(x, 4) for x in blank.tokens],
        "names": list(names),
        "written": written,
        "judge_seconds": round(judged - began, 3),
        "writer_seconds": round(time.perf_counter() - judged, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=HALVES, default="tuning")
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig

    keys = {key for key, doc in DOCUMENTS.items() if doc.half == args.half}
    out = args.out / f"signals-{args.half}.jsonl"
    states_dir = args.out / f"states-{args.half}"
    states_dir.mkdir(parents=True, exist_ok=True)
    done = {(r["set"], r["id"]) for r in read_jsonl(out)}
    service = DocumentService(Path(args.home), device="cpu")
    settings = AnswerSettings()
    work = [("answerable", q) for q in load_questions()] + [("unanswerable", q) for q in load_unanswerable()]
    doc_ids: dict[str, str] = {}
    for kind, q in work:
        if q["document"] not in keys or (kind, q["id"]) in done:
            continue
        if q["document"] not in doc_ids:
            doc_ids[q["document"]] = service.read(document_path(args.docs, q["document"]), PotConfig()).doc_id
        record = {"set": kind, "id": q["id"], "document": q["document"], "question": q["question"]}
        states: list = []
        record.update(record_signals(service, doc_ids[q["document"]], q["question"], settings, states))
        torch.save(states[0], states_dir / f"{kind}-{q['id']}.pt")
        append_jsonl(out, record)
        print(f"{kind} {q['id']}: {record['ranked'][0][0][:80] if record['ranked'] else ''!r}", flush=True)


if __name__ == "__main__":
    main()
