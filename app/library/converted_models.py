"""The converted models cached under the data home (`infinipot models`): listed with their size on disk and the
GGUF file each came from, and deleted by name (a deleted model is converted again when next used)."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from infinipot.app.library.retrieval_heads import RetrievalHeadsShelf
from infinipot.core.answer.answer_confidence import ConfidenceModel
from infinipot.core.errors import ModelError
from infinipot.core.gguf_models import SOURCE_RECORD, is_converted, models_folders


@dataclass(frozen=True)
class ConvertedModel:
    name: str  # the folder's name, which is also the model's identity in stored pots
    folder: Path
    disk_bytes: int
    source: str | None  # the GGUF file it was converted from, when its conversion recorded one
    # Tuned to chat (its tokenizer has a chat template); a base model's own writing reads poorly, and its checked
    # answers are what it is for.
    follows_instructions: bool = True
    # How its checked answers are decided: "calibrated" (the decision was fitted on its signals) or "strict"
    # (core.answer.answer_confidence.ConfidenceModel.for_model).
    decided: str = "calibrated"

    def as_json(self) -> dict:
        return {**asdict(self), "folder": str(self.folder)}


def converted_models(home: Path) -> list[ConvertedModel]:
    """Every complete converted model, by name; staging folders of conversions in progress are not models yet."""
    found = {}
    for models in models_folders(home):
        if not models.is_dir():
            continue
        for folder in sorted(models.iterdir()):
            if folder.name.startswith(".") or folder.name in found or not is_converted(folder):
                continue
            found[folder.name] = ConvertedModel(
                folder.name,
                folder,
                _disk_bytes(folder),
                _source(folder),
                _has_chat_template(folder),
                "calibrated" if ConfidenceModel().fitted_for(folder.name) else "strict",
            )
    return sorted(found.values(), key=lambda model: model.name)


def delete_converted_model(home: Path, name: str) -> ConvertedModel:
    """Remove the converted model `name`; the name must be one `converted_models` lists, never a path."""
    if name in ("", ".", "..") or any(separator in name for separator in ("/", "\\")):
        raise ModelError(f"{name!r} is not a model name: give a name that `infinipot models` lists, not a path")
    model = next((model for model in converted_models(home) if model.name == name), None)
    if model is None:
        raise ModelError(f"no converted model is named {name!r} (see `infinipot models`)")
    shutil.rmtree(model.folder)
    RetrievalHeadsShelf(home).forget(name)  # a converted model's identity is its folder's name
    return model


def _disk_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def _has_chat_template(folder: Path) -> bool:
    """Whether the converted tokenizer carries a chat template (in its config, or a file of its own)."""
    if any((folder / name).is_file() for name in ("chat_template.jinja", "chat_template.json")):
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("chat_template"))


def describe(model: ConvertedModel) -> str:
    """What a person needs to know of a model beyond its size: chat or base, and how its answers are decided."""
    kind = "chat model" if model.follows_instructions else "base model (no chat template): it writes poorly"
    decided = {
        "calibrated": "answers decided as calibrated for it",
        "strict": "answers decided strictly (the decision was fitted on the bundled model)",
    }[model.decided]
    return f"{kind}; {decided}"


def _source(folder: Path) -> str | None:
    try:
        record = json.loads((folder / SOURCE_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # converted before sources were recorded, or the record is damaged
        return None
    if not isinstance(record, dict):
        return None
    return record.get("path") or record.get("gguf")
