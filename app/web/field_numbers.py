"""Numbers typed into the page's fields, checked with a one-line message. No imports beyond the standard
library: the Gradio layer uses them without loading torch."""

from __future__ import annotations

import math


def number(name: str, value) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(result):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return result


def whole_number(name: str, value) -> int:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, got {value!r}") from None
    if not math.isfinite(result) or result != int(result):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(result)
