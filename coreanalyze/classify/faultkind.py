"""What went wrong at the machine level: the fault kind, from the signal, the abort message and
the top of the stack.

Every decision comes with the facts that made it, as short evidence lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from coreanalyze.arch import accessed_address, stack_pointer
from coreanalyze.base.model import Frame, GpuFault, OomInfo, SignalInfo
from coreanalyze.base.signals import SI_KERNEL, SIGNAL_NAMES, code_number
from coreanalyze.base.signals import code_name as _code_name
from coreanalyze.base.vocabulary import FaultKind
from coreanalyze.classify.culprit import CulpritPick, pick_culprit
from coreanalyze.classify.frames import FrameView, build_views
from coreanalyze.classify.gpuerrors import match_error
from coreanalyze.classify.rules import RuleSet, default_rules

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
    signal frame was read: coreanalyze.classify.reraise); [] for any other signal."""
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


Verdict = tuple[FaultKind, list[str]]


@dataclass
class Crash:
    """What a fault kind is decided from: the signal, the abort message, the top of the stack."""

    signal: SignalInfo  # as the core (or the report) gives it
    name: str | None  # the signal's name
    cname: str | None  # its si_code's name
    abort_message: str | None
    views: Sequence[FrameView]
    pick: CulpritPick
    registers: Mapping[str, int] | None
    stack_range: tuple[int, int] | None
    pid: int | None
    fault_instruction: str | None
    rules: RuleSet
    detail: str | None
    origin: Origin = field(init=False)
    # After a re-raise by a signal handler, the re-raise's siginfo says nothing about the fault:
    # the rules about faults read these (fault / fault_cname) and say so (reraised).
    fault: SignalInfo = field(init=False)
    fault_cname: str | None = field(init=False)
    reraised: list[str] = field(init=False)

    def __post_init__(self) -> None:
        f = self.rules.fault
        top = [*self.pick.handler_frames, *self.pick.skipped]
        self.abort_on_stack = any(v.role == "abort" for v in top)
        self.malloc_on_top = list(self.pick.allocator_frames)
        self.logging_on_top = [v for v in top if v.role == "logging"]
        self.terminate_on_top = _matching(top, f.terminate_frames)
        self.assert_on_top = _matching(top, f.assert_frames)
        self.protector_on_top = _matching(top, f.stack_protector_frames)
        self.heap_msg = _search_any(f.heap_messages, self.abort_message)
        self.check_msg = _search_any(f.check_messages, self.abort_message)
        self.assert_msg = _search_any(f.assert_messages, self.abort_message)
        # Handler frames nobody has explained: with reraised_by set, the signal is already the
        # one the handler caught, so its frames say nothing about the fault.
        self.unexplained_handler = bool(self.pick.handler_frames) and not self.signal.reraised_by
        # A SIGABRT right after the process printed its own fatal message was its own abort().
        own_abort = self.abort_on_stack or (self.name == "SIGABRT" and bool(self.heap_msg or self.check_msg or self.assert_msg))
        self.origin = signal_origin(self.signal, self.pid, own_abort)
        self.fault, self.fault_cname, self.reraised = self.signal, self.cname, []
        if self.origin.by_self and self.unexplained_handler:
            labels = [v.label for v in self.pick.handler_frames]
            handler = next((label for label in labels if "faulthandler" in label or "Stacktrace" in label), None)
            who = f"the signal handler {handler}" if handler else "a signal handler in the process (Python's faulthandler or similar)"
            self.reraised = [f"{self.name} re-raised by {who}; the original fault address is lost"]
            self.fault, self.fault_cname = SignalInfo(number=self.signal.number, name=self.name), None

    @property
    def any_abort_evidence(self) -> bool:
        return bool(self.heap_msg or self.check_msg or self.assert_msg or self.abort_on_stack or self.malloc_on_top or self.logging_on_top)

    def uncaught(self, label: str) -> Verdict:
        """std::terminate: an uncaught exception, or a failed allocation nobody caught."""
        thrown = exception_type(self.abort_message) or thrown_exception(self.views, self.rules)
        if not thrown and self.abort_message and _NO_EXCEPTION.search(self.abort_message):
            # libstdc++ says there was none: a pure virtual call (an object used while it is
            # destroyed) or a terminate() outside any handler; nothing was thrown.
            return FaultKind.ABORT, [f"{label} from std::terminate with no exception in flight ({_NO_EXCEPTION.search(self.abort_message).group(0)})"]
        what = f" (uncaught {thrown})" if thrown else ""
        oom = self.rules.fault.oom_exceptions
        if thrown and oom is not None and oom.search(thrown):
            return FaultKind.OUT_OF_MEMORY, [f"{label} from std::terminate{what}: an allocation failed and nothing caught its exception"]
        return FaultKind.UNCAUGHT_EXCEPTION, [f"{label} from std::terminate{what}: an uncaught C++ exception"]


