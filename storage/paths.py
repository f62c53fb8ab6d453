"""The data directory: $INFINIPOT_HOME, else the per-user data directory."""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    configured = os.environ.get("INFINIPOT_HOME")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("infinipot", appauthor=False))
