"""Token layout around a document: the chat template's opening, the catalyst prompt, the question turn."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

_SENTINEL = "\u2063INFINIPOT-DOCUMENT\u2063"


def catalyst_texts() -> dict[str, str]:
    """Instructions shipped in assets/cap_prompts.json: the catalysts "general" and "question" (with {question}),
    "summary", "answer" (with {question}), the wording a question is asked in, and "rerank", the request after
    which evidence spans are scored by the question's likelihood (core.rerank)."""
    return json.loads(resources.files("infinipot.assets").joinpath("cap_prompts.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PromptLayout:
    """Splits the model's chat template around the document so the pot can hold the user turn's start."""

    opening: str  # text before the document (system prompt and the user turn's start)
    closing: str  # text after the user's message that opens the assistant's turn

    @classmethod
    def for_tokenizer(cls, tokenizer) -> PromptLayout:
        if getattr(tokenizer, "chat_template", None):
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": _SENTINEL}], tokenize=False, add_generation_prompt=True
            )
            opening, _, closing = rendered.partition(_SENTINEL)
            if closing:
                return cls(opening=opening, closing=closing)
        bos = tokenizer.bos_token or ""
        return cls(opening=bos, closing="\nAnswer:")

    def request(self, instruction: str, gap: str = "\n\n") -> str:
        """What follows the document for a question, a summary request or a catalyst prompt."""
        return gap + instruction.strip() + self.closing


def encode(tokenizer, text: str) -> list[int]:
    """Token ids of text whose special tokens are written out (the template already has them)."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]
