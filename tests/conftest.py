"""Shared fixtures: every test gets its own empty $INFINIPOT_HOME; a tiny model folder for service and CLI tests.

Tests marked `integration` (the bundled default model) are also `slow`: `make test-fast` (-m "not slow") leaves
out servers, browsers, subprocesses and the real model.
"""

from __future__ import annotations

import os

import pytest

# One torch thread: the tiny models' ops are microseconds, and on a 2-core machine shared with other work a second
# thread makes every op wait for it (the fast suite ran 4-6x slower). Set before torch loads; subprocesses inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
# `--dtype auto` is bf16 on CPUs with native bf16 and fp32 elsewhere: tests pin fp32 so that they assert the same
# numbers on every machine; the bf16 tests name their dtype, and the tests of `auto` itself unset this.
os.environ.setdefault("INFINIPOT_DTYPE", "float32")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.slow)


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
    """A 30-line text document for CLI tests: ~760 tokens, several compressions of a 128-entry pot."""
    from tiny_models import write_notes

    return write_notes(tmp_path / "notes.txt", lines=30)


@pytest.fixture(autouse=True)
def all_cores_for_the_default_model(request):
    """The bundled model's tests run a real 135M model: there every core counts (the one-thread default above
    is for the tiny models' microsecond ops)."""
    if request.node.get_closest_marker("integration") is None:
        yield
        return
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture
def browser(tmp_path):
    """Headless Chromium (tests/browser_page.py); the test is skipped where it is missing, outside CI."""
    from browser_page import start_browser

    driver = start_browser(tmp_path / "chromium-profile")
    yield driver
    driver.quit()
