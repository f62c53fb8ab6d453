"""The `infinipot` command's parser and dispatch: read, ask, summarize, list, delete, models, bench, ui."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time

from infinipot.app.ask.events import Done, Piece
from infinipot.app.cli.answer_view import AnswerPrinter
from infinipot.app.cli.library import (
    add_library_options,
    add_worker_options,
    asks_library,
    reads_library,
    run_ask_library,
    run_read_library,
)
from infinipot.app.cli.options import (
    add_answer_options,
    add_decoding_options,
    add_pot_options,
    add_runtime_options,
    answer_settings,
    decoding_config,
    names_a_pot,
    pot_config,
)
from infinipot.app.cli.progress import ReadProgress
from infinipot.app.cli.questions import add_ask_across_command, add_reread_option, question_aware_answer, run_ask_across
from infinipot.app.errors import system_error_line
from infinipot.app.read import DEFAULT_CHECKPOINT_SECONDS
from infinipot.core.errors import InfiniPotError

# What `ask --json` reports from the answer's stats under their own names, after its timings (DESIGN.md's contract).
_ASK_JSON_STATS = (
    "conversation_id", "answerable", "answer_state", "citations", "answer_entries", "answer_from", "evidence_tokens",
    "stopped_by", "decided_by",
)  # fmt: skip


def add_command(commands, name: str, summary: str) -> argparse.ArgumentParser:
    """A command whose summary is both its line in the parent's --help and the description in its own --help."""
    return commands.add_parser(name, help=summary, description=summary)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="infinipot", description="Chat with documents longer than the model's memory, fully offline."
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="where the model runs")
    commands = parser.add_subparsers(dest="command", required=True)

    read = add_command(commands, "read", "read a document into a memory pot and store it")
    read.add_argument(
        "path",
        nargs="+",
        help="the document (PDF, DOCX, EPUB, HTML, text, log, .gz), or several, folders (read whole) and globs",
    )
    add_pot_options(read)
    add_runtime_options(read)
    read.add_argument(
        "--checkpoint-seconds",
        type=float,
        default=DEFAULT_CHECKPOINT_SECONDS,
        help="seconds of reading between checkpoints a crashed read resumes from "
        f"(default {DEFAULT_CHECKPOINT_SECONDS:g})",
    )
    read.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    read.add_argument("--follow", action="store_true", help="keep reading a growing log (Ctrl-C stops)")
    read.add_argument("--poll-seconds", type=float, default=2.0, help="--follow: seconds between looks (default 2)")
    read.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)  # tests: stop after N looks
    add_worker_options(read)

    ask = add_command(commands, "ask", "answer a question from a document's stored pot")
    ask.add_argument("doc", nargs="?", help="a doc_id (or its prefix) or a path (read first if needed)")
    ask.add_argument("question", nargs="?")
    add_library_options(ask)
    add_answer_options(ask)
    add_pot_options(ask, defaults_apply=False)
    add_runtime_options(ask)
    ask.add_argument(
        "--conversation",
        type=int,
        metavar="ID",
        help="continue this conversation (its conversation_id in --json): a follow-up sees the earlier turn",
    )
    ask.add_argument("--json", action="store_true")
    add_reread_option(ask)
    add_ask_across_command(commands)

    summarize = add_command(
        commands, "summarize", "summarize a whole document: its outline, each part with what it says (kept once made)"
    )
    summarize.add_argument("doc")
    summarize.add_argument("--new", action="store_true", help="make a new summary instead of the stored one")
    add_decoding_options(summarize, questions=False)
    add_runtime_options(summarize)
    summarize.add_argument("--json", action="store_true")

    listing = add_command(commands, "list", "list stored documents with their pots and disk use")
    listing.add_argument("--json", action="store_true")

    delete = add_command(commands, "delete", "delete a document's pots, checkpoints and conversations")
    delete.add_argument("doc", help="a doc_id (or its prefix) or the document's path")
    delete.add_argument("--json", action="store_true")

    models = add_command(commands, "models", "list the models converted from GGUF files, with their disk use")
    models.add_argument("--delete", metavar="NAME", help="remove a converted model (converted again when next used)")
    models.add_argument("--json", action="store_true")

    from infinipot.app.bench import niah as bench_niah
    from infinipot.app.bench import speed as bench_speed

    bench = add_command(commands, "bench", "benchmarks: needle-in-a-haystack accuracy, reading speed and memory")
    benches = bench.add_subparsers(dest="bench", required=True)
    niah = add_command(benches, "niah", "passkey retrieval over lengths, depths and methods (resumable)")
    bench_niah.add_arguments(niah)
    add_runtime_options(niah)
    speed = add_command(benches, "speed", "reading tokens/s and peak memory vs length per method (resumable)")
    bench_speed.add_arguments(speed)
    add_runtime_options(speed)

    ui = add_command(commands, "ui", "the web app: library, reading progress, chat, what the model kept")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback only)")
    ui.add_argument("--port", type=int, default=7860)
    ui.add_argument("--auth", default=None, metavar="USER:PASSWORD", help="required for a --host other than loopback")
    ui.add_argument("--max-upload-mb", type=int, default=1024, help="largest file accepted by upload (default 1024)")
    ui.add_argument(
        "--loaded-pots",
        type=int,
        default=2,
        metavar="N",
        help="stored pots kept in memory between answers (default 2, ~190 MB each for the default model in float32)",
    )
    ui.add_argument(
        "--follow-dir",
        action="append",
        metavar="FOLDER",
        help="a folder whose files 'Follow a growing log' may read (repeatable); without it any file on loopback, "
        "none when other machines can reach the app",
    )
    add_runtime_options(ui)
    return parser


