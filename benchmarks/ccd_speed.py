"""Reading throughput of CCD against a plain chunked forward of the same chunk length, in one run.

    python -m benchmarks.ccd_speed [--tokens 12288] [--repeats 3] [--model default]

Both read the same tokens with the same model on the same machine; the plain forward keeps the newest
|M| - |P| entries with no scoring (a sliding window, so its attention cost matches). Prints a markdown table
with medians over the repeats and the ratio CCD / plain (goal >= 0.85).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from infinipot.app.niah import haystack_text
from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.storage.paths import data_home


@torch.inference_mode()
def plain_chunked_forward(model, ids: list[int], window: int, chunk: int) -> None:
    """The model's own forward (with logits) over fixed chunks, trimming the cache to the newest `window`."""
    cache = hf_adapter.new_cache()
    for start in range(0, len(ids), chunk):
        piece = torch.tensor([ids[start : start + chunk]])
        model(input_ids=piece, past_key_values=cache, use_cache=True)
        excess = hf_adapter.cache_length(cache) + chunk - window
        if excess > 0:
            layers = [(k[:, :, excess:], v[:, :, excess:]) for k, v in hf_adapter.cache_layers(cache)]
            cache = hf_adapter.cache_from_layers(layers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=12288)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="default")
    parser.add_argument("--pot-size", type=int, default=4096)
    args = parser.parse_args()

    loaded = load_model(ModelSpec(name=args.model, device="cpu"), data_home())
    config = PotConfig(pot_size=args.pot_size, keep_size=args.pot_size // 2)
    engine = Engine(loaded, config)
    ids = loaded.tokenizer(haystack_text(), add_special_tokens=False)["input_ids"][: args.tokens]
    chunk = config.pot_size - config.keep_size - len(engine.catalyst_ids)
    window = config.pot_size - len(engine.catalyst_ids)
    ccd, plain = [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        plain_chunked_forward(loaded.model, ids, window, min(chunk, config.forward_tokens))
        plain.append(len(ids) / (time.perf_counter() - started))
        started = time.perf_counter()
        engine.read([ids])
        ccd.append(len(ids) / (time.perf_counter() - started))
    ccd_median, plain_median = statistics.median(ccd), statistics.median(plain)
    print("| model | tokens | pot | plain chunked forward (tok/s) | CCD (tok/s) | CCD / plain |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {loaded.identity} | {len(ids)} | {config.pot_size} | {plain_median:.0f} | {ccd_median:.0f} "
        f"| {ccd_median / plain_median:.2f} |"
    )
    print(f"runs (tok/s): plain {[round(x) for x in plain]}, ccd {[round(x) for x in ccd]}")


if __name__ == "__main__":
    main()
