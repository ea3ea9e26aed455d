"""Record the pages of a core that an analysis reads (through coreanalyze.memory's observer)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from coreanalyze import memory
from coreanalyze.shrink.pages import PageSet

# A read bigger than this is a search through memory, not a structure being followed: what it
# found is kept instead (coreanalyze.shrink.scans), else the shrunk core would keep everything.
# Smaller reads are a search too where the reader says so (memory.searching).
SEARCH_READ = 256 << 10


@contextmanager
def recording(
    core_path: str, kept: PageSet, why: str = "analysis", searches: list[tuple[int, int]] | None = None
) -> Iterator[PageSet]:
    """While active, every read of the core at core_path adds its pages to `kept`; a search
    (a read bigger than SEARCH_READ, or made in memory.searching) goes to `searches` instead
    when that is given."""
    wanted = os.path.realpath(core_path)
    previous = memory.read_observer
    same: dict[str, bool] = {}

    def observe(path: str, address: int, size: int) -> None:
        if path not in same:
            same[path] = os.path.realpath(path) == wanted
        if not same[path]:
            pass
        elif searches is not None and (size > SEARCH_READ or memory.in_search()):
            searches.append((address, size))
        else:
            kept.add(address, size, why)
        if previous is not None:
            previous(path, address, size)

    memory.read_observer = observe
    try:
        yield kept
    finally:
        memory.read_observer = previous
