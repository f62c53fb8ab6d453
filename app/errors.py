"""The errors a user can cause, as one tuple that the read queue and the UI catch; imports no torch."""

from __future__ import annotations

from pathlib import Path

from infinipot.core.errors import InfiniPotError
from infinipot.ingest.errors import IngestError
from infinipot.storage.errors import StorageError, describe_fault

# ValueError: invalid settings and unknown documents (the service's DocumentNotFound is a ValueError).
# StorageError: a damaged file, a full disk, a read-only data folder, a delete while the document is in use.
USER_ERRORS: tuple[type[Exception], ...] = (InfiniPotError, IngestError, StorageError, ValueError)


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (the whole message a user sees)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def system_error_line(exc: BaseException, home: Path) -> str | None:
    """One line for an OSError or database error the user's machine caused (a full disk, no permission), met
    where no more specific message was given; None when `exc` is not one (a bug, shown as such)."""
    where = getattr(exc, "filename", None) or f"the data folder {home}"
    return describe_fault(exc, f"using {where}", "try again")
