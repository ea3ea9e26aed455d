"""File names derived from untrusted names (a core's file name, a process name).

Only a conservative character set survives, so a name can never climb out of the output
directory, hide as a dot-file, or carry control characters into a terminal.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
MAX_STEM = 120


def safe_stem(name: str, default: str = "core") -> str:
    stem = _UNSAFE.sub("_", name).strip("._-")
    return stem[:MAX_STEM] or default


def report_filename(core_name: str, extension: str) -> str:
    """`core.1234` -> `core.1234.html`; `../../etc/x` -> `etc_x.html`."""
    return safe_stem(core_name) + extension
