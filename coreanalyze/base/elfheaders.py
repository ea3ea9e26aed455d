"""Small facts about ELF files on this machine, read straight from their headers with struct.

The build-id note, the DT_NEEDED list and the `.gnu_debuglink` section are a few hundred bytes
of a file; reading them through pyelftools builds an object for every section on the way
(hash tables included: TensorFlow's 3 MB `.gnu_hash` alone costs a tenth of a second), and a
process of a TensorFlow program maps ~180 ELF files. Here only the header tables and the bytes
asked for are read. The answers are pyelftools' for every well-formed file (a test compares
them file by file); a file whose headers are out of bounds gives ElfHeaderError.

ELF32 and ELF64 of either byte order are read. Every count and size comes from a file that may
be damaged, so each is bounded.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

MAGIC = b"\x7fELF"
PT_DYNAMIC = 2
PT_LOAD = 1
PT_NOTE = 4
SHT_NOTE = 7
SHT_DYNAMIC = 6
DT_NULL = 0
DT_NEEDED = 1
DT_STRTAB = 5
PN_XNUM = 0xFFFF
SHN_XINDEX = 0xFFFF
MAX_STRING = 64 * 1024  # a name in a string table; longer means a damaged table
MAX_DYNAMIC_ENTRIES = 1 << 20
# Section headers and section names are read in one go up to these sizes (else one by one).
MAX_TABLE_READ = 4 * 1024 * 1024


class ElfHeaderError(Exception):
    """The file is not ELF, or its headers point outside it."""


class ElfHeaders:
    """The ELF header of an open file, and its program and section headers on demand."""

    def __init__(self, f: BinaryIO, file_size: int):
        self.f = f
        self.file_size = file_size
        f.seek(0)
        ident = f.read(16)
        if len(ident) < 16 or ident[:4] != MAGIC:
            raise ElfHeaderError("not an ELF file")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ElfHeaderError("unknown ELF class or byte order")
        self.is64 = ident[4] == 2
        self.little_endian = ident[5] == 1
        e = "<" if self.little_endian else ">"
        self.e = e
        if self.is64:
            rest = f.read(48)
            if len(rest) < 48:
                raise ElfHeaderError("truncated ELF header")
            (self.e_type, self.e_machine, _version, _entry, self.phoff, self.shoff, _flags, _ehsize,
             self.phentsize, phnum, self.shentsize, shnum, shstrndx) = struct.unpack(e + "HHIQQQIHHHHHH", rest)  # fmt: skip
            self._phdr = struct.Struct(e + "IIQQQQQQ")  # type flags offset vaddr paddr filesz memsz align
            self._shdr = struct.Struct(e + "IIQQQQIIQQ")
            self._dyn = struct.Struct(e + "qQ")
        else:
            rest = f.read(36)
            if len(rest) < 36:
                raise ElfHeaderError("truncated ELF header")
            (self.e_type, self.e_machine, _version, _entry, self.phoff, self.shoff, _flags, _ehsize,
             self.phentsize, phnum, self.shentsize, shnum, shstrndx) = struct.unpack(e + "HHIIIIIHHHHHH", rest)  # fmt: skip
            self._phdr = struct.Struct(e + "IIIIIIII")  # type offset vaddr paddr filesz memsz flags align
            self._shdr = struct.Struct(e + "IIIIIIIIII")
            self._dyn = struct.Struct(e + "iI")
        self._e_phnum, self._e_shnum, self._e_shstrndx = phnum, shnum, shstrndx
        self._names_at: int | None = None  # file offset of the section-name string table
        self._names: bytes | None = None  # its bytes, read once
        self._table: bytes | None = None  # the section header table, read once

    # ------------------------------------------------------------------ counts

    def num_sections(self) -> int:
        if self.shoff == 0:
            return 0
        if self._e_shnum == 0:
            return self.section(0)[5]  # extended numbering: section 0's sh_size
        return self._e_shnum

    def num_segments(self) -> int:
        if self._e_phnum < PN_XNUM:
            return self._e_phnum
        return self.section(0)[7]  # section 0's sh_info

    # ------------------------------------------------------------------ entries

    def segment(self, i: int) -> tuple[int, int, int, int, int]:
        """(p_type, p_offset, p_vaddr, p_filesz, p_align) of program header i."""
        if self.phoff > 0 and self.phentsize < self._phdr.size:
            raise ElfHeaderError("program header entries are too small")
        raw = self._entry(self.phoff + i * self.phentsize, self._phdr)
        if self.is64:
            p_type, _flags, offset, vaddr, _paddr, filesz, _memsz, align = self._phdr.unpack(raw)
        else:
            p_type, offset, vaddr, _paddr, filesz, _memsz, _flags, align = self._phdr.unpack(raw)
        return p_type, offset, vaddr, filesz, align

    def section(self, i: int) -> tuple[int, ...]:
        """(sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
        sh_addralign, sh_entsize) of section header i."""
        if self.shoff > 0 and self.shentsize < self._shdr.size:
            raise ElfHeaderError("section header entries are too small")
        if i < 0:
            raise ElfHeaderError("negative section index")
        position = self.shoff + i * self.shentsize
        if position > self.file_size:
            raise ElfHeaderError(f"section header {i} lies past the end of the file")
        if self._table is None and 0 < self._e_shnum * self.shentsize <= MAX_TABLE_READ:
            self.f.seek(self.shoff)
            self._table = self.f.read(self._e_shnum * self.shentsize)
        start = i * self.shentsize
        if self._table is not None and start + self._shdr.size <= len(self._table):
            return self._shdr.unpack_from(self._table, start)
        return self._shdr.unpack(self._entry(position, self._shdr))

    def section_name(self, sh_name: int) -> str:
        """A section's name from the section-name string table ('' when there is none)."""
        if self._names_at is None:
            index = self._e_shstrndx if self._e_shstrndx != SHN_XINDEX else self.section(0)[6]
            header = self.section(index)
            self._names_at = header[4]
            self._names = self.read(header[4], header[5]) if 0 < header[5] <= MAX_TABLE_READ else b""
        names = self._names or b""
        end = names.find(b"\0", sh_name) if 0 <= sh_name < len(names) else -1
        # A name that does not end inside the table is read from the file, as far as it goes.
        raw = names[sh_name:end] if end >= 0 else self.cstring(self._names_at + sh_name)
        return raw.decode("utf-8", "replace") if raw else ""

    def read(self, offset: int, size: int) -> bytes:
        self.f.seek(offset)
        return self.f.read(size)

    def cstring(self, offset: int) -> bytes | None:
        """The NUL-terminated string at offset, None when the file ends before its NUL."""
        if offset < 0:
            raise ElfHeaderError("negative string offset")
        self.f.seek(offset)
        chunks = []
        for _ in range(MAX_STRING // 64):
            chunk, sep, _tail = self.f.read(64).partition(b"\0")
            chunks.append(chunk)
            if sep:
                return b"".join(chunks)
            if len(chunk) < 64:
                return None
        raise ElfHeaderError("a string without an end")

    def _entry(self, position: int, layout: struct.Struct) -> bytes:
        if position < 0:
            raise ElfHeaderError("negative header offset")
        self.f.seek(position)
        raw = self.f.read(layout.size)
        if len(raw) < layout.size:
            raise ElfHeaderError("a header runs past the end of the file")
        return raw

    # ------------------------------------------------------------------ dynamic section

    def dynamic_entries(self, offset: int) -> list[tuple[int, int]]:
        """(d_tag, d_val) from offset up to and including DT_NULL (which must come first)."""
        out: list[tuple[int, int]] = []
        size = self._dyn.size
        self.f.seek(offset)
        buffer = b""
        while len(out) < MAX_DYNAMIC_ENTRIES:
            if len(buffer) < size:
                more = self.f.read(size * 256)
                buffer += more
                if len(buffer) < size:
                    raise ElfHeaderError("the dynamic table runs past the end of the file")
            tag, value = self._dyn.unpack_from(buffer, 0)
            buffer = buffer[size:]
            out.append((tag, value))
            if tag == DT_NULL:
                return out
        raise ElfHeaderError("a dynamic table without an end")

    def file_offset(self, address: int) -> int | None:
        """The file offset of a link-time address, from the first PT_LOAD segment holding it."""
        for i in range(self.num_segments()):
            p_type, offset, vaddr, filesz, _align = self.segment(i)
            if p_type == PT_LOAD and vaddr <= address and address + 1 <= vaddr + filesz:
                return address - vaddr + offset
        return None


# ---------------------------------------------------------------------------------- symbols

SHN_UNDEF = 0
# A symbol table or its string table bigger than this is not read (a damaged size, or a huge
# library whose symbols the caller does not search this way).
MAX_SYMBOL_TABLE = 64 * 1024 * 1024


def defined_symbols(f: BinaryIO, file_size: int, section_name: str) -> dict[str, int]:
    """Name -> st_value of the symbols a section (".dynsym", ".symtab") defines: defined in a
    section, with a value and a name; the first of a name wins (pyelftools' iteration order).
    Empty when the file has no such section; ElfHeaderError for headers out of bounds."""
    elf = ElfHeaders(f, file_size)
    for i in range(min(elf.num_sections(), 1 << 16)):
        header = elf.section(i)
        if elf.section_name(header[0]) == section_name:
            break
    else:
        return {}
    _name, _type, _flags, _addr, offset, size, link, _info, _align, entsize = header
    if not 0 <= link < elf.num_sections():
        raise ElfHeaderError("a symbol table's string table is out of range")
    strings_header = elf.section(link)
    if size > MAX_SYMBOL_TABLE or strings_header[5] > MAX_SYMBOL_TABLE:
        return {}
    e = elf.e
    layout = struct.Struct(e + ("IBBHQQ" if elf.is64 else "IIIBBH"))
    if entsize < layout.size:
        return {}
    table = elf.read(offset, size)
    strings = elf.read(strings_header[4], strings_header[5])
    out: dict[str, int] = {}
    for start in range(0, len(table) - layout.size + 1, entsize):
        fields = layout.unpack_from(table, start)
        if elf.is64:
            st_name, _info, _other, st_shndx, st_value, _size = fields
        else:
            st_name, st_value, _size, _info, _other, st_shndx = fields
        if st_shndx == SHN_UNDEF or not st_value or not 0 < st_name < len(strings):
            continue
        end = strings.find(b"\0", st_name)
        name = strings[st_name:end if end >= 0 else len(strings)]
        if name:
            out.setdefault(name.decode("utf-8", "replace"), st_value)
    return out
