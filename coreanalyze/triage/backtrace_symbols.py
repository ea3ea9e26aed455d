"""Stacks written by glibc's backtrace_symbols_fd(), as in-process crash handlers print them.

    *** Received signal 11 ***                                  (TensorFlow's StacktraceHandler)
    *** BEGIN MANGLED STACK TRACE ***
    /venv/.../libtensorflow_framework.so.2(+0xfe037d)[0x7faaa6db637d]
    /lib/x86_64-linux-gnu/libc.so.6(__libc_malloc+0x60)[0x7faac511fae0]
    /venv/bin/python[0x400ba2]
    *** END MANGLED STACK TRACE ***
    *** Begin stack trace ***                                    (the same, demangled names only)
        tsl::CurrentStackTrace()
    *** End stack trace ***

A run of at least two such lines is a stack; with TensorFlow's markers around it, it is
the stack of the thread that received the signal.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "backtrace-symbols"

# path(symbol+0xoff)[0xaddr] | path(+0xoff)[0xaddr] | path[0xaddr]
_LINE = re.compile(r"[ \t]*([^\s()\[\]]{1,1000})(?:\(([^()\s]{0,4000})\))?[ \t]*\[(0x[0-9a-fA-F]{1,16})\]")
_RECEIVED = re.compile(r"\*\*\* Received signal (\d{1,2}) \*\*\*")
_BEGIN_NAMES = "*** Begin stack trace ***"
_END_NAMES = "*** End stack trace ***"
_HANDLER_FRAMES = ("StacktraceHandler", "SafePrintStackTrace", "CurrentStackTrace")
_MIN_FRAMES = 2
_TRAMPOLINE_SEARCH = 4


def _frame(m: re.Match) -> fd.model.Frame:
    module, symbol, address = m.group(1), m.group(2) or "", m.group(3)
    name, _, offset = symbol.rpartition("+")
    if not _:
        name, offset = symbol, ""
    return fd.native_frame(
        name or None,
        pc=fd.hex_int(address),
        module=module,
        offset=fd.hex_int(offset) if name and offset else None,
    )


def frame_of(text: str) -> fd.model.Frame | None:
    """One backtrace_symbols() line as a frame (other crash handlers print the same lines)."""
    m = _LINE.fullmatch(text.rstrip())
    return _frame(m) if m else None


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    signal_name: str | None = None
    signal_line = -1
    i, n = 0, len(lines)
    while i < n:
        if claimed[i]:
            i += 1
            continue
        s = lines[i].strip()
        if s.startswith("*** Received signal"):
            m = _RECEIVED.match(s)
            if m:
                signal_name = signals.normalize_name(m.group(1))
                signal_line = i
                claimed[i] = 1
                i += 1
                continue
        if s.startswith("*** BEGIN MANGLED") or s.startswith("*** END MANGLED"):
            claimed[i] = 1
            i += 1
            continue
        if s.startswith(_BEGIN_NAMES):
            # The demangled copy of a stack; useful only when the mangled one is missing.
            j = i + 1
            names: list[str] = []
            while j < n and j - i < 4 * limits.MAX_FRAMES_PER_THREAD and not lines[j].strip().startswith(_END_NAMES):
                if lines[j].strip():
                    names.append(lines[j].strip())
                j += 1
            if found and found[-1].line >= signal_line >= 0 or (found and signal_line < 0):
                for k in range(i, min(j + 1, n)):
                    claimed[k] = 1
                i = j + 1
                continue
            if names:
                finding = _new_finding(found, i, signal_name, signal_line)
                if finding is None:
                    break
                thread = finding.threads[0]
                for name in names:
                    thread.add(fd.native_frame(name))
                for k in range(i, min(j + 1, n)):
                    claimed[k] = 1
            i = j + 1
            continue
        if s.endswith("]") and "[0x" in s:
            run: list[re.Match] = []
            j = i
            while j < n and not claimed[j]:
                m = _LINE.fullmatch(lines[j].rstrip())
                if not m:
                    break
                run.append(m)
                j += 1
            if len(run) >= _MIN_FRAMES:
                finding = _new_finding(found, i, signal_name, signal_line)
                if finding is None:
                    break
                frames = [_frame(m) for m in run[: limits.MAX_FRAMES_PER_THREAD]]
                thread = finding.threads[0]
                if finding.signal is not None:
                    frames = _mark_trampoline(frames)
                for f in fd.lay_out_handler_frames(frames, _HANDLER_FRAMES):
                    thread.add(f)
                if len(run) > limits.MAX_FRAMES_PER_THREAD:
                    finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} frames of the stack were kept")
                for k in range(i, j):
                    claimed[k] = 1
                i = j
                continue
        i += 1
    return found


def _mark_trampoline(frames: list[fd.model.Frame]) -> list[fd.model.Frame]:
    """Printed from inside a signal handler: put `<signal handler called>` where the
    handler's frames end. The kernel's return trampoline (__restore_rt) has no exported
    symbol and lives in libc (libpthread before glibc 2.34): "libc.so.6(+0x42520)".
    """
    if any(f.function and any(h in f.function for h in _HANDLER_FRAMES) for f in frames):
        return frames  # lay_out_handler_frames finds the handler by name
    for k, f in enumerate(frames[:_TRAMPOLINE_SEARCH]):
        base = (f.module or "").rsplit("/", 1)[-1]
        if f.function is None and k > 0 and base.startswith(("libc.so", "libpthread.so", "libc-")):
            return frames[:k] + [fd.signal_handler_frame()] + frames[k + 1 :]
    return frames


def _new_finding(found: list[fd.Finding], line: int, signal_name: str | None, signal_line: int) -> fd.Finding | None:
    if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
        return None
    finding = fd.Finding(FORMAT, line)
    if signal_name is not None and 0 <= signal_line <= line:
        finding.set_signal(signal_name, fd.SIGNAL_NAMED)
    finding.add_thread(fd.TextThread(crashed=True))
    found.append(finding)
    return finding
