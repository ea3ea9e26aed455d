"""Which pages of a core's memory to keep: page numbers, clipped to what the core holds."""

from __future__ import annotations

import bisect

PAGE = 4096


def page_floor(address: int) -> int:
    return address & ~(PAGE - 1)


class PageSet:
    """Pages (addresses rounded down to PAGE) the shrunk core keeps, each with why, once."""

    def __init__(self) -> None:
        self.pages: set[int] = set()
        self.reasons: dict[str, int] = {}  # why -> pages first kept for it

    def add(self, start: int, size: int, why: str) -> None:
        if size <= 0 or start < 0:
            return
        first, last = page_floor(start), page_floor(start + size - 1)
        before = len(self.pages)
        self.pages.update(range(first, last + PAGE, PAGE))
        self.reasons[why] = self.reasons.get(why, 0) + len(self.pages) - before

    def runs_within(self, start: int, end: int) -> list[tuple[int, int]]:
        """The kept [lo, hi) runs inside [start, end), in address order."""
        ordered = sorted(self.pages)
        kept = ordered[bisect.bisect_left(ordered, page_floor(start)) : bisect.bisect_left(ordered, end)]
        runs: list[tuple[int, int]] = []
        for p in kept:
            lo, hi = max(p, start), min(p + PAGE, end)
            if runs and runs[-1][1] == lo:
                runs[-1] = (runs[-1][0], hi)
            else:
                runs.append((lo, hi))
        return runs
