"""How soon the running app shows something to read after Ask: the first passage the search points at, then the
checked answer (issue 55).

    PYTHONPATH=. python -m benchmarks.devset.evidence_latency --home H [--docs DIR] [--every 3] [--out DIR]
        [--stops 10]

Serves the app on a loopback port over `--home` (the development documents read there, as
`benchmarks.devset.grounded` reads them), warms the model with one question, then asks every `--every`-th
answerable development question through the app's own /ask API (gradio_client, as the page's events stream) and
notes, from the moment each is submitted, when its answer bubble first says "Looking at" (the passage looked at,
with its page or line) and when the checked answer replaces it. Prints and writes medians per half and overall to
`<out>/evidence-latency.md`. With `--stops N`, the first N of those questions are also asked in-process once per
stage (the search, the reranker, the judge, the hidden writer), Stop is set 0.2 s into that stage, and the seconds
until the answer's stream has ended are noted (the app's Stop waits for exactly that).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

from infinipot.app.ask.progress import AskStage

from .check import load_questions
from .documents import DEFAULT_DIR, DOCUMENTS, document_path

RESULTS = Path(__file__).resolve().parents[1] / "results" / "devset" / "evidence-latency"


def _text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _waiting(text: str) -> bool:
    return text.rstrip().rstrip("*").rstrip().endswith("…")


def timed_ask(client, doc_id: str, question: str) -> dict:
    """Seconds from submitting to the first "Looking at" bubble and to the answer (None when never shown)."""
    started = time.perf_counter()
    job = client.submit(doc_id, question, api_name="/ask")
    evidence = answer = None
    for output in job:
        shown = output[0]
        bubble = _text(shown[-1]) if shown else ""
        now = time.perf_counter() - started
        if evidence is None and "Looking at" in bubble:
            evidence = now
        if answer is None and bubble and not _waiting(bubble):
            answer = now
    return {"first_evidence": evidence, "answer": answer}


def stop_latency(service, doc_id: str, question: str, stage: str, into: float = 0.2) -> float | None:
    """Seconds from a Stop set `into` s after the answer reached `stage` ("search": the ask itself) until its
    stream has ended; None when the answer never reached that stage (the writer runs only in doubt)."""
    stop = threading.Event()
    set_at: list[float] = []

    def press() -> None:
        set_at.append(time.perf_counter())
        stop.set()

    if stage == "search":
        threading.Timer(into, press).start()
    answering = service.asking(doc_id, question, stop=stop.is_set, record=False)
    stats = answering.stats
    for event in answering.events:
        if isinstance(event, AskStage) and event.kind == stage:
            threading.Timer(into, press).start()
    ended = time.perf_counter()
    time.sleep(into + 0.05)  # a timer not yet fired: the answer ended before the Stop
    return ended - set_at[0] if set_at and set_at[0] <= ended and stats.stopped_by == "reader" else None


STOP_STAGES = ("search", "looking", "weighing", "writing")


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="a data folder with the development documents")
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--every", type=int, default=3, help="ask every n-th answerable question")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--stops", type=int, default=0, help="questions asked once per stage and stopped there")
    args = parser.parse_args()
    os.environ["INFINIPOT_HOME"] = str(args.home)
    from gradio_client import Client

    from infinipot.app.service import DocumentService
    from infinipot.app.web.page import serve, stop_serving
    from infinipot.app.web.workspace import open_workspace
    from infinipot.core.config import PotConfig

    service = DocumentService(args.home, device="cpu")
    questions = load_questions()[:: args.every]
    doc_ids = {
        key: service.read(document_path(args.docs, key), PotConfig()).doc_id
        for key in dict.fromkeys(q["document"] for q in questions)
    }
    workspace = open_workspace(device="cpu")
    port = 7900 + os.getpid() % 90
    blocks = serve(workspace, "127.0.0.1", port, block=False, quiet=True)
    rows = []
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        first = questions[0]
        timed_ask(client, doc_ids[first["document"]], first["question"])  # the model loads once per app
        for question in questions:
            timing = timed_ask(client, doc_ids[question["document"]], question["question"])
            rows.append({**timing, "id": question["id"], "half": DOCUMENTS[question["document"]].half})
            print(f"{question['id']}: {timing}", flush=True)
    finally:
        stop_serving(blocks)
        workspace.close()
    lines = [
        f"# First evidence on screen ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs)",
        "",
        f"`PYTHONPATH=. python -m benchmarks.devset.evidence_latency --home H --every {args.every}`: every "
        f"{args.every}-th answerable development question through the running app's /ask.",
        "",
        "| half | questions | first evidence, median s | shown within 1 s | answer, median s |",
        "|---|---:|---:|---:|---:|",
    ]
    for half in ("tuning", "heldout", "all"):
        part = [r for r in rows if half in ("all", r["half"])]
        within = sum(r["first_evidence"] is not None and r["first_evidence"] < 1.0 for r in part)
        evidence, answer = _median(r["first_evidence"] for r in part), _median(r["answer"] for r in part)
        lines.append(f"| {half} | {len(part)} | {evidence} | {within}/{len(part)} | {answer} |")
    if args.stops:
        lines += ["", "| Stop set 0.2 s into | stops | seconds to the end, median | longest |", "|---|---:|---:|---:|"]
        for stage in STOP_STAGES:
            seconds = [
                s
                for q in questions[: args.stops]
                if (s := stop_latency(service, doc_ids[q["document"]], q["question"], stage)) is not None
            ]
            longest = round(max(seconds), 2) if seconds else None
            lines.append(f"| {stage} | {len(seconds)} | {_median(seconds)} | {longest} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "evidence-latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
