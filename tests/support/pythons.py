"""The CPython interpreters on this machine the tests run crashers under."""

from __future__ import annotations

import os
from pathlib import Path

# pyenv's own rule: $PYENV_ROOT, else ~/.pyenv.
PYENV_PYTHON = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
SYSTEM_PYTHON = Path("/usr/bin/python3")


def pyenv_python(minor: str) -> Path | None:
    """The pyenv-built CPython 3.<minor> on this machine, if any."""
    for d in sorted(PYENV_PYTHON.glob(f"3.{minor}.*"), reverse=True):
        exe = d / "bin" / f"python3.{minor}"
        if exe.exists():
            return exe
    return None
