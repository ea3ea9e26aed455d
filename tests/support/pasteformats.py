"""Writers that render one crash in the shapes other tools print, for the format-invariance test.

Test support only: the parsers never see this code. A crash is what a real crash text of the tests
says (the crashing thread's frames, the signal and the fault address), and each writer lays it out
the way that tool does: gdb, lldb, WinDbg (`kn` and `!analyze -v`), Visual Studio's call-stack
window, an Apple crash report, an Android tombstone (plain and inside logcat), Crashlytics, ASan,
faulthandler with 3.14's C stack, a JVM hs_err file, pystack; and the same gdb text wrapped at 80
columns or with its frame numbers turned into issue links.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

SIGNAL_NUMBERS = {"SIGSEGV": 11, "SIGABRT": 6, "SIGBUS": 7, "SIGILL": 4, "SIGFPE": 8}


@dataclass
class PastedFrame:
    function: str | None  # as the debugger names it, without arguments
    module: str | None  # the library's path
    pc: int
    file: str | None = None
    line: int | None = None

    @property
    def library(self) -> str:
        return os.path.basename(self.module) if self.module else "python3.11"


@dataclass
class Crash:
    signal: str
    address: int | None
    frames: list[PastedFrame] = field(default_factory=list)


def _name(f: PastedFrame) -> str:
    return f.function or "??"


def gdb(c: Crash) -> str:
    out = [f"Program terminated with signal {c.signal}, Segmentation fault."]
    for i, f in enumerate(c.frames):
        where = f" at {f.file}:{f.line}" if f.file else f" from {f.module}" if f.module else ""
        out.append(f"#{i:<2} 0x{f.pc:016x} in {_name(f)} (){where}")
    if c.address is not None:
        out += ["(gdb) p $_siginfo._sifields._sigfault.si_addr", f"$1 = (void *) 0x{c.address:x}"]
    return "\n".join(out) + "\n"


def lldb(c: Crash) -> str:
    fault = f": invalid address (fault address: 0x{c.address:x})" if c.address is not None else ""
    out = [f"* thread #1, name = 'python3', stop reason = signal {c.signal}{fault}"]
    for i, f in enumerate(c.frames):
        star = "*" if i == 0 else " "
        where = f" at {os.path.basename(f.file)}:{f.line}" if f.file else ""
        out.append(f"  {star} frame #{i}: 0x{f.pc:016x} {f.library}`{_name(f)} + 28{where}")
    return "\n".join(out) + "\n"


def _tick(value: int) -> str:
    text = f"{value:016x}"
    return f"{text[:8]}`{text[8:]}"


def _windows_module(f: PastedFrame) -> str:
    return f.library.split(".so")[0] if f.module else "python311"


def _windbg_rows(c: Crash, between: str) -> list[str]:
    """WinDbg's stack rows: child SP, return address, `between` (kn: the frame number's place;
    !analyze: the arguments), module!function+offset."""
    return [f"{_tick(0x9F53F978 + 0x40 * i)} {_tick(f.pc)}     {between}{_windows_module(f)}!{_name(f)}+0x1c" for i, f in enumerate(c.frames)]


def windbg_kn(c: Crash) -> str:
    out = [
        "(1a2c.3b4): Access violation - code c0000005 (first chance)",
        "First chance exceptions are reported before any exception handling.",
        "0:000> kn",
        " # Child-SP          RetAddr               Call Site",
    ]
    out += [f"{i:02x} {row}" for i, row in enumerate(_windbg_rows(c, ""))]
    return "\n".join(out) + "\n"


def windbg_analyze(c: Crash) -> str:
    address = c.address or 0
    out = [
        "0:000> !analyze -v",
        "*******************************************************************************",
        "*                        Exception Analysis                                   *",
        "*******************************************************************************",
        "",
        f"EXCEPTION_RECORD:  (.exr -1)\nExceptionAddress: {_tick(c.frames[0].pc)} ({_windows_module(c.frames[0])}!{_name(c.frames[0])}+0x1c)",
        "   ExceptionCode: c0000005 (Access violation)",
        f"  Parameter[1]: {address:016x}",
        f"Attempt to read from address {address:016x}",
        "",
        "EXCEPTION_CODE_STR:  c0000005",
        "",
        "STACK_TEXT:  ",
    ]
    out += _windbg_rows(c, ": 00000000`00000000 00000000`00000000 : ")
    return "\n".join(out) + "\n"


def visual_studio(c: Crash) -> str:
    address = c.address or 0
    out = [
        f"Exception thrown at 0x{c.frames[0].pc:016X} ({_windows_module(c.frames[0])}.dll) in python.exe: "
        f"0xC0000005: Access violation reading location 0x{address:016X}.",
        "",
        "\tName\tLanguage",
    ]
    for i, f in enumerate(c.frames):
        mark = ">" if i == 0 else " "
        where = f" Line {f.line}" if f.line else ""
        out.append(f"{mark}\t{_windows_module(f)}.dll!{_name(f)}(){where}\tC++")
    return "\n".join(out) + "\n"


def apple_crash_report(c: Crash) -> str:
    address = c.address or 0
    out = [
        "Process:               Python [41234]",
        "Code Type:             ARM-64 (Native)",
        "",
        f"Exception Type:        EXC_BAD_ACCESS ({c.signal})",
        f"Exception Codes:       KERN_INVALID_ADDRESS at 0x{address:016x}",
        "",
        "Crashed Thread:        0",
        "",
        "Thread 0 Crashed:",
    ]
    for i, f in enumerate(c.frames):
        out.append(f"{i:<4}{f.library:<30}\t0x{f.pc:016x} {_name(f)} + 28")
    return "\n".join(out) + "\n"


def _tombstone_lines(c: Crash) -> list[str]:
    address = c.address or 0
    out = [
        "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
        "Build fingerprint: 'google/oriole/oriole:14/UQ1A.240205.004/11269751:user/release-keys'",
        "ABI: 'arm64'",
        "pid: 4242, tid: 4260, name: pool-1-thread-1  >>> org.example.app <<<",
        f"signal {SIGNAL_NUMBERS[c.signal]} ({c.signal}), code 1 (SEGV_MAPERR), fault addr 0x{address:016x}",
        "",
        "backtrace:",
    ]
    for i, f in enumerate(c.frames):
        symbol = f" ({_name(f)}+28)" if f.function else ""
        out.append(f"      #{i:02d} pc {f.pc & 0xFFFFFF:016x}  {f.module or '/system/bin/app_process64'}{symbol}")
    return out


def android_tombstone(c: Crash) -> str:
    return "\n".join(_tombstone_lines(c)) + "\n"


def android_logcat(c: Crash) -> str:
    prefix = "2024-02-11 14:56:46.351 26572-26572/? A/DEBUG: "
    return "".join(prefix + line + "\n" for line in _tombstone_lines(c))


def crashlytics(c: Crash) -> str:
    address = c.address or 0
    out = [f"Crashed: Thread: {c.signal}  0x{address:016x}"]
    for i, f in enumerate(c.frames):
        symbol = f" ({_name(f)}+28)" if f.function else ""
        out.append(f"#{i:02d} pc 0x{f.pc & 0xFFFFFF:x} {f.library}{symbol}")
    return "\n".join(out) + "\n"


def asan(c: Crash) -> str:
    address = c.address or 0
    out = [
        "AddressSanitizer:DEADLYSIGNAL",
        "=================================================================",
        f"==4242==ERROR: AddressSanitizer: SEGV on unknown address 0x{address:012x} (pc 0x{c.frames[0].pc:012x} bp 0x7ffd2b3c4d60 sp 0x7ffd2b3c4d50 T0)",
        "==4242==The signal is caused by a READ memory access.",
    ]
    for i, f in enumerate(c.frames):
        where = f"{f.file}:{f.line}" if f.file else f"({f.module}+0x{f.pc & 0xFFFFF:x})"
        out.append(f"    #{i} 0x{f.pc:012x} in {_name(f)} {where}")
    out.append("SUMMARY: AddressSanitizer: SEGV " + (f"{c.frames[0].file}:{c.frames[0].line}" if c.frames[0].file else "") + f" in {_name(c.frames[0])}")
    return "\n".join(out) + "\n"


def faulthandler_314(c: Crash) -> str:
    out = [
        "Fatal Python error: Segmentation fault",
        "",
        "Current thread 0x00007f4065c2b740 [python3] (most recent call first):",
        '  File "/work/run_bad_op.py", line 12 in <module>',
        "",
        "Current thread's C stack trace (most recent call first):",
    ]
    for f in c.frames:
        symbol = f"{_name(f)}+0x1c" if f.function else "<unknown>"
        out.append(f'  Binary file "{f.module or "/usr/bin/python3.14"}", at {symbol} [0x{f.pc:x}]')
    out.append("")
    out.append("Segmentation fault (core dumped)")
    return "\n".join(out) + "\n"


def hs_err(c: Crash) -> str:
    out = [
        "#",
        "# A fatal error has been detected by the Java Runtime Environment:",
        "#",
        f"#  {c.signal} (0x{SIGNAL_NUMBERS[c.signal]:x}) at pc=0x{c.frames[0].pc:016x}, pid=4242, tid=4260",
        "#",
        "# Problematic frame:",
        f"# C  [{c.frames[0].library}+0x{c.frames[0].pc & 0xFFFFF:x}]  {_name(c.frames[0])}+0x1c",
        "#",
        "",
        "Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)",
    ]
    for f in c.frames:
        out.append(f"C  [{f.library}+0x{f.pc & 0xFFFFF:x}]  {_name(f)}+0x1c")
    if c.address is not None:
        out += ["", f"siginfo: si_signo: {SIGNAL_NUMBERS[c.signal]} ({c.signal}), si_code: 1 (SEGV_MAPERR), si_addr: 0x{c.address:016x}"]
    return "\n".join(out) + "\n"


def pystack(c: Crash) -> str:
    out = []
    if c.address is not None:
        out.append(f"The process died due a segmentation fault accessing address: 0x{c.address:x}")
    out.append("Traceback for thread 4260 (python3) [] (most recent call last):")
    for f in reversed(c.frames):
        where = f'File "{f.file}", line {f.line}' if f.file else 'File "???", line 0'
        out.append(f"    (C) {where}, in {_name(f)} ({f.library})")
    return "\n".join(out) + "\n"


def wrapped(text: str, width: int = 80) -> str:
    """A terminal's hard wrap: every line cut into pieces of `width` characters."""
    out = []
    for line in text.splitlines():
        out += [line[k : k + width] for k in range(0, len(line), width)] or [""]
    return "\n".join(out) + "\n"


def issue_linked(text: str) -> str:
    """What a tracker makes of gdb's frame numbers: links, and owner/repo#N at a line's start."""
    out = []
    for k, line in enumerate(text.splitlines()):
        if line.startswith("#"):
            number, rest = line[1:].split(" ", 1)
            line = f"[#{number}](https://github.com/example/project/issues/{number}) {rest}" if k % 2 else f"example/project#{number} {rest}"
        out.append(line)
    return "\n".join(out) + "\n"


WRITERS = {
    "gdb": gdb,
    "lldb": lldb,
    "windbg-kn": windbg_kn,
    "windbg-analyze": windbg_analyze,
    "visual-studio": visual_studio,
    "apple-crash-report": apple_crash_report,
    "android-tombstone": android_tombstone,
    "android-logcat": android_logcat,
    "crashlytics": crashlytics,
    "asan": asan,
    "faulthandler-3.14": faulthandler_314,
    "hs_err": hs_err,
    "pystack": pystack,
    "gdb-wrapped-80": lambda c: wrapped(gdb(c)),
    "gdb-issue-links": lambda c: issue_linked(gdb(c)),
}
