"""The CPython frame walker: Python frames of every thread, read from a dead process's memory.

Debugger-neutral: everything it needs from the process comes through a `Target` (memory reads,
global symbol addresses, the names of the loaded files, type offsets from debug info, the
threads' LWPs). `gdb_scripts/pystacks.py` runs it inside gdb over gdb's view of the core;
`coreanalyze.python.coretarget` runs it in-process over the core file's own memory and the ELF
files it maps.

How the runtime is found without debug info: `_PyRuntime` and `Py_Version` are exported in
the dynamic symbol table of the executable or of libpython, even on stripped distribution
builds. From there interpreters -> thread states -> frames are walked with per-version
field offsets: CPython 3.13 and later describe them themselves in `_Py_DebugOffsets` (the first
member of `_PyRuntime`, whose field order differs per version), over a table of every 3.13+
build, default and free-threaded, taken from CPython's headers; for 3.10-3.12 the offsets of
x86_64 release builds are tabled, and when the target can read the interpreter's DWARF the
offsets are derived from its types instead. The tables are data (layouts/*.json, loaded by
tables.py). 3.14 tags the references a frame holds (`_PyStackRef`); a free-threaded build keeps
a bytecode copy per thread and may run without its GIL.

Everything read here comes from a dead, possibly corrupt process: every read is checked and
bounded (memory.py), every loop has a limit and a cycle check, and nothing is ever executed in
the process (no calls, only memory reads). A broken structure ends that thread's walk with the
frames read so far and a warning.

The modules, each on what the one before gives it: target (what a host gives), memory (checked
reads), tables (the layouts' data), version, debugoffsets, layout (the layout a process is read
with), linetable, objects (Python objects in memory), localvars (a frame's locals), walker
(interpreters, threads, frames), lwps, imports (sys.modules), document (walk(): the entry point),
command (the gdb command's arguments).

This package is imported both as `coreanalyze.gdb_scripts.pywalker` and, inside gdb (whose own
Python may be another version, with gdb_scripts/ put on its sys.path by pystacks.py), as the
top-level package `pywalker`: its modules import one another relatively, and nothing from
coreanalyze.
"""

from __future__ import annotations

from .command import COMMAND, UnknownArgument, parse_args
from .debugoffsets import DEBUG_OFFSETS_COOKIE, DebugOffsets, read_debug_offsets
from .document import FORMAT, walk
from .imports import Imports
from .layout import Layout, tabled_layout
from .linetable import line_from_locations, line_from_pep626
from .lwps import map_thread_ids
from .memory import CACHE_BLOCK, BudgetExceeded, Memory
from .objects import Objects
from .tables import BUILD_TABLES, DEBUG_OFFSET_KEYS, DEBUG_OFFSETS_FIELDS, DWARF_SPEC, SHAPES, TABLES, dwarf_spec
from .target import ReadError, Target
from .version import hex_version, version_from_name
from .walker import MAX_FRAMES, Walker

# What the hosts (gdb's commands, coreanalyze.python) and the tests use.
__all__ = [
    "BUILD_TABLES", "BudgetExceeded", "CACHE_BLOCK", "COMMAND", "DEBUG_OFFSETS_COOKIE", "DEBUG_OFFSETS_FIELDS",
    "DEBUG_OFFSET_KEYS", "DWARF_SPEC", "DebugOffsets", "FORMAT", "Imports", "Layout", "MAX_FRAMES", "Memory",
    "Objects", "ReadError", "SHAPES", "TABLES", "Target", "UnknownArgument", "Walker", "dwarf_spec", "hex_version",
    "line_from_locations", "line_from_pep626", "map_thread_ids", "parse_args", "read_debug_offsets",
    "tabled_layout", "version_from_name", "walk",
]
