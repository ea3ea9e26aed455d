"""gdb's minimal symbols of a big library, kept outside gdb and handed to it a few at a time.

Reading the 1.2 million ELF symbols of libtensorflow_cc.so.2 costs gdb seconds and a gigabyte.
The analysis gives gdb a copy of such a library with no symbol tables (see copies.py), and then,
for the handful of addresses it will name (frames, the faulting instruction and what that
instruction refers to), a small ELF file holding only the symbols near those addresses,
attached to the copy as its separate debug file. gdb then names those addresses itself, by its
own rules, exactly as it would with every symbol loaded.

"Near" is gdb's own search (lookup_minimal_symbol_by_pc_section): starting at the last symbol
at or below the address, it walks down over zero-sized symbols, symbols of other sections and
absolute ones to the first sized symbol of the address's section, looks one symbol further
(nested symbols), and remembers the first zero-sized symbol it passed. A window holds every
symbol from the address down to that point plus the next address group below, and the first
group above (gdb bounds an unsized function by the next symbol). Inside a window gdb therefore
sees the same neighbours in the same order as in the full table.

gdb's table also holds names it makes up: `name@plt` for each PLT slot (from the dynamic
relocations, BFD's synthetic symbols) and `name@got.plt` for each jump slot. The copy has no
dynamic symbols, so these are reproduced here and put into the windows of addresses in those
sections.

Only little-endian ELF64 is handled (x86_64, aarch64); `LibraryCopyError` says why a file is not.
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import struct
from array import array
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from typing import BinaryIO, Iterable, Sequence

from coreanalyze.gdb.libcopies.errors import LibraryCopyError
from coreanalyze.gdb.libcopies.selection import ALL, OutsideSelection, SymbolSelection

SHT_NULL = 0
SHT_PROGBITS = 1
SHT_SYMTAB = 2
SHT_STRTAB = 3
SHT_RELA = 4
SHT_NOBITS = 8
SHT_REL = 9
SHT_DYNSYM = 11
SHF_ALLOC = 0x2
SHF_TLS = 0x400
SHN_UNDEF = 0
SHN_LORESERVE = 0xFF00
SHN_ABS = 0xFFF1
STB_LOCAL = 0
STB_GLOBAL = 1
STB_WEAK = 2
STB_GNU_UNIQUE = 10
STT_OBJECT = 1
STT_FUNC = 2
EM_X86_64 = 62

SYM_SIZE = 24
SHDR_SIZE = 64
RELA_SIZE = 24
MAX_SECTIONS = SHN_LORESERVE - 8  # room for the sections a symbol file adds
MAX_NAME = 64 * 1024
# A window wider than this means a pathological table; the caller then loads the library whole.
MAX_WINDOW_SYMBOLS = 50_000
# Symbols of a selection looked at for one of the section below a value, before a pass over
# the whole table answers (selection.SymbolColumns.lowest).
OWN_BELOW_STEPS = 256
SORT_READ = (4 << 20) // 24 * 24  # bytes of a symbol table read at a time to sort it: whole symbols

# DWARF sections a symbol file carries whole when asked (write_symbol_file): gdb reads them from a
# separate debug file as from the library. A manylinux build links a few compilation units of the
# toolchain's own runtime with their DWARF (libgcc, libstdc++'s nonshared parts: ~1 MB in TF
# 2.16's libtensorflow_cc.so.2 beside 940,000 symbols).
CARRIED_DEBUG_PREFIXES = (".debug_", ".zdebug_")

# Section names whose slots BFD names `sym@plt`, and where gdb's `sym@got.plt` live.
PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got", ".plt.bnd")
# x86-64 indirect jumps through the GOT: prefix bytes -> (displacement offset, instruction end).
_GOT_JUMPS = (
    (b"\xff\x25", 2, 6),  # jmp *disp(%rip)
    (b"\xf2\xff\x25", 3, 7),  # bnd jmp *disp(%rip)
    (b"\xf3\x0f\x1e\xfa\xff\x25", 6, 10),  # endbr64; jmp *disp(%rip)
    (b"\xf3\x0f\x1e\xfa\xf2\xff\x25", 7, 11),  # endbr64; bnd jmp *disp(%rip)
)
# The first slot of a lazy PLT: push GOT+8; jmp *GOT+16 (plain, BND and IBT flavours).
_LAZY_PLT0 = (b"\xff\x35", b"\xf3\x0f\x1e\xfa\xff\x35")
# IBT lazy PLT slots only push and jump to PLT0; their names go on .plt.sec.
_IBT_LAZY_SLOT = b"\xf3\x0f\x1e\xfa\x68"


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int

    @property
    def alloc(self) -> bool:
        return bool(self.flags & SHF_ALLOC)

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass(frozen=True)
class ElfSymbol:
    """One symbol as a symbol file will hold it. key tells equal symbols of two windows apart."""

    key: tuple
    name: bytes
    info: int
    other: int
    shndx: int
    value: int
    size: int

    @property
    def bind(self) -> int:
        return self.info >> 4


class ElfLayout:
    """ELF header and section headers of a little-endian ELF64 file, read without parsing more."""

    def __init__(self, path: str, header: bytes, sections: list[Section], shoff: int, shstrndx: int, file_size: int):
        self.path = path
        self.header = header
        self.sections = sections
        self.shoff = shoff
        self.shstrndx = shstrndx
        self.file_size = file_size
        self._alloc = sorted(
            (s for s in sections if s.alloc and s.size > 0 and not (s.flags & SHF_TLS and s.type == SHT_NOBITS)),
            key=lambda s: s.addr,
        )
        self._alloc_starts = [s.addr for s in self._alloc]

    @classmethod
    def read(cls, path: str) -> ElfLayout:
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                header = f.read(64)
                if len(header) < 64 or header[:4] != b"\x7fELF":
                    raise LibraryCopyError(f"{path} is not an ELF file")
                if header[4] != 2 or header[5] != 1:
                    raise LibraryCopyError(f"{path} is not a little-endian 64-bit ELF file")
                shoff = struct.unpack_from("<Q", header, 40)[0]
                shentsize, shnum, shstrndx = struct.unpack_from("<HHH", header, 58)
                if shentsize != SHDR_SIZE or not 0 < shnum <= MAX_SECTIONS or shstrndx >= shnum:
                    raise LibraryCopyError(f"{path}: unusual section header table")
                if shoff + shnum * SHDR_SIZE > size:
                    raise LibraryCopyError(f"{path}: section headers run past the end of the file")
                f.seek(shoff)
                raw = f.read(shnum * SHDR_SIZE)
                rows = [struct.unpack_from("<IIQQQQIIQQ", raw, i * SHDR_SIZE) for i in range(shnum)]
                str_off, str_size = rows[shstrndx][4], rows[shstrndx][5]
                if str_off + str_size > size or str_size > MAX_NAME * 64:
                    raise LibraryCopyError(f"{path}: section names run past the end of the file")
                f.seek(str_off)
                names = f.read(str_size)
        except OSError as e:
            raise LibraryCopyError(f"{path}: {e.strerror or e}") from None
        sections = []
        for i, (name, typ, flags, addr, offset, sec_size, link, info, align, entsize) in enumerate(rows):
            end = names.find(b"\0", name)
            text = names[name : end if end >= 0 else len(names)].decode("utf-8", "replace") if name < len(names) else ""
            sections.append(Section(i, text, typ, flags, addr, offset, sec_size, link, info, align, entsize))
        return cls(path, header, sections, shoff, shstrndx, size)

    @property
    def machine(self) -> int:
        return struct.unpack_from("<H", self.header, 18)[0]

    def by_name(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def first_of_type(self, sh_type: int) -> Section | None:
        return next((s for s in self.sections if s.type == sh_type), None)

    def section_at(self, address: int) -> Section | None:
        """The allocated section holding address (gdb's find_pc_section; TLS templates excluded)."""
        i = bisect.bisect_right(self._alloc_starts, address) - 1
        if i >= 0 and self._alloc[i].addr <= address < self._alloc[i].end:
            return self._alloc[i]
        return None

    def has_contents(self, section: Section) -> bool:
        return section.type != SHT_NOBITS and section.offset + section.size <= self.file_size


# --------------------------------------------------------------------------- the sorted table


@dataclass
class SymbolOrder:
    """A .symtab's symbol indexes in address order, and per section index the lowest address
    of any of its symbols and of its sized ones (where gdb's downward search can stop)."""

    order: Sequence[int]
    lowest: dict[int, int]
    lowest_sized: dict[int, int]
    complete = True  # every symbol (selection.SymbolSelection holds some)

    def around(self, address: int) -> tuple[int, int]:
        return 0, ALL

    def lowest_of(self, shndx: int, sized: bool) -> int | None:
        return (self.lowest_sized if sized else self.lowest).get(shndx)


def sort_symbols(symtab_bytes: bytes | memoryview) -> SymbolOrder:
    """The SymbolOrder of a raw .symtab."""
    values, sizes, sections = array("Q"), array("Q"), array("H")
    _add_columns(symtab_bytes, values, sizes, sections)
    return _symbol_order(values, sizes, sections)


def sort_symbols_in(f: BinaryIO, offset: int, size: int) -> SymbolOrder:
    """The SymbolOrder of the .symtab at offset in file f, read a few MB at a time: only the
    columns the order needs are kept (22 of each symbol's 24 bytes at most, never the table)."""
    values, sizes, sections = array("Q"), array("Q"), array("H")
    size -= size % SYM_SIZE
    f.seek(offset)
    done = 0
    while done < size:
        chunk = f.read(min(SORT_READ, size - done))
        if not chunk or len(chunk) % SYM_SIZE:
            raise LibraryCopyError("the symbol table runs past the end of the file")
        _add_columns(chunk, values, sizes, sections)
        done += len(chunk)
    return _symbol_order(values, sizes, sections)


def _add_columns(symtab_bytes: bytes | memoryview, values: array, sizes: array, sections: array) -> None:
    """Append the st_value, st_size and st_shndx of each whole symbol in symtab_bytes: views of
    the table, not copies (a TensorFlow core's first run sorts 1.2 million symbols, and its peak
    memory is this sort's)."""
    raw = memoryview(symtab_bytes)[: len(symtab_bytes) - len(symtab_bytes) % SYM_SIZE]
    if not raw.contiguous or raw.itemsize != 1 or raw.ndim != 1:
        raw = memoryview(bytes(raw))
    words = raw.cast("B").cast("Q")
    values.extend(words[1::3])
    sizes.extend(words[2::3])
    sections.extend(raw.cast("B").cast("H")[3::12])  # st_shndx: bytes 6-7 of each 24-byte symbol


def _symbol_order(values: array, sizes: array, sections: array) -> SymbolOrder:
    order = _address_order(values)
    # The lowest value (and lowest of a sized symbol) per section: the first of each section in
    # address order, found by walking the order only until every section present has both.
    present = set(sections)
    lowest: dict[int, int] = {}
    lowest_sized: dict[int, int] = {}
    sized_present = set(compress(sections, sizes))
    for index in order:
        shndx = sections[index]
        if shndx not in lowest:
            lowest[shndx] = values[index]
        if shndx not in lowest_sized and sizes[index]:
            lowest_sized[shndx] = values[index]
        if len(lowest) == len(present) and len(lowest_sized) == len(sized_present):
            break
    return SymbolOrder(order, lowest, lowest_sized)


def _address_order(values: array) -> array:
    """Indexes of values in ascending order, equal values by index (a stable sort's order).

    Each value and its index are packed into one integer, spread over buckets of about 64K by
    range, and each bucket is sorted in turn: a list of Python integers a bucket at a time,
    where sorting all indexes by key held two integers a symbol (for TensorFlow's 1.2 million
    symbols: ~20 MB at the peak instead of ~150 MB, and faster)."""
    count = len(values)
    bits = max(1, count.bit_length())
    if not count or max(values) >= 1 << (64 - bits):
        return array("I", sorted(range(count), key=values.__getitem__))
    mask = (1 << bits) - 1
    packed = array("Q", ((value << bits) | index for index, value in enumerate(values)))
    low, high = min(packed), max(packed)
    shift = max(0, (high - low).bit_length() - max(1, count >> 16).bit_length())
    buckets = [array("Q") for _ in range(((high - low) >> shift) + 1)]
    appends = [bucket.append for bucket in buckets]
    for key in packed:
        appends[(key - low) >> shift](key)
    del packed
    order = array("I")
    for bucket in buckets:
        order.extend(key & mask for key in sorted(bucket))
    return order


class LibrarySymbols:
    """Windows of gdb's minimal symbols of one library (its .symtab plus PLT/GOT names)."""

    def __init__(self, layout: ElfLayout, symbol_order: SymbolOrder | SymbolSelection):
        symtab = layout.first_of_type(SHT_SYMTAB)
        if symtab is None or not 0 < symtab.link < len(layout.sections):
            raise LibraryCopyError(f"{layout.path} has no symbol table")
        strtab = layout.sections[symtab.link]
        for s in (symtab, strtab):
            if not layout.has_contents(s):
                raise LibraryCopyError(f"{layout.path}: {s.name} runs past the end of the file")
        self.layout = layout
        self._selected = symbol_order
        self._order = symbol_order.order
        self._file = open(layout.path, "rb")
        try:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            self._file.close()
            raise LibraryCopyError(f"{layout.path}: cannot map it: {e}") from None
        self._symtab = memoryview(self._map)[symtab.offset : symtab.offset + symtab.size - symtab.size % SYM_SIZE]
        self._strtab = (strtab.offset, strtab.size)
        self._count = len(self._order)  # positions in the order
        if symbol_order.complete and len(self._order) != len(self._symtab) // SYM_SIZE:
            self.close()
            raise LibraryCopyError(f"{layout.path}: the symbol order does not match its symbol table")
        self._synthetic: dict[int, list[ElfSymbol]] | None = None

    def close(self) -> None:
        try:
            self._symtab.release()
        except (AttributeError, ValueError):
            pass
        try:
            self._map.close()
        except (BufferError, ValueError):
            pass
        self._file.close()

    def __enter__(self) -> LibrarySymbols:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading symbols

    def _value(self, order_position: int) -> int:
        return struct.unpack_from("<Q", self._symtab, self._order[order_position] * SYM_SIZE + 8)[0]

    def _symbol(self, index: int) -> ElfSymbol:
        name_off, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", self._symtab, index * SYM_SIZE)
        return ElfSymbol(("symtab", index), self._name(name_off), info, other, shndx, value, size)

    def _name(self, offset: int) -> bytes:
        base, size = self._strtab
        if offset >= size:
            return b""
        end = self._map.find(b"\0", base + offset, base + min(size, offset + MAX_NAME))
        return self._map[base + offset : end if end >= 0 else base + min(size, offset + MAX_NAME)]

    # ------------------------------------------------------------------ windows

    def window(self, address: int) -> list[ElfSymbol]:
        """The symbols gdb consults to name address (link-time), see the module docstring."""
        section = self.layout.section_at(address)
        if section is None:
            return []  # gdb names nothing outside the library's sections
        synthetic = self.synthetic().get(section.index, []) if self._may_have_synthetic(section) else []
        first_synthetic = synthetic[0].value if synthetic else None
        lo, hi = self._selected.around(address)
        out: list[ElfSymbol] = []
        stop_after_next = False
        zero_sized_seen = False
        for value, group in self._groups_down(address, synthetic, lo):
            if stop_after_next:
                out.extend(group)  # the symbol below the stopping one: gdb compares their ends
                break
            own = [s for s in group if s.shndx == section.index]
            sized = any(s.size for s in own)
            covers = any(s.size and s.value + s.size > address for s in group)
            # gdb skips symbols of other sections and, once it has one, further zero-sized ones:
            # groups of only those change nothing and stay out of the window.
            if covers or sized or (own and not zero_sized_seen):
                out.extend(group)
                if len(out) > MAX_WINDOW_SYMBOLS:
                    raise LibraryCopyError(f"{self.layout.path}: symbols near {address:#x} are too many to window")
            zero_sized_seen = zero_sized_seen or any(not s.size for s in own)
            if sized and not covers:
                stop_after_next = True  # gdb stops here
            elif self._none_below(section.index, value, lo, first_synthetic):
                break  # nothing of this section further down
            elif zero_sized_seen and self._none_below(section.index, value, lo, None, sized=True):
                break  # only zero-sized ones further down, and gdb keeps the first it met
        out.extend(self._group_above(address, section, synthetic, hi))
        return out

    def _none_below(self, shndx: int, value: int, lo: int, first_synthetic: int | None, sized: bool = False) -> bool:
        """No symbol of the section lies below value (sized: none that is sized at or below it)."""
        if first_synthetic is not None and first_synthetic < value:
            return False
        if not self._selected.complete and self._own_below(shndx, value, lo, sized):
            return False  # the selection tells, without a pass over the whole table
        if sized:
            lowest_sized = self._selected.lowest_of(shndx, True)
            return lowest_sized is None or value < lowest_sized
        lowest = _min(self._selected.lowest_of(shndx, False), first_synthetic)
        return lowest is None or value <= lowest

    def _own_below(self, shndx: int, value: int, lo: int, sized: bool) -> bool:
        """Whether the selection holds a symbol of the section below value (sized: at or below)."""
        k = (bisect.bisect_right if sized else bisect.bisect_left)(range(self._count), value, key=self._value) - 1
        for position in range(k, max(-1, k - OWN_BELOW_STEPS), -1):
            if self._value(position) < lo:
                break
            if self._selected.is_own(self._order[position], shndx, sized):
                return True
        return False

    def _groups_down(self, address: int, synthetic: list[ElfSymbol], lo: int = 0) -> Iterable[tuple[int, list[ElfSymbol]]]:
        """Groups of symbols at one value, from address down; lo: where the symbols known end."""
        i = bisect.bisect_right(range(self._count), address, key=self._value) - 1
        j = bisect.bisect_right(synthetic, address, key=_value_of) - 1 if synthetic else -1
        while i >= 0 or j >= 0 or lo > 0:
            below = self._value(i) if i >= 0 else -1
            if below < lo and lo > 0 and (j < 0 or synthetic[j].value < lo):
                raise OutsideSelection(f"{address:#x}: below {lo:#x}")
            value = max(below if below >= lo else -1, synthetic[j].value if j >= 0 else -1)
            group = []
            while i >= 0 and self._value(i) == value:
                group.append(self._symbol(self._order[i]))
                i -= 1
            while j >= 0 and synthetic[j].value == value:
                group.append(synthetic[j])
                j -= 1
            yield value, group

    def _group_above(self, address: int, section: Section, synthetic: list[ElfSymbol], hi: int = ALL) -> list[ElfSymbol]:
        """The first group above address holding a symbol of the section (bounds an unsized one);
        hi: where the symbols known end."""
        i = bisect.bisect_right(range(self._count), address, key=self._value)
        steps = 0
        while steps < MAX_WINDOW_SYMBOLS:
            value = self._value(i) if i < self._count else ALL
            if value >= min(hi, section.end):
                if hi < section.end:
                    raise OutsideSelection(f"{address:#x}: above {hi:#x}")
                break
            group = []
            while i < self._count and self._value(i) == value:
                group.append(self._symbol(self._order[i]))
                i += 1
                steps += 1
            if any(s.shndx == section.index for s in group):
                return group + _at_value(synthetic, value)
        k = bisect.bisect_right(synthetic, address, key=_value_of)
        return _at_value(synthetic, synthetic[k].value) if k < len(synthetic) else []

    # ------------------------------------------------------------------ made-up names

    def _may_have_synthetic(self, section: Section) -> bool:
        return section.name in PLT_SECTIONS or section.name in (".got.plt", ".got")

    def synthetic(self) -> dict[int, list[ElfSymbol]]:
        """`sym@plt` and `sym@got.plt` symbols per section index, in address order."""
        if self._synthetic is None:
            self._synthetic = {}
            if self.layout.machine == EM_X86_64:
                for symbol in [*self._plt_symbols(), *self._got_plt_symbols()]:
                    self._synthetic.setdefault(symbol.shndx, []).append(symbol)
            for symbols in self._synthetic.values():
                symbols.sort(key=lambda s: s.value)
        return self._synthetic

    def _dynamic_symbol(self, dynsym: Section, index: int) -> tuple[bytes, int, int] | None:
        """(name, bind, shndx) of a dynamic symbol; index 0 is BFD's `*ABS*`."""
        if index == 0:
            return b"*ABS*", STB_LOCAL, SHN_ABS
        offset = dynsym.offset + index * SYM_SIZE
        if index * SYM_SIZE + SYM_SIZE > dynsym.size or offset + SYM_SIZE > len(self._map):
            return None
        name_off, info, _other, shndx = struct.unpack_from("<IBBH", self._map, offset)
        dynstr = self.layout.sections[dynsym.link] if 0 < dynsym.link < len(self.layout.sections) else None
        if dynstr is None or name_off >= dynstr.size:
            return None
        start = dynstr.offset + name_off
        end = self._map.find(b"\0", start, min(dynstr.offset + dynstr.size, start + MAX_NAME))
        return self._map[start : end if end >= 0 else start], info >> 4, shndx

    def _dynamic_relocations(self) -> tuple[Section | None, dict[int, tuple[int, int]]]:
        """The dynamic symbol table and GOT address -> (symbol index, addend) of its relocations."""
        dynsym = self.layout.first_of_type(SHT_DYNSYM)
        by_address: dict[int, tuple[int, int]] = {}
        if dynsym is None:
            return None, by_address
        for rel in self.layout.sections:
            if rel.type != SHT_RELA or rel.link != dynsym.index or not self.layout.has_contents(rel):
                continue
            data = self._map[rel.offset : rel.offset + rel.size - rel.size % RELA_SIZE]
            for r_offset, r_info, addend in struct.iter_unpack("<QQq", data):
                by_address.setdefault(r_offset, (r_info >> 32, addend))
        return dynsym, by_address

    def _plt_symbols(self) -> list[ElfSymbol]:
        """BFD's synthetic `sym@plt` symbols: one per PLT slot that jumps through a relocated GOT slot."""
        sections = [self.layout.by_name(n) for n in PLT_SECTIONS]
        sections = [s for s in sections if s is not None and self.layout.has_contents(s) and s.size]
        if not sections:
            return []
        dynsym, relocs = self._dynamic_relocations()
        if dynsym is None:
            return []
        out: list[ElfSymbol] = []
        for section in sections:
            data = self._map[section.offset : section.offset + section.size]
            slot = _slot_size(section, data)
            for start in range(0, len(data) - slot + 1, slot):
                entry = data[start : start + slot]
                # Lazy PLT0 (push; jmp through GOT+16, no relocation there) and IBT lazy slots
                # (push; jump to PLT0) name nothing; every other slot jumps through its GOT slot.
                got = None if entry.startswith((*_LAZY_PLT0, _IBT_LAZY_SLOT)) else _got_target(entry, section.addr + start)
                if got is None:
                    continue
                reloc = relocs.get(got)
                if reloc is None:
                    continue
                symbol = self._dynamic_symbol(dynsym, reloc[0])
                if symbol is None:
                    continue
                name, bind, shndx = symbol
                if reloc[1]:
                    name += b"+0x%x" % (reloc[1] & 0xFFFFFFFFFFFFFFFF)
                # BFD copies the dynamic symbol's flags: defined globals and any weak symbol are
                # global (gdb: mst_text), undefined and local ones file-local (mst_file_text).
                is_global = bind in (STB_WEAK, STB_GNU_UNIQUE) or (bind == STB_GLOBAL and shndx != SHN_UNDEF)
                info = ((STB_GLOBAL if is_global else STB_LOCAL) << 4) | STT_FUNC
                out.append(
                    ElfSymbol(("plt", section.index, start), name + b"@plt", info, 0, section.index, section.addr + start, 0)
                )
        return out

    def _got_plt_symbols(self) -> list[ElfSymbol]:
        """gdb's `sym@got.plt` symbols (elf_rel_plt_read_minimal_symbols): one per jump slot."""
        got_plt = self.layout.by_name(".got.plt") or self.layout.by_name(".got")
        dynsym = self.layout.first_of_type(SHT_DYNSYM)
        if got_plt is None or dynsym is None:
            return []
        plt = self.layout.by_name(".plt")
        wanted = {got_plt.index} | ({plt.index} if plt is not None else set())
        relplt = next(
            (s for s in self.layout.sections if s.type in (SHT_REL, SHT_RELA) and s.info in wanted and s.info != 0), None
        )
        if relplt is None or relplt.type != SHT_RELA or relplt.link != dynsym.index or not self.layout.has_contents(relplt):
            return []
        out = []
        data = self._map[relplt.offset : relplt.offset + relplt.size - relplt.size % RELA_SIZE]
        for n, (r_offset, r_info, _addend) in enumerate(struct.iter_unpack("<QQq", data)):
            if got_plt.addr <= r_offset < got_plt.end:
                home = got_plt
            elif plt is not None and plt.addr <= r_offset < plt.end:
                home = plt
            else:
                continue
            symbol = self._dynamic_symbol(dynsym, r_info >> 32)
            if symbol is None:
                continue
            info = (STB_LOCAL << 4) | STT_OBJECT
            out.append(ElfSymbol(("got", n), symbol[0] + b"@got.plt", info, 0, home.index, r_offset, 8))
        return out


def _min(*values: int | None) -> int | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _value_of(symbol: ElfSymbol) -> int:
    return symbol.value


def _at_value(symbols: list[ElfSymbol], value: int) -> list[ElfSymbol]:
    """The symbols of an address-ordered list that sit at value."""
    out = []
    k = bisect.bisect_left(symbols, value, key=_value_of)
    while k < len(symbols) and symbols[k].value == value:
        out.append(symbols[k])
        k += 1
    return out


def _slot_size(section: Section, data: bytes) -> int:
    """8-byte slots in a non-IBT .plt.got (jmp *GOT; xchg %ax,%ax), else 16."""
    if section.name == ".plt.got" and data[:2] == b"\xff\x25" and (len(data) < 16 or data[8:10] == b"\xff\x25"):
        return 8
    return 16


def plt_layout_known(layout: ElfLayout) -> bool:
    """Whether every PLT slot of the library is one whose made-up name is reproduced here:
    a slot that jumps through its GOT slot, a lazy PLT0, or an IBT lazy slot. A layout this
    module does not know is loaded whole instead of guessed at."""
    if layout.machine != EM_X86_64:
        return False
    with open(layout.path, "rb") as f:
        for name in PLT_SECTIONS:
            section = layout.by_name(name)
            if section is None or not section.size:
                continue
            if not layout.has_contents(section) or section.size % 8:
                return False
            f.seek(section.offset)
            data = f.read(section.size)
            slot = _slot_size(section, data)
            slots = data[: len(data) - len(data) % slot]
            if name == ".plt" and slots[:slot].startswith(_LAZY_PLT0):
                slots = slots[slot:]
            # Every slot, one after the other, must be one of the known kinds (a TensorFlow
            # library has a few hundred thousand: one regular expression, not a Python loop).
            if _known_slots(slot, name == ".plt").fullmatch(slots) is None:
                return False
    return True


@lru_cache(maxsize=None)
def _known_slots(slot: int, lazy_slots: bool) -> re.Pattern[bytes]:
    kinds = [prefix for prefix, _disp_at, end in _GOT_JUMPS if end <= slot]
    if lazy_slots:
        kinds.append(_IBT_LAZY_SLOT)
    any_slot = b"|".join(re.escape(prefix) + b"[\\s\\S]{%d}" % (slot - len(prefix)) for prefix in kinds)
    return re.compile(b"(?:" + any_slot + b")*")


def _got_target(entry: bytes, address: int) -> int | None:
    for prefix, disp_at, end in _GOT_JUMPS:
        if entry.startswith(prefix) and len(entry) >= end:
            return address + end + struct.unpack_from("<i", entry, disp_at)[0]
    return None


# --------------------------------------------------------------------------- symbol files


def write_symbol_file(layout: ElfLayout, symbols: Iterable[ElfSymbol], path: str, *, dwarf: bool = False) -> int:
    """Write an ELF file that gdb can attach as the library's separate debug file.

    It has the library's ELF header and every allocated section (as NOBITS, the way debug
    files made by `objcopy --only-keep-debug` have them, so gdb matches them to the library's
    sections by name and address) and a symbol table with just the given symbols; with dwarf,
    also the library's DWARF sections as they are (CARRIED_DEBUG_PREFIXES: a linked library's
    are not relocated any further). Returns the number of symbols written.
    """
    unique: dict[tuple, ElfSymbol] = {}
    for s in symbols:
        unique.setdefault(s.key, s)
    ordered = sorted(unique.values(), key=lambda s: (s.bind != STB_LOCAL, s.value, s.key))
    strtab = bytearray(b"\0")
    entries = bytearray(SYM_SIZE)
    locals_count = 1
    for s in ordered:
        name_offset = len(strtab)
        strtab += s.name + b"\0"
        entries += struct.pack("<IBBHQQ", name_offset, s.info, s.other, s.shndx, s.value, s.size)
        if s.bind == STB_LOCAL:
            locals_count += 1

    shstrtab = bytearray(b"\0")

    def add_name(text: str) -> int:
        offset = len(shstrtab)
        shstrtab.extend(text.encode() + b"\0")
        return offset

    body = bytearray(64)
    headers = bytearray(SHDR_SIZE)  # section 0
    for section in layout.sections[1:]:
        if section.alloc:
            headers += struct.pack(
                "<IIQQQQIIQQ", add_name(section.name), SHT_NOBITS, section.flags, section.addr, 0, section.size,
                0, 0, section.align, section.entsize,
            )  # fmt: skip
        elif dwarf and section.name.startswith(CARRIED_DEBUG_PREFIXES) and section.type != SHT_NOBITS:
            body += b"\0" * (-len(body) % max(1, section.align))
            offset = len(body)
            body += _section_contents(layout, section)
            headers += struct.pack(
                "<IIQQQQIIQQ", add_name(section.name), section.type, section.flags, 0, offset, section.size,
                section.link, section.info, section.align, section.entsize,
            )  # fmt: skip
        else:
            headers += bytes(SHDR_SIZE)  # kept as an empty slot: symbol section indexes stay valid
    n_orig = len(layout.sections)
    symtab_name, strtab_name, shstrtab_name = add_name(".symtab"), add_name(".strtab"), add_name(".shstrtab")

    body += b"\0" * (-len(body) % 8)
    symtab_offset = len(body)
    body += entries
    strtab_offset = len(body)
    body += strtab
    shstrtab_offset = len(body)
    body += shstrtab
    body += b"\0" * ((-len(body)) % 8)
    headers += struct.pack(
        "<IIQQQQIIQQ", symtab_name, SHT_SYMTAB, 0, 0, symtab_offset, len(entries), n_orig + 1, locals_count, 8, SYM_SIZE
    )
    headers += struct.pack("<IIQQQQIIQQ", strtab_name, SHT_STRTAB, 0, 0, strtab_offset, len(strtab), 0, 0, 1, 0)
    headers += struct.pack("<IIQQQQIIQQ", shstrtab_name, SHT_STRTAB, 0, 0, shstrtab_offset, len(shstrtab), 0, 0, 1, 0)
    shoff = len(body)
    body += headers
    _write_elf(layout, body, shoff, n_orig + 3, path)
    return len(ordered)


def _section_contents(layout: ElfLayout, section: Section) -> bytes:
    with open(layout.path, "rb") as f:
        f.seek(section.offset)
        data = f.read(section.size)
    if len(data) != section.size:
        raise LibraryCopyError(f"{layout.path}: section {section.name} runs past the end of the file")
    return data


def carried_dwarf_size(layout: ElfLayout) -> int:
    """Bytes of the DWARF sections a symbol file would carry (write_symbol_file's dwarf)."""
    return sum(s.size for s in layout.sections if not s.alloc and s.name.startswith(CARRIED_DEBUG_PREFIXES) and s.type != SHT_NOBITS)


def write_unwind_file(layout: ElfLayout, eh_frame: bytes, path: str) -> None:
    """Write an ELF file holding only an `.eh_frame` (unwindtables.py), at the library's own
    address of that section, for gdb to add as an object file of its own beside the library.

    gdb looks for unwind entries in every object file but a separate debug file, so these do
    not go into the symbol file; holding no other section and no symbol, the file names
    nothing and claims no code address.
    """
    section = next((s for s in layout.sections if s.name == ".eh_frame" and s.alloc), None)
    if section is None:
        raise LibraryCopyError(f"{layout.path}: no .eh_frame section")
    shstrtab = b"\0.eh_frame\0.shstrtab\0"
    body = bytearray(64)
    frame_offset = len(body)
    body += eh_frame
    body += b"\0" * ((-len(body)) % 8)
    names_offset = len(body)
    body += shstrtab
    body += b"\0" * ((-len(body)) % 8)
    shoff = len(body)
    body += bytes(SHDR_SIZE)
    body += struct.pack(
        "<IIQQQQIIQQ", 1, SHT_PROGBITS, section.flags, section.addr, frame_offset, len(eh_frame), 0, 0, section.align, 0
    )
    body += struct.pack("<IIQQQQIIQQ", 11, SHT_STRTAB, 0, 0, names_offset, len(shstrtab), 0, 0, 1, 0)
    _write_elf(layout, body, shoff, 3, path)


def _write_elf(layout: ElfLayout, body: bytearray, shoff: int, sections: int, path: str) -> None:
    """body, its first 64 bytes the library's ELF header made to describe it: no program
    headers, `sections` section headers at shoff, the last of them the section names."""
    elf_header = bytearray(layout.header)
    struct.pack_into("<Q", elf_header, 32, 0)  # no program headers
    struct.pack_into("<Q", elf_header, 40, shoff)
    struct.pack_into("<HHHHHH", elf_header, 52, 64, 56, 0, SHDR_SIZE, sections, sections - 1)
    body[:64] = elf_header
    with open(path, "wb") as f:
        f.write(body)
