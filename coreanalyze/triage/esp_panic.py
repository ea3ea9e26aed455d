"""ESP-IDF's reports of a dead program (ESP32 boards running TFLite Micro, MicroPython, Arduino):
the panic handler's "Guru Meditation", the task watchdog, FreeRTOS's stack-overflow hook, abort().

    Guru Meditation Error: Core  0 panic'ed (LoadProhibited). Exception was unhandled.
    Core  0 register dump:
    PC      : 0x4008b565  PS      : 0x00060f30  A0      : 0x800dc822  A1      : 0x3ffc3440
    EXCVADDR: 0x00000000  LBEG    : 0x4008b565  LEND    : 0x4008b57d  LCOUNT  : 0xffffffff
    Backtrace:0x4008b562:0x3ffc3440 0x400dc81f:0x3ffc3450 0x400d3962:0x3ffc3600
    0x400dc81f: tflite::MicroInterpreter::Invoke() at .../micro_interpreter.cc:296     (idf.py monitor)
      #1  0x400dc81f:0x3ffc3450 in app_main at src/main.cpp:63                        (PlatformIO)

    E (6271) task_wdt: Task watchdog got triggered. The following tasks did not reset the watchdog in time:
    E (6271) task_wdt: CPU 0: tf_main
    E (6271) task_wdt: Print CPU 0 (current core) backtrace

    ***ERROR*** A stack overflow in task IDLE has been detected.
    abort() was called at PC 0x400dd395 on core 1

The reason (rules data: device_faults.toml, family "esp") is the signal and, where a signal does
not say it, the fault kind (a stack overflow, a hang); EXCVADDR (Xtensa) or MTVAL (RISC-V) is the
fault address. Each `Backtrace:` line is a thread, innermost first: pc:sp pairs, named by the
lines a monitor decoded; the first one after the verdict is the one that died (the task watchdog
prints the running task's core first). A serial monitor's timestamp ("12:31:04.012 -> ") or a
quote's "> " in front of a line is not part of it.
"""

from __future__ import annotations

import re

from coreanalyze.triage import device_rules, limits
from coreanalyze.triage import findings as fd

FORMAT = "esp-idf-panic"

