"""The CLI's question features: `ask DOC QUESTION --reread` puts the question-aware re-read's answer beside
the general one, and `ask-across DOC DOC ... --question Q` answers one question from several documents."""

from __future__ import annotations

import argparse
import json
import sys
import time

from infinipot.app.cli.options import add_decoding_options, decoding_config


def add_reread_option(ask: argparse.ArgumentParser) -> None:
    ask.add_argument(
        "--reread",
        action="store_true",
        help="also read the document again with the question in the catalyst prompt (CaP-Q, kept per question) "
        "and answer from that pot too",
    )


def add_ask_across_command(commands) -> None:
    summary = "answer one question from several documents' pots merged into one"
    across = commands.add_parser("ask-across", help=summary, description=summary)  # as main.add_command
    across.add_argument("docs", nargs="+", metavar="DOC", help="two or more doc_ids (or prefixes) or paths")
    across.add_argument("--question", required=True)
    add_decoding_options(across)
    across.add_argument("--json", action="store_true")


def _stream(pieces, quiet: bool) -> str:
    text = []
    for piece in pieces:
        text.append(piece)
        if not quiet:
            print(piece, end="", flush=True)
    return "".join(text).strip()


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"infinipot: warning: {warning}", file=sys.stderr)


def question_aware_answer(service, args: argparse.Namespace, on_progress=None) -> dict:
    """Answer args.question from the document's CaP-Q pot (reading it once per question); its JSON part."""
    if not args.json:
        print("\nquestion-aware re-read (CaP-Q):")
    started = time.perf_counter()
    pieces, stats, reused = service.reread_for_question(args.doc, args.question, decoding_config(args), on_progress)
    _warn(stats.warnings)
    answer = _stream(pieces, args.json)
    seconds = time.perf_counter() - started
    if not args.json:
        print()
    first = stats.first_token_seconds
    return {
        "answer": answer,
        "seconds": round(seconds, 3),
        "ttft_seconds": round(first if first is not None else seconds, 3),
        "reused_pot": reused,
    }


def run_ask_across(service, args: argparse.Namespace) -> int:
    started = time.perf_counter()
    pieces, stats = service.ask_across(args.docs, args.question, decoding_config(args))
    _warn(stats.warnings)
    answer = _stream(pieces, args.json)
    seconds = time.perf_counter() - started
    sources = ", ".join(f"{doc['name']} ({doc['doc_id']}): {doc['entries']:g}" for doc in stats.documents)
    if not args.json:
        print()
        print(f"(one pot of {stats.merged_entries} entries of {stats.pot_size}; entries per head from {sources})")
        if stats.citations:
            print("sources: " + ", ".join(f"{c['label']} ({100 * c['score']:.0f}%)" for c in stats.citations))
        return 0
    first = stats.first_token_seconds
    result = {
        "answer": answer,
        "seconds": round(seconds, 3),
        "ttft_seconds": round(first if first is not None else seconds, 3),
        "reused_pot": stats.reused_merge,
        "documents": stats.documents,
        "pot_entries": stats.merged_entries,
        "peak_entries": stats.merge_peak_entries,
        "cycles": stats.merge_compressions,
        "pot_size": stats.pot_size,
        "citations": stats.citations,
    }
    print(json.dumps(result))
    return 0
