"""Seconds to the first token of a not-found answer, with and without the writer: questions whose judged sentences
could not agree with any written answer (core.grounded_answer.could_answer) skip the writer; here each is also
asked with that check made to pass for every sentence, so the writer runs, as before the check existed.

    PYTHONPATH=. .venv/bin/python -m benchmarks.devset.unheld_ttft [--docs bench-results/devset-docs]
        [--home /tmp/ip-home-dev] [--rounds 3]

The two ways take turns, `--rounds` times per question (a slower spell of a shared machine falls on both). The
questions are the unanswerable development questions that skipped the writer in the recorded default run.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from .documents import DEFAULT_DIR, document_path

QUESTIONS = (
    ("libtasn1", "Which CVE identifiers were fixed in libtasn1 4.19.0?"),
    ("libtasn1", "What is the name of the Python module that wraps libtasn1?"),
    ("mime-spec", "Which Windows registry key holds the file type associations?"),
    ("log", "When does the TLS certificate of shop-prod-03 expire?"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    from infinipot.app.service import DocumentService
    from infinipot.core import grounded_answer

    service = DocumentService(args.home, device="cpu")
    checked = grounded_answer.could_answer
    seconds: dict[str, list[float]] = {"skipped": [], "written": []}
    for key, question in QUESTIONS:
        doc_id = service.find_document(str(document_path(args.docs, key))).id
        service.ask(doc_id, question, record=False)  # the pot loaded, the app warm
        answers = set()
        for _ in range(args.rounds):
            for way in ("written", "skipped"):
                grounded_answer.could_answer = checked if way == "skipped" else (lambda *_: True)
                try:
                    pieces, stats, _ = service.ask(doc_id, question, record=False)
                    answers.add((way, "".join(pieces), stats.answered_by))
                finally:
                    grounded_answer.could_answer = checked
                seconds[way].append(stats.first_token_seconds)
        print(question)
        for way, answer, why in sorted(answers):
            print(f"  {way} [{why}]: {answer[:110]}")
    for way, values in seconds.items():
        print(f"{way}: median {statistics.median(values):.2f} s over {len(values)} asks")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
