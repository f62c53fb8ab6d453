"""What a read did, as the CLI prints it and `read --json` returns it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields


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
        """Every field but pot_id, in their order, seconds to the millisecond."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "pot_id"}
        return shown | {"seconds": round(self.seconds, 3)}
