"""The cores this system put somewhere, each with what its place says about it: where it lies,
when it was written, the crashed process's pid and executable name where known, and which of
the system's mechanisms left it (a core_pattern file, systemd-coredump, apport, the working
directory).

The pid and name come from what is cheapest and surest: systemd-coredump's attributes and file
name, apport's report fields, else the core's own notes (NT_PRPSINFO), read only for cores that
are plain ELF files.
"""

from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

from coreanalyze.base.errors import BadInput
from coreanalyze.batch.inputs import PLAIN_NAME, parse_systemd_name, read_xattrs, sniff
from coreanalyze.corefile.apportcrash import CrashFields, read_fields
from coreanalyze.locate.pattern import FilePattern
from coreanalyze.locate.system import SystemPaths

MAX_FILES = 10_000  # per place: a directory of more is not looked through further


@dataclass(frozen=True)
class Candidate:
    path: str
    mtime: float
    source: str  # "core_pattern" | "systemd-coredump" | "apport" | "working directory"
    pid: int | None = None
    exe: str | None = None  # the executable's name (or path, from apport and systemd)

    def matches(self, pid: int | None, exe: str | None) -> bool:
        if pid is not None and self.pid != pid:
            return False
        if exe is not None:
            name = os.path.basename(self.exe or "")
            # %e and the core's notes cut the name at 15 characters
            return bool(name) and (name == os.path.basename(exe) or (len(name) == 15 and os.path.basename(exe).startswith(name)))
        return True


def _regular_files(paths: Iterable[str]) -> Iterator[tuple[str, os.stat_result]]:
    for count, path in enumerate(paths):
        if count >= MAX_FILES:
            return
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > 0:
            yield path, st


def _from_notes(candidate: Candidate) -> Candidate:
    """pid and name from the core's notes, for a plain ELF core."""
    compression, is_core = sniff(candidate.path)
    if not is_core:
        return candidate
    from coreanalyze.corefile.reader import read_core

    try:
        notes = read_core(candidate.path)
    except (BadInput, OSError, ValueError):
        return candidate
    try:
        return replace(candidate, pid=candidate.pid or notes.pid, exe=candidate.exe or notes.executable)
    finally:
        notes.memory.close()


def pattern_files(pattern: FilePattern, system: SystemPaths, source: str = "core_pattern") -> list[Candidate]:
    where = str(system.at(pattern.glob)) if os.path.isabs(pattern.glob) else pattern.glob
    return [_from_notes(Candidate(p, st.st_mtime, source)) for p, st in _regular_files(glob.iglob(where))]


def working_directory() -> list[Candidate]:
    """`core` and `core.PID` here: the kernel's default pattern, and what people move here."""
    found = []
    for path, st in _regular_files(sorted(glob.iglob("core*"))):
        m = PLAIN_NAME.match(os.path.basename(path))
        if m:
            pid = int(m.group("pid")) if m.group("pid") else None
            found.append(_from_notes(Candidate(os.path.abspath(path), st.st_mtime, "working directory", pid)))
    return found


def systemd_store(system: SystemPaths) -> list[Candidate]:
    """systemd-coredump's files: core.COMM.UID.BOOT_ID.PID.USEC[.zst|.lz4|.xz], with their
    user.coredump.* attributes (which win: they are not cut as COMM is). apport's own core
    directory uses the same names."""
    found = []
    for directory, source in ((system.systemd_store, "systemd-coredump"), (system.apport_cores, "apport")):
        if not directory.is_dir():
            continue
        for path, st in _regular_files(str(p) for p in sorted(directory.iterdir())):
            name = parse_systemd_name(os.path.basename(path))
            if name is None:
                continue
            attrs = read_xattrs(path)
            pid = int(attrs["pid"]) if attrs.get("pid", "").isdigit() else name.pid
            found.append(Candidate(path, st.st_mtime, source, pid, attrs.get("exe") or name.comm))
    return found


def apport_reports(system: SystemPaths) -> list[Candidate]:
    """apport's /var/crash/*.crash that hold a core; a report still being written (file mode 0)
    or one without a CoreDump field is no core."""
    found = []
    directory = system.apport_reports
    if not directory.is_dir():
        return found
    for path, st in _regular_files(str(p) for p in sorted(directory.glob("*.crash"))):
        if stat.S_IMODE(st.st_mode) == 0:
            continue
        fields = _crash_fields(path)
        if fields is None or not fields.has_core:
            continue
        found.append(Candidate(path, st.st_mtime, "apport", fields.pid, fields.fields.get("ExecutablePath")))
    return found


def _crash_fields(path: str) -> CrashFields | None:
    try:
        with open(path, "rb") as src:
            return read_fields(src, os.path.basename(path))
    except (OSError, BadInput):
        return None
