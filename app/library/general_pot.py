"""Which of a document's pots answers its ordinary questions, and the settings of a question-aware re-read.

A document may hold several pots: its general read (CaP-G) and any number of question-aware re-reads (CaP-Q,
one per question). Ordinary questions, summaries and the view of what was kept use the general pot; a
question's own pot is used only for that question. Plain functions of stored records: no torch here.
"""

from __future__ import annotations

from dataclasses import replace

from infinipot.core.config import PotConfig
from infinipot.storage.records import PotRecord


def is_question_aware(config: dict) -> bool:
    """Whether stored pot settings are a CaP-Q read (the question is part of the catalyst prompt)."""
    return config.get("cap_mode") == "question"


def general_candidates(pots: list[PotRecord]) -> list[PotRecord]:
    """The pots that may serve as the document's general pot, oldest first.

    Question-aware pots only when the document was never read any other way: a user who read it with
    `--cap question` (or that setting in the app) meant that pot to answer.
    """
    general = [pot for pot in pots if not is_question_aware(pot.config)]
    return general or list(pots)


def general_pot(pots: list[PotRecord]) -> PotRecord | None:
    """The latest complete pot among general_candidates, or None (its general read is unfinished or failed)."""
    complete = [pot for pot in general_candidates(pots) if pot.status == "complete"]
    return max(complete, key=lambda pot: (pot.completed_at or "", pot.id)) if complete else None


def question_config(general: PotConfig, question: str) -> PotConfig:
    """The general pot's settings (|M|, |C|, method, alpha...) with the question in the catalyst prompt."""
    question = (question or "").strip()
    if not question:
        raise ValueError("type a question first")
    return replace(general, cap_mode="question", question=question)


def latest_general_entry(pots: list[dict]) -> dict | None:
    """The pot row (documents.pot_entry) that stands for a document in a listing: its latest complete general
    pot, else its latest general pot in whatever state (reading, failed), by the rule of general_candidates."""
    general = [pot for pot in pots if not is_question_aware(pot["config"])] or pots
    complete = [pot for pot in general if pot["status"] == "complete"]
    return (complete or general)[-1] if general else None
