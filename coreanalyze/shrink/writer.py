"""Write a shrunk core: the same program headers, kept pages only, the notes whole.

Each PT_LOAD of the original becomes one or more PT_LOADs over exactly its addresses, with its
flags: the runs of kept pages with their bytes, the rest with p_filesz 0 (memory the core does
not hold, as the kernel writes it for pages it does not dump). The notes are copied byte for
byte, followed by one note of our own that says the core was shrunk (coreanalyze.corefile.shrunk).
Layout: ELF header, program headers, notes, then the kept memory from a page boundary.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from coreanalyze.corefile import elfcore
from coreanalyze.corefile.elfcore import PT_LOAD, PT_NOTE, CoreLayout, ProgramHeader
from coreanalyze.shrink.pages import PAGE, PageSet

COPY_CHUNK = 1 << 20
MAX_HEADERS = 60000  # below PN_XNUM (65535), where e_phnum needs a section header's help
MAX_GRAIN = 1 << 20


@dataclass
class _Entry:
    header: ProgramHeader
    note: bytes | None = None  # the bytes of a note segment
    source_offset: int = -1  # where a kept run's bytes are in the source; -1: no bytes
    size: int = 0  # bytes in the file
    offset: int = 0  # where they go in the shrunk core


@dataclass(frozen=True)
class WrittenRun:
    """A run of memory as the shrunk core holds it: its bytes at `offset` in the file."""

    offset: int
    address: int
    size: int


def _pieces(h: ProgramHeader, kept: PageSet, file_size: int) -> Iterator[tuple[int, int, bool]]:
    """(start, end, has bytes) covering the segment [vaddr, vaddr + memsz) in order."""
    present_end = h.vaddr + max(0, min(h.filesz, file_size - h.offset))
    cursor = h.vaddr
    for lo, hi in kept.runs_within(h.vaddr, present_end):
        if lo > cursor:
            yield cursor, lo, False
        yield lo, hi, True
        cursor = hi
    if cursor < h.end or h.memsz == 0:
        yield cursor, h.end, False


def _plan(
    source: str, layout: CoreLayout, kept: PageSet, marker: bytes, rewrite_notes: Callable[[bytes], bytes] | None
) -> list[_Entry]:
    file_size = os.path.getsize(source)
    entries: list[_Entry] = []
    with open(source, "rb") as f:
        for h in layout.headers:
            if h.type == PT_LOAD:
                for lo, hi, has_bytes in _pieces(h, kept, file_size):
                    piece = h.moved(0, 0, vaddr=lo, memsz=hi - lo)
                    if has_bytes:
                        entries.append(_Entry(piece, source_offset=h.offset + (lo - h.vaddr), size=hi - lo))
                    else:
                        entries.append(_Entry(piece))
            elif h.type == PT_NOTE:
                f.seek(h.offset)
                data = f.read(h.filesz)
                if rewrite_notes is not None:
                    data = rewrite_notes(data)
                    if not data and h.filesz:
                        continue  # held only the marker of an earlier shrink: replaced below
                entries.append(_Entry(h, note=data, size=len(data)))
            else:
                entries.append(_Entry(h.moved(0, 0)))
    entries.append(_Entry(ProgramHeader(PT_NOTE, 0, 0, 0, 0, 0, 0, 4), note=marker, size=len(marker)))
    offset = elfcore.EHDR_SIZE + len(entries) * elfcore.PHDR_SIZE
    for e in entries:
        if e.note is not None:
            offset += -offset % 4
            e.offset, offset = offset, offset + e.size
    offset += -offset % PAGE
    for e in entries:
        if e.source_offset >= 0:
            e.offset, offset = offset, offset + e.size
        elif e.note is None:
            # No bytes: p_offset where they would be, as the kernel writes it. With p_offset 0,
            # gdb (BFD) made each thread anew for every such segment of a qemu core.
            e.offset = offset
    return entries


def write_core(
    source: str, layout: CoreLayout, kept: PageSet, marker: bytes, target: str, rewrite_notes: Callable[[bytes], bytes] | None = None,
    finish: Callable[[str, list[WrittenRun]], None] | None = None,
) -> int:  # fmt: skip
    """Write the shrunk copy of `source` to `target`; returns its size in bytes.

    rewrite_notes: what becomes of each note segment's bytes; finish: called with the written
    file and where its runs of memory are in it, before it is used (redaction)."""
    entries = _plan(source, layout, kept, marker, rewrite_notes)
    grain = kept.grain
    while len(entries) > MAX_HEADERS and grain < MAX_GRAIN:
        # Too many runs for a program header table readers handle without extensions.
        grain *= 4
        entries = _plan(source, layout, kept.coarsened(grain), marker, rewrite_notes)
    phnum = len(entries)
    end = max((e.offset + e.size for e in entries), default=0)
    shoff = end if phnum >= elfcore.PN_XNUM else 0
    with open(source, "rb") as src, open(target, "wb") as out:
        out.write(elfcore.elf_header(layout, phnum, shoff))
        for e in entries:
            out.write(elfcore.pack_header(layout, e.header.moved(e.offset, e.size)))
        for e in entries:
            if e.size == 0:
                continue
            out.seek(e.offset)
            if e.note is not None:
                out.write(e.note)
                continue
            src.seek(e.source_offset)
            remaining = e.size
            while remaining > 0:
                chunk = src.read(min(COPY_CHUNK, remaining))
                if not chunk:
                    raise OSError(f"{source} ended while its kept memory was copied")
                out.write(chunk)
                remaining -= len(chunk)
        if shoff:
            out.seek(shoff)
            out.write(elfcore.extended_count_section(layout, phnum))
    if finish is not None:
        finish(target, [WrittenRun(e.offset, e.header.vaddr, e.size) for e in entries if e.source_offset >= 0])
    return os.path.getsize(target)
