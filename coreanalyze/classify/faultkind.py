"""What went wrong at the machine level: the fault kind, from the signal, the abort message and
the top of the stack.

Every decision comes with the facts that made it, as short evidence lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from coreanalyze.arch import accessed_address
from coreanalyze.classify.culprit import CulpritPick, pick_culprit
from coreanalyze.classify.frames import FrameView, build_views
from coreanalyze.classify.gpuerrors import match_error
from coreanalyze.classify.rules import RuleSet, default_rules
from coreanalyze.model import Frame, GpuFault, OomInfo, SignalInfo
from coreanalyze.signals import SI_KERNEL, SIGNAL_NAMES, code_number
from coreanalyze.signals import code_name as _code_name

NULL_PAGE_LIMIT = 64 * 1024
# The main thread's stack guard gap (stack_guard_gap, 256 pages) is the widest guard we expect.
STACK_GUARD_REACH = 1024 * 1024
RECURSION_SCAN = 4096

FAULT_SIGNALS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS")
# Signals a process gets from outside (or from the kernel on someone's behalf).
DELIVERED_SIGNALS = ("SIGQUIT", "SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGXCPU", "SIGXFSZ", "SIGPIPE", "SIGKILL", "SIGSTKFLT")
KERNEL_SENT = {
    "SIGXCPU": "the kernel: the CPU-time limit (RLIMIT_CPU, ulimit -t) was exceeded",
    "SIGXFSZ": "the kernel: the file-size limit (RLIMIT_FSIZE, ulimit -f) was exceeded",
    "SIGQUIT": "the terminal (Ctrl-\\)",
    "SIGINT": "the terminal (Ctrl-C)",
    "SIGPIPE": "the kernel: a write to a pipe or socket with no reader",
}


_LOG_PREFIX = re.compile(
    r"^\s*(?:F\d{4} \d\d:\d\d:\d+(?:\.\d+)?\s+\d+ |\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?: F |\[libprotobuf FATAL )([\w./+-]+:\d+)\]\s*"
)
_GLIBC_ASSERT = re.compile(r"^[^:]{1,200}: (?P<file>[^:]{1,300}):(?P<line>\d+): (?P<func>.{1,300}?): (?P<rest>Assertion `.*' failed\.?)$")
MAX_SHORT_MESSAGE = 160


def short_message(message: str | None) -> str | None:
    """'F0000 00:00:1.5  42 tensor_shape.cc:356] Check failed: x' -> 'Check failed: x (tensor_shape.cc:356)'."""
    if not message:
        return None
    text = " ".join(message.split())
    m = _LOG_PREFIX.match(text)
    if m:
        text = f"{text[m.end():]} ({m.group(1)})"
    a = _GLIBC_ASSERT.match(text)
    if a:
        text = f"{a.group('rest')} ({a.group('file').rsplit('/', 1)[-1]}:{a.group('line')}, {a.group('func')})"
    return text if len(text) <= MAX_SHORT_MESSAGE else text[: MAX_SHORT_MESSAGE - 1] + "…"


def signal_name(signal: SignalInfo | None) -> str | None:
    if signal is None:
        return None
    if signal.name:
        name = signal.name.upper()
        return name if name.startswith("SIG") else "SIG" + name
    if signal.number is not None:
        return SIGNAL_NAMES.get(signal.number, f"signal {signal.number}")
    return None


def code_name(signal: SignalInfo | None) -> str | None:
    if signal is None:
        return None
    if signal.code_name:
        return signal.code_name
    return _code_name(signal_name(signal), signal.code)


def _code(signal: SignalInfo) -> int | None:
    if signal.code is not None:
        return signal.code
    return code_number(signal.code_name)


@dataclass(frozen=True)
class Origin:
    """Who delivered the signal: the fault itself, the process, or someone else."""

    sent: bool  # delivered by kill/tgkill/sigqueue (or the kernel on behalf of a limit)
    by_self: bool  # ... by the process itself (abort(), raise(), a handler re-raising)
    sender: str  # for sentences


def reraise_evidence(signal: SignalInfo | None) -> list[str]:
    """The line that says the signal is the one a handler caught and raised again (its
    signal frame was read: coreanalyze.reraise); [] for any other signal."""
    if signal is None or not signal.reraised_by:
        return []
    caught = signal_name(signal) or "the signal"
    if code_name(signal):
        caught += f" ({code_name(signal)})"
    return [
        f"{caught} was caught by {signal.reraised_by}, which raised it again: the core's own siginfo is the re-raise,"
        " the registers shown are those the signal interrupted"
    ]


def signal_origin(signal: SignalInfo, pid: int | None, abort_on_stack: bool) -> Origin:
    name = signal_name(signal) or ""
    code = _code(signal)
    if code is None or code > 0:
        if code == SI_KERNEL and name in KERNEL_SENT:
            return Origin(True, False, KERNEL_SENT[name])
        return Origin(False, False, "")
    if code == SI_KERNEL:
        return Origin(False, False, "")
    sender = signal.sender_pid
    if sender is not None and pid is not None:
        if sender == pid:
            return Origin(True, True, f"the process itself (pid {pid})")
        return Origin(True, False, f"pid {sender}" + (" (the kernel or a pid-namespace outsider)" if sender == 0 else ""))
    if abort_on_stack:
        return Origin(True, True, "the process itself (abort/raise on the stack)")
    if sender is not None:
        return Origin(True, False, f"pid {sender}")
    return Origin(True, False, "another process (sender pid unknown)")


def _search_any(patterns: Sequence[re.Pattern[str]], text: str | None) -> re.Match[str] | None:
    if not text:
        return None
    for p in patterns:
        m = p.search(text)
        if m:
            return m
    return None


def instruction_text(fault_instruction: str | None) -> str | None:
    """'=> 0x401126 <unreachable_path+4>:\\tud2' -> 'ud2'."""
    if not fault_instruction:
        return None
    line = fault_instruction.strip().splitlines()[0] if fault_instruction.strip() else ""
    line = re.sub(r"^\s*(=>)?\s*(0x[0-9a-fA-F]+)?\s*(<[^>]*>)?\s*:?\s*", "", line)
    line = re.sub(r"^(?:[0-9a-f]{2}\s)+\s*", "", line)  # raw bytes from `x/i` with /r
    return re.sub(r"\s+", " ", line).strip() or None


def _recursion(views: Sequence[FrameView], rules: RuleSet) -> tuple[str, int] | None:
    f = rules.fault
    named = [v.name or v.module_base for v in views[:RECURSION_SCAN] if not v.python]
    named = [n for n in named if n]
    if not named:
        return None
    name, count = Counter(named).most_common(1)[0]
    if count >= f.recursion_min_repeats and (count * 2 >= len(named) or len(views) >= f.recursion_min_frames):
        return name, count
    return None


def _sp(registers: Mapping[str, int] | None) -> int | None:
    if not registers:
        return None
    for key in ("rsp", "sp", "$sp"):
        value = registers.get(key)
        if isinstance(value, int):
            return value
    return None


def fault_kind(
    signal: SignalInfo | None,
    abort_message: str | None,
    frames: Sequence[Frame],
    registers: Mapping[str, int] | None,
    stack_range: tuple[int, int] | None = None,
    *,
    pid: int | None = None,
    fault_instruction: str | None = None,
    rules: RuleSet | None = None,
) -> tuple[str, list[str]]:
    """(fault kind, evidence lines) for one crash. Works with any subset of the inputs."""
    rules = rules or default_rules()
    views = build_views(frames, [], rules)
    return fault_kind_from_views(signal, abort_message, views, pick_culprit(views, rules), registers, stack_range, pid=pid, fault_instruction=fault_instruction, rules=rules)


def _asserted(assert_msg) -> bool:
    """An assertion's failure message (not std::terminate's, not a stack protector's)."""
    return assert_msg is not None and ("Assertion" in assert_msg.group(0) or "ASSERT" in assert_msg.group(0))


