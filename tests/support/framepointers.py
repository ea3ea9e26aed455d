"""An unwinder with no debugger, for running the whole pipeline where gdb is not: threads and
registers from the core's notes, native frames by following the frame-pointer chain in the
core's memory (the C crashers are built with -fno-omit-frame-pointer), no names (the pipeline's
symbols stage names frames from the ELF files, as it does for frames gdb leaves unnamed), the
instruction at an address disassembled by binutils' objdump.

It answers the Debugger protocol (coreanalyze.unwind.debugger) from a real core; it is the "mock
program" of drgn's tests, with nothing canned: every answer is read from the core.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Callable, Collection, Iterator

from coreanalyze.corefile.tables import REGISTER_NAMES
from coreanalyze.process.process import Process
from coreanalyze.unwind.debugger import DebuggerFrame, DebuggerThread, Instruction
from coreanalyze.unwind.threads import Unwound, file_ranges, unwind

MAX_FRAMES = 256
FRAME_POINTER = {"x86_64": "rbp", "aarch64": "x29"}
OBJDUMP_MACHINE = {"x86_64": "i386:x86-64", "aarch64": "aarch64"}


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

    def registers(self, thread: str, names: Collection[str]) -> dict[str, int]:
        """The thread's registers as the core's notes hold them, in the architecture's order."""
        registers = self._threads[int(thread) - 1].registers
        return {n: registers[n] for n in self._names if n in names and n in registers}

    def instruction_at(self, thread: str | None, pc: int, length: int) -> Instruction | None:
        """The first instruction of the bytes at pc (the core's, else the mapped file's), as
        objdump disassembles them; None where they cannot be read or disassembled."""
        code = self.process.read(pc, length)
        machine = OBJDUMP_MACHINE.get(self.process.arch)
        if not code or machine is None or shutil.which("objdump") is None:
            return None
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(code)
            f.flush()
            listing = subprocess.run(
                ["objdump", "-D", "-b", "binary", "-m", machine, f"--adjust-vma={pc:#x}", f.name],
                capture_output=True, text=True, timeout=30, check=False,
            ).stdout  # fmt: skip
        for line in listing.splitlines():
            address, _, rest = line.partition(":\t")
            if rest and address.strip() == f"{pc:x}":
                text = rest.split("\t", 1)[1] if "\t" in rest else ""
                return Instruction(text.strip(), None, None) if text.strip() else None
        return None


class FramePointerOpener:
    """The Opener (coreanalyze.unwind.debugger) of this unwinder: nothing to prepare or leave behind;
    the module map and the signal are the Process's (its NT_FILE and NT_SIGINFO)."""

    def prepare(self, ctx) -> None:
        pass

    def beside(self, ctx) -> None:
        pass

    @contextmanager
    def open(self, ctx, while_loading: Callable[[], None]) -> Iterator[Unwound]:
        process = ctx.process
        unwinder = FramePointerUnwinder(process)
        while_loading()
        yield unwind(unwinder, lambda warnings: file_ranges(process.notes.mappings))

    def after(self, ctx) -> None:
        pass
