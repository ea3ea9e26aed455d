"""The public PyPI for the few tests that use it: reachable or not, and pip pointed at it alone."""

from __future__ import annotations

import os
import urllib.request

PUBLIC_INDEX = "https://pypi.org/simple"


def public_index_reachable(project: str = "numpy") -> bool:
    try:
        with urllib.request.urlopen(f"{PUBLIC_INDEX}/{project}/", timeout=15) as answer:
            return answer.status == 200
    except OSError:
        return False


def use_public_index(monkeypatch) -> None:
    """pip sees the public index only: no mirror, find-links or config file of this machine's."""
    for name in ("PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", PUBLIC_INDEX)
