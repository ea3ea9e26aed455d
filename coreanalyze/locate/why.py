"""Why no core was found, and what to change: the causes in the order of their likelihood, the
first that holds is the one said.

1. RLIMIT_CORE's soft limit is 0 (the default of most distributions and of every Docker
   container) and core_pattern writes files: the kernel writes nothing.
2. core_pattern pipes cores to a program that is not here: inside a container the pattern is
   the host's (it is global to the kernel), and the host keeps the core.
3. apport took the crash but wrote no report: by default it ignores executables that no
   package owns (its log says "executable does not belong to a package").
4. The disk where cores go is full.
"""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

from coreanalyze.locate.pattern import FilePattern, PipePattern, directory_of
from coreanalyze.locate.system import SystemPaths

LOG_TAIL = 64 << 10  # bytes of apport's log read from its end
LOW_FREE = 64 << 20
RUN_HINT = "`coreanalyze run -- CMD` catches the next crash with no core limit or core_pattern involved"


def soft_core_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_CORE)[0]


def why_none(system: SystemPaths, pattern: FilePattern | PipePattern | None, core_limit: int | None = None) -> str:
    """One line: why this system left no core, and what to change."""
    limit = soft_core_limit() if core_limit is None else core_limit
    if isinstance(pattern, FilePattern) and limit == 0:
        return ("no core found: the core size limit is 0 here (ulimit -c), so the kernel writes none; "
                f"run `ulimit -c unlimited` in the shell that starts the program, or {RUN_HINT}")  # fmt: skip
    if isinstance(pattern, PipePattern) and pattern.program and not system.at(pattern.program).exists():
        return (f"no core found: core_pattern hands cores to {pattern.program}, which is not here "
                f"(in a container the pattern is the host's, and the host keeps the core); {RUN_HINT}")  # fmt: skip
    if isinstance(pattern, PipePattern) and pattern.is_apport:
        skipped = _apport_skipped(system.apport_log)
        if skipped:
            return (f"no core found: apport ignored the crash ({skipped}); set `unpackaged=true` under [main] in "
                    f"~/.config/apport/settings, or {RUN_HINT}")  # fmt: skip
    full = _full_disk(system, pattern)
    if full:
        return f"no core found: {full} is full; make room there, or {RUN_HINT}"
    if isinstance(pattern, PipePattern) and pattern.is_apport:
        return ("no core found: apport left no report with a core in /var/crash (by default it ignores programs "
                f"no package owns, which most Python environments are); {RUN_HINT}")  # fmt: skip
    where = "core_pattern's place and " if isinstance(pattern, FilePattern) else ""
    return f"no core found in {where}systemd-coredump's store, /var/crash or this directory; {RUN_HINT}"


def _apport_skipped(log: Path) -> str | None:
    """apport's last reason to skip a crash, from the end of its log, when readable."""
    try:
        with open(log, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL))
            tail = f.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if "does not belong to a package" in line:
            return "the executable does not belong to a package"
        if "ignoring" in line or "Ignoring" in line:
            return line.split(": ", 2)[-1].strip()[:200]
        if "wrote report" in line:
            return None
    return None


def _full_disk(system: SystemPaths, pattern: FilePattern | PipePattern | None) -> str | None:
    places = []
    if isinstance(pattern, FilePattern):
        here = directory_of(pattern)
        places.append(system.at(here) if os.path.isabs(here) else Path(here))
    elif isinstance(pattern, PipePattern):
        places.append(system.apport_reports if pattern.is_apport else system.systemd_store)
    for place in places:
        probe = place
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            if shutil.disk_usage(probe).free < LOW_FREE:
                return str(place)
        except OSError:
            continue
    return None
