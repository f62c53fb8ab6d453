"""Token layout around a document: the chat template's opening, the catalyst prompt, the question turn."""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

_SENTINEL = "\u2063INFINIPOT-DOCUMENT\u2063"


def catalyst_texts() -> dict[str, str]:
    """Instructions shipped in assets/cap_prompts.json: the catalysts "general" and "question" (with {question}),
    "summary", "answer" (with {question}), the wording a question is asked in, and "rerank", the request after
    which evidence spans are scored by the question's likelihood (core.answer.rerank)."""
    return json.loads(resources.files("infinipot.assets").joinpath("cap_prompts.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class PromptLayout:
    """Splits the model's chat template around the document so the pot can hold the user turn's start."""

    opening: str  # text before the document (system prompt and the user turn's start)
    closing: str  # text after the user's message that opens the assistant's turn
    # Text after an assistant's answer up to the next user message (a follow-up question's turn).
    between: str = "\n\n"

    @classmethod
    def for_tokenizer(cls, tokenizer) -> PromptLayout:
        if getattr(tokenizer, "chat_template", None):
            rendered = tokenizer.apply_chat_template(
                [{"role": "user", "content": _SENTINEL}], tokenize=False, add_generation_prompt=True
            )
            opening, _, closing = rendered.partition(_SENTINEL)
            if closing:
                return cls(opening=opening, closing=closing, between=_between_turns(tokenizer))
        bos = tokenizer.bos_token or ""
        return cls(opening=bos, closing="\nAnswer:")

    def request(self, instruction: str, gap: str = "\n\n") -> str:
        """What follows the document for a question, a summary request or a catalyst prompt."""
        return gap + instruction.strip() + self.closing


def _between_turns(tokenizer) -> str:
    """What the chat template writes after an assistant's answer and before the next user message."""
    answer, question = "\u2063ANSWER\u2063", "\u2063QUESTION\u2063"
    turns = [
        {"role": "user", "content": _SENTINEL},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": question},
    ]
    try:
        rendered = tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    except Exception:  # noqa: BLE001 - a template that refuses several turns: a blank line between them
        return "\n\n"
    after = rendered.partition(answer)[2]
    return after.partition(question)[0] if question in after else "\n\n"


def encode(tokenizer, text: str) -> list[int]:
    """Token ids of text whose special tokens are written out (the template already has them)."""
    return tokenizer(text, add_special_tokens=False)["input_ids"]
