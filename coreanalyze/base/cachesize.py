"""The user cache's size: a cap with the least recently used entries removed first, and the
listing `coreanalyze cache info` prints.

Every part of the cache (coreanalyze.base.cachedir) keeps its entries as files or directories
one level under its own directory (`index-v1/ab/...` and `libsymbols-v1/ab/...` one more, under
a two-character prefix). An entry's last use is its modification time: the parts touch an entry
when they serve it. The cap is `$COREANALYZE_CACHE_MAX_MB` (default 1024, a laptop's share);
the trim runs after an analysis has written its part, in a thread beside its report, and leaves
alone what a concurrent analysis may be using (entries used in the last minutes) and what a
user asked for (extracted images, fetched wheels: ASKED_FOR_PARTS).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from coreanalyze.base import later
from coreanalyze.base.cachedir import cache_dir

LIMIT_VARIABLE = "COREANALYZE_CACHE_MAX_MB"
DEFAULT_LIMIT_MB = 1024
IN_USE_SECONDS = 300  # a gdb may reopen what another analysis gave it by name
# Directories of entries named by a hash, spread over subdirectories named by its first two
# characters (or "nb", no build-id): the entry is one level further down.
PREFIX_LENGTHS = (2,)
PREFIX_NAMES = ("nb",)
# Parts the trim leaves alone: what a user asked for (an image given as --sysroot, wheels
# fetched with --fetch) costs a download to make again; `cache clear` removes them too.
ASKED_FOR_PARTS = ("images", "fetch")


@dataclass
class CacheEntry:
    part: str  # the cache's part: its top directory (libsymbols-v1, index-v1, ...)
    path: str
    size: int  # bytes on disk (a sparse file counts what it holds)
    used: float  # last use (modification time)


def limit_bytes() -> int:
    """The cap, from $COREANALYZE_CACHE_MAX_MB (a bad value: the default)."""
    try:
        mb = int(os.environ.get(LIMIT_VARIABLE, DEFAULT_LIMIT_MB))
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    return max(0, mb) * 1024 * 1024


def entries(root: str | os.PathLike[str] | None = None, skip: tuple[str, ...] = ()) -> list[CacheEntry]:
    """Every entry of the cache, in no particular order; skip: parts not looked into (an
    extracted image holds thousands of files)."""
    base = Path(root) if root is not None else cache_dir()
    try:
        parts = list(os.scandir(base))
    except OSError:
        return []
    out = []
    for part in parts:
        if part.name in skip:
            continue
        if part.is_dir(follow_symlinks=False):
            out += [_entry(part.name, p) for p in _units(part.path)]
        else:
            out.append(_entry("", part.path))  # a stray file at the top
    return out


def _units(directory: str) -> Iterator[str]:
    try:
        children = list(os.scandir(directory))
    except OSError:
        return
    for child in children:
        if child.name.startswith(".tmp-"):
            continue  # being written: its writer renames or removes it
        prefixed = len(child.name) in PREFIX_LENGTHS or child.name in PREFIX_NAMES
        if prefixed and child.is_dir(follow_symlinks=False):
            try:
                yield from (grandchild.path for grandchild in os.scandir(child.path))
            except OSError:
                continue
        else:
            yield child.path


def _entry(part: str, path: str) -> CacheEntry:
    size, used = 0, 0.0
    try:
        st = os.lstat(path)
        size, used = st.st_blocks * 512, st.st_mtime
    except OSError:
        return CacheEntry(part, path, 0, 0.0)
    if os.path.isdir(path) and not os.path.islink(path):
        for folder, dirs, files in os.walk(path):
            for name in files + dirs:
                try:
                    st = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                size += st.st_blocks * 512
                used = max(used, st.st_mtime)
    return CacheEntry(part, path, size, used)


def trim(root: str | os.PathLike[str] | None = None, limit: int | None = None, now: float | None = None) -> int:
    """Remove the least recently used entries until the cache holds at most limit bytes;
    returns the bytes removed. Entries used in the last IN_USE_SECONDS stay."""
    limit = limit_bytes() if limit is None else limit
    now = time.time() if now is None else now
    found = entries(root, skip=ASKED_FOR_PARTS)
    total = sum(e.size for e in found)
    removed = 0
    for entry in sorted(found, key=lambda e: e.used):
        if total <= limit:
            break
        if now - entry.used < IN_USE_SECONDS:
            continue
        if remove(entry.path):
            total -= entry.size
            removed += entry.size
    return removed


def remove(path: str) -> bool:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def clear(root: str | os.PathLike[str] | None = None) -> int:
    """Remove every entry (in use or not); returns the bytes removed."""
    found = entries(root)
    return sum(e.size for e in found if remove(e.path))


_trimming: list[threading.Thread] = []


def trim_later() -> None:
    """trim() in a thread the interpreter waits for at exit: an analysis calls it once its own
    entries are written, and its report is written meanwhile. A cache that cannot be read or
    written is no error of the analysis."""

    def run() -> None:
        try:
            trim()
        except Exception:  # noqa: BLE001 - the cache is never worth a failed analysis
            pass

    if later.deferred():
        later.add("cache trim", run)  # after the entries queued before it
        return
    _trimming[:] = [t for t in _trimming if t.is_alive()]  # a long-lived watch keeps none it ran
    if _trimming:
        return  # one under way already sees what this analysis wrote
    thread = threading.Thread(target=run, name="cache-trim")
    thread.start()
    _trimming.append(thread)


def wait() -> None:
    """Wait for a trim under way (a process that leaves with os._exit calls it first)."""
    while _trimming:
        _trimming.pop().join()


def info_lines(root: str | os.PathLike[str] | None = None) -> list[str]:
    """What `coreanalyze cache info` prints: where the cache is, its cap, and each part's size."""
    base = Path(root) if root is not None else cache_dir()
    found = entries(base)
    parts: dict[str, list[CacheEntry]] = {}
    for entry in found:
        parts.setdefault(entry.part or "(top)", []).append(entry)
    total = sum(e.size for e in found)
    lines = [
        f"cache: {base}",
        f"size:  {_mib(total)} in {len(found)} entries (cap {_mib(limit_bytes())}, ${LIMIT_VARIABLE}; "
        f"least recently used entries go first, {' and '.join(ASKED_FOR_PARTS)} excepted)",
    ]
    for part, items in sorted(parts.items(), key=lambda kv: -sum(e.size for e in kv[1])):
        lines.append(f"  {part:<30} {_mib(sum(e.size for e in items)):>11}  {len(items):>6} entries")
    return lines


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB"
