"""Shared fixtures for the ingest tests: fixture paths, the fixture builders and a tiny local tokenizer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks.ingest_bench import byte_bpe

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"

_CORPUS = [
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "Chapter One: The Beginning. Second page, fourth page, fifth and last page.",
    "Quarterly Report. Introduction. This report covers the first quarter. Region North South Total.",
    "2024-05-01T12:00:00Z INFO worker-0 handled request 0",
    "caf\u00e9 na\u00efve Z\u00fcrich \u00a3100 se\u00f1or",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u65e5\u672c\u8a9e",
]


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def builders():
    """The fixture generator module, for building damaged variants in tmp_path."""
    spec = importlib.util.spec_from_file_location("ingest_make_fixtures", FIXTURES / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def backend_tokenizer():
    """A byte-level BPE tokenizer trained in-process on a few sentences (no downloads)."""
    return byte_bpe(_CORPUS * 5, 400, ["<|endoftext|>", "<|im_end|>"])


@pytest.fixture(scope="session")
def tokenizer(backend_tokenizer):
    """The tiny tokenizer wrapped the way the app passes tokenizers (transformers fast tokenizer)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=backend_tokenizer, eos_token="<|endoftext|>")
