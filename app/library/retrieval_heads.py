"""Each model's retrieval heads (core.answer.retrieval_heads), calibrated the first time a question needs them and kept
under the data home, next to the converted models: `models/retrieval-heads/<model>.json`.

A calibration is a property of the weights, so one file serves every dtype and every document. A file from an
older calibration version, or one that cannot be read, is calibrated again; a home that cannot be written
keeps the calibration in memory for this process. The bundled model's calibration ships with the project
(`assets/retrieval_heads.json`, checked against a fresh calibration by tests/test_default_model.py), so a
fresh machine's first question does not wait for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from importlib import resources
from pathlib import Path

from infinipot.core.answer.retrieval_heads import (
    CALIBRATION_VERSION,
    CalibrationFailed,
    HeadsConfig,
    RetrievalHeads,
    calibrate,
)
from infinipot.core.engine import Engine
from infinipot.core.gguf_models import models_folders
from infinipot.storage.atomic import write_atomically

FOLDER = "retrieval-heads"
BUNDLED = "retrieval_heads.json"  # in infinipot.assets: {model identity: calibration record}
log = logging.getLogger(__name__)


def heads_file_name(identity: str) -> str:
    """A file name for a model identity (a folder name, a hub id or a path): readable, and unique by a hash."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", identity.rsplit("/", 1)[-1]).strip("-.")[:48] or "model"
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.json"


def bundled_heads(identity: str) -> RetrievalHeads | None:
    """The calibration shipped for `identity` (the bundled model's), if it is of the current version."""
    shipped = json.loads(resources.files("infinipot.assets").joinpath(BUNDLED).read_text(encoding="utf-8"))
    record = shipped.get(identity)
    if record is None or record.get("version") != CALIBRATION_VERSION:
        return None
    return RetrievalHeads.from_dict(record)


class RetrievalHeadsShelf:
    def __init__(self, home: Path, config: HeadsConfig | None = None) -> None:
        self.home = home
        self.config = config or HeadsConfig()
        self._found: dict[str, RetrievalHeads | None] = {}
        self._lock = threading.Lock()

    def paths(self, identity: str) -> list[Path]:
        """Where `identity`'s calibration may be kept, one path per models folder (core.gguf_models)."""
        return [folder / FOLDER / heads_file_name(identity) for folder in models_folders(self.home)]

    def stored_path(self, identity: str) -> Path:
        """Where `identity`'s calibration is written (the last models folder: the home's own when writable)."""
        return self.paths(identity)[-1]

    def stored(self, identity: str) -> RetrievalHeads | None:
        """The calibration kept for `identity` (looked for in every models folder), or None."""
        for path in self.paths(identity):
            try:
                heads = RetrievalHeads.from_dict(json.loads(path.read_text(encoding="utf-8")))
            except FileNotFoundError:
                continue
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("retrieval heads in %s unreadable (%s); calibrating again", path, exc)
                continue
            if heads.version == CALIBRATION_VERSION:
                return heads
        return bundled_heads(identity)

    def get(self, engine: Engine) -> RetrievalHeads | None:
        """`engine`'s model's retrieval heads: from memory, from the home, or calibrated now and kept (about a
        minute on two CPU cores for the bundled model; once per model and machine). None when the model cannot
        be calibrated (its tokenizer splits every synthetic fact differently in context): the later layers
        point then."""
        identity = engine.loaded.identity
        with self._lock:
            if identity in self._found:
                return self._found[identity]
            heads = self.stored(identity)
            if heads is None:
                try:
                    heads = calibrate(engine, self.config)
                except CalibrationFailed as exc:
                    log.warning("retrieval heads of %s: %s; the later layers point instead", identity, exc)
                else:
                    self._keep(identity, heads)
            self._found[identity] = heads
            return heads

    def forget(self, identity: str) -> None:
        """Drop `identity`'s calibration (its model was deleted): the next use calibrates again."""
        with self._lock:
            self._found.pop(identity, None)
            for path in self.paths(identity):
                path.unlink(missing_ok=True)

    def _keep(self, identity: str, heads: RetrievalHeads) -> None:
        path = self.stored_path(identity)
        text = json.dumps({"model": identity, **heads.to_dict()}, indent=1) + "\n"
        try:
            write_atomically(path, lambda temp: temp.write_text(text, encoding="utf-8"))
        except OSError as exc:  # a read-only home: this process keeps it in memory
            log.warning("retrieval heads not kept at %s (%s)", path, exc)
