"""Two ways of decoding one token, timed in turn on the default model, with the same tokens and logits checked:
what benchmarks.one_row_products and benchmarks.one_token_decoder share.

A way is chosen by `switch(model, second)`: False sets the first way, True the second; `restore(model)` puts the
model back as loaded. Decoding and the 100K pot's first token are timed `--rounds` times, the two ways taking
turns, so a slower spell of a shared machine falls on both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from infinipot.app.service import DocumentService
from infinipot.core import hf_adapter
from infinipot.core.generate import decode_one_token, prefill

Switch = Callable[[torch.nn.Module, bool], None]


def decode(model, prompt: int, tokens: int) -> tuple[float, list[int], torch.Tensor]:
    """(median seconds per decoded token, the tokens, the last logits (V,)), decoded as core.generate decodes."""
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


def ttft_both_ways(
    service: DocumentService, rounds: int, switch: Switch, restore: Callable[[torch.nn.Module], None]
) -> dict[bool, list[float]]:
    """Seconds to the first answer token on the stored 100K-token pot (benchmarks.stored_pot_ttft's second question,
    the warm app's default answer mode), each way."""
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
        for second in (False, True):
            switch(model, second)
            seconds[second].append(first_token_seconds(service, report.doc_id, SECOND_QUESTION))
    restore(model)
    return seconds


def compare(
    doc: str,
    ways: tuple[str, str],
    switch: Switch,
    restore: Callable[[torch.nn.Module], None],
    applies: Callable[[torch.nn.Module], bool] = lambda model: True,
) -> None:
    """Parse the benchmark's arguments (`doc`: its module docstring) and print both ways' figures; a dtype whose
    model `applies` refuses is reported and skipped."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "infinipot-stored-pot-bench")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=40)
    parser.add_argument("--prompt", type=int, default=750)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--ttft", action="store_true", help="also time the 100K pot's first answer token both ways")
    args = parser.parse_args()
    os.environ["INFINIPOT_HOME"] = str(args.home)
    service = DocumentService(home=args.home, device="cpu")
    print(
        f"torch threads {torch.get_num_threads()}; prompt {args.prompt} tokens, {args.tokens} decoded, "
        f"{args.rounds} rounds"
    )
    for dtype in [name.strip() for name in args.dtypes.split(",") if name.strip()]:
        model = service.model("default", dtype).model
        if not applies(model):
            print(f"{dtype}: {ways[1]} does not apply to this model")
            continue
        seconds: dict[bool, list[float]] = {True: [], False: []}
        last: dict[bool, tuple[list[int], torch.Tensor]] = {}
        for _ in range(args.rounds):
            for second in (False, True):
                switch(model, second)
                per_token, chosen, logits = decode(model, args.prompt, args.tokens)
                seconds[second].append(per_token * 1e3)
                last[second] = (chosen, logits)
        restore(model)
        first, second = statistics.median(seconds[False]), statistics.median(seconds[True])
        same = last[True][0] == last[False][0] and torch.equal(last[True][1], last[False][1])
        print(
            f"{dtype}: ms per decoded token, {ways[0]} {first:.1f} {[round(s, 1) for s in seconds[False]]}, "
            f"{ways[1]} {second:.1f} {[round(s, 1) for s in seconds[True]]}; ratio {second / first:.2f}; "
            f"same tokens and logits: {same}"
        )
    if args.ttft:
        seconds = ttft_both_ways(service, args.rounds, switch, restore)
        for second, label in enumerate(ways):
            values = [round(s, 2) for s in seconds[bool(second)]]
            print(
                f"100K pot, seconds to the first answer token, {label}: median {statistics.median(values):.2f} {values}"
            )
