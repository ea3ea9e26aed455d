"""The unwind entries of a huge library that one core's frames need, for gdb.

gdb reads the whole `.eh_frame` of a library the first time it unwinds through it: 31 MB for
libtensorflow_cc.so.2, about a tenth of a second of every analysis of a TensorFlow core. The
copies gdb gets hide that section (copies.py); the small per-core file attached to a copy
(symbolfiles.py) carries instead an `.eh_frame` with just the entries (FDEs, and the CIEs
they refer to) that cover the addresses gdb will unwind through, found with the library's own
`.eh_frame_hdr` search table. gdb then unwinds those frames with the same entries as from the
whole table; an address outside them is seen by the caller (naming.FrameNamer.missing), which
attaches a larger set.

Entries are copied byte for byte and placed one after another at the section's address; what
depends on an entry's position is re-encoded: the FDE's offset back to its CIE, and its
initial location where that is pc-relative (the usual DW_EH_PE_pcrel|sdata4). The LSDA and
personality pointers are left as they were: gdb reads past them and never uses them.

Only the layouts linkers write are handled (a version-1 `.eh_frame_hdr` with a sorted table of
datarel|sdata4 pairs, 32-bit entry lengths); anything else raises LibraryCopyError, and the
copy is not used.
"""

from __future__ import annotations

import mmap
import struct
import sys
from functools import cached_property
from typing import Iterable

from coreanalyze.gdb.libcopies.errors import LibraryCopyError
from coreanalyze.gdb.libcopies.symbolfiles import ElfLayout, Section

# DWARF pointer encodings (the low nibble: format; the high one: what it is relative to).
DW_EH_PE_omit = 0xFF
DW_EH_PE_absptr = 0x00
DW_EH_PE_uleb128 = 0x01
DW_EH_PE_udata2 = 0x02
DW_EH_PE_udata4 = 0x03
DW_EH_PE_udata8 = 0x04
DW_EH_PE_sleb128 = 0x09
DW_EH_PE_sdata2 = 0x0A
DW_EH_PE_sdata4 = 0x0B
DW_EH_PE_sdata8 = 0x0C
DW_EH_PE_pcrel = 0x10
DW_EH_PE_datarel = 0x30
TABLE_ENCODING = DW_EH_PE_datarel | DW_EH_PE_sdata4
FIXED_SIZES = {
    DW_EH_PE_absptr: ("<Q", 8), DW_EH_PE_udata2: ("<H", 2), DW_EH_PE_udata4: ("<I", 4), DW_EH_PE_udata8: ("<Q", 8),
    DW_EH_PE_sdata2: ("<h", 2), DW_EH_PE_sdata4: ("<i", 4), DW_EH_PE_sdata8: ("<q", 8),
}  # fmt: skip
MAX_ENTRY = 1 << 20  # one CIE or FDE; real ones are a few hundred bytes


