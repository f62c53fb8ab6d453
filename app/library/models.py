"""Loaded models by name and dtype, each loaded once even when a read and a question ask for it at the same moment."""

from __future__ import annotations

import threading
from pathlib import Path

from infinipot.core.model import LoadedModel, ModelSpec, load_model
from infinipot.core.precision import check_dtype_name, dtype_name


class ModelShelf:
    def __init__(self, home: Path, device: str = "auto", dtype: str = "auto") -> None:
        self.home = home
        self.device = device
        self.dtype = check_dtype_name(dtype)  # used when a caller names none
        self._models: dict[tuple[str, str], LoadedModel] = {}
        self._lock = threading.Lock()

    def get(self, name: str, dtype: str | None = None) -> LoadedModel:
        """The model `name` in `dtype` (None: the shelf's); `auto` and the dtype it resolves to share one copy."""
        spec = ModelSpec(name=name, device=self.device, dtype=dtype or self.dtype)
        key = (name, dtype_name(spec.torch_dtype()))
        with self._lock:
            if key not in self._models:
                self._models[key] = load_model(spec, self.home)
            return self._models[key]

    def any_loaded(self) -> bool:
        """Whether some model is loaded (the first question of a session waits for one to load)."""
        with self._lock:
            return bool(self._models)
