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
import re
from dataclasses import dataclass, field

from coreanalyze.triage.frame_shapes import bare_name

SIGNAL_NUMBERS = {"SIGSEGV": 11, "SIGABRT": 6, "SIGBUS": 7, "SIGILL": 4, "SIGFPE": 8}
# strsignal(): what gdb, faulthandler and a shell say after the signal's name.
SIGNAL_WORDS = {
    "SIGSEGV": "Segmentation fault", "SIGABRT": "Aborted", "SIGBUS": "Bus error",
    "SIGILL": "Illegal instruction", "SIGFPE": "Floating-point exception",
}  # fmt: skip
# The si_code each crash of these signals has on Linux: a fault's, or abort()'s tgkill.
SIGNAL_CODES = {
    "SIGSEGV": (1, "SEGV_MAPERR"), "SIGABRT": (-6, "SI_TKILL"), "SIGBUS": (2, "BUS_ADRERR"),
    "SIGILL": (2, "ILL_ILLOPN"), "SIGFPE": (1, "FPE_INTDIV"),
}  # fmt: skip
# Windows' exception for the same crash: NTSTATUS code and the words WinDbg and Visual Studio use
# (abort() ends a process by __fastfail, STATUS_STACK_BUFFER_OVERRUN).
WINDOWS_EXCEPTIONS = {
    "SIGSEGV": (0xC0000005, "Access violation"),
    "SIGABRT": (0xC0000409, "Security check failure or stack buffer overrun"),
    "SIGBUS": (0xC0000006, "In-page I/O error"),
    "SIGILL": (0xC000001D, "Illegal instruction"),
    "SIGFPE": (0xC0000094, "Integer divide-by-zero"),
}
# An Apple crash report's exception type and codes (x86-64).
APPLE_EXCEPTIONS = {
    "SIGSEGV": ("EXC_BAD_ACCESS", "KERN_INVALID_ADDRESS at 0x{address:016x}"),
    "SIGBUS": ("EXC_BAD_ACCESS", "KERN_PROTECTION_FAILURE at 0x{address:016x}"),
    "SIGABRT": ("EXC_CRASH", "0x0000000000000000, 0x0000000000000000"),
    "SIGILL": ("EXC_BAD_INSTRUCTION", "EXC_I386_INVOP (0x0000000000000000)"),
    "SIGFPE": ("EXC_ARITHMETIC", "EXC_I386_DIV (divide by zero)"),
}
# ASan's word for a deadly signal ("AddressSanitizer: SEGV on unknown address").
ASAN_SIGNALS = {"SIGSEGV": "SEGV", "SIGABRT": "ABRT", "SIGBUS": "BUS", "SIGILL": "ILL", "SIGFPE": "FPE"}
# A faulting signal carries the address that faulted; abort()'s does not.
FAULTS = {"SIGSEGV", "SIGBUS"}
# gdb's name for the kernel's signal trampoline, and what the other tools show there: the frame
# of the symbol itself (glibc's __restore_rt, macOS' _sigtramp, Windows' exception dispatcher).
TRAMPOLINE = "<signal handler called>"


@dataclass
class PastedFrame:
    function: str | None  # as the debugger names it, without arguments
    module: str | None  # the library's path
    pc: int
    file: str | None = None
    line: int | None = None

    @property
    def library(self) -> str:
        if self.module:
            return os.path.basename(self.module.replace("\\", "/"))
        # A frame without a name or a library is code nobody mapped (a call through a null pointer).
        return "python3.11" if self.function else "???"


@dataclass
class Crash:
    signal: str
    address: int | None
    frames: list[PastedFrame] = field(default_factory=list)

    @property
    def fault_address(self) -> int:
        """The address a format shows in its fault field (0 where the signal has none)."""
        return self.address if self.address is not None and self.signal in FAULTS else 0


# Where a frame's source file says which library its code is in: gdb names the file instead of the
# library where it has one; the other tools name the library.
_GLIBC_SOURCE = re.compile(r"\.{1,2}/(?:nptl|sysdeps|stdlib|malloc|posix|signal|string|libio|csu)/")
_CPYTHON_SOURCE = re.compile(r"(?:^|/)(?:Python|Objects|Parser|Include|Programs|Modules)/")
# A fault address for a text that has none, so that every format can say one (a non-null one:
# the real cores' were, and a text without it cannot tell a null dereference).
DEFAULT_FAULT_ADDRESS = 0x7F3F2A000010


