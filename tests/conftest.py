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
    from tiny_models import save_model_folder  # transformers loads only for the tests that need it

    return save_model_folder(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture
def document(tmp_path):
    """A 60-line text document for CLI tests."""
    from tiny_models import write_notes

    return write_notes(tmp_path / "notes.txt", lines=60)
