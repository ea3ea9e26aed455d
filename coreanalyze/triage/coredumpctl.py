"""systemd-coredump's report (`coredumpctl info`, or the journal's "dumped core" message).

               PID: 4006 (python3)
            Signal: 11 (SEGV)
      Command Line: python3 train.py
        Executable: /usr/bin/python3.11
                    Stack trace of thread 4006:
                    #0  0x00007f3a2b1c4e2d _ZN10tensorflow6TensorD1Ev (libtensorflow_framework.so.2 + 0x1234e2d)
                    #1  0x00007f3a2b000000 n/a (libc.so.6 + 0x8f2b0)

The first thread listed is the one that received the signal (systemd writes it first).
Also elfutils' `eu-stack` lines (`#0  0x00007f.. raise`, `TID 123:`).
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "coredumpctl"

_FRAME = re.compile(r"[ \t]*#(\d{1,6})[ \t]+(0x[0-9a-fA-F]{1,16}) (\S.*)")
_MODULE = re.compile(r"\(([^()]{1,1000}?) \+ (0x[0-9a-fA-F]{1,16})\)")
_THREAD = re.compile(r"[ \t]*(?:Stack trace of thread|TID) (\d{1,9}):")
_SIGNAL = re.compile(r"[ \t]*Signal: (\d{1,2}) \((\w+)\)")
_PID = re.compile(r"[ \t]*PID: (\d{1,9})(?: \(.*\))?$")
_CMDLINE = re.compile(r"[ \t]*Command Line: (.*)")
_EXECUTABLE = re.compile(r"[ \t]*Executable: (\S.*)")


def _frame(address: str, rest: str) -> fd.model.Frame:
    module = None
    if rest.endswith(")"):
        cut = rest.rfind(" (")
        if cut >= 0:
            m = _MODULE.fullmatch(rest[cut + 1 :])
            if m:
                module = m.group(1)
                rest = rest[:cut]
    # eu-stack may add " - /path/lib.so" after the name.
    if " - /" in rest:
        rest, _, module_path = rest.partition(" - ")
        module = module or module_path.strip()
    return fd.native_frame(rest.strip(), pc=fd.hex_int(address), module=module)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    thread: fd.TextThread | None = None
    fields: dict = {}
    for i, line in enumerate(lines):
        if claimed[i] or not line:
            continue
        s = line.lstrip()
        c = s[:1]
        if c == "#" and thread is not None:
            m = _FRAME.match(s)
            # gdb writes "0x.. in func"; these formats never have " in " after the address.
            if m and not m.group(3).startswith("in "):
                thread.add(_frame(m.group(2), m.group(3)))
                claimed[i] = 1
                continue
        elif c in ("S", "T") and (s.startswith("Stack trace of thread") or s.startswith("TID ")):
            m = _THREAD.match(s)
            if m:
                if finding is None:
                    finding = fd.Finding(FORMAT, i)
                thread = fd.TextThread(tid=int(m.group(1)), crashed=not finding.threads)
                if not finding.add_thread(thread):
                    thread = None
                claimed[i] = 1
                continue
        elif c in ("S", "P", "C", "E"):
            for key, pattern in (("signal", _SIGNAL), ("pid", _PID), ("cmdline", _CMDLINE), ("exe", _EXECUTABLE)):
                m = pattern.match(s)
                if m:
                    fields.setdefault(key, (m, i))
                    break
        thread = None if not s.startswith("#") else thread
    if finding is None or not any(t.frames for t in finding.threads):
        return []
    if "signal" in fields:
        m, line_no = fields["signal"]
        finding.set_signal(signals.normalize_name(m.group(1)), fd.SIGNAL_NAMED)
        finding.line = min(finding.line, line_no)
    if "pid" in fields:
        finding.pid = int(fields["pid"][0].group(1))
    if "cmdline" in fields:
        finding.cmdline = fields["cmdline"][0].group(1).strip()
    if "exe" in fields:
        finding.executable = fields["exe"][0].group(1).strip()
    for t in finding.threads:
        if t.dropped_frames:
            finding.warnings.append(f"coredumpctl thread {t.tid}: only the first {limits.MAX_FRAMES_PER_THREAD} frames were kept")
    return [finding]
