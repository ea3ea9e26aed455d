"""Names and unwind entries for frames in the libraries gdb loaded as copies (see copies,
symbolfiles and unwindtables).

Per core, before gdb unwinds anything: the addresses it will unwind through and name (the code
addresses the threads hold in registers and on their stacks, which include every frame's pc,
each with the address before it, where gdb looks a caller up, and what the faulting instruction
refers to), then for each such address in a fast library the window of that library's symbols
gdb's own search would consult and the unwind entry covering it, written as one small file per
library and attached to the library in gdb. gdb then names and unwinds these frames exactly as
with the whole library.

With names, gdb may unwind differently (a function without unwind tables is analysed from its
start, which it now knows), and a frame may lie beyond the part of a stack searched: an
address that had no window. `missing` tells; the caller then opens the core afresh with the
larger set, a few times at most, else loads it plainly.
"""

from __future__ import annotations

import json
import os
import re
import struct
import tempfile
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

from coreanalyze.base.errors import GdbError, GdbTimeout
from coreanalyze.base.resources import GDB_SCRIPTS
from coreanalyze.gdb.collect import DISASSEMBLY_BYTES, FromNotes, GdbAnalysis, collect
from coreanalyze.gdb.debugger import GdbDebugger
from coreanalyze.gdb.libcopies.copies import FastLibraries, FastLibrary
from coreanalyze.gdb.libcopies.errors import LibraryCopyError
from coreanalyze.gdb.libcopies.symbolfiles import ElfSymbol, write_symbol_file, write_unwind_file
from coreanalyze.gdb.libraries import LibraryChoice
from coreanalyze.gdb.session import GdbSession, mi_quote

SCRIPT = GDB_SCRIPTS / "symbolfiles.py"
MI_COMMAND = "-coreanalyze-add-symbol-files"
ADDRESS = re.compile(r"0x[0-9a-fA-F]{1,16}")
# Rounds of "unwind, read the libraries frames lie in that gdb has not read"; then all are read.
MAX_LIBRARY_ROUNDS = 4

# Run-time addresses gdb will name, per fast library.
Wanted = dict[str, set[int]]


class FrameNamer:
    """Symbol windows for one core's fast libraries, written under workdir."""

    def __init__(self, libraries: FastLibraries, workdir: str):
        self.libraries = libraries
        self.workdir = workdir
        self.covered: Wanted = {}
        self._round = 0
        # Libraries whose DWARF went into a symbol file: gdb reads it once, from the first.
        self._dwarf_given: set[str] = set()

    # ------------------------------------------------------------------ which addresses

    def initial(self, session: GdbSession, reached: Iterable[int], crash_pc: int | None) -> Wanted:
        """Addresses gdb will unwind through and name, known before it unwinds anything: the
        code addresses the threads hold (registers and stack words: every frame's pc is among
        them), each with the address before it (where gdb looks a caller up), and what the
        instruction at the crashing pc refers to."""
        addresses: set[int] = set()
        for address in reached:
            addresses.update((address, address - 1))
        if crash_pc is not None:
            # The bytes at an address are the same in every thread: no thread list needed.
            addresses.update(self._instruction_addresses(GdbDebugger(session), None, crash_pc))
        return self.by_library(addresses)

    def needed(self, analysis: GdbAnalysis) -> Wanted:
        """Addresses the collected analysis had gdb name."""
        addresses: set[int] = set()
        for thread in analysis.threads:
            for frame in thread.frames:
                if frame.kind == "native" and frame.pc is not None:
                    addresses.update((frame.pc, frame.pc - 1))
        if analysis.fault_instruction:
            addresses.update(int(h, 16) for h in ADDRESS.findall(analysis.fault_instruction))
        return self.by_library(addresses)

    def missing(self, analysis: GdbAnalysis) -> Wanted:
        out: Wanted = {}
        for copy, addresses in self.needed(analysis).items():
            extra = addresses - self.covered.get(copy, set())
            if extra:
                out[copy] = extra
        return out

    @staticmethod
    def _instruction_addresses(debugger: GdbDebugger, thread_id: str | None, pc: int) -> set[int]:
        found = debugger.instruction_at(thread_id, pc, DISASSEMBLY_BYTES)
        return {int(h, 16) for h in ADDRESS.findall(found.text)} if found is not None else set()

    def by_library(self, addresses: set[int]) -> Wanted:
        """The addresses that lie in fast libraries, per library copy."""
        out: Wanted = {}
        for address in addresses:
            lib = self.libraries.library_at(address)
            if lib is not None:
                out.setdefault(lib.copy, set()).add(address)
        return out

    # ------------------------------------------------------------------ giving gdb the symbols

    def attach(self, session: GdbSession, wanted: Wanted) -> None:
        """Write the windows of wanted and attach them in the session's current inferior."""
        self._round += 1
        pairs = []
        by_copy = {lib.copy: lib for lib in self.libraries.libraries}
        for copy, addresses in sorted(wanted.items()):
            lib = by_copy[copy]
            symbols = self._windows(lib, addresses)
            path = os.path.join(self.workdir, f"{self._round}-{len(pairs)}-{os.path.basename(copy)}.sym")
            # A copy keeps the library's DWARF where it was (gdb reads it there); a library gdb
            # does not read has it carried once, in its first symbol file.
            write_symbol_file(lib.layout, symbols, path, dwarf=not self.libraries.copied and copy not in self._dwarf_given)
            self._dwarf_given.add(copy)
            unwind = self._unwind_file(lib, addresses, os.path.join(self.workdir, f"{self._round}-{len(pairs)}.eh"))
            # Without copies gdb has no object file of the library: both files stand alone.
            pairs.append([copy, path, unwind, lib.base, not self.libraries.copied])
        self.covered = {copy: set(addresses) for copy, addresses in wanted.items()}
        if not pairs:
            return
        listing = os.path.join(self.workdir, f"{self._round}-symbol-files.json")
        with open(listing, "w") as f:
            json.dump(pairs, f)
        command = f"{MI_COMMAND} {mi_quote(listing)}"
        try:
            answer = session.mi(command)
        except GdbTimeout:
            raise
        except GdbError as e:
            if "Undefined MI command" not in str(e):
                raise
            session.source(str(SCRIPT))
            answer = session.mi(command)
        if str(answer.get("attached")) != str(len(pairs)):
            # A copy gdb did not load as the library: without its file it has neither the
            # names nor (hidden in the copy) the unwind entries.
            raise LibraryCopyError(f"gdb took {answer.get('attached')} of {len(pairs)} symbol files")

    @staticmethod
    def _unwind_file(lib: FastLibrary, addresses: set[int], path: str) -> str | None:
        """For a copy that hides its unwind entries: a file with those covering addresses."""
        if lib.unwind is None:
            return None
        assert lib.base is not None
        try:
            write_unwind_file(lib.layout, lib.unwind.section_for(a - lib.base for a in addresses), path)
        except (ValueError, IndexError, struct.error) as e:  # a library's tables of an odd shape
            raise LibraryCopyError(f"{lib.path}: {e}") from None
        return path

    @staticmethod
    def _windows(lib: FastLibrary, addresses: set[int]) -> list[ElfSymbol]:
        assert lib.base is not None
        try:
            symbols = lib.windows(address - lib.base for address in addresses)
        except (LibraryCopyError, OSError, ValueError, KeyError) as e:
            raise LibraryCopyError(f"{lib.path}: {e}") from None
        return symbols


