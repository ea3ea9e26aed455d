"""The newest core this system put where it puts cores (`coreanalyze last`): every place the
system may have used (core_pattern's files, systemd-coredump's store or coredumpctl, apport's
reports and cores, this directory's core and core.PID), newest first, narrowed to a pid or an
executable's name; with none, why (coreanalyze.locate.why)."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from coreanalyze.locate import candidates as places
from coreanalyze.locate import coredumpctl
from coreanalyze.locate.candidates import Candidate
from coreanalyze.locate.pattern import FilePattern, PipePattern, parse
from coreanalyze.locate.system import SystemPaths
from coreanalyze.locate.why import why_none

COREDUMPCTL = "coredumpctl"


@dataclass
class Search:
    found: list[Candidate] = field(default_factory=list)  # newest first
    pattern: FilePattern | PipePattern | None = None
    why: str | None = None  # when nothing was found


def find_cores(pid: int | None = None, exe: str | None = None, system: SystemPaths | None = None,
               core_limit: int | None = None) -> Search:  # fmt: skip
    system = system or SystemPaths.from_environment()
    text = system.core_pattern()
    pattern = parse(text, system.core_uses_pid(), pid, exe) if text else None
    found: list[Candidate] = []
    if isinstance(pattern, FilePattern):
        found += places.pattern_files(pattern, system)
    found += places.systemd_store(system)
    found += _coredumpctl(found)
    found += places.apport_reports(system)
    found += places.working_directory()
    unique = {os.path.realpath(c.path) if c.source != COREDUMPCTL else c.path: c for c in found}
    chosen = sorted((c for c in unique.values() if c.matches(pid, exe)), key=lambda c: c.mtime, reverse=True)
    search = Search(chosen, pattern)
    if not chosen:
        search.why = why_none(system, pattern, core_limit)
        if (pid is not None or exe is not None) and unique:
            asked = f"pid {pid}" if pid is not None else exe
            search.why = f"no core of {asked} among the {len(unique)} found; `coreanalyze last --list` lists them"
    return search


def _coredumpctl(stored: list[Candidate]) -> list[Candidate]:
    """Cores coredumpctl knows that the store's directory did not show (not readable here, or
    kept in the journal)."""
    entries = coredumpctl.listed()
    if not entries:
        return []
    seen = {c.pid for c in stored if c.source == "systemd-coredump"}
    return [
        Candidate(f"coredumpctl dump {e.pid}", e.time, COREDUMPCTL, e.pid, e.exe)
        for e in entries
        if e.present and e.pid not in seen
    ]


@contextmanager
def core_file(candidate: Candidate) -> Iterator[str]:
    """A path to analyze: the file itself, or coredumpctl's dump of it in a temporary directory
    (named core.PID, which the report is named after)."""
    if candidate.source != COREDUMPCTL:
        yield candidate.path
        return
    with tempfile.TemporaryDirectory(prefix="coreanalyze-") as directory:
        target = os.path.join(directory, f"core.{candidate.pid}")
        coredumpctl.dump(int(candidate.pid or 0), target)
        yield target
