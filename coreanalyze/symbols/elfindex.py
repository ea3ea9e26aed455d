"""Build the lookup index of one ELF file: its functions (from .symtab, else .dynsym) and, when
it carries DWARF, its line table.

pyelftools reads the headers, sections and DWARF line programs; the symbol tables themselves
are decoded with struct straight from a memory map of the file, because a TensorFlow library
holds over a million symbols and a 175 MB string table: building Python objects for each would
take minutes, decoding the raw entries takes about a second.

Files here are this machine's, but they may still be damaged: every size is checked against
the file, every count is bounded, and a file that cannot be read yields an index with what
could be read plus a warning.
"""

from __future__ import annotations

import array
import mmap
import os
import struct
import zlib
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile

from coreanalyze.corefile import PARSE_ERRORS
from coreanalyze.symbols.store import NAMES_PER_BLOCK, IndexData

STT_FUNC = 2
STT_GNU_IFUNC = 10
FUNCTION_TYPES = (STT_FUNC, STT_GNU_IFUNC)
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHF_EXECINSTR = 0x4
# Binding preference when several names share one address: GLOBAL/GNU_UNIQUE, WEAK, LOCAL.
BIND_RANK = {1: 0, 10: 0, 2: 1, 0: 2}

MAX_SYMBOLS = 20_000_000
MAX_NAME_BYTES = 64 * 1024  # long C++ template names run to ~15 KB
# A function without a size is taken to run to the next symbol, but not further than this.
MAX_UNSIZED_SPAN = 1024 * 1024
MAX_SECTIONS = 65_536
MAX_LINE_ROWS = 8_000_000
MAX_COMPILE_UNITS = 500_000
MAX_DEBUG_LINE_BYTES = 512 * 1024 * 1024
NAME_COMPRESSION_LEVEL = 1  # fast: the index of a 790 MB library is written in seconds

SYMBOL_FORMATS = {
    # (elfclass, little_endian): (struct format of one Elf_Sym, its size)
    (64, True): ("<IBBHQQ", 24),
    (64, False): (">IBBHQQ", 24),
    (32, True): ("<IIIBBH", 16),
    (32, False): (">IIIBBH", 16),
}


class ElfIndexError(Exception):
    """The file is not an ELF object this can index."""


@dataclass(frozen=True)
class _Section:
    name: str
    type: str
    addr: int
    size: int
    offset: int
    flags: int
    link: int
    entsize: int


