"""The JVM's fatal error log (hs_err_pid*.log) and its console copy, for native code run from
Java (TensorFlow Java, TFLite in an Android app's unit tests, JNI libraries).

    #  SIGSEGV (0xb) at pc=0x00007f3a2b1c4e2d, pid=4242, tid=4243
    # Problematic frame:
    # C  [libtensorflow_framework.so.2+0x1234e2d]  tensorflow::Tensor::~Tensor()+0x1d
    Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)
    C  [libtensorflow_framework.so.2+0x1234e2d]  tensorflow::Tensor::~Tensor()+0x1d
    j  org.tensorflow.Session.run(...)+0
    siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000000

The native frames (C: native code, V: the VM) are the crashing thread; Java frames below them
are its callers and are kept as frames without a library.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "jvm-hs-err"

# The console copy users paste often lost its "#" margin: "SIGSEGV (0xb) at pc=0x..., pid=..., tid=...".
# Another thread's error can cut in: "SIGSEGV (0xb)[thread 49923 also had an error] at pc=0x..." with
# ", pid=..., tid=..." on the next line.
_HEADER = re.compile(
    r"^(?:[#-]\s+)?(SIG[A-Z]{2,8}) \(0x[0-9a-fA-F]{1,2}\)(?:\[thread \d{1,12} also had an error\])? at pc=(0x[0-9a-fA-F]{1,16})"
    r"(?:, pid=(\d{1,9}), tid=(\d{1,12}))?"
)
# A signal someone raised names its sender: "si_code: -6 (SI_TKILL), sent from pid: 4242 (current process)".
_SIGINFO = re.compile(
    r"^siginfo: si_signo: (\d{1,2}) \((SIG\w{2,8})\), si_code: (-?\d{1,4}) \((\w{1,30})\)"
    r"(?:, si_addr: (0x[0-9a-fA-F]{1,16}))?(?:, sent from pid: (\d{1,9}))?"
)
_FRAME = re.compile(r"^(?:[#-]\s+)?([CVvJjA])\s+(?:\[([^\]+]{1,300})\+(0x[0-9a-fA-F]{1,16})\]\s*(.*)|(\S.*))$")
_NATIVE_LIST = "Native frames:"
_OFFSET = re.compile(r"^(.*?)\+0x[0-9a-fA-F]{1,16}$")


def _frame(library: str | None, offset: str | None, rest: str | None) -> fd.model.Frame:
    rest = (rest or "").strip()
    m = _OFFSET.match(rest)
    name = (m.group(1) if m else rest) or None
    return fd.native_frame(name, pc=fd.hex_int(offset) if offset else None, module=library)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    problematic: fd.model.Frame | None = None
    thread = fd.TextThread(crashed=True)
    i, n = 0, len(lines)
    while i < n:
        s = lines[i].strip()
        if claimed[i] or not s:
            i += 1
            continue
        if (m := _HEADER.match(s)) is not None:
            finding = finding or fd.Finding(FORMAT, i)
            if m.group(3):
                finding.pid, thread.tid = int(m.group(3)), int(m.group(4))
            finding.set_signal(signals.normalize_name(m.group(1)), fd.SIGNAL_NAMED)
            claimed[i] = 1
        elif s.lstrip("#- ").startswith("Problematic frame:") and i + 1 < n:
            m = _FRAME.match(lines[i + 1].strip())
            if m and m.group(2):
                problematic = _frame(m.group(2), m.group(3), m.group(4))
                # The problematic frame alone is a report too (the header may be lost or torn).
                finding = finding or fd.Finding(FORMAT, i)
                claimed[i] = claimed[i + 1] = 1
                i += 1
        elif s.startswith(_NATIVE_LIST):
            finding = finding or fd.Finding(FORMAT, i)
            claimed[i] = 1
            i += 1
            while i < n and (m := _FRAME.match(lines[i].strip())) is not None:
                if m.group(1) != "v":  # "v ~StubRoutines::call_stub": the VM's glue, no code of anyone's
                    thread.add(_frame(m.group(2), m.group(3), m.group(4) or m.group(5)))
                claimed[i] = 1
                i += 1
            continue
        elif s.startswith("siginfo:") and finding is not None and (m := _SIGINFO.match(s)) is not None:
            sender = int(m.group(6)) if m.group(6) else None
            finding.set_signal(
                signals.normalize_name(m.group(2)), fd.SIGNAL_WITH_ADDRESS, address=fd.hex_int(m.group(5)), code=int(m.group(3)), code_name=m.group(4), sender_pid=sender
            )
            claimed[i] = 1
        i += 1
    if finding is None:
        return []
    if not thread.frames and problematic is not None:
        thread.add(problematic)
    if thread.dropped_frames:
        finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} native frames were kept")
    finding.add_thread(thread)
    return [finding]
