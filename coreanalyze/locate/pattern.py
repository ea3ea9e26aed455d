"""The kernel's core_pattern (core(5)): where a file pattern puts cores, as a glob, and which
program a pipe pattern hands them to.

A file pattern's specifiers are the crashed process's (its pid, its name, the time, ...), so the
glob puts a wildcard where each one stands, or the value asked for (`--pid`, `--exe`) where the
pattern has it. A relative pattern is relative to the crashed process's working directory; the
finder looks in the current one.
"""

from __future__ import annotations

import glob
import os
import socket
from dataclasses import dataclass

# core(5): %e the executable's name (comm), %f its file name, %p/%P pid (in its namespace / the
# initial one), %i/%I tid, %t time, %h host name, %u/%g uid and gid, %s signal, %E the path with
# '/' as '!', %c the core size limit, %d the dump mode, %% a '%'.
WILDCARD_SPECIFIERS = set("eEfpPiItugscd")
COMM_LENGTH = 15  # the kernel's TASK_COMM_LEN - 1: %e is cut there


@dataclass(frozen=True)
class FilePattern:
    glob: str  # absolute, or relative to the current directory
    has_pid: bool
    appends_pid: bool  # core_uses_pid=1 and no %p: the kernel adds ".PID"


@dataclass(frozen=True)
class PipePattern:
    program: str  # the first word after '|'
    arguments: str

    @property
    def is_apport(self) -> bool:
        return os.path.basename(self.program) == "apport"

    @property
    def is_systemd_coredump(self) -> bool:
        return os.path.basename(self.program) == "systemd-coredump"


def parse(pattern: str, uses_pid: bool = False, pid: int | None = None, exe: str | None = None) -> FilePattern | PipePattern:
    """The pattern as a glob of the files it names (with the given pid and executable name where
    the pattern has them), or the program a pipe pattern runs."""
    if pattern.startswith("|"):
        words = pattern[1:].strip().split(None, 1)
        return PipePattern(words[0] if words else "", words[1] if len(words) > 1 else "")
    out: list[str] = []
    has_pid = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%" or i + 1 >= len(pattern):
            out.append(glob.escape(ch))
            i += 1
            continue
        spec = pattern[i + 1]
        i += 2
        if spec == "%":
            out.append("%")
        elif spec in "pP" and pid is not None:
            out.append(str(pid))
            has_pid = True
        elif spec == "e" and exe is not None:
            out.append(glob.escape(exe[:COMM_LENGTH]))
        elif spec == "f" and exe is not None:
            out.append(glob.escape(os.path.basename(exe)))
        elif spec == "h":
            out.append(glob.escape(socket.gethostname()))
        elif spec in WILDCARD_SPECIFIERS:
            out.append("*")
            has_pid = has_pid or spec in "pP"
        # Anything else: the kernel drops an unknown specifier.
    text = "".join(out) or "core"
    appends = uses_pid and not has_pid and "%p" not in pattern and "%P" not in pattern
    if appends:
        text += f".{pid}" if pid is not None else ".*"
    return FilePattern(text, has_pid or appends, appends)


def directory_of(pattern: FilePattern) -> str:
    """Where the pattern's files lie (the current directory for a relative pattern)."""
    head = os.path.dirname(pattern.glob)
    while glob.has_magic(head):
        head = os.path.dirname(head)
    return head or "."
