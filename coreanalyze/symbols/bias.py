"""Where a module was loaded: the load bias that turns a pc into the file's own address.

    file address = pc - bias

The loader maps each PT_LOAD segment so that file offset p_offset lands at bias + p_vaddr. The
first segment (lowest p_vaddr) holds the ELF header, so the mapping of file offset 0 gives

    bias = start of that mapping + p_offset - p_vaddr

The program headers are read from the core itself when it kept the module's first page (they
are the crashed build's, even when the file here is another build), else from a file here.
Separate debug files keep p_vaddr but zero p_offset of later segments, which is why only the
lowest segment is used.
"""

from __future__ import annotations

import struct
from typing import Sequence

from elftools.elf.elffile import ELFFile

from coreanalyze.base import model
from coreanalyze.corefile import PARSE_ERRORS, CoreNotes, Mapping

PT_LOAD = 1
MAX_PHNUM = 1024
# The lowest segment's offset lies within the first page of the file (pages are at most 64 KiB).
MAX_FIRST_SEGMENT_OFFSET = 64 * 1024


def _lowest_load(segments: list[tuple[int, int]]) -> tuple[int, int] | None:
    """(p_offset, p_vaddr) of the PT_LOAD with the lowest p_vaddr."""
    return min(segments, key=lambda s: s[1]) if segments else None


def _bias(start: int, first: tuple[int, int] | None) -> int | None:
    if first is None:
        return None
    p_offset, p_vaddr = first
    if p_offset >= MAX_FIRST_SEGMENT_OFFSET:
        return None
    return start + p_offset - p_vaddr


def loads_from_core(notes: CoreNotes, mappings: Sequence[Mapping]) -> list[tuple[int, int]]:
    """(p_offset, p_vaddr) of every PT_LOAD, read from the module's first page in the core."""
    first = next((m for m in mappings if m.file_offset == 0), None)
    if first is None:
        return []
    fmt = "<" if notes.little_endian else ">"
    # The core's own CoreMemory on purpose: the bias is asked for while the Process's tier of
    # mapped files is being chosen, and a file here answers for itself in loads_from_file.
    header = notes.memory.read(first.start, 64)
    if header is None or not header.startswith(b"\x7fELF") or header[4] != 2:
        return []
    phoff = struct.unpack_from(fmt + "Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from(fmt + "HH", header, 54)
    if phentsize < 56 or not 0 < phnum <= MAX_PHNUM or phoff + phentsize * phnum > first.end - first.start:
        return []
    table = notes.memory.read(first.start + phoff, phentsize * phnum)
    if table is None:
        return []
    loads = []
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr = struct.unpack_from(fmt + "IIQQ", table, i * phentsize)
        if p_type == PT_LOAD:
            loads.append((p_offset, p_vaddr))
    return loads


def loads_from_file(path: str) -> list[tuple[int, int]]:
    """(p_offset, p_vaddr) of every PT_LOAD of an ELF file here."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            loads = []
            for i in range(min(elf.num_segments(), MAX_PHNUM)):
                segment = elf.get_segment(i)
                if segment["p_type"] == "PT_LOAD":
                    loads.append((segment["p_offset"], segment["p_vaddr"]))
            return loads
    except (OSError, *PARSE_ERRORS):
        return []


def load_bias(
    module: model.Module,
    notes: CoreNotes | None = None,
    files: Sequence[str | None] = (),
) -> int | None:
    """The module's load bias, from the core's copy of its headers, else from files here.

    files: ELF files of the same build to read the program headers from (the module's file,
    its debug file), tried in order.
    """
    if notes is not None:
        mappings = [m for m in notes.mappings if m.path == module.path]
        first = next((m for m in mappings if m.file_offset == 0), None)
        if first is not None:
            found = _bias(first.start, _lowest_load(loads_from_core(notes, mappings)))
            if found is not None:
                return found
        start = first.start if first is not None else None
    else:
        start = module.start
    if start is None:
        return None
    for path in files:
        if path:
            found = _bias(start, _lowest_load(loads_from_file(path)))
            if found is not None:
                return found
    return None
