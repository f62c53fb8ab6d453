"""What the Settings tab chooses: the next reads (ReadSettings), validated before anything is queued, and the next
answers and summaries (AnswerChoices), validated before anything is asked."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from infinipot.app.ask.modes import ANSWER_MODES, AnswerSettings
from infinipot.app.read import DEFAULT_CHECKPOINT_SECONDS
from infinipot.app.web.field_numbers import number, whole_number
from infinipot.core.answer.evidence import EvidenceConfig, parse_pot_entries
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.errors import ModelError
from infinipot.core.gguf_models import check_is_gguf, names_gguf_file
from infinipot.core.precision import check_dtype_name

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class ReadSettings:
    model: str = "default"
    pot_size: int = PotConfig.pot_size
    keep_size: int | None = None  # None: PotConfig's default, half the pot
    nuc_ratio: float = PotConfig.nuc_ratio
    cap_mode: str = PotConfig.cap_mode
    question: str | None = None
    method: str = PotConfig.method
    nuc_unit: str = PotConfig.nuc_unit
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS
    dtype: str = "auto"  # core.precision.DTYPES

    def dtype_name(self) -> str:
        return check_dtype_name(self.dtype)

    def checkpoint_interval(self) -> float:
        """Seconds of reading between resume points: a crash or a power cut loses at most this much reading."""
        seconds = number("resume point interval", self.checkpoint_seconds)
        if seconds < 0:
            raise ValueError(f"resume point interval must be 0 (after every piece) or more seconds, got {seconds:g}")
        return seconds

    def pot_config(self) -> PotConfig:
        """The pot settings; PotConfig validates them (ValueError with one line)."""
        keep = None if self.keep_size in (None, "", 0) else whole_number("kept size", self.keep_size)
        question = (self.question or "").strip() or None
        return PotConfig(
            pot_size=whole_number("pot size", self.pot_size),
            keep_size=keep,
            nuc_ratio=float(self.nuc_ratio),
            method=self.method,
            cap_mode=self.cap_mode,
            question=question if self.cap_mode == "question" else None,
            nuc_unit=self.nuc_unit,
        )

    def model_name(self) -> str:
        """'default', a GGUF file, an existing model folder, or something shaped like a hub id (org/name)."""
        name = (self.model or "").strip()
        if not name or name == "default":
            return "default"
        path = Path(name).expanduser()
        if names_gguf_file(path):
            try:
                check_is_gguf(path)  # the magic bytes only: the rest is checked when it is converted, on first use
            except ModelError as exc:
                raise ValueError(str(exc)) from None
            return str(path.resolve())
        if path.exists() or name.startswith(("/", ".", "~")):
            if not path.is_dir():
                raise ValueError(f"model folder {name} does not exist")
            if not (path / "config.json").is_file():
                raise ValueError(f"{name} is not a Hugging Face model folder (no config.json)")
            return str(path.resolve())
        if not _HUB_ID.match(name):
            raise ValueError(f"model {name!r} is neither 'default', a model folder, nor a hub id like org/name")
        return name

    def describe(self) -> str:
        config = self.pot_config()
        model = self.model_name()
        seconds = self.checkpoint_interval()
        source = "the bundled SmolLM2-135M-Instruct" if model == "default" else model
        hub = " (a hub id: needs the model in the local Hugging Face cache or internet)" if _HUB_ID.match(model) else ""
        cap = "your question" if config.cap_mode == "question" else "a summary request"
        return (
            f"Settings are valid: {source}{hub}; a memory of {config.pot_size:,} tokens, {config.keep_size:,} kept "
            f"each time it is full ({100 * config.nuc_ratio:g}% for surprising the model, per {config.nuc_unit}; the "
            f"rest for mattering to {cap}), method {config.method}; a resume point every {seconds:g} s of reading. "
            "They apply to the next uploads."
        )


_ANSWERS = AnswerSettings()
_DECODING = _ANSWERS.decoding

# What each answer mode means, in plain words (the Settings tab and describe() say it).
MODE_WORDS = {
    "evidence": "the model's memory of the document plus the passages it points to",
    "pot": "the model's memory of the document alone",
    "focus": "a copy of the model's memory focused on the question",
}


# What finds the passages of an evidence answer, in plain words (core.answer.evidence.RANKINGS).
RANKING_WORDS = {
    "both": "where the model's memory looks and the question's words",
    "attention": "where the model's memory looks",
    "words": "the question's words",
}


def pot_entries_text(pot_entries: int | None) -> str:
    """EvidenceConfig.pot_entries as the Settings field shows it."""
    return "all" if pot_entries is None else str(pot_entries)


def after_words(pot_entries: int | None) -> str:
    """What evidence passages are read after, in plain words."""
    if pot_entries is None:
        return "after the model's whole memory"
    return "on their own" if pot_entries == 0 else f"after {pot_entries:,} tokens of memory chosen by the question"


def spans_words(read_spans: int) -> str:
    """Which passages are read, in plain words."""
    return "every one" if read_spans == 0 else f"the best {read_spans:,} by the question's likelihood"


@dataclass(frozen=True)
class AnswerChoices:
    """The Answers group of the Settings tab as the form gives it (numbers may come as floats, or None when a
    field is cleared); answer_settings() turns it into the service's AnswerSettings. The defaults are
    AnswerSettings' own, read from there, not typed again; the n-gram ban is not offered and keeps its default."""

    max_new_tokens: int = _DECODING.max_new_tokens
    answer_from: str = _ANSWERS.answer_from
    evidence_tokens: int = _ANSWERS.evidence.budget_tokens
    evidence_ranking: str = _ANSWERS.evidence.ranking
    # "all" or a whole number, as the CLI's --evidence-pot takes it (core.answer.evidence.parse_pot_entries)
    evidence_pot: str = pot_entries_text(_ANSWERS.evidence.pot_entries)
    evidence_spans: int = _ANSWERS.evidence.read_spans
    focus_entries: int = _ANSWERS.focus_entries
    temperature: float = _DECODING.temperature
    top_p: float = _DECODING.top_p
    seed: int = _DECODING.seed
    contrast: float = _DECODING.contrast
    stop_on_repeat: bool = _DECODING.stop_on_repeat

    def decoding(self) -> DecodingConfig:
        """How the answer's tokens are chosen and when it ends; ValueError with one line for a bad value."""
        return DecodingConfig(
            max_new_tokens=whole_number("answer length", self.max_new_tokens),
            temperature=number("temperature", self.temperature),
            top_p=number("top-p", self.top_p),
            seed=whole_number("seed", self.seed),
            stop_on_repeat=bool(self.stop_on_repeat),
            contrast=number("contrast", self.contrast),
        )

    def answer_settings(self) -> AnswerSettings:
        """The service's settings for the next answers; ValueError with one line for a bad value."""
        if self.answer_from not in ANSWER_MODES:
            raise ValueError(f"answer from must be one of {', '.join(ANSWER_MODES)}, got {self.answer_from!r}")
        decoding = self.decoding()
        return AnswerSettings(
            answer_from=self.answer_from,
            focus_entries=whole_number("focused copy size", self.focus_entries),
            decoding=decoding,
            evidence=EvidenceConfig(
                budget_tokens=whole_number("passages budget", self.evidence_tokens),
                ranking=self.evidence_ranking,
                pot_entries=parse_pot_entries(str(self.evidence_pot if self.evidence_pot is not None else "")),
                read_spans=whole_number("passages read", self.evidence_spans),
            ),
        )

    def describe(self) -> str:
        settings = self.answer_settings()
        decoding = settings.decoding
        source = MODE_WORDS[settings.answer_from]
        if settings.answer_from == "evidence":
            source += (
                f" (up to {settings.evidence.budget_tokens:,} tokens of passages, found by "
                f"{RANKING_WORDS[settings.evidence.ranking]}, {spans_words(settings.evidence.read_spans)} read "
                f"{after_words(settings.evidence.pot_entries)})"
            )
        elif settings.answer_from == "focus":
            source += f" ({settings.focus_entries:,} tokens)"
        if decoding.sampling:
            picking = (
                f"sampled at randomness {decoding.temperature:g}, among the likeliest words up to "
                f"{decoding.top_p:g}, seed {decoding.seed}"
            )
        else:
            picking = "the most likely word each time (greedy)"
        if decoding.contrast:
            picking += f", contrasted with the answer without the document (weight {decoding.contrast:g})"
        ending = "stop when they repeat themselves" if decoding.stop_on_repeat else "may repeat themselves"
        return (
            f"Answers are valid: from {source}; {picking}; at most {decoding.max_new_tokens:,} tokens; they {ending}. "
            "They apply to the next questions and summaries."
        )


def answer_choices(answer: dict | AnswerChoices) -> AnswerChoices:
    """The form's answer values (keys of AnswerChoices) as AnswerChoices; AnswerChoices as they are."""
    return answer if isinstance(answer, AnswerChoices) else AnswerChoices(**answer)
