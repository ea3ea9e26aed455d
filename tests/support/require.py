"""The one rule for something a test needs that is not here: on a workstation the test skips
and says what to install; in CI (CI=true) it fails, because CI must prove every test ran."""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn, overload

import pytest


def missing(what: str, *, module_level: bool = False) -> NoReturn:
    """Fail (in CI) or skip (elsewhere) because `what` is not available."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"required in CI but not available: {what}", pytrace=False)
    pytest.skip(f"not available: {what}", allow_module_level=module_level)


@overload
def require(program: str) -> str: ...
@overload
def require(*, module: str, what: str | None = None, module_level: bool = False) -> ModuleType: ...


def require(program: str | None = None, *, module: str | None = None, what: str | None = None,
            module_level: bool = False) -> str | ModuleType:  # fmt: skip
    """A program on PATH (its path) or an importable module (the module)."""
    if program is not None:
        return shutil.which(program) or missing(what or program, module_level=module_level)
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(what or module, module_level=module_level)
