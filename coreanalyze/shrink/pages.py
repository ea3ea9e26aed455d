"""Which parts of a core's memory to keep, in grains (smaller than pages: the objects an
analysis follows are scattered over the heap a few dozen bytes each, and a page per object
would keep ten times what they hold)."""

from __future__ import annotations

import bisect

from coreanalyze.corefile.shrunk import GRAIN

PAGE = 4096


def page_floor(address: int) -> int:
    return address & ~(PAGE - 1)


class PageSet:
    """Grains (addresses rounded down to `grain`) the shrunk core keeps, each with why, once."""

    def __init__(self, grain: int = GRAIN) -> None:
        self.grain = grain
        self.pages: set[int] = set()
        self.reasons: dict[str, int] = {}  # why -> bytes first kept for it

    def add(self, start: int, size: int, why: str) -> None:
        if size <= 0 or start < 0:
            return
        g = self.grain
        first, last = start - start % g, (start + size - 1) - (start + size - 1) % g
        before = len(self.pages)
        self.pages.update(range(first, last + g, g))
        self.reasons[why] = self.reasons.get(why, 0) + (len(self.pages) - before) * g

    def coarsened(self, grain: int) -> PageSet:
        """The same memory in bigger grains (fewer, longer runs)."""
        coarse = PageSet(grain)
        coarse.pages = {p - p % grain for p in self.pages}
        coarse.reasons = dict(self.reasons)
        return coarse

    def runs_within(self, start: int, end: int) -> list[tuple[int, int]]:
        """The kept [lo, hi) runs inside [start, end), in address order."""
        ordered = sorted(self.pages)
        kept = ordered[bisect.bisect_left(ordered, start - start % self.grain) : bisect.bisect_left(ordered, end)]
        runs: list[tuple[int, int]] = []
        for p in kept:
            lo, hi = max(p, start), min(p + self.grain, end)
            if runs and runs[-1][1] == lo:
                runs[-1] = (runs[-1][0], hi)
            else:
                runs.append((lo, hi))
        return runs
