"""The report's threads from an unwinder (the Debugger protocol, coreanalyze.unwind.debugger): every
thread's native frames and general registers, the crashing thread, the faulting instruction and
those a signal interrupted. What the core's notes and memory tell (the signal, the mappings, the
abort message) is read from the Process, not asked of the unwinder.

Everything here comes from an untrusted core: every loop is bounded, and a thread that cannot
be unwound yields what could be read plus a warning.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from coreanalyze.base import model
from coreanalyze.base.demangle import demangle
from coreanalyze.base.errors import DebuggerError, DebuggerTimeout
from coreanalyze.unwind.debugger import Debugger, DebuggerFrame

# General-purpose registers worth keeping per architecture; vector and x87 state is noise
# for a crash report and large.
GENERAL_REGISTERS = frozenset(
    {
        # x86-64
        "rip", "rsp", "rbp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi",
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
        "eflags", "cs", "ss", "fs_base", "gs_base",
        # aarch64
        *(f"x{i}" for i in range(31)), "sp", "pc", "cpsr",
    }
)  # fmt: skip

# Instruction bytes disassembled at the crashing pc.
DISASSEMBLY_BYTES = 16
SIGNAL_TRAMPOLINE = "<signal handler called>"
MAX_INTERRUPTED = 4  # nested handlers read at most


@dataclass
class Unwound:
    """What the unwinding stage leaves for the report."""

    threads: list[model.Thread] = field(default_factory=list)
    crashing_tid: int | None = None
    crashing_thread: str | None = None  # the unwinder's own id of the crashing thread
    # The signal as the unwinder read it, where the core's own siginfo note is missing (it
    # fills gaps only: stages.merge_signal); None from an unwinder that reads none.
    siginfo: model.SignalInfo | None = None
    fault_instruction: str | None = None
    # The instruction at each pc a signal interrupted on the crashing thread (the frame under a
    # `<signal handler called>`): the fault, when a handler re-raised it (coreanalyze.classify.reraise).
    interrupted_instructions: dict[int, str] = field(default_factory=dict)
    abort_message: str | None = None
    warnings: list[str] = field(default_factory=list)


# (start, end, path) of each file mapped into the process.
FileRanges = Sequence[tuple[int, int, str]]
# The module map's ranges, asked for once the threads are known (warnings: where to say why
# they could not be read).
ModuleRanges = Callable[[list[str]], FileRanges]


def file_ranges(mappings: Iterable) -> list[tuple[int, int, str]]:
    """The ranges of the module map from the core's NT_FILE mappings (coreanalyze.corefile
    Mapping): those of files by absolute path, as gdb lists them (it leaves out the kernel's
    "(unreachable)/..." names, which lie outside the process's root)."""
    return [(m.start, m.end, m.path) for m in mappings if m.path.startswith("/")]


class ModuleMap:
    """pc -> path of the mapped file, from the core's file mappings (NT_FILE).

    These paths are the ones the kernel recorded, the same the core-notes stage lists as
    modules, so a frame's module can be matched to its build-id.
    """

    def __init__(self, ranges: FileRanges):
        self._ranges = sorted(ranges)
        self._starts = [r[0] for r in self._ranges]

    @property
    def empty(self) -> bool:
        return not self._ranges

    def module_of(self, pc: int | None) -> str | None:
        if pc is None:
            return None
        i = bisect.bisect_right(self._starts, pc) - 1
        if i >= 0:
            start, end, path = self._ranges[i]
            if start <= pc < end:
                return path
        return None


# --------------------------------------------------------------------------- threads


@dataclass
class _ThreadRef:
    gdb_id: str  # the debugger's id of the thread
    tid: int
    name: str | None


def _thread_refs(debugger: Debugger, warnings: list[str]) -> tuple[list[_ThreadRef], str | None]:
    threads, current = debugger.threads()
    refs: list[_ThreadRef] = []
    for t in threads:
        if t.tid is None:
            warnings.append(f"thread {t.id}: no kernel thread id in {t.description!r}")
            continue
        refs.append(_ThreadRef(t.id, t.tid, t.name))
    return refs, current


def _native_frame(index: int, raw: DebuggerFrame, modules: ModuleMap) -> model.Frame:
    return model.Frame(
        index=index,
        kind="native",
        pc=raw.pc,
        function=demangle(raw.function),
        raw_function=raw.function,
        module=modules.module_of(raw.pc) or raw.library,
        file=raw.file,
        line=raw.line,
    )


def _list_frames(debugger: Debugger, ref: _ThreadRef, max_frames: int, warnings: list[str]) -> list[DebuggerFrame]:
    """Frames of one thread, at most max_frames (+1 to notice truncation)."""
    try:
        return debugger.frames(ref.gdb_id, 0, max_frames)
    except DebuggerTimeout:
        raise
    except DebuggerError as e:
        first_error = str(e)
    # Listing all at once failed part-way (a corrupt frame): take them one by one until the
    # unwinder gives up, so the frames below the fault are still shown.
    frames: list[DebuggerFrame] = []
    for level in range(max_frames + 1):
        try:
            stack = debugger.frames(ref.gdb_id, level, level)
        except DebuggerTimeout:
            raise
        except DebuggerError:
            break
        if not stack:
            break
        frames.extend(stack)
    warnings.append(
        f"thread {ref.tid}: unwinding stopped after {len(frames)} frame(s): {first_error}"
    )
    return frames


def _warn_about_stray_frames(thread: model.Thread, modules: ModuleMap, warnings: list[str]) -> None:
    """Callers whose pc lies in no mapped file and has no name: an unwinder following a
    smashed stack (or JIT code). Frame 0 is left out: a jump to a bad address is the crash
    itself, reported with the faulting instruction."""
    if modules.empty:
        return
    for frame in thread.frames[1:]:
        if frame.module is None and frame.function is None:
            pc = f"{frame.pc:#x}" if frame.pc is not None else "unknown"
            warnings.append(
                f"thread {thread.tid}: frame #{frame.index} (pc {pc}) is outside every mapped file: "
                "the stack may be corrupt from there on (or the code was generated at run time)"
            )
            return


# --------------------------------------------------------------------------- the fault


def _fault_instruction(debugger: Debugger, ref: _ThreadRef, pc: int | None) -> tuple[str | None, int | None]:
    """'0x... <func+off>: insn' at the crashing pc, and the offset into its function."""
    if pc is None:
        return None, None
    found = debugger.instruction_at(ref.gdb_id, pc, DISASSEMBLY_BYTES)
    if found is None:
        return None, None
    inst = " ".join(found.text.split())
    func = demangle(found.function)
    offset = found.offset
    where = f" <{func}+{offset}>" if func and offset is not None else ""
    return f"{pc:#x}{where}: {inst}", offset


def _interrupted_instructions(debugger: Debugger, ref: _ThreadRef, frames: list[model.Frame]) -> dict[int, str]:
    found: dict[int, str] = {}
    below = [frames[i + 1].pc for i, f in enumerate(frames[:-1]) if f.function == SIGNAL_TRAMPOLINE]
    for pc in below[:MAX_INTERRUPTED]:
        text = _fault_instruction(debugger, ref, pc)[0] if pc is not None else None
        if text is not None:
            found[pc] = text
    return found


# --------------------------------------------------------------------------- main entry


def unwind(debugger: Debugger, module_ranges: ModuleRanges, *, max_frames: int = 256, max_threads: int = 512) -> Unwound:
    """Every thread the unwinder lists (at most max_threads, the crashing one always), its
    frames (at most max_frames) placed in the module map, its general registers; the faulting
    instruction and those a signal interrupted."""
    result = Unwound()
    warnings = result.warnings
    refs, current_id = _thread_refs(debugger, warnings)
    if not refs:
        warnings.append("gdb found no threads in the core")
        return result
    # After `target core` gdb selects the thread the kernel reported first: the one whose
    # signal killed the process.
    crashing = next((r for r in refs if r.gdb_id == current_id), None)
    if crashing is None:
        warnings.append("gdb did not report which thread received the signal; assuming the first")
        crashing = refs[0]
    result.crashing_tid, result.crashing_thread = crashing.tid, crashing.gdb_id
    if len(refs) > max_threads:
        warnings.append(f"the core has {len(refs)} threads; only {max_threads} were read")
        kept = refs[:max_threads]
        if crashing not in kept:
            kept = [crashing, *kept[: max_threads - 1]]
        refs = kept

    modules = ModuleMap(module_ranges(warnings))
    for ref in refs:
        thread = model.Thread(tid=ref.tid, name=ref.name, crashed=ref is crashing)
        raw_frames = _list_frames(debugger, ref, max_frames, warnings)
        if len(raw_frames) > max_frames:
            warnings.append(f"thread {ref.tid}: only the first {max_frames} frames were read")
            raw_frames = raw_frames[:max_frames]
        thread.frames = [_native_frame(i, f, modules) for i, f in enumerate(raw_frames)]
        if not thread.frames:
            warnings.append(f"thread {ref.tid}: gdb could not unwind any frame")
        elif thread.crashed:
            _warn_about_stray_frames(thread, modules, warnings)
        thread.registers = debugger.registers(ref.gdb_id, GENERAL_REGISTERS)
        result.threads.append(thread)

    crashed = next(t for t in result.threads if t.crashed)
    pc = crashed.frames[0].pc if crashed.frames else crashed.registers.get("rip", crashed.registers.get("pc"))
    result.fault_instruction, offset = _fault_instruction(debugger, crashing, pc)
    if crashed.frames and offset is not None:
        crashed.frames[0].offset = offset
    if result.fault_instruction is None and pc is not None:
        warnings.append(f"cannot read the instruction at the crashing pc {pc:#x}")
    result.interrupted_instructions = _interrupted_instructions(debugger, crashing, crashed.frames)
    return result
