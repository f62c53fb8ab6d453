"""Settings of the memory pot and of Continual Context Distillation, validated once and passed down."""

from __future__ import annotations

from dataclasses import dataclass

from .scorers import METHODS

CAP_MODES = ("general", "question")
NUC_UNITS = ("sentence", "word-edges", "word", "token")  # the default first (the UI preselects it)


@dataclass(frozen=True)
class PotConfig:
    # |M|: the most KV entries a layer's head may ever hold, CaP included. 4K as in the paper's main setting.
    pot_size: int = 4096
    # |C|: entries kept after each distillation; None (the default) means half the pot. Half: each cycle
    # reads ~|M|/2 fresh tokens (2K at the default |M|) while the kept half still leaves |M|-|C| entries for
    # a question and its answer (see README, "Choosing |C|").
    keep_size: int | None = None
    # alpha: share of |C| filled by Novelty-under-Compression before CaP fills the rest (paper: 0.5 best).
    nuc_ratio: float = 0.5
    # What NuC scores (core.words): "word" sums the cross-entropy over each word's tokens (a 5-digit number
    # written as five digit tokens is one novel unit, not five ordinary ones); "word-edges" also gives the
    # tokens on either side of a word its score, so a kept number keeps what ends it; "sentence" (default)
    # gives every token of a sentence its most novel word's score, so a kept fact keeps what it is about;
    # "token" is the paper's literal per-token score. On the same 15 16K passkey documents the whole pot
    # found 11 (sentence), 10 (word-edges) and 4 (word); answered with focus 1024, 14, 8 and 8 (README).
    nuc_unit: str = "sentence"
    # Scoring strategy, one of core.scorers.METHODS.
    method: str = "infinipot"
    # "general" (CaP-G) or "question" (CaP-Q, needs `question`).
    cap_mode: str = "general"
    question: str | None = None
    # Context-Reset RoPE; False only for the ablation.
    cr_rope: bool = True
    # Fewest leading tokens protected as attention sinks; the chat template's opening is always protected.
    min_sink_tokens: int = 4
    # Forward passes are split into pieces of at most this many tokens: bounds activation memory on CPU
    # without changing the math (the causal cache makes the pieces equivalent to one pass).
    forward_tokens: int = 1024
    # Rolling-window methods (streaming, h2o) evict room for this many tokens at a time instead of one entry
    # per token as their originals do: the window stays between |M| - |P| - step and |M| - |P| entries while
    # reading goes on in efficient pieces (smaller is closer to the originals and slower). None: |M| / 16.
    window_step: int | None = None

    def __post_init__(self) -> None:
        if self.pot_size < 16:
            raise ValueError(f"pot size must be at least 16 entries, got {self.pot_size}")
        if self.keep_size is None:  # resolved once, so identity(), asdict() and stored pots hold the number
            object.__setattr__(self, "keep_size", self.pot_size // 2)
        if not 0 < self.keep_size < self.pot_size:
            raise ValueError(
                f"kept size must be between 1 and the pot size - 1 ({self.pot_size - 1}), got {self.keep_size}"
            )
        if not 0.0 <= self.nuc_ratio <= 1.0:
            raise ValueError(f"NuC ratio must be between 0 and 1, got {self.nuc_ratio}")
        if self.nuc_unit not in NUC_UNITS:
            raise ValueError(f"NuC unit must be one of {', '.join(NUC_UNITS)}, got {self.nuc_unit!r}")
        if self.cap_mode not in CAP_MODES:
            raise ValueError(f"CaP mode must be one of {', '.join(CAP_MODES)}, got {self.cap_mode!r}")
        if self.cap_mode == "question" and not (self.question and self.question.strip()):
            raise ValueError("CaP mode 'question' needs a question (--question)")
        if self.min_sink_tokens < 0 or self.min_sink_tokens >= self.keep_size:
            raise ValueError(f"sink tokens must be between 0 and the kept size, got {self.min_sink_tokens}")
        if self.forward_tokens < 1:
            raise ValueError(f"forward piece length must be positive, got {self.forward_tokens}")
        if self.window_step is not None and not 0 < self.window_step < self.pot_size:
            raise ValueError(f"window step must be between 1 and the pot size - 1, got {self.window_step}")
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")

    @property
    def nuc_per_word(self) -> bool:
        """Whether NuC is scored per word (needs the tokenizer's word boundaries, core.words.token_boundaries)."""
        return self.nuc_unit != "token"

    @property
    def rolling_step(self) -> int:
        """Tokens a rolling window reads between two evictions (`window_step`, default |M| / 16)."""
        return self.window_step if self.window_step is not None else max(1, self.pot_size // 16)

    def identity(self) -> dict:
        """The settings that change what a pot contains (the reuse key for stored pots)."""
        return {
            "pot_size": self.pot_size,
            "keep_size": self.keep_size,
            "nuc_ratio": self.nuc_ratio,
            "nuc_unit": self.nuc_unit,
            "method": self.method,
            "cap_mode": self.cap_mode,
            "question": self.question if self.cap_mode == "question" else None,
            "cr_rope": self.cr_rope,
            "min_sink_tokens": self.min_sink_tokens,
            "window_step": self.rolling_step,
        }