class UnwindTable:
    """A library's `.eh_frame`, searched through its `.eh_frame_hdr` (link-time addresses)."""

    def __init__(self, layout: ElfLayout, path: str | None = None) -> None:
        self.path = path or layout.path
        self.frame = _section(layout, ".eh_frame")
        self.header = _section(layout, ".eh_frame_hdr")
        self._cies: dict[int, int] = {}  # CIE offset -> its FDE pointer encoding

    def close(self) -> None:
        view = self.__dict__.pop("_table", None)
        if view is not None:
            view.release()  # a view of the mapping: released before it
        data = self.__dict__.pop("_data", None)
        if data is not None:
            data.close()

    @cached_property
    def _data(self) -> mmap.mmap:
        try:
            with open(self.path, "rb") as f:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise LibraryCopyError(f"{self.path}: cannot map it ({e})") from None

    @cached_property
    def _table(self) -> memoryview:
        """The search table: (initial location, FDE address) pairs relative to .eh_frame_hdr,
        sorted by location, as read (a TensorFlow library has 700,000)."""
        hdr = self._bytes(self.header.offset, min(self.header.size, 64))
        if len(hdr) < 12 or hdr[0] != 1 or hdr[3] != TABLE_ENCODING:
            raise LibraryCopyError(f"{self.path}: an .eh_frame_hdr of an unknown layout")
        cursor = 4
        _frame_pointer, cursor = _encoded(hdr, cursor, hdr[1], self.header.addr)
        count, cursor = _encoded(hdr, cursor, hdr[2], self.header.addr)
        if not 0 < count <= (self.header.size - cursor) // 8 or self.header.offset + self.header.size > len(self._data):
            raise LibraryCopyError(f"{self.path}: an .eh_frame_hdr table of {count} entries")
        if sys.byteorder != "little":
            raise LibraryCopyError("unwind tables are read on little-endian machines only")
        start = self.header.offset + cursor  # a view of the mapped file: nothing is copied
        return memoryview(self._data)[start : start + 8 * count].cast("i")

    def entry_for(self, address: int) -> int | None:
        """The offset in .eh_frame of the FDE covering this link-time address, else None."""
        # bisect by hand: the pairs are interleaved, and a strided view of them bisects slowly
        table, key = self._table, address - self.header.addr
        lo, hi = 0, len(table) // 2
        while lo < hi:  # past the last entry starting at or below the address
            mid = (lo + hi) // 2
            if table[2 * mid] <= key:
                lo = mid + 1
            else:
                hi = mid
        if lo == 0:
            return None
        offset = self.header.addr + table[2 * lo - 1] - self.frame.addr
        begin, length = self._fde_range(offset)
        return offset if begin <= address < begin + length else None

    def section_for(self, addresses: Iterable[int]) -> bytes:
        """An .eh_frame for the section's address holding the entries covering addresses
        (link-time), their CIEs first, ending with a zero terminator."""
        fdes = sorted({o for o in map(self.entry_for, addresses) if o is not None})
        cies = sorted({self._cie_of(o) for o in fdes})
        out = bytearray()
        placed: dict[int, int] = {}
        for cie in cies:
            placed[cie] = len(out)
            out += self._entry(cie)
        for fde in fdes:
            new = len(out)
            entry = bytearray(self._entry(fde))
            cie = self._cie_of(fde)
            struct.pack_into("<I", entry, 4, new + 4 - placed[cie])
            encoding = self._cies[cie]
            if encoding & 0x70 == DW_EH_PE_pcrel:  # relative to where the entry now lies
                begin, _ = self._fde_range(fde)
                struct.pack_into(_fixed(encoding, self.path)[0], entry, 8, begin - (self.frame.addr + new + 8))
            out += entry
        out += b"\0\0\0\0"
        if len(out) > self.frame.size:
            raise LibraryCopyError(f"{self.path}: the entries do not fit the .eh_frame section")
        return bytes(out)

    # ------------------------------------------------------------------ reading entries

    def _bytes(self, offset: int, size: int) -> bytes:
        if offset < 0 or size < 0 or offset + size > len(self._data):
            raise LibraryCopyError(f"{self.path}: unwind tables run past the end of the file")
        return self._data[offset : offset + size]

    def _entry(self, offset: int) -> bytes:
        """One CIE or FDE (its length field included) at this offset of .eh_frame."""
        if not 0 <= offset <= self.frame.size - 8:
            raise LibraryCopyError(f"{self.path}: an unwind entry outside .eh_frame")
        (length,) = struct.unpack("<I", self._bytes(self.frame.offset + offset, 4))
        if length == 0xFFFFFFFF or not 4 <= length <= MAX_ENTRY or offset + 4 + length > self.frame.size:
            raise LibraryCopyError(f"{self.path}: an unwind entry of an unusual length")
        return self._bytes(self.frame.offset + offset, 4 + length)

    def _cie_of(self, fde: int) -> int:
        entry = self._entry(fde)
        (back,) = struct.unpack_from("<I", entry, 4)
        cie = fde + 4 - back
        if back == 0 or cie < 0:
            raise LibraryCopyError(f"{self.path}: an FDE without its CIE")
        if cie not in self._cies:
            self._cies[cie] = _fde_encoding(self._entry(cie), self.path)
        return cie

    def _fde_range(self, fde: int) -> tuple[int, int]:
        """(initial location, address range) of the FDE at this offset."""
        entry = self._entry(fde)
        encoding = self._cies[self._cie_of(fde)]
        fmt, size = _fixed(encoding, self.path)
        begin = struct.unpack_from(fmt, entry, 8)[0]
        if encoding & 0x70 == DW_EH_PE_pcrel:
            begin += self.frame.addr + fde + 8
        elif encoding & 0x70 != DW_EH_PE_absptr:
            raise LibraryCopyError(f"{self.path}: FDE addresses encoded as {encoding:#x}")
        length = struct.unpack_from(fmt.upper() if fmt[1] in "hiq" else fmt, entry, 8 + size)[0]
        return begin, length


