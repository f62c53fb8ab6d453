"""What the Settings tab chooses for the next reads, validated before anything is queued."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from infinipot.core.config import PotConfig

_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class ReadSettings:
    model: str = "default"
    pot_size: int = PotConfig.pot_size
    keep_size: int | None = None  # None: PotConfig's default, half the pot
    nuc_ratio: float = PotConfig.nuc_ratio
    cap_mode: str = PotConfig.cap_mode
    question: str | None = None
    method: str = PotConfig.method
    nuc_unit: str = PotConfig.nuc_unit

    def pot_config(self) -> PotConfig:
        """The pot settings; PotConfig validates them (ValueError with one line)."""
        keep = None if self.keep_size in (None, "", 0) else whole_number("kept size", self.keep_size)
        question = (self.question or "").strip() or None
        return PotConfig(
            pot_size=whole_number("pot size", self.pot_size),
            keep_size=keep,
            nuc_ratio=float(self.nuc_ratio),
            method=self.method,
            cap_mode=self.cap_mode,
            question=question if self.cap_mode == "question" else None,
            nuc_unit=self.nuc_unit,
        )

    def model_name(self) -> str:
        """'default', an existing model folder, or something shaped like a hub id (org/name)."""
        name = (self.model or "").strip()
        if not name or name == "default":
            return "default"
        path = Path(name).expanduser()
        if path.exists() or name.startswith(("/", ".", "~")):
            if not path.is_dir():
                raise ValueError(f"model folder {name} does not exist")
            if not (path / "config.json").is_file():
                raise ValueError(f"{name} is not a Hugging Face model folder (no config.json)")
            return str(path.resolve())
        if not _HUB_ID.match(name):
            raise ValueError(f"model {name!r} is neither 'default', a model folder, nor a hub id like org/name")
        return name

    def describe(self) -> str:
        config = self.pot_config()
        model = self.model_name()
        source = "the bundled SmolLM2-135M-Instruct" if model == "default" else model
        hub = " (a hub id: needs the model in the local Hugging Face cache or internet)" if _HUB_ID.match(model) else ""
        cap = "CaP-Q" if config.cap_mode == "question" else "CaP-G"
        return (
            f"Settings are valid: {source}{hub}; pot |M| = {config.pot_size:,}, kept |C| = {config.keep_size:,}, "
            f"NuC ratio {config.nuc_ratio:g} per {config.nuc_unit}, {cap}, method {config.method}. "
            "They apply to the next uploads."
        )


def whole_number(name: str, value) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if number != int(number):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(number)
