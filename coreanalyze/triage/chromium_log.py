"""Chromium / V8 fatal output: the FATAL log line, base::debug::StackTrace, the crash handler.

    [24256:24256:0324/233644:FATAL:latency_info.cc(299)] Check failed: !terminated_.
    #0 0x7f48a3cf4141 __interceptor_backtrace
    #1 0x7f48a51f99e0 base::debug::StackTrace::StackTrace()
     logging::LogMessage::Flush [0x00007FF9B2F592E7+983] (base/logging.cc:739)       (Windows)
    Received signal 11 SEGV_MAPERR 7f6b0c580000                       (the crash handler)
    ==== C stack trace ===============================
    [0x7f6b13882bf1]
    [end of stack trace]
    # Fatal error in ../../src/flags/flags.cc, line 856                                   (V8)
    # Check failed: iteration++ < 1000 (1000 vs. 1000).

A FATAL line (CHECK, DCHECK, NOTREACHED, LOG(FATAL)) is a check failure whatever its text; the
stack printed after it is the thread that logged.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "chromium-log"

_FATAL = re.compile(r"\[[\d:./]{1,60}:FATAL:([\w./+-]{1,300})\((\d{1,9})\)\] ?(.*)")
_V8_FATAL = re.compile(r"^#\s*Fatal error in (.{1,300}?), line (\d{1,9})\s*$")
_V8_FATAL_NO_FILE = re.compile(r"^#\s*Fatal error in (.{1,300})$")
_V8_MESSAGE = re.compile(r"^#\s*(\S.{0,2000})$")
_POSIX_FRAME = re.compile(r"^#(\d{1,6}) (0x[0-9a-fA-F]{1,16}) (?!in )(\S.*)$")
_WIN_FRAME = re.compile(r"^(\S.{0,2000}?) \[(0x[0-9a-fA-F]{1,16})\+(\d{1,9})\](?: \((.{1,400}):(\d{1,9})\))?$")
_BARE_FRAME = re.compile(r"^\[(0x[0-9a-fA-F]{1,16})\]$")
_RECEIVED = re.compile(r"^Received signal (\d{1,2})(?: ([A-Z_]{3,20}))?(?: ([0-9a-fA-F]{1,16}))?")
_MODULE_OFFSET = re.compile(r"^(\S+\.so(?:\.\d+)*)(?:\+0x[0-9a-fA-F]+)?$")


def _posix_frame(rest: str, pc: int | None):
    rest = rest.strip()
    m = _MODULE_OFFSET.match(rest)
    if m:
        return fd.native_frame(None, pc=pc, module=m.group(1))
    return fd.native_frame(re.sub(r"\(\)$", "", rest) if rest.endswith("()") and "(" not in rest[:-2] else rest, pc=pc)


def _read_frames(lines: list[str], i: int, claimed: bytearray, thread: fd.TextThread) -> int:
    n = len(lines)
    seen_posix: set[str] = set()
    while i < n:
        s = lines[i].strip()
        if not s:
            break
        m = _POSIX_FRAME.match(s)
        if m:
            # Chromium prints "#0" twice when it cannot symbolize the first frame: keep one.
            if m.group(1) in seen_posix and m.group(1) == "0":
                claimed[i] = 1
                i += 1
                continue
            seen_posix.add(m.group(1))
            thread.add(_posix_frame(m.group(3), fd.hex_int(m.group(2))))
        elif (w := _WIN_FRAME.match(s)) is not None:
            thread.add(fd.native_frame(w.group(1).strip(), pc=fd.hex_int(w.group(2)), file=w.group(4), line=int(w.group(5)) if w.group(5) else None))
        elif (b := _BARE_FRAME.match(s)) is not None:
            thread.add(fd.native_frame(None, pc=fd.hex_int(b.group(1))))
        elif s.startswith("[end of stack trace]") or s.startswith("===="):
            claimed[i] = 1
            i += 1
            if s.startswith("[end"):
                break
            continue
        else:
            break
        claimed[i] = 1
        i += 1
    return i


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n and len(found) < limits.MAX_BLOCKS_PER_FORMAT:
        if claimed[i]:
            i += 1
            continue
        s = lines[i].strip()
        m = _FATAL.search(s) if ":FATAL:" in s else None
        v = _V8_FATAL.match(s) or _V8_FATAL_NO_FILE.match(s) if s.startswith("#") and "Fatal error in" in s else None
        r = _RECEIVED.match(s) if s.startswith("Received signal") else None
        if not (m or v or r):
            i += 1
            continue
        finding = fd.Finding(FORMAT, i)
        thread = fd.TextThread(crashed=True)
        claimed[i] = 1
        i += 1
        if m:
            finding.add_message(fd.MESSAGE_CHECK_FAILURE, f"{m.group(1)}:{m.group(2)}] {m.group(3).strip()}")
            finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
        elif v:
            where = f"{v.group(1)}:{v.group(2)}" if v.lastindex and v.lastindex >= 2 else v.group(1)
            text = []
            while i < n and lines[i].strip().startswith("#") and not _POSIX_FRAME.match(lines[i].strip()):
                mm = _V8_MESSAGE.match(lines[i].strip())
                if mm:
                    text.append(mm.group(1).strip())
                claimed[i] = 1
                i += 1
            finding.add_message(fd.MESSAGE_CHECK_FAILURE, f"{where.rsplit('/', 1)[-1]}] {' '.join(text) or 'Fatal error'}")
            finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
        else:
            name = signals.normalize_name(r.group(1))
            address = int(r.group(3), 16) if r.group(3) else None
            finding.set_signal(name, fd.SIGNAL_NAMED, address=address, code_name=r.group(2))
        # The stack, right after (a few unrelated lines may sit in between).
        j = i
        while j < n and j - i < 4 and not (_POSIX_FRAME.match(lines[j].strip()) or _WIN_FRAME.match(lines[j].strip()) or _BARE_FRAME.match(lines[j].strip()) or lines[j].strip().startswith("====")):
            j += 1
        if j < n and j - i < 4 and not claimed[j]:
            i = _read_frames(lines, j, claimed, thread)
        finding.add_thread(thread)
        found.append(finding)
    return found
