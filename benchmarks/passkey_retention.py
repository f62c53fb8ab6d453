"""Why a passkey is or is not found: how many of the needle's digit tokens survive per layer and KV head.

    python -m benchmarks.passkey_retention [--length 8000] [--depths 0.1,0.5] [--keep 2048] [--ratio 0.5]
        [--nuc-unit sentence|word-edges|word|token] [--capq] [--focus 1024]

Reads one haystack per depth with the default model, then prints one JSON line per depth: the answer, whether
the key was found, the share of (layer, head) slots holding each of the key's first five digits, and that
share for every third layer. Retention near 1 with a wrong answer points at the model; low retention at
the selection.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

from infinipot.app.bench.needle import QUESTION, found_key, haystack_text, make_passkey_case, needle_sentence
from infinipot.core.config import NUC_UNITS, PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.storage.paths import data_home


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=8000, help="haystack tokens")
    parser.add_argument("--depths", default="0.1,0.5,0.9")
    parser.add_argument("--pot-size", type=int, default=4096)
    parser.add_argument("--keep", type=int, default=2048)
    parser.add_argument("--method", default="infinipot")
    parser.add_argument("--ratio", type=float, default=0.5, help="NuC share alpha")
    parser.add_argument("--nuc-unit", default=PotConfig.nuc_unit, choices=NUC_UNITS, help="what NuC scores")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--capq", action="store_true", help="read with the question in the catalyst prompt")
    parser.add_argument(
        "--focus", type=int, default=None, help="also answer from a copy of N entries, question as catalyst"
    )
    args = parser.parse_args()

    loaded = load_model(ModelSpec(device="cpu"), data_home())
    tokenizer = loaded.tokenizer
    haystack = haystack_text()
    question_cap = {"cap_mode": "question", "question": QUESTION} if args.capq else {}
    config = PotConfig(
        pot_size=args.pot_size,
        keep_size=args.keep,
        method=args.method,
        nuc_ratio=args.ratio,
        nuc_unit=args.nuc_unit,
        **question_cap,
    )
    engine = Engine(loaded, config)
    for depth in (float(d) for d in args.depths.split(",")):
        seed = args.seed * 100 + int(depth * 10)
        case = make_passkey_case(tokenizer, args.length, depth, seed=seed, haystack=haystack)
        ids = tokenizer(case.text, add_special_tokens=False)["input_ids"]
        needle = needle_sentence(case.key)
        before = tokenizer(case.text[: case.text.index(needle)], add_special_tokens=False)["input_ids"]
        needle_ids = tokenizer(needle, add_special_tokens=False)["input_ids"]
        start = len(before) + len(engine.prefix_ids)  # stream index of the needle's first token
        digits = [start + i for i, t in enumerate(needle_ids) if tokenizer.decode([t]).strip().isdigit()][:5]
        started = time.perf_counter()
        pot = engine.read([ids[i : i + 2048] for i in range(0, len(ids), 2048)])
        read_seconds = time.perf_counter() - started
        kept = torch.stack([(pot.origin == d).any(-1) for d in digits], -1).float()  # (L, H_kv, 5)
        per_layer = kept.mean((1, 2))  # (L,)
        stats = AnswerStats()
        answer = "".join(engine.answer(pot, QUESTION, max_new_tokens=12, stats=stats)).strip()
        print(
            json.dumps(
                {
                    "length": args.length,
                    "depth": depth,
                    "key": case.key,
                    "found": found_key(answer, case.key),
                    "answer": answer,
                    "digits_kept": round(kept.mean().item(), 3),
                    "kept_every_third_layer": [round(x, 2) for x in per_layer.tolist()[::3]],
                    "cycles": pot.cycles,
                    "answer_entries": stats.answer_entries,
                    **focused_answer(engine, pot, case.key, args.focus),
                    "read_seconds": round(read_seconds, 1),
                }
            ),
            flush=True,
        )


def focused_answer(engine: Engine, pot, key: str, focus: int | None) -> dict:
    """The answer from a copy of the pot distilled to `focus` entries with the question as catalyst."""
    if focus is None:
        return {}
    answer = "".join(engine.answer(pot, QUESTION, max_new_tokens=12, focus=focus)).strip()
    return {"focus": focus, "focused_found": found_key(answer, key), "focused_answer": answer}


if __name__ == "__main__":
    main()
