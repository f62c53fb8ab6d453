"""The CLI's library features: `ask --all QUESTION` (or `--docs A B ... QUESTION`) asks every stored document (or
those named) at once (app/ask/library.py)."""

from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path
from textwrap import shorten

from infinipot.app.cli.options import answer_settings
from infinipot.app.cli.questions import _stream as stream_answer
from infinipot.app.cli.questions import _warn as warn


def add_library_options(ask: argparse.ArgumentParser) -> None:
    which = ask.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="ask every stored document: `ask --all QUESTION`")
    which.add_argument(
        "--docs",
        nargs="+",
        metavar="DOC",
        help="ask these stored documents (doc_ids, prefixes, names or paths): `ask --docs A B -- QUESTION`",
    )


def asks_library(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "all", False) or getattr(args, "docs", None))


def library_question(args: argparse.Namespace) -> str:
    """The question of `ask --all Q` / `ask --docs A B -- Q` (or `ask Q --docs A B`), where argparse put it.

    The first positional (`doc`) holds it then; a second one is a mistake, said in one line."""
    given = [value for value in (args.doc, args.question) if value is not None]
    if args.docs and not given and len(args.docs) > 1:
        given = [args.docs.pop()]  # `--docs A B Q`: the list took the question too
    if len(given) != 1:
        raise ValueError("with --all or --docs give the question alone: ask --all QUESTION, ask --docs A B -- QUESTION")
    return given[0]


def run_ask_library(service, args: argparse.Namespace) -> int:
    question = library_question(args)
    started = time.perf_counter()
    pieces, stats = service.ask_library(question, None if args.all else args.docs, answer_settings(args))
    answer = stream_answer(pieces, args.json)
    seconds = time.perf_counter() - started
    warn(stats.warnings)
    if args.json:
        first = stats.first_token_seconds
        print(
            json.dumps(
                {
                    "answer": answer,
                    "seconds": round(seconds, 3),
                    "ttft_seconds": round(first if first is not None else seconds, 3),
                    "answerable": stats.answerable,
                    "answer_state": stats.answer_state,
                    "citations": stats.citations,
                    "documents_asked": stats.documents_asked,
                    "documents_pointed": stats.documents_pointed,
                    "candidates": stats.candidates,
                    "search_seconds": round(stats.search_seconds, 3),
                    "evidence_tokens": stats.evidence_tokens,
                    "answer_from": stats.answer_from,
                    "answers": stats.answers,
                }
            )
        )
        return 0
    print()
    if stats.citations:
        print("sources:" if stats.answerable else "closest passages:")
        for citation in stats.citations:
            quote = " ".join((citation.get("quote") or citation.get("snippet") or "").split())
            print(f"  {citation['document']}, {citation['label']}: {shorten(quote, 110)}")
    print(f"(asked {stats.documents_asked} documents)")
    return 0


def add_worker_options(read: argparse.ArgumentParser) -> None:
    read.add_argument(
        "--workers", type=int, metavar="N", help="read on N Ray workers started on this machine (needs infinipot[ray])"
    )
    read.add_argument(
        "--cluster", metavar="ADDRESS", help="read on the workers of a running Ray cluster (ray start --head ...)"
    )
    read.add_argument(
        "--worker-threads", type=int, default=1, metavar="T", help="CPU threads of each Ray worker (default 1)"
    )


def reads_library(args: argparse.Namespace) -> bool:
    """Several paths, a folder, a glob, or workers: a library read. One path that is none of these reads as one
    document, as before (a missing file, a pipe: its own one-line error)."""
    if args.workers is not None or args.cluster is not None or len(args.path) > 1:
        return True
    path = args.path[0]
    return Path(path).expanduser().is_dir() or (glob.has_magic(path) and not Path(path).exists())


def run_read_library(service, args: argparse.Namespace, config, read_line) -> int:
    """Read every file the paths name; one line (or JSON object) per document as it completes, then the totals.
    Progress over the library goes to stderr every few seconds (or on a terminal, on one line)."""
    if args.follow:
        raise ValueError("--follow reads one growing log: give it a single file")
    workers = None
    if args.workers is not None or args.cluster is not None:
        from infinipot.app.read.workers import WorkerSettings, require_ray

        require_ray()
        workers = WorkerSettings(args.workers, args.cluster, args.worker_threads)
    shown = LibraryProgressLine()
    started = time.perf_counter()
    progress, missing, done = service.read_library(
        args.path, config, args.model, workers, on_progress=shown, dtype=args.dtype
    )
    if not progress.total:
        raise ValueError("no file to read: " + "; ".join(f"{given}: {why}" for given, why in missing))
    for given, why in missing:
        print(f"infinipot: warning: {given}: {why}", file=sys.stderr)
    try:
        for item in done:
            shown.clear()
            if item.report is not None:
                for warning in item.report.warnings:
                    print(f"infinipot: warning: {warning}", file=sys.stderr)
            if args.json:
                print(json.dumps(item.as_json()), flush=True)
            elif item.report is None:
                print(f"{item.path}: not read: {item.error}", flush=True)
            else:
                print(read_line(item.report, config.pot_size), flush=True)
    except KeyboardInterrupt:
        shown.clear()
        print(f"infinipot: stopped after {progress.line()}; run the same read again to go on", file=sys.stderr)
        return 130
    shown.clear()
    summary = progress.summary(time.perf_counter() - started)
    if args.json:
        print(json.dumps(summary))
    else:
        print(
            f"{summary['documents']} documents: {summary['read']} read, {summary['reused']} reused, "
            f"{summary['failed']} not read; {summary['tokens']:,} tokens in {summary['seconds']:.1f} s"
        )
    return 1 if summary["failed"] and not summary["read"] and not summary["reused"] else 0


class LibraryProgressLine:
    """The library's progress on stderr: rewritten in place on a terminal, a whole line every few seconds
    otherwise (a log file gets whole lines)."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.last = time.monotonic()
        self.on_terminal = sys.stderr.isatty()
        self.width = 0

    def __call__(self, progress) -> None:
        now = time.monotonic()
        if self.on_terminal:
            line = shorten(progress.line(), 160, placeholder="…")
            print("\r" + line.ljust(self.width), end="", file=sys.stderr, flush=True)
            self.width = len(line)
        elif now - self.last >= self.every:
            self.last = now
            print(f"infinipot: {progress.line()}", file=sys.stderr, flush=True)

    def clear(self) -> None:
        if self.on_terminal and self.width:
            print("\r" + " " * self.width + "\r", end="", file=sys.stderr, flush=True)
            self.width = 0