def _matching(views: Sequence[FrameView], pattern: re.Pattern[str] | None) -> list[FrameView]:
    return [v for v in views if pattern is not None and pattern.search(v.name)]


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
) -> Verdict:
    """The first of FAULT_RULES that decides, with its evidence."""
    verdict = (
        device_facts_kind(gpu, oom) or _report_verdict(signal, detail, rules) or _instruction_set_check(abort_message, rules)
    )
    if verdict is not None:
        return verdict
    signal = signal or SignalInfo()
    crash = Crash(
        signal, signal_name(signal), code_name(signal), abort_message, views, pick, registers, stack_range, pid,
        fault_instruction, rules, detail,
    )  # fmt: skip
    for rule in FAULT_RULES:
        verdict = rule(crash)
        if verdict is not None:
            return verdict
    return FaultKind.UNKNOWN, [f"{crash.name} ({crash.fault_cname or 'no si_code'}) is not a fault signal this tool knows"]


# --------------------------------------------------------------------------- the rules, in order


def _report_verdict(signal: SignalInfo | None, detail: str | None, rules: RuleSet) -> Verdict | None:
    """The report's own verdict (ASan's stack-overflow with operator new on top, a
    heap-buffer-overflow read in a kernel) beats what the stack suggests."""
    verdict = report_class_kind(detail, rules)
    address = signal.address if signal is not None else None
    if verdict == FaultKind.INVALID_ACCESS and address is not None and signal.name == "SIGSEGV":
        # The report names an invalid access and the signal says where: the address tells
        # more (the null page, the stack guard, an unmapped page) than the class does.
        return None
    if verdict is None:
        return None
    if verdict == FaultKind.INVALID_ACCESS and address is not None and address < NULL_PAGE_LIMIT:
        return FaultKind.NULL_DEREF, [f"the report itself names the fault: {detail}, at 0x{address:x} in the null page"]
    return _fault_kind(verdict), [f"the report itself names the fault: {detail}"]


def _fault_kind(word: str) -> FaultKind | str:
    """The vocabulary's member for a word (a user's rules may name one the vocabulary lacks)."""
    try:
        return FaultKind(word)
    except ValueError:
        return word


def _instruction_set_check(abort_message: str | None, rules: RuleSet) -> Verdict | None:
    if _search_any(rules.fault.illegal_instruction_messages, abort_message) is None:
        return None
    return FaultKind.ILLEGAL_INSTRUCTION, [
        f"the process stopped at its CPU-instruction check ({short_message(abort_message)!r}): this machine lacks an instruction set the binary was built for"
    ]


