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

import torch

from infinipot.app.bench.haystack import haystack_ids, key_occurrences, passkey_document, passkey_key
from infinipot.app.bench.needle import QUESTION, found_key
from infinipot.app.bench.results import (
    BenchSettings,
    ResultLog,
    length_label,
    parse_depths,
)
from infinipot.app.library.retrieval_heads import RetrievalHeadsShelf
from infinipot.core.answer.evidence import (
    RANKINGS,
    EvidenceConfig,
    after_pot_suffix,
    find_evidence,
    parse_pot_entries,
    spans_to_read,
)
from infinipot.core.answer.retrieval_heads import RetrievalHeads
from infinipot.core.capacity import check_full_context
from infinipot.core.config import CAP_MODES, NUC_UNITS, PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.errors import FullContextError
from infinipot.core.pot import Pot
from infinipot.core.scorers import make_scorer

# Documents go to the reader in pieces of this many tokens, as a file's token stream would.
_CHUNK_TOKENS = 4096


@dataclass(frozen=True, kw_only=True)
class NiahSettings(BenchSettings):
    depths: tuple[float, ...]
    trials: int
    max_new_tokens: int = 16  # a 5-digit key and a few words around it
    seed: int = 0
    # "question": CaP-Q, each trial's document read with that trial's question in the catalyst prompt.
    cap: str = "general"
    # Also answer every trial from a copy of its pot distilled to this many entries with the question (ask --focus).
    focus: int | None = None
    # Also answer every trial in answer mode `evidence` (the document spans the question points to), once per
    # value here of what the spans are read after (EvidenceConfig.pot_entries: None the whole pot, 0 the chat
    # template's opening alone, N a copy distilled to N entries). Empty: no evidence answers.
    evidence_pots: tuple[int | None, ...] = ()
    # What points at the evidence spans (EvidenceConfig.ranking): "attention" answers from the pot's pointing
    # alone (through the model's retrieval heads, core.answer.retrieval_heads), since a passkey question's words
    # would find the key by themselves.
    evidence_ranking: str = EvidenceConfig.ranking
    nuc_unit: str = PotConfig.nuc_unit  # validated by PotConfig, which main() builds for every method first
    # The remaining suspects the issue names for a missed key, for ablations: alpha, sinks and CR-RoPE.
    nuc_ratio: float = PotConfig.nuc_ratio
    sinks: int = PotConfig.min_sink_tokens
    cr_rope: bool = PotConfig.cr_rope

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.depths:
            raise ValueError("give at least one depth")
        if self.trials < 1:
            raise ValueError(f"trials must be positive, got {self.trials}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max new tokens must be positive, got {self.max_new_tokens}")
        if self.cap not in CAP_MODES:
            raise ValueError(f"CaP mode must be one of {', '.join(CAP_MODES)}, got {self.cap!r}")
        if self.evidence_ranking not in RANKINGS:
            raise ValueError(f"evidence ranking must be one of {', '.join(RANKINGS)}, got {self.evidence_ranking!r}")
        if self.focus is not None and not 0 < self.focus < self.pot_size:
            raise ValueError(f"focus must be between 1 and the pot size - 1 ({self.pot_size - 1}), got {self.focus}")

    def pot_config(self, method: str) -> PotConfig:
        question = QUESTION if self.cap == "question" else None  # every trial asks this question for its key
        return PotConfig(
            pot_size=self.pot_size,
            keep_size=self.keep,
            method=method,
            cap_mode=self.cap,
            question=question,
            nuc_unit=self.nuc_unit,
            nuc_ratio=self.nuc_ratio,
            min_sink_tokens=self.sinks,
            cr_rope=self.cr_rope,
        )

    def identity(self) -> dict:
        """What the results depend on besides the cell: a rerun must match it to reuse them."""
        return {
            **self.run_identity("niah"),
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "question": QUESTION,
            # only when not the default, so folders written before this setting existed still resume
            **({"cap": self.cap} if self.cap != "general" else {}),
            **({"focus": self.focus} if self.focus is not None else {}),
            # folders from before the choice of what the passages follow answered after the whole pot
            **({"evidence": True} if self.evidence_pots == (None,) else {}),
            **({"evidence_pots": list(self.evidence_pots)} if self.evidence_pots not in ((), (None,)) else {}),
            # folders from before reranking read every candidate span
            **({"evidence_read_spans": EvidenceConfig().read_spans} if self.evidence_pots else {}),
            **({"evidence_order": EvidenceConfig().order} if self.evidence_pots else {}),
            # recorded unless "both", the ranking of every folder written before the setting existed; with the
            # pointer, since the retrieval heads changed what "attention" means
            **(
                {"evidence_ranking": self.evidence_ranking, "evidence_pointer": EvidenceConfig().pointer}
                if self.evidence_pots and self.evidence_ranking != "both"
                else {}
            ),
            # recorded unless "word": folders written before the setting existed were read per word
            **({"nuc_unit": self.nuc_unit} if self.nuc_unit != "word" else {}),
            **({"nuc_ratio": self.nuc_ratio} if self.nuc_ratio != PotConfig.nuc_ratio else {}),
            **({"sinks": self.sinks} if self.sinks != PotConfig.min_sink_tokens else {}),
            **({"cr_rope": False} if not self.cr_rope else {}),
        }

    def evidence_label(self, method: str, pot_entries: int | None) -> str:
        """`+evidence`: the passages alone (the default); `+evidence+pot`: after the whole pot; `+evidence+potN`;
        `+evidence-attention` (or `-words`) when another ranking than both points at them."""
        ranking = "" if self.evidence_ranking == "both" else f"-{self.evidence_ranking}"
        return f"{method}+evidence{ranking}{after_pot_suffix(pot_entries)}"

    def focus_label(self, method: str) -> str:
        """The report's name for a method's focused answers."""
        return f"{method}+focus{self.focus}"