# A serial monitor's or a quote's prefix: "12:31:04.012 -> ", "> ", "[12:31:04]".
_PREFIX = re.compile(r"^(?:>\s?)*(?:\[?\d{1,2}:\d\d:\d\d(?:\.\d{1,6})?\]?\s*(?:->\s?)?)?")
_GURU = re.compile(r"Guru Meditation Error: Core\s+(\S{1,3}) panic'ed \((.{1,120}?)\)(?:\.|$| Exception)")
_DEBUG_REASON = re.compile(r"^Debug exception reason: (.{1,160})$")
# One line of a handler's verdict that needs no "Guru Meditation" in front.
_MESSAGES = re.compile(
    r"(abort\(\) was called at PC (0x[0-9a-fA-F]{1,8})(?: on core (\d))?"
    r"|\*\*\*ERROR\*\*\* A stack overflow in task (\S{1,32}) has been detected\.?"
    r"|Task watchdog got triggered\.?.*|task_wdt: (?:Print CPU \d|Tasks currently running)"
    r"|CORRUPT HEAP: .{0,200}"
    r"|Interrupt wdt timeout on CPU\d)"
)
_MESSAGE_NEEDLES = ("abort() was called", "***ERROR***", "Task watchdog got triggered", "task_wdt: ", "CORRUPT HEAP", "Interrupt wdt timeout")
# Register dumps: "EXCVADDR: 0x00000000", RISC-V "MTVAL   : 0x00000000", "PC      : 0x4008b565".
_REGISTER = re.compile(r"\b(PC|EXCVADDR|MTVAL|MEPC)\s*:\s*(0x[0-9a-fA-F]{8})\b")
_BACKTRACE = re.compile(r"^Backtrace\s*:\s*(.*)$")
_PAIR = re.compile(r"(0x[0-9a-fA-F]{8}):0x[0-9a-fA-F]{8}")
# idf.py monitor: "0x400e14ed: app_main at /path/main.cpp:36"; PlatformIO: "#0  0x400E0DC4:0x3FFB06F0 in task_wdt_isr at C:\...:189".
_DECODED = re.compile(r"^(0x[0-9a-fA-F]{8}): (.{1,2000}?)(?: at (\S.{0,600}?):(\d{1,7})(?: \(discriminator \d+\))?| at \?\?:\?)?\s*$")
_PIO = re.compile(r"^#\d{1,4}\s+(0x[0-9a-fA-F]{8}):0x[0-9a-fA-F]{8} in (.{1,2000}?)(?: at (\S.{0,600}?):(\d{1,7})(?: \(discriminator \d+\))?| at \?\?:\?)?\s*$")
# The task watchdog names what ran on each core and whose backtrace it prints next.
_RUNNING = re.compile(r"task_wdt: CPU (\d): (\S{1,32})$")
_PRINT_CPU = re.compile(r"task_wdt: Print CPU (\d)\b")
# An Xtensa core's own word for an exception nobody handled, as the instruction-set simulator
# (xt-run) and Xtensa's runtime print it: the ISA's cause names, which ESP-IDF prints without
# "Cause" ("Unhandled user exception: LoadStoreAlignmentCause (0x000130da)").
_XTENSA_UNHANDLED = re.compile(r"\bUnhandled (?:user |kernel |double )?exception: ([A-Z]\w{2,40}?)Cause\b")
_NEEDLES = ("Guru Meditation", "Unhandled", *_MESSAGE_NEEDLES)
# An interrupt's entry vector (Xtensa's level 1-6 and NMI vectors, RISC-V's handler), within the
# first frames of a watchdog's backtrace.
_INTERRUPT_ENTRY = re.compile(r"^(?:_xt_lowint1|_xt_medint\d|_xt_highint\d|_xt_nmi|_interrupt_handler)$")
INTERRUPT_DEPTH = 4


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    if not any(n in line for line in lines for n in _NEEDLES):
        return []
    rules = device_rules.default_rules()
    finding: fd.Finding | None = None
    verdict: device_rules.Verdict | None = None
    verdict_line = ""
    reason = ""
    registers: dict[str, int] = {}
    running: dict[str, str] = {}
    pending: dict[int, fd.model.Frame] = {}
    cpu: str | None = None
    aborted = False
    threads: list[fd.TextThread] = []
    current: fd.TextThread | None = None
    for i, raw in enumerate(lines):
        if claimed[i] or not raw:
            continue
        s = _PREFIX.sub("", raw.strip()).strip()
        m = _GURU.search(s)
        if m is not None:
            finding = finding or fd.Finding(FORMAT, i)
            verdict, verdict_line = rules.match("esp", m.group(2).strip()), s
            reason = m.group(2).strip()
            finding.add_message(fd.MESSAGE_TERMINATE, s)
            claimed[i] = 1
            continue
        m = _XTENSA_UNHANDLED.search(s) if "xception: " in s else None
        if m is not None:
            said = rules.match("esp", m.group(1))
            if said is not None:
                finding = finding or fd.Finding(FORMAT, i)
                verdict, verdict_line, reason = said, s, m.group(1)
                finding.add_message(fd.MESSAGE_TERMINATE, m.group(0))
                claimed[i] = 1
                continue
        m = _DEBUG_REASON.match(s)
        if m is not None and finding is not None:
            verdict = rules.match("esp", m.group(1)) or verdict
            verdict_line, reason = s, m.group(1)
            finding.add_message(fd.MESSAGE_TERMINATE, s)
            claimed[i] = 1
            continue
        if "task_wdt:" in s and finding is not None and verdict is not None and verdict.name == "esp-task-watchdog":
            if (m := _RUNNING.search(s)) is not None:
                running[m.group(1)] = m.group(2)
            elif (m := _PRINT_CPU.search(s)) is not None:
                cpu = m.group(1)
            claimed[i] = 1
            continue
        if any(n in s for n in _MESSAGE_NEEDLES) and (m := _MESSAGES.search(s)) is not None:
            finding = finding or fd.Finding(FORMAT, i)
            said = rules.match("esp", m.group(1))
            # A stack overflow or a watchdog says more than the abort() that follows it.
            if said is not None and (verdict is None or verdict.fault_kind is None):
                verdict, verdict_line, reason = said, s, m.group(1)
            finding.add_message(fd.MESSAGE_TERMINATE, m.group(1))
            aborted = aborted or m.group(2) is not None
            if (m := _PRINT_CPU.search(s)) is not None:
                cpu = m.group(1)
            claimed[i] = 1
            continue
        if "task_wdt:" in s and finding is not None:
            if (m := _RUNNING.search(s)) is not None:
                running[m.group(1)] = m.group(2)
            claimed[i] = 1
            continue
        regs = _REGISTER.findall(s)
        if regs and finding is not None:
            for name, value in regs:
                registers.setdefault(name, int(value, 16))
            claimed[i] = 1
            continue
        m = _BACKTRACE.match(s)
        if m is not None:
            finding = finding or fd.Finding(FORMAT, i)
            current = fd.TextThread(name=running.get(cpu) if cpu is not None else None)
            for pc in _PAIR.findall(m.group(1)):
                current.add(fd.native_frame(None, pc=int(pc, 16)))
            for frame in pending.values():
                _name(current, frame)
            pending = {}
            if len(threads) < limits.MAX_THREADS:
                threads.append(current)
            cpu = None
            claimed[i] = 1
            continue
        m = _DECODED.match(s) or _PIO.match(s)
        if m is not None:
            finding = finding or fd.Finding(FORMAT, i)
            frame = fd.native_frame(m.group(2), pc=int(m.group(1), 16), file=m.group(3), line=int(m.group(4)) if m.group(4) else None)
            if current is None and (registers or aborted):
                pending.setdefault(frame.pc, frame)  # a register's or abort()'s pc, decoded before the Backtrace line
            elif current is None or (_decoded_run(current) and not _name(current, frame)):
                if current is None:
                    current = fd.TextThread()
                    if len(threads) < limits.MAX_THREADS:
                        threads.append(current)
                current.add(frame)
            else:
                _name(current, frame)
            claimed[i] = 1
            continue
        if s.startswith("(inlined by)") and current is not None:
            claimed[i] = 1
    if finding is None:
        return []
    if verdict is not None:
        address = _address(verdict, registers)
        source = "Xtensa" if _XTENSA_UNHANDLED.search(verdict_line) else "ESP-IDF"
        device_rules.apply(finding, verdict, verdict_line, address, detail=f"{reason.rstrip('.: ')} ({source})")
    if threads:
        threads[0].crashed = True
        if verdict is not None and verdict.fault_kind == "hang":
            _drop_interrupt(threads[0])
        if threads[0].name is None and running:
            threads[0].name = next(iter(running.values()))
    for t in threads:
        finding.add_thread(t)
    return [finding]


