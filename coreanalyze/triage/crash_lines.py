"""Single lines that state a crash in formats no other parser reads; the last parser to run,
so it sees only lines nobody claimed (and claims none: the line rules read them too).

    qemu: uncaught target signal 6 (Aborted) - core dumped         (a binary run under qemu-user)
    ...so：signal 7 (SIGBUS), code 1 (BUS_ADRALN), fault addr 0xeef5445f   (bionic's words, anywhere)
    libc: A Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x18 in tid 27995
    lldb stops at `EXC_BAD_ACCESS` in ...                          (a Mach exception named)
    Crashed: Thread: SIGSEGV  0x0000000000000007                   (a crash reporter's title)
    libc++abi: terminating due to uncaught exception of type std::invalid_argument: stoi
    hip_code_object.cpp:120: guarantee(false && "hipErrorNoBinaryForGpu: ...")   (HIP / ROCm)
    .../refcount.h:79] Check failed: ref_.load() == 0 (1 vs. 0)     (a CHECK without glog's prefix)
    F/native  (20060): flutter/cpp/backends/external.h:158 Error while inferencing model
    [external/com_google_absl/absl/status/statusor.cc : 83] RAW: Attempting to fetch value instead of handling error
    Kernel Restarting: The kernel appears to have died. It will restart automatically.   (Jupyter)
    [gw0] node down: Not properly terminated                        (a pytest-xdist worker)
    ... immediately crashes the server with a std::bad_alloc        (an uncaught exception in prose)
    concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly ...

A signal named in passing is weak evidence (a shell's verdict or a parser's finding wins);
a fatal line is a message the classifier reads like any other.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "crash-line"

_QEMU = re.compile(r"\bqemu(?:-[\w-]+)?: uncaught target signal (\d{1,2})\b")
# bionic's "signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x..." and its "Fatal signal"
# line, behind whatever prefix a log viewer or a title put in front.
_BIONIC = re.compile(
    r"\b(?:Fatal )?signal (\d{1,2}) \((SIG[A-Z]{2,8})\)(?:, code (-?\d{1,4})(?: \((\w{1,30})\))?)?(?:, fault addr (0x[0-9a-fA-F]{1,16}))?"
)
_MACH = re.compile(r"\b(EXC_BAD_ACCESS|EXC_BAD_INSTRUCTION|EXC_ARITHMETIC|EXC_CRASH)\b")
_MENTION = re.compile(r"\b(SIG(?:SEGV|ABRT|BUS|ILL|FPE|TRAP|SYS))\b(?:\s+(0x[0-9a-fA-F]{1,16})\b)?")
_LIBCXXABI = re.compile(r"libc\+\+abi(?:\.dylib)?: (terminating (?:with|due to) uncaught exception of type .{1,400})")
# HIP / ROCm runtime: a failed guarantee(), the HIP error names, the HSA runtime's fatal status.
_HIP = re.compile(
    r"(guarantee\(.{1,300}\)|\bhipError\w{3,60}\b.{0,300}|\bHSA_STATUS_ERROR_\w{1,60}.{0,300}|Memory access fault by GPU node-\d+.{0,300})"
)
# A CHECK as glog prints it, with or without its "F... " prefix; TF_CHECK_OK's "Non-OK-status".
_CHECK = re.compile(
    r"(?:^|[\s\[])(?:[FEW] )?((?:[A-Za-z]:)?[\w./\\-]{1,400}\.(?:cc|h|cpp|hpp|cu|c)):(\d{1,9})\] ((?:Check failed|CHECK failed|Non-OK-status)\b.*)"
    r"|^((?:Check failed|CHECK failed): .+)"
    # a formatter that names the source file without its extension: "bfc_allocator: Check failed: ..."
    r"|^([a-z][a-z0-9_]{3,80}: (?:Check failed|CHECK failed): .+)"
)
# absl's raw logging, which fatal checks inside absl itself use ("StatusOr::value() on an error").
_ABSL_RAW = re.compile(r"^\[([\w./-]{1,300}\.(?:cc|h)) : (\d{1,9})\] RAW: (.*(?:Check|CHECK|failed|Attempting to fetch value|FATAL|Fatal).*)$")
# A notebook's word that its kernel process died (no signal is shown): Jupyter, VS Code, Colab.
_KERNEL_DIED = re.compile(
    r"The kernel appears to have died|Kernel Restarting|KernelRestarter: restarting kernel|The Kernel crashed while executing code|"
    r"[Yy]our session crashed (?:for an unknown reason|after using all available RAM)|\bKernel died\b|kernel (?:has )?died unexpectedly"
)
# A runner's word that a worker process it started died (no signal is shown): pytest-xdist,
# concurrent.futures' process pool, joblib's loky executor, multiprocessing.Pool under billiard.
_WORKER_DIED = re.compile(
    r"\bnode down: Not properly terminated\b|\bworker '?\w+'? crashed while running\b|\breplacing crashed worker\b"
    r"|\bA process in the process pool was terminated abruptly\b|\bA worker process managed by the executor was unexpectedly terminated\b"
    r"|\bWorker exited prematurely\b"
)
# Who died as each of the two says it (the words one of which a line must hold, then the pattern).
_DIED_UNSAID = (
    (("ernel", "session crashed"), _KERNEL_DIED, "the notebook's kernel process"),
    (("worker", "node down", "process pool", "prematurely"), _WORKER_DIED, "a worker process"),
)
# A sentence that says the process died of a C++ exception it did not catch ("Loading a model ...
# immediately crashes the server with a std::bad_alloc"): what libstdc++'s terminate would print.
_DIED_OF_EXCEPTION = re.compile(
    r"\b(?:crash(?:es|ed)?|dies|died|aborts|aborted|terminates|terminated)\b[^.;]{0,80}?\bwith (?:an? )?(std::[a-z_]{3,40})\b"
)
# Android logcat's fatal log line of native code (absl / glog on Android): "F/tag (pid): file.cc:12 msg".
_LOGCAT_FATAL = re.compile(r"^F/([\w.-]{1,60})\s*\(\s*\d{1,9}\):\s+([\w./-]{1,300}\.(?:cc|h|cpp|hpp|c)):(\d{1,9})\]?\s+(.+)$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    for i, line in enumerate(lines):
        if claimed[i] or not line or len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
            continue
        s = line.strip()
        finding = _message(s, i) or _signal(s, i)
        if finding is not None:
            # Not claimed: no parser runs after this one, and the line rules read these lines too.
            found.append(finding)
    return found


def _message(s: str, i: int) -> fd.Finding | None:
    weight, text = None, None
    if "libc++abi" in s and (m := _LIBCXXABI.search(s)):
        weight, text = fd.MESSAGE_TERMINATE, m.group(1)
    elif ("hip" in s or "HSA_" in s or "GPU node" in s) and (m := _HIP.search(s)):
        weight, text = fd.MESSAGE_TERMINATE, m.group(1).strip().strip('"')
    elif ("heck failed" in s or "HECK failed" in s or "Non-OK-status" in s) and (m := _CHECK.search(s)):
        weight = fd.MESSAGE_CHECK_FAILURE
        text = f"{m.group(1)}:{m.group(2)}] {m.group(3)}" if m.group(1) else (m.group(4) or m.group(5))
    elif "] RAW: " in s and (m := _ABSL_RAW.match(s)):
        weight, text = fd.MESSAGE_CHECK_FAILURE, f"{m.group(1)}:{m.group(2)}] {m.group(3)}"
    elif s.startswith("F/") and (m := _LOGCAT_FATAL.match(s)) and m.group(1) not in ("libc", "DEBUG"):
        weight, text = fd.MESSAGE_CHECK_FAILURE, f"{m.group(2)}:{m.group(3)}] {m.group(4)}"
    elif "std::" in s and (m := _DIED_OF_EXCEPTION.search(s)):
        weight, text = fd.MESSAGE_TERMINATE, f"terminate called after throwing an instance of '{m.group(1)}' (in the text's words: {m.group(0)})"
    else:
        for anchors, pattern, who in _DIED_UNSAID:
            if any(a in s for a in anchors) and (m := pattern.search(s)):
                # The process died and nothing says how: a verdict without a signal (fault kind unknown).
                finding = fd.Finding(FORMAT, i)
                finding.add_message(fd.MESSAGE_FROM_FRAME_ARGS, f"{who} died: {m.group(0)}")
                return finding
    if text is None:
        return None
    finding = fd.Finding(FORMAT, i)
    finding.add_message(weight, text)
    finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
    return finding


def _signal(s: str, i: int) -> fd.Finding | None:
    finding = fd.Finding(FORMAT, i, substantive=False)
    if "qemu" in s and (m := _QEMU.search(s)):
        finding.set_signal(signals.normalize_name(m.group(1)), fd.SIGNAL_FROM_SHELL)
    elif "signal" in s and (m := _BIONIC.search(s)):
        address = fd.hex_int(m.group(5))
        strength = fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_NAMED
        code = int(m.group(3)) if m.group(3) else None
        finding.set_signal(signals.normalize_name(m.group(2)), strength, address=address, code=code, code_name=m.group(4))
    elif "EXC_" in s and (m := _MACH.search(s)):
        finding.set_signal(signals.MACH_EXCEPTIONS[m.group(1)], fd.SIGNAL_FROM_SHELL)
    elif "SIG" in s and (m := _MENTION.search(s)):
        finding.set_signal(signals.normalize_name(m.group(1)), fd.SIGNAL_IMPLIED, address=fd.hex_int(m.group(2)))
    return finding if finding.signal is not None else None