def _aborted(c: Crash) -> Verdict:
    """What ended a process that aborted: the allocator, an uncaught exception, a check, ..."""
    label = c.name or "abort"
    device = device_message_kind(c.abort_message)
    if device is not None:
        return device
    if c.heap_msg:
        return FaultKind.HEAP_CORRUPTION, [f"{label} after the allocator reported {short_message(c.abort_message)!r}"]
    if c.terminate_on_top and not (c.malloc_on_top and c.malloc_on_top[0].position < c.terminate_on_top[0].position):
        # operator new throwing bad_alloc leaves allocator frames under std::terminate:
        # the uncaught exception, not the heap, ended the process.
        return c.uncaught(label)
    if c.malloc_on_top:
        return FaultKind.HEAP_CORRUPTION, [f"{label} raised from inside the allocator ({', '.join(v.label for v in c.malloc_on_top[:3])})"]
    if c.check_msg:
        return FaultKind.CHECK_FAILURE, [f"{label} after a fatal check / log message ({short_message(c.abort_message)!r})"]
    if c.logging_on_top:
        return FaultKind.CHECK_FAILURE, [f"{label} raised by fatal logging ({c.logging_on_top[0].label})"]
    if c.protector_on_top:
        return FaultKind.ABORT, [f"{label} from the stack protector / fortify check ({c.protector_on_top[0].label}): a buffer overflow on the stack"]
    if c.assert_on_top or (c.assert_msg and "Assertion" in c.assert_msg.group(0)):
        return FaultKind.ABORT, [f"{label} from a failed assert()"]
    if c.terminate_on_top or (c.assert_msg and "terminat" in c.assert_msg.group(0)):
        return c.uncaught(label)
    return FaultKind.ABORT, [f"{label} with no allocator or check-failure evidence"]


def _no_signal(c: Crash) -> Verdict | None:
    if c.name is not None:
        return None
    if c.any_abort_evidence:
        kind, evidence = _aborted(c)
        return kind, ["no signal information", *evidence]
    device = device_message_kind(c.abort_message)
    if device is not None:
        return device[0], ["no signal information", *device[1]]
    return FaultKind.UNKNOWN, ["no signal information and no abort evidence"]


def _sent_from_outside(c: Crash) -> Verdict | None:
    if not c.origin.sent or c.origin.by_self:
        return None
    evidence = f"{c.name} was sent by {c.origin.sender}" + (f" ({c.cname})" if c.cname else "")
    return FaultKind.SENT_SIGNAL, [evidence]


def _trapped_check(c: Crash) -> Verdict | None:
    """CHECK / LOG(FATAL) in Chromium, V8, absl builds end in a trap instruction (ud2, int3,
    brk), not abort(): the check failure is the cause, the trap how the process stopped."""
    if c.name not in ("SIGILL", "SIGTRAP") or not (c.check_msg or c.logging_on_top) or c.unexplained_handler:
        return None
    why = short_message(c.abort_message) if c.check_msg else c.logging_on_top[0].label
    return FaultKind.CHECK_FAILURE, [f"{c.name} raised by a fatal check / log ({why})"]


def _trapped_assert(c: Crash) -> Verdict | None:
    """WebKit's ASSERT, V8's CSA_ASSERT: the failed assertion is the cause; the trap (or the
    write to a poison address) after it is how the runtime chose to stop."""
    if c.name not in ("SIGILL", "SIGTRAP", "SIGSEGV", "SIGBUS") or not _asserted(c.assert_msg) or c.check_msg or c.unexplained_handler:
        return None
    return FaultKind.ABORT, [f"{c.name} right after a failed assertion ({short_message(c.abort_message)!r})"]


def _abort_signal(c: Crash) -> Verdict | None:
    if c.name not in ("SIGABRT", "SIGIOT"):
        return None
    kind, evidence = _aborted(c)
    if c.origin.by_self:
        evidence.insert(0, f"SIGABRT raised by the process itself ({c.cname or 'tgkill'})")
    elif c.signal.reraised_by and c.cname is None and any(v.role == "abort" for v in c.pick.skipped):
        evidence.insert(0, "SIGABRT raised by the process itself (abort/raise under the handler)")
    return kind, evidence


def _raised_by_self(c: Crash) -> Verdict | None:
    if not c.origin.by_self or c.name not in FAULT_SIGNALS or c.unexplained_handler:
        return None
    return FaultKind.SENT_SIGNAL, [f"{c.name} was raised by the process itself (raise/kill on its own pid, {c.cname or 'no si_code'}), not by a fault"]


