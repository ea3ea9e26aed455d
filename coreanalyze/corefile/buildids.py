"""Build-ids of the mapped files, read from the core's own memory (the GNU build-id note in
each file's first page), so they are known even when the files are not here."""

from __future__ import annotations

import struct

from coreanalyze.corefile.memory import CoreMemory
from coreanalyze.corefile.structures import CoreNotes, Mapping, parse_notes
from coreanalyze.corefile.tables import MAX_BUILD_ID_NOTES_BYTES, MAX_PHNUM_IN_MEMORY, NT_GNU_BUILD_ID

# ---------------------------------------------------------------------------------------------
# Build-ids from the core's own memory
# ---------------------------------------------------------------------------------------------


def build_ids_from_memory(core: CoreNotes) -> dict[str, str]:
    """path -> build-id, from the ELF headers the kernel dumps with each file's first page."""
    by_path: dict[str, list[Mapping]] = {}
    for m in core.mappings:
        by_path.setdefault(m.path, []).append(m)
    build_ids: dict[str, str] = {}
    for path, mappings in by_path.items():
        build_id = build_id_from_memory(core.memory, mappings, core.little_endian)
        if build_id:
            build_ids[path] = build_id
    return build_ids


def build_id_from_memory(memory: CoreMemory, mappings: list[Mapping], little_endian: bool = True) -> str | None:
    """The GNU build-id of one mapped file, read through its mappings in the core's memory."""
    fmt = "<" if little_endian else ">"

    def read_file_range(file_offset: int, size: int) -> bytes | None:
        for m in mappings:
            if m.file_offset <= file_offset and file_offset + size <= m.file_offset + (m.end - m.start):
                return memory.read(m.start + (file_offset - m.file_offset), size)
        return None

    header = read_file_range(0, 64)
    if header is None or not header.startswith(b"\x7fELF") or header[4] != 2:
        return None
    phoff = struct.unpack_from(fmt + "Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from(fmt + "HH", header, 54)
    if phentsize < 56 or phnum == 0 or phnum > MAX_PHNUM_IN_MEMORY:
        return None
    table = read_file_range(phoff, phentsize * phnum)
    if table is None:
        return None
    for i in range(phnum):
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz, _memsz, p_align = struct.unpack_from(
            fmt + "IIQQQQQQ", table, i * phentsize
        )
        if p_type != 4 or p_filesz == 0 or p_filesz > MAX_BUILD_ID_NOTES_BYTES:  # PT_NOTE
            continue
        data = read_file_range(p_offset, p_filesz)
        if data is None:
            continue
        for note in parse_notes(data, align=p_align, little_endian=little_endian):
            if note.name == "GNU" and note.type == NT_GNU_BUILD_ID and 0 < len(note.desc) <= 64:
                return note.desc.hex()
    return None


