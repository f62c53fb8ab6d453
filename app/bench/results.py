"""What every benchmark shares: size and list arguments, and a resumable JSONL log of finished runs."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.core.scorers import METHODS

_SUFFIXES = {"k": 1024, "m": 1024**2}


def parse_length(text: str) -> int:
    """'4k' -> 4096, '1m' -> 1048576 (binary, as context sizes are usually meant), '3000' -> 3000."""
    cleaned = text.strip().lower()
    scale = _SUFFIXES.get(cleaned[-1:], 1)
    number = cleaned[:-1] if scale > 1 else cleaned
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise ValueError(f"not a length: {text!r} (use e.g. 4096, 4k or 1m)") from None
    if value < 1:
        raise ValueError(f"a length must be positive, got {text!r}")
    return value


def parse_lengths(text: str) -> tuple[int, ...]:
    return tuple(parse_length(part) for part in text.split(",") if part.strip())


def parse_depths(text: str) -> tuple[float, ...]:
    depths = []
    for part in text.split(","):
        if part.strip():
            try:
                depth = float(part)
            except ValueError:
                raise ValueError(f"not a depth: {part!r} (use numbers within [0, 1])") from None
            if not 0.0 <= depth <= 1.0:
                raise ValueError(f"a depth must be within [0, 1], got {part!r}")
            depths.append(depth)
    return tuple(depths)


def parse_methods(text: str) -> tuple[str, ...]:
    methods = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown method(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(METHODS)}")
    return methods


def length_label(tokens: int) -> str:
    """4096 -> '4K', 1048576 -> '1M', 3000 -> '3000'."""
    for suffix, scale in (("M", 1024**2), ("K", 1024)):
        if tokens % scale == 0:
            return f"{tokens // scale}{suffix}"
    return str(tokens)


class ResultLog:
    """One JSON object per finished run, appended and flushed as each run ends, so a rerun can skip it.

    The first line holds the settings the results depend on; a rerun with other settings is refused rather
    than mixing results. A half-written last line (an interrupted run) is ignored and rewritten.
    """

    def __init__(self, path: Path, settings: dict) -> None:
        self.path = path
        self.settings = settings
        self.records: list[dict] = []
        if path.exists():
            self._load()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._rewrite()

    def _load(self) -> None:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        parsed = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                break  # an interrupted write: everything from here on is dropped
        if not parsed or parsed[0].get("settings") is None:
            raise ValueError(f"{self.path} is not a benchmark log; choose another --out")
        stored = parsed[0]["settings"]
        if stored != self.settings:
            differ = sorted(k for k in {*stored, *self.settings} if stored.get(k) != self.settings.get(k))
            raise ValueError(
                f"{self.path} holds results for other settings ({', '.join(differ)} differ); "
                "choose another --out or rerun with the same settings"
            )
        self.records = parsed[1:]
        if len(parsed) != len(lines):
            self._rewrite()

    def _rewrite(self) -> None:
        staging = self.path.with_suffix(".tmp")
        lines = [json.dumps({"settings": self.settings})] + [json.dumps(r) for r in self.records]
        staging.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(staging, self.path)

    def done(self, key_fields: Iterable[str]) -> set[tuple]:
        fields = tuple(key_fields)
        return {tuple(r[f] for f in fields) for r in self.records}

    def append(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
            os.fsync(out.fileno())
        self.records.append(record)


def resolved_dtype(args: argparse.Namespace) -> str:
    """The dtype `--dtype` names on this machine and device (auto resolved), as benchmark results record it."""
    from infinipot.core.model import ModelSpec
    from infinipot.core.precision import dtype_name

    return dtype_name(ModelSpec(device=args.device, dtype=getattr(args, "dtype", "auto")).torch_dtype())


@dataclass(frozen=True, kw_only=True)
class BenchSettings:
    """What every benchmark names: the lengths and methods it measures, where its results go, and the model run."""

    lengths: tuple[int, ...]
    methods: tuple[str, ...]
    out: Path
    model: str = "default"
    pot_size: int = PotConfig.pot_size
    keep: int | None = None  # |C|; None: PotConfig's default, as in `infinipot read`
    device: str = "auto"
    dtype: str = "float32"  # resolved (core.precision.resolve_dtype), so that results record what ran

    def __post_init__(self) -> None:
        if not self.lengths or not self.methods:
            raise ValueError("give at least one length and one method")

    @classmethod
    def from_args(cls, args: argparse.Namespace, **given):
        """The settings of a command line: the lengths, methods, folder and dtype parsed, `given` (what a benchmark
        writes in another form: parsed lists, a negated flag), and every other field from its option's name."""
        given = {
            "lengths": parse_lengths(args.lengths),
            "methods": parse_methods(args.methods),
            "out": Path(args.out),
            "dtype": resolved_dtype(args),
            **given,
        }
        named = {
            field.name: getattr(args, field.name)
            for field in dataclasses.fields(cls)
            if field.name not in given and hasattr(args, field.name)
        }
        return cls(**named, **given)

    def run_identity(self, benchmark: str) -> dict:
        """What every benchmark's results depend on besides the cell (each adds its own settings)."""
        return {
            "benchmark": benchmark,
            "model": self.model,
            "pot_size": self.pot_size,
            "keep": self.keep,
            **({"dtype": self.dtype} if self.dtype != "float32" else {}),  # folders from before --dtype were fp32
        }
