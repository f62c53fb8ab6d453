"""A random-weight Llama of a real model's shape, saved as a model folder, for GPU read-speed and memory figures.

    python -m benchmarks.gpu.random_model --shape llama-3.2-1b --tokenizer-from MODEL_DIR --out DIR

Nothing can be downloaded on the GPU machine and at most 64 MiB travel to it, so a larger model's timing and
memory are measured on its shape with random weights (its answers mean nothing). The tokenizer comes from a
local model folder (the bundled one, converted), and the vocabulary is cut to it: a tokenizer without the model's
vocabulary would only change the embedding's size, not the attention and MLP work that reading costs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

# Shapes of public Llama-architecture checkpoints (their config.json values), vocabulary aside.
SHAPES = {
    "llama-3.2-1b": dict(
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8
    ),
    "llama-3.2-3b": dict(
        hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8
    ),
    "llama-3.1-8b": dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8
    ),
}


def build(shape: str, tokenizer_from: Path, out: Path, device: str) -> Path:
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_from)
    config = LlamaConfig(
        **SHAPES[shape],
        vocab_size=len(tokenizer),
        max_position_embeddings=131072,
        rope_theta=500000.0,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), required=True)
    parser.add_argument("--tokenizer-from", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    path = build(args.shape, args.tokenizer_from, args.out, args.device)
    print(f"saved a random {args.shape} to {path}")


if __name__ == "__main__":
    main()
