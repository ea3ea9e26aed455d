"""Facts read from files on this machine, cached per (path, mtime, size).

A batch meets the same libraries in every core; a file replaced on disk (a library upgraded,
a crasher rebuilt) has another mtime or size and is read again.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

FileIdentity = tuple[int, int, int, int]


def file_identity(path: str | os.PathLike[str]) -> FileIdentity | None:
    """(st_dev, st_ino, size, mtime_ns) of the file path names, following links; None when it
    cannot be stat'ed. A file replaced or rewritten gets another identity."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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


class BoundedCache(Generic[K, T]):
    """A thread-safe mapping that keeps the `limit` most recently used answers; for facts about
    files whose key holds the files' identities (file_identity), so none is served stale."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._values: OrderedDict[K, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], T]) -> T:
        """The answer kept for key, else compute() (kept; errors are not)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.limit:
                self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
