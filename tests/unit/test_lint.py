"""`ruff check` is clean (configuration in pyproject.toml): run first, with the unit tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.require import require

REPO = Path(__file__).resolve().parents[2]


def test_ruff_check_is_clean():
    require(module="ruff", what="ruff (the `test` extra)")
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(REPO)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
