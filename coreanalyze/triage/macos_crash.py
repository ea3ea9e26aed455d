"""macOS crash reports (the text form of .crash/.ips files) and macOS backtrace_symbols().

    Exception Type:  EXC_BAD_ACCESS (SIGSEGV)
    Exception Codes: KERN_INVALID_ADDRESS at 0x0000000000000010
    Crashed Thread:  12

    Thread 12 Crashed:: tf_inter_op
    0   libtensorflow_framework.2.dylib  0x000000013a2b1c4e tensorflow::Tensor::~Tensor() + 46
    1   libtensorflow_cc.2.dylib         0x0000000139f0a1b2 0x139000000 + 15769010

TensorFlow's stack-trace handler prints the same columns on macOS
(`3   libomp.dylib   0x00000001585d8e77 _ZL27__kmp_hyper_barrier_release... + 151`).
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "macos-crash"

_FRAME = re.compile(r"[ \t]*(\d{1,6})[ \t]+(\S{1,300}?)[ \t]+(0x[0-9a-fA-F]{1,16})[ \t]+(.*)")
_THREAD = re.compile(r"[ \t]*Thread (\d{1,7})( Crashed)?:{1,2}[ \t]*(.*)")
_EXCEPTION = re.compile(r"[ \t]*Exception Type:[ \t]+(\w{1,40})(?:[ \t]+\((SIG[A-Z]{2,8})\))?")
_ADDRESS = re.compile(r"[ \t]*Exception (?:Codes|Subtype):.* at (0x[0-9a-fA-F]{1,16})")
_CODES = re.compile(r"[ \t]*Exception (?:Codes|Subtype):[ \t]*(\w{1,40})")
_CRASHED = re.compile(r"[ \t]*Crashed Thread:[ \t]+(\d{1,7})")
_OFFSET = re.compile(r"(.*) \+ (\d{1,12})(?: \(([^():\s]{1,300}):(\d{1,9})\))?")
_UNSYMBOLIZED = re.compile(r"0x[0-9a-fA-F]{1,16} \+ \d{1,12}")
_RECEIVED = re.compile(r"\*\*\* Received signal (\d{1,2}) \*\*\*")


def _frame(image: str, pc: str, rest: str) -> fd.model.Frame:
    rest = rest.strip()
    function = file = None
    line = offset = None
    if _UNSYMBOLIZED.fullmatch(rest):
        function = None
    else:
        m = _OFFSET.fullmatch(rest)
        if m:
            function, offset = m.group(1), int(m.group(2))
            if m.group(3):
                file, line = m.group(3), int(m.group(4))
        else:
            function = rest
    if image == "???":
        image = None
    return fd.native_frame(function, pc=fd.hex_int(pc), module=image, file=file, line=line, offset=offset)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    thread: fd.TextThread | None = None
    last_index = -1
    crashed_number: int | None = None
    signal_name = None
    code_name = None
    address = None
    for i, line in enumerate(lines):
        if claimed[i] or not line:
            continue
        s = line.lstrip()
        c = s[:1]
        if c.isdigit() and "0x" in s:
            m = _FRAME.match(s)
            if m and m.group(2) != "0x" and not m.group(2).startswith("0x"):
                index = int(m.group(1))
                if thread is None or index <= last_index:
                    if index != 0:
                        continue
                    # A numbered stack with no thread header (TF's handler, or a pasted part).
                    if finding is None:
                        finding = fd.Finding(FORMAT, i)
                    thread = fd.TextThread(crashed=not any(t.crashed for t in finding.threads))
                    if not finding.add_thread(thread):
                        thread = None
                        continue
                last_index = index
                thread.add(_frame(m.group(2), m.group(3), m.group(4)))
                claimed[i] = 1
                continue
        elif c == "T" and s.startswith("Thread "):
            m = _THREAD.match(s)
            if m and (m.group(2) or s.rstrip().endswith(":") or "::" in s):
                if finding is None:
                    finding = fd.Finding(FORMAT, i)
                number = int(m.group(1))
                name = m.group(3).strip() or None
                if name and name.startswith("Dispatch queue:"):
                    name = name.split(":", 1)[1].strip() or None
                thread = fd.TextThread(number=number, name=name, crashed=bool(m.group(2)))
                last_index = -1
                if not finding.add_thread(thread):
                    thread = None
                claimed[i] = 1
                continue
        elif c == "E" and s.startswith("Exception "):
            m = _EXCEPTION.match(s)
            if m:
                named = signals.normalize_name(m.group(2)) if m.group(2) else None
                signal_name = named or signals.MACH_EXCEPTIONS.get(m.group(1)) or signal_name
                continue
            m = _CODES.match(s)
            if m and m.group(1) in signals.MACH_CODES:
                coded_signal, code_name = signals.MACH_CODES[m.group(1)]
                signal_name = signal_name if signal_name in ("SIGBUS",) and coded_signal == "SIGSEGV" else coded_signal
            m = _ADDRESS.match(s)
            if m:
                address = fd.hex_int(m.group(1))
                continue
            if code_name is not None:
                continue
        elif c == "C" and s.startswith("Crashed Thread:"):
            m = _CRASHED.match(s)
            if m:
                crashed_number = int(m.group(1))
            continue
        elif c == "*" and s.startswith("*** Received signal"):
            m = _RECEIVED.match(s)
            if m:
                signal_name = signals.normalize_name(m.group(1))
                continue
        thread = None
    if finding is None:
        return []
    # A lone numbered line is more likely a list in prose than a stack.
    finding.threads = [t for t in finding.threads if t.number is not None or len(t.frames) >= 2]
    if not any(t.frames for t in finding.threads):
        return []
    if crashed_number is not None:
        for t in finding.threads:
            t.crashed = t.number == crashed_number
    if signal_name:
        code = 0x80 if code_name == "SI_KERNEL" else None  # SI_KERNEL
        finding.set_signal(signal_name, fd.SIGNAL_NAMED, address=None if code_name == "SI_KERNEL" else address, code=code, code_name=code_name)
    for t in finding.threads:
        if t.dropped_frames:
            finding.warnings.append(f"macOS thread {t.number}: only the first {limits.MAX_FRAMES_PER_THREAD} frames were kept")
    return [finding]
