"""Benchmark: stream a generated multi-GB log through ingest and tokenization; report MB/s and peak memory.

    .venv/bin/python benchmarks/ingest_bench.py --size-gb 1

Not a test: it prints one Markdown table row with the figures. By default the
tokenizer is a byte-level BPE (8k vocabulary) trained in-process on the start of the
log, wrapped like the app's; pass --tokenizer DIR_OR_JSON to use a local real one.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

_LEVELS = ["INFO"] * 6 + ["DEBUG"] * 3 + ["WARN", "ERROR"]
_COMPONENTS = ["http", "db.pool", "auth", "scheduler", "cache", "billing", "search.indexer", "mailer"]
_WORDS = (
    "request served user login failed cache miss database timeout connection reset retry scheduled "
    "worker started job finished payload accepted rejected quota exceeded token refreshed session "
    "expired upstream latency high replica lag checkpoint written"
).split()


def _line(rng: random.Random, number: int, t0: float) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + number * 0.01))
    kind = rng.random()
    head = f"{stamp}.{number % 1000:03d}Z {rng.choice(_LEVELS):5s} [{rng.choice(_COMPONENTS)}] "
    if kind < 0.6:
        body = (
            f"{' '.join(rng.choices(_WORDS, k=rng.randint(3, 9)))} id={rng.getrandbits(48):012x} "
            f"took {rng.random() * 900:.2f}ms ip=10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}"
        )
    elif kind < 0.9:
        body = (
            f"GET /api/v2/{rng.choice(_WORDS)}/{rng.randrange(10**6)}?page={rng.randrange(50)} "
            f"status={rng.choice([200, 200, 200, 201, 304, 404, 500])} bytes={rng.randrange(10**5)} "
            f'ua="Mozilla/5.0 (X11; Linux x86_64) rv:{rng.randrange(90, 130)}.0"'
        )
    elif kind < 0.99:
        fields = ", ".join(f'"{rng.choice(_WORDS)}": {rng.randrange(10**4)}' for _ in range(rng.randint(2, 8)))
        body = f"event={{{fields}}}"
    else:
        frames = "".join(
            f"\n    at com.example.{rng.choice(_COMPONENTS)}.Handler.run(Handler.java:{rng.randrange(900)})"
            for _ in range(rng.randint(3, 12))
        )
        body = f"java.lang.IllegalStateException: {' '.join(rng.choices(_WORDS, k=5))}{frames}"
    return head + body + "\n"


def generate_log(path: Path, size_bytes: int, compress: bool) -> None:
    rng = random.Random(1234)
    t0 = 1_714_521_600.0
    opener = gzip.open(path, "wt", encoding="utf-8", compresslevel=1) if compress else open(path, "w", encoding="utf-8")
    written = number = 0
    with opener as out:
        while written < size_bytes:
            batch = "".join(_line(rng, number + i, t0) for i in range(20_000))
            out.write(batch)
            number += 20_000
            written += len(batch)


def byte_bpe(lines: list[str], vocab_size: int, special_tokens: list[str], unk_token: str | None = None):
    """A byte-level BPE tokenizer (the `tokenizers` library's) trained in-process on `lines`: no download. Also the
    tests' tiny tokenizers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token=unk_token))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=special_tokens,
        show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer)
    return tokenizer


def make_tokenizer(spec: str, sample_path: Path):
    if spec != "tiny":
        from transformers import AutoTokenizer, PreTrainedTokenizerFast

        path = Path(spec)
        if path.is_file():
            return PreTrainedTokenizerFast(tokenizer_file=str(path))
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    opener = gzip.open if sample_path.suffix == ".gz" else open
    with opener(sample_path, "rt", encoding="utf-8") as handle:
        sample = handle.read(2_000_000)
    tokenizer = byte_bpe(sample.splitlines(), 8192, ["<|endoftext|>"])
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return tokenizer
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--tokenizer", default="tiny", help="'tiny' or a local tokenizer.json / model directory")
    parser.add_argument("--log", type=Path, help="reuse (or keep) the generated log at this path")
    parser.add_argument("--gzip", action="store_true", help="benchmark a .log.gz instead")
    parser.add_argument("--chunk-tokens", type=int, default=2048)
    args = parser.parse_args()

    from infinipot.ingest import open_document

    workdir = tempfile.TemporaryDirectory(prefix="ingest-bench-")
    log = args.log or Path(workdir.name) / ("bench.log.gz" if args.gzip else "bench.log")
    if not log.exists():
        started = time.perf_counter()
        generate_log(log, int(args.size_gb * 1e9), args.gzip)
        print(
            f"generated {log} ({log.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - started:.0f}s",
            file=sys.stderr,
        )
    tokenizer = make_tokenizer(args.tokenizer, log)
    rss_before = peak_rss_mb()

    last_report = [0.0]

    def progress(p) -> None:
        now = time.perf_counter()
        if now - last_report[0] > 30 or p.done:
            last_report[0] = now
            print(
                f"  {p.fraction:6.1%}  {p.bytes_done / 1e6:8,.0f}/{p.bytes_total / 1e6:,.0f} MB  "
                f"{p.tokens_done:,}/{p.tokens_estimated:,} tokens  peak RSS {peak_rss_mb():,.0f} MB",
                file=sys.stderr,
            )

    document = open_document(log)
    started = time.perf_counter()
    stream = document.token_stream(tokenizer, chunk_tokens=args.chunk_tokens, progress=progress)
    tokens = sum(len(chunk) for chunk in stream)
    elapsed = time.perf_counter() - started
    map_path = Path(workdir.name) / "bench.map.npz"
    stream.location_map.save(map_path)

    size_mb = document.size_bytes / 1e6
    print(
        "| file | size MB | tokens | seconds | MB/s | tokens/s | peak RSS MB (before ingest) | map runs "
        "| map MB (RAM / disk) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {log.name} | {size_mb:,.0f} | {tokens:,} | {elapsed:,.0f} | {size_mb / elapsed:.2f} "
        f"| {tokens / elapsed:,.0f} "
        f"| {peak_rss_mb():,.0f} ({rss_before:,.0f}) | {stream.location_map.runs:,} "
        f"| {stream.location_map.nbytes / 1e6:.1f} / {map_path.stat().st_size / 1e6:.1f} |"
    )
    print(f"cores={os.cpu_count()} tokenizer={args.tokenizer} chunk_tokens={args.chunk_tokens}", file=sys.stderr)
    workdir.cleanup()


if __name__ == "__main__":
    main()
