"""The errors a user can cause, as one tuple that the read queue and the UI catch; imports no torch."""

from infinipot.core.errors import InfiniPotError
from infinipot.ingest.errors import IngestError

# ValueError: invalid settings and unknown documents (the service's DocumentNotFound is a ValueError).
USER_ERRORS: tuple[type[Exception], ...] = (InfiniPotError, IngestError, ValueError)


def one_line(exc: BaseException) -> str:
    """The first line of an error's message (the whole message a user sees)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
