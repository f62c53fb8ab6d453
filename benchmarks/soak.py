"""A soak of the web app as a team would load it: concurrent sessions asking about several documents.

    python -m benchmarks.soak --home DIR [--documents FILE ...] [--clients 5] [--questions 20] [--rounds 2]
        [--minutes 60] [--delete-after N] [--out benchmarks/results/soak]

Reads each document into --home with the CLI first (a stored pot is reused), starts the app (`infinipot ui`) on
a free loopback port in its own process, and runs `--rounds` soaks in that one process. In a soak, `--clients`
gradio_client sessions each ask `--questions` questions with the app's default settings, one after another,
alternating between the documents (each question then starts a new conversation of its session). The app's
resident memory is sampled every few seconds. Nothing is submitted after `--minutes` (the bound on a run).

Reported (report.json and report.md in --out): answered and failed questions, empty answers, latency percentiles
from submit to done, of which waiting in the queue (submit until the app starts the answer) and the answer itself;
the app's RSS settled (idle for 5 s) after the first 10 answers and after each round, with the growth between,
and sampled while answers run (per minute, peak); the checks: the same
question about the same document gets the same answer, each answer's chat and stored conversation hold only that
session's question, no conversation id given twice, `PRAGMA integrity_check`, errors in the app's log.

`--delete-after N`: once N answers are done in the first round, the first document is deleted while questions
are queued: through the CLI (in another process) while an answer is written, then through the app's Delete,
retried until it lands. What the CLI, the app and the sessions said is reported verbatim, and no answer about
the deleted document may end after the delete landed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

QUESTIONS = {
    "GPL-3": [
        "What may a licensee do with the source code?",
        "What does the license say about warranty?",
        "Who is the copyright holder of the license text?",
        "What is the Corresponding Source?",
        "When does the license terminate?",
        "What must I do when I convey object code?",
        "What is an Installation Information?",
        "Can I add further restrictions?",
        "What happens if a patent is licensed?",
        "How do I apply these terms to a new program?",
    ],
    "libtasn1.pdf": [
        "What is ASN.1?",
        "How do I parse a DER file?",
        "Under which license is this manual distributed?",
        "Which function decodes a DER structure?",
        "What does asn1_create_element do?",
        "What is the asn1Parser program for?",
        "How do I read the value of an element?",
        "What error codes can a function return?",
        "How are ASN.1 definitions loaded?",
        "What is libtasn1?",
    ],
}
GENERIC_QUESTIONS = ["What is this document about?", "What are its main points?", "Who wrote it?"]
DEFAULT_DOCUMENTS = ["/usr/share/common-licenses/GPL-3", "/usr/share/doc/libtasn1-doc/libtasn1.pdf"]
FIRST_ANSWERS = 10  # the RSS baseline: memory once the first answers have warmed every cache
SOURCES_MARK = "\n\n*Sources: "


@dataclass
class Asked:
    """One question of one session, timed."""

    round: int
    client: int
    index: int
    document: str
    question: str
    submitted: float
    started: float | None = None  # the app began the answer (left the queue)
    done: float | None = None
    answer: str = ""
    error: str | None = None
    conversation_id: int | None = None
    chat_questions: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "infinipot.app.cli", *args], env=env, capture_output=True, text=True, check=False
    )


def read_documents(home: Path, paths: list[Path]) -> dict[str, str]:
    """doc_id by document name, each read into `home` (reused when stored)."""
    ids = {}
    for path in paths:
        done = cli(home, "read", str(path), "--json")
        if done.returncode != 0:
            raise SystemExit(f"reading {path} failed: {done.stderr.strip()}")
        ids[path.name] = json.loads(done.stdout.strip().splitlines()[-1])["doc_id"]
    return ids


def start_app(home: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    command = [sys.executable, "-m", "infinipot.app.cli", "ui", "--port", str(port)]
    app = subprocess.Popen(command, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if app.poll() is not None:
            raise SystemExit(f"the app stopped at start; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return app, url
        except OSError:
            time.sleep(1)
    app.kill()
    raise SystemExit("the app did not start within 5 minutes")


class MemorySampler(threading.Thread):
    """The app's RSS (MiB) every `every` seconds, with the number of answers done at that moment."""

    def __init__(self, pid: int, answers_done, every: float = 5.0) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.process = psutil.Process(pid)
        self.answers_done = answers_done
        self.every = every
        self.samples: list[dict] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.stopped.is_set():
            try:
                rss = self.process.memory_info().rss / 2**20
            except psutil.Error:
                return
            self.samples.append({"t": time.monotonic() - started, "rss_mib": rss, "answers": self.answers_done()})
            self.stopped.wait(self.every)


