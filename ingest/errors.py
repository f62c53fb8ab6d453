"""The single exception type that ingest raises for documents it cannot read."""

from __future__ import annotations


class IngestError(ValueError):
    """A document could not be read.

    ``str(error)`` is one line written for the person who dropped the file in:
    it names the file and says what is wrong and, where possible, what to do.
    """