def evidence_key(pot_entries: int | None) -> str:
    """The prefix of a record's keys for evidence answers after `pot_entries` (`evidence_found`, ...): records
    from before the choice existed answered after the whole pot and keep their plain `evidence_` keys."""
    return (
        "evidence" if pot_entries is None else ("evidence_alone" if pot_entries == 0 else f"evidence_pot{pot_entries}")
    )


@dataclass(frozen=True)
class PasskeyTrial:
    """One trial's document, its key, and the document indices of each occurrence of the key's tokens."""

    document: list[int]
    key: str
    key_tokens: list[list[int]]


def document_chunks(document: list[int], size: int | None = None) -> list[list[int]]:
    size = size or _CHUNK_TOKENS
    return [document[i : i + size] for i in range(0, len(document), size)]


class SharedOpeningReader:
    """Reads documents that open with the same chunks, reading those chunks once.

    The trials of one cell differ only from their needle on, so the reader's state after the chunks they
    share is snapshotted and restored for each document. Pieces and compressions fall exactly where a
    separate read of the document puts them (the same chunks are fed in the same order), so each pot equals
    that read's; a long document with a late needle is read in full only once instead of once per trial.
    """

    def __init__(self, engine: Engine, documents: list[list[int]], chunk_tokens: int | None = None) -> None:
        self.engine = engine
        self.chunk_tokens = chunk_tokens
        chunked = [document_chunks(d, chunk_tokens) for d in documents]
        shared = 0
        if len(chunked) > 1:
            # every document keeps at least its last chunk to itself
            while shared < min(len(c) for c in chunked) - 1 and all(c[shared] == chunked[0][shared] for c in chunked):
                shared += 1
        self.opening = chunked[0][:shared]
        self.reader = None
        self.state = None
        self.opening_seconds = 0.0

    @property
    def shared_tokens(self) -> int:
        return sum(len(chunk) for chunk in self.opening)

    def read(self, document: list[int]) -> tuple[Pot, float]:
        """The document's pot and the seconds a separate read would have taken (the shared opening's included)."""
        chunks = document_chunks(document, self.chunk_tokens)
        if chunks[: len(self.opening)] != self.opening:
            raise ValueError("this document does not open with the shared chunks")
        if self.state is None:
            started = time.perf_counter()
            self.reader = self.engine.new_reader()
            self.reader.start(self.engine.prefix_ids)
            for chunk in self.opening:
                self.reader.feed(chunk)
            self.state = self.reader.snapshot()
            self.opening_seconds = time.perf_counter() - started
        else:
            self.reader.restore(self.state)
        started = time.perf_counter()
        for chunk in chunks[len(self.opening) :]:
            self.reader.feed(chunk)
        pot = self.reader.finish()
        return pot, self.opening_seconds + time.perf_counter() - started


