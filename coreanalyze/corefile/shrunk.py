"""The note that marks a shrunk core: what it was shrunk from and what was dropped.

A note of its own name ("COREANALYZE"), which gdb and other readers skip, holding JSON; a
report of the shrunk core says so (model.ShrunkCore) instead of passing for the full core.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from coreanalyze.base import model
from coreanalyze.corefile import elfcore

GRAIN = 256  # a shrunk core keeps pages of this size; the Python walker reads blocks of a grain while recorded; measured on a TensorFlow core: 4.1 MiB, 11k program headers (512: 5.3 MiB, 9k)

NOTE_NAME = b"COREANALYZE"
NT_SHRUNK = 0x53484B31  # "SHK1"
FORMAT = "coreanalyze-shrunk/1"
MAX_MARKER_BYTES = 1 << 16


def marker_note(endian: str, info: model.ShrunkCore) -> bytes:
    body = json.dumps({"format": FORMAT, **asdict(info)}, sort_keys=True).encode()
    return elfcore.note(endian, NOTE_NAME, NT_SHRUNK, body)


def _from_desc(desc: bytes) -> model.ShrunkCore | None:
    if len(desc) > MAX_MARKER_BYTES:
        return None
    try:
        data = json.loads(desc)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None
    size = data.get("original_size")
    dropped = data.get("redacted")
    return model.ShrunkCore(
        original_size=size if isinstance(size, int) and size >= 0 else None,
        redacted=[str(d)[:200] for d in dropped[:32]] if isinstance(dropped, list) else [],
    )


def find_marker(layout: elfcore.CoreLayout, path: str) -> model.ShrunkCore | None:
    """The marker of a core shrunk by coreanalyze, None for any other core."""
    try:
        with open(path, "rb") as f:
            for h in layout.headers:
                if h.type != elfcore.PT_NOTE:
                    continue
                f.seek(h.offset)
                for name, note_type, desc, _start, _end in elfcore.iter_notes(layout.endian, f.read(h.filesz)):
                    if name == NOTE_NAME and note_type == NT_SHRUNK:
                        return _from_desc(desc)
    except OSError:
        return None
    return None


def without_marker(endian: str, data: bytes) -> bytes:
    """A note segment's bytes without our marker (a shrunk core shrunk again gets one marker)."""
    kept = [
        data[start:end]
        for name, t, _d, start, end in elfcore.iter_notes(endian, data)
        if not (name == NOTE_NAME and t == NT_SHRUNK)
    ]
    return b"".join(kept)


def marker_of_core(path: str) -> model.ShrunkCore | None:
    """The marker of the core file at path, None when it has none or is not a readable core."""
    from coreanalyze.base.errors import BadInput

    try:
        return find_marker(elfcore.read_layout(path), path)
    except BadInput:
        return None
