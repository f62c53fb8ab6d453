"""Peak process memory while reading 16K vs 128K tokens into a 4K pot: the pot keeps it flat.

    python -m benchmarks.read_memory [--lengths 16384,131072] [--model default]

Each length runs in a fresh subprocess so peaks do not mix; peak RSS comes from the kernel (ru_maxrss).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def measure(length: int, model: str, pot_size: int) -> dict:
    import torch

    from infinipot.app.niah import haystack_text
    from infinipot.core.config import PotConfig
    from infinipot.core.engine import Engine
    from infinipot.core.model import ModelSpec, load_model
    from infinipot.storage.paths import data_home

    loaded = load_model(ModelSpec(name=model, device="cpu"), data_home())
    engine = Engine(loaded, PotConfig(pot_size=pot_size, keep_size=pot_size // 2))
    text_ids = loaded.tokenizer(haystack_text(), add_special_tokens=False)["input_ids"]
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def chunks():
        produced = 0
        while produced < length:
            piece = text_ids[: min(2048, length - produced)]
            text_ids[:] = text_ids[len(piece) :] + piece  # rotate through the haystack
            produced += len(piece)
            yield piece

    started = time.perf_counter()
    with torch.inference_mode():
        pot = engine.read(chunks())
    return {
        "tokens": length,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_entries": pot.peak_entries,
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_before_read_mib": round(baseline / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16384,131072")
    parser.add_argument("--model", default="default")
    parser.add_argument("--pot-size", type=int, default=4096)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.model, args.pot_size)))
        return
    rows = []
    for length in (int(x) for x in args.lengths.split(",")):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.read_memory", "--child", str(length), "--model", args.model,
             "--pot-size", str(args.pot_size)],
            check=True, capture_output=True, text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("| tokens read | seconds | peak KV entries | peak RSS (MiB) |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row['tokens']} | {row['seconds']} | {row['peak_entries']} | {row['peak_rss_mib']} |")
    first, last = rows[0]["peak_rss_mib"], rows[-1]["peak_rss_mib"]
    print(f"peak RSS difference {last - first:+.1f} MiB ({(last - first) / first:+.1%})")


if __name__ == "__main__":
    main()
