"""What Continual Context Distillation costs over a plain chunked forward, as a ratio measured in one process.

    python -m benchmarks.ccd_overhead [--tokens 8192] [--runs 5] [--dtypes float32,bfloat16] [--threads N]

Both readers see the same haystack tokens with the same model, in forward pieces of the same length, and the
plain one trims its cache to the same window. Plain runs twice per run: on transformers' own SDPA (the stock
forward, what the ratio is taken against) and on the reader's SDPA (core.hf_adapter.use_reader_sdpa, which the
reader runs on), so that what CCD itself costs is seen apart from what that attention saves. The three take
turns in every place so that load on a shared machine falls on all alike. Prints one markdown row per run and
a JSON summary line: the median of the per-run throughput ratios (CCD / plain, 1.0 = free), and the share of
CCD's time spent in compressions (catalyst attention, selection, CR-RoPE; the catalyst prompt rides along with
the piece that fills the pot, so its part is the time its attention weights take there); one summary per dtype,
after a first line with the CPU flags that decide `--dtype auto` and the thread count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import time
from collections.abc import Iterator

import torch

from infinipot.app.bench.haystack import haystack_ids
from infinipot.app.bench.speed import plain_chunked_forward
from infinipot.core import hf_adapter
from infinipot.core.config import NUC_UNITS, PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.core.precision import cpu_features, dtype_name, resolve_dtype, set_threads
from infinipot.core.reader import ContinualReader
from infinipot.storage.paths import data_home


class MethodTimer:
    """Adds up the wall time of one function while installed: a ContinualReader method (its compressions, its NuC
    pass) or a module's function (the ride-along catalyst's weights in core.hf_adapter)."""

    def __init__(self, name: str, owner=ContinualReader) -> None:
        self.name = name
        self.owner = owner
        self.seconds = 0.0
        self._original = getattr(owner, name)

    def __enter__(self) -> MethodTimer:
        timer = self

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return timer._original(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - started

        setattr(self.owner, self.name, timed)
        return self

    def __exit__(self, *_exc) -> None:
        setattr(self.owner, self.name, self._original)


@contextlib.contextmanager
def transformers_sdpa(model) -> Iterator[None]:
    """Run the model on transformers' own SDPA meanwhile (the Engine moved it to the reader's)."""
    previous = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


def cpu_flags() -> dict:
    """What decides `--dtype auto` on this machine (core.precision), for the record beside the figures."""
    features = cpu_features()
    names = ("cpu_name", "num_physical_cores", "amx_bf16", "avx512_bf16", "avx512_f", "avx2")
    return {name: features.get(name) for name in names}


def measure(loaded, args: argparse.Namespace) -> dict:
    """Alternating plain and CCD reads of the same tokens in the model's current dtype; medians over the runs."""
    config = PotConfig(pot_size=args.pot_size, nuc_unit=args.nuc_unit)
    engine = Engine(loaded, config)
    ids = haystack_ids(loaded.tokenizer, args.tokens)
    window = config.pot_size - len(engine.catalyst_ids)
    piece = min(config.pot_size - config.keep_size - len(engine.catalyst_ids), config.forward_tokens)
    engine.new_reader()  # builds the word table outside the timed runs

    def plain(stock: bool) -> float:
        with transformers_sdpa(loaded.model) if stock else contextlib.nullcontext():
            started = time.perf_counter()
            plain_chunked_forward(loaded.model, ids, window, piece)
            return time.perf_counter() - started

    def ccd() -> tuple[float, float, float, int]:
        with (
            MethodTimer("_compress") as compressing,
            MethodTimer("_novelty") as novelty,
            MethodTimer("_last_queries_weights", hf_adapter) as ridden,
        ):
            started = time.perf_counter()
            pot = engine.read([ids])
            seconds = time.perf_counter() - started
        return seconds, compressing.seconds + ridden.seconds, novelty.seconds, pot.cycles

    dtype = dtype_name(loaded.dtype)
    ratios, same_attention_ratios, shares, nuc_shares = [], [], [], []
    plain_speeds, same_attention_speeds, ccd_speeds = [], [], []
    for run in range(args.runs):
        timings = {}
        order = ["plain", "same", "ccd"]
        for way in order[run % 3 :] + order[: run % 3]:  # each takes every place in turn
            timings[way] = ccd() if way == "ccd" else plain(stock=way == "plain")
        ccd_s, compress_s, nuc_s, cycles = timings["ccd"]
        ratios.append(timings["plain"] / ccd_s)
        same_attention_ratios.append(timings["same"] / ccd_s)
        shares.append(compress_s / ccd_s)
        nuc_shares.append(nuc_s / ccd_s)
        plain_speeds.append(len(ids) / timings["plain"])
        same_attention_speeds.append(len(ids) / timings["same"])
        ccd_speeds.append(len(ids) / ccd_s)
        print(
            f"| {dtype} | {run + 1} | {plain_speeds[-1]:.0f} | {same_attention_speeds[-1]:.0f} | {ccd_speeds[-1]:.0f} "
            f"| {ratios[-1]:.3f} | {same_attention_ratios[-1]:.3f} | {shares[-1]:.1%} | {nuc_shares[-1]:.1%} "
            f"| {os.getloadavg()[0]:.1f} |",
            flush=True,
        )
    return {
        "dtype": dtype,
        "tokens": len(ids),
        "pot_size": config.pot_size,
        "cycles": cycles,
        "runs": args.runs,
        "median_ratio": round(statistics.median(ratios), 3),
        "ratios": [round(r, 3) for r in ratios],
        # CCD against the same plain forward run on the reader's SDPA (core.hf_adapter.use_reader_sdpa): what CCD
        # itself costs, without what that attention saves over transformers' own
        "median_ratio_same_attention": round(statistics.median(same_attention_ratios), 3),
        "ratios_same_attention": [round(r, 3) for r in same_attention_ratios],
        "median_plain_tokens_per_s": round(statistics.median(plain_speeds), 1),
        "median_plain_same_attention_tokens_per_s": round(statistics.median(same_attention_speeds), 1),
        "median_ccd_tokens_per_s": round(statistics.median(ccd_speeds), 1),
        "median_compression_share": round(statistics.median(shares), 3),
        # the LM head over every read token and its log-softmax (the head alone is in plain's time as well)
        "median_nuc_share": round(statistics.median(nuc_shares), 3),
        "threads": torch.get_num_threads(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pot-size", type=int, default=4096)
    parser.add_argument("--nuc-unit", default=PotConfig.nuc_unit, choices=NUC_UNITS)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="measured one after the other, in one process")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: one per physical core)")
    args = parser.parse_args()

    threads = set_threads(args.threads)
    print(
        json.dumps(
            {
                "cpu": cpu_flags(),
                "threads": threads,
                "auto": dtype_name(resolve_dtype("auto", torch.device(args.device))),
            }
        )
    )
    print(
        "| dtype | run | plain tok/s | plain on the reader's SDPA | CCD tok/s | CCD / plain "
        "| CCD / plain on the reader's SDPA | compressions | NuC pass | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    summaries = []
    for name in args.dtypes.split(","):
        loaded = load_model(ModelSpec(device=args.device, dtype=name), data_home())
        summaries.append(measure(loaded, args))
        del loaded
    for summary in summaries:
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
