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
