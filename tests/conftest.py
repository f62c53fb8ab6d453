"""Shared fixtures: every test gets its own empty $INFINIPOT_HOME."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def infinipot_home(tmp_path, monkeypatch):
    home = tmp_path / "infinipot-home"
    monkeypatch.setenv("INFINIPOT_HOME", str(home))
    return home


