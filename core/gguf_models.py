"""GGUF model files (llama.cpp, LM Studio, Ollama): checked, de-quantized once to safetensors and cached.

A converted model lives in `models/<readable name>-<content hash prefix>` under the data home. The content hash,
not the path, says whether a file was converted before: a moved or renamed copy is not converted again, and a
changed file gets a folder of its own. Hashing gigabytes takes seconds, so each file's hash is remembered per
(path, size, mtime) in a small index next to the converted models.

This is also the one module that knows how transformers reads GGUF (which architectures, which loader option).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from .errors import ModelError
from .families import family_of_gguf, unsupported_reason

GGUF_MAGIC = b"GGUF"  # the first four bytes of every GGUF file
HASH_INDEX = "gguf-hashes.json"  # in the models folder: {resolved path: {size, mtime_ns, sha256}}
SOURCE_RECORD = "infinipot-source.json"  # in a converted model's folder: the file it came from
HASH_PREFIX_DIGITS = 12  # of the SHA-256 in a folder name: plenty to tell one person's model files apart
_READABLE_NAME_LENGTH = 48
_HASH_CHUNK_BYTES = 8 * 2**20
# A file written this recently may be written again within the same mtime tick (file times advance in steps of a
# few ms), which the index could not tell apart: its hash is taken but not remembered (git's "racy clean" rule).
_SETTLED_SECONDS = 2.0


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF file says about itself, read without touching its tensor data."""

    architecture: str  # llama.cpp's name: llama, qwen2, phi3, gemma2, ...
    title: str | None  # general.name, when the file has one ("SmolLM2 135M Instruct")


def models_folders(home: Path) -> list[Path]:
    """Where converted models are looked for; new ones go to the last. A read-only data home (a shared, prepared
    one) is still searched, and conversions then go to the temporary folder instead."""
    models = home / "models"
    if _may_create(models):
        return [models]
    return [models, Path(tempfile.gettempdir()) / f"infinipot-models-{os.getuid()}"]


def converted_gguf(
    gguf: Path,
    home: Path,
    cache_name: str | None = None,
    check_model: Callable[[torch.nn.Module], None] | None = None,
) -> Path:
    """The folder holding `gguf` as safetensors, converting it first when no earlier load has.

    `cache_name` fixes the folder's name instead of `<readable name>-<hash prefix>`: the bundled default model,
    whose file cannot change within its package version, keeps the name stored pots know it by. `check_model`
    may refuse the converted model (raising ModelError) before anything is written.
    """
    check_is_gguf(gguf)
    folders = models_folders(home)
    digest = None
    if cache_name is None:
        digest = content_hash(gguf, folders[-1])
        found = [f for folder in folders for f in sorted(folder.glob(f"*-{digest[:HASH_PREFIX_DIGITS]}"))]
    else:
        found = [folder / cache_name for folder in folders]
    for folder in found:
        if is_converted(folder):
            return folder
    header = read_header(gguf)
    name = cache_name or f"{readable_name(gguf, header.title)}-{digest[:HASH_PREFIX_DIGITS]}"
    target = folders[-1] / name
    source = {"gguf": gguf.name, "path": str(gguf.resolve()), "architecture": header.architecture}
    if digest is not None:
        source["sha256"] = digest
    convert_gguf(gguf, target, source, check_model)
    return target


def names_gguf_file(path: Path) -> bool:
    """Whether a --model path is meant as a GGUF file (an existing file, or any path ending in .gguf)."""
    return path.is_file() or path.suffix.lower() == ".gguf"


def is_converted(folder: Path) -> bool:
    """config.json is written with the weights, and the folder only appears once complete (see convert_gguf)."""
    return (folder / "config.json").is_file()


def check_is_gguf(path: Path) -> None:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise ModelError(f"model file {path} does not exist") from None
    except IsADirectoryError:
        raise ModelError(f"{path} is a folder, not a GGUF file") from None
    except PermissionError:
        raise ModelError(f"model file {path} cannot be read (permission denied)") from None
    if magic != GGUF_MAGIC:
        raise ModelError(f"model file {path.name} is not a GGUF file")


def read_header(path: Path) -> GgufHeader:
    """The file's architecture and name, after checking that every tensor it lists is wholly in the file and that
    transformers can load that architecture: both fail in seconds here instead of deep inside a long conversion."""
    from gguf import GGUFReader

    try:
        reader = GGUFReader(path)
        ends = [tensor.data_offset + int(tensor.n_bytes) for tensor in reader.tensors]
        architecture = reader.fields["general.architecture"].contents()
        title = reader.fields["general.name"].contents() if "general.name" in reader.fields else None
    except (ValueError, IndexError, KeyError, OverflowError) as exc:  # the reader's ways of meeting a short file
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"{path.name} is truncated or damaged ({reason})") from exc
    parts = reader.fields["split.count"].contents() if "split.count" in reader.fields else 1
    if parts > 1:
        raise ModelError(
            f"{path.name} is one part of a GGUF split into {parts} files, which transformers cannot load; "
            "join them into one first (llama.cpp's `llama-gguf-split --merge`)"
        )
    size = path.stat().st_size
    if ends and max(ends) > size:
        raise ModelError(f"{path.name} is truncated or damaged (its tensors need {max(ends):,} bytes, it has {size:,})")
    supported = gguf_architectures()
    if not transformers_loads(architecture, supported):
        raise ModelError(
            f"{path.name} holds a {architecture} model, which transformers cannot load from GGUF; "
            f"supported: {', '.join(supported)}"
        )
    refused = unsupported_reason(family_of_gguf(architecture))
    if refused:
        raise ModelError(f"{path.name}: {refused}")
    return GgufHeader(architecture=architecture, title=title or None)


