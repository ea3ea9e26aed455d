"""Where the CPython runtime state (`_PyRuntime`) lies in a core, found from the core alone.

The walker normally takes `_PyRuntime` from the symbol table of the executable or libpython.
When those files are not here (a core from another machine, a venv or container gone), the
runtime is found in the interpreter's own writable data, which the kernel always dumps:

- 3.13+: `_PyRuntime` starts with `_Py_DebugOffsets`, whose cookie "xdebugpy" and version
  are there for exactly this kind of reader.
- 3.10-3.12: the runtime's interpreter list points to an interpreter state that points back
  to the runtime (`interp->runtime`), the main interpreter does too, and the first thread
  state of that interpreter points back to it. A word that satisfies all of these by chance
  is not plausible; the candidate is used only when they all check out.

The version comes from the mapped file's name (libpython3.X, python3.X); a file without a
version in its name is tried with every tabled layout, newest first.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import partial

from coreanalyze.base.resources import gdb_script_module
from coreanalyze.corefile.memory import Segment
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import has_runtime_symbol
from coreanalyze.symbols.process import INTERPRETER_PREFIXES

pywalker = gdb_script_module("pywalker")

# Layouts tried for a file whose name gives no version: the cross-pointer versions.
CROSS_POINTER_VERSIONS = tuple(v for v in sorted(pywalker.TABLES, reverse=True) if "interp.runtime" in pywalker.TABLES[v])
MAX_SCAN_BYTES = 64 << 20  # of one interpreter's writable data; a real one has a few MiB
# A file whose name gives no version (an executable embedding Python) is scanned with every
# layout only when its writable data is small: a big program is rarely an interpreter.
MAX_UNVERSIONED_SCAN_BYTES = 8 << 20


@dataclass(frozen=True)
class FoundRuntime:
    """A validated `_PyRuntime` address and how it was found."""

    address: int
    version: tuple[int, ...]
    how: str  # "debug-offsets" | "cross-pointers"
    file: str  # the interpreter file (as the core names it) whose data holds it

    @property
    def version_text(self) -> str:
        return ".".join(str(v) for v in self.version)

    def walker_options(self) -> dict:
        """What the walker (pywalker.walk, or its gdb command) is given to start from here."""
        return {"runtime": self.address, "version_hint": tuple(self.version[:2])}

    def walker_arguments(self) -> list[str]:
        return ["--runtime", f"0x{self.address:x}", "--python-version", ".".join(map(str, self.version[:2]))]

    def note(self) -> str:
        """For the report: how the Python frames could be read without the interpreter."""
        how = "its _Py_DebugOffsets" if self.how == "debug-offsets" else "the interpreter state's pointers back to it"
        return (
            f"Python runtime located by scanning the core (no file here of the interpreter {self.file} names it):"
            f" _PyRuntime at 0x{self.address:x}, found by {how}; Python {self.version_text}"
        )


def runtime_unless_symbols(process: Process, modules) -> FoundRuntime | None:
    """The runtime located in the core when no interpreter file of the crashed build here
    names `_PyRuntime` (missing, or another build); None when the symbol serves, or when the
    core holds no runtime (not a Python process)."""
    if has_runtime_symbol(process, modules):
        return None
    return locate_runtime(process)


def interpreter_files(process: Process) -> dict[str, tuple[int, int] | None]:
    """Path -> (3, X) from the name, of the executable and any mapped libpython."""
    out: dict[str, tuple[int, int] | None] = {}
    paths = [process.executable] if process.executable else []
    paths += [m.path for m in process.mappings if os.path.basename(m.path).startswith(INTERPRETER_PREFIXES)]
    for path in paths:
        if path in out:
            continue
        out[path] = version_from_name(os.path.basename(path))
    return out


version_from_name = pywalker.version_from_name


def writable_data(process: Process, path: str) -> list[Segment]:
    """The core's writable segments of one mapped file, and the anonymous one right after its
    last mapping (its .bss, where a zero-initialised _PyRuntime of 3.10 lives)."""
    spans = [(m.start, m.end) for m in process.mappings if m.path == path]
    if not spans:
        return []
    low, high = min(s for s, _ in spans), max(e for _, e in spans)
    mapped_elsewhere = {(m.start, m.end) for m in process.mappings if m.path != path}
    out = []
    for seg in process.segments:
        if not seg.writable or seg.present_end <= seg.start:
            continue
        inside = low <= seg.start < high
        bss = seg.start == high and (seg.start, seg.end) not in mapped_elsewhere
        if inside or bss:
            out.append(seg)
    return out


def locate_runtime(process: Process) -> FoundRuntime | None:
    """The interpreter's `_PyRuntime`, found and validated in the core's memory; None if none."""
    for path, version in interpreter_files(process).items():
        segments = writable_data(process, path)
        if not segments:
            continue
        found = _by_debug_offsets(process, segments, path)
        if found is not None:
            return found
        if version is None and sum(s.present_end - s.start for s in segments) > MAX_UNVERSIONED_SCAN_BYTES:
            continue
        versions = (version,) if version in CROSS_POINTER_VERSIONS else () if version else CROSS_POINTER_VERSIONS
        for candidate in versions:
            found = _by_cross_pointers(process, segments, path, candidate)
            if found is not None:
                return found
    return None


# The search for _PyRuntime reads the core alone: it looks through the writable data the core
# holds, and follows candidate pointers that may lead anywhere (into code, where a read of the
# mapped file would cost a system call to find nothing): the file's bytes of writable data are
# its initial values, never a live runtime.


def _segment_bytes(process: Process, seg: Segment) -> bytes:
    size = min(seg.present_end - seg.start, MAX_SCAN_BYTES)
    return process.read_available(seg.start, size, core_only=True)


def _by_debug_offsets(process: Process, segments: list[Segment], path: str) -> FoundRuntime | None:
    cookie = pywalker.DEBUG_OFFSETS_COOKIE
    for seg in segments:
        data = _segment_bytes(process, seg)
        at = data.find(cookie)
        while at >= 0:
            if at % 8 == 0 and at + 16 <= len(data):
                version = pywalker.hex_version(struct.unpack_from("<Q", data, at + 8)[0])
                if version is not None and version[:2] >= (3, 13):
                    return FoundRuntime(seg.start + at, version, "debug-offsets", path)
            at = data.find(cookie, at + 1)
    return None


def _by_cross_pointers(
    process: Process, segments: list[Segment], path: str, version: tuple[int, int]
) -> FoundRuntime | None:
    table = pywalker.TABLES[version]
    head_at = table["runtime.interpreters_head"]
    main_at = head_at + 8  # interpreters {mutex, head, main, next_id} in every version tabled
    u64 = partial(process.read_u64, core_only=True)

    def points_back(interp: int, runtime: int) -> bool:
        return interp % 8 == 0 and u64(interp + table["interp.runtime"]) == runtime

    for seg in segments:
        data = _segment_bytes(process, seg)
        for index, (head,) in enumerate(struct.iter_unpack("<Q", data[: len(data) // 8 * 8])):
            if head < 4096 or head % 8:
                continue
            runtime = seg.start + 8 * index - head_at
            if runtime < seg.start or not points_back(head, runtime):
                continue
            main = u64(runtime + main_at)
            if not main or not points_back(main, runtime):
                continue
            tstate = u64(head + table["interp.threads_head"])
            if tstate and u64(tstate + table["tstate.interp"]) != head:
                continue
            return FoundRuntime(runtime, version, "cross-pointers", path)
    return None