def fault_kind_from_views(
    signal: SignalInfo | None,
    abort_message: str | None,
    views: Sequence[FrameView],
    pick: CulpritPick,
    registers: Mapping[str, int] | None,
    stack_range: tuple[int, int] | None = None,
    *,
    pid: int | None = None,
    fault_instruction: str | None = None,
    rules: RuleSet,
    detail: str | None = None,
    gpu: GpuFault | None = None,
    oom: OomInfo | None = None,
) -> tuple[str, list[str]]:
    device = device_facts_kind(gpu, oom)
    if device is not None:
        return device
    verdict = report_class_kind(detail, rules)
    if verdict == "invalid-access" and signal is not None and signal.address is not None and signal.name == "SIGSEGV":
        # The report names an invalid access and the signal says where: the address tells
        # more (the null page, the stack guard, an unmapped page) than the class does.
        verdict = None
    if verdict is not None:
        # The report's own verdict (ASan's stack-overflow with operator new on top, a
        # heap-buffer-overflow read in a kernel) beats what the stack suggests.
        address = signal.address if signal is not None else None
        if verdict == "invalid-access" and address is not None and address < NULL_PAGE_LIMIT:
            return "null-deref", [f"the report itself names the fault: {detail}, at 0x{address:x} in the null page"]
        return verdict, [f"the report itself names the fault: {detail}"]
    f = rules.fault
    isa_msg = _search_any(f.illegal_instruction_messages, abort_message)
    if isa_msg is not None:
        return "illegal-instruction", [f"the process stopped at its CPU-instruction check ({short_message(abort_message)!r}): this machine lacks an instruction set the binary was built for"]
    signal = signal or SignalInfo()
    name = signal_name(signal)
    cname = code_name(signal)
    top = [*pick.handler_frames, *pick.skipped]
    # Handler frames nobody has explained: with reraised_by set, the signal is already the one
    # the handler caught, so its frames say nothing about the fault.
    unexplained_handler = bool(pick.handler_frames) and not (signal is not None and signal.reraised_by)
    abort_on_stack = any(v.role == "abort" for v in top)
    malloc_on_top = [v for v in pick.allocator_frames]
    logging_on_top = [v for v in top if v.role == "logging"]
    terminate_on_top = [v for v in top if f.terminate_frames is not None and f.terminate_frames.search(v.name)]
    assert_on_top = [v for v in top if f.assert_frames is not None and f.assert_frames.search(v.name)]
    protector_on_top = [v for v in top if f.stack_protector_frames is not None and f.stack_protector_frames.search(v.name)]
    heap_msg = _search_any(f.heap_messages, abort_message)
    check_msg = _search_any(f.check_messages, abort_message)
    assert_msg = _search_any(f.assert_messages, abort_message)

    def uncaught(label: str) -> tuple[str, list[str]]:
        thrown = exception_type(abort_message) or thrown_exception(views, rules)
        what = f" (uncaught {thrown})" if thrown else ""
        if thrown and f.oom_exceptions is not None and f.oom_exceptions.search(thrown):
            return "out-of-memory", [f"{label} from std::terminate{what}: an allocation failed and nothing caught its exception"]
        return "uncaught-exception", [f"{label} from std::terminate{what}: an uncaught C++ exception"]

    def aborted() -> tuple[str, list[str]]:
        label = name or "abort"
        device = device_message_kind(abort_message)
        if device is not None:
            return device
        if heap_msg:
            return "heap-corruption", [f"{label} after the allocator reported {short_message(abort_message)!r}"]
        if terminate_on_top and not (malloc_on_top and malloc_on_top[0].position < terminate_on_top[0].position):
            # operator new throwing bad_alloc leaves allocator frames under std::terminate:
            # the uncaught exception, not the heap, ended the process.
            return uncaught(label)
        if malloc_on_top:
            return "heap-corruption", [f"{label} raised from inside the allocator ({', '.join(v.label for v in malloc_on_top[:3])})"]
        if check_msg:
            return "check-failure", [f"{label} after a fatal check / log message ({short_message(abort_message)!r})"]
        if logging_on_top:
            return "check-failure", [f"{label} raised by fatal logging ({logging_on_top[0].label})"]
        if protector_on_top:
            return "abort", [f"{label} from the stack protector / fortify check ({protector_on_top[0].label}): a buffer overflow on the stack"]
        if assert_on_top or (assert_msg and "Assertion" in assert_msg.group(0)):
            return "abort", [f"{label} from a failed assert()"]
        if terminate_on_top or (assert_msg and "terminat" in assert_msg.group(0)):
            return uncaught(label)
        return "abort", [f"{label} with no allocator or check-failure evidence"]

    if name is None:
        if heap_msg or check_msg or assert_msg or abort_on_stack or malloc_on_top or logging_on_top:
            kind, ev = aborted()
            return kind, ["no signal information", *ev]
        device = device_message_kind(abort_message)
        if device is not None:
            return device[0], ["no signal information", *device[1]]
        return "unknown", ["no signal information and no abort evidence"]

    # A SIGABRT right after the process printed its own fatal message was its own abort().
    own_abort = abort_on_stack or (name == "SIGABRT" and bool(heap_msg or check_msg or assert_msg))
    origin = signal_origin(signal, pid, own_abort)
    if origin.sent and not origin.by_self:
        ev = f"{name} was sent by {origin.sender}"
        if cname:
            ev += f" ({cname})"
        return "sent-signal", [ev]

    if name in ("SIGILL", "SIGTRAP") and (check_msg or logging_on_top) and not unexplained_handler:
        # CHECK / LOG(FATAL) in Chromium, V8, absl builds end in a trap instruction (ud2, int3,
        # brk), not abort(): the check failure is the cause, the trap how the process stopped.
        why = short_message(abort_message) if check_msg else logging_on_top[0].label
        return "check-failure", [f"{name} raised by a fatal check / log ({why})"]

    if name in ("SIGILL", "SIGTRAP", "SIGSEGV", "SIGBUS") and _asserted(assert_msg) and not check_msg and not unexplained_handler:
        # WebKit's ASSERT, V8's CSA_ASSERT: the failed assertion is the cause; the trap (or the
        # write to a poison address) after it is how the runtime chose to stop.
        return "abort", [f"{name} right after a failed assertion ({short_message(abort_message)!r})"]

    if name in ("SIGABRT", "SIGIOT"):
        kind, ev = aborted()
        if origin.by_self:
            ev.insert(0, f"SIGABRT raised by the process itself ({cname or 'tgkill'})")
        elif signal.reraised_by and cname is None and any(v.role == "abort" for v in pick.skipped):
            ev.insert(0, "SIGABRT raised by the process itself (abort/raise under the handler)")
        return kind, ev

    if origin.by_self and name in FAULT_SIGNALS and not unexplained_handler:
        return "sent-signal", [f"{name} was raised by the process itself (raise/kill on its own pid, {cname or 'no si_code'}), not by a fault"]
    reraised = []
    if origin.by_self and unexplained_handler:
        handler = next((v.label for v in pick.handler_frames if "faulthandler" in v.label or "Stacktrace" in v.label), None)
        who = f"the signal handler {handler}" if handler else "a signal handler in the process (Python's faulthandler or similar)"
        reraised = [f"{name} re-raised by {who}; the original fault address is lost"]
        signal = SignalInfo(number=signal.number, name=name)  # the re-raise's siginfo says nothing about the fault
        cname = None

    if name in ("SIGSEGV", "SIGBUS") and malloc_on_top:
        return "heap-corruption", [*reraised, f"{name} inside the allocator ({', '.join(v.label for v in malloc_on_top[:3])}): its metadata is damaged"]

    if name == "SIGSEGV":
        address = signal.address
        if pick.bad_jump is not None:
            # The CPU faulted fetching the instruction: the fault address is the pc itself.
            pc = pick.bad_jump.frame.pc
            reraised = [*reraised, f"the crashing thread jumped to 0x{pc:x}, where there is no code: a call through a null or corrupt function pointer (or a damaged vtable / return address)"]
            if address is None:
                address = pc
        if address is None:
            # A core without siginfo (qemu-user writes none): the load/store tells the address.
            insn = instruction_text(fault_instruction)
            accessed = accessed_address(insn, registers)
            if accessed is not None:
                address, base = accessed
                reraised = [*reraised, f"fault address 0x{address:x} computed from the faulting instruction `{insn}` and {base} (the core has no siginfo)"]
        sp = _sp(registers)
        if address is not None and sp is not None and abs(address - sp) <= f.stack_overflow_slack and signal.code != SI_KERNEL:
            side = "below" if address <= sp else "above"
            return "stack-overflow", [*reraised, f"fault address 0x{address:x} is {abs(sp - address)} bytes {side} the stack pointer 0x{sp:x}"]
        if address is not None and stack_range is not None:
            lo, hi = stack_range
            if lo - STACK_GUARD_REACH <= address < lo:
                return "stack-overflow", [*reraised, f"fault address 0x{address:x} is in the guard area below the thread's stack (starts 0x{lo:x})"]
        rec = _recursion(views, rules)
        if rec is not None:
            return "stack-overflow", [*reraised, f"{rec[1]} frames of {rec[0]}: runaway recursion"]
        if signal.code == SI_KERNEL:
            return "invalid-access", [*reraised, "SIGSEGV with SI_KERNEL: a general-protection fault (non-canonical address, typically a corrupted or uninitialized pointer); si_addr is not meaningful"]
        if address is None:
            return "invalid-access", [*reraised, "SIGSEGV but the fault address is not known, so a null pointer cannot be told from any other bad address"]
        if address < NULL_PAGE_LIMIT:
            return "null-deref", [*reraised, f"fault address 0x{address:x} is below 64 KiB ({cname or 'SIGSEGV'}): a null pointer plus a small offset"]
        detail = {"SEGV_ACCERR": "mapped but not accessible that way (write to read-only memory or a jump to non-executable memory)", "SEGV_MAPERR": "not mapped"}.get(cname or "", "not accessible")
        return "invalid-access", [*reraised, f"fault address 0x{address:x} is {detail} ({cname or 'SIGSEGV'})"]

    if name == "SIGBUS":
        detail = {"BUS_ADRERR": "a mapped file has no data there (file truncated under the mapping, or /dev/shm full)", "BUS_ADRALN": "a misaligned access", "BUS_OBJERR": "an object-specific hardware error", "BUS_MCEERR_AR": "a hardware memory error (machine check)"}.get(cname or "", "a bus error")
        addr = f" at 0x{signal.address:x}" if signal.address is not None else ""
        return "bus-error", [*reraised, f"SIGBUS{addr}: {detail} ({cname or 'no si_code'})"]

    if name == "SIGFPE":
        if cname in ("FPE_INTDIV", "FPE_FLTDIV") or (cname is None and not reraised and signal.code is None):
            why = f"{cname}" if cname else "SIGFPE without a code: almost always an integer division by zero"
            return "divide-by-zero", [*reraised, f"SIGFPE: {why}"]
        if cname == "FPE_INTOVF":
            return "divide-by-zero", [*reraised, "SIGFPE FPE_INTOVF: integer overflow in a division (INT_MIN / -1)"]
        return "unknown", [*reraised, f"SIGFPE {cname or ''}: a floating-point exception with traps enabled".replace("  ", " ")]

    if name == "SIGILL":
        insn = instruction_text(fault_instruction)
        ev = [*reraised, f"SIGILL ({cname or 'no si_code'})" + (f" at instruction `{insn}`" if insn else "")]
        feature = cpu_feature_for(insn, rules)
        if feature is not None:
            ev.append(f"`{insn}` " + ("is a deliberate trap (__builtin_trap / unreachable code)" if feature[1] else f"needs {feature[0]}"))
        return "illegal-instruction", ev

    if name == "SIGTRAP":
        # aarch64 compiles __builtin_trap (and so traps of CHECK-like macros) to `brk`, which
        # raises SIGTRAP where x86-64's ud2 raises SIGILL: the same deliberate trap.
        insn = instruction_text(fault_instruction)
        feature = cpu_feature_for(insn, rules)
        if feature is not None and feature[1]:
            return "illegal-instruction", [*reraised, f"SIGTRAP ({cname or 'no si_code'}) at instruction `{insn}`", f"`{insn}` is a deliberate trap (__builtin_trap / unreachable code / a failed hardening check)"]
        return "unknown", [*reraised, f"SIGTRAP ({cname or 'no si_code'}): a breakpoint instruction (int3 / brk) or a debugger trap, not a memory fault"]
    if name == "SIGSYS":
        return "unknown", [*reraised, "SIGSYS: a system call refused by a seccomp filter"]

    if name in DELIVERED_SIGNALS:
        return "sent-signal", [f"{name} is delivered from outside ({origin.sender or cname or 'sender unknown'})"]
    return "unknown", [f"{name} ({cname or 'no si_code'}) is not a fault signal this tool knows"]


