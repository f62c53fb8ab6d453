"""Questions beside a document's own chat, as DocumentService asks them: a question-aware re-read (CaP-Q), a
question across chosen documents (their pots merged), and a question to the whole library. Each is answered
here from the service's loaded pots and not kept in any conversation but as a side answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from infinipot.app.ask import across, library_answer, reread
from infinipot.app.ask.library import LibraryConfig, LibraryStats
from infinipot.app.ask.modes import AnswerSettings, decoding_with_length, with_overrides
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.read.file_reader import FileReader
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.pot import Pot
from infinipot.storage.store import Store
from infinipot.storage.uses import DocumentHold


class SideQuestions:
    """DocumentService's side questions: it gives the library, reader, store and merged pots, opens and holds the
    pots (ask.library_answer.Pots)."""

    library: Library
    reader: FileReader
    store: Store
    merged_pots: across.MergedPotCache

    def open_pot(self, doc: str) -> StoredPot:
        raise NotImplementedError

    def hold(self, stored: StoredPot) -> DocumentHold:
        raise NotImplementedError

    def question_read(self, doc: str, question: str) -> tuple[PotConfig, str, str, bool]:
        """A question-aware re-read's settings, model and dtype (the general pot's, CaP-Q), and whether it is
        stored."""
        return reread.question_read(self.library, self.open_pot(doc), question)

    def reread_for_question(
        self,
        doc: str,
        question: str,
        decoding: DecodingConfig | None = None,
        on_progress: Callable[[Pot], None] | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], AskStats, bool]:
        """Answer from the document's CaP-Q pot for this question: read once per question, then reused. Not
        stored as a conversation; load_seconds includes any reading."""
        decoding = decoding_with_length(decoding, max_new_tokens)
        started = time.perf_counter()
        general = self.open_pot(doc)
        return reread.question_answer(self.library, self.reader, general, question, decoding, on_progress, started)

    def ask_across(
        self,
        docs: list[str],
        question: str,
        decoding: DecodingConfig | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], across.AcrossStats]:
        """(answer pieces, AcrossStats) from the documents' general pots merged into one (ask/across.py)."""
        if not (question or "").strip():
            raise ValueError("the question is empty")
        decoding = decoding_with_length(decoding, max_new_tokens)
        opened = [self.open_pot(doc) for doc in docs]
        return across.ask_across(self.library, opened, self.merged_pots, question, decoding)

    def library_documents(self, docs: list[str] | None = None) -> list:
        """The documents a library question goes to (ask.library_answer.library_documents)."""
        return library_answer.library_documents(self.store, docs)

    def ask_library(
        self,
        question: str,
        docs: list[str] | None = None,
        settings: AnswerSettings | None = None,
        config: LibraryConfig | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], LibraryStats]:
        """Stream the answer to a question to every stored document (or those `docs` names), with its citations
        naming their documents (ask/library_answer.py). Not recorded in any conversation."""
        if not (question or "").strip():
            raise ValueError("the question is empty")
        settings = with_overrides(settings, "evidence", max_new_tokens)
        records = self.library_documents(docs)
        return library_answer.ask_library(self.library, self, question, records, settings, config or LibraryConfig())
