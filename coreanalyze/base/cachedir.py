"""Where coreanalyze keeps what it learns between runs (lookup indexes, file facts)."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """Where lookup indexes live: $COREANALYZE_CACHE_DIR, else the XDG cache dir; one this user
    cannot use (another user's home, a read-only file system) gives way to a private directory
    in the temporary one: an unusable cache costs the cache, never the report."""
    chosen = configured_cache_dir()
    return chosen if _usable(str(chosen)) else _private_fallback()


def configured_cache_dir() -> Path:
    explicit = os.environ.get("COREANALYZE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "coreanalyze"


@functools.lru_cache(maxsize=16)
def _usable(path: str) -> bool:
    """The directory exists and is ours to read and write, or could be made where it would go."""
    probe = Path(path)
    try:
        while not probe.exists():
            if probe.parent == probe:
                return False
            probe = probe.parent
        return probe.is_dir() and os.access(probe, os.R_OK | os.W_OK | os.X_OK)
    except OSError:  # a directory on the way that we may not enter
        return False


@functools.cache
def _private_fallback() -> Path:
    """A directory only this user may enter, made once per process (never one that another user
    could have made for us to follow)."""
    return Path(tempfile.mkdtemp(prefix=f"coreanalyze-cache-{os.getuid()}-"))
