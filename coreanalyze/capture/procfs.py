"""What /proc says of a live process the watcher holds: its mappings, which of their pages exist,
its signal dispositions, its tracer, its memory cgroup.

Every reader tolerates a process that has just died (empty answers, never an exception that
would stop the watcher).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class MapEntry:
    """One line of /proc/PID/maps."""

    start: int
    end: int
    perms: str  # "r-xp"
    offset: int
    inode: int
    path: str  # "" for anonymous memory; "[heap]", "[stack]", "[vdso]", a file's path

    @property
    def readable(self) -> bool:
        return self.perms[0] == "r"

    @property
    def writable(self) -> bool:
        return self.perms[1] == "w"

    @property
    def executable(self) -> bool:
        return self.perms[2] == "x"

    @property
    def shared(self) -> bool:
        return self.perms[3] == "s"

    @property
    def file_backed(self) -> bool:
        return self.inode != 0 and self.path.startswith("/")

    @property
    def deleted(self) -> bool:
        return self.path.endswith(" (deleted)")

    @property
    def special(self) -> bool:
        """The kernel's own pages that /proc/PID/mem does not give ([vvar], [vsyscall])."""
        return self.path in ("[vvar]", "[vvar_vclock]", "[vsyscall]")


_MAPS_LINE = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ (\d+)\s*(.*)$")


def maps(pid: int) -> list[MapEntry]:
    entries = []
    for line in _read_text(f"/proc/{pid}/maps").splitlines():
        m = _MAPS_LINE.match(line)
        if m:
            entries.append(MapEntry(int(m[1], 16), int(m[2], 16), m[3], int(m[4], 16), int(m[5]), m[6]))
    return entries


def anonymous_bytes(pid: int) -> dict[int, int]:
    """start -> bytes of private copies (pages the process wrote) per mapping, from smaps: a
    file mapping with such pages (relocated GOT, .data) is dumped whole, as the kernel does."""
    found: dict[int, int] = {}
    start = None
    for line in _read_text(f"/proc/{pid}/smaps").splitlines():
        if line[:1] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
            start = int(line.split("-", 1)[0], 16)
        elif line.startswith("Anonymous:") and start is not None:
            found[start] = int(line.split()[1]) * 1024
    return found


# The kernel's own flag bits of a pagemap entry: the page is in memory, or swapped out.
_PRESENT_OR_SWAPPED = 0xC0  # bits 63 and 62, seen in the entry's last byte
_IN_USE = bytes(1 if i & _PRESENT_OR_SWAPPED else 0 for i in range(256))


def pages_in_use(pagemap, start: int, end: int) -> list[tuple[int, int]]:
    """Runs [lo, hi) of pages of [start, end) that exist (in memory or swap); the others were
    never touched and read as zeros. `pagemap` is the open /proc/PID/pagemap (None: all)."""
    if pagemap is None:
        return [(start, end)]
    runs: list[tuple[int, int]] = []
    chunk_pages = 1 << 18  # 1 GiB of address space per 2 MiB read
    first = start // PAGE
    last = end // PAGE
    while first < last:
        count = min(chunk_pages, last - first)
        try:
            raw = os.pread(pagemap, count * 8, first * 8)
        except OSError:
            return [(start, end)]
        flags = raw[7::8].translate(_IN_USE)
        pos = 0
        while True:
            lo = flags.find(1, pos)
            if lo < 0:
                break
            hi = flags.find(0, lo)
            if hi < 0:
                hi = len(flags)
            lo_addr, hi_addr = (first + lo) * PAGE, (first + hi) * PAGE
            if runs and runs[-1][1] == lo_addr:
                runs[-1] = (runs[-1][0], hi_addr)
            else:
                runs.append((lo_addr, hi_addr))
            pos = hi
        if len(flags) < count:
            break
        first += count
    return runs


@dataclass(frozen=True)
class Dispositions:
    """Which signals the process catches or ignores (/proc/PID/status SigCgt, SigIgn)."""

    caught: int = 0
    ignored: int = 0

    def catches(self, sig: int) -> bool:
        return bool(self.caught >> (sig - 1) & 1)

    def ignores(self, sig: int) -> bool:
        return bool(self.ignored >> (sig - 1) & 1)


def status_fields(pid: int) -> dict[str, str]:
    fields = {}
    for line in _read_text(f"/proc/{pid}/status").splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return fields


def dispositions(pid: int) -> Dispositions:
    fields = status_fields(pid)
    try:
        return Dispositions(int(fields.get("SigCgt", "0"), 16), int(fields.get("SigIgn", "0"), 16))
    except ValueError:
        return Dispositions()


def tracer_of(pid: int) -> int:
    try:
        return int(status_fields(pid).get("TracerPid", "0"))
    except ValueError:
        return 0


def thread_group(tid: int) -> int | None:
    try:
        return int(status_fields(tid).get("Tgid", ""))
    except ValueError:
        return None


def thread_ids(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def cmdline(pid: int) -> list[str]:
    raw = read_bytes(f"/proc/{pid}/cmdline")
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]] if raw else []


def comm(pid: int) -> str:
    return _read_text(f"/proc/{pid}/comm").strip()


def peak_rss(pid: int) -> int | None:
    """VmHWM in bytes."""
    value = status_fields(pid).get("VmHWM", "")
    return int(value.split()[0]) * 1024 if value.endswith("kB") else None


@dataclass(frozen=True)
class MemoryCgroup:
    """The memory cgroup a process runs in: where the kernel counts its OOM kills."""

    events: Path | None  # cgroup v2 memory.events, or v1 memory.oom_control
    peak: Path | None  # v2 memory.peak, v1 memory.max_usage_in_bytes
    limit: Path | None  # v2 memory.max, v1 memory.limit_in_bytes

    def oom_kills(self) -> int | None:
        if self.events is None:
            return None
        m = re.search(r"^oom_kill (\d+)$", _read_text(str(self.events)), re.M)
        return int(m[1]) if m else None

    def peak_bytes(self) -> int | None:
        return _number(self.peak)

    def limit_bytes(self) -> int | None:
        value = _number(self.limit)
        return value if value is not None and value < 1 << 60 else None


def memory_cgroup(pid: int, root: str = "/sys/fs/cgroup") -> MemoryCgroup:
    for line in _read_text(f"/proc/{pid}/cgroup").splitlines():
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # cgroup v2
            base = Path(root) / path.lstrip("/")
            if (base / "memory.events").exists():
                return MemoryCgroup(base / "memory.events", _existing(base / "memory.peak"), _existing(base / "memory.max"))
        elif "memory" in controllers.split(","):
            base = Path(root) / "memory" / path.lstrip("/")
            if (base / "memory.oom_control").exists():
                return MemoryCgroup(
                    base / "memory.oom_control", _existing(base / "memory.max_usage_in_bytes"), _existing(base / "memory.limit_in_bytes")
                )
    return MemoryCgroup(None, None, None)


def _existing(path: Path) -> Path | None:
    return path if path.exists() else None


def _number(path: Path | None) -> int | None:
    if path is None:
        return None
    text = _read_text(str(path)).strip()
    return int(text) if text.isdigit() else None


def _read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8", "replace")


def read_bytes(path: str) -> bytes:
    """A /proc file's bytes; empty when the process (or the file) is gone."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""
