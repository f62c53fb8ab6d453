"""Pots on disk: one safetensors file of tensors plus JSON metadata, and a JSON index of documents.

A stop-gap until the SQLite storage lands; it already writes atomically and never uses pickle.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .atomic import write_atomically


def pot_key(fingerprint: str, model_identity: str, settings: dict) -> str:
    """Same document bytes + model + pot settings -> same key -> the stored pot is reused."""
    blob = json.dumps({"doc": fingerprint, "model": model_identity, "settings": settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


class PotFiles:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.pots = home / "pots"
        self.index_path = home / "documents.json"

    def _tensor_path(self, key: str) -> Path:
        return self.pots / f"{key}.safetensors"

    def _meta_path(self, key: str) -> Path:
        return self.pots / f"{key}.json"

    def save_pot(self, key: str, tensors: dict[str, torch.Tensor], meta: dict) -> None:
        cpu = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
        write_atomically(self._tensor_path(key), lambda p: save_file(cpu, str(p)))
        # Metadata last: its presence says the tensor file is complete.
        write_atomically(self._meta_path(key), lambda p: p.write_text(json.dumps(meta, indent=1)))

    def load_pot(self, key: str) -> tuple[dict[str, torch.Tensor], dict] | None:
        meta_path, tensor_path = self._meta_path(key), self._tensor_path(key)
        if not (meta_path.is_file() and tensor_path.is_file()):
            return None
        try:
            meta = json.loads(meta_path.read_text())
            tensors = load_file(str(tensor_path))
        except (OSError, ValueError, json.JSONDecodeError):
            return None  # unreadable: treated as absent, the document is read again
        return tensors, meta

    def documents(self) -> dict[str, dict]:
        if not self.index_path.is_file():
            return {}
        try:
            return json.loads(self.index_path.read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    def record_document(self, doc_id: str, entry: dict) -> None:
        index = self.documents()
        index[doc_id] = {**index.get(doc_id, {}), **entry}
        write_atomically(self.index_path, lambda p: p.write_text(json.dumps(index, indent=1)))
