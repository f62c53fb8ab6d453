"""Reader for PDF files with pypdf: page by page, reporting encrypted and text-less (scanned) pages."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ..blocks import Block, BlockBuilder
from ..errors import IngestError
from ..pdf_lines import joined_lines
from .base import ReadContext, Reader, Source, format_numbers

# Real PDFs may carry some junk after %%EOF; truncated ones have none.
_TAIL_BYTES = 2048


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    # pypdf logs a warning for every quirk it tolerates in real-world files; the
    # user only needs the summary this reader reports.
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


class PdfReader(Reader):
    """One block per page; lines are numbered within each page."""

    kind = "pdf"

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self._check_tail()
        with open(source.path, "rb") as handle:
            self.pages = len(self._open(handle).pages)
        if not self.pages:
            raise IngestError(f"'{self.name}' has no pages")

    def _check_tail(self) -> None:
        with open(self.source.path, "rb") as handle:
            handle.seek(max(0, self.source.size_bytes - _TAIL_BYTES))
            tail = handle.read()
        if b"%%EOF" not in tail:
            raise IngestError(
                f"'{self.name}' is incomplete (the end of the PDF is missing, e.g. an interrupted download); "
                "re-download or re-export it"
            )

    def _open(self, handle: BinaryIO):
        """Parse the PDF structure, unlocking owner-password-only encryption; IngestError otherwise."""
        import pypdf
        from pypdf.errors import DependencyError, FileNotDecryptedError

        locked = (
            f"'{self.name}' is password-protected; open it with its password and save an unprotected copy, "
            "then try again"
        )
        try:
            with _quiet_pypdf():
                reader = pypdf.PdfReader(handle, strict=False)
                if reader.is_encrypted and reader.decrypt("") == pypdf.PasswordType.NOT_DECRYPTED:
                    raise IngestError(locked)
                len(reader.pages)  # walks the page tree, which is where damage usually shows
        except IngestError:
            raise
        except FileNotDecryptedError:
            raise IngestError(locked) from None
        except DependencyError:
            raise IngestError(
                f"'{self.name}' uses AES encryption, which needs the 'cryptography' package to read; "
                "install it (pip install cryptography) or save an unprotected copy"
            ) from None
        except Exception:
            # pypdf raises a wide range of errors (and sometimes plain KeyError or
            # RecursionError) on broken files; to the user they all mean the same.
            message = f"'{self.name}' is damaged and cannot be read as a PDF; re-download or re-export it"
            raise IngestError(message) from None
        return reader

    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        builder = BlockBuilder()
        empty: list[int] = []
        unreadable: list[int] = []
        total = self.pages or 1
        with open(self.source.path, "rb") as handle:
            reader = self._open(handle)
            for number, page in enumerate(reader.pages, 1):
                try:
                    with _quiet_pypdf():
                        text = page.extract_text() or ""
                except Exception:
                    unreadable.append(number)
                    text = ""
                text = _tidy(text)
                if text:
                    for piece, line in joined_lines(text):
                        builder.add_piece(piece, line, page=number)
                elif number not in unreadable:
                    empty.append(number)
                done = self.source.size_bytes * number // total
                ctx.raw.advance_to(done)
                block = builder.take(done)
                if block is not None:
                    yield block
        if empty:
            noun = "page" if len(empty) == 1 else "pages"
            verb = "has" if len(empty) == 1 else "have"
            ctx.warn(
                f"{noun} {format_numbers(empty)} {verb} no extractable text (scanned images? run OCR to include them)"
            )
        if unreadable:
            noun, verb = ("page", "was") if len(unreadable) == 1 else ("pages", "were")
            ctx.warn(f"{noun} {format_numbers(unreadable)} could not be read (damaged) and {verb} skipped")


def _tidy(text: str) -> str:
    """Page text as lines ending in newlines, without trailing blanks; '' if there is no text."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines) + "\n" if lines else ""
