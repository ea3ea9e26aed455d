"""The unwind entries handed to gdb for a library whose copy hides its own
(coreanalyze.gdb.libcopies.unwindtables): checked against pyelftools' reading of the library's
whole .eh_frame, on a real library of this machine."""

from __future__ import annotations

import random

import pytest
from elftools.dwarf.callframe import FDE
from elftools.elf.elffile import ELFFile

from coreanalyze.gdb.libcopies.errors import LibraryCopyError
from coreanalyze.gdb.libcopies.symbolfiles import ElfLayout, write_unwind_file
from coreanalyze.gdb.libcopies.unwindtables import UnwindTable, usable_table


def _library() -> str:
    import ctypes.util
    import os

    for name in ("stdc++", "python3.11", "z", "m"):
        found = ctypes.util.find_library(name)
        for directory in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu"):
            path = os.path.join(directory, found or "")
            if found and os.path.isfile(path):
                return os.path.realpath(path)
    pytest.fail("no shared library with unwind tables on this machine")


def _fdes(path: str) -> list[tuple[int, int, bytes]]:
    """(initial location, range, instructions) of every FDE, as pyelftools reads them."""
    with open(path, "rb") as f:
        dwarf = ELFFile(f).get_dwarf_info()
        return [
            (e.header.initial_location, e.header.address_range, bytes(e.instructions and repr(e.instructions), "utf-8"))
            for e in dwarf.EH_CFI_entries()
            if isinstance(e, FDE)
        ]


@pytest.fixture(scope="module")
def library():
    path = _library()
    layout = ElfLayout.read(path)
    assert usable_table(layout) is not None
    return path, layout, _fdes(path)


def test_each_address_finds_the_entry_that_covers_it(library):
    path, layout, fdes = library
    table = UnwindTable(layout)
    rng = random.Random(7)
    for begin, length, _ in rng.sample(fdes, 200):
        for address in (begin, begin + length // 2, begin + length - 1):
            offset = table.entry_for(address)
            assert offset is not None
            assert table._fde_range(offset) == (begin, length)
    below = min(b for b, _, _ in fdes) - 1
    assert table.entry_for(below) is None
    table.close()


def test_the_entries_written_read_back_as_in_the_library(library, tmp_path):
    path, layout, fdes = library
    rng = random.Random(11)
    chosen = rng.sample(fdes, 25)
    table = UnwindTable(layout)
    section = table.section_for(b + length // 2 for b, length, _ in chosen)
    table.close()
    out = tmp_path / "entries.eh"
    write_unwind_file(layout, section, str(out))
    assert sorted(_fdes(str(out))) == sorted(chosen)  # locations, ranges and instructions


def test_a_library_without_a_search_table_is_not_served(tmp_path):
    plain = tmp_path / "not-elf.so"
    plain.write_bytes(b"\x7fELF" + bytes(60))
    with pytest.raises(LibraryCopyError):
        UnwindTable(ElfLayout.read(str(plain)))
