"""An unwinder with no debugger, for running the whole pipeline where gdb is not: threads and
registers from the core's notes, native frames by following the frame-pointer chain in the
core's memory (the C crashers are built with -fno-omit-frame-pointer), no names (the pipeline's
symbols stage names frames from the ELF files, as it does for frames gdb leaves unnamed).

It answers the Debugger protocol (coreanalyze.debugger) from a real core; it is the "mock
program" of drgn's tests, with nothing canned: every answer is read from the core.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from coreanalyze.corefile.tables import REGISTER_NAMES
from coreanalyze.debugger import DebuggerFrame, DebuggerThread, Instruction
from coreanalyze.gdb.collect import GdbAnalysis, collect
from coreanalyze.model import SignalInfo
from coreanalyze.process import Process
from coreanalyze.pywalk import WalkResult

MAX_FRAMES = 256
FRAME_POINTER = {"x86_64": "rbp", "aarch64": "x29"}


class FramePointerUnwinder:
    """A Debugger over a Process, by frame pointers."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self._names = list(REGISTER_NAMES.get(process.arch, ()))
        self._threads = [t for t in process.threads if t.tid]

    def threads(self) -> tuple[list[DebuggerThread], str | None]:
        threads = [DebuggerThread(str(i + 1), t.tid, None, f"LWP {t.tid}") for i, t in enumerate(self._threads)]
        current = next((d.id for d, t in zip(threads, self._threads) if t.tid == self.process.crashing_tid), None)
        return threads, current

    def frames(self, thread: str, low: int, high: int) -> list[DebuggerFrame]:
        return self._unwind(self._threads[int(thread) - 1].registers)[low : high + 1]

    def _unwind(self, registers: dict[str, int]) -> list[DebuggerFrame]:
        pc = registers.get(self.process.notes.pc_register)
        fp = registers.get(FRAME_POINTER.get(self.process.arch, ""))
        frames = [DebuggerFrame(pc, None, None, None, None)] if pc is not None else []
        while fp and len(frames) <= MAX_FRAMES:
            caller_fp, return_address = self.process.read_u64(fp), self.process.read_u64(fp + 8)
            if return_address is None or return_address == 0 or caller_fp is None:
                break
            frames.append(DebuggerFrame(return_address, None, None, None, None))
            if caller_fp <= fp:  # the stack grows down: a frame below its callee ends the chain
                break
            fp = caller_fp
        return frames

    def register_names(self) -> list[str]:
        return self._names

    def register_values(self, thread: str, numbers: list[int]) -> dict[int, int]:
        registers = self._threads[int(thread) - 1].registers
        return {n: registers[self._names[n]] for n in numbers if 0 <= n < len(self._names) and self._names[n] in registers}

    def read_memory(self, address: int, size: int) -> bytes | None:
        return self.process.read(address, size)

    def evaluate(self, expression: str, thread: str | None = None) -> str | None:
        return None

    def siginfo(self, thread: str | None = None) -> SignalInfo | None:
        return None  # the core's own siginfo (NT_SIGINFO) stands

    def symbol_address(self, name: str) -> int | None:
        return None

    def instruction_at(self, thread: str, pc: int, length: int) -> Instruction | None:
        return None  # no disassembler

    def file_mappings(self) -> list[tuple[int, int, str]]:
        return [(m.start, m.end, m.path) for m in self.process.mappings]

    def library_ranges(self) -> list[tuple[int, int, str]]:
        return []

    def python_stacks(self, arguments: list[str]) -> WalkResult:
        from coreanalyze.coretarget import InProcessWalker

        return InProcessWalker(self.process, self.process.modules).python_stacks(arguments)


@contextmanager
def open_frame_pointer_unwinder(ctx) -> Iterator[tuple[FramePointerUnwinder, GdbAnalysis]]:
    """analyze_core(..., debugger=open_frame_pointer_unwinder): the pipeline with this unwinder."""
    unwinder = FramePointerUnwinder(ctx.process)
    ctx.process.scan_in_background()
    yield unwinder, collect(unwinder)
