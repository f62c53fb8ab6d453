"""Answer mode `evidence` on the bundled default model with a real PDF manual (the 16K passkey at three depths
in evidence mode: tests/test_passkey_default_model.py).

The 135M model reads a fact back poorly from ~2K entries inside a 4K pot; with evidence the pot only points to
the spans and the spans, read verbatim right before the question, hold the answer. The PDF is the 36-page
libtasn1 manual that Debian's `libtasn1-doc` package installs (.ci/run installs it; without it the test fails
when INFINIPOT_REQUIRE_DEBIAN_DOCS is set, as in CI, and is skipped otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infinipot.app.ask.modes import AnswerSettings
from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.ingest import open_document

pytestmark = pytest.mark.integration

LIBTASN1_PDF = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")


@pytest.fixture(scope="module")
def manual() -> Path:
    if not LIBTASN1_PDF.is_file():
        if os.environ.get("INFINIPOT_REQUIRE_DEBIAN_DOCS"):
            pytest.fail(f"{LIBTASN1_PDF} is missing: apt-get install libtasn1-doc")
        pytest.skip("Debian's libtasn1-doc is not installed")
    return LIBTASN1_PDF


def test_a_question_on_a_real_manual_cites_the_page_and_text_that_answer_it(tmp_path, manual):
    service = DocumentService(tmp_path / "home", device="cpu")
    report = service.read(manual, PotConfig())
    assert report.cycles > 0  # 20K tokens through a 4K pot
    question = "Which version of Libtasn1 does this manual describe?"
    pieces, stats, _ = service.ask(report.doc_id, question, AnswerSettings(), record=False)
    answer = "".join(pieces)
    assert stats.answer_from == "evidence" and stats.evidence_tokens > 0
    print("answer:", answer, "citations:", [(c["label"], c["snippet"][:80]) for c in stats.citations])
    assert "4.19.0" in answer
    # What the user checks: the cited page and its quoted text hold the version.
    pages = {s.location.page for s in open_document(manual).segments() if "version 4.19.0" in s.text}
    cited = [c for c in stats.citations if "version 4.19.0" in c["snippet"]]
    assert cited and all(c["page"] in pages for c in cited), (pages, stats.citations)
    assert stats.stopped_by in ("end", "repeat") and stats.new_tokens < 256  # it ends by itself
