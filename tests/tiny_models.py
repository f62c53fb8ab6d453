"""Tiny random-weight models and a locally trained tokenizer: the engine's tests download nothing."""

from __future__ import annotations

import functools
from pathlib import Path

import torch
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    NemotronConfig,
    NemotronForCausalLM,
    Phi3Config,
    Phi3ForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2MoeConfig,
    Qwen2MoeForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
    Qwen3MoeConfig,
    Qwen3MoeForCausalLM,
    StableLmConfig,
    StableLmForCausalLM,
    Starcoder2Config,
    Starcoder2ForCausalLM,
)

from benchmarks.ingest_bench import byte_bpe
from infinipot.core.model import LoadedModel

CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_SPECIAL_TOKENS = ("<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>")
_CORPUS = [
    "The quick brown fox jumps over the lazy dog. A passkey is 12345 and 67890.",
    "Summarize the text above, keeping every important fact, name, number and code.",
    "What is the passkey? Read the document carefully and answer this question.",
    "Answer from the text above in one short sentence.",
    "Grass is green, the sky is blue, the sun is yellow. Here we go, there and back again.",
]


@functools.cache
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    tok = byte_bpe(_CORPUS * 4, 400, list(_SPECIAL_TOKENS), unk_token="<unk>")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", eos_token="<|im_end|>", bos_token="<|endoftext|>"
    )
    fast.chat_template = CHATML
    return fast


def _common(vocab: int) -> dict:
    return dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=3,
        bos_token_id=1,
        pad_token_id=1,
    )


# One per family core.families.CHECKED_FAMILIES lets read (tests/test_families.py keeps the two lists equal).
ARCHITECTURES = (
    "llama", "mistral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma2", "gemma3", "phi3", "stablelm",
    "starcoder2", "nemotron",
)  # fmt: skip
# Gemma 3's local layers: a window shorter than the tests' pots, so that it matters, and rotary bases of their own.
GEMMA3_WINDOW = 24


def gemma3_config(base: dict, layer_types: list[str]) -> Gemma3TextConfig:
    """A tiny Gemma 3 (text): local (sliding-window) and global layers as `layer_types` says, each kind with its
    own RoPE base, as the real models have (10K local, 1M global)."""
    return Gemma3TextConfig(
        **{**base, "num_hidden_layers": len(layer_types)},
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=GEMMA3_WINDOW,
        layer_types=layer_types,
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
        },
    )


def build_model(
    arch: str = "llama", rope_parameters: dict | None = None, seed: int = 0, layer_types: list[str] | None = None
) -> torch.nn.Module:
    vocab = len(tiny_tokenizer())
    base = _common(vocab)
    torch.manual_seed(seed)
    if arch == "llama":
        config = LlamaConfig(**base, rope_parameters=rope_parameters or {"rope_type": "default", "rope_theta": 10000.0})
        model = LlamaForCausalLM(config)
    elif arch == "mistral":
        model = MistralForCausalLM(MistralConfig(**base, sliding_window=None))
    elif arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**base))
    elif arch == "qwen3":
        model = Qwen3ForCausalLM(Qwen3Config(**base, head_dim=16))
    elif arch == "gemma2":
        config = Gemma2Config(
            **base,
            head_dim=16,
            query_pre_attn_scalar=16,
            sliding_window=4096,
            attn_logit_softcapping=20.0,
            final_logit_softcapping=10.0,
        )
        model = Gemma2ForCausalLM(config)
    elif arch == "gemma3":
        model = Gemma3ForCausalLM(gemma3_config(base, layer_types or ["sliding_attention", "full_attention"]))
    elif arch == "phi3":
        model = Phi3ForCausalLM(Phi3Config(**base, partial_rotary_factor=0.5))
    elif arch == "qwen2_moe":
        experts = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
        model = Qwen2MoeForCausalLM(Qwen2MoeConfig(**base, **experts, shared_expert_intermediate_size=32))
    elif arch == "qwen3_moe":
        experts = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
        model = Qwen3MoeForCausalLM(Qwen3MoeConfig(**base, **experts, head_dim=16))
    elif arch == "stablelm":
        model = StableLmForCausalLM(StableLmConfig(**base, partial_rotary_factor=0.25))
    elif arch == "starcoder2":
        model = Starcoder2ForCausalLM(Starcoder2Config(**base, sliding_window=None))
    elif arch == "nemotron":
        model = NemotronForCausalLM(NemotronConfig(**base, partial_rotary_factor=0.5))
    else:
        raise ValueError(arch)
    # Random init gives near-uniform attention; larger weights make scores and greedy choices distinct.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
    return model.eval()