def run_trial(
    engine: Engine,
    reading: SharedOpeningReader,
    trial: PasskeyTrial,
    settings: NiahSettings,
    heads: RetrievalHeads | None = None,
) -> dict:
    """Read one passkey document and ask for the key; refused (not failed) when `full` cannot hold it."""
    request = engine.answer_prompt_ids(QUESTION)
    if not make_scorer(engine.config.method, engine.config.nuc_ratio).compresses:
        try:
            needed = len(engine.prefix_ids) + len(trial.document) + len(request) + settings.max_new_tokens
            check_full_context(engine.model, needed)
        except FullContextError as exc:
            return {"status": "refused", "reason": str(exc)}
    on_gpu = engine.loaded.device.type == "cuda"
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(engine.loaded.device)
    pot, read_seconds = reading.read(trial.document)
    stats = AnswerStats()
    answer = "".join(engine.answer(pot, QUESTION, settings.max_new_tokens, stats)).strip()
    outcome = {
        "status": "ok",
        "answer": answer,
        "found": found_key(answer, trial.key),
        "read_seconds": round(read_seconds, 3),
        "shared_tokens": reading.shared_tokens,
        "answer_seconds": round(stats.seconds, 3),
        "key_kept": key_kept(pot, trial.key_tokens),
        "tokens": pot.document_tokens,
        "cycles": pot.cycles,
        "peak_entries": max(pot.peak_entries, stats.peak_entries),
        "pot_entries": pot.entries,
    }
    if on_gpu:  # the read's and the pot answer's peak (the focus and evidence answers below add their own)
        outcome["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated(engine.loaded.device) / 2**20, 1)
    if settings.focus is not None:  # the same pot asked again through a question-distilled copy (ask --focus)
        focused = AnswerStats()
        answer = "".join(engine.answer(pot, QUESTION, settings.max_new_tokens, focused, focus=settings.focus)).strip()
        outcome |= {
            "focus_answer": answer,
            "focus_found": found_key(answer, trial.key),
            "focus_entries": focused.answer_entries,
        }
    for pot_entries in settings.evidence_pots:  # the document spans the question points to (core.answer.evidence)
        fetch = lambda start, end: trial.document[start:end]  # noqa: E731
        config = EvidenceConfig(pot_entries=pot_entries, ranking=settings.evidence_ranking)
        spans = find_evidence(engine, pot, QUESTION, len(trial.document), fetch, config, settings.max_new_tokens, heads)
        cited = AnswerStats()
        evidence = spans_to_read(spans)
        pieces = engine.answer(
            pot,
            QUESTION,
            settings.max_new_tokens,
            cited,
            evidence=evidence,
            pot_entries=pot_entries,
            question_first=config.question_first,
        )
        answer = "".join(pieces).strip()
        key = evidence_key(pot_entries)
        outcome |= {
            f"{key}_answer": answer,
            f"{key}_found": found_key(answer, trial.key),
            f"{key}_tokens": sum(len(ids) for ids in evidence),
            f"{key}_holds_key": any(_holds(span.ids, trial) for span in spans),
            f"{key}_ttft_seconds": round(cited.ttft_seconds or 0.0, 3),
        }
    return outcome


def _holds(ids: tuple[int, ...], trial: PasskeyTrial) -> bool:
    """Whether a span's tokens contain the whole key (its first occurrence's token ids in a row)."""
    key_ids = [trial.document[i] for i in trial.key_tokens[0]]
    return any(list(ids[i : i + len(key_ids)]) == key_ids for i in range(len(ids) - len(key_ids) + 1))


def key_kept(pot: Pot, occurrences: list[list[int]]) -> float:
    """Share of (layer, KV head) slots whose entries hold every token of at least one occurrence of the key.

    Tells a pot that dropped the needle from a model that could not read it back out of a pot that kept it.
    """
    held = torch.zeros(pot.origin.shape[:2], dtype=torch.bool)  # (L, H_kv)
    for indices in occurrences:
        stream = torch.tensor(indices, device=pot.origin.device) + pot.prefix_len  # (k,) origins of the key's tokens
        present = (pot.origin[..., None] == stream).any(dim=2)  # (L, H_kv, k)
        held |= present.all(dim=-1).cpu()
    return round(held.float().mean().item(), 3)


def run(settings: NiahSettings, loaded, log=print, heads: RetrievalHeads | None = None) -> list[dict]:
    """Run every missing trial; returns all records (earlier ones included). `heads`: the model's retrieval
    heads, for evidence answers."""
    results = ResultLog(settings.out / "niah.jsonl", settings.identity())
    done = results.done(("method", "length", "depth", "trial"))
    engines = {m: Engine(loaded, settings.pot_config(m)) for m in settings.methods}
    haystack = None
    for length in settings.lengths:
        for depth in settings.depths:
            todo = {
                m: [t for t in range(settings.trials) if (m, length, depth, t) not in done] for m in settings.methods
            }
            if not any(todo.values()):
                continue
            if haystack is None or len(haystack) < length:
                haystack = haystack_ids(loaded.tokenizer, max(settings.lengths))
            trials = {}
            for t in sorted({t for numbers in todo.values() for t in numbers}):
                key = passkey_key(settings.seed, length, depth, t)
                document = passkey_document(loaded.tokenizer, haystack, length, depth, key)
                trials[t] = PasskeyTrial(document, key, key_occurrences(loaded.tokenizer, document, key))
            for method, numbers in todo.items():
                if not numbers:
                    continue
                reading = SharedOpeningReader(engines[method], [trials[t].document for t in numbers])
                for t in numbers:
                    outcome = run_trial(engines[method], reading, trials[t], settings, heads)
                    record = {"method": method, "length": length, "depth": depth, "trial": t, "key": trials[t].key}
                    results.append({**record, **outcome})
                    log(f"{method} {length_label(length)} depth {depth} trial {t}: {_shown(outcome)}")
    return results.records


def _shown(outcome: dict) -> str:
    if outcome["status"] == "refused":
        return "refused"
    shown = "found" if outcome["found"] else "missed"
    if "focus_found" in outcome:
        shown += ", focused: " + ("found" if outcome["focus_found"] else "missed")
    for name, value in outcome.items():
        if name.startswith("evidence") and name.endswith("_found"):
            shown += f", {name[: -len('_found')].replace('_', ' ')}: " + ("found" if value else "missed")
    return shown


def write_reports(settings: NiahSettings, records: list[dict]) -> list[Path]:
    from infinipot.app.bench import report

    labels = list(settings.methods)
    if settings.focus is not None:  # focused answers are reported as a method of their own
        labels += [settings.focus_label(m) for m in settings.methods]
        records = records + [
            {**r, "method": settings.focus_label(r["method"]), "found": r["focus_found"], "answer": r["focus_answer"]}
            for r in records
            if "focus_found" in r
        ]
    for pot_entries in settings.evidence_pots:  # so are answers with evidence, one label per setting
        key = evidence_key(pot_entries)
        labels += [settings.evidence_label(m, pot_entries) for m in settings.methods]
        records = records + [
            {**r, "method": settings.evidence_label(r["method"], pot_entries), "found": r[f"{key}_found"]}
            for r in records
            if f"{key}_found" in r
        ]
    summary = report.niah_summary(records, labels, settings.lengths, settings.depths)
    paths = [
        report.write_json(settings.out / "niah.json", {"settings": settings.identity(), "cells": summary}),
        report.write_text(settings.out / "niah.md", report.niah_table(summary, settings, labels)),
    ]
    for label in labels:
        paths.append(report.niah_heatmap(summary, label, settings, settings.out / f"niah_{label}.png"))
    return paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lengths", default="4k,8k,16k,32k", help="document lengths in tokens (4k = 4096, 1m)")
    parser.add_argument("--depths", default="0.1,0.5,0.9", help="needle depths within [0, 1]")
    parser.add_argument("--trials", type=int, default=5, help="trials per cell, each with its own key")
    parser.add_argument("--methods", default="infinipot,truncate,streaming", help="comma-separated methods")
    parser.add_argument("--out", required=True, help="folder for niah.jsonl, niah.md, niah.json and heatmaps")
    parser.add_argument("--model", default="default")
    parser.add_argument("--pot-size", type=int, default=PotConfig.pot_size, help="|M| for every memory-bounded method")
    parser.add_argument("--keep", type=int, default=None, help="|C| (default |M|/2)")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0, help="changes every key")
    parser.add_argument(
        "--cap", default="general", choices=CAP_MODES, help="question: read each trial with its question in the CaP"
    )
    parser.add_argument(
        "--focus",
        type=int,
        default=None,
        help="also answer each trial from its pot distilled to this many entries with the question (as ask --focus)",
    )
    parser.add_argument(
        "--evidence",
        action="store_true",
        help="also answer each trial with evidence spans (ask --answer-from evidence, its default settings)",
    )
    parser.add_argument(
        "--evidence-pot",
        default=None,
        help="also answer with evidence spans read after this many pot entries, comma-separated: 0 the passages "
        "alone, all the whole pot, N a question-distilled copy (implies --evidence)",
    )
    parser.add_argument(
        "--evidence-ranking",
        default=EvidenceConfig.ranking,
        choices=RANKINGS,
        help="what points at the evidence spans: attention (the pot's retrieval heads alone), words, or both",
    )
    parser.add_argument(
        "--nuc-unit", default=PotConfig.nuc_unit, choices=NUC_UNITS, help="what NuC scores (as in `read`)"
    )
    parser.add_argument(
        "--nuc-ratio", type=float, default=PotConfig.nuc_ratio, help="alpha: share of kept slots chosen by novelty"
    )
    parser.add_argument(
        "--sinks", type=int, default=PotConfig.min_sink_tokens, help="fewest leading tokens kept as attention sinks"
    )
    parser.add_argument("--no-cr-rope", action="store_true", help="ablation: keep original positions")


