"""Read threads, native frames, registers, siginfo, the faulting instruction and glibc's
abort message out of a core that a debugger has loaded (the Debugger protocol; gdb today).

Everything here comes from an untrusted core: every loop is bounded, every read has a
size limit, and a thread that cannot be unwound yields what could be read plus a warning.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .. import model
from ..debugger import Debugger, DebuggerFrame
from ..demangle import demangle
from ..errors import DebuggerError, DebuggerTimeout
from .debugger import as_debugger
from .session import GdbSession

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


MAX_ABORT_MESSAGE = 4096
# The targets read (x86_64, aarch64) are 64-bit.
POINTER_SIZE = 8
# Instruction bytes disassembled at the crashing pc.
DISASSEMBLY_BYTES = 16


@dataclass
class GdbAnalysis:
    threads: list[model.Thread] = field(default_factory=list)
    crashing_tid: int | None = None
    siginfo: model.SignalInfo | None = None
    fault_instruction: str | None = None
    # The instruction at each pc a signal interrupted on the crashing thread (the frame under a
    # `<signal handler called>`): the fault, when a handler re-raised it (coreanalyze.reraise).
    interrupted_instructions: dict[int, str] = field(default_factory=dict)
    abort_message: str | None = None
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def read_memory(session: GdbSession | Debugger, address: int, size: int) -> bytes | None:
    """Bytes at address in the core; a short read returns the readable prefix, none -> None."""
    return as_debugger(session).read_memory(address, size)


# (start, end, path) of each file mapped into the process.
FileRanges = Sequence[tuple[int, int, str]]


@dataclass(frozen=True)
class FromNotes:
    """What the core's own notes already tell, which the debugger is then not asked for."""

    # NT_FILE's ranges (file_ranges): the frames' module map, as gdb's `info proc mappings`
    # prints it for a core; None or empty: the debugger lists them.
    file_mappings: FileRanges | None = None
    # NT_SIGINFO was read: the signal's details, which outrank the debugger's (its $_siginfo
    # is that same note; the first evaluation costs a fresh gdb ~15 ms).
    siginfo: bool = False


def file_ranges(mappings: Iterable) -> list[tuple[int, int, str]]:
    """The ranges of the module map from the core's NT_FILE mappings (coreanalyze.corefile
    Mapping): those of files by absolute path, as gdb lists them (it leaves out the kernel's
    "(unreachable)/..." names, which lie outside the process's root)."""
    return [(m.start, m.end, m.path) for m in mappings if m.path.startswith("/")]


class _ModuleMap:
    """pc -> path of the mapped file, from the core's file mappings (NT_FILE).

    These paths are the ones the kernel recorded, the same the core-notes stage lists as
    modules, so a frame's module can be matched to its build-id.
    """

    def __init__(self, ranges: list[tuple[int, int, str]]):
        self._ranges = sorted(ranges)
        self._starts = [r[0] for r in self._ranges]

    @classmethod
    def read(cls, debugger: Debugger, warnings: list[str], known: FileRanges | None = None) -> _ModuleMap:
        """known: the core's file mappings as its notes list them (file_ranges), which is what
        gdb's `info proc mappings` prints for a core; asked of the debugger when None or empty."""
        if known:
            return cls(list(known))
        ranges: list[tuple[int, int, str]] = []
        try:
            ranges = debugger.file_mappings()
        except DebuggerTimeout:
            raise
        except DebuggerError as e:
            warnings.append(f"gdb could not list the core's file mappings: {e}")
        if not ranges:
            # Fall back to the text ranges of the libraries the debugger loaded.
            ranges = debugger.library_ranges()
        return cls(ranges)

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


def _native_frame(index: int, raw: DebuggerFrame, modules: _ModuleMap) -> model.Frame:
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


def _warn_about_stray_frames(thread: model.Thread, modules: _ModuleMap, warnings: list[str]) -> None:
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


def _register_numbers(debugger: Debugger) -> dict[int, str]:
    return {i: n for i, n in enumerate(debugger.register_names()) if n in GENERAL_REGISTERS}