def tiny_loaded(arch: str = "llama", **kwargs) -> LoadedModel:
    model = build_model(arch, **kwargs)
    return LoadedModel(model=model, tokenizer=tiny_tokenizer(), identity=f"tiny-{arch}", device=torch.device("cpu"))


def random_ids(count: int, seed: int = 0) -> list[int]:
    """Token ids of ordinary (non-special) tokens."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, len(tiny_tokenizer()), (count,), generator=g).tolist()


def save_model_folder(path: Path) -> str:
    """A random-weight Llama and the tiny tokenizer saved as a Hugging Face folder, loadable with --model.

    Its answers stream as text whatever the pot holds: the output rows of special tokens and of byte tokens
    that decode to no whole character are zeroed, so greedy decoding (whose best logit among ~400 random
    ones is positive) never ends an answer early nor holds text back as a partial UTF-8 sequence.
    """
    model = build_model("llama")
    tokenizer = tiny_tokenizer()
    special = set(tokenizer.convert_tokens_to_ids(_SPECIAL_TOKENS))
    silent = [i for i in range(len(tokenizer)) if i in special or "\ufffd" in tokenizer.decode([i])]
    with torch.no_grad():
        model.lm_head.weight[silent] = 0.0
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def write_notes(path: Path, lines: int = 16, tag: str = "") -> Path:
    """A small text document of numbered lines (`tag` makes two documents' bytes differ)."""
    text = "\n".join(f"Line {i}{tag}: the quick brown fox jumps over the lazy dog {i * 7}." for i in range(lines))
    path.write_text(text, encoding="utf-8")
    return path


def build_attending_model(target_token: int, strength: float = 3.0) -> torch.nn.Module:
    """A tiny Llama whose every query, in every layer and head, attends almost only to `target_token`.

    Attention and MLP outputs are zeroed, so every layer sees the token embeddings; queries are one constant
    (a bias) on the slowest rotary dimension, and keys read one embedding feature that only the target token
    has. With a huge rope theta that dimension barely rotates, so the logit is about strength^2 * sqrt(hidden)
    / sqrt(head_dim) (= 18 here) for the target and 0 for every other token, wherever they are.
    """
    vocab = len(tiny_tokenizer())
    rope = {"rope_type": "default", "rope_theta": 1e12}
    config = LlamaConfig(**_common(vocab), attention_bias=True, rope_parameters=rope)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    head_dim = config.hidden_size // config.num_attention_heads
    slowest = head_dim - 1  # paired with head_dim // 2 - 1, the lowest rotary frequency
    feature = config.hidden_size - 1
    with torch.no_grad():
        embeddings = model.get_input_embeddings().weight  # (V, hidden)
        embeddings[:, feature] = 0.0
        embeddings[target_token] = 0.0
        embeddings[target_token, feature] = 1.0
        model.lm_head.weight[config.eos_token_id] = 0.0  # keep answers from ending at once
        for layer in model.model.layers:
            attention = layer.self_attn
            attention.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
            attention.q_proj.weight.zero_()
            attention.q_proj.bias.zero_()
            attention.q_proj.bias[slowest::head_dim] = strength
            attention.k_proj.weight[slowest::head_dim] = 0.0
            attention.k_proj.weight[slowest::head_dim, feature] = strength
            attention.k_proj.bias.zero_()
    return model.eval()


def save_attending_model_folder(path: Path, target_token: int) -> str:
    """build_attending_model and the tiny tokenizer saved as a Hugging Face folder, loadable with --model."""
    build_attending_model(target_token).save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return str(path)
