"""Facts read from files on this machine, cached per (path, mtime, size).

A batch meets the same libraries in every core; a file replaced on disk (a library upgraded,
a crasher rebuilt) has another mtime or size and is read again.
"""

from __future__ import annotations

import os
import stat
import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """A regular file (not a FIFO, device or directory) exists at path."""
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


class PerFileCache(Generic[T]):
    def __init__(self) -> None:
        self._values: dict[tuple[str, int, int], T | None] = {}
        self._lock = threading.Lock()

    def get(self, path: str, read: Callable[[str], T | None]) -> T | None:
        """read(path) for a regular file, once per version of it; None for anything else."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(st.st_mode):
            return None  # a FIFO or device would block or never end
        key = (path, st.st_mtime_ns, st.st_size)
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = read(path)
        with self._lock:
            self._values[key] = value
        return value
