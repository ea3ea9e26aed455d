"""Which CPython a process runs: from the hex version it exports (Py_Version, _Py_DebugOffsets), or
from the name of its libpython3.X or python3.X file."""

from __future__ import annotations

import re

from .target import Target

# libpython3.X.so.1.0, python3.X and the like: the interpreter's version in its file name.
VERSIONED_NAME = re.compile(r"^(?:lib)?python3\.(\d{1,2})(?:[^\d]|$)")


def version_from_name(name: str) -> tuple[int, int] | None:
    """(3, X) of a file name (not a path) such as libpython3.X.so.1.0 or python3.X."""
    m = VERSIONED_NAME.match(name)
    return (3, int(m.group(1))) if m else None


def version_from_names(target: Target) -> tuple[int, int] | None:
    """3.X from a loaded libpython3.X or the python3.X executable, when Py_Version is absent."""
    for name in target.object_files():
        version = version_from_name(name.rsplit("/", 1)[-1])
        if version:
            return version
    return None


def hex_version(value: int) -> tuple[int, int, int] | None:
    major, minor, micro = (value >> 24) & 0xFF, (value >> 16) & 0xFF, (value >> 8) & 0xFF
    if major == 3 and minor < 100:
        return (major, minor, micro)
    return None


def dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(v) for v in version)