def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


# The read progress being shown, if any: an error closes it first, so the message starts on a line of its own.
_shown_progress: list[ReadProgress] = []


def _progress_printer(enabled: bool) -> ReadProgress | None:
    if not enabled:
        return None
    progress = ReadProgress()
    _shown_progress.append(progress)
    return progress


def _close_progress() -> None:
    while _shown_progress:
        _shown_progress.pop().close()


def read_line(report, pot_size: int) -> str:
    """What a read did, in words: 'notes.txt: read 12,620 tokens through a 4,096-entry memory pot in 5
    compressions; ...'."""
    if report.reused:
        what = f"the stored pot is reused ({report.tokens:,} tokens read before, {report.cycles} compressions)"
    elif report.cycles == 0:
        what = f"read {report.tokens:,} tokens; they fit the {pot_size:,}-entry memory pot whole (no compression)"
    else:
        compressions = "compression" if report.cycles == 1 else "compressions"
        what = (
            f"read {report.tokens:,} tokens through a {pot_size:,}-entry memory pot in {report.cycles} {compressions}; "
            f"it keeps {report.pot_entries:,} entries (peak {report.peak_entries:,})"
        )
    how = "" if report.reused else f" in {report.seconds:.1f} s"
    if report.resumed_from:
        how += f", resumed after {report.resumed_from:,} tokens"
    return f"{report.name}: {what}{how}. doc_id {report.doc_id}"


def _error(line: str) -> int:
    _close_progress()
    print(f"infinipot: error: {line}", file=sys.stderr)
    return 2


def _part_printer(enabled: bool):
    def show(part: int, parts: int) -> None:
        what = f"summarizing part {part} of {parts}" if part <= parts else f"combining the {parts} parts"
        print(f"infinipot: {what}", file=sys.stderr, flush=True)

    return show if enabled else None


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"infinipot: warning: {warning}", file=sys.stderr)


