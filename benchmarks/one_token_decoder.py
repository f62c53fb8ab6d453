"""Decoding speed with the lean one-token decoder (core.one_token) against the model's own forward, and the same
tokens and logits.

    python -m benchmarks.one_token_decoder [--home DIR] [--rounds 6] [--tokens 40] [--prompt 750]
        [--dtypes bfloat16,float32] [--ttft]

--home defaults to infinipot-stored-pot-bench in the system's temp folder (where benchmarks.stored_pot_ttft keeps
the converted default model). For each dtype the default model reads a `--prompt`-token prompt and decodes
`--tokens` tokens greedily, `--rounds` times through transformers' forward and through core.one_token, in turn, so
a slower spell of a shared machine falls on both. Prints the median milliseconds per decoded token of each and
whether both decoded the same tokens with bit-identical last logits.

--ttft also times the second question of benchmarks.stored_pot_ttft on the 100K-token pot it stored under --home
(run it first), in the warm app's default answer mode, `--rounds` times each way in turn: that question's answer is
checked against 29 tokens the writer decodes (core.grounded_answer), so decoding is part of its first token.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch

from benchmarks.one_row_products import decode
from infinipot.app.service import DocumentService
from infinipot.core import generate, one_token

WAYS = {False: "model's forward", True: "one-token decoder"}


@contextmanager
def decoding_way(lean: bool):
    """Decode through core.one_token (True) or through transformers' forward (False)."""
    previous = generate.decoded_hidden
    generate.decoded_hidden = one_token.decoded_hidden if lean else (lambda *args: None)
    try:
        yield
    finally:
        generate.decoded_hidden = previous


def ttft_both_ways(service: DocumentService, rounds: int) -> dict[bool, list[float]]:
    """Seconds to the first answer token on the stored 100K-token pot, each way."""
    from benchmarks.stored_pot_ttft import FIRST_QUESTION, SECOND_QUESTION, first_token_seconds
    from infinipot.core.config import PotConfig

    path = service.library.home / "documents" / "haystack-100000.txt"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run python -m benchmarks.stored_pot_ttft first")
    report = service.read(path, PotConfig(), on_progress=None)
    first_token_seconds(service, report.doc_id, FIRST_QUESTION)
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(rounds):
        for lean in (False, True):
            with decoding_way(lean):
                seconds[lean].append(first_token_seconds(service, report.doc_id, SECOND_QUESTION))
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
    service = DocumentService(home=args.home, device="cpu")
    print(
        f"torch threads {torch.get_num_threads()}; prompt {args.prompt} tokens, {args.tokens} decoded, "
        f"{args.rounds} rounds"
    )
    for dtype in [name.strip() for name in args.dtypes.split(",") if name.strip()]:
        model = service.model("default", dtype).model
        if one_token.one_token_decoder(model) is None:
            print(f"{dtype}: the one-token decoder does not apply to this model")
            continue
        seconds: dict[bool, list[float]] = {True: [], False: []}
        last: dict[bool, tuple[list[int], torch.Tensor]] = {}
        for _ in range(args.rounds):
            for lean in (False, True):
                with decoding_way(lean):
                    per_token, chosen, logits = decode(model, args.prompt, args.tokens)
                seconds[lean].append(per_token * 1e3)
                last[lean] = (chosen, logits)
        forward, lean = statistics.median(seconds[False]), statistics.median(seconds[True])
        same = last[True][0] == last[False][0] and torch.equal(last[True][1], last[False][1])
        print(
            f"{dtype}: ms per decoded token, {WAYS[False]} {forward:.1f} {[round(s, 1) for s in seconds[False]]}, "
            f"{WAYS[True]} {lean:.1f} {[round(s, 1) for s in seconds[True]]}; ratio {lean / forward:.2f}; "
            f"same tokens and logits: {same}"
        )
    if args.ttft:
        seconds = ttft_both_ways(service, args.rounds)
        for lean, label in WAYS.items():
            values = [round(s, 2) for s in seconds[lean]]
            print(
                f"100K pot, seconds to the first answer token, {label}: median {statistics.median(values):.2f} {values}"
            )


if __name__ == "__main__":
    main()
