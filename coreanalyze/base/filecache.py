"""Facts read from files on this machine, cached per (path, mtime, size).

A batch meets the same libraries in every core; a file replaced on disk (a library upgraded,
a crasher rebuilt) has another mtime or size and is read again. Small facts are also kept on
disk for the next run (coreanalyze.base.filefacts).
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, TypeVar

from coreanalyze.base.filefacts import FactStore, stat_key

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


def _same(value: Any) -> Any:
    return value


class PerFileCache(Generic[T]):
    """kind: also keep the answers on disk from one run to the next (coreanalyze.base.filefacts),
    as encode(value), a JSON value that decode turns back (ValueError or TypeError: not ours,
    the file is read again)."""

    def __init__(self, kind: str | None = None, encode: Callable[[T | None], Any] = _same, decode: Callable[[Any], T | None] = _same) -> None:
        self._values: dict[tuple[str, int, int], T | None] = {}
        self._lock = threading.Lock()
        self._facts = FactStore(kind) if kind is not None else None
        self._encode, self._decode = encode, decode

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
        value = self._kept(path, st, read)
        with self._lock:
            self._values[key] = value
        return value

    def _kept(self, path: str, st: os.stat_result, read: Callable[[str], T | None]) -> T | None:
        """The answer the store has for this version of the file, else read (and stored)."""
        if self._facts is None:
            return read(path)
        key = stat_key(path, st)
        known, raw = self._facts.get(key)
        if known:
            try:
                return self._decode(raw)
            except (ValueError, TypeError):
                pass
        value = read(path)
        self._facts.remember(key, self._encode(value))
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
