"""What an answer measured: the engine's AnswerStats plus finding and loading the stored pot, and citations."""

from __future__ import annotations

from dataclasses import dataclass, field

from infinipot.core.engine import AnswerStats


@dataclass
class AskStats(AnswerStats):
    load_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    conversation_id: int | None = None
    citations: list[dict] = field(default_factory=list)  # ask.citing.Citation.as_json(), best first
    answer_from: str = ""  # the answer mode (ask.modes)
    evidence_tokens: int = 0  # document tokens read verbatim into the answer's context (mode `evidence`)
    reused_summary: bool = False  # the stored summary was given (nothing was generated)
    # A summary's outline: {"title", "page" or "line", "token", "points", "sections"} per part (core.summary.Part).
    summary_parts: list[dict] = field(default_factory=list)
    evidence_seconds: float = 0.0  # ranking and reading the evidence spans, before the answer's prefill
    # From the ask call to the first passage the search points at (AskStage "looking"); None without one.
    first_evidence_seconds: float | None = None
    # The passage the page last showed as looked at while the answer was checked (AskStage.citation); kept with a
    # stopped answer that had no words yet, as what was on screen.
    looked_at: dict | None = None
    # False when the answer says the document does not hold the answer (core.answer.grounded_answer).
    answerable: bool = True
    # "stated" (a sentence of the document), "closest" (the passage that seems to answer, not sure) or "not_found"
    # (core.answer.grounded_answer.ANSWER_STATES); answerable is true only when stated.
    answer_state: str = "stated"
    # The sentence of the passages read that the answer was checked against (and is quoted first); "" when none.
    answer_sentence: str = ""
    ranked_sentences: list[str] = field(default_factory=list)  # the judge's sentences, best first
    ranked_scores: list[float] = field(default_factory=list)  # their scores (mean log-probability of the question)
    written_answer: str = ""  # what the model wrote ("free" grounding only: a checked answer is a sentence)
    confidence: float | None = None  # the checked answer's probability of holding the answer (answer_confidence)
    # Why the answer is what it is (core.answer.grounded_answer.Verdict.reason): "confident", "unsure", "earlier", ...
    answered_by: str = ""
    # How a checked answer was decided (core.answer.grounded_answer.Verdict.decided_by): "calibrated" for this
    # model, "strict" (a model the decision was not fitted on), "learned"; "" when not checked.
    decided_by: str = ""

    @property
    def first_token_seconds(self) -> float | None:
        """From the ask call to the first answer token: pot lookup and load, evidence, prefill, first token."""
        return None if self.ttft_seconds is None else self.load_seconds + self.evidence_seconds + self.ttft_seconds
