"""Does a change to the reader change what the pot keeps? Pots read by two versions of the code, or two piece modes.

    python -m benchmarks.same_pots read --out DIR [--length 16384] [--depths 0.1,0.5,0.9] [--dtypes float32,bfloat16]
                                        [--fixed-shapes]
    python -m benchmarks.same_pots compare DIR_A DIR_B

`read` reads `bench niah`'s passkey documents (seed 0, trial 0) with the bundled model and the default pot, in
pieces cut where the document's chunks end (as a CPU reads) or on the grid a GPU reads on (`--fixed-shapes`,
core.pieces), answers the passkey question, and saves each pot's provenance with the answer under DIR. Run it from
two checkouts (before and after a change) or in both modes, then `compare`: one JSON line per (dtype, depth) with
the share of A's kept entries that B kept in the same (layer, KV head) slot (mean and worst slot), the slots whose
kept entries are exactly A's, the largest key difference, and both answers.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from infinipot.app.bench.haystack import haystack_ids, passkey_document, passkey_key
from infinipot.app.bench.needle import QUESTION, found_key
from infinipot.app.bench.niah import document_chunks
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.core.precision import set_threads
from infinipot.storage.paths import data_home

from .selection_numerics import kept_overlap


def read_pots(out: Path, length: int, depths: list[float], dtypes: list[str], fixed_shapes: bool, tokens: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for dtype in dtypes:
        loaded = load_model(ModelSpec(device="cpu", dtype=dtype), data_home())
        engine = Engine(loaded, PotConfig())
        haystack = haystack_ids(loaded.tokenizer, length)
        for depth in depths:
            key = passkey_key(0, length, depth, 0)
            document = passkey_document(loaded.tokenizer, haystack, length, depth, key)
            started = time.perf_counter()
            reader = engine.new_reader(fixed_shapes=True) if fixed_shapes else engine.new_reader()  # older code too
            reader.start(engine.prefix_ids)
            for chunk in document_chunks(document):
                reader.feed(chunk)
            pot = reader.finish()
            seconds = time.perf_counter() - started
            answer = "".join(engine.answer(pot, QUESTION, tokens)).strip()
            torch.save(
                {
                    "tensors": {name: t.clone() for name, t in pot.tensors().items()},
                    "counters": pot.counters(),
                    "answer": answer,
                    "found": found_key(answer, key),
                    "read_seconds": round(seconds, 2),
                    "fixed_shapes": fixed_shapes,
                },
                out / f"{dtype}-{depth}.pt",
            )
            print(json.dumps({"dtype": dtype, "depth": depth, "answer": answer, "seconds": round(seconds, 2)}))


def compare(first: Path, second: Path) -> None:
    for path in sorted(first.glob("*.pt")):
        if not (second / path.name).exists():  # read by one side only
            continue
        a, b = torch.load(path), torch.load(second / path.name)
        ta, tb = a["tensors"], b["tensors"]
        overlap = kept_overlap(ta["origin"], tb["origin"])  # (L, H_kv)
        layers = sum(1 for name in ta if name.startswith("keys."))
        same_slots = [(ta["origin"][layer] == tb["origin"][layer]).all(-1) for layer in range(layers)]
        key_gap = max(float((ta[f"keys.{i}"].float() - tb[f"keys.{i}"].float()).abs().max()) for i in range(layers))
        same_keys = all(torch.equal(ta[f"keys.{i}"], tb[f"keys.{i}"]) for i in range(layers))
        print(
            json.dumps(
                {
                    "pot": path.stem,
                    "counters_equal": a["counters"] == b["counters"],
                    "kept_same_mean": round(float(overlap.mean()), 4),
                    "kept_same_worst_slot": round(float(overlap.min()), 4),
                    "slots_identical": f"{int(torch.stack(same_slots).sum())}/{torch.stack(same_slots).numel()}",
                    "keys_bitwise_equal": same_keys,
                    "largest_key_difference": key_gap if ta["origin"].shape == tb["origin"].shape else None,
                    "answers": [a["answer"], b["answer"]],
                    "found": [a["found"], b["found"]],
                    "read_seconds": [a["read_seconds"], b["read_seconds"]],
                }
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    reading = commands.add_parser("read")
    reading.add_argument("--out", type=Path, required=True)
    reading.add_argument("--length", type=int, default=16384, help="document tokens")
    reading.add_argument("--depths", default="0.1,0.5,0.9")
    reading.add_argument("--dtypes", default="float32,bfloat16")
    reading.add_argument("--fixed-shapes", action="store_true", help="pieces on the grid (as on a GPU)")
    reading.add_argument("--max-new-tokens", type=int, default=16)
    reading.add_argument("--threads", type=int, default=None, help="CPU threads (default: one per physical core)")
    comparing = commands.add_parser("compare")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "compare":
        compare(args.first, args.second)
        return
    set_threads(args.threads)
    depths = [float(d) for d in args.depths.split(",")]
    read_pots(args.out, args.length, depths, args.dtypes.split(","), args.fixed_shapes, args.max_new_tokens)


if __name__ == "__main__":
    main()
