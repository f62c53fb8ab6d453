"""What the NuC pass costs: the LM head over every read token and the log-softmax that turns it into surprise.

    python -m benchmarks.nuc_pass [--tokens 1024] [--rows 128,256,1024] [--dtypes bfloat16,float32] [--runs 3]

For one forward piece of hidden states (random, the cost does not depend on them) it times, per dtype and slice
size (rows of logits computed at once; the reader uses core.reader._NOVELTY_ROWS): the LM head alone (what a
plain forward pays too), the head plus a fused fp32 log-softmax, the head plus the log-softmax in the model's dtype
(torch sums in fp32 and rounds the output), the same into two buffers made once (what the reader runs: fresh
(rows, V) tensors per slice cost page faults), and the head plus an fp32 log-sum-exp of each target alone.
Medians over --runs, in milliseconds per --tokens tokens, one JSON line each, with the largest gap of each
way's scores from the fp32 log-softmax's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from infinipot.core import hf_adapter
from infinipot.core.model import ModelSpec, load_model
from infinipot.core.precision import set_threads
from infinipot.storage.paths import data_home


def scores_by_log_softmax(model, hidden: torch.Tensor, targets: torch.Tensor, rows: int) -> torch.Tensor:
    out = torch.empty(len(targets))
    for start in range(0, len(targets), rows):
        logprobs = torch.log_softmax(hf_adapter.vocab_logits(model, hidden[start : start + rows]), dim=-1)  # (r, V)
        out[start : start + rows] = -logprobs.gather(1, targets[start : start + rows, None])[:, 0]
    return out


def scores_by_log_softmax_in_dtype(model, hidden: torch.Tensor, targets: torch.Tensor, rows: int) -> torch.Tensor:
    """The log-softmax in the model's dtype (torch sums in fp32, rounds the output), in fresh tensors per slice."""
    out = torch.empty(len(targets))
    for start in range(0, len(targets), rows):
        logits = hf_adapter.vocab_logits(model, hidden[start : start + rows], upcast=False)  # (r, V)
        out[start : start + rows] = (
            -torch.log_softmax(logits, dim=-1).gather(1, targets[start : start + rows, None])[:, 0].float()
        )
    return out


def scores_into_reused_buffers(model, hidden: torch.Tensor, targets: torch.Tensor, rows: int) -> torch.Tensor:
    """What the reader runs now: the same, into two (rows, V) buffers made once instead of fresh tensors per slice."""
    out = torch.empty(len(targets))
    vocab = model.get_output_embeddings().weight.shape[0]
    logits_buffer, logprobs_buffer = torch.empty(2, rows, vocab, dtype=hidden.dtype)
    for start in range(0, len(targets), rows):
        count = len(targets[start : start + rows])
        logits = hf_adapter.vocab_logits_into(model, hidden[start : start + rows], logits_buffer[:count])
        logprobs = torch.log_softmax(logits, dim=-1, out=logprobs_buffer[:count])
        out[start : start + rows] = -logprobs.gather(1, targets[start : start + rows, None])[:, 0].float()
    return out


def scores_by_logsumexp(model, hidden: torch.Tensor, targets: torch.Tensor, rows: int) -> torch.Tensor:
    out = torch.empty(len(targets))
    for start in range(0, len(targets), rows):
        logits = hf_adapter.vocab_logits(model, hidden[start : start + rows])  # (r, V) fp32
        picked = logits.gather(1, targets[start : start + rows, None])[:, 0]
        out[start : start + rows] = torch.logsumexp(logits, dim=-1) - picked
    return out


def head_only(model, hidden: torch.Tensor, targets: torch.Tensor, rows: int) -> None:
    for start in range(0, len(targets), rows):
        model.get_output_embeddings()(hidden[start : start + rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--rows", default="128,256,1024")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    threads = set_threads(args.threads)
    for name in args.dtypes.split(","):
        loaded = load_model(ModelSpec(device="cpu", dtype=name), data_home())
        generator = torch.Generator().manual_seed(0)
        hidden = torch.randn(args.tokens, loaded.model.config.hidden_size, generator=generator).to(loaded.dtype)
        targets = torch.randint(0, loaded.model.config.vocab_size, (args.tokens,), generator=generator)
        with torch.inference_mode():
            for rows in (int(r) for r in args.rows.split(",")):
                timings = {}
                ways = (
                    head_only,
                    scores_by_log_softmax,
                    scores_by_log_softmax_in_dtype,
                    scores_into_reused_buffers,
                    scores_by_logsumexp,
                )
                for way in ways:
                    seconds = []
                    for _ in range(args.runs):
                        started = time.perf_counter()
                        way(loaded.model, hidden, targets, rows)
                        seconds.append(time.perf_counter() - started)
                    timings[way.__name__] = round(statistics.median(seconds) * 1000, 1)
                gap = (
                    (
                        scores_by_log_softmax(loaded.model, hidden, targets, rows)
                        - scores_by_logsumexp(loaded.model, hidden, targets, rows)
                    )
                    .abs()
                    .max()
                )
                record = {"dtype": name, "rows": rows, "tokens": args.tokens, "threads": threads, "ms": timings}
                print(json.dumps({**record, "max_score_gap": float(gap)}), flush=True)


if __name__ == "__main__":
    main()
