"""The service layer shared by the CLI and the UI: read documents into pots, answer from stored pots."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel, ModelSpec, load_model
from infinipot.core.pot import Pot
from infinipot.ingest import IngestError, file_fingerprint, open_document
from infinipot.storage.paths import data_home
from infinipot.storage.pot_files import PotFiles, pot_key


class DocumentNotFound(ValueError):
    """A doc_id or path that names no document."""


@dataclass
class ReadReport:
    doc_id: str
    name: str
    tokens: int
    cycles: int
    pot_entries: int
    peak_entries: int
    seconds: float
    reused: bool
    pot_key: str
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "doc_id": self.doc_id,
            "name": self.name,
            "tokens": self.tokens,
            "cycles": self.cycles,
            "pot_entries": self.pot_entries,
            "peak_entries": self.peak_entries,
            "seconds": round(self.seconds, 3),
            "reused": self.reused,
            "warnings": self.warnings,
        }


@dataclass
class StoredPot:
    doc_id: str
    key: str
    pot: Pot
    engine: Engine


class DocumentService:
    """Owns loaded models (one per name) and the data directory."""

    def __init__(self, home: Path | None = None, device: str = "auto") -> None:
        self.home = home or data_home()
        self.files = PotFiles(self.home)
        self.device = device
        self._models: dict[str, LoadedModel] = {}

    def model(self, name: str) -> LoadedModel:
        if name not in self._models:
            self._models[name] = load_model(ModelSpec(name=name, device=self.device), self.home)
        return self._models[name]

    def read(
        self,
        path: str | Path,
        config: PotConfig,
        model_name: str = "default",
        on_progress: Callable[[Pot], None] | None = None,
    ) -> ReadReport:
        """Read a document into a pot and store it, or reuse the stored pot for the same bytes and settings."""
        started = time.perf_counter()
        document = open_document(Path(path))
        fingerprint = file_fingerprint(Path(path))
        doc_id = fingerprint[:16]
        engine = Engine(self.model(model_name), config)
        key = pot_key(fingerprint, engine.loaded.identity, config.identity())
        stored = self.files.load_pot(key)
        if stored is not None:
            _, meta = stored
            self._record(doc_id, path, document, fingerprint, key, meta, model_name)
            return ReadReport(
                doc_id=doc_id,
                name=document.name,
                tokens=meta["tokens"],
                cycles=meta["counters"]["cycles"],
                pot_entries=meta["pot_entries"],
                peak_entries=meta["counters"]["peak_entries"],
                seconds=time.perf_counter() - started,
                reused=True,
                pot_key=key,
            )
        stream = document.token_stream(engine.tokenizer, chunk_tokens=max(config.forward_tokens, 256))
        pot = engine.read(stream, on_step=on_progress)
        if pot.document_tokens == 0:
            raise IngestError(f"{document.name} contains no text to read")
        seconds = time.perf_counter() - started
        meta = {
            "doc_id": doc_id,
            "model": model_name,
            "model_identity": engine.loaded.identity,
            "settings": config.identity(),
            "counters": pot.counters(),
            "tokens": pot.document_tokens,
            "pot_entries": pot.entries,
            "seconds": seconds,
            "created": datetime.now(UTC).isoformat(),
            "warnings": list(stream.warnings),
        }
        self.files.save_pot(key, pot.tensors(), meta)
        (self.home / "maps").mkdir(parents=True, exist_ok=True)
        stream.location_map.save(self.home / "maps" / f"{doc_id}.map")
        self._record(doc_id, path, document, fingerprint, key, meta, model_name)
        return ReadReport(
            doc_id=doc_id,
            name=document.name,
            tokens=pot.document_tokens,
            cycles=pot.cycles,
            pot_entries=pot.entries,
            peak_entries=pot.peak_entries,
            seconds=seconds,
            reused=False,
            pot_key=key,
            warnings=list(stream.warnings),
        )

    def _record(self, doc_id, path, document, fingerprint, key, meta, model_name) -> None:
        self.files.record_document(
            doc_id,
            {
                "name": document.name,
                "path": str(Path(path).resolve()),
                "fingerprint": fingerprint,
                "kind": document.kind,
                "size_bytes": document.size_bytes,
                "pages": document.pages,
                "tokens": meta["tokens"],
                "latest_pot": key,
                "model": model_name,
            },
        )

    def open_pot(self, doc: str, default_config: PotConfig | None = None) -> tuple[StoredPot, bool]:
        """The stored pot for a doc_id (or unique prefix) or a path; a path not yet read is read first.

        Returns the pot and whether it was reused (False when this call had to read the document).
        """
        index = self.files.documents()
        matches = [doc_id for doc_id in index if doc_id.startswith(doc)] if doc else []
        reused = True
        if len(matches) != 1:
            path = Path(doc)
            if not path.exists():
                if len(matches) > 1:
                    raise DocumentNotFound(f"{doc!r} matches several documents; give more of the doc_id")
                raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot read`)")
            report = self.read(path, default_config or PotConfig())
            reused = report.reused
            doc_id, key = report.doc_id, report.pot_key
        else:
            doc_id = matches[0]
            key = index[doc_id]["latest_pot"]
        stored = self.files.load_pot(key)
        if stored is None:
            entry = index.get(doc_id, {})
            if entry.get("path") and Path(entry["path"]).exists():
                report = self.read(entry["path"], default_config or PotConfig(), entry.get("model", "default"))
                stored, reused = self.files.load_pot(report.pot_key), False
            if stored is None:
                raise DocumentNotFound(f"the stored pot of {doc_id} is missing and its file cannot be found")
        tensors, meta = stored
        config = PotConfig(**meta["settings"])
        engine = Engine(self.model(meta["model"]), config)
        pot = Pot.from_tensors({k: v.to(engine.loaded.device) for k, v in tensors.items()}, meta["counters"])
        return StoredPot(doc_id=doc_id, key=key, pot=pot, engine=engine), reused

    def ask(self, doc: str, question: str, max_new_tokens: int = 256) -> tuple[Iterator[str], AnswerStats, bool]:
        stored, reused = self.open_pot(doc)
        stats = AnswerStats()
        return stored.engine.answer(stored.pot, question, max_new_tokens, stats), stats, reused

    def summarize(self, doc: str, max_new_tokens: int = 256) -> tuple[Iterator[str], AnswerStats]:
        stored, _ = self.open_pot(doc)
        stats = AnswerStats()
        return stored.engine.summarize(stored.pot, max_new_tokens, stats), stats
