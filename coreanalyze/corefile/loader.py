"""The dynamic loader's list of loaded libraries (`struct link_map`), read from a core's memory.

gdb finds a process's shared libraries by the names in this list (`l_name`), which are not
always the paths the kernel recorded for the mappings: the loader keeps names as they were
found, e.g. `.../tensorflow/python/platform/../../libtensorflow_cc.so.2` for a library found
through `$ORIGIN/../..`, or `/lib/x86_64-linux-gnu/libc.so.6` for `/usr/lib/...`. A directory
meant to stand in for the root (gdb's sysroot) must answer under those names too.

Everything here is read from an untrusted core: every read is bounded, the list walk is
bounded and stops on a cycle, and nothing read is ever executed or opened.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from coreanalyze.corefile.structures import CoreNotes

PT_LOAD = 1
PT_DYNAMIC = 2
PT_PHDR = 6
DT_NULL = 0
DT_DEBUG = 21

MAX_PROGRAM_HEADERS = 256
MAX_DYNAMIC_ENTRIES = 4096
MAX_NAME = 4096

# The list itself is walked by coreanalyze.process.process.Process.link_map.
PHDR_SIZE = 56
DYN_SIZE = 16


@dataclass(frozen=True)
class LoadedLibrary:
    name: str  # l_name as the loader kept it
    base: int  # l_addr: the difference between run-time and link-time addresses


def libraries_of(process: Any) -> list[LoadedLibrary]:
    """The loader's libraries in load order (the executable and nameless entries left out), from
    a coreanalyze.process.process.Process (its link_map walk).

    Empty when the core does not hold the loader's state (a static program, a crash before
    the loader ran, a damaged core).
    """
    fmt = "<" if process.little_endian else ">"
    entries, _broken_at = process.link_map(_r_debug_address(process.notes, fmt))
    out: list[LoadedLibrary] = []
    for entry in entries:
        if entry.name_address:
            # The core alone: the list is read once, and must not depend on whether the module
            # table (the mapped files' tier) was set when it was first asked for.
            raw = process.read_cstring(entry.name_address, MAX_NAME, core_only=True)
            if raw:
                name = raw.decode("utf-8", errors="surrogateescape")
                if name.startswith("/") and "\0" not in name:
                    out.append(LoadedLibrary(name=name, base=entry.base))
    return out


def _r_debug_address(notes: CoreNotes, fmt: str) -> int | None:
    """&r_debug from the executable's DT_DEBUG, which the loader fills in at start-up."""
    phdr = notes.auxv.get("AT_PHDR")
    phnum = notes.auxv.get("AT_PHNUM")
    phent = notes.auxv.get("AT_PHENT", PHDR_SIZE)
    if not isinstance(phdr, int) or not isinstance(phnum, int) or phent != PHDR_SIZE:
        return None
    phnum = min(phnum, MAX_PROGRAM_HEADERS)
    raw = notes.memory.read(phdr, phnum * PHDR_SIZE)
    if raw is None or len(raw) != phnum * PHDR_SIZE:
        return None
    headers = [struct.unpack_from(fmt + "IIQQQQQQ", raw, i * PHDR_SIZE) for i in range(phnum)]
    bias = None
    for p_type, _flags, _offset, vaddr, *_rest in headers:
        if p_type == PT_PHDR:
            bias = phdr - vaddr
            break
    if bias is None:
        # No PT_PHDR: the headers sit in the first page of the segment that maps offset 0.
        first = next((h for h in headers if h[0] == PT_LOAD and h[2] == 0), None)
        mapping = notes.mapping_containing(phdr)
        if first is None or mapping is None or mapping.file_offset != 0:
            return None
        bias = mapping.start - first[3]
    dynamic = next((h for h in headers if h[0] == PT_DYNAMIC), None)
    if dynamic is None:
        return None
    address = (bias + dynamic[3]) & 0xFFFFFFFFFFFFFFFF
    count = min(dynamic[5] // DYN_SIZE, MAX_DYNAMIC_ENTRIES)
    data = notes.memory.read(address, count * DYN_SIZE)
    if data is None:
        return None
    for i in range(len(data) // DYN_SIZE):
        tag, value = struct.unpack_from(fmt + "qQ", data, i * DYN_SIZE)
        if tag == DT_NULL:
            break
        if tag == DT_DEBUG:
            return value or None
    return None