def _allocator_fault(c: Crash) -> Verdict | None:
    if c.name not in ("SIGSEGV", "SIGBUS") or not c.malloc_on_top:
        return None
    if _stack_overflow_at(c) is not None:
        return None  # a deep recursion whose last call happened to be malloc's: its stack ran out
    where = ", ".join(v.label for v in c.malloc_on_top[:3])
    return FaultKind.HEAP_CORRUPTION, [*c.reraised, f"{c.name} inside the allocator ({where}): its metadata is damaged"]


def _segmentation_fault(c: Crash) -> Verdict | None:
    if c.name != "SIGSEGV":
        return None
    address, evidence = _fault_address(c)
    overflow = _stack_overflow_at(c)
    if overflow is not None:
        return FaultKind.STACK_OVERFLOW, [*evidence, overflow]
    recursion = _recursion(c.views, c.rules)
    if recursion is not None:
        return FaultKind.STACK_OVERFLOW, [*evidence, f"{recursion[1]} frames of {recursion[0]}: runaway recursion"]
    if c.fault.code == SI_KERNEL:
        return FaultKind.INVALID_ACCESS, [*evidence, "SIGSEGV with SI_KERNEL: a general-protection fault (non-canonical address, typically a corrupted or uninitialized pointer); si_addr is not meaningful"]
    if address is None:
        return FaultKind.INVALID_ACCESS, [*evidence, "SIGSEGV but the fault address is not known, so a null pointer cannot be told from any other bad address"]
    cname = c.fault_cname
    if address < NULL_PAGE_LIMIT:
        return FaultKind.NULL_DEREF, [*evidence, f"fault address 0x{address:x} is below 64 KiB ({cname or 'SIGSEGV'}): a null pointer plus a small offset"]
    detail = SEGV_CODES.get(cname or "", "not accessible")
    return FaultKind.INVALID_ACCESS, [*evidence, f"fault address 0x{address:x} is {detail} ({cname or 'SIGSEGV'})"]


def _stack_overflow_at(c: Crash) -> str | None:
    """Why the fault address says the stack ran out (next to the stack pointer, or in the guard
    area below the thread's stack), or None."""
    address = _fault_address(c)[0]
    sp = stack_pointer(c.registers)
    if address is not None and sp is not None and abs(address - sp) <= c.rules.fault.stack_overflow_slack and c.fault.code != SI_KERNEL:
        side = "below" if address <= sp else "above"
        return f"fault address 0x{address:x} is {abs(sp - address)} bytes {side} the stack pointer 0x{sp:x}"
    if address is not None and c.stack_range is not None:
        lo, _hi = c.stack_range
        if lo - STACK_GUARD_REACH <= address < lo:
            return f"fault address 0x{address:x} is in the guard area below the thread's stack (starts 0x{lo:x})"
    return None


def _fault_address(c: Crash) -> tuple[int | None, list[str]]:
    """The address a SIGSEGV faulted at, and how it was found where the signal does not say."""
    address, evidence = c.fault.address, list(c.reraised)
    if c.pick.bad_jump is not None:
        # The CPU faulted fetching the instruction: the fault address is the pc itself.
        pc = c.pick.bad_jump.frame.pc
        evidence.append(f"the crashing thread jumped to 0x{pc:x}, where there is no code: a call through a null or corrupt function pointer (or a damaged vtable / return address)")
        if address is None:
            address = pc
    if address is None:
        # A core without siginfo (qemu-user writes none): the load/store tells the address.
        insn = instruction_text(c.fault_instruction)
        accessed = accessed_address(insn, c.registers)
        if accessed is not None:
            address, base = accessed
            evidence.append(f"fault address 0x{address:x} computed from the faulting instruction `{insn}` and {base} (the core has no siginfo)")
    return address, evidence


def _bus_error(c: Crash) -> Verdict | None:
    if c.name != "SIGBUS":
        return None
    detail = BUS_CODES.get(c.fault_cname or "", "a bus error")
    at = f" at 0x{c.fault.address:x}" if c.fault.address is not None else ""
    return FaultKind.BUS_ERROR, [*c.reraised, f"SIGBUS{at}: {detail} ({c.fault_cname or 'no si_code'})"]


