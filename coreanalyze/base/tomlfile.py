"""The one place the TOML parser is imported: the standard library's tomllib (3.11+), or tomli,
the same parser under its PyPI name, on Python 3.10 (a dependency there, see pyproject.toml)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, load, loads
else:  # Python 3.10
    from tomli import TOMLDecodeError, load, loads

__all__ = ["TOMLDecodeError", "load", "loads"]