def _library(module: str | None, file: str | None, program: str | None) -> str | None:
    if module or not file:
        return module
    if _GLIBC_SOURCE.match(file):
        return "/lib/x86_64-linux-gnu/libc.so.6"
    if "/Modules/_ctypes/" in file:
        return "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"
    if _CPYTHON_SOURCE.search(file):
        return None  # the interpreter's own code
    if program:
        return program  # a program's own code, not an interpreter's
    return f"/opt/app/lib{os.path.splitext(os.path.basename(file))[0]}.so"  # a Python extension's


def crash_of(report) -> Crash:
    """The crash a real text or core states (a coreanalyze Report of it): the crashing thread's
    native frames, the signal and the fault address, as the writers need them."""
    command = (report.core.executable or report.core.cmdline or "").split()
    program = command[0] if command and "python" not in os.path.basename(command[0]) else None
    frames = []
    for f in report.crashed_thread.frames:
        if f.kind != "native":
            continue
        name = bare_name(f.function) if f.function and f.function != TRAMPOLINE else f.function
        frames.append(PastedFrame(function=name, module=_library(f.module, f.file, program), pc=f.pc if f.pc is not None else 0x400000 + 16 * f.index, file=f.file, line=f.line))
    signal = report.core.signal
    address = signal.address
    if address is None and signal.name in FAULTS:
        # An instruction fetch faults at the pc itself (a call through a null pointer: 0).
        address = frames[0].pc if frames and frames[0].pc == 0 else DEFAULT_FAULT_ADDRESS
    return Crash(signal=signal.name, address=address, frames=frames)


def _name(f: PastedFrame) -> str:
    return f.function or "??"


LINUX_TRAMPOLINE = ("__restore_rt", "/lib/x86_64-linux-gnu/libc.so.6")
WINDOWS_TRAMPOLINE = ("KiUserExceptionDispatcher", "C:\\Windows\\System32\\ntdll.dll")
APPLE_TRAMPOLINE = ("_sigtramp", "/usr/lib/system/libsystem_platform.dylib")


def _frames(c: Crash, trampoline: tuple[str, str] = LINUX_TRAMPOLINE) -> list[PastedFrame]:
    """The frames as a tool that shows the signal trampoline's own frame names them (gdb writes
    `<signal handler called>` in its place)."""
    function, module = trampoline
    return [PastedFrame(function, module, f.pc) if f.function == TRAMPOLINE else f for f in c.frames]


def gdb(c: Crash) -> str:
    out = [f"Program terminated with signal {c.signal}, {SIGNAL_WORDS[c.signal]}."]
    for i, f in enumerate(c.frames):
        if f.function == TRAMPOLINE:
            out.append(f"#{i:<2} {TRAMPOLINE}")
            continue
        where = f" at {f.file}:{f.line}" if f.file else f" from {f.module}" if f.module else ""
        out.append(f"#{i:<2} 0x{f.pc:016x} in {_name(f)} (){where}")
    if c.address is not None and c.signal in FAULTS:
        out += ["(gdb) p $_siginfo._sifields._sigfault.si_addr", f"$1 = (void *) 0x{c.address:x}"]
    return "\n".join(out) + "\n"


def lldb(c: Crash) -> str:
    fault = f": invalid address (fault address: 0x{c.address:x})" if c.address is not None and c.signal in FAULTS else ""
    out = [f"* thread #1, name = 'python3', stop reason = signal {c.signal}{fault}"]
    for i, f in enumerate(_frames(c)):
        star = "*" if i == 0 else " "
        where = f" at {os.path.basename(f.file)}:{f.line}" if f.file else ""
        out.append(f"  {star} frame #{i}: 0x{f.pc:016x} {f.library}`{_name(f)} + 28{where}")
    return "\n".join(out) + "\n"


def _tick(value: int) -> str:
    text = f"{value:016x}"
    return f"{text[:8]}`{text[8:]}"


def _windows_module(f: PastedFrame) -> str:
    return re.split(r"\.(?:so|dll)", f.library)[0] if f.module else "python311"


def _windbg_rows(c: Crash, between: str) -> list[str]:
    """WinDbg's stack rows: child SP, return address, `between` (kn: the frame number's place;
    !analyze: the arguments), module!function+offset."""
    # A frame without a symbol is the module and the offset in it ("libffi+0x1cf7a"), or its bare
    # address where no module is mapped there ("0x0").
    return [f"{_tick(0x9F53F978 + 0x40 * i)} {_tick(f.pc)}     {between}{_windbg_call_site(f)}" for i, f in enumerate(_frames(c, WINDOWS_TRAMPOLINE))]


