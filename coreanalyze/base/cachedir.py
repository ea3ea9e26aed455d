"""Where coreanalyze keeps what it learns between runs (lookup indexes, file facts)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where lookup indexes live: $COREANALYZE_CACHE_DIR, else the XDG cache dir."""
    explicit = os.environ.get("COREANALYZE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coreanalyze"