def gguf_architectures() -> list[str]:
    """The architectures the installed transformers loads from GGUF: its legacy loader's and its newer one's."""
    from transformers.integrations.gguf import GGUF_CONFIG_ARCHS
    from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

    not_architectures = {"general", "tokenizer"}  # sections of the same mapping, listed with the architectures
    return sorted((set(GGUF_SUPPORTED_ARCHITECTURES) - not_architectures) | set(GGUF_CONFIG_ARCHS))


def transformers_loads(architecture: str, supported: list[str]) -> bool:
    # llama.cpp spells a few architectures differently from transformers: qwen2moe, gpt-oss, minimax-m2
    spellings = {architecture, architecture.replace("-", "_"), architecture.replace("moe", "_moe")}
    return any(spelling in supported for spelling in spellings)


def readable_name(gguf: Path, title: str | None) -> str:
    """A folder-safe name a person recognises: the file's name, or the model's own name for files named by their
    hash (Ollama keeps models as blobs/sha256-<hex>)."""
    stem = gguf.name[: -len(".gguf")] if gguf.name.lower().endswith(".gguf") else gguf.name
    looks_like_a_hash = re.fullmatch(r"(sha256[-_:]?)?[0-9a-f]{32,}", stem.lower()) is not None
    chosen = title if looks_like_a_hash and title else stem
    slug = re.sub(r"[^a-z0-9_]+", "-", chosen.lower()).strip("-")[:_READABLE_NAME_LENGTH].strip("-")
    return slug or "model"


def content_hash(path: Path, index_folder: Path) -> str:
    """SHA-256 of the file, taken from the index when the file's size and mtime are those it was hashed at."""
    resolved = path.resolve()
    before = resolved.stat()
    index_path = index_folder / HASH_INDEX
    known = _read_index(index_path).get(str(resolved))
    if known and known.get("size") == before.st_size and known.get("mtime_ns") == before.st_mtime_ns:
        return known["sha256"]
    digest = hashlib.sha256()
    with open(resolved, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    after = resolved.stat()
    unchanged = (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    settled = time.time_ns() - after.st_mtime_ns > _SETTLED_SECONDS * 1e9
    if unchanged and settled:
        _remember_hash(index_path, str(resolved), after, digest.hexdigest())
    return digest.hexdigest()


def _read_index(index_path: Path) -> dict:
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or damaged: the index only saves time, hashing again is correct
        return {}
    return index if isinstance(index, dict) else {}


def _remember_hash(index_path: Path, key: str, stat: os.stat_result, digest: str) -> None:
    index = _read_index(index_path)  # read again: another process may have added a file while this one hashed
    index = {path: entry for path, entry in index.items() if os.path.exists(path)}  # forget deleted files
    index[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    try:
        index_path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{HASH_INDEX}.", suffix=".tmp", dir=index_path.parent)
    except OSError:  # a folder that takes no files: the next load hashes again, which is only slower
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(index, handle, indent=1)
        os.replace(temp, index_path)  # atomic: a reader sees the old index or the new one, never half of one
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def convert_gguf(
    gguf: Path, target: Path, source: dict, check_model: Callable[[torch.nn.Module], None] | None = None
) -> None:
    """De-quantize the GGUF to float32 and save it with its tokenizer as a Hugging Face folder at `target`.

    Everything is written into a staging folder that is renamed to `target` only when complete, so a failure or
    Ctrl-C never leaves a half-written model that a later load would take for a converted one.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    # transformers joins gguf_file to the folder: a relative path would be looked for below itself
    # ("models/models/small.gguf") and then as a hub id. The folder and the bare file name find it anywhere.
    folder, name = str(gguf.resolve().parent), gguf.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        # dequantize: architectures of transformers' newer GGUF path would otherwise keep packed blocks
        quantized, loading = AutoModelForCausalLM.from_pretrained(
            folder,
            gguf_file=name,
            dtype=torch.float32,
            quantization_config=GgufConfig(dequantize=True),
            output_loading_info=True,
        )
    except (ValueError, KeyError, IndexError, NotImplementedError) as exc:
        raise ModelError(f"cannot convert {gguf.name}: {str(exc).splitlines()[0]}") from exc
    unfilled = sorted(
        set(loading.get("missing_keys") or ()) | {key for key, *_ in loading.get("mismatched_keys") or ()}
    )
    if unfilled:  # transformers fills them with random numbers and only warns: the model would talk nonsense
        shown = ", ".join(unfilled[:3]) + (f" and {len(unfilled) - 3} more" if len(unfilled) > 3 else "")
        raise ModelError(f"{gguf.name} lacks weights its {quantized.config.model_type} model needs ({shown})")
    settings = quantized.config.to_dict()
    settings.pop("quantization_config", None)  # a GGUF-tagged model refuses save_pretrained
    with torch.device("meta"):  # no second copy of the weights in memory: the loaded tensors are moved in below
        plain = AutoModelForCausalLM.from_config(type(quantized.config).from_dict(settings), dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict(), assign=True)
    plain.generation_config = quantized.generation_config
    if check_model is not None:
        check_model(plain)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / SOURCE_RECORD).write_text(json.dumps(source, indent=1), encoding="utf-8")
        try:
            os.replace(staging, target)  # atomic: the folder appears complete or not at all
        except OSError:
            if not is_converted(target):
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another process converted the same file meanwhile
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _may_create(folder: Path) -> bool:
    """Whether files can be made in `folder`, or in the nearest existing folder above it."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)
