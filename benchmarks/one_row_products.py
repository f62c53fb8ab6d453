"""Decoding speed with one-row products as matrix-vector products (core.precision.one_row_products), and the same
tokens and logits as without.

    python -m benchmarks.one_row_products [--home DIR] [--rounds 6] [--tokens 40] [--prompt 750]
        [--dtypes bfloat16,float32] [--ttft]

--home defaults to infinipot-stored-pot-bench in the system's temp folder (where benchmarks.stored_pot_ttft keeps
the converted default model). For each dtype the default model reads a `--prompt`-token prompt and decodes
`--tokens` tokens greedily, `--rounds` times with the model's nn.Linear layers as they load (one-row products) and
as plain nn.Linear, in turn, so a slower spell of a shared machine falls on both. Prints the median milliseconds per
decoded token of each and whether both decoded the same tokens with bit-identical last logits.

--ttft also times the second question of benchmarks.stored_pot_ttft on the 100K-token pot it stored under --home
(run it first), in the warm app's default answer mode, `--rounds` times each way in turn.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from infinipot.app.service import DocumentService
from infinipot.core import generate, hf_adapter
from infinipot.core.generate import decode_one_token, prefill
from infinipot.core.precision import _OneRowLinear


def decode(model, prompt: int, tokens: int) -> tuple[float, list[int], torch.Tensor]:
    """(median seconds per decoded token, the tokens, the last logits (V,)), decoded the way core.generate decodes
    now (main below takes the model's forward: the one-token decoder, core.one_token, bypasses nn.Linear)."""
    cache = hf_adapter.new_cache()
    with torch.inference_mode():
        logits = prefill(model, cache, list(range(1000, 1000 + prompt)), 0)  # (V,)
        position, token, chosen, times = prompt, int(logits.argmax()), [], []
        for _ in range(tokens):
            started = time.perf_counter()
            logits = decode_one_token(model, cache, token, position)
            times.append(time.perf_counter() - started)
            chosen.append(token)
            position, token = position + 1, int(logits.argmax())
    return statistics.median(times), chosen, logits


def set_products(model, one_row: bool) -> None:
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.__class__ = _OneRowLinear if one_row else torch.nn.Linear


def ttft_both_ways(service: DocumentService, rounds: int) -> dict[bool, list[float]]:
    """Seconds to the first answer token on the stored 100K-token pot, with one-row products (True) and without."""
    from benchmarks.stored_pot_ttft import FIRST_QUESTION, SECOND_QUESTION, first_token_seconds
    from infinipot.core.config import PotConfig

    path = service.library.home / "documents" / "haystack-100000.txt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run python -m benchmarks.stored_pot_ttft first")
    report = service.read(path, PotConfig(), on_progress=None)
    model = service.model("default").model
    first_token_seconds(service, report.doc_id, FIRST_QUESTION)
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for one_row in (False, True):
            set_products(model, one_row)
            seconds[one_row].append(first_token_seconds(service, report.doc_id, SECOND_QUESTION))
    set_products(model, True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "infinipot-stored-pot-bench")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--prompt", type=int, default=750)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--ttft", action="store_true", help="also time the 100K pot's first answer token both ways")
    args = parser.parse_args()
    os.environ["INFINIPOT_HOME"] = str(args.home)
    generate.decoded_hidden = lambda *args: None  # the modules' products (benchmarks.one_token_decoder: the other)
    service = DocumentService(home=args.home, device="cpu")
    print(
        f"torch threads {torch.get_num_threads()}; prompt {args.prompt} tokens, {args.tokens} decoded, "
        f"{args.rounds} rounds"
    )
    for dtype in [name.strip() for name in args.dtypes.split(",") if name.strip()]:
        model = service.model("default", dtype).model
        seconds: dict[bool, list[float]] = {True: [], False: []}
        last: dict[bool, tuple[list[int], torch.Tensor]] = {}
        for _ in range(args.rounds):
            for one_row in (False, True):
                set_products(model, one_row)
                per_token, chosen, logits = decode(model, args.prompt, args.tokens)
                seconds[one_row].append(per_token * 1e3)
                last[one_row] = (chosen, logits)
        set_products(model, True)  # as loaded
        plain, one_row = statistics.median(seconds[False]), statistics.median(seconds[True])
        same = last[True][0] == last[False][0] and torch.equal(last[True][1], last[False][1])
        print(
            f"{dtype}: ms per decoded token, plain nn.Linear {plain:.1f} {[round(s, 1) for s in seconds[False]]}, "
            f"one-row products {one_row:.1f} {[round(s, 1) for s in seconds[True]]}; ratio {one_row / plain:.2f}; "
            f"same tokens and logits: {same}"
        )
    if args.ttft:
        seconds = ttft_both_ways(service, args.rounds)
        for one_row, label in ((False, "plain nn.Linear"), (True, "one-row products")):
            values = [round(s, 2) for s in seconds[one_row]]
            print(
                f"100K pot, seconds to the first answer token, {label}: median {statistics.median(values):.2f} {values}"
            )


if __name__ == "__main__":
    main()