def _registers(debugger: Debugger, ref: _ThreadRef, numbers: dict[int, str]) -> dict[str, int]:
    if not numbers:
        return {}
    values = debugger.register_values(ref.gdb_id, sorted(numbers))
    return {numbers[number]: value for number, value in values.items() if number in numbers}


# --------------------------------------------------------------------------- signal, fault


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


SIGNAL_TRAMPOLINE = "<signal handler called>"
MAX_INTERRUPTED = 4  # nested handlers read at most


def _interrupted_instructions(debugger: Debugger, ref: _ThreadRef, frames: list[model.Frame]) -> dict[int, str]:
    found: dict[int, str] = {}
    below = [frames[i + 1].pc for i, f in enumerate(frames[:-1]) if f.function == SIGNAL_TRAMPOLINE]
    for pc in below[:MAX_INTERRUPTED]:
        text = _fault_instruction(debugger, ref, pc)[0] if pc is not None else None
        if text is not None:
            found[pc] = text
    return found


def abort_message(session: GdbSession | Debugger) -> str | None:
    """The message glibc stored before abort() (assert, malloc_printerr, __libc_fatal).

    `__abort_msg` is a `struct abort_msg_s *` whose struct is `{unsigned int size; char
    msg[];}`; it is read as raw memory so that no libc debug info is needed.
    """
    debugger = as_debugger(session)
    address = debugger.symbol_address("__abort_msg")
    if not address:
        return None
    raw_pointer = debugger.read_memory(address, POINTER_SIZE)
    if raw_pointer is None or len(raw_pointer) != POINTER_SIZE:
        return None
    struct_address = int.from_bytes(raw_pointer, "little")
    if struct_address == 0:
        return None
    header = debugger.read_memory(struct_address, 4)
    if header is None or len(header) != 4:
        return None
    # size is the whole mapping (header included); from a core it may be anything.
    size = int.from_bytes(header, "little")
    length = max(0, min(size - 4, MAX_ABORT_MESSAGE)) if size > 4 else MAX_ABORT_MESSAGE
    text = debugger.read_memory(struct_address + 4, length)
    if not text:
        return None
    text = text.split(b"\0", 1)[0]
    message = text.decode("utf-8", errors="replace").strip()
    return message or None


# --------------------------------------------------------------------------- main entry


def collect(
    session: GdbSession | Debugger, *, max_frames: int = 256, max_threads: int = 512, from_notes: FromNotes = FromNotes()
) -> GdbAnalysis:
    """Everything the debugger can tell about the loaded core's threads and the crash, but for
    what the core's notes already tell (from_notes)."""
    debugger = as_debugger(session)
    result = GdbAnalysis()
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
    result.crashing_tid = crashing.tid
    if len(refs) > max_threads:
        warnings.append(f"the core has {len(refs)} threads; only {max_threads} were read")
        kept = refs[:max_threads]
        if crashing not in kept:
            kept = [crashing, *kept[: max_threads - 1]]
        refs = kept

    modules = _ModuleMap.read(debugger, warnings, from_notes.file_mappings)
    register_numbers = _register_numbers(debugger)
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
        thread.registers = _registers(debugger, ref, register_numbers)
        result.threads.append(thread)

    result.siginfo = None if from_notes.siginfo else debugger.siginfo(crashing.gdb_id)
    crashed = next(t for t in result.threads if t.crashed)
    pc = crashed.frames[0].pc if crashed.frames else crashed.registers.get("rip", crashed.registers.get("pc"))
    result.fault_instruction, offset = _fault_instruction(debugger, crashing, pc)
    if crashed.frames and offset is not None:
        crashed.frames[0].offset = offset
    if result.fault_instruction is None and pc is not None:
        warnings.append(f"cannot read the instruction at the crashing pc {pc:#x}")
    result.interrupted_instructions = _interrupted_instructions(debugger, crashing, crashed.frames)
    result.abort_message = abort_message(debugger)
    return result
