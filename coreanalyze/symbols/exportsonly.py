"""The GPU vendors' libraries that name only their exported functions (host_calls.toml,
[libraries]): read apart from the call rules, for the symbols stage."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from coreanalyze import rulesdata
from coreanalyze.rulesdata.kinds import GPU_HOST_CALLS

RULES_FILE = Path(__file__).resolve().parent.parent / "gpu" / "host_calls.toml"


@lru_cache(maxsize=1)
def _exports_only() -> re.Pattern[str]:
    raw = rulesdata.shipped(RULES_FILE, GPU_HOST_CALLS)
    return re.compile(raw.get("libraries", {}).get("exports_only", r"$^"))


def exports_only(path: str | None) -> bool:
    """Whether the library at path names only its exported functions (libcuda, libcudnn, ...)."""
    return bool(path) and _exports_only().search(os.path.basename(path)) is not None
