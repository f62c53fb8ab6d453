"""What an answer's pipeline (ask.pipeline) tells its reader, in order: its stages (ask.progress.AskStage: the
passage looked at, the passages weighed, the model writing), a Piece for each piece of the answer, Sources under a
complete answer, and Done. Light on purpose: the CLI and the page render these without importing the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from infinipot.app.ask.progress import AskStage

if TYPE_CHECKING:  # the stats import torch, which the CLI's start does not need
    from infinipot.app.ask.stats import AskStats


@dataclass(frozen=True)
class Piece:
    """A piece of the answer as it streams."""

    text: str


@dataclass(frozen=True)
class Sources:
    """The places a complete answer drew on, best first (ask.citing.Citation.as_json(), arranged by ask.quoting),
    and each as plain text beside this answer: (label, what to show)."""

    citations: list[dict]
    answerable: bool
    lines: list[tuple[str, str]]


@dataclass(frozen=True)
class Done:
    """The answer is complete (or stopped) and kept: its stats (stats.conversation_id names the conversation)."""

    stats: AskStats


AskEvent = AskStage | Piece | Sources | Done