def _windbg_call_site(f: PastedFrame) -> str:
    if f.function:
        return f"{_windows_module(f)}!{f.function}+0x1c"
    return f"{_windows_module(f)}+0x{f.pc & 0xFFFFF:x}" if f.module else f"0x{f.pc:x}"


def windbg_kn(c: Crash) -> str:
    code, words = WINDOWS_EXCEPTIONS[c.signal]
    out = [
        f"(1a2c.3b4): {words} - code {code:08x} (first chance)",
        "First chance exceptions are reported before any exception handling.",
        "0:000> kn",
        " # Child-SP          RetAddr               Call Site",
    ]
    out += [f"{i:02x} {row}" for i, row in enumerate(_windbg_rows(c, ""))]
    return "\n".join(out) + "\n"


def windbg_analyze(c: Crash) -> str:
    address = c.fault_address
    code, words = WINDOWS_EXCEPTIONS[c.signal]
    out = [
        "0:000> !analyze -v",
        "*******************************************************************************",
        "*                        Exception Analysis                                   *",
        "*******************************************************************************",
        "",
        f"EXCEPTION_RECORD:  (.exr -1)\nExceptionAddress: {_tick(c.frames[0].pc)} ({_windows_module(c.frames[0])}!{_name(c.frames[0])}+0x1c)",
        f"   ExceptionCode: {code:08x} ({words})",
        *([f"  Parameter[1]: {address:016x}", f"Attempt to read from address {address:016x}"] if c.signal in FAULTS else []),
        "",
        f"EXCEPTION_CODE_STR:  {code:08x}",
        "",
        "STACK_TEXT:  ",
    ]
    out += _windbg_rows(c, ": 00000000`00000000 00000000`00000000 : ")
    return "\n".join(out) + "\n"


def visual_studio(c: Crash) -> str:
    code, words = WINDOWS_EXCEPTIONS[c.signal]
    what = f"{words} reading location 0x{c.fault_address:016X}" if c.signal in FAULTS else words
    out = [
        f"Exception thrown at 0x{c.frames[0].pc:016X} ({_windows_module(c.frames[0])}.dll) in python.exe: 0x{code:08X}: {what}.",
        "",
        "\tName\tLanguage",
    ]
    for i, f in enumerate(_frames(c, WINDOWS_TRAMPOLINE)):
        mark = ">" if i == 0 else " "
        where = f" Line {f.line}" if f.line else ""
        symbol = f"{f.function}()" if f.function else f"{f.pc:016x}()"  # "libffi.dll!00007ff8a1b2c3d4()"
        out.append(f"{mark}\t{_windows_module(f)}.dll!{symbol}{where}\t{'C++' if f.function else 'Unknown'}")
    return "\n".join(out) + "\n"


def apple_crash_report(c: Crash) -> str:
    exception, codes = APPLE_EXCEPTIONS[c.signal]
    out = [
        "Process:               Python [41234]",
        "Code Type:             X86-64 (Native)",
        "",
        f"Exception Type:        {exception} ({c.signal})",
        f"Exception Codes:       {codes.format(address=c.fault_address)}",
        "",
        "Crashed Thread:        0",
        "",
        "Thread 0 Crashed:",
    ]
    for i, f in enumerate(_frames(c, APPLE_TRAMPOLINE)):
        out.append(f"{i:<4}{f.library:<30}\t0x{f.pc:016x} {_name(f)} + 28")
    return "\n".join(out) + "\n"


def _tombstone_lines(c: Crash) -> list[str]:
    code, code_name = SIGNAL_CODES[c.signal]
    fault = f"0x{c.fault_address:016x}" if c.signal in FAULTS else "--------"
    out = [
        "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***",
        "Build fingerprint: 'google/oriole/oriole:14/UQ1A.240205.004/11269751:user/release-keys'",
        "ABI: 'arm64'",
        "pid: 4242, tid: 4260, name: pool-1-thread-1  >>> org.example.app <<<",
        f"signal {SIGNAL_NUMBERS[c.signal]} ({c.signal}), code {code} ({code_name}), fault addr {fault}",
        "",
        "backtrace:",
    ]
    for i, f in enumerate(_frames(c)):
        symbol = f" ({_name(f)}+28)" if f.function else ""
        out.append(f"      #{i:02d} pc {f.pc & 0xFFFFFF:016x}  {f.module or '/system/bin/app_process64'}{symbol}")
    return out


