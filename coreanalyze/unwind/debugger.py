"""The debugger seam: what the analysis asks of an unwinder that has a core open, and how one
is opened on a core.

An unwinder answers four questions: the threads, a thread's native frames, a thread's registers,
the instruction at an address. Everything else the analysis reads (memory, the signal, symbols,
the mappings) is the Process's (coreanalyze.process.process), the same whichever unwinder ran. gdb over
GDB/MI (coreanalyze.gdb.debugger.GdbDebugger) is the implementation today; what only gdb
answers (its expressions, its own mappings, its Python walker command) stays in coreanalyze.gdb.

How an unwinder is opened on one core (what it is prepared with, what runs beside it, what is
done after) is its own business behind an Opener: the stages (coreanalyze.pipeline.stages) call the
opener they are given and name no debugger. coreanalyze.unwind.threads turns an unwinder's answers into
the report's threads.

A request the debugger cannot answer raises coreanalyze.base.errors.DebuggerError;
DebuggerTimeout when it stopped answering at all (the analysis then ends).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, ContextManager, Protocol, runtime_checkable


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
    """An unwinder with a core open."""

    def threads(self) -> tuple[list[DebuggerThread], str | None]:
        """Every thread of the core, and the id of the one that received the signal."""

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        """Frames low..high (innermost = 0) of a thread; DebuggerError when unwinding fails."""

    def registers(self, thread: str, names: Collection[str]) -> dict[str, int]:
        """Values of those of the named registers the unwinder knows, in a thread's innermost
        frame ({} when it knows none)."""

    def instruction_at(self, thread: str | None, pc: int, length: int) -> Instruction | None:
        """The instruction at pc (disassembling at most length bytes); None without a disassembler.
        thread None: any thread (the bytes are the same in every thread of a core)."""


@runtime_checkable
class Opener(Protocol):
    """How an unwinder is opened on one core, for the stages (coreanalyze.pipeline.stages.Context: the
    Process, the report, the options; typed Any here, which the stages module imports)."""

    def prepare(self, ctx: Any) -> None:
        """Before the unwinder opens the core: what it is given (its plan); may set
        ctx.lines_from_debugger (modules whose lines the unwinder already looked for)."""

    def beside(self, ctx: Any) -> None:
        """The unwinder's own work in the background while it reads the core, started among the
        analysis's (by the while_loading given to open)."""

    def open(self, ctx: Any, while_loading: Callable[[], None]) -> ContextManager[Any]:
        """The unwinder opened on the core, yielding its coreanalyze.unwind.threads.Unwound; while_loading
        is called once the unwinder is busy reading the core (work that runs beside it)."""

    def after(self, ctx: Any) -> None:
        """After the unwinder is done and the report is made: what it leaves for the next cores."""