def merge(a: Wanted, b: Wanted) -> Wanted:
    out = {k: set(v) for k, v in a.items()}
    for k, v in b.items():
        out.setdefault(k, set()).update(v)
    return out


# --------------------------------------------------------------------------- the gdb stage

MAX_NAMING_ROUNDS = 3


def _collected(
    session: GdbSession, libraries: LibraryChoice | None, max_frames: int, from_notes: FromNotes = FromNotes()
) -> GdbAnalysis:
    """collect(), once every frame lies in a library gdb has read."""

    def collected() -> GdbAnalysis:
        return collect(session, max_frames=max_frames, from_notes=from_notes)

    analysis = collected()
    if libraries is None:
        return analysis
    for _ in range(MAX_LIBRARY_ROUNDS):
        if not libraries.read_more(session, _frame_pcs(analysis)):
            return analysis
        analysis = collected()
    libraries.read_all(session)
    return collected()


def _frame_pcs(analysis: GdbAnalysis) -> Iterator[int | None]:
    for thread in analysis.threads:
        for frame in thread.frames:
            yield frame.pc


@contextmanager
def collected_core(
    gdb,
    core: str,
    *,
    executable: str | None,
    sysroot: str | None,
    debug_dirs: Sequence[str],
    fast: FastLibraries | None,
    max_frames: int = 256,
    before_target: Callable[[], None] | None = None,
    libraries: LibraryChoice | None = None,
    reached: Sequence[int] = (),
    crash_pc: int | None = None,
    from_notes: FromNotes = FromNotes(),
) -> Iterator[tuple[GdbSession, GdbAnalysis]]:
    """Open the core in gdb (an OwnGdb or a PooledGdb) and collect it; yields (session, analysis).

    before_target: called when gdb is about to load the core (the first time it is opened).
    libraries: gdb reads only the libraries the threads reach (coreanalyze.gdb.libraries), and
    any other a frame turns out to lie in; None: all of them.
    reached, crash_pc: the code addresses the threads hold and the crashing thread's pc (from
    the core's notes), which choose the symbols and unwind entries of fast libraries.
    from_notes: what the core's notes tell, which gdb is not asked for (collect's).

    With fast libraries, gdb opens the core through their sysroot (copies) or without reading
    them at all (no copies: `libraries` then leaves them out) and gets the symbol windows it needs; when unwinding keeps reaching new addresses, or a window cannot be made, the core
    is opened again the plain way. The symbol files live until the caller is done with gdb.
    """
    opening = {"executable": executable, "debug_dirs": debug_dirs, "libraries": libraries}
    if fast is not None and not fast.copied and libraries is None:
        fast = None  # without copies gdb must be told which libraries to read: plainly then
    if fast is None:
        session = gdb.open_core(core, sysroot=sysroot, before_target=before_target, **opening)
        yield session, _collected(session, libraries, max_frames, from_notes)
        return
    with tempfile.TemporaryDirectory(prefix="coreanalyze-") as workdir:
        namer = FrameNamer(fast, workdir)
        if not fast.copied:
            assert libraries is not None
            libraries.served = fast.served  # gdb reads none of them: their small files stand in
        try:
            session = gdb.open_core(core, sysroot=fast.sysroot, before_target=before_target, **opening)
            wanted = namer.initial(session, reached, crash_pc)
            for _ in range(MAX_NAMING_ROUNDS):
                namer.attach(session, wanted)
                analysis = _collected(session, libraries, max_frames, from_notes)
                missing = namer.missing(analysis)
                if not missing:
                    break
                wanted = merge(wanted, missing)
                session = gdb.open_core(core, sysroot=fast.sysroot, **opening)
            else:
                raise LibraryCopyError("unwinding kept reaching new addresses")
        except LibraryCopyError:
            if libraries is not None:
                libraries.served = None  # the plain way: gdb reads them whole
            session = gdb.open_core(core, sysroot=sysroot, **opening)
            analysis = _collected(session, libraries, max_frames, from_notes)
        yield session, analysis
