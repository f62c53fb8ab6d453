"""Shared fixtures: every test gets its own empty $INFINIPOT_HOME; a tiny model folder for service and CLI tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def infinipot_home(tmp_path, monkeypatch):
    home = tmp_path / "infinipot-home"
    monkeypatch.setenv("INFINIPOT_HOME", str(home))
    return home


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random-weight Llama saved as a Hugging Face folder, loadable with --model."""
    from tiny_models import build_model, tiny_tokenizer  # transformers loads only for the tests that need it

    path = tmp_path_factory.mktemp("tiny-llama")
    build_model("llama").save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return str(path)