def answer_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "").partition(SOURCES_MARK)[0].strip()


def conversation_of(update) -> int | None:
    value = update.get("value") if isinstance(update, dict) else update
    return int(value) if value not in (None, "") else None


def ask(client, asked: Asked, doc_id: str) -> None:
    from gradio_client.utils import Status

    job = client.submit(doc_id, asked.question, api_name="/ask")
    while not job.done():
        if asked.started is None and job.status().code in (Status.PROCESSING, Status.ITERATING):
            asked.started = time.time()
        time.sleep(0.05)
    asked.done = time.time()
    try:
        history, _, conversations = job.result()
    except Exception as exc:  # the app's one-line error, as the session got it
        asked.error = str(exc).strip() or type(exc).__name__
        return
    asked.answer = answer_text(history[-1]) if history else ""
    asked.chat_questions = [answer_text(m) for m in history if m.get("role") == "user"]
    asked.conversation_id = conversation_of(conversations)


def run_round(
    url: str, number: int, ids: dict[str, str], args, done: list, stop_at: float, questions: range
) -> list[Asked]:
    """Each session asks its questions numbered `questions` (of the round's --questions) one after another."""
    from gradio_client import Client

    names = list(ids)
    asked_all: list[Asked] = []
    lock = threading.Lock()

    def session(k: int) -> None:
        client = Client(url, verbose=False)
        for j in questions:
            if time.time() > stop_at:
                return
            name = names[(k + j) % len(names)]
            offered = QUESTIONS.get(name, GENERIC_QUESTIONS)
            asked = Asked(number, k, j, name, offered[(k + j) % len(offered)], time.time())
            with lock:
                asked_all.append(asked)
            ask(client, asked, ids[name])
            with lock:
                done.append(asked)

    sessions = [threading.Thread(target=session, args=(k,), name=f"session-{k}") for k in range(args.clients)]
    for s in sessions:
        s.start()
        time.sleep(0.2)  # sessions arrive one after another, as people do
    for s in sessions:
        s.join()
    return asked_all


def delete_during_burst(url: str, home: Path, ids: dict[str, str], done: list, after: int) -> dict:
    """Once `after` answers are done, delete the first document while questions about it are queued."""
    from gradio_client import Client

    name, doc_id = next(iter(ids.items()))
    while len(done) < after:
        time.sleep(0.2)
    said = {"document": name, "cli": [], "app": []}
    result = cli(home, "delete", doc_id)
    said["cli"].append({"code": result.returncode, "said": (result.stdout + result.stderr).strip()})
    admin = Client(url, verbose=False)
    while True:
        try:
            notice = admin.predict(doc_id, api_name="/delete")[0]
        except Exception as exc:
            notice = f"error: {exc}"
        said["app"].append(notice)
        if notice.startswith("deleted "):
            said["landed"] = time.time()
            return said
        time.sleep(2)


def percentiles(values: list[float]) -> dict:
    if not values:
        return {}
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": ordered[-1], "mean": statistics.fmean(values)}


def stored_questions(database: Path, conversation_id: int) -> list[str]:
    with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT content FROM messages WHERE conversation_id = ? AND role = 'user' ORDER BY id", [conversation_id]
        ).fetchall()
    return [row[0] for row in rows]


