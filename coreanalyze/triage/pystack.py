"""pystack's text output (`pystack core CORE [EXE] [--native]`, `pystack remote PID`).

    The process died due a segmentation fault accessing address: 0x10
    Traceback for thread 9339 (python3) [Has the GIL] (most recent call last):
        (C) File "???", line 0, in _start (python3.11)
        (C) File "Modules/main.c", line 710, in pymain_main (inlined) (libpython3.11.so.1.0)
        (Python) File "/app/train.py", line 22, in crash_now
            return ctypes.string_at(0x10, 8)
          Arguments:
            address: 16
        (C) File "Objects/bytesobject.c", line 142, in PyBytes_FromStringAndSize (libpython3.11.so.1.0)

Frames are printed outermost first; they are stored innermost first. The thread ids are
kernel tids. pystack does not mark the thread that crashed: it is guessed (the thread
holding the GIL and not waiting), with a warning when there is more than one thread.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "pystack"

_TRACEBACK = re.compile(r"[ \t]*Traceback for thread (\d{1,9})(.*)\(most recent call last\):")
_PYTHON = re.compile(r'[ \t]*\(Python\) File "(.*)", line (-?\d{1,9}), in (.*)')
_NATIVE = re.compile(r'[ \t]*\(C\) File "(.*)", line (\d{1,9}), in (.*)')
_DIED_ADDRESS = re.compile(r"The process died due a segmentation fault accessing address: (0x[0-9a-fA-F]{1,16})")
_DIED_SIGNAL = re.compile(r"The process died due receiving signal (\w+)(?: sent by pid (\d{1,9}))?")
_PID = re.compile(r"[ \t]*pid: (\d{1,9}) ppid: \d+")
_EXECUTABLE = re.compile(r"[ \t]*executable: (\S+) arguments: (.*)")
_STATUS = re.compile(r"\[([^\]]*)\]\s*$")
_LOCAL = re.compile(r"[ \t]+(\w{1,200}): (.*)")
_MAX_LOCALS = 64


class _Thread:
    def __init__(self, tid: int, name: str | None, status: str):
        self.thread = fd.TextThread(tid=tid, name=name, holds_gil="Has the GIL" in status)
        self.outer_first: list[fd.model.Frame] = []


def _c_frame(file: str, line: int, rest: str) -> fd.model.Frame:
    module = None
    inlined = False
    if rest.endswith(")"):
        cut = rest.rfind(" (")
        if cut >= 0:
            module = rest[cut + 2 : -1]
            rest = rest[:cut]
    if rest.endswith(" (inlined)"):
        inlined = True
        rest = rest[: -len(" (inlined)")]
    if file in ("???", "") or file == module:
        file = None
    if module in ("???", ""):  # pystack's word for a pc in no mapped file
        module = None
    return fd.native_frame(rest, module=module, file=file, line=line or None, inlined=inlined)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    threads: list[_Thread] = []
    current: _Thread | None = None
    last_python: fd.model.Frame | None = None
    in_locals = False
    header: dict = {}
    for i, line in enumerate(lines):
        if claimed[i] or not line:
            continue
        s = line.lstrip()
        c = s[:1]
        if c == "(":
            if current is not None:
                m = _PYTHON.match(s) if s.startswith("(Python)") else None
                if m:
                    frame = fd.python_frame(m.group(3).strip(), m.group(1), max(0, int(m.group(2))))
                    current.outer_first.append(frame)
                    last_python = frame
                    in_locals = False
                    claimed[i] = 1
                    continue
                m = _NATIVE.match(s) if s.startswith("(C)") else None
                if m:
                    current.outer_first.append(_c_frame(m.group(1), int(m.group(2)), m.group(3).strip()))
                    last_python = None
                    in_locals = False
                    claimed[i] = 1
                    continue
        elif c == "T" and s.startswith("Traceback for thread"):
            m = _TRACEBACK.match(s)
            if m:
                if finding is None:
                    finding = fd.Finding(FORMAT, i)
                if len(threads) >= limits.MAX_THREADS:
                    finding.dropped_threads += 1
                    current = None
                    continue
                middle = m.group(2).strip()
                status_m = _STATUS.search(middle)
                status = status_m.group(1) if status_m else ""
                name_part = middle[: status_m.start()].strip() if status_m else middle
                name = name_part[1:-1] if name_part.startswith("(") and name_part.endswith(")") else None
                current = _Thread(int(m.group(1)), name or None, status)
                threads.append(current)
                last_python = None
                claimed[i] = 1
                continue
        elif c == "T" and s.startswith("The process died"):
            m = _DIED_ADDRESS.search(s)
            if m:
                header["signal"] = ("SIGSEGV", fd.hex_int(m.group(1)), None)
            else:
                m = _DIED_SIGNAL.search(s)
                if m:
                    header["signal"] = (signals.normalize_name(m.group(1)), None, int(m.group(2)) if m.group(2) else None)
            header.setdefault("line", i)
            claimed[i] = 1
            continue
        elif c == "p" and s.startswith("pid: "):
            m = _PID.match(s)
            if m:
                header["pid"] = int(m.group(1))
                header.setdefault("line", i)
                continue
        elif c == "e" and s.startswith("executable: "):
            m = _EXECUTABLE.match(s)
            if m:
                header["executable"], header["cmdline"] = m.group(1), m.group(2).strip()
                continue
        if current is not None and line[:1] in (" ", "\t"):
            # Under a Python frame: its source line, or its Arguments:/Locals: section.
            if s in ("Arguments:", "Locals:"):
                in_locals = True
                claimed[i] = 1
                continue
            if last_python is not None:
                if in_locals:
                    m = _LOCAL.match(line)
                    if m:
                        if last_python.locals is None:
                            last_python.locals = {}
                        if len(last_python.locals) < _MAX_LOCALS:
                            last_python.locals[m.group(1)] = m.group(2)[:200]
                        claimed[i] = 1
                        continue
                elif last_python.source is None:
                    last_python.source = s[:500]
                    claimed[i] = 1
                    continue
        if current is not None and not s.startswith("* - Unable to merge"):
            current = None
            last_python = None
    if finding is None:
        return []
    for t in threads:
        for frame in reversed(t.outer_first):
            t.thread.add(frame)
        if t.thread.dropped_frames:
            finding.warnings.append(f"pystack thread {t.thread.tid}: only the innermost {limits.MAX_FRAMES_PER_THREAD} frames were kept")
        finding.add_thread(t.thread)
    if "signal" in header:
        name, address, sender = header["signal"]
        strength = fd.SIGNAL_WITH_ADDRESS if address is not None or sender is not None else fd.SIGNAL_NAMED
        finding.set_signal(name, strength, address=address, sender_pid=sender)
    finding.pid = header.get("pid")
    finding.executable = header.get("executable")
    finding.cmdline = header.get("cmdline")
    if "line" in header:
        finding.line = min(finding.line, header["line"])
    crashed, reason = fd.guess_crashed(finding.threads)
    if crashed is not None:
        crashed.crashed = True
        if len(finding.threads) > 1:
            finding.warnings.append(f"pystack does not mark the crashing thread; chose thread {crashed.tid} ({reason})")
    return [finding]
