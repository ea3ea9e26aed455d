"""Which files in the watched directories are complete cores, ready to be read.

A core is read once nobody writes it any more: no process holds it open for writing (per
/proc/*/fd: a tool copying a core in), its size and modification time did not change since the
previous look, and it is whole: a 64-bit ELF core whose program headers' file extents all lie
within the file (the kernel writes the headers first, so a core it is still dumping is short of
them), a file named by systemd-coredump (written under a hidden name, then linked in place), an
apport report whose file mode is no longer 0 (apport's sign that it finished writing it), or,
for anything else (a truncated core, another compressor), a file unchanged for `settle` seconds.
Hidden files (systemd's `.#core...` while it writes, our own temporaries) are never taken.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from typing import Iterator

from coreanalyze.base.errors import BadInput
from coreanalyze.batch.inputs import APPORT_NAME, SYSTEMD_NAME, walk_cores

O_ACCMODE = 0o3  # open flags' access mode: O_RDONLY 0, O_WRONLY 1, O_RDWR 2


@dataclass(frozen=True)
class Look:
    """What a file looked like at one scan."""

    size: int
    mtime_ns: int
    ino: int
    since: float  # monotonic time it first looked like this


def _look(path: str, previous: Look | None, now: float) -> Look | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    same = previous is not None and (previous.size, previous.mtime_ns, previous.ino) == (st.st_size, st.st_mtime_ns, st.st_ino)
    return Look(st.st_size, st.st_mtime_ns, st.st_ino, previous.since if same else now)


def whole_elf_core(path: str) -> bool:
    """A 64-bit ELF core with every segment's bytes present."""
    from coreanalyze.corefile.elfcore import read_layout

    try:
        read_layout(path)
    except BadInput:
        return False
    return True


def apport_report_written(path: str) -> bool:
    """apport writes a report with file mode 0 and gives it its mode (0640) once written."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) != 0
    except OSError:
        return False


def open_for_writing(paths: set[str]) -> set[str]:
    """Those of `paths` (real paths) that some process holds open for writing."""
    found: set[str] = set()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to look at
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target not in paths:
                continue
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
                    flags = next((int(line.split()[1], 8) for line in f if line.startswith("flags:")), 0)
            except (OSError, ValueError):
                flags = 1  # cannot tell: assume a writer
            if flags & O_ACCMODE:
                found.add(target)
    return found


class Arrivals:
    """The watched directories' core files, and which of them are complete now."""

    def __init__(self, directories: list[str], exclude: list[str], settle: float):
        self.directories = [os.path.abspath(d) for d in directories]
        self.skip = {os.path.realpath(p) for p in exclude}
        self.settle = settle
        self.looks: dict[str, Look] = {}
        self.done: dict[str, Look] = {}  # path -> how it looked when it was finished with
        self.waiting = 0  # files seen at the last scan that are not complete yet

    def scan(self) -> list[tuple[str, str]]:
        """(path, watched directory) of the files complete now and not yet finished with."""
        now = time.monotonic()
        candidates: list[tuple[str, str, Look, bool]] = []
        seen: set[str] = set()
        for directory, path in self._files():
            seen.add(path)
            look = _look(path, self.looks.get(path), now)
            if look is None:
                continue
            previous = self.looks.get(path)
            self.looks[path] = look
            done = self.done.get(path)
            if done is not None and (done.size, done.mtime_ns, done.ino) == (look.size, look.mtime_ns, look.ino):
                continue
            stable = previous is not None and look.since < now
            candidates.append((directory, path, look, stable))
        for path in set(self.looks) - seen:  # removed
            self.looks.pop(path, None)
            self.done.pop(path, None)
        ready = [(d, p) for d, p, look, stable in candidates if stable and self._whole(p, look, now)]
        writing = open_for_writing({os.path.realpath(p) for _, p in ready}) if ready else set()
        ready = [(p, d) for d, p in ready if os.path.realpath(p) not in writing]
        self.waiting = len(candidates) - len(ready)
        return ready

    def _whole(self, path: str, look: Look, now: float) -> bool:
        if SYSTEMD_NAME.match(os.path.basename(path)):
            return True
        if APPORT_NAME.match(os.path.basename(path)):
            return apport_report_written(path) or now - look.since >= self.settle
        return now - look.since >= self.settle or whole_elf_core(path)

    def finished(self, path: str) -> None:
        """Done with this file as it is now: not taken again unless it changes."""
        look = self.looks.get(path)
        if look is not None:
            self.done[path] = look

    def _files(self) -> Iterator[tuple[str, str]]:
        for directory in self.directories:
            if not os.path.isdir(directory):
                continue
            for path in walk_cores(directory, self.skip):
                if not os.path.basename(path).startswith("."):
                    yield directory, path
