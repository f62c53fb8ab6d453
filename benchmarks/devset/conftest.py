"""Fixtures shared by the development set's tests: the generated documents and those made from Debian's files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.devset.documents import DOCUMENTS, write_document

GENERATED = {key for key, doc in DOCUMENTS.items() if doc.installed is None}


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """The generated documents (the story and the two logs), written into a folder."""
    folder = tmp_path_factory.mktemp("devset-docs")
    for key in sorted(GENERATED):
        write_document(DOCUMENTS[key], folder)
    return folder


def _absent_sources() -> list[str]:
    missing = [d.installed for d in DOCUMENTS.values() if d.installed and not Path(d.installed).is_file()]
    if any(d.source.startswith("man ") for d in DOCUMENTS.values()) and shutil.which("man") is None:
        missing.append("man (man-db)")
    return missing


@pytest.fixture(scope="module")
def installed_documents(tmp_path_factory) -> Path:
    """Every document made from Debian's files (PDFs, licences, manual pages, Python's HTML documentation, bash's
    NEWS), under their development-set names; skipped where a package is missing, except in CI
    (INFINIPOT_REQUIRE_DEBIAN_DOCS), where that fails."""
    missing = _absent_sources()
    if missing:
        if os.environ.get("INFINIPOT_REQUIRE_DEBIAN_DOCS"):
            pytest.fail(f"not installed: {missing}")
        pytest.skip(f"not installed: {missing}")
    folder = tmp_path_factory.mktemp("devset-installed")
    for key, doc in DOCUMENTS.items():
        if key not in GENERATED:
            write_document(doc, folder)
    return folder
