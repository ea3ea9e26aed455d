"""_Py_DebugOffsets: the block at the start of _PyRuntime in which CPython 3.13 and later describe
their own structures, read by its field order (tables.DEBUG_OFFSETS_FIELDS) and checked before it
is believed: a corrupt core may hold anything there."""

from __future__ import annotations

import struct
from typing import NamedTuple

from .memory import Memory
from .tables import DEBUG_OFFSET_KEYS, DEBUG_OFFSET_SIZES, DEBUG_OFFSETS_FIELDS
from .version import hex_version

MAX_STRUCT_SIZE = 1 << 20  # no runtime structure comes near this; a larger size is garbage
DEBUG_OFFSETS_COOKIE = b"xdebugpy"


class DebugOffsets(NamedTuple):
    """What an interpreter's _Py_DebugOffsets block says (3.13+)."""

    version: tuple[int, int, int]
    free_threaded: bool
    offsets: dict[str, int]  # layout keys
    read_as: tuple[int, int]  # whose field order it was read with (a newer version: the newest known)
    problem: str | None  # why the offsets cannot be trusted; None when they check out


def read_debug_offsets(mem: Memory, runtime: int) -> DebugOffsets | None:
    """The _Py_DebugOffsets at the start of _PyRuntime; None when there is none (before 3.13),
    or when not even its version can be read."""
    if mem.read(runtime, 8) != DEBUG_OFFSETS_COOKIE:
        return None
    version = hex_version(mem.u64(runtime + 8))
    if version is None or version[:2] < min(DEBUG_OFFSETS_FIELDS):
        return None
    read_as = version[:2] if version[:2] in DEBUG_OFFSETS_FIELDS else max(DEBUG_OFFSETS_FIELDS)
    fields = DEBUG_OFFSETS_FIELDS[read_as]
    values = dict(zip(fields, struct.unpack(f"<{len(fields)}Q", mem.read(runtime + 16, 8 * len(fields)))))
    out = {DEBUG_OFFSET_KEYS[f]: v for f, v in values.items() if f in DEBUG_OFFSET_KEYS}
    free_threaded = values["free_threaded"] == 1
    problem = None if values["free_threaded"] in (0, 1) else f"free_threaded is {values['free_threaded']}"
    problem = problem or _implausible(out)
    # The GIL's fields, given relative to the interpreter (its embedded _gil), are read relative
    # to the GIL the interpreter points at.
    base = out.pop("interp.gil_embedded")
    out["gil.locked"] = out.pop("interp.gil_locked") - base
    out["gil.holder"] = out.pop("interp.gil_holder") - base
    if not free_threaded:
        # Zero in a default build: there is no such field (the GIL cannot be disabled, one
        # bytecode copy per code object).
        for key in ("gil.enabled", "code.tlbc", "iframe.tlbc_index"):
            out.pop(key, None)
    if problem is None and not (0 <= out["gil.locked"] < 4096 and 0 <= out["gil.holder"] < 4096):
        problem = "the GIL's offsets lie outside the interpreter's GIL"
    return DebugOffsets(version, free_threaded, out, read_as, problem)


def _implausible(offsets: dict[str, int]) -> str | None:
    """Why a block's offsets cannot be right (a structure larger than any is, a field outside its
    structure); None when they are plausible."""
    for prefix, size_key in DEBUG_OFFSET_SIZES.items():
        size = offsets.get(size_key, 0)
        if not 0 < size <= MAX_STRUCT_SIZE:
            return f"{size_key} is {size}"
        for key, value in offsets.items():
            if key.startswith(prefix + ".") and key != size_key and value >= size:
                return f"{key} ({value}) lies outside its structure ({size} bytes)"
    return None
