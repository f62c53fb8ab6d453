"""Loaded models by name, each loaded once even when a read and a question ask for it at the same moment."""

from __future__ import annotations

import threading
from pathlib import Path

from infinipot.core.model import LoadedModel, ModelSpec, load_model


class ModelShelf:
    def __init__(self, home: Path, device: str = "auto") -> None:
        self.home = home
        self.device = device
        self._models: dict[str, LoadedModel] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> LoadedModel:
        with self._lock:
            if name not in self._models:
                self._models[name] = load_model(ModelSpec(name=name, device=self.device), self.home)
            return self._models[name]