def checks(asked: list[Asked], database: Path, log: Path, deleted: dict | None) -> dict:
    answered = [a for a in asked if a.error is None and a.done is not None]
    by_question: dict[tuple[str, str], set[str]] = {}
    for a in answered:
        by_question.setdefault((a.document, a.question), set()).add(a.answer)
    conversations: dict[int, list[Asked]] = {}
    for a in sorted(answered, key=lambda a: a.done):
        if a.conversation_id is not None:
            conversations.setdefault(a.conversation_id, []).append(a)
    shared = [cid for cid, group in conversations.items() if len({(g.round, g.client) for g in group}) > 1]
    foreign_chats = [  # each chat shows the questions its session put into that conversation, no other
        {"client": a.client, "asked": a.question, "chat": a.chat_questions}
        for group in conversations.values()
        for k, a in enumerate(group)
        if a.chat_questions != [g.question for g in group[: k + 1]]
    ]
    gone = deleted["document"] if deleted is not None else None  # its conversations went with it
    foreign_stored = [
        {"conversation_id": cid, "asked": [g.question for g in group], "stored": stored}
        for cid, group in conversations.items()
        if group[0].document != gone and (stored := stored_questions(database, cid)) != [g.question for g in group]
    ]
    with sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True) as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    text = log.read_text(errors="replace")
    result = {
        "asked": len(asked),
        "answered": len(answered),
        "failed": [{"document": a.document, "question": a.question, "error": a.error} for a in asked if a.error],
        "empty_answers": sum(not a.answer for a in answered),
        "unsaved_answers": sum(a.conversation_id is None for a in answered),
        "questions_with_differing_answers": sorted(f"{d}: {q}" for (d, q), got in by_question.items() if len(got) > 1),
        "conversations_shared_by_sessions": len(shared),
        "chats_showing_another_question": foreign_chats,
        "stored_conversations_holding_another_question": foreign_stored,
        "integrity_check": integrity,
        "log_errors": sum(text.count(word) for word in ("Traceback", "ERROR")),
    }
    if deleted is not None:
        landed = deleted.get("landed", float("inf"))
        after = [a for a in answered if a.document == deleted["document"] and a.done > landed and a.started]
        result["answers_about_the_deleted_document_ending_after_the_delete"] = len(after)
        result["said_to_sessions_after_the_delete"] = sorted(
            {a.error for a in asked if a.document == deleted["document"] and a.error}
        )
    return result


def settled_rss(pid: int, wait: float = 5.0) -> float:
    """The app's RSS (MiB) once it has been idle for `wait` seconds (every session is waiting for the next part)."""
    time.sleep(wait)
    return psutil.Process(pid).memory_info().rss / 2**20


def memory_summary(samples: list[dict], rounds: list[list[Asked]], settled: list[dict]) -> dict:
    """Settled RSS (no answer running) after the first answers and after each round: the growth; and the samples
    taken while answers ran (an answer's own tensors included), per minute and their peak."""
    if not samples:
        return {}
    per_minute = [s["rss_mib"] for s in samples if int(s["t"]) % 60 < 5 or s is samples[-1]]
    summary = {
        "before_mib": samples[0]["rss_mib"],
        "settled_mib": settled,
        "peak_while_answering_mib": max(s["rss_mib"] for s in samples),
        "per_minute_mib": [round(v) for v in per_minute],
    }
    if len(settled) >= 2:
        first, end = settled[0]["rss_mib"], settled[1]["rss_mib"]
        summary["growth_first_answers_to_end_of_round_1_percent"] = 100 * (end - first) / first
    if len(settled) >= 3:
        summary["growth_end_of_round_1_to_end_percent"] = 100 * (settled[-1]["rss_mib"] - end) / end
    return summary