def _arithmetic(c: Crash) -> Verdict | None:
    if c.name != "SIGFPE":
        return None
    cname = c.fault_cname
    if cname in ("FPE_INTDIV", "FPE_FLTDIV") or (cname is None and not c.reraised and c.fault.code is None):
        why = f"{cname}" if cname else "SIGFPE without a code: almost always an integer division by zero"
        return FaultKind.DIVIDE_BY_ZERO, [*c.reraised, f"SIGFPE: {why}"]
    if cname == "FPE_INTOVF":
        return FaultKind.DIVIDE_BY_ZERO, [*c.reraised, "SIGFPE FPE_INTOVF: integer overflow in a division (INT_MIN / -1)"]
    return FaultKind.UNKNOWN, [*c.reraised, f"SIGFPE {cname or ''}: a floating-point exception with traps enabled".replace("  ", " ")]


def _illegal_instruction(c: Crash) -> Verdict | None:
    if c.name != "SIGILL":
        return None
    insn = instruction_text(c.fault_instruction)
    evidence = [*c.reraised, f"SIGILL ({c.fault_cname or 'no si_code'})" + (f" at instruction `{insn}`" if insn else "")]
    feature = cpu_feature_for(insn, c.rules)
    if feature is not None:
        evidence.append(f"`{insn}` " + ("is a deliberate trap (__builtin_trap / unreachable code)" if feature[1] else f"needs {feature[0]}"))
    return FaultKind.ILLEGAL_INSTRUCTION, evidence


def _trap(c: Crash) -> Verdict | None:
    """aarch64 compiles __builtin_trap (and so traps of CHECK-like macros) to `brk`, which raises
    SIGTRAP where x86-64's ud2 raises SIGILL: the same deliberate trap."""
    if c.name != "SIGTRAP":
        return None
    insn = instruction_text(c.fault_instruction)
    feature = cpu_feature_for(insn, c.rules)
    code = c.fault_cname or "no si_code"
    if feature is not None and feature[1]:
        return FaultKind.ILLEGAL_INSTRUCTION, [*c.reraised, f"SIGTRAP ({code}) at instruction `{insn}`", f"`{insn}` is a deliberate trap (__builtin_trap / unreachable code / a failed hardening check)"]
    return FaultKind.UNKNOWN, [*c.reraised, f"SIGTRAP ({code}): a breakpoint instruction (int3 / brk) or a debugger trap, not a memory fault"]


def _seccomp(c: Crash) -> Verdict | None:
    if c.name != "SIGSYS":
        return None
    return FaultKind.UNKNOWN, [*c.reraised, "SIGSYS: a system call refused by a seccomp filter"]


def _delivered(c: Crash) -> Verdict | None:
    if c.name not in DELIVERED_SIGNALS:
        return None
    return FaultKind.SENT_SIGNAL, [f"{c.name} is delivered from outside ({c.origin.sender or c.fault_cname or 'sender unknown'})"]


# The rules after the report's own verdict and the instruction-set check, first match wins.
FAULT_RULES: tuple[Callable[[Crash], Verdict | None], ...] = (
    _no_signal,
    _sent_from_outside,
    _trapped_check,
    _trapped_assert,
    _abort_signal,
    _raised_by_self,
    _allocator_fault,
    _segmentation_fault,
    _bus_error,
    _arithmetic,
    _illegal_instruction,
    _trap,
    _seccomp,
    _delivered,
)

SEGV_CODES = {
    "SEGV_ACCERR": "mapped but not accessible that way (write to read-only memory or a jump to non-executable memory)",
    "SEGV_MAPERR": "not mapped",
}
BUS_CODES = {
    "BUS_ADRERR": "a mapped file has no data there (file truncated under the mapping, or /dev/shm full)",
    "BUS_ADRALN": "a misaligned access",
    "BUS_OBJERR": "an object-specific hardware error",
    "BUS_MCEERR_AR": "a hardware memory error (machine check)",
}


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


_NO_EXCEPTION = re.compile(r"terminate called without an active exception|pure virtual method called")
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
