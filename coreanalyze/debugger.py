"""The debugger seam: what the analysis asks of a debugger that has a core open.

gdb over GDB/MI (coreanalyze.gdb.debugger.GdbDebugger) is the implementation today: an unwinder
(threads' native frames, registers per frame, disassembly, DWARF lines) with the core open. The
stage that reads threads, frames and the crash (coreanalyze.gdb.collect) speaks only this
protocol, in no debugger's syntax, so another debugger (lldb, an in-process unwinder) can be
added without touching the orchestration. The CPython walker answers python_stacks in-process
(coreanalyze.coretarget.InProcessWalker); gdb's own answer remains for tools and tests.

A request the debugger cannot answer raises coreanalyze.errors.DebuggerError;
DebuggerTimeout when it stopped answering at all (the analysis then ends).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from coreanalyze.model import SignalInfo
from coreanalyze.pywalk import WalkResult


@dataclass(frozen=True)
class DebuggerThread:
    id: str  # the debugger's own handle for the thread
    tid: int | None  # the kernel's thread id (LWP); None when the debugger did not tell
    name: str | None
    description: str  # how the debugger describes the thread (for warnings)


@dataclass(frozen=True)
class DebuggerFrame:
    pc: int | None
    function: str | None  # the symbol as the debugger names it (mangled when it does not demangle)
    file: str | None
    line: int | None
    library: str | None  # the file the debugger places the pc in


@dataclass(frozen=True)
class Instruction:
    text: str  # the instruction as disassembled, operands included
    function: str | None  # the symbol it belongs to, as the debugger names it
    offset: int | None  # its offset into that function


@runtime_checkable
class Debugger(Protocol):
    def threads(self) -> tuple[list[DebuggerThread], str | None]:
        """Every thread of the core, and the id of the one that received the signal."""

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        """Frames low..high (innermost = 0) of a thread; DebuggerError when unwinding fails."""

    def register_names(self) -> list[str]:
        """Register names by register number ([] when unknown)."""

    def register_values(self, thread: str, numbers: list[int]) -> dict[int, int]:
        """Values of the numbered registers in a thread's innermost frame ({} when unknown)."""

    def read_memory(self, address: int, size: int) -> bytes | None:
        """The readable prefix of size bytes at address; None when nothing is readable."""

    def evaluate(self, expression: str, thread: str | None = None) -> str | None:
        """An expression's value as the debugger prints it; None when it cannot evaluate it."""

    def siginfo(self, thread: str | None = None) -> SignalInfo | None:
        """The signal a thread received, as the debugger reads it (None when it cannot)."""

    def symbol_address(self, name: str) -> int | None:
        """The address of a global symbol in the core's process (None when it is unknown)."""

    def instruction_at(self, thread: str, pc: int, length: int) -> Instruction | None:
        """The instruction at pc (disassembling at most length bytes)."""

    def file_mappings(self) -> list[tuple[int, int, str]]:
        """(start, end, path) of the core's file-backed mappings; DebuggerError if unknown."""

    def library_ranges(self) -> list[tuple[int, int, str]]:
        """(start, end, name) of the code of the libraries the debugger loaded."""

    def python_stacks(self, arguments: list[str]) -> WalkResult:
        """The CPython walker's answer (gdb_scripts/pywalker.py) for this core, typed."""