def android_tombstone(c: Crash) -> str:
    return "\n".join(_tombstone_lines(c)) + "\n"


def android_logcat(c: Crash) -> str:
    prefix = "2024-02-11 14:56:46.351 26572-26572/? A/DEBUG: "
    return "".join(prefix + line + "\n" for line in _tombstone_lines(c))


def crashlytics(c: Crash) -> str:
    out = [f"Crashed: Thread: {c.signal}  0x{c.fault_address:016x}"]
    for i, f in enumerate(_frames(c)):
        symbol = f" ({_name(f)}+28)" if f.function else ""
        out.append(f"#{i:02d} pc 0x{f.pc & 0xFFFFFF:x} {f.library}{symbol}")
    return "\n".join(out) + "\n"


def asan(c: Crash) -> str:
    # ASan prints the stack of the signal's context: a handler that re-raised is not in it.
    frames = c.frames[next((k + 1 for k, f in enumerate(c.frames) if f.function == TRAMPOLINE), 0) :]
    word = ASAN_SIGNALS[c.signal]
    out = [
        "AddressSanitizer:DEADLYSIGNAL",
        "=================================================================",
        f"==4242==ERROR: AddressSanitizer: {word} on unknown address 0x{c.fault_address:012x} (pc 0x{frames[0].pc:012x} bp 0x7ffd2b3c4d60 sp 0x7ffd2b3c4d50 T0)",
    ]
    if c.signal in FAULTS:
        out.append("==4242==The signal is caused by a READ memory access.")
    for i, f in enumerate(frames):
        where = f"{f.file}:{f.line}" if f.file else f"({f.module}+0x{f.pc & 0xFFFFF:x})"
        out.append(f"    #{i} 0x{f.pc:012x} in {_name(f)} {where}")
    out.append(f"SUMMARY: AddressSanitizer: {word} " + (f"{frames[0].file}:{frames[0].line}" if frames[0].file else "") + f" in {_name(frames[0])}")
    return "\n".join(out) + "\n"


def faulthandler_314(c: Crash) -> str:
    out = [
        f"Fatal Python error: {SIGNAL_WORDS[c.signal]}",
        "",
        "Current thread 0x00007f4065c2b740 [python3] (most recent call first):",
        '  File "/work/run_bad_op.py", line 12 in <module>',
        "",
        "Current thread's C stack trace (most recent call first):",
    ]
    for f in _frames(c):
        symbol = f"{_name(f)}+0x1c" if f.function else "<unknown>"
        out.append(f'  Binary file "{f.module or "/usr/bin/python3.14"}", at {symbol} [0x{f.pc:x}]')
    out.append("")
    out.append(f"{SIGNAL_WORDS[c.signal]} (core dumped)")
    return "\n".join(out) + "\n"


def hs_err(c: Crash) -> str:
    frames = _frames(c)
    code, code_name = SIGNAL_CODES[c.signal]
    out = [
        "#",
        "# A fatal error has been detected by the Java Runtime Environment:",
        "#",
        f"#  {c.signal} (0x{SIGNAL_NUMBERS[c.signal]:x}) at pc=0x{frames[0].pc:016x}, pid=4242, tid=4260",
        "#",
        "# Problematic frame:",
        f"# C  [{frames[0].library}+0x{frames[0].pc & 0xFFFFF:x}]  {_name(frames[0])}+0x1c",
        "#",
        "",
        "Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)",
    ]
    for f in frames:
        out.append(f"C  [{f.library}+0x{f.pc & 0xFFFFF:x}]  {_name(f)}+0x1c")
    siginfo = f"siginfo: si_signo: {SIGNAL_NUMBERS[c.signal]} ({c.signal}), si_code: {code} ({code_name})"
    if c.signal in FAULTS:
        out += ["", f"{siginfo}, si_addr: 0x{c.fault_address:016x}"]
    else:
        out += ["", f"{siginfo}, sent from pid: 4242 (current process), sent from uid: 1000"]
    return "\n".join(out) + "\n"


def pystack(c: Crash) -> str:
    out = []
    if c.signal == "SIGSEGV" and c.address is not None:
        out.append(f"The process died due a segmentation fault accessing address: 0x{c.address:x}")
    else:
        out.append(f"The process died due receiving signal {c.signal}")
    out.append("Traceback for thread 4260 (python3) [] (most recent call last):")
    for f in reversed(_frames(c)):
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
