"""Read threads, native frames, registers, siginfo, the faulting instruction and glibc's
abort message out of a core that a GdbSession has loaded — over GDB/MI only.

Everything here comes from an untrusted core: every loop is bounded, every read has a
size limit, and a thread that cannot be unwound yields what could be read plus a warning.
"""

from __future__ import annotations

import bisect
import re
import signal as signal_module
from dataclasses import dataclass, field
from typing import Any

import cxxfilt

from .. import model
from ..errors import GdbError, GdbTimeout
from .session import GdbSession, mi_quote

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

# si_code names (Linux uapi siginfo.h). Codes <= 0 mean the signal was sent by a process.
SI_CODES_SENT = {
    0: "SI_USER",
    -1: "SI_QUEUE",
    -2: "SI_TIMER",
    -3: "SI_MESGQ",
    -4: "SI_ASYNCIO",
    -5: "SI_SIGIO",
    -6: "SI_TKILL",
}
SI_KERNEL = 0x80
SI_CODES_BY_SIGNAL = {
    "SIGSEGV": {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR",
                5: "SEGV_ACCADI", 6: "SEGV_ADIDERR", 7: "SEGV_ADIPERR", 8: "SEGV_MTEAERR",
                9: "SEGV_MTESERR", 10: "SEGV_CPERR"},
    "SIGBUS": {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR",
               5: "BUS_MCEERR_AO"},
    "SIGILL": {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP",
               5: "ILL_PRVOPC", 6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK",
               9: "ILL_BADIADDR"},
    "SIGFPE": {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF",
               5: "FPE_FLTUND", 6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB"},
    "SIGTRAP": {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT"},
}  # fmt: skip
# Signals whose si_addr is the faulting address when the kernel raised them.
ADDRESS_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP"})

MAX_READ_BYTES = 1 << 20
MAX_ABORT_MESSAGE = 4096
MAX_MAPPINGS = 200_000

_LWP = re.compile(r"\bLWP (\d+)")
_PROCESS = re.compile(r"\bprocess (\d+)")
_MAPPING_LINE = re.compile(
    r"^\s*(0x[0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+)\s+0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+\s+(?:[rwxsp-]{4}\s+)?(\S.*?)\s*$"
)


@dataclass
class GdbAnalysis:
    threads: list[model.Thread] = field(default_factory=list)
    crashing_tid: int | None = None
    siginfo: model.SignalInfo | None = None
    fault_instruction: str | None = None
    abort_message: str | None = None
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def demangle(name: str | None) -> str | None:
    """People-readable name for a symbol; names that are not mangled come back as they are."""
    if not name or not name.startswith("_Z"):
        return name
    try:
        return cxxfilt.demangle(name)
    except Exception:  # noqa: BLE001 — a corrupt name from a core must not stop the analysis
        return name


def _to_int(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    token = text.strip().split(" ", 1)[0]
    try:
        return int(token, 0)
    except ValueError:
        return None


def _evaluate(session: GdbSession, expression: str) -> str | None:
    try:
        value = session.mi(f"-data-evaluate-expression {mi_quote(expression)}").get("value")
    except GdbTimeout:
        raise
    except GdbError:
        return None
    return value if isinstance(value, str) else None


def read_memory(session: GdbSession, address: int, size: int) -> bytes | None:
    """Bytes at address in the core; a short read returns the readable prefix, none -> None."""
    if address < 0 or size <= 0:
        return None
    size = min(size, MAX_READ_BYTES)
    try:
        payload = session.mi(f"-data-read-memory-bytes {address:#x} {size}")
    except GdbTimeout:
        raise
    except GdbError:
        return None
    blocks = payload.get("memory")
    if not isinstance(blocks, list):
        return None
    for block in blocks:
        if not isinstance(block, dict) or _to_int(block.get("begin")) != address:
            continue
        try:
            return bytes.fromhex(block.get("contents", ""))[:size] or None
        except ValueError:
            return None
    return None


class _ModuleMap:
    """pc -> path of the mapped file, from the core's file mappings (NT_FILE).

    These paths are the ones the kernel recorded, the same the core-notes stage lists as
    modules, so a frame's module can be matched to its build-id.
    """

    def __init__(self, ranges: list[tuple[int, int, str]]):
        self._ranges = sorted(ranges)
        self._starts = [r[0] for r in self._ranges]

    @classmethod
    def read(cls, session: GdbSession, warnings: list[str]) -> _ModuleMap:
        ranges: list[tuple[int, int, str]] = []
        try:
            text = session.console("info proc mappings")
        except GdbTimeout:
            raise
        except GdbError as e:
            warnings.append(f"gdb could not list the core's file mappings: {e}")
            text = ""
        for line in text.splitlines()[:MAX_MAPPINGS]:
            m = _MAPPING_LINE.match(line)
            if m and m.group(3).startswith("/"):
                ranges.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
        if not ranges:
            # Fall back to the text ranges of the libraries gdb loaded.
            try:
                libs = session.mi("-file-list-shared-libraries").get("shared-libraries") or []
            except GdbTimeout:
                raise
            except GdbError:
                libs = []
            for lib in libs[:MAX_MAPPINGS]:
                for r in lib.get("ranges") or []:
                    lo, hi = _to_int(r.get("from")), _to_int(r.get("to"))
                    if lo is not None and hi is not None:
                        ranges.append((lo, hi, lib.get("target-name") or lib.get("id") or ""))
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
    gdb_id: str
    tid: int
    name: str | None


def _thread_refs(session: GdbSession, warnings: list[str]) -> tuple[list[_ThreadRef], str | None]:
    payload = session.mi("-thread-info")
    refs: list[_ThreadRef] = []
    for t in payload.get("threads") or []:
        if not isinstance(t, dict):
            continue
        target_id = str(t.get("target-id", ""))
        m = _LWP.search(target_id) or _PROCESS.search(target_id)
        if m is None:
            warnings.append(f"thread {t.get('id')}: no kernel thread id in {target_id!r}")
            continue
        name = t.get("name") or t.get("details") or None
        refs.append(_ThreadRef(str(t.get("id")), int(m.group(1)), name))
    current = payload.get("current-thread-id")
    return refs, str(current) if current is not None else None


def _frame_from_mi(index: int, raw: dict[str, Any], modules: _ModuleMap) -> model.Frame:
    pc = _to_int(raw.get("addr"))
    func = raw.get("func")
    if func in (None, "??"):
        func = None
    line = raw.get("line")
    module = modules.module_of(pc) or raw.get("from")
    return model.Frame(
        index=index,
        kind="native",
        pc=pc,
        function=demangle(func),
        raw_function=func,
        module=module,
        file=raw.get("file"),
        line=int(line) if isinstance(line, str) and line.isdigit() else None,
    )


def _list_frames(
    session: GdbSession, ref: _ThreadRef, max_frames: int, warnings: list[str]
) -> list[dict[str, Any]]:
    """Raw MI frames of one thread, at most max_frames (+1 to notice truncation)."""
    try:
        stack = session.mi(f"-stack-list-frames --thread {ref.gdb_id} 0 {max_frames}").get("stack")
        return [f for f in stack or [] if isinstance(f, dict)]
    except GdbTimeout:
        raise
    except GdbError as e:
        first_error = str(e)
    # Listing all at once failed part-way (a corrupt frame): take them one by one until the
    # unwinder gives up, so the frames below the fault are still shown.
    frames: list[dict[str, Any]] = []
    for level in range(max_frames + 1):
        try:
            stack = session.mi(f"-stack-list-frames --thread {ref.gdb_id} {level} {level}").get("stack")
        except GdbTimeout:
            raise
        except GdbError:
            break
        if not stack:
            break
        frames.extend(f for f in stack if isinstance(f, dict))
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


def _register_numbers(session: GdbSession) -> dict[int, str]:
    try:
        names = session.mi("-data-list-register-names").get("register-names") or []
    except GdbTimeout:
        raise
    except GdbError:
        return {}
    return {i: n for i, n in enumerate(names) if n in GENERAL_REGISTERS}


def _registers(session: GdbSession, ref: _ThreadRef, numbers: dict[int, str]) -> dict[str, int]:
    if not numbers:
        return {}
    wanted = " ".join(str(n) for n in sorted(numbers))
    try:
        values = session.mi(f"-data-list-register-values --thread {ref.gdb_id} x {wanted}").get(
            "register-values"
        )
    except GdbTimeout:
        raise
    except GdbError:
        return {}
    out: dict[str, int] = {}
    for v in values or []:
        number = _to_int(v.get("number")) if isinstance(v, dict) else None
        value = _to_int(v.get("value")) if isinstance(v, dict) else None
        if number in numbers and value is not None:
            out[numbers[number]] = value
    return out


# --------------------------------------------------------------------------- signal, fault


def signal_name(number: int | None) -> str | None:
    if number is None:
        return None
    try:
        return signal_module.Signals(number).name
    except ValueError:
        return None


def si_code_name(signal_name_: str | None, code: int | None) -> str | None:
    if code is None:
        return None
    if code in SI_CODES_SENT:
        return SI_CODES_SENT[code]
    if code == SI_KERNEL:
        return "SI_KERNEL"
    return SI_CODES_BY_SIGNAL.get(signal_name_ or "", {}).get(code)


def _siginfo(session: GdbSession, ref: _ThreadRef | None) -> model.SignalInfo | None:
    thread = f"--thread {ref.gdb_id} " if ref else ""

    def field_(expr: str) -> int | None:
        try:
            value = session.mi(f"-data-evaluate-expression {thread}{mi_quote(expr)}").get("value")
        except GdbTimeout:
            raise
        except GdbError:
            return None
        return _to_int(value)

    number = field_("$_siginfo.si_signo")
    if number is None:
        return None
    info = model.SignalInfo(number=number, name=signal_name(number))
    info.code = field_("$_siginfo.si_code")
    info.errno = field_("$_siginfo.si_errno")
    info.code_name = si_code_name(info.name, info.code)
    if info.code is not None and info.code <= 0:
        info.sender_pid = field_("$_siginfo._sifields._kill.si_pid")
        info.sender_uid = field_("$_siginfo._sifields._kill.si_uid")
    elif info.name in ADDRESS_SIGNALS:
        info.address = field_("$_siginfo._sifields._sigfault.si_addr")
    return info


def _fault_instruction(session: GdbSession, ref: _ThreadRef, pc: int | None) -> tuple[str | None, int | None]:
    """'0x... <func+off>: insn' at the crashing pc, and the offset into its function."""
    if pc is None:
        return None, None
    try:
        insns = session.mi(f"-data-disassemble --thread {ref.gdb_id} -s {pc:#x} -e {pc + 16:#x} -- 0").get(
            "asm_insns"
        )
    except GdbTimeout:
        raise
    except GdbError:
        return None, None
    if not insns or not isinstance(insns[0], dict):
        return None, None
    first = insns[0]
    inst = " ".join(str(first.get("inst", "")).split())
    func = demangle(first.get("func-name"))
    offset = _to_int(first.get("offset"))
    where = f" <{func}+{offset}>" if func and offset is not None else ""
    return f"{pc:#x}{where}: {inst}", offset


def abort_message(session: GdbSession) -> str | None:
    """The message glibc stored before abort() (assert, malloc_printerr, __libc_fatal).

    `__abort_msg` is a `struct abort_msg_s *` whose struct is `{unsigned int size; char
    msg[];}`; it is read as raw memory so that no libc debug info is needed.
    """
    address = _to_int(_evaluate(session, "(unsigned long)&__abort_msg"))
    if not address:
        return None
    pointer_size = _to_int(_evaluate(session, "sizeof(void *)")) or 8
    raw_pointer = read_memory(session, address, pointer_size)
    if raw_pointer is None or len(raw_pointer) != pointer_size:
        return None
    struct_address = int.from_bytes(raw_pointer, "little")
    if struct_address == 0:
        return None
    header = read_memory(session, struct_address, 4)
    if header is None or len(header) != 4:
        return None
    # size is the whole mapping (header included); from a core it may be anything.
    size = int.from_bytes(header, "little")
    length = max(0, min(size - 4, MAX_ABORT_MESSAGE)) if size > 4 else MAX_ABORT_MESSAGE
    text = read_memory(session, struct_address + 4, length)
    if not text:
        return None
    text = text.split(b"\0", 1)[0]
    message = text.decode("utf-8", errors="replace").strip()
    return message or None


# --------------------------------------------------------------------------- main entry


def collect(session: GdbSession, *, max_frames: int = 256, max_threads: int = 512) -> GdbAnalysis:
    """Everything gdb can tell about the loaded core's threads and the crash."""
    result = GdbAnalysis()
    warnings = result.warnings
    refs, current_id = _thread_refs(session, warnings)
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

    modules = _ModuleMap.read(session, warnings)
    register_numbers = _register_numbers(session)
    for ref in refs:
        thread = model.Thread(tid=ref.tid, name=ref.name, crashed=ref is crashing)
        raw_frames = _list_frames(session, ref, max_frames, warnings)
        if len(raw_frames) > max_frames:
            warnings.append(f"thread {ref.tid}: only the first {max_frames} frames were read")
            raw_frames = raw_frames[:max_frames]
        thread.frames = [_frame_from_mi(i, f, modules) for i, f in enumerate(raw_frames)]
        if not thread.frames:
            warnings.append(f"thread {ref.tid}: gdb could not unwind any frame")
        elif thread.crashed:
            _warn_about_stray_frames(thread, modules, warnings)
        thread.registers = _registers(session, ref, register_numbers)
        result.threads.append(thread)

    result.siginfo = _siginfo(session, crashing)
    crashed = next(t for t in result.threads if t.crashed)
    pc = crashed.frames[0].pc if crashed.frames else crashed.registers.get("rip", crashed.registers.get("pc"))
    result.fault_instruction, offset = _fault_instruction(session, crashing, pc)
    if crashed.frames and offset is not None:
        crashed.frames[0].offset = offset
    if result.fault_instruction is None and pc is not None:
        warnings.append(f"cannot read the instruction at the crashing pc {pc:#x}")
    result.abort_message = abort_message(session)
    return result
