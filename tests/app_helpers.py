"""Shared pieces of the app tests: a workspace whose reads can be slowed, a running app, polling."""

from __future__ import annotations

import socket
import time
from contextlib import contextmanager
from pathlib import Path

from infinipot.app.backend import Backend
from infinipot.app.jobs import ReadQueue
from infinipot.app.service import DocumentService
from infinipot.app.workspace import Workspace

QUESTIONS = [
    "What does the fox do?",
    "Which number comes first?",
    "Who is lazy?",
    "What is the passkey?",
    "Summarize line three.",
]


def tiny_settings(model_dir: str, pot_size: int = 128, keep_size: int = 48) -> dict:
    return {
        "model": model_dir,
        "pot_size": pot_size,
        "keep_size": keep_size,
        "nuc_ratio": 0.5,
        "cap_mode": "general",
        "question": "",
        "method": "infinipot",
        "nuc_unit": "sentence",
    }


class PacedBackend(Backend):
    """Sleeps after every reader step and answer piece, so a test can watch a read or an answer and stop it."""

    pace = 0.0
    answer_pace = 0.0

    def read(self, path, config, model, on_step):
        def paced(pot):
            on_step(pot)
            time.sleep(self.pace)

        return super().read(path, config, model, paced)

    def ask(self, *args, **kwargs):
        pieces, stats = super().ask(*args, **kwargs)
        return self._paced(pieces), stats

    def _paced(self, pieces):
        for piece in pieces:
            time.sleep(self.answer_pace)
            yield piece


def make_workspace(home: Path, pace: float = 0.0) -> Workspace:
    backend = PacedBackend(DocumentService(home, device="cpu"))
    backend.pace = pace
    return Workspace(backend, ReadQueue(backend), max_upload_bytes=1 << 20)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_app(workspace: Workspace, refresh_seconds: float = 0.5):
    """Serve the app on a free loopback port; yields its URL."""
    from infinipot.app.ui import serve

    port = free_port()
    blocks = serve(workspace, "127.0.0.1", port, block=False, quiet=True, refresh_seconds=refresh_seconds)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        blocks.close()
        workspace.close()


def wait_until(predicate, timeout: float = 120.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"condition not met within {timeout} s")


def message_text(message: dict) -> str:
    """A chatbot message's text, whether gradio gives it as a string or as a list of parts."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def answer_text(message: dict) -> str:
    """A chatbot message's text without the Sources line the app adds under an answer (app/ui/sources.py)."""
    return message_text(message).partition("\n\n*Sources: ")[0]
