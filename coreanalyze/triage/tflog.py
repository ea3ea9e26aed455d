"""TensorFlow / absl / glog fatal log lines, their stack traces, and absl's crash handler.

    F0000 00:00:1700000000.123456   12345 tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)
    2024-12-10 09:23:12.332684: F tensorflow/core/framework/tensor_shape.cc:356] Check failed: ...
    F tensorflow/core/kernels/conv_ops.cc:659] Check failed: ...                       (TF 1.x)
    *** Check failure stack trace: ***
        @     0x7f5899ece564  absl::lts_20250814::log_internal::LogMessage::SendToLog()
    *** SIGSEGV received at time=1700000000 on cpu 3 ***                  (absl FailureSignalHandler)
    PC: @     0x7f5fba26bfb7  (unknown)  raise
        @     0x559002e1addf        256  absl::lts_20210324::WriteFailureInfo()

The fatal line gives the message (with its source path: the classifier reads the
subsystem from it) and the id of the thread that logged it; LOG(FATAL) ends in abort().
The `@` lines come in two shapes: glog's `@ addr symbol` and absl's
`@ addr framesize symbol`; `(unknown)` is a frame without a name.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits, signals

FORMAT = "tf-log"
FORMAT_ABSL_SIGNAL = "absl-signal"

# glog/absl: severity, mmdd, time, thread id, file:line]
_GLOG = re.compile(r"(?:^|\s)F\d{4} \d\d:\d\d:\d{2,12}\.\d+\s+(\d{1,10}) ([^\s:\]]{1,400}):(\d{1,9})\] ?(.*)")
# TF's own formatter, with or without a timestamp in front: "F path:line] msg"
_TF_OLD = re.compile(r"(?:^|\s|:)F ([^\s:\]]{1,400}):(\d{1,9})\] ?(.*)")
_PROTOBUF = re.compile(r"\[libprotobuf FATAL ([^\s:\]]{1,400}):(\d{1,9})\] ?(.*)")
_CHECK_TRACE = "*** Check failure stack trace: ***"
_ABSL_SIGNAL = re.compile(r"\*\*\* (?:(SIG[A-Z]{2,8})|Signal (\d{1,2})) received at time=\d+(?: on cpu \d+)? \*\*\*")
_PC = re.compile(r"PC: @\s+(0x[0-9a-fA-F]{1,16})\s+(.*)")
_AT = re.compile(r"(?:^|\s)@\s+(0x[0-9a-fA-F]{1,16})\s+(.*)")
_AT_MORE = re.compile(r"@ \.\.\. and at least (\d+) more frames")
_ABSL_COLUMNS = re.compile(r"(\(unknown\)|\d{1,12})\s+(\S.*)")
# Error (not fatal) log lines that say why a GPU process died next: kept as a weak message.
_GPU_ERROR = re.compile(
    r"(?:^|\s)E\d{4} [\d:. ]+\d+ \S+:\d+\] .*?|(?:^|\s|:)E (?:\S+):\d+\] .*?"
)
_GPU_WORDS = re.compile(r"CUDA_ERROR_\w+|CUDNN_STATUS_\w+|CUBLAS_STATUS_\w+|GPU sync failed|Unexpected Event status|illegal memory access|[Cc]ould not create cudnn handle|Failed to get convolution algorithm|cuDNN launch failure")
# Frames of the crash handlers themselves, above the interrupted code.
_HANDLER_FRAMES = ("AbslFailureSignalHandler", "WriteFailureInfo", "WriteStackTrace", "FailureSignalHandler")


def _symbol(rest: str) -> str | None:
    rest = rest.strip()
    m = _ABSL_COLUMNS.fullmatch(rest)
    if m:  # absl: "<framesize|(unknown)>  <symbol|(unknown)>"
        rest = m.group(2).strip()
    return None if rest == "(unknown)" else rest


def _fatal_line(s: str) -> tuple[str, int | None] | None:
    """(message with its 'file:line] ' prefix, logging thread id) of a fatal log line."""
    if "] " not in s and not s.endswith("]"):
        return None
    if "F" in s:
        m = _GLOG.search(s)
        if m:
            return f"{m.group(2)}:{m.group(3)}] {m.group(4).strip()}", int(m.group(1))
        m = _TF_OLD.search(s)
        if m:
            return f"{m.group(1)}:{m.group(2)}] {m.group(3).strip()}", None
    if "libprotobuf FATAL" in s:
        m = _PROTOBUF.search(s)
        if m:
            return f"[libprotobuf FATAL {m.group(1)}:{m.group(2)}] {m.group(3).strip()}", None
    return None


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    last_fatal: fd.Finding | None = None
    i, n = 0, len(lines)
    while i < n:
        if claimed[i]:
            i += 1
            continue
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        if s.startswith("***"):
            if s.startswith(_CHECK_TRACE):
                finding = last_fatal
                if finding is None:
                    finding = fd.Finding(FORMAT, i)
                    finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
                    found.append(finding)
                claimed[i] = 1
                thread = finding.crashed_thread()
                if thread is None:
                    thread = fd.TextThread(crashed=True)
                    finding.add_thread(thread)
                i = _read_at_frames(lines, i + 1, claimed, thread, finding)
                last_fatal = None
                continue
            m = _ABSL_SIGNAL.search(s)
            if m:
                finding = fd.Finding(FORMAT_ABSL_SIGNAL, i)
                name = signals.normalize_name(m.group(1) or m.group(2))
                finding.set_signal(name, fd.SIGNAL_NAMED)
                thread = fd.TextThread(crashed=True)
                finding.add_thread(thread)
                claimed[i] = 1
                i = _read_absl_signal(lines, i + 1, claimed, thread, finding)
                found.append(finding)
                continue
        if "*** " in s and _ABSL_SIGNAL.search(s):
            # The handler's lines behind a log prefix: "[.. E 864170 864170] logging.cc:361: *** SIGABRT ..."
            m = _ABSL_SIGNAL.search(s)
            finding = fd.Finding(FORMAT_ABSL_SIGNAL, i)
            finding.set_signal(signals.normalize_name(m.group(1) or m.group(2)), fd.SIGNAL_NAMED)
            thread = fd.TextThread(crashed=True)
            finding.add_thread(thread)
            claimed[i] = 1
            i = _read_absl_signal(lines, i + 1, claimed, thread, finding)
            found.append(finding)
            continue
        if ("E" in s and _GPU_WORDS.search(s)) and _GPU_ERROR.search(s):
            finding = fd.Finding(FORMAT, i)
            finding.add_message(fd.MESSAGE_FROM_FRAME_ARGS, s[:600])
            found.append(finding)
            claimed[i] = 1
            i += 1
            continue
        fatal = _fatal_line(s)
        if fatal is not None:
            if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
                break
            message, tid = fatal
            finding = fd.Finding(FORMAT, i)
            finding.add_message(fd.MESSAGE_CHECK_FAILURE, message)
            finding.set_signal("SIGABRT", fd.SIGNAL_IMPLIED)
            if tid is not None:
                finding.add_thread(fd.TextThread(tid=tid, crashed=True))
            found.append(finding)
            last_fatal = finding
            claimed[i] = 1
        i += 1
    return found


def _read_at_frames(lines: list[str], i: int, claimed: bytearray, thread: fd.TextThread, finding: fd.Finding) -> int:
    """Consume the '@ 0x.. symbol' lines from i; the index after them."""
    n = len(lines)
    while i < n:
        s = lines[i].strip()
        if not s:
            # A blank line inside the trace is tolerated only if more @ lines follow.
            if i + 1 < n and "@ " in lines[i + 1] and _AT.search(lines[i + 1]):
                i += 1
                continue
            break
        if "@" not in s:
            break
        m = _AT_MORE.search(s)
        if m:
            finding.warnings.append(f"the stack trace was cut by the crash handler ({m.group(1)}+ more frames)")
            claimed[i] = 1
            i += 1
            continue
        m = _AT.search(s)
        if not m:
            break
        thread.add(fd.native_frame(_symbol(m.group(2)), pc=fd.hex_int(m.group(1))))
        claimed[i] = 1
        i += 1
    if thread.dropped_frames:
        finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} frames of the stack trace were kept")
    return i


def _read_absl_signal(lines: list[str], i: int, claimed: bytearray, thread: fd.TextThread, finding: fd.Finding) -> int:
    pc_frame = None
    if i < len(lines):
        s = lines[i]
        m = _PC.search(s) if "PC: @" in s else None
        if m:
            pc_frame = fd.native_frame(_symbol(m.group(2)), pc=fd.hex_int(m.group(1)))
            claimed[i] = 1
            i += 1
    listed = fd.TextThread()
    i = _read_at_frames(lines, i, claimed, listed, finding)
    for f in fd.lay_out_handler_frames(listed.frames, _HANDLER_FRAMES, pc_frame):
        thread.add(f)
    return i