def settings_from_args(args: argparse.Namespace) -> NiahSettings:
    return NiahSettings.from_args(
        args, depths=parse_depths(args.depths), evidence_pots=evidence_pots(args), cr_rope=not args.no_cr_rope
    )


def evidence_pots(args: argparse.Namespace) -> tuple[int | None, ...]:
    """What evidence answers follow, from --evidence-pot, or the default alone with --evidence."""
    if args.evidence_pot is None:
        return (EvidenceConfig().pot_entries,) if args.evidence else ()
    try:
        pots = tuple(parse_pot_entries(part) for part in args.evidence_pot.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"--evidence-pot takes 'all' or whole numbers of entries, got {args.evidence_pot!r}") from None
    if not pots:
        raise ValueError("--evidence-pot needs at least one value")
    return tuple(dict.fromkeys(pots))


def main(args: argparse.Namespace) -> int:
    from infinipot.core.model import ModelSpec, load_model
    from infinipot.storage.paths import data_home

    settings = settings_from_args(args)
    for method in settings.methods:
        settings.pot_config(method)  # impossible pot settings fail before the model loads
    home = data_home()
    loaded = load_model(ModelSpec(name=settings.model, device=settings.device, dtype=settings.dtype), home)
    heads = None
    if settings.evidence_pots and settings.evidence_ranking != "words":
        heads = RetrievalHeadsShelf(home).get(Engine(loaded, PotConfig(pot_size=settings.pot_size)))
    records = run(settings, loaded, log=lambda line: print(line, file=sys.stderr, flush=True), heads=heads)
    for path in write_reports(settings, records):
        print(path)
    return 0
