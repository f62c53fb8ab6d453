"""Does arithmetic precision change what the pot keeps? The same passkey documents read in fp64, fp32 and bf16.

    python -m benchmarks.selection_numerics [--length 8192] [--depths 0.1,0.5,0.9] [--dtypes float64,float32,bfloat16]

"Numerics" is one of the suspects the baselines issue names for a missed passkey. The default model runs in
fp32 on CPU and in bf16 on a GPU; CaP attention, NuC cross-entropy and the top-k cut all follow that dtype.
Each document (`bench niah`'s, seed 0, trial 0) is read once per dtype with the default settings; the first
dtype is the reference. One JSON line per (depth, dtype): the share of the reference's kept entries this
read kept too (mean and worst over (layer, KV head) slots), whether every slot held the key, and the answer.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from infinipot.app.bench.haystack import haystack_ids, key_occurrences, passkey_document, passkey_key
from infinipot.app.bench.needle import QUESTION, found_key
from infinipot.app.bench.niah import document_chunks, key_kept
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.storage.paths import data_home


def kept_overlap(reference: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """(L, H_kv) share of the reference's kept stream indices that `other` kept too; both (L, H_kv, n)."""
    top = int(max(reference.max(), other.max())) + 1
    held = torch.zeros(*reference.shape[:2], top, dtype=torch.bool)
    held.scatter_(-1, other, True)  # (L, H_kv, top): which stream indices `other` kept
    return held.gather(-1, reference).float().mean(-1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=8192, help="document tokens")
    parser.add_argument("--depths", default="0.1,0.5,0.9")
    parser.add_argument("--dtypes", default="float64,float32,bfloat16", help="the first is the reference")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    args = parser.parse_args()

    loaded = load_model(ModelSpec(device="cpu", dtype="float32"), data_home())  # cast per dtype below, from fp32
    tokenizer = loaded.tokenizer
    haystack = haystack_ids(tokenizer, args.length)
    dtypes = [getattr(torch, name) for name in args.dtypes.split(",")]
    for depth in (float(d) for d in args.depths.split(",")):
        key = passkey_key(0, args.length, depth, 0)
        document = passkey_document(tokenizer, haystack, args.length, depth, key)
        occurrences = key_occurrences(tokenizer, document, key)
        reference = None
        for dtype in dtypes:
            loaded.model.to(dtype)
            engine = Engine(loaded, PotConfig())
            started = time.perf_counter()
            pot = engine.read(document_chunks(document))
            seconds = time.perf_counter() - started
            answer = "".join(engine.answer(pot, QUESTION, args.max_new_tokens)).strip()
            if reference is None:
                reference = pot.origin
            overlap = kept_overlap(reference, pot.origin)
            line = {
                "length": args.length,
                "depth": depth,
                "dtype": str(dtype).removeprefix("torch."),
                "kept_like_reference_mean": round(overlap.mean().item(), 4),
                "kept_like_reference_worst": round(overlap.min().item(), 4),
                "key_kept": key_kept(pot, occurrences),
                "found": found_key(answer, key),
                "answer": answer,
                "cycles": pot.cycles,
                "read_seconds": round(seconds, 1),
            }
            print(json.dumps(line), flush=True)
    loaded.model.to(torch.float32)


if __name__ == "__main__":
    main()
