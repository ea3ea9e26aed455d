"""Which shared libraries gdb reads for a core: those its threads reach.

Opening a core, gdb reads every library of the loader's list (symbols, debug files, unwind
tables): about 2 ms a library, a third of a second for the 150 of a TensorFlow process, where
the backtraces need a handful. A frame needs the library its pc lies in (unwind tables,
names), and nothing else does. The pc of every frame is a thread's register or a return
address on its stack, so gdb is asked to read the libraries whose code holds such a word
(Process.code_addresses_on_stacks), and the C library and the loader, whose symbols are
looked up by name (glibc's abort message) and which gdb's thread support looks for. Should a
frame still lie in a library not read (a stack deeper than the part searched), `read_more`
has gdb read it and the caller unwinds again; names and frames are then those of a gdb that
read everything (tests/integration/test_speed_equivalence.py compares whole reports).
"""

from __future__ import annotations

import bisect
import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from coreanalyze.gdb.session import GdbSession
from coreanalyze.process.process import Process

# Read whatever the stacks hold: symbols gdb is asked for by name live there, and gdb's thread
# support (libthread_db) looks for them.
ALWAYS_READ = ("libc.so*", "libc-*.so", "libpthread.so*", "libpthread-*.so", "ld-linux*", "ld-*.so*", "ld-musl-*", "libc.musl-*")
# `info sharedlibrary`: From, To, "Syms Read" (Yes, Yes (*), No), then the name to the end.
SOLIB_LINE = re.compile(r"^(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+(?:Yes \(\*\)|Yes|No)\s+(\S.*?)\s*$")
# Characters special in the basic regular expression `sharedlibrary` takes.
BRE_SPECIAL = frozenset(".[]*^$\\")


@dataclass
class LibraryChoice:
    """The libraries of one core gdb reads; kept across the core's reopenings."""

    reached: list[int]  # sorted code addresses the threads hold (registers, stack words)
    process: Any  # the Process (coreanalyze.process.process): its core's segments say where its code lies
    wanted: set[str] = field(default_factory=set)  # libraries frames were found in, by gdb's name
    read: set[str] = field(default_factory=set)  # read in the current session
    extents: list[tuple[int, int, str]] = field(default_factory=list)  # each library's code, sorted
    # Libraries gdb must not read, by gdb's name: huge ones whose symbols and unwind entries it
    # gets in small files instead (coreanalyze.gdb.libcopies, without copies); None: none.
    served: Callable[[str], bool] | None = None

    @classmethod
    def for_process(cls, process: Process, reached: list[int] | None = None) -> LibraryChoice:
        return cls(process.code_addresses_on_stacks() if reached is None else reached, process)

    def load(self, session: GdbSession) -> None:
        """After `target core` with `auto-solib-add off`: read the libraries chosen."""
        self.read = set()
        self.extents = sorted(self._extent(low, high) + (name,) for low, high, name in listed_libraries(session))
        if self.served is not None:  # counted as read: never read, not even by read_all
            self.read.update(name for _, _, name in self.extents if self.served(name))
        self._read(session, [name for low, high, name in self.extents if self._chosen(low, high, name)])

    def read_more(self, session: GdbSession, pcs: Iterable[int | None]) -> bool:
        """Have gdb read the libraries that frames' pcs lie in and it has not read; True when
        it read any (the caller then unwinds again)."""
        missing = {name for name in map(self._library_at, pcs) if name is not None and name not in self.read}
        if not missing:
            return False
        self.wanted.update(missing)
        self._read(session, sorted(missing))
        return True

    def read_all(self, session: GdbSession) -> None:
        self._read(session, [name for _, _, name in self.extents if name not in self.read])

    def _extent(self, low: int, high: int) -> tuple[int, int]:
        """A library's code: the executable segment holding its .text (gdb lists only .text;
        the PLT and init code lie beside it), else the .text itself."""
        segment = self.process.segment_containing(low)
        return (segment.start, segment.end) if segment is not None and segment.executable else (low, high)

    def _library_at(self, address: int | None) -> str | None:
        if address is None:
            return None
        i = bisect.bisect_right(self.extents, (address, float("inf"), "")) - 1
        if i >= 0 and self.extents[i][0] <= address < self.extents[i][1]:
            return self.extents[i][2]
        return None

    def _chosen(self, low: int, high: int, name: str) -> bool:
        return name in self.wanted or self.may_read(name, low, high)

    def may_read(self, path: str, low: int | None, high: int | None) -> bool:
        """Whether gdb reads the library at path whose code lies in [low, high) when it loads
        the core: one it always reads, or one the threads reach (before any frame is found)."""
        if any(fnmatch.fnmatchcase(os.path.basename(path), p) for p in ALWAYS_READ):
            return True
        if low is None or high is None:
            return False
        i = bisect.bisect_left(self.reached, low)
        return i < len(self.reached) and self.reached[i] < high

    def _read(self, session: GdbSession, names: Iterable[str]) -> None:
        # One command for all (GNU regex's \| alternation): each answer of gdb's waits for the
        # interpreter, which the background work holds.
        new = sorted(set(names) - self.read)
        if new:
            alternatives = "\\|".join(map(bre_literal, new))
            session.console(f"sharedlibrary ^\\({alternatives}\\)$")
            self.read.update(new)


def listed_libraries(session: GdbSession) -> list[tuple[int, int, str]]:
    """(text start, text end, name) of each library gdb found for the core."""
    out = []
    for line in session.console("info sharedlibrary").splitlines():
        m = SOLIB_LINE.match(line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    return out


def bre_literal(text: str) -> str:
    """text matched literally by a POSIX basic regular expression."""
    return "".join("\\" + c if c in BRE_SPECIAL else c for c in text)

