"""The CLI's library features: `ask --all QUESTION` (or `--docs A B ... QUESTION`) asks every stored document (or
those named) at once (app/ask/library.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from textwrap import shorten

from infinipot.app.cli.options import answer_settings


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
    text = []
    for piece in pieces:
        text.append(piece)
        if not args.json:
            print(piece, end="", flush=True)
    seconds = time.perf_counter() - started
    for warning in stats.warnings:
        print(f"infinipot: warning: {warning}", file=sys.stderr)
    answer = "".join(text).strip()
    if args.json:
        first = stats.first_token_seconds
        print(
            json.dumps(
                {
                    "answer": answer,
                    "seconds": round(seconds, 3),
                    "ttft_seconds": round(first if first is not None else seconds, 3),
                    "answerable": stats.answerable,
                    "citations": stats.citations,
                    "documents_asked": stats.documents_asked,
                    "documents_pointed": stats.documents_pointed,
                    "candidates": stats.candidates,
                    "search_seconds": round(stats.search_seconds, 3),
                    "evidence_tokens": stats.evidence_tokens,
                    "answer_from": stats.answer_from,
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