def build_index(path: str, meta: dict, warnings: list[str]) -> IndexData:
    """The index of the ELF file at path; meta goes into the index header as it is."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ElfIndexError(f"cannot open {path}: {e.strerror or e}") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size < 64:
                raise ElfIndexError(f"{path} is not an ELF file")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise ElfIndexError(f"cannot map {path}: {e}") from None
        try:
            if mapped[:4] != b"\x7fELF":
                raise ElfIndexError(f"{path} is not an ELF file")
            try:
                elf = ELFFile(f)
                sections = _sections(elf, size)
                fmt = SYMBOL_FORMATS.get((elf.elfclass, elf.little_endian))
            except PARSE_ERRORS as e:
                raise ElfIndexError(f"{path}: unreadable ELF headers ({type(e).__name__})") from None
            if fmt is None:
                raise ElfIndexError(f"{path}: unsupported ELF class")
            data = IndexData(meta=dict(meta))
            _add_symbols(data, mapped, sections, fmt, size, path, warnings)
            try:
                _add_lines(data, elf, sections, path, warnings)
            except PARSE_ERRORS as e:
                warnings.append(f"{path}: the DWARF line table could not be read ({type(e).__name__}: {e}); no file:line from it")
                data.line_addr, data.line_num, data.line_file = array.array("Q"), array.array("I"), array.array("I")
                data.file_offset, data.files = array.array("Q"), b""
            return data
        finally:
            mapped.close()


def _sections(elf: ELFFile, file_size: int) -> list[_Section]:
    out = []
    for i in range(min(elf.num_sections(), MAX_SECTIONS)):
        s = elf.get_section(i)
        out.append(
            _Section(s.name, s["sh_type"], s["sh_addr"], s["sh_size"], s["sh_offset"], s["sh_flags"], s["sh_link"], s["sh_entsize"])
        )
    return out


def _in_file(section: _Section, file_size: int) -> bool:
    return section.type != "SHT_NOBITS" and 0 <= section.offset and section.offset + section.size <= file_size


# ----------------------------------------------------------------------------- symbols


def _add_symbols(data: IndexData, mapped: mmap.mmap, sections: list[_Section], fmt: tuple[str, int], file_size: int,
                 path: str, warnings: list[str]) -> None:
    # .symtab names every function (statics too); a stripped file keeps only .dynsym's exports.
    table = next((s for s in sections if s.type == "SHT_SYMTAB" and _in_file(s, file_size) and s.size), None)
    if table is None:
        table = next((s for s in sections if s.type == "SHT_DYNSYM" and _in_file(s, file_size) and s.size), None)
    data.meta["symbol_table"] = table.name if table is not None else None
    if table is None:
        data.name_block = array.array("Q", [0])
        return
    layout, entsize = fmt
    if table.entsize not in (0, entsize) or not 0 <= table.link < len(sections):
        warnings.append(f"{path}: {table.name} is malformed; no names from it")
        data.name_block = array.array("Q", [0])
        return
    strtab = sections[table.link]
    if not _in_file(strtab, file_size):
        warnings.append(f"{path}: the string table of {table.name} is not in the file; no names from it")
        data.name_block = array.array("Q", [0])
        return
    count = table.size // entsize
    if count > MAX_SYMBOLS:
        warnings.append(f"{path}: {count} symbols; only the first {MAX_SYMBOLS} are indexed")
        count = MAX_SYMBOLS

    values = array.array("Q")
    sizes = array.array("Q")
    name_offsets = array.array("Q")
    ranks = array.array("B")
    is64 = entsize == 24
    raw = memoryview(mapped)[table.offset : table.offset + count * entsize]
    try:
        for entry in struct.iter_unpack(layout, raw):
            if is64:
                name, info, _other, shndx, value, size = entry
            else:
                name, value, size, info, _other, shndx = entry
            if (info & 0xF) not in FUNCTION_TYPES or shndx == SHN_UNDEF or SHN_LORESERVE <= shndx < 0xFFFF or not value:
                continue
            if name >= strtab.size:
                continue
            values.append(value)
            sizes.append(size)
            name_offsets.append(name)
            ranks.append(BIND_RANK.get(info >> 4, 3))
    finally:
        raw.release()

    strings_start, strings_end = strtab.offset, strtab.offset + strtab.size

    def name_at(offset: int) -> bytes:
        start = strings_start + offset
        end = mapped.find(b"\0", start, min(strings_end, start + MAX_NAME_BYTES))
        if end < 0:
            end = min(strings_end, start + MAX_NAME_BYTES)
        return mapped[start:end]

    order = sorted(range(len(values)), key=values.__getitem__)
    chosen = _one_per_address(order, values, sizes, ranks, name_offsets, name_at)
    code = sorted((s.addr, s.addr + s.size) for s in sections if s.flags & SHF_EXECINSTR and s.size)

    starts = array.array("Q", (values[i] for i in chosen))
    spans = array.array("Q")
    for k, i in enumerate(chosen):
        size = sizes[i]
        if size == 0:
            # An assembly routine without .size: up to the next function, inside its section.
            limit = starts[k + 1] if k + 1 < len(starts) else starts[k] + MAX_UNSIZED_SPAN
            section_end = _section_end(code, starts[k])
            if section_end is not None:
                limit = min(limit, section_end)
            size = max(0, min(limit - starts[k], MAX_UNSIZED_SPAN))
        spans.append(size)
    data.sym_start, data.sym_size = starts, spans

    blocks = array.array("Q", [0])
    compressed: list[bytes] = []
    total = 0
    for b in range(0, len(chosen), NAMES_PER_BLOCK):
        joined = b"\0".join(name_at(name_offsets[i]) for i in chosen[b : b + NAMES_PER_BLOCK])
        piece = zlib.compress(joined, NAME_COMPRESSION_LEVEL)
        compressed.append(piece)
        total += len(piece)
        blocks.append(total)
    data.name_block = blocks
    data.names = b"".join(compressed)


def _one_per_address(order, values, sizes, ranks, name_offsets, name_at) -> list[int]:
    """One symbol per start address: sized over unsized, global over weak over local, then the
    smaller name (so that C1/C2 constructor aliases always resolve the same way)."""
    chosen: list[int] = []
    i = 0
    n = len(order)
    while i < n:
        j = i + 1
        address = values[order[i]]
        while j < n and values[order[j]] == address:
            j += 1
        if j == i + 1:
            chosen.append(order[i])
        else:
            group = order[i:j]
            chosen.append(min(group, key=lambda k: (sizes[k] == 0, ranks[k], name_at(name_offsets[k]))))
        i = j
    return chosen


def _section_end(code: list[tuple[int, int]], address: int) -> int | None:
    for lo, hi in code:
        if lo <= address < hi:
            return hi
    return None


# ----------------------------------------------------------------------------- lines


def _add_lines(data: IndexData, elf: ELFFile, sections: list[_Section], path: str, warnings: list[str]) -> None:
    debug_line = next((s for s in sections if s.name in (".debug_line", ".zdebug_line")), None)
    if debug_line is None or debug_line.type == "SHT_NOBITS" or not debug_line.size:
        return
    if not any(s.name in (".debug_info", ".zdebug_info") and s.type != "SHT_NOBITS" for s in sections):
        return
    if debug_line.size > MAX_DEBUG_LINE_BYTES:
        warnings.append(f"{path}: its line table is {debug_line.size >> 20} MiB, more than is read; no file:line from it")
        return
    lowest_code = min((s.addr for s in sections if s.flags & SHF_EXECINSTR and s.size and s.addr), default=0)
    dwarf = elf.get_dwarf_info(relocate_dwarf_sections=False)

    addrs = array.array("Q")
    lines = array.array("I")
    files = array.array("I")
    file_numbers: dict[str, int] = {}
    truncated = False
    for cu_count, cu in enumerate(dwarf.iter_CUs()):
        if cu_count >= MAX_COMPILE_UNITS or truncated:
            break
        program = dwarf.line_program_for_CU(cu)
        if program is None:
            continue
        comp_dir = _comp_dir(cu)
        local_numbers: dict[int, int] = {}
        for entry in program.get_entries():
            state = entry.state
            if state is None:
                continue
            if state.address < lowest_code:
                continue  # code discarded at link time keeps its rows, at address 0
            if state.end_sequence:
                addrs.append(state.address)
                lines.append(0)
                files.append(0)
            else:
                number = local_numbers.get(state.file)
                if number is None:
                    name = _file_name(program, state.file, comp_dir)
                    number = file_numbers.setdefault(name, len(file_numbers))
                    local_numbers[state.file] = number
                addrs.append(state.address)
                lines.append(min(max(state.line, 0), 0xFFFFFFFF))
                files.append(number)
            if len(addrs) >= MAX_LINE_ROWS:
                warnings.append(f"{path}: more than {MAX_LINE_ROWS} line-table rows; the rest are left out")
                truncated = True
                break

    # End-of-sequence rows sort before a sequence that starts at the same address, so that a
    # lookup there finds the new sequence's first row.
    order = sorted(range(len(addrs)), key=lambda i: (addrs[i], lines[i] != 0))
    data.line_addr = array.array("Q", (addrs[i] for i in order))
    data.line_num = array.array("I", (lines[i] for i in order))
    data.line_file = array.array("I", (files[i] for i in order))
    offsets = array.array("Q", [0])
    blob = bytearray()
    for name in file_numbers:  # dicts keep insertion order: numbers are 0, 1, 2, ...
        blob += name.encode("utf-8", "surrogateescape")
        offsets.append(len(blob))
    data.file_offset = offsets
    data.files = bytes(blob)


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value) if value is not None else ""


def _comp_dir(cu) -> str:
    try:
        attr = cu.get_top_DIE().attributes.get("DW_AT_comp_dir")
    except PARSE_ERRORS:
        return ""
    return _text(attr.value) if attr is not None else ""


def _file_name(program, number: int, comp_dir: str) -> str:
    """The path of file `number` of a line program (DWARF 5 counts from 0, older from 1)."""
    version = program["version"]
    entries = program["file_entry"]
    directories = program["include_directory"]
    index = number if version >= 5 else number - 1
    if not 0 <= index < len(entries):
        return f"<file {number}>"
    entry = entries[index]
    name = _text(entry.name)
    dir_index = entry.dir_index
    if version >= 5:
        directory = _text(directories[dir_index]) if 0 <= dir_index < len(directories) else ""
    else:
        directory = comp_dir if dir_index == 0 else (
            _text(directories[dir_index - 1]) if 0 < dir_index <= len(directories) else ""
        )
    path = os.path.join(directory, name) if directory else name
    if not os.path.isabs(path) and comp_dir:
        path = os.path.join(comp_dir, path)
    return os.path.normpath(path)
