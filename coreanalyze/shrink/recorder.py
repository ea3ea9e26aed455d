"""Record the pages of a core that an analysis reads: an observer for the recording wrapper that
the shrink installs on the core's Process (coreanalyze.process.process.Process.record)."""

from __future__ import annotations

from typing import Callable

from coreanalyze.corefile import memory
from coreanalyze.shrink.pages import PageSet

# A read bigger than this is a search through memory, not a structure being followed: what it
# found is kept instead (coreanalyze.shrink.scans), else the shrunk core would keep everything.
# Smaller reads are a search too where the reader says so (memory.searching).
SEARCH_READ = 256 << 10


def recorder(kept: PageSet, why: str = "analysis", searches: list[tuple[int, int]] | None = None) -> Callable[[int, int], None]:
    """observe(address, size): every read adds its pages to `kept`; a search (a read bigger
    than SEARCH_READ, or made in memory.searching) goes to `searches` instead when that is given."""

    def observe(address: int, size: int) -> None:
        if searches is not None and (size > SEARCH_READ or memory.in_search()):
            searches.append((address, size))
        else:
            kept.add(address, size, why)

    return observe