def _size(nbytes: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{nbytes:,.0f} {unit}" if unit == "B" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1024
    raise AssertionError("unreachable")


def _print_listing(documents: list[dict]) -> None:
    if not documents:
        print("no documents stored yet (see `infinipot read`)")
        return
    for doc in documents:
        tokens = f"{doc['tokens']:,} tokens" if doc["tokens"] is not None else "not read yet"
        print(
            f"{doc['doc_id']}  {doc['name']}  {doc['kind']}, {_size(doc['size_bytes'])}, {tokens}; "
            f"disk {_size(doc['disk_bytes'])}"
        )
        for pot in doc["pots"]:
            state = pot["status"] + (f" ({pot['error']})" if pot["error"] else "")
            if pot["status"] == "reading" and not pot["reader_running"]:
                state += ", stopped: `infinipot read` resumes it"
            print(
                f"    pot {pot['pot_id']}: {state}, {pot['method']} |M|={pot['pot_size']} |C|={pot['keep_size']}, "
                f"model {pot['model_identity']}, {pot['tokens_read']:,} tokens, {pot['cycles']} compressions, "
                f"{pot['read_seconds']:.1f} s reading, disk {_size(pot['disk_bytes'])}"
            )
    total = sum(doc["disk_bytes"] for doc in documents)
    print(f"{len(documents)} documents, {_size(total)} on disk")


def _models(args: argparse.Namespace) -> int:
    from infinipot.app.library.converted_models import converted_models, delete_converted_model, describe
    from infinipot.storage.paths import data_home

    if args.delete is not None:
        model = delete_converted_model(data_home(), args.delete)
        print(json.dumps(model.as_json()) if args.json else f"deleted {model.name}: {_size(model.disk_bytes)} freed")
        return 0
    models = converted_models(data_home())
    if args.json:
        print(json.dumps({"models": [model.as_json() for model in models]}))
        return 0
    if not models:
        print("no converted models yet (a GGUF file given to --model is converted on first use)")
    for model in models:
        source = f"  from {model.source}" if model.source else ""
        print(f"{model.name}  {_size(model.disk_bytes)}{source}\n  {describe(model)}")
    return 0


def _serve_ui(args: argparse.Namespace) -> int:
    from infinipot.app.web.follow_dirs import FollowDirs
    from infinipot.app.web.page.launch import check_exposure, is_loopback, parse_auth

    auth = parse_auth(args.auth)
    check_exposure(args.host, auth)  # before anything is loaded
    if args.max_upload_mb < 1:
        raise ValueError(f"--max-upload-mb must be at least 1, got {args.max_upload_mb}")
    if args.loaded_pots < 1:
        raise ValueError(f"--loaded-pots must be at least 1, got {args.loaded_pots}")
    from infinipot.storage.paths import data_home
    from infinipot.storage.store import folder_is_writable

    # Uploads arrive in Gradio's temporary folder first: keep that inside the data directory too (a read-only
    # one takes no uploads; Gradio then keeps its own files in the system's temporary folder).
    if folder_is_writable(data_home()):
        os.environ.setdefault("GRADIO_TEMP_DIR", str(data_home() / "gradio-tmp"))
    from infinipot.app.web.page import serve
    from infinipot.app.web.workspace import open_workspace

    follow_dirs = FollowDirs.for_server(args.follow_dir, is_loopback(args.host))
    workspace = open_workspace(
        device=args.device,
        max_upload_bytes=args.max_upload_mb * 2**20,
        follow_dirs=follow_dirs,
        dtype=args.dtype,
        loaded_pots=args.loaded_pots,
    )
    workspace.warm_up_in_background()
    print(f"infinipot: the app runs on http://{args.host}:{args.port} (Ctrl-C stops it)", file=sys.stderr)
    try:
        serve(workspace, args.host, args.port, auth, args.max_upload_mb)
    finally:
        workspace.close()
    return 0


def _use_threads(args: argparse.Namespace) -> None:
    """Commands that run the model use one thread per physical core unless --threads says otherwise."""
    if hasattr(args, "threads"):
        from infinipot.core.precision import set_threads

        set_threads(args.threads)


def _bench(args: argparse.Namespace) -> int:
    from infinipot.app.bench import niah, speed

    return (niah if args.bench == "niah" else speed).main(args)


def _document_service(args: argparse.Namespace):
    """The service behind the document commands; --checkpoint-seconds is `read`'s alone and not every command has
    --dtype, so each falls back to its default."""
    from infinipot.app.service import DocumentService

    checkpoint_seconds = getattr(args, "checkpoint_seconds", DEFAULT_CHECKPOINT_SECONDS)
    return DocumentService(
        device=args.device, checkpoint_seconds=checkpoint_seconds, dtype=getattr(args, "dtype", "auto")
    )


def _read(args: argparse.Namespace) -> int:
    service = _document_service(args)
    if reads_library(args):
        return run_read_library(service, args, pot_config(args), read_line)
    args.path = args.path[0]
    if args.follow:
        from infinipot.app.cli.follow import run_follow

        return run_follow(service, args, pot_config(args), _warn)
    config = pot_config(args)
    report = service.read(args.path, config, args.model, on_progress=_progress_printer(not args.json))
    _close_progress()
    _warn(report.warnings)
    if args.json:
        print(json.dumps(report.as_json()))
    else:
        print(read_line(report, config.pot_size))
    return 0


def _list(args: argparse.Namespace) -> int:
    documents = _document_service(args).documents()
    if args.json:
        print(json.dumps({"documents": documents, "disk_bytes": sum(d["disk_bytes"] for d in documents)}))
    else:
        _print_listing(documents)
    return 0


def _delete(args: argparse.Namespace) -> int:
    result = _document_service(args).delete(args.doc)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"deleted {result['name']} ({result['deleted']}): {result['pots']} pots, "
            f"{_size(result['freed_bytes'])} freed"
        )
    return 0


