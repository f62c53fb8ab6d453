"""Fixtures shared by the development set's tests: the generated documents and the installed PDF manuals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.devset.documents import DOCUMENTS
from benchmarks.devset.make_log import write_log
from benchmarks.devset.make_story import write_story


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    """The story and the log, generated into a folder."""
    folder = tmp_path_factory.mktemp("devset-docs")
    write_story(folder / DOCUMENTS["story"].file)
    write_log(folder / DOCUMENTS["log"].file)
    return folder


@pytest.fixture
def installed_pdfs(tmp_path) -> Path:
    """Debian's PDF manuals (libtasn1-doc, shared-mime-info) under their development-set names."""
    missing = [d.installed for d in DOCUMENTS.values() if d.installed and not Path(d.installed).is_file()]
    if missing:
        pytest.skip(f"not installed: {missing}")
    for doc in DOCUMENTS.values():
        if doc.installed:
            shutil.copyfile(doc.installed, tmp_path / doc.file)
    return tmp_path