def usable_table(layout: ElfLayout, path: str | None = None) -> UnwindTable | None:
    """The library's unwind table when its entries can be served from its .eh_frame_hdr (and
    so its copy may hide .eh_frame): both sections present, the table of the usual layout."""
    try:
        table = UnwindTable(layout, path)
    except LibraryCopyError:
        return None
    try:
        if len(table._table) > 0 and table.frame.offset + table.frame.size <= layout.file_size:
            return table
    except LibraryCopyError:
        pass
    table.close()
    return None


def _section(layout: ElfLayout, name: str) -> Section:
    found = [s for s in layout.sections if s.name == name and s.alloc and s.size > 0]
    if len(found) != 1:
        raise LibraryCopyError(f"{layout.path}: no single {name} section")
    return found[0]


def _fixed(encoding: int, path: str) -> tuple[str, int]:
    found = FIXED_SIZES.get(encoding & 0x0F)
    if found is None:
        raise LibraryCopyError(f"{path}: FDE addresses of variable size ({encoding:#x})")
    return found


def _encoded(data: bytes, cursor: int, encoding: int, section_addr: int) -> tuple[int, int]:
    """A pointer of .eh_frame_hdr (absolute, or relative to its own place or the section)."""
    fmt, size = _fixed(encoding, "the .eh_frame_hdr")
    if cursor + size > len(data):
        raise LibraryCopyError("a truncated .eh_frame_hdr")
    value = struct.unpack_from(fmt, data, cursor)[0]
    relative = encoding & 0x70
    if relative == DW_EH_PE_pcrel:
        value += section_addr + cursor
    elif relative == DW_EH_PE_datarel:
        value += section_addr
    elif relative != DW_EH_PE_absptr:
        raise LibraryCopyError(f"an .eh_frame_hdr pointer encoded as {encoding:#x}")
    return value, cursor + size


def _fde_encoding(cie: bytes, path: str) -> int:
    """The encoding of its FDEs' addresses a CIE declares (augmentation 'R'; else absptr)."""
    cursor = 8
    if len(cie) < 10 or cie[cursor] not in (1, 3):
        raise LibraryCopyError(f"{path}: a CIE of version {cie[cursor] if len(cie) > cursor else '?'}")
    end = cie.find(b"\0", cursor + 1)
    if end < 0:
        raise LibraryCopyError(f"{path}: a CIE without its augmentation")
    augmentation = cie[cursor + 1 : end]
    if not augmentation.startswith(b"z"):
        if augmentation:
            raise LibraryCopyError(f"{path}: a CIE augmentation {augmentation!r}")
        return DW_EH_PE_absptr
    cursor = end + 1
    _, cursor = _uleb(cie, cursor)  # code alignment
    _, cursor = _uleb(cie, cursor)  # data alignment (signed; only skipped)
    if cie[8] == 1:
        cursor += 1  # return address register
    else:
        _, cursor = _uleb(cie, cursor)
    _, cursor = _uleb(cie, cursor)  # augmentation data length
    for letter in augmentation[1:].decode("ascii", "replace"):
        if cursor >= len(cie):
            break
        if letter == "R":
            return cie[cursor]
        if letter == "L":
            cursor += 1
        elif letter == "P":
            encoding = cie[cursor]
            cursor += 1
            if encoding & 0x0F in (DW_EH_PE_uleb128, DW_EH_PE_sleb128):
                _, cursor = _uleb(cie, cursor)
            else:
                cursor += _fixed(encoding, path)[1]
        elif letter not in "SBG":
            raise LibraryCopyError(f"{path}: a CIE augmentation {augmentation!r}")
    return DW_EH_PE_absptr


def _uleb(data: bytes, cursor: int) -> tuple[int, int]:
    value = shift = 0
    while cursor < len(data):
        byte = data[cursor]
        cursor += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80 or shift > 63:
            return value, cursor
    raise LibraryCopyError("a truncated unwind entry")

