"""Shared fixtures for the ingest tests: fixture paths, the fixture builders and a tiny local tokenizer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

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
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_end|>"],
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 5, trainer)
    return tokenizer


@pytest.fixture(scope="session")
def tokenizer(backend_tokenizer):
    """The tiny tokenizer wrapped the way the app passes tokenizers (transformers fast tokenizer)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=backend_tokenizer, eos_token="<|endoftext|>")
