"""`infinipot bench speed`: reading throughput and peak memory against document length, per method.

Each (method, length) runs in a fresh subprocess, so that process's peak resident memory (ru_maxrss) is
that read's alone. `plain` is the model's own chunked forward (logits included, as NuC needs them) over a
sliding window of |M| - |P| entries, in pieces as long as one CCD cycle reads: the cost of reading with no
scoring and no compression, which the ratio "vs plain" compares against. One JSON line per finished run goes
to speed.jsonl (a rerun skips those), then speed.md and speed.png are written.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from infinipot.app.bench.results import (
    BenchSettings,
    ResultLog,
    length_label,
)
from infinipot.core.config import PotConfig
from infinipot.core.errors import InfiniPotError

PLAIN = "plain"
_CHUNK_TOKENS = 4096


@dataclass(frozen=True, kw_only=True)
class SpeedSettings(BenchSettings):
    repeats: int = 1
    threads: int | None = None  # None: one per physical core

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.repeats < 1:
            raise ValueError(f"repeats must be positive, got {self.repeats}")

    def identity(self) -> dict:
        return {
            **self.run_identity("speed"),
            "repeats": self.repeats,
            "device": self.device,
        }


def _pot_config(method: str, pot_size: int, keep: int | None) -> PotConfig:
    return PotConfig(pot_size=pot_size, keep_size=keep, method=method)


def plain_chunked_forward(model, ids: list[int], window: int, chunk: int) -> None:
    """The model's own forward (with logits) over fixed chunks, trimming the cache to the newest `window`."""
    import torch

    from infinipot.core import hf_adapter

    device = next(model.parameters()).device
    cache = hf_adapter.new_cache()
    with torch.inference_mode():
        for start in range(0, len(ids), chunk):
            piece = torch.tensor([ids[start : start + chunk]], device=device)  # (1, T)
            model(input_ids=piece, past_key_values=cache, use_cache=True)
            excess = hf_adapter.cache_length(cache) + chunk - window
            if excess > 0:
                layers = [(k[:, :, excess:], v[:, :, excess:]) for k, v in hf_adapter.cache_layers(cache)]
                cache = hf_adapter.cache_from_layers(layers)


def measure(
    method: str,
    length: int,
    model: str,
    pot_size: int,
    keep: int | None,
    repeats: int,
    device: str,
    dtype: str = "float32",
    threads: int | None = None,
) -> dict:
    """One (method, length) in this process: median tokens/s over `repeats` reads, peak RSS, peak entries."""
    import psutil
    import torch

    from infinipot.app.bench.haystack import haystack_ids
    from infinipot.core.engine import Engine
    from infinipot.core.model import ModelSpec, load_model
    from infinipot.core.precision import set_threads
    from infinipot.storage.paths import data_home

    set_threads(threads)
    loaded = load_model(ModelSpec(name=model, device=device, dtype=dtype), data_home())
    engine = Engine(loaded, _pot_config("infinipot" if method == PLAIN else method, pot_size, keep))
    ids = haystack_ids(loaded.tokenizer, length)
    rss_before = psutil.Process().memory_info().rss
    speeds, peak_entries, cycles = [], len(ids), 0
    for _ in range(repeats):
        started = time.perf_counter()
        if method == PLAIN:
            config = engine.config
            window = config.pot_size - len(engine.catalyst_ids)
            chunk = min(config.pot_size - config.keep_size - len(engine.catalyst_ids), config.forward_tokens)
            plain_chunked_forward(loaded.model, ids, window, chunk)
            peak_entries = min(window, len(ids))
        else:
            try:
                pot = engine.read(ids[i : i + _CHUNK_TOKENS] for i in range(0, len(ids), _CHUNK_TOKENS))
            except InfiniPotError as exc:
                return {"status": "refused", "reason": str(exc)}
            peak_entries, cycles = pot.peak_entries, pot.cycles
        speeds.append(len(ids) / (time.perf_counter() - started))
    record = {
        "status": "ok",
        "tokens_per_s": round(statistics.median(speeds), 1),
        "runs_tokens_per_s": [round(s, 1) for s in speeds],
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_before_mib": round(rss_before / 2**20, 1),
        "peak_entries": peak_entries,
        "cycles": cycles,
        "device": _device_name(loaded.device),
        "dtype": dtype,
        "threads": torch.get_num_threads(),
        "load_average": round(os.getloadavg()[0], 1),  # other work on the machine skews throughput
    }
    if loaded.device.type == "cuda":
        record["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return record


def _device_name(device) -> str:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU, {torch.get_num_threads()} threads"


def _measure_in_child(settings: SpeedSettings, method: str, length: int) -> dict:
    spec = {
        "method": method,
        "length": length,
        "model": settings.model,
        "pot_size": settings.pot_size,
        "keep": settings.keep,
        "repeats": settings.repeats,
        "device": settings.device,
        "dtype": settings.dtype,
        "threads": settings.threads,
    }
    done = subprocess.run(
        [sys.executable, "-m", "infinipot.app.bench.speed", json.dumps(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise InfiniPotError(f"the {method} run at {length} tokens failed: {last}")
    return json.loads(lines[-1])


def run(settings: SpeedSettings, log=print) -> list[dict]:
    results = ResultLog(settings.out / "speed.jsonl", settings.identity())
    done = results.done(("method", "length"))
    for length in settings.lengths:
        for method in (PLAIN, *settings.methods):
            if (method, length) in done:
                continue
            outcome = _measure_in_child(settings, method, length)
            results.append({"method": method, "length": length, **outcome})
            shown = f"{outcome['tokens_per_s']:.0f} tokens/s" if outcome["status"] == "ok" else "refused"
            log(f"{method} {length_label(length)}: {shown}")
    return results.records


def write_reports(settings: SpeedSettings, records: list[dict]) -> list[Path]:
    from infinipot.app.bench import report

    rows = report.speed_rows(records, settings.methods, settings.lengths)
    return [
        report.write_text(settings.out / "speed.md", report.speed_table(rows, settings)),
        report.speed_plot(rows, settings, settings.out / "speed.png"),
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lengths", default="4k,16k", help="document lengths in tokens (4k = 4096, 1m)")
    parser.add_argument("--methods", default="infinipot,streaming,h2o", help="comma-separated methods")
    parser.add_argument("--out", required=True, help="folder for speed.jsonl, speed.md and speed.png")
    parser.add_argument("--model", default="default")
    parser.add_argument("--pot-size", type=int, default=PotConfig.pot_size)
    parser.add_argument("--keep", type=int, default=None, help="|C| (default |M|/2)")
    parser.add_argument("--repeats", type=int, default=1, help="reads per run; throughput is their median")


def settings_from_args(args: argparse.Namespace) -> SpeedSettings:
    return SpeedSettings.from_args(args)


def main(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    for method in settings.methods:
        _pot_config(method, settings.pot_size, settings.keep)  # impossible settings fail before any run
    records = run(settings, log=lambda line: print(line, file=sys.stderr, flush=True))
    for path in write_reports(settings, records):
        print(path)
    return 0


def _child(spec_json: str) -> None:
    spec = json.loads(spec_json)
    print(json.dumps(measure(**spec)))


if __name__ == "__main__":
    _child(sys.argv[1])
