"""Which model families InfiniPot reads correctly: those whose reading with compression is checked.

A family is checked when a tiny random-weight model of it reads a document 12x past its pot and, where the document
fits, answers exactly as the model's own generation (tests/tiny_models.py ARCHITECTURES, tests/test_engine.py).
Anything else is refused before reading, in one sentence that names it: a family transformers loads may still
break what compression relies on (one rotary embedding per kind of layer, the same key/value heads in every layer,
attention over a cache of keys and values).
"""

from __future__ import annotations

# transformers' model_type -> the name people know the family by.
CHECKED_FAMILIES = {
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
    "qwen2_moe": "Qwen2-MoE",
    "qwen3": "Qwen3",
    "qwen3_moe": "Qwen3-MoE",
    "gemma2": "Gemma 2",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
    "stablelm": "StableLM",
    "starcoder2": "StarCoder2",
    "nemotron": "Nemotron",
}
# Why a family transformers loads is refused, where a reason is known; others get the general one.
_REASONS = {
    "mamba": "it has no attention, so there is no memory of keys and values to compress",
    "lfm2": "its convolution layers keep a state that compression cannot choose from",
    "qwen35": "its linear-attention layers keep a state that compression cannot choose from",
    "qwen35moe": "its linear-attention layers keep a state that compression cannot choose from",
    "t5": "it is an encoder-decoder model, not a decoder that reads and answers",
    "umt5": "it is an encoder-decoder model, not a decoder that reads and answers",
    "bloom": "it has no rotary position embedding (RoPE), which compression re-rotates",
    "gpt2": "it has no rotary position embedding (RoPE), which compression re-rotates",
    "gpt_oss": "its attention sinks and sliding layers are not checked with compression",
    "deci": "its layers have different numbers of key/value heads",
    "falcon": "its attention does not follow transformers' attention interface",
}
# llama.cpp's GGUF architecture names that differ from transformers' model_type.
_GGUF_NAMES = {"gemma3": "gemma3_text", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss"}


def family_of_gguf(architecture: str) -> str:
    """transformers' model_type for a GGUF file's architecture."""
    return _GGUF_NAMES.get(architecture, architecture)


def unsupported_reason(model_type: str) -> str | None:
    """One sentence saying why a family is refused, or None for a checked family."""
    if model_type in CHECKED_FAMILIES:
        return None
    why = _REASONS.get(model_type, "reading with compression is not checked for this family")
    checked = ", ".join(CHECKED_FAMILIES.values())
    return f"{model_type} models are not supported yet: {why} (supported: {checked})"