def markdown(report: dict) -> str:
    lines = [f"# Soak: {report['clients']} clients x {report['questions']} questions, {report['rounds']} rounds", ""]
    for number, result in enumerate(report["results"], 1):
        lat = result["latency_seconds"]
        lines += [
            f"## Round {number}",
            f"- answered {result['checks']['answered']}/{result['checks']['asked']}, failed "
            f"{len(result['checks']['failed'])}, empty {result['checks']['empty_answers']}",
            f"- submit to done p50 {lat['total'].get('p50', 0):.1f} s, p90 {lat['total'].get('p90', 0):.1f} s; "
            f"queue p50 {lat['queue'].get('p50', 0):.1f} s; answer p50 {lat['answer'].get('p50', 0):.1f} s",
            f"- checks: {json.dumps({k: v for k, v in result['checks'].items() if k not in ('asked', 'answered')})}",
            "",
        ]
    lines += ["## Memory (app RSS)", "", f"```\n{json.dumps(report['memory'], indent=1)}\n```", ""]
    if report.get("delete"):
        lines += ["## Delete during the burst", "", f"```\n{json.dumps(report['delete'], indent=1)}\n```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="the data folder the app serves")
    parser.add_argument("--documents", nargs="+", type=Path, default=[Path(p) for p in DEFAULT_DOCUMENTS])
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--questions", type=int, default=20, help="questions per client and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--minutes", type=float, default=60, help="nothing is submitted after this")
    parser.add_argument("--delete-after", type=int, default=None, metavar="N")
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/soak"))
    args = parser.parse_args(argv)
    if args.clients < 1 or args.questions < 1 or args.rounds < 1:
        parser.error("--clients, --questions and --rounds must be at least 1")

    args.out.mkdir(parents=True, exist_ok=True)
    ids = read_documents(args.home, args.documents)
    log = args.out / "app.log"
    app, url = start_app(args.home, log)
    done: list[Asked] = []
    sampler = MemorySampler(app.pid, lambda: len(done), args.sample_seconds)
    sampler.start()
    stop_at = time.time() + args.minutes * 60
    rounds, results, deleted = [], [], None
    outcome: dict = {}  # what the delete during the first round saw
    settled: list[dict] = []  # RSS with no answer running, between parts of the soak
    try:
        for number in range(1, args.rounds + 1):
            deleter = None
            if number == 1 and args.delete_after is not None:
                deleter = threading.Thread(
                    target=lambda: outcome.update(delete_during_burst(url, args.home, ids, done, args.delete_after))
                )
                deleter.start()
            if number == 1:  # the first answers warm every cache; memory is measured from there
                warm = min(args.questions, -(-FIRST_ANSWERS // args.clients))
                asked = run_round(url, number, ids, args, done, stop_at, range(warm))
                settled.append({"after": "first answers", "answers": len(done), "rss_mib": settled_rss(app.pid)})
                asked += run_round(url, number, ids, args, done, stop_at, range(warm, args.questions))
            else:
                asked = run_round(url, number, ids, args, done, stop_at, range(args.questions))
            settled.append({"after": f"round {number}", "answers": len(done), "rss_mib": settled_rss(app.pid)})
            if deleter is not None:
                deleter.join(timeout=60)
                deleted = outcome or None
            rounds.append(asked)
            answered = [a for a in asked if a.done and a.started]
            results.append(
                {
                    "latency_seconds": {
                        "total": percentiles([a.done - a.submitted for a in answered]),
                        "queue": percentiles([a.started - a.submitted for a in answered]),
                        "answer": percentiles([a.done - a.started for a in answered]),
                    },
                    "checks": checks(asked, args.home / "infinipot.db", log, deleted if number == 1 else None),
                }
            )
            print(json.dumps({"round": number, **results[-1]["checks"]}, default=str), flush=True)
            if number == 1 and deleted is not None:
                break  # a document is gone: later rounds would not be the same soak
    finally:
        sampler.stopped.set()
        app.terminate()
        app.wait(timeout=60)
    report = {
        "clients": args.clients,
        "questions": args.questions,
        "rounds": len(rounds),
        "documents": list(ids),
        "results": results,
        "memory": memory_summary(sampler.samples, rounds, settled),
        "rss_samples": sampler.samples,
        "delete": deleted,
        "asked": [asdict(a) for r in rounds for a in r],
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "report.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