def _address(verdict: device_rules.Verdict, registers: dict[str, int]) -> int | None:
    """The fault address the verdict's register holds (EXCVADDR on Xtensa, MTVAL on RISC-V, the PC
    for a fetch that faulted)."""
    if verdict.address is None:
        return None
    for name in ("EXCVADDR", "MTVAL") if verdict.address == "EXCVADDR" else (verdict.address,):
        if name in registers:
            return registers[name]
    return None


def _name(thread: fd.TextThread, frame: fd.model.Frame) -> bool:
    """Name the frame of the thread at the decoded line's pc (the monitor decodes each pair of the
    Backtrace line in turn, and the panic's PC first); False when the pc is not in the thread."""
    for f in thread.frames:
        if f.pc == frame.pc and f.function is None:
            f.function, f.raw_function, f.file, f.line = frame.function, frame.raw_function, frame.file, frame.line
            return True
    return False


def _decoded_run(thread: fd.TextThread) -> bool:
    """The thread is made of decoded lines alone (no Backtrace line): more of them extend it."""
    return all(f.function is not None for f in thread.frames)


def _drop_interrupt(thread: fd.TextThread) -> None:
    """A watchdog's backtrace starts in its interrupt handler (task_wdt_isr, then the interrupt's
    entry vector): the stuck code is the one the interrupt came into, below the entry."""
    entry = next((k for k, f in enumerate(thread.frames[:INTERRUPT_DEPTH]) if f.function and _INTERRUPT_ENTRY.match(f.function)), None)
    if entry is not None and entry + 1 < len(thread.frames):
        thread.frames = thread.frames[entry + 1 :]
        for k, f in enumerate(thread.frames):
            f.index = k
