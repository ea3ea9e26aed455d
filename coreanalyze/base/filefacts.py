"""Small facts about this machine's files, kept in the user cache from one run to the next.

Each analysis of a TensorFlow core asks the same questions of the same ~150 libraries (their
build-ids, the libraries they need, their debug links): ~25 ms of reading ELF headers before gdb
can start, for answers that change only when a file does. They are kept in one JSON file per
kind of fact, keyed by the file's path and what stat says of it (inode, size, mtime, ctime: a
file replaced or rewritten gets another key, and ctime cannot be set back by a user). The cache
is only ever data: values are strings, numbers and lists of them, checked by each kind's decoder.
A store that cannot be read or written is simply not used.

A process loads a kind's file on first use and, at exit, writes it back merged with what other
processes wrote meanwhile, when it learnt something new. A change to what a kind's reader
computes needs a new FORMAT.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from typing import Any

FORMAT = "file-facts-v1"
MAX_ENTRIES = 20_000  # per kind: the newest are kept
MAX_FILE_BYTES = 32 << 20  # a larger store is not ours: ignored

StatKey = str


def stat_key(path: str, st: os.stat_result) -> StatKey:
    """The key of a file's facts: its path and what stat says of this version of it."""
    return f"{path}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"


class FactStore:
    """One kind of fact (a name like "build-ids"), JSON values keyed by stat_key."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._known: dict[StatKey, Any] | None = None  # loaded on first use
        self._learnt: dict[StatKey, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: StatKey) -> tuple[bool, Any]:
        """(True, value) when the store knows key, else (False, None)."""
        with self._lock:
            if self._known is None:
                self._known = _read(self.path()) if enabled() else {}
            if key in self._known:
                return True, self._known[key]
        return False, None

    def remember(self, key: StatKey, value: Any) -> None:
        with self._lock:
            if not enabled():
                return
            if not self._learnt:
                _stores_to_save.append(self)
                _save_at_exit()
            self._learnt[key] = value
            if self._known is not None:
                self._known[key] = value

    def path(self) -> str:
        from coreanalyze.base.cachedir import cache_dir

        return str(cache_dir() / FORMAT / f"{self.kind}.json")

    def save(self) -> None:
        """Merge what this process learnt into the file (the newest MAX_ENTRIES kept)."""
        with self._lock:
            learnt, self._learnt = self._learnt, {}
        if not learnt:
            return
        path = self.path()
        merged = _read(path)
        for key in learnt:
            merged.pop(key, None)  # re-inserted last: the newest
        merged.update(learnt)
        entries = list(merged.items())[-MAX_ENTRIES:]
        try:
            from coreanalyze.base.atomicfile import write_atomically

            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            write_atomically(path, json.dumps({"format": FORMAT, "facts": dict(entries)}, separators=(",", ":")))
        except (OSError, TypeError, ValueError):
            pass  # an unwritable cache only costs the reads next time


def optional_str(raw: Any) -> str | None:
    """A decoder: a string or None (TypeError otherwise)."""
    if raw is None or isinstance(raw, str):
        return raw
    raise TypeError(f"not a string: {type(raw).__name__}")


def optional_str_list(raw: Any) -> list[str] | None:
    """A decoder: a list of strings or None (TypeError otherwise)."""
    if raw is None:
        return None
    if isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        return raw
    raise TypeError("not a list of strings")


def whole_int(raw: Any) -> int:
    """A decoder: an int (TypeError otherwise, a bool included)."""
    if type(raw) is int:
        return raw
    raise TypeError("not an int")


def enabled() -> bool:
    """COREANALYZE_FILE_FACTS=0 turns the store off (every fact read from its file)."""
    return os.environ.get("COREANALYZE_FILE_FACTS", "1") != "0"


def _read(path: str) -> dict[StatKey, Any]:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return {}
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        facts = data["facts"] if data.get("format") == FORMAT else {}
        return facts if isinstance(facts, dict) else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # none yet, or not ours


_stores_to_save: list[FactStore] = []
_registered = False


def _save_at_exit() -> None:
    global _registered
    if not _registered:
        _registered = True
        atexit.register(save_all)


def save_all() -> None:
    """Write what every store learnt (at exit; a batch worker, which leaves without running
    atexit, calls it itself)."""
    while _stores_to_save:
        _stores_to_save.pop().save()
