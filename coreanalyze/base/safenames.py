"""File names derived from untrusted names (a core's file name, a process name).

Only a conservative character set survives, so a name can never climb out of the output
directory, hide as a dot-file, or carry control characters into a terminal.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
MAX_STEM = 120
# Control characters and bidirectional overrides: a name read from a core or a file's
# attributes must not move a terminal's cursor or reorder the text around it.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def without_controls(text: str, limit: int) -> str:
    """`text` with its control characters dropped, cut at `limit` characters."""
    return _CONTROL.sub("", text)[:limit]


def safe_stem(name: str, default: str = "core") -> str:
    stem = _UNSAFE.sub("_", name).strip("._-")
    return stem[:MAX_STEM] or default


def report_filename(core_name: str, extension: str) -> str:
    """`core.1234` -> `core.1234.html`; `../../etc/x` -> `etc_x.html`."""
    return safe_stem(core_name) + extension