def device_facts_kind(gpu: GpuFault | None, oom: OomInfo | None) -> tuple[str, list[str]] | None:
    """The fault kind the report's own GPU or allocation facts name (a GPU core, a GPU text)."""
    if oom is not None:
        return "out-of-memory", [f"the allocator {oom.allocator or ''} could not allocate the memory asked for".replace("  ", " ")]
    if gpu is None or not gpu.exception:
        return None
    error = match_error(gpu.exception)
    if error is not None and error.fault_kind != "gpu-exception":
        return None  # an API error (no kernel image, an old driver): not a fault of the device
    return "gpu-exception", [f"the GPU raised {gpu.exception}" + (f" in kernel {gpu.kernel}" if gpu.kernel else "")]


def device_message_kind(abort_message: str | None) -> tuple[str, list[str]] | None:
    """A fatal message that names a GPU fault or a failed allocation (gpu_errors.toml)."""
    error = match_error(abort_message)
    if error is None or not error.fault_kind:
        return None
    what = "the GPU faulted" if error.fault_kind == "gpu-exception" else "an allocation failed"
    return error.fault_kind, [f"the fatal message names {error.matched}: {what} ({error.exception})"]


def cpu_feature_for(instruction: str | None, rules: RuleSet) -> tuple[str, bool] | None:
    """(feature, is_trap) for the first CPU-feature pattern the instruction matches."""
    if not instruction:
        return None
    for cf in rules.cpu_features:
        if cf.pattern.search(instruction):
            return cf.feature, cf.trap
    return None


_TERMINATE_TYPE = re.compile(r"terminate called after throwing an instance of '([^']{1,300})'")
_UNCAUGHT_TYPE = re.compile(r"(?:uncaught exception of type|Uncaught exception:?) ((?:[\w<>,* ]|::){1,300}?)(?::(?!:)|$|\n)")


def exception_type(message: str | None) -> str | None:
    """The exception's type from libstdc++'s / libc++abi's terminate message."""
    if not message:
        return None
    m = _TERMINATE_TYPE.search(message) or _UNCAUGHT_TYPE.search(message)
    return m.group(1).strip() if m else None


def report_class_kind(detail: str | None, rules: RuleSet) -> str | None:
    """The fault kind a crash report's own class names (rules' [[report_class]]), if any."""
    if not detail:
        return None
    for rc in rules.report_classes:
        if rc.pattern.search(detail):
            return rc.fault_kind
    return None


def thrown_exception(views: Sequence[FrameView], rules: RuleSet) -> str | None:
    for v in views[:64]:
        for helper in rules.throw_helpers:
            if helper.function.search(v.name):
                return helper.exception
    return None
