"""The symbols near a few addresses of a huge library, without sorting its table.

A first analysis of a TensorFlow core names a few hundred addresses in libtensorflow_cc.so.2,
whose 1.2 million symbols take ~0.6 s of CPU to put in address order. Naming those addresses
needs only the symbols within some distance of each: one pass over the table's st_value column
(C speed: `bisect` against the merged ranges, `itertools.compress`) picks them, and only they are
sorted. LibrarySymbols then walks that selection as it walks a whole order, and raises
OutsideSelection where a window would reach past the range selected around its address; the
caller selects again, farther (symbolfiles.LibrarySymbols.window and copies.FastLibrary.windows).

The columns are views of the mapped file: nothing of the table is copied. A section's lowest
symbol, where gdb's search stops, is found by a pass of its own only when the selection cannot
tell (symbolfiles.LibrarySymbols._own_below).
"""

from __future__ import annotations

import bisect
import mmap
import operator
from functools import partial
from itertools import compress

from coreanalyze.gdb.libcopies.errors import LibraryCopyError

SYM_SIZE = 24
ALL = 1 << 64  # above every address


class OutsideSelection(Exception):
    """A window reached past the symbols selected around its address."""


class SymbolColumns:
    """st_value, st_size and st_shndx of each symbol of a .symtab: strided views of the mapped file."""

    def __init__(self, path: str, offset: int, size: int):
        self._file = open(path, "rb")
        try:
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            self._file.close()
            raise LibraryCopyError(f"{path}: cannot map it: {e}") from None
        size -= size % SYM_SIZE
        if offset % 8 or offset + size > len(self._map):
            self.close()
            raise LibraryCopyError(f"{path}: the symbol table runs past the end of the file")
        table = memoryview(self._map)[offset : offset + size]
        self.values = table.cast("Q")[1::3]
        self.sizes = table.cast("Q")[2::3]
        self.sections = table.cast("H")[3::12]  # bytes 6-7 of each 24-byte symbol
        self._views = [table, self.values, self.sizes, self.sections]
        self._lowest: dict[tuple[int, bool], int | None] = {}

    def __len__(self) -> int:
        return len(self.values)

    def select(self, bounds: list[int]) -> list[int]:
        """Indexes of the symbols whose value lies in one of the ranges [bounds[2k], bounds[2k+1])."""
        inside = map((1).__and__, map(partial(bisect.bisect_right, bounds), self.values))
        return list(compress(range(len(self.values)), inside))

    def lowest(self, shndx: int, sized: bool) -> int | None:
        """The lowest value of the section's symbols (of its sized ones): one pass, kept."""
        key = (shndx, sized)
        if key not in self._lowest:
            mine = map(shndx.__eq__, self.sections)
            if sized:
                mine = map(operator.and_, mine, map(bool, self.sizes))
            self._lowest[key] = min(compress(self.values, mine), default=None)
        return self._lowest[key]

    def close(self) -> None:
        for view in reversed(self._views):
            view.release()
        self._views = []
        try:
            self._map.close()
        except (BufferError, ValueError):
            pass
        self._file.close()


class SymbolSelection:
    """Stands in for a SymbolOrder (symbolfiles): the symbols within `reach` of some link-time
    addresses, in address order (equal values by index, as the whole order has them)."""

    complete = False

    def __init__(self, columns: SymbolColumns, addresses: list[int], reach: int):
        self.columns = columns
        self.bounds: list[int] = []
        for address in sorted(addresses):
            lo, hi = max(0, address - reach), min(ALL, address + reach + 1)
            if self.bounds and lo <= self.bounds[-1]:
                self.bounds[-1] = max(self.bounds[-1], hi)
            else:
                self.bounds += [lo, hi]
        self.order = columns.select(self.bounds)
        self.order.sort(key=columns.values.__getitem__)  # stable: equal values stay by index

    def around(self, address: int) -> tuple[int, int]:
        """The range [lo, hi) selected around address: every symbol with a value in it is here."""
        k = bisect.bisect_right(self.bounds, address)
        if k % 2 == 0:
            raise OutsideSelection(f"{address:#x} was not selected")
        return self.bounds[k - 1], self.bounds[k]

    def lowest_of(self, shndx: int, sized: bool) -> int | None:
        return self.columns.lowest(shndx, sized)

    def is_own(self, index: int, shndx: int, sized: bool) -> bool:
        return self.columns.sections[index] == shndx and (not sized or self.columns.sizes[index] != 0)
