"""Does the ride-along change what the pot keeps? The same passkey documents read both ways, per dtype.

    python -m benchmarks.ride_along_numerics [--length 16384] [--depths 0.1,0.5,0.9] [--dtypes float32,bfloat16]

The reader takes the catalyst's attention in the forward pass that fills the pot, on the reader's SDPA
(core.hf_adapter.use_reader_sdpa), where it used to run a catalyst pass of its own with eager attention on
transformers' SDPA. The two compute the same scores in different orders (fp32 softmax weights from the model's
queries and keys, against eager's scores in the model's dtype), so near-ties may fall the other way. Each
document (`bench niah`'s, seed 0, trial 0) is read both ways per dtype; one JSON line per (depth, dtype): the
share of the catalyst-pass pot's kept entries the ride-along pot kept too (mean and worst over (layer, KV head)
slots), the share of slots that held the key in each, each answer, and the read seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator

from infinipot.app.bench.haystack import haystack_ids, key_occurrences, passkey_document, passkey_key
from infinipot.app.bench.needle import QUESTION, found_key
from infinipot.app.bench.niah import document_chunks, key_kept
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.core.precision import set_threads
from infinipot.core.reader import ContinualReader
from infinipot.storage.paths import data_home

from .ccd_overhead import transformers_sdpa
from .selection_numerics import kept_overlap


@contextlib.contextmanager
def catalyst_passes(model) -> Iterator[None]:
    """The reader as it was: a catalyst pass of its own at every compression, the model on transformers' SDPA."""
    previous_rule = ContinualReader._catalyst_rides_along
    ContinualReader._catalyst_rides_along = lambda self: False
    try:
        with transformers_sdpa(model):
            yield
    finally:
        ContinualReader._catalyst_rides_along = previous_rule


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=16384, help="document tokens")
    parser.add_argument("--depths", default="0.1,0.5,0.9")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: one per physical core)")
    args = parser.parse_args()
    threads = set_threads(args.threads)
    for dtype in args.dtypes.split(","):
        loaded = load_model(ModelSpec(device="cpu", dtype=dtype), data_home())
        engine = Engine(loaded, PotConfig())  # moves the model to the reader's SDPA
        tokenizer = loaded.tokenizer
        haystack = haystack_ids(tokenizer, args.length)
        for depth in (float(d) for d in args.depths.split(",")):
            key = passkey_key(0, args.length, depth, 0)
            document = passkey_document(tokenizer, haystack, args.length, depth, key)
            occurrences = key_occurrences(tokenizer, document, key)
            results = {}
            for way in ("pass", "ridden"):
                with catalyst_passes(loaded.model) if way == "pass" else contextlib.nullcontext():
                    started = time.perf_counter()
                    pot = engine.read(document_chunks(document))
                    seconds = time.perf_counter() - started
                    answer = "".join(engine.answer(pot, QUESTION, args.max_new_tokens)).strip()
                results[way] = (pot, answer, seconds)
            overlap = kept_overlap(results["pass"][0].origin, results["ridden"][0].origin)  # (L, H_kv)
            record = {
                "dtype": dtype,
                "depth": depth,
                "tokens": args.length,
                "threads": threads,
                "cycles": results["ridden"][0].cycles,
                "kept_same_mean": round(float(overlap.mean()), 4),
                "kept_same_worst_slot": round(float(overlap.min()), 4),
            }
            for way, (pot, answer, seconds) in results.items():
                record[way] = {
                    "key_held": key_kept(pot, occurrences),
                    "found": found_key(answer, key),
                    "answer": answer,
                    "read_seconds": round(seconds, 2),
                }
            print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
