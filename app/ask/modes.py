"""How a question is answered: from the pot alone (the paper), from a question-focused copy, or from the pot
plus the document spans it points to (`evidence`), with the decoding settings of the answer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from infinipot.core.answer.evidence import EvidenceConfig
from infinipot.core.answer.grounded_answer import GroundingConfig
from infinipot.core.decoding import DecodingConfig

# pot: the stored pot as it is, then the question (the paper's setting).
# focus: a copy of the pot distilled to `focus_entries` with the question as catalyst (CaP-Q at ask time).
# evidence: the pot, then the document spans the question's attention over the pot ranks best, read verbatim.
ANSWER_MODES = ("evidence", "pot", "focus")  # the default first (measured best on the development questions)


@dataclass(frozen=True)
class AnswerSettings:
    answer_from: str = ANSWER_MODES[0]
    # Entries of the question-focused copy. 1,024: a quarter of the default pot, the size at which the default
    # model found the most passkeys at 16K and 32K (docs/experiments.md, "Focus").
    focus_entries: int = 1024
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    evidence: EvidenceConfig = field(default_factory=EvidenceConfig)
    # How an evidence answer is checked against the passages read (core.answer.grounded_answer).
    grounding: GroundingConfig = field(default_factory=GroundingConfig)

    def __post_init__(self) -> None:
        if self.answer_from not in ANSWER_MODES:
            raise ValueError(f"answer mode must be one of {', '.join(ANSWER_MODES)}, got {self.answer_from!r}")
        if isinstance(self.focus_entries, bool) or not isinstance(self.focus_entries, int) or self.focus_entries < 2:
            raise ValueError(f"focus must be a whole number of entries above 1, got {self.focus_entries!r}")


def with_overrides(
    settings: AnswerSettings | None,
    answer_from: str | None = None,
    max_new_tokens: int | None = None,
    focus: int | None = None,
) -> AnswerSettings:
    """Settings with the Python API's shortcuts applied: a mode, an answer length, or `focus` entries (which
    also chooses the focus mode)."""
    settings = settings or AnswerSettings()
    changes: dict = {}
    if focus is not None:
        changes.update(answer_from="focus", focus_entries=focus)
    if answer_from is not None:
        changes["answer_from"] = answer_from
    if max_new_tokens is not None:
        changes["decoding"] = replace(settings.decoding, max_new_tokens=max_new_tokens)
    return replace(settings, **changes) if changes else settings


def decoding_with_length(decoding: DecodingConfig | None, max_new_tokens: int | None) -> DecodingConfig:
    """The decoding settings with the answer length a caller gave on its own (defaults when both are None)."""
    decoding = decoding or DecodingConfig()
    return decoding if max_new_tokens is None else replace(decoding, max_new_tokens=max_new_tokens)
