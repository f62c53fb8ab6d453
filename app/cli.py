"""The `infinipot` command: read, ask, summarize, list, delete, bench, and the web app (`ui`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from infinipot.app.cli_questions import add_ask_across_command, add_reread_option, question_aware_answer, run_ask_across
from infinipot.core.config import CAP_MODES, NUC_UNITS, PotConfig
from infinipot.core.errors import InfiniPotError
from infinipot.core.scorers import METHODS


def _pot_config(args: argparse.Namespace) -> PotConfig:
    return PotConfig(
        pot_size=args.pot_size,
        keep_size=args.keep if args.keep is not None else args.pot_size // 2,
        nuc_ratio=args.nuc_ratio,
        nuc_unit=args.nuc_unit,
        method=args.method,
        cap_mode=args.cap,
        question=args.question,
        cr_rope=not args.no_cr_rope,
        window_step=args.window_step,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="infinipot", description="Chat with documents longer than the model's memory, fully offline."
    )
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"), help="where the model runs")
    commands = parser.add_subparsers(dest="command", required=True)

    read = commands.add_parser("read", help="read a document into a memory pot and store it")
    read.add_argument("path", help="the document (PDF, DOCX, EPUB, HTML, text, log, .gz)")
    read.add_argument("--model", default="default", help="'default' (bundled SmolLM2-135M), a model folder or hub id")
    read.add_argument("--pot-size", type=int, default=4096, help="|M|: most KV entries held (default 4096)")
    read.add_argument("--keep", type=int, default=None, help="|C|: entries kept per compression (default |M|/2)")
    read.add_argument("--method", default="infinipot", choices=METHODS, help="what decides which entries stay")
    read.add_argument(
        "--window-step", type=int, default=None, help="streaming/h2o: tokens read between evictions (|M|/16)"
    )
    read.add_argument("--nuc-ratio", type=float, default=0.5, help="share of kept slots chosen by novelty")
    read.add_argument(
        "--nuc-unit",
        default=PotConfig.nuc_unit,
        choices=NUC_UNITS,
        help="NuC per word given to its sentence (default), per word and its edge tokens, per word, per token",
    )
    read.add_argument("--cap", default="general", choices=CAP_MODES, help="catalyst prompt: general or question")
    read.add_argument("--question", default=None, help="the question, for --cap question")
    read.add_argument("--no-cr-rope", action="store_true", help="ablation: keep original positions")
    read.add_argument(
        "--checkpoint-seconds",
        type=float,
        default=60.0,
        help="seconds of reading between checkpoints a crashed read resumes from (default 60)",
    )
    read.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    read.add_argument("--follow", action="store_true", help="keep reading a growing log (Ctrl-C stops)")
    read.add_argument("--poll-seconds", type=float, default=2.0, help="--follow: seconds between looks (default 2)")
    read.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)  # tests: stop after N looks

    ask = commands.add_parser("ask", help="answer a question from a document's stored pot")
    ask.add_argument("doc", help="a doc_id (or its prefix) or a path (read first if needed)")
    ask.add_argument("question")
    ask.add_argument("--max-new-tokens", type=int, default=256)
    ask.add_argument(
        "--focus",
        type=int,
        default=None,
        help="answer from a copy of the pot distilled to this many entries with the question as catalyst",
    )
    ask.add_argument("--json", action="store_true")
    add_reread_option(ask)
    add_ask_across_command(commands)

    summarize = commands.add_parser("summarize", help="summarize a document from its stored pot")
    summarize.add_argument("doc")
    summarize.add_argument("--max-new-tokens", type=int, default=256)
    summarize.add_argument("--json", action="store_true")

    listing = commands.add_parser("list", help="list stored documents with their pots and disk use")
    listing.add_argument("--json", action="store_true")

    delete = commands.add_parser("delete", help="delete a document's pots, checkpoints and conversations")
    delete.add_argument("doc", help="a doc_id (or its prefix) or the document's path")
    delete.add_argument("--json", action="store_true")

    from infinipot.app.bench import niah as bench_niah
    from infinipot.app.bench import speed as bench_speed

    bench = commands.add_parser("bench", help="benchmarks: needle-in-a-haystack accuracy, reading speed and memory")
    benches = bench.add_subparsers(dest="bench", required=True)
    bench_niah.add_arguments(
        benches.add_parser("niah", help="passkey retrieval over lengths, depths and methods (resumable)")
    )
    bench_speed.add_arguments(
        benches.add_parser("speed", help="reading tokens/s and peak memory vs length per method (resumable)")
    )

    ui = commands.add_parser("ui", help="the web app: library, reading progress, chat, what the model kept")
    ui.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback only)")
    ui.add_argument("--port", type=int, default=7860)
    ui.add_argument("--auth", default=None, metavar="USER:PASSWORD", help="required for a --host other than loopback")
    ui.add_argument("--max-upload-mb", type=int, default=1024, help="largest file accepted by upload (default 1024)")
    return parser


def _quiet_libraries() -> None:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def _progress_printer(enabled: bool):
    if not enabled:
        return None
    last = [0.0]

    def show(pot) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            print(f"\rread {pot.document_tokens:,} tokens, {pot.cycles} compressions", end="", file=sys.stderr)

    return show


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


def _serve_ui(args: argparse.Namespace) -> int:
    from infinipot.app.ui.launch import check_exposure, parse_auth

    auth = parse_auth(args.auth)
    check_exposure(args.host, auth)  # before anything is loaded
    if args.max_upload_mb < 1:
        raise ValueError(f"--max-upload-mb must be at least 1, got {args.max_upload_mb}")
    from infinipot.storage.paths import data_home

    # Uploads arrive in Gradio's temporary folder first: keep that inside the data directory too.
    os.environ.setdefault("GRADIO_TEMP_DIR", str(data_home() / "gradio-tmp"))
    from infinipot.app.ui import serve
    from infinipot.app.workspace import open_workspace

    workspace = open_workspace(device=args.device, max_upload_bytes=args.max_upload_mb * 2**20)
    workspace.warm_up_in_background()
    print(f"infinipot: the app runs on http://{args.host}:{args.port} (Ctrl-C stops it)", file=sys.stderr)
    try:
        serve(workspace, args.host, args.port, auth, args.max_upload_mb)
    finally:
        workspace.close()
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "ui":
        return _serve_ui(args)
    if args.command == "bench":
        from infinipot.app.bench import niah, speed

        return (niah if args.bench == "niah" else speed).main(args)

    from infinipot.app.service import DocumentService

    service = DocumentService(device=args.device, checkpoint_seconds=getattr(args, "checkpoint_seconds", 60.0))
    if args.command == "read" and args.follow:
        from infinipot.app.follow_cli import run_follow

        return run_follow(service, args, _pot_config(args), _warn)
    if args.command == "read":
        config = _pot_config(args)
        report = service.read(args.path, config, args.model, on_progress=_progress_printer(not args.json))
        if not args.json:
            print(file=sys.stderr)
        _warn(report.warnings)
        if args.json:
            print(json.dumps(report.as_json()))
        else:
            how = "reused the stored pot" if report.reused else f"read in {report.seconds:.1f} s"
            if report.resumed_from:
                how += f", resumed after {report.resumed_from:,} tokens"
            print(
                f"{report.name}: {report.tokens:,} tokens, {report.cycles} compressions, pot {report.pot_entries} "
                f"entries (peak {report.peak_entries}); {how}. doc_id {report.doc_id}"
            )
        return 0
    if args.command == "list":
        documents = service.documents()
        if args.json:
            print(json.dumps({"documents": documents, "disk_bytes": sum(d["disk_bytes"] for d in documents)}))
        else:
            _print_listing(documents)
        return 0
    if args.command == "delete":
        result = service.delete(args.doc)
        if args.json:
            print(json.dumps(result))
        else:
            print(
                f"deleted {result['name']} ({result['deleted']}): {result['pots']} pots, "
                f"{_size(result['freed_bytes'])} freed"
            )
        return 0

    if args.command == "ask-across":
        return run_ask_across(service, args)
    started = time.perf_counter()
    if args.command == "ask":
        pieces, stats, reused = service.ask(args.doc, args.question, args.max_new_tokens, focus=args.focus)
        key = "answer"
    else:
        pieces, stats = service.summarize(args.doc, args.max_new_tokens)
        reused, key = True, "summary"
    _warn(stats.warnings)
    text = []
    for piece in pieces:
        text.append(piece)
        if not args.json:
            print(piece, end="", flush=True)
    seconds = time.perf_counter() - started
    if args.json:
        result = {key: "".join(text).strip(), "seconds": round(seconds, 3)}
        if args.command == "ask":
            first = stats.first_token_seconds
            result.update(
                ttft_seconds=round(first if first is not None else seconds, 3),
                reused_pot=reused,
                conversation_id=stats.conversation_id,
                citations=stats.citations,
                answer_entries=stats.answer_entries,
            )
        if getattr(args, "reread", False):
            result["question_aware"] = question_aware_answer(service, args)
        print(json.dumps(result))
    else:
        print()
        if args.command == "ask" and stats.citations:
            print("sources: " + ", ".join(f"{c['label']} ({100 * c['score']:.0f}%)" for c in stats.citations))
        if getattr(args, "reread", False):
            question_aware_answer(service, args, _progress_printer(True))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
    from infinipot.app.service import DocumentNotFound
    from infinipot.ingest import IngestError
    from infinipot.storage.errors import StorageError

    try:
        return _run(args)
    except (InfiniPotError, IngestError, DocumentNotFound, StorageError, ValueError) as exc:
        print(f"infinipot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("infinipot: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
