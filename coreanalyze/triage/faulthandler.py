"""Python's faulthandler dump (also what Py_FatalError prints).

    Fatal Python error: Segmentation fault
    <blank>
    Thread 0x00007fc1bc0d26c0 (most recent call first):
      File "/app/worker.py", line 12 in wait_for_data
    <blank>
    Current thread 0x00007fc1bce63b80 (most recent call first):
      File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
    <blank>
    Extension modules: numpy.core._multiarray_umath, ... (total: 3)        (3.10+)

Also `Stack (most recent call first):` (one thread), `<no Python frame>`, `Garbage-collecting`,
and the C stack that Python 3.14 adds (`Current thread's C stack trace`, `Binary file "..",
at sym+0x.. [0x..]`). Thread ids are pthread_t values, not kernel tids.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "faulthandler"

_FATAL = re.compile(r"[ \t]*Fatal Python error: (.*)")
_WINDOWS = re.compile(r"[ \t]*Windows fatal exception: (.*)")
# Windows exceptions faulthandler names, and the POSIX signal each stands for.
_WINDOWS_EXCEPTIONS = {
    "access violation": "SIGSEGV",
    "stack overflow": "SIGSEGV",
    "in page error": "SIGBUS",
    "illegal instruction": "SIGILL",
    "int divide by zero": "SIGFPE",
    "float divide by zero": "SIGFPE",
}
_THREAD = re.compile(r"[ \t]*(Current thread|Thread) (0x[0-9a-fA-F]{1,16})(.*?)\(most recent call first\):?")
_STACK = re.compile(r"[ \t]*Stack \(most recent call first\):?")
_FILE = re.compile(r'[ \t]*File "(.*)", line (\d{1,9}|\?\?\?) in (\S.*)')
_C_STACK = re.compile(r"[ \t]*Current thread's C stack trace \(most recent call first\):?")
# The symbol is dladdr's (mangled), or a demangled C++ name with spaces where a tool rewrote it.
_BINARY = re.compile(r'[ \t]*Binary file "(.*)", at (.{0,4000}?)\+?(0x[0-9a-fA-F]{1,16})? \[(0x[0-9a-fA-F]{1,16})\]\s*$')
_TIMEOUT = re.compile(r"[ \t]*Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!")
_EXTENSIONS = re.compile(r"[ \t]*Extension modules: (.*)")
_THREAD_NAME = re.compile(r"\[([^\]]*)\]|\(([^)]*)\)")

# "Fatal Python error: Segmentation fault" names a signal; other texts are Py_FatalError
# messages, and Py_FatalError ends in abort().
_SKIP_LINES = ("<no Python frame>", "...", "Garbage-collecting", "<truncated rest of calls>")


class _Block:
    def __init__(self, line: int):
        self.finding = fd.Finding(FORMAT, line)
        self.thread: fd.TextThread | None = None
        self.native: fd.TextThread | None = None
        self.has_current = False
        self.timeout = False

    def start_thread(self, current: bool, pthread: int | None, name: str | None) -> None:
        t = fd.TextThread(pthread=pthread, name=name, crashed=current and not self.timeout)
        if current:
            self.has_current = True
        self.thread = t if self.finding.add_thread(t) else None

    def finish(self) -> fd.Finding:
        f = self.finding
        if not self.timeout and not self.has_current and len(f.threads) > 1 and (f.signal or f.messages):
            # Some builds (Windows, embedded interpreters) mark no thread as current.
            guess, reason = fd.guess_crashed(f.threads)
            if guess is not None:
                guess.crashed = True
                f.warnings.append(f"faulthandler marks no thread as current; took the one where {reason}")
        if self.native is not None and self.native.frames:
            # The C stack belongs to the current thread and is inner to its Python frames.
            current = f.crashed_thread()
            if current is None:
                current = fd.TextThread(crashed=not self.timeout)
                f.add_thread(current)
            merged = fd.TextThread()
            for fr in self.native.frames + current.frames:
                merged.add(fr)
            current.frames = merged.frames
        for t in f.threads:
            if t.dropped_frames:
                f.warnings.append(f"faulthandler thread: only the first {limits.MAX_FRAMES_PER_THREAD} frames were kept")
        if self.timeout:
            f.warnings.append("the faulthandler dump is a timeout dump (dump_traceback_later), not a crash")
        return f


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    blocks: list[_Block] = []
    block: _Block | None = None
    in_c_stack = False
    for i, line in enumerate(lines):
        if claimed[i] or not line:
            continue
        s = line.lstrip()
        c = s[:1]
        if c == "F":
            m = _FILE.match(s)
            if m and (block is None or (block.thread is None and not block.has_current)) and not in_c_stack:
                # A pasted part without its header (an IDE's console, a trimmed ticket): the
                # `line N in f` spelling is faulthandler's own, not a Python traceback's.
                block = block or _new_block(blocks, i)
                if block is None:
                    break
                block.start_thread(True, None, None)
            if m and block is not None and block.thread is not None and not in_c_stack:
                lineno = None if m.group(2) == "???" else int(m.group(2))
                block.thread.add(fd.python_frame(m.group(3).strip(), m.group(1), lineno))
                claimed[i] = 1
                continue
            m = _FATAL.match(s)
            if m:
                block = _new_block(blocks, i)
                if block is None:
                    break
                _fatal_header(block.finding, m.group(1).strip())
                claimed[i] = 1
                in_c_stack = False
                continue
        elif c == "W" and s.startswith("Windows fatal exception:"):
            m = _WINDOWS.match(s)
            block = _new_block(blocks, i)
            if block is None:
                break
            what = m.group(1).strip()
            name = _WINDOWS_EXCEPTIONS.get(what.lower())
            if name:
                block.finding.set_signal(name, fd.SIGNAL_NAMED)
            else:
                block.finding.add_message(fd.MESSAGE_FATAL_PYTHON, f"Windows fatal exception: {what}")
            claimed[i] = 1
            in_c_stack = False
            continue
        elif c in ("C", "T", "S"):
            m = _C_STACK.match(s)
            if m and block is not None:
                block.native = fd.TextThread()
                in_c_stack = True
                claimed[i] = 1
                continue
            m = _THREAD.match(s)
            if m:
                current = m.group(1) == "Current thread"
                if block is None or (current and block.has_current) or block.native is not None:
                    block = _new_block(blocks, i)
                    if block is None:
                        break
                block.start_thread(current, fd.hex_int(m.group(2)), _thread_name(m.group(3)))
                in_c_stack = False
                claimed[i] = 1
                continue
            if _STACK.match(s):
                if block is None or block.has_current:
                    block = _new_block(blocks, i)
                    if block is None:
                        break
                block.start_thread(True, None, None)
                in_c_stack = False
                claimed[i] = 1
                continue
            if c == "T" and _TIMEOUT.match(s):
                block = _new_block(blocks, i)
                if block is None:
                    break
                block.timeout = True
                claimed[i] = 1
                continue
        elif c == "B" and in_c_stack and block is not None and block.native is not None:
            m = _BINARY.match(s)
            if m:
                symbol = m.group(2) or None
                block.native.add(fd.native_frame(symbol, pc=fd.hex_int(m.group(4)), module=m.group(1)))
                claimed[i] = 1
                continue
        elif c == "E" and block is not None:
            m = _EXTENSIONS.match(s)
            if m:
                claimed[i] = 1
                continue
        if block is not None and s.startswith(_SKIP_LINES):
            claimed[i] = 1
            continue
        if block is not None and block.thread is not None:
            # Anything else ends the current thread's frames.
            block.thread = None
            in_c_stack = False
    return [b.finish() for b in blocks if b.finding.threads or b.finding.signal or b.finding.messages]


def _new_block(blocks: list[_Block], line: int) -> _Block | None:
    if len(blocks) >= limits.MAX_BLOCKS_PER_FORMAT:
        return None
    b = _Block(line)
    blocks.append(b)
    return b


def _thread_name(middle: str) -> str | None:
    middle = middle.strip()
    if not middle:
        return None
    m = _THREAD_NAME.search(middle)
    if not m:
        return None
    return (m.group(1) or m.group(2) or "").strip() or None


def _fatal_header(finding: fd.Finding, text: str) -> None:
    name = signals.from_description(text)
    if name is not None:
        finding.set_signal(name, fd.SIGNAL_NAMED)
        return
    # Py_FatalError(msg): CPython prints the message, then calls abort().
    finding.add_message(fd.MESSAGE_FATAL_PYTHON, f"Fatal Python error: {text}")
    finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