def _ask_across(args: argparse.Namespace) -> int:
    return run_ask_across(_document_service(args), args)


def _ask_json(answer: str, seconds: float, stats, reused_pot: bool) -> dict:
    """`ask --json`'s object; the time to the first token is the whole answer's when no token came."""
    first = stats.first_token_seconds
    return {
        "answer": answer.strip(),
        "seconds": round(seconds, 3),
        "ttft_seconds": round(first if first is not None else seconds, 3),
        "first_evidence_seconds": _rounded(stats.first_evidence_seconds),
        "reused_pot": reused_pot,
        **{name: getattr(stats, name) for name in _ASK_JSON_STATS},
    }


def _ask(args: argparse.Namespace) -> int:
    service = _document_service(args)
    if asks_library(args):
        return run_ask_library(service, args)
    if args.doc is None or args.question is None:
        raise ValueError("ask needs a document and a question: ask DOC QUESTION (or ask --all QUESTION)")
    started = time.perf_counter()
    pot = pot_config(args) if names_a_pot(args) else None
    answering = service.asking(
        args.doc,
        args.question,
        answer_settings(args),
        conversation_id=args.conversation,
        pot_config=pot,
        model_name=args.model,
        dtype=args.dtype,
    )
    shown = AnswerPrinter(answering.stats, quiet=args.json)
    for event in answering.events:
        shown.show(event)
    seconds = time.perf_counter() - started
    reread = getattr(args, "reread", False)
    if args.json:
        result = _ask_json(shown.answer(), seconds, answering.stats, answering.reused)
        if reread:
            result["question_aware"] = question_aware_answer(service, args)
        print(json.dumps(result))
        return 0
    if reread:
        question_aware_answer(service, args, _progress_printer(True))
    return 0


def _summarize(args: argparse.Namespace) -> int:
    service = _document_service(args)
    started = time.perf_counter()
    pieces, stats = service.summarize(
        args.doc, decoding_config(args), new=args.new, on_part=_part_printer(not args.json)
    )
    shown = AnswerPrinter(stats, quiet=args.json)  # a summary's pieces, printed as an answer's are
    for piece in pieces:
        shown.show(Piece(piece))
    seconds = time.perf_counter() - started
    shown.show(Done(stats))
    if args.json:
        result = {
            "summary": shown.answer().strip(),
            "seconds": round(seconds, 3),
            "reused": stats.reused_summary,
            "parts": stats.summary_parts,
        }
        print(json.dumps(result))
    return 0


# What each command runs, given its parsed arguments; it returns the process's exit code.
_COMMANDS = {
    "read": _read,
    "ask": _ask,
    "ask-across": _ask_across,
    "summarize": _summarize,
    "list": _list,
    "delete": _delete,
    "models": _models,
    "bench": _bench,
    "ui": _serve_ui,
}


def _run(args: argparse.Namespace) -> int:
    _use_threads(args)
    return _COMMANDS[args.command](args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
    from infinipot.app.service import DocumentNotFound
    from infinipot.ingest import IngestError
    from infinipot.storage.errors import StorageError
    from infinipot.storage.paths import data_home

    try:
        return _run(args)
    except (InfiniPotError, IngestError, DocumentNotFound, StorageError, ValueError) as exc:
        return _error(str(exc))
    except (OSError, sqlite3.OperationalError) as exc:
        line = system_error_line(exc, data_home())
        if line is None:
            raise
        return _error(line)
    except KeyboardInterrupt:
        print("infinipot: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
