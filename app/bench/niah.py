"""`infinipot bench niah`: passkey retrieval over document lengths, needle depths and methods (paper Table 4).

Every trial reads a whole passkey document (haystack essays with a 5-digit key inside) into a pot with one
method, asks for the key, and appends one JSON line to niah.jsonl; a rerun skips the finished trials. Keys
depend only on (seed, length, depth, trial), so every method answers the same documents. Afterwards the
markdown table (niah.md), a summary (niah.json) and one heatmap per method (niah_<method>.png) are written.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from infinipot.app.bench.haystack import haystack_ids, passkey_document, passkey_key
from infinipot.app.bench.results import ResultLog, length_label, parse_depths, parse_lengths, parse_methods
from infinipot.app.niah import QUESTION, found_key
from infinipot.core.capacity import check_full_context
from infinipot.core.config import CAP_MODES, PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.errors import FullContextError
from infinipot.core.scorers import make_scorer

# Documents go to the reader in pieces of this many tokens, as a file's token stream would.
_CHUNK_TOKENS = 4096


@dataclass(frozen=True)
class NiahSettings:
    lengths: tuple[int, ...]
    depths: tuple[float, ...]
    trials: int
    methods: tuple[str, ...]
    out: Path
    model: str = "default"
    pot_size: int = 4096
    keep: int | None = None  # |C|; default |M|/2 as in `infinipot read`
    max_new_tokens: int = 16  # a 5-digit key and a few words around it
    seed: int = 0
    device: str = "auto"
    # "question": CaP-Q, each trial's document read with that trial's question in the catalyst prompt.
    cap: str = "general"

    def __post_init__(self) -> None:
        if not self.lengths or not self.depths or not self.methods:
            raise ValueError("give at least one length, one depth and one method")
        if self.trials < 1:
            raise ValueError(f"trials must be positive, got {self.trials}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max new tokens must be positive, got {self.max_new_tokens}")
        if self.cap not in CAP_MODES:
            raise ValueError(f"CaP mode must be one of {', '.join(CAP_MODES)}, got {self.cap!r}")

    def pot_config(self, method: str) -> PotConfig:
        keep = self.keep if self.keep is not None else self.pot_size // 2
        question = QUESTION if self.cap == "question" else None  # every trial asks this question for its key
        return PotConfig(pot_size=self.pot_size, keep_size=keep, method=method, cap_mode=self.cap, question=question)

    def identity(self) -> dict:
        """What the results depend on besides the cell: a rerun must match it to reuse them."""
        return {
            "benchmark": "niah",
            "model": self.model,
            "pot_size": self.pot_size,
            "keep": self.keep,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "question": QUESTION,
            # only when not the default, so folders written before this setting existed still resume
            **({"cap": self.cap} if self.cap != "general" else {}),
        }


def run_trial(engine: Engine, document: list[int], key: str, max_new_tokens: int) -> dict:
    """Read one passkey document and ask for the key; refused (not failed) when `full` cannot hold it."""
    request = engine.request_ids(QUESTION)
    if not make_scorer(engine.config.method, engine.config.nuc_ratio).compresses:
        try:
            check_full_context(engine.model, len(engine.prefix_ids) + len(document) + len(request) + max_new_tokens)
        except FullContextError as exc:
            return {"status": "refused", "reason": str(exc)}
    started = time.perf_counter()
    pot = engine.read(document[i : i + _CHUNK_TOKENS] for i in range(0, len(document), _CHUNK_TOKENS))
    read_seconds = time.perf_counter() - started
    stats = AnswerStats()
    answer = "".join(engine.answer(pot, QUESTION, max_new_tokens, stats)).strip()
    return {
        "status": "ok",
        "answer": answer,
        "found": found_key(answer, key),
        "read_seconds": round(read_seconds, 3),
        "answer_seconds": round(stats.seconds, 3),
        "tokens": pot.document_tokens,
        "cycles": pot.cycles,
        "peak_entries": max(pot.peak_entries, stats.peak_entries),
        "pot_entries": pot.entries,
    }


def run(settings: NiahSettings, loaded, log=print) -> list[dict]:
    """Run every missing trial; returns all records (earlier ones included)."""
    results = ResultLog(settings.out / "niah.jsonl", settings.identity())
    done = results.done(("method", "length", "depth", "trial"))
    engines = {m: Engine(loaded, settings.pot_config(m)) for m in settings.methods}
    haystack = None
    for length in settings.lengths:
        for depth in settings.depths:
            for trial in range(settings.trials):
                todo = [m for m in settings.methods if (m, length, depth, trial) not in done]
                if not todo:
                    continue
                if haystack is None or len(haystack) < length:
                    haystack = haystack_ids(loaded.tokenizer, max(settings.lengths))
                key = passkey_key(settings.seed, length, depth, trial)
                document = passkey_document(loaded.tokenizer, haystack, length, depth, key)
                for method in todo:
                    outcome = run_trial(engines[method], document, key, settings.max_new_tokens)
                    record = {"method": method, "length": length, "depth": depth, "trial": trial, "key": key}
                    results.append({**record, **outcome})
                    shown = "refused" if outcome["status"] == "refused" else ("found" if outcome["found"] else "missed")
                    log(f"{method} {length_label(length)} depth {depth} trial {trial}: {shown}")
    return results.records


def write_reports(settings: NiahSettings, records: list[dict]) -> list[Path]:
    from infinipot.app.bench import report

    summary = report.niah_summary(records, settings.methods, settings.lengths, settings.depths)
    paths = [
        report.write_json(settings.out / "niah.json", {"settings": settings.identity(), "cells": summary}),
        report.write_text(settings.out / "niah.md", report.niah_table(summary, settings)),
    ]
    for method in settings.methods:
        paths.append(report.niah_heatmap(summary, method, settings, settings.out / f"niah_{method}.png"))
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lengths", default="4k,8k,16k,32k", help="document lengths in tokens (4k = 4096, 1m)")
    parser.add_argument("--depths", default="0.1,0.5,0.9", help="needle depths within [0, 1]")
    parser.add_argument("--trials", type=int, default=5, help="trials per cell, each with its own key")
    parser.add_argument("--methods", default="infinipot,truncate,streaming", help="comma-separated methods")
    parser.add_argument("--out", required=True, help="folder for niah.jsonl, niah.md, niah.json and heatmaps")
    parser.add_argument("--model", default="default")
    parser.add_argument("--pot-size", type=int, default=4096, help="|M| for every memory-bounded method")
    parser.add_argument("--keep", type=int, default=None, help="|C| (default |M|/2)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="changes every key")
    parser.add_argument(
        "--cap", default="general", choices=CAP_MODES, help="question: read each trial with its question in the CaP"
    )


def settings_from_args(args: argparse.Namespace) -> NiahSettings:
    return NiahSettings(
        lengths=parse_lengths(args.lengths),
        depths=parse_depths(args.depths),
        trials=args.trials,
        methods=parse_methods(args.methods),
        out=Path(args.out),
        model=args.model,
        pot_size=args.pot_size,
        keep=args.keep,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        device=args.device,
        cap=args.cap,
    )


def main(args: argparse.Namespace) -> int:
    from infinipot.core.model import ModelSpec, load_model
    from infinipot.storage.paths import data_home

    settings = settings_from_args(args)
    for method in settings.methods:
        settings.pot_config(method)  # impossible pot settings fail before the model loads
    loaded = load_model(ModelSpec(name=settings.model, device=settings.device), data_home())
    records = run(settings, loaded, log=lambda line: print(line, file=sys.stderr, flush=True))
    for path in write_reports(settings, records):
        print(path)
    return 0
