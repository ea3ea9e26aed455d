"""Valgrind (memcheck) reports.

    ==4242== Invalid read of size 4
    ==4242==    at 0x4C2F0B1: tflite::ops::builtin::Eval(TfLiteContext*, TfLiteNode*) (conv.cc:312)
    ==4242==    by 0x4C30000: tflite::Subgraph::Invoke() (in /usr/lib/libtensorflowlite.so)
    ==4242==  Address 0x0 is not stack'd, malloc'd or (recently) free'd
    ==4242== Process terminating with default action of signal 11 (SIGSEGV)
    ==4242==  Access not within mapped region at address 0x0

The stack under "Process terminating" (else under the first error) is the crash; the error's
own words ("Invalid read of size 4", "Invalid free()") are the report's detail.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "valgrind"

_PREFIX = re.compile(r"^==(\d{1,9})==\s?(.*)$")
_FRAME = re.compile(r"^(?:at|by) 0x([0-9A-Fa-f]{1,16}): (.*?)(?: \((?:in )?([^()]*)\))?$")
_ERROR = re.compile(
    r"^(Invalid (?:read|write) of size \d+|Invalid free\(\) / delete / delete\[\] / realloc\(\)|Mismatched free\(\) / delete / delete \[\]"
    r"|Conditional jump or move depends on uninitialised value\(s\)|Use of uninitialised value of size \d+|Syscall param .{1,200}"
    r"|Jump to the invalid address stated on the next line|Source and destination overlap in .{1,100}|Argument '\w+' of function \w+ has a fishy.{0,60})"
)
_TERMINATING = re.compile(r"^Process terminating with default action of signal (\d{1,2}) \((SIG\w{2,8})\)")
_ACCESS = re.compile(r"^(Access not within mapped region|Bad permissions for mapped region|General Protection Fault|Non-existent physical address)(?: at address (0x[0-9A-Fa-f]{1,16}))?")
_CODE = {"Access not within mapped region": "SEGV_MAPERR", "Bad permissions for mapped region": "SEGV_ACCERR"}
# An invalid read/write's address that belongs to nothing the program allocated: where a run
# without valgrind takes its SIGSEGV (valgrind itself may go on, or the paste may stop here).
_WILD = re.compile(r"^Address (0x[0-9A-Fa-f]{1,16}) is not stack'd, malloc'd or (?:\(recently\) )?free'd")


def _frame(pc: str, function: str, where: str | None) -> fd.model.Frame:
    file = module = None
    line = None
    if where:
        m = re.fullmatch(r"(.+):(\d{1,9})", where)
        if m and not where.startswith("/"):
            file, line = m.group(1), int(m.group(2))
        else:
            module = where
    return fd.native_frame(None if function == "???" else function, pc=int(pc, 16), module=module, file=file, line=line)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    rows = []  # (index, pid, text) of every valgrind line
    for i, line in enumerate(lines):
        if not claimed[i] and line.startswith("=="):
            m = _PREFIX.match(line)
            if m:
                rows.append((i, int(m.group(1)), m.group(2).strip()))
    if not rows:
        return []
    finding = fd.Finding(FORMAT, rows[0][0])
    finding.pid = rows[0][1]
    first_error: fd.TextThread | None = None
    terminating: fd.TextThread | None = None
    current: fd.TextThread | None = None
    wild: int | None = None  # the first invalid access's address, when it is nobody's memory
    for i, _pid, text in rows:
        if (m := _ERROR.match(text)) is not None:
            current = fd.TextThread(crashed=True)
            if first_error is None:
                first_error = current
                finding.detail = m.group(1)
        elif (m := _TERMINATING.match(text)) is not None:
            current = terminating = fd.TextThread(crashed=True)
            finding.set_signal(signals.normalize_name(m.group(2)), fd.SIGNAL_NAMED)
        elif (m := _WILD.match(text)) is not None and current is first_error and wild is None:
            if (finding.detail or "").startswith("Invalid"):
                wild = fd.hex_int(m.group(1))
        elif (m := _ACCESS.match(text)) is not None and terminating is not None and finding.signal is not None:
            finding.set_signal(finding.signal.name, fd.SIGNAL_WITH_ADDRESS, address=fd.hex_int(m.group(2)), code_name=_CODE.get(m.group(1)))
        elif (m := _FRAME.match(text)) is not None and current is not None:
            current.add(_frame(m.group(1), m.group(2), m.group(3)))
        elif not text:
            current = None if current is not None and current.frames else current
        claimed[i] = 1
    if wild is not None and (finding.signal is None or (finding.signal.name == "SIGSEGV" and finding.signal.address is None)):
        finding.set_signal("SIGSEGV", fd.SIGNAL_WITH_ADDRESS, address=wild)
        if terminating is None:
            finding.warnings.append(f"valgrind's {finding.detail} at 0x{wild:x}, an address nothing owns: taken as the SIGSEGV a run without valgrind gets there")
    thread = terminating if terminating is not None and terminating.frames else first_error
    if thread is None or not thread.frames:
        return [finding] if finding.signal is not None else []
    if finding.detail and finding.detail.startswith(("Invalid free", "Mismatched free")):
        finding.add_message(fd.MESSAGE_ALLOCATOR, f"valgrind: {finding.detail}")
    finding.add_thread(thread)
    if thread.dropped_frames:
        finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} frames of the valgrind stack were kept")
    return [finding]
