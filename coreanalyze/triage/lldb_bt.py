"""lldb's `bt` / `bt all` output (macOS, and Linux users of lldb).

    * thread #1, name = 'python3', stop reason = signal SIGSEGV: invalid address (fault address: 0x0)
      * frame #0: 0x00007ffff7e4e675 libc.so.6`__memcpy_avx_unaligned_erms at memmove-vec-unaligned-erms.S:314
        frame #1: 0x00007fffd0a2b1c4 libtensorflow_framework.so.2`tensorflow::Tensor::~Tensor() + 36
    * thread #3, queue = 'com.apple.main-thread', stop reason = EXC_BAD_ACCESS (code=1, address=0x10)

The thread marked `*` with a stop reason is the one that stopped the process.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "lldb"

_THREAD = re.compile(r"[ \t]*(\*)?[ \t]*thread #(\d{1,7})(.*)")
_FRAME = re.compile(r"[ \t]*\*?[ \t]*frame #(\d{1,6}): (0x[0-9a-fA-F]{1,16})(?: ([^`\s]{1,300})`(.*))?")
_TID = re.compile(r"tid = (0x[0-9a-fA-F]{1,16}|\d{1,9})")
_NAME = re.compile(r"name = '([^']{0,200})'")
_SIGNAL = re.compile(r"stop reason = signal (SIG[A-Z]{2,8})")
_EXC = re.compile(r"stop reason = (EXC_[A-Z_]{2,40})(?: \(code=\d+, address=(0x[0-9a-fA-F]{1,16})\))?")
_FAULT_ADDRESS = re.compile(r"fault address: (0x[0-9a-fA-F]{1,16})")
_AT = re.compile(r"(.*) at ([^\s:]{1,500}):(\d{1,9})(?::\d{1,6})?")
_OFFSET = re.compile(r"(.*) \+ (\d{1,9})")
# Mach exceptions and the POSIX signal each becomes.
_EXCEPTIONS = {"EXC_BAD_ACCESS": "SIGSEGV", "EXC_BAD_INSTRUCTION": "SIGILL", "EXC_ARITHMETIC": "SIGFPE", "EXC_CRASH": "SIGABRT", "EXC_BREAKPOINT": "SIGTRAP"}


def _strip_arguments(function: str) -> str:
    """'f(x=1, y=<unavailable>)' -> 'f': lldb shows argument values for frames with debug info."""
    k = fd.argument_list_start(function)
    return function[:k] if k is not None and "=" in function[k:] else function
    depth = 0
    for k in range(len(function) - 1, -1, -1):
        c = function[k]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                return function[:k] if "=" in function[k:] else function
    return function


def _frame(pc: str, module: str | None, rest: str | None) -> fd.model.Frame:
    function = file = None
    line = offset = None
    inlined = False
    if rest:
        rest = rest.strip()
        m = _AT.fullmatch(rest)
        if m:
            rest, file, line = m.group(1), m.group(2), int(m.group(3))
        m = _OFFSET.fullmatch(rest)
        if m:
            rest, offset = m.group(1), int(m.group(2))
        if " [inlined] " in rest:
            # "caller [inlined] callee": this frame is the callee, inlined into the caller.
            rest = rest.rsplit(" [inlined] ", 1)[1]
            inlined = True
        function = _strip_arguments(rest)
        if function.startswith("___lldb_unnamed_symbol"):
            function = None
    return fd.native_frame(function, pc=fd.hex_int(pc), module=module, file=file, line=line, offset=offset, inlined=inlined)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    thread: fd.TextThread | None = None
    for i, line in enumerate(lines):
        if claimed[i] or not line or ("thread #" not in line and "frame #" not in line):
            continue
        m = _FRAME.match(line)
        if m and thread is not None:
            thread.add(_frame(m.group(2), m.group(3), m.group(4)))
            claimed[i] = 1
            continue
        m = _THREAD.match(line)
        if not m:
            continue
        if finding is None:
            finding = fd.Finding(FORMAT, i)
        rest = m.group(3)
        stopped = "stop reason = " in rest
        tid = _TID.search(rest)
        name = _NAME.search(rest)
        thread = fd.TextThread(
            number=int(m.group(2)),
            tid=int(tid.group(1), 0) if tid else None,
            name=name.group(1) if name else None,
            crashed=bool(m.group(1)) and stopped,
        )
        if thread.crashed:
            sig = _SIGNAL.search(rest)
            exc = _EXC.search(rest)
            address = _FAULT_ADDRESS.search(rest)
            if sig:
                finding.set_signal(signals.normalize_name(sig.group(1)), fd.SIGNAL_NAMED,
                                   address=fd.hex_int(address.group(1)) if address else None)
            elif exc and exc.group(1) in _EXCEPTIONS:
                finding.set_signal(_EXCEPTIONS[exc.group(1)], fd.SIGNAL_NAMED,
                                   address=fd.hex_int(exc.group(2)) if exc.group(2) else None)
        if not finding.add_thread(thread):
            thread = None
        claimed[i] = 1
    if finding is None or not any(t.frames for t in finding.threads):
        return []
    for t in finding.threads:
        if t.dropped_frames:
            finding.warnings.append(f"lldb thread #{t.number}: only the first {limits.MAX_FRAMES_PER_THREAD} frames were kept")
    return [finding]
