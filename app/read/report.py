"""What a read did, as the CLI prints it and `read --json` returns it."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    pot_id: int
    resumed_from: int = 0
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
            "resumed_from": self.resumed_from,
            "warnings": self.warnings,
        }
