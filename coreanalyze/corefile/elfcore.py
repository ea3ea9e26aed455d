"""The ELF frame of a core file: header, program headers and notes, read and written with struct.

Only what shrinking needs: every program header as it is (so that a shrunk core maps the same
addresses with the same permissions), the notes' bytes, and where each PT_LOAD's data lies.
Everything is bounds-checked against the file's real size: a hostile header is bad input.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

from coreanalyze.base.errors import BadInput

ELF_MAGIC = b"\x7fELF"
ELFCLASS64 = 2
ET_CORE = 4
PT_LOAD = 1
PT_NOTE = 4
PN_XNUM = 0xFFFF
EHDR_SIZE = 64
PHDR_SIZE = 56
SHDR_SIZE = 64
MAX_PHNUM = 1 << 20  # far beyond any real process's mappings
MAX_NOTES_BYTES = 256 << 20


@dataclass(frozen=True)
class ProgramHeader:
    type: int
    flags: int
    offset: int
    vaddr: int
    paddr: int
    filesz: int
    memsz: int
    align: int

    @property
    def end(self) -> int:
        return self.vaddr + self.memsz

    def moved(self, offset: int, filesz: int, vaddr: int | None = None, memsz: int | None = None) -> ProgramHeader:
        return replace(
            self,
            offset=offset,
            filesz=filesz,
            vaddr=self.vaddr if vaddr is None else vaddr,
            paddr=0 if vaddr is not None and vaddr != self.vaddr else self.paddr,
            memsz=self.memsz if memsz is None else memsz,
        )


@dataclass(frozen=True)
class CoreLayout:
    endian: str  # "<" or ">"
    ident_and_type: bytes  # e_ident .. e_version, e_entry (bytes 0..32), copied as they are
    flags: int
    headers: list[ProgramHeader]


def read_layout(path: str) -> CoreLayout:
    """The header and program headers of the 64-bit ELF core at path (BadInput otherwise)."""
    name = path
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(0)
            ehdr = f.read(EHDR_SIZE)
            if len(ehdr) < EHDR_SIZE or ehdr[:4] != ELF_MAGIC:
                raise BadInput(f"{name}: not an ELF core file")
            if ehdr[4] != ELFCLASS64 or ehdr[5] not in (1, 2):
                raise BadInput(f"{name}: only 64-bit ELF cores can be shrunk")
            endian = "<" if ehdr[5] == 1 else ">"
            e_type, _machine, _version, _entry, phoff, shoff, flags, _ehsize, phentsize, phnum, shentsize, shnum, _shstrndx = (
                struct.unpack_from(endian + "HHIQQQIHHHHHH", ehdr, 16)
            )
            if e_type != ET_CORE:
                raise BadInput(f"{name}: an ELF file but not a core (e_type {e_type})")
            if phnum == PN_XNUM:
                phnum = _extended_phnum(f, endian, shoff, shentsize, size, name)
            if phentsize != PHDR_SIZE or phnum == 0 or phnum > MAX_PHNUM or phoff + phnum * PHDR_SIZE > size:
                raise BadInput(f"{name}: program headers are missing or run past the end of the file (truncated or corrupt)")
            f.seek(phoff)
            raw = f.read(phnum * PHDR_SIZE)
    except OSError as exc:
        raise BadInput(f"{name}: cannot read: {exc.strerror or exc}") from None
    headers = [ProgramHeader(*struct.unpack_from(endian + "IIQQQQQQ", raw, i * PHDR_SIZE)) for i in range(phnum)]
    for h in headers:
        if h.type == PT_NOTE and (h.offset + h.filesz > size or h.filesz > MAX_NOTES_BYTES):
            raise BadInput(f"{name}: a note segment runs past the end of the file (truncated or corrupt)")
        if h.type == PT_LOAD and (h.filesz > h.memsz or h.vaddr + h.memsz >= 1 << 64):
            raise BadInput(f"{name}: a memory segment's header is inconsistent (corrupt core)")
    expected = max((h.offset + h.filesz for h in headers if h.type in (PT_LOAD, PT_NOTE)), default=0)
    if size < expected:
        # The shrunk copy would hide what is missing: the analysis of the copy would no longer
        # say that the core is truncated.
        raise BadInput(f"{name} is truncated ({size} of {expected} bytes); only a complete core can be shrunk")
    return CoreLayout(endian=endian, ident_and_type=ehdr[:32], flags=flags, headers=headers)


def _extended_phnum(f, endian: str, shoff: int, shentsize: int, size: int, name: str) -> int:
    """With more than 65534 program headers, the count is in section header 0's sh_info."""
    if shentsize != SHDR_SIZE or shoff + SHDR_SIZE > size:
        raise BadInput(f"{name}: the program header count is missing (truncated or corrupt)")
    f.seek(shoff)
    return struct.unpack_from(endian + "IIQQQQIIQQ", f.read(SHDR_SIZE))[7]


def elf_header(layout: CoreLayout, phnum: int, shoff: int) -> bytes:
    """A core's ELF header with program headers right after it and no sections (but the one
    that carries a program header count too big for e_phnum)."""
    extended = phnum >= PN_XNUM
    return layout.ident_and_type + struct.pack(
        layout.endian + "QQIHHHHHH",
        EHDR_SIZE,
        shoff if extended else 0,
        layout.flags,
        EHDR_SIZE,
        PHDR_SIZE,
        PN_XNUM if extended else phnum,
        SHDR_SIZE if extended else 0,
        1 if extended else 0,
        0,
    )


def extended_count_section(layout: CoreLayout, phnum: int) -> bytes:
    return struct.pack(layout.endian + "IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, phnum, 0, 0)


def pack_header(layout: CoreLayout, h: ProgramHeader) -> bytes:
    return struct.pack(layout.endian + "IIQQQQQQ", h.type, h.flags, h.offset, h.vaddr, h.paddr, h.filesz, h.memsz, h.align)


def note(endian: str, name: bytes, note_type: int, desc: bytes) -> bytes:
    """One ELF note record (name and desc padded to 4 bytes)."""
    name_z = name + b"\0"

    def pad(b: bytes) -> bytes:
        return b + b"\0" * (-len(b) % 4)

    return struct.pack(endian + "III", len(name_z), len(desc), note_type) + pad(name_z) + pad(desc)


def iter_notes(endian: str, data: bytes, limit: int = 1 << 16):
    """(name, type, desc, start, end) of each note record in a PT_NOTE's bytes, bounded."""
    pos = 0
    for _ in range(limit):
        if pos + 12 > len(data):
            return
        namesz, descsz, note_type = struct.unpack_from(endian + "III", data, pos)
        name_at = pos + 12
        desc_at = name_at + namesz + (-namesz % 4)
        end = desc_at + descsz + (-descsz % 4)
        if end > len(data) or desc_at + descsz > len(data):
            return
        yield data[name_at : name_at + namesz].rstrip(b"\0"), note_type, data[desc_at : desc_at + descsz], pos, end
        pos = end
