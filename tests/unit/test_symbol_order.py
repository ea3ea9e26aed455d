"""The address order of a library's symbols (symbolfiles._address_order) is a stable sort's:
by value, equal values by index, whatever the values (zeros, duplicates, addresses too wide to
pack beside an index)."""

from __future__ import annotations

import random
from array import array

from coreanalyze.gdb.libcopies.symbolfiles import _address_order


def test_address_order_is_a_stable_sort_of_the_values():
    rng = random.Random(47)
    for count in (0, 1, 2, 3, 100, 5_000, 150_000):
        values = array("Q", [rng.choice((0, 5, 1 << 40, rng.randrange(1 << 44))) for _ in range(count)])
        assert list(_address_order(values)) == sorted(range(count), key=values.__getitem__), count


def test_values_too_wide_to_pack_are_still_ordered():
    values = array("Q", [1 << 63, 1, 1 << 63, 0])
    assert list(_address_order(values)) == [3, 1, 0, 2]


def test_a_table_read_a_few_mb_at_a_time_sorts_as_the_whole_table(tmp_path):
    """sort_symbols_in reads the table in pieces (whole symbols each); the order, and the lowest
    address per section, are those of the table read at once."""
    import struct

    from coreanalyze.gdb.libcopies import symbolfiles

    rng = random.Random(7)
    count = symbolfiles.SORT_READ // symbolfiles.SYM_SIZE * 2 + 123  # three pieces, the last short
    table = b"".join(
        struct.pack("<IBBHQQ", i, 0x12, 0, rng.choice((1, 2, 9, 0xFFF1)), rng.randrange(1 << 32), rng.choice((0, 16)))
        for i in range(count)
    )
    path = tmp_path / "symtab.bin"
    path.write_bytes(b"\x7fELF" + bytes(60) + table)
    with open(path, "rb") as f:
        pieces = symbolfiles.sort_symbols_in(f, 64, len(table))
    whole = symbolfiles.sort_symbols(table)
    assert pieces.order == whole.order
    assert (pieces.lowest, pieces.lowest_sized) == (whole.lowest, whole.lowest_sized)
