"""Android native crash dumps: debuggerd tombstones and their logcat `DEBUG` copies.

    *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
    pid: 12345, tid: 12367, name: tflite-worker  >>> com.example.app <<<
    signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0
    Abort message: 'Check failed: ...'
    backtrace:
        #00 pc 0005efee  /data/app/com.example-1/lib/arm/libtensorflowlite_jni.so (tflite::Foo()+122)
        #01 pc 000a1b2c  /system/lib/libc.so (offset 0x1000) (__pthread_start(void*)+24) (BuildId: ab12)

In logcat each line carries a prefix (`A/DEBUG ( 1234): `, or
`11-05 12:00:00.123  1234  1234 F DEBUG   : `); it is taken off here. The backtrace is the
thread named on the `pid:` line; `pc` is an offset in the library, not an address.
"""

from __future__ import annotations

import re

from coreanalyze.triage import asan, limits, signals
from coreanalyze.triage import findings as fd

FORMAT = "android-tombstone"

_LOGCAT = re.compile(
    # logcat's threadtime lines; vendors relay the tombstone under tags of their own ("_V_EPM").
    r"^(?:\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+\s+\d+\s+\d+\s+[VDIWEFA]\s+[\w.$-]{1,40}\s*:\s?"
    r"|[VDIWEFA]/(?:DEBUG|libc|crash_dump\d*)\s*\(\s*\d+\):\s?"
    # Android Studio's logcat window: "2022-03-01 09:12:44.231 9001-9001/? A/DEBUG: "
    r"|(?:\d{4}-)?\d\d-\d\d\s+\d\d:\d\d:\d\d\.\d+\s+\d+-\d+/\S*\s+[VDIWEFA]/(?:DEBUG|libc|crash_dump\d*):\s?"
    r"|[VDIWEFA]/(?:DEBUG|libc|crash_dump\d*):\s)"
)
# bionic's own line as the signal arrives, before debuggerd writes the tombstone (often all a
# user pastes): "Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0 in tid 5012
# (Thread-3), pid 4990 (ample.classify)".
_FATAL_SIGNAL = re.compile(
    r"^Fatal signal (\d{1,2}) \((SIG\w{2,8})\), code (-?\d{1,4})(?: \((\w{1,30})\))?, fault addr (0x[0-9a-fA-F]{1,16}|-+)"
    r"(?: in tid (\d{1,9}) \(([^)]{0,100})\), pid (\d{1,9}))?"
)
# Crash reporters (Play Console, Crashlytics) drop the thread's name: "pid: 0, tid: 30757 >>> app <<<".
_PID = re.compile(r"^pid: (\d{1,9}), tid: (\d{1,9})(?:, name: (.{0,100}?))?\s+>>> (.{0,400}?) <<<")
# debuggerd names a sender only when it is another process ("code 0 (SI_USER from pid 1, uid 0)"):
# a signal raised by someone without one is the crashing process' own (abort()'s tgkill).
_SIGNAL = re.compile(
    r"^signal (\d{1,2}) \((SIG\w{2,8})\), code (-?\d{1,4}) \((\w{1,30})(?: from pid (\d{1,9}), uid \d{1,9})?\)"
    r"(?:, fault addr (0x[0-9a-fA-F]{1,16}|-+))?"
)
_ABORT = re.compile(r"^Abort message: '?(.*?)'?$")
# ... and write the pc wider: "#00  pc 0x000000000005e0ac  /apex/.../libc.so (__memcpy_a15+188)".
_FRAME = re.compile(r"^#(\d{1,4})\s+pc\s+(?:0x)?([0-9a-fA-F]{1,16})\s+(\S+)(.*)$")
# The same backtrace symbolized by a sanitizer's symbolizer: "#0 0x00084fe6 in tgkill /bionic/..".
_SYMBOLIZED = re.compile(r"^#(\d{1,4}) (0x[0-9a-fA-F]{1,16}) in (.*)$")
# Other processes' log lines that logcat interleaves with a backtrace.
MAX_FOREIGN_LINES = 3
_OFFSET = re.compile(r"^(.*)\+(\d{1,12})$")


def _strip(line: str) -> str:
    return _LOGCAT.sub("", line, count=1).strip()


def _groups(rest: str) -> list[str]:
    """The top-level parenthesized groups of a frame's tail, however deep a C++ name nests:
    " (std::f<void ()>(int)+28) (BuildId: ab)" -> ["std::f<void ()>(int)+28", "BuildId: ab"]."""
    groups, depth, start = [], 0, 0
    for k, ch in enumerate(rest):
        if ch == "(":
            if depth == 0:
                start = k + 1
            depth += 1
        elif ch == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                groups.append(rest[start:k])
    return groups


def _frame(module: str, rest: str, pc: str) -> fd.model.Frame:
    function = offset = None
    for group in _groups(rest):
        if group.startswith(("offset ", "BuildId:", "deleted")):
            continue
        m = _OFFSET.match(group)
        function, offset = (m.group(1), int(m.group(2))) if m else (group, None)
    # pc is the offset in the library: kept as the frame's pc, the library names where.
    return fd.native_frame(function, pc=int(pc, 16), module=module, offset=offset)


def _next_is_frame(lines: list[str], i: int) -> bool:
    """A backtrace frame follows within the few lines another process may have put between."""
    return any(_strip(lines[j]).startswith("#") for j in range(i + 1, min(len(lines), i + 1 + MAX_FOREIGN_LINES)))


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n and len(found) < limits.MAX_BLOCKS_PER_FORMAT:
        s = _strip(lines[i]) if not claimed[i] else ""
        header = s.startswith("*** *** ***")
        pid = _PID.match(s) if s.startswith("pid: ") else None
        # A backtrace pasted without its header ("#05 pc 0000.. /lib.so (sym+100)"): bionic's frames.
        headless = _FRAME.match(s) if s.startswith("#") else None
        if not (header or pid or headless):
            i += 1
            continue
        finding = fd.Finding(FORMAT, i)
        thread = fd.TextThread(crashed=True)
        in_backtrace = False
        foreign = 0
        while i < n:
            if claimed[i]:
                break
            s = _strip(lines[i])
            if in_backtrace and not s.startswith("#"):
                foreign += 1
                if foreign > MAX_FOREIGN_LINES or (s and thread.frames and not _next_is_frame(lines, i)):
                    break
                i += 1
                continue
            if (m := _PID.match(s)) is not None:
                if thread.tid is not None:
                    break  # the next tombstone
                finding.pid, thread.tid, thread.name = int(m.group(1)), int(m.group(2)), (m.group(3) or "").strip() or None
                finding.cmdline = m.group(4)
            elif (m := _SIGNAL.match(s)) is not None:
                address = fd.hex_int(m.group(6)) if m.group(6) and m.group(6).startswith("0x") else None
                code = int(m.group(3))
                sender = int(m.group(5)) if m.group(5) else finding.pid if code <= 0 else None
                strength = fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_NAMED
                finding.set_signal(signals.normalize_name(m.group(2)), strength, address=address, code=code, code_name=m.group(4), sender_pid=sender)
            elif (m := _ABORT.match(s)) is not None:
                text = m.group(1).rstrip("'")
                weight = fd.MESSAGE_CHECK_FAILURE if ("Check failed" in text or re.search(r"\] ", text)) else fd.MESSAGE_TERMINATE
                finding.add_message(weight, text)
            elif s == "backtrace:":
                in_backtrace = True
            elif (m := _FRAME.match(s)) is not None:
                in_backtrace = True
                foreign = 0
                thread.add(_frame(m.group(3), m.group(4), m.group(2)))
            elif in_backtrace and (m := _SYMBOLIZED.match(s)) is not None:
                foreign = 0
                thread.add(asan.parse_frame_text(m.group(3), fd.hex_int(m.group(2))))
            elif s.startswith("*** *** ***") and (thread.frames or thread.tid is not None):
                break
            claimed[i] = 1
            i += 1
        if thread.dropped_frames:
            finding.warnings.append(f"only the first {limits.MAX_FRAMES_PER_THREAD} frames of the tombstone were kept")
        if thread.frames or finding.signal is not None:
            finding.add_thread(thread)
            found.append(finding)
    if not found:
        found.extend(_fatal_signal_lines(lines, claimed))
    return found


def _fatal_signal_lines(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    """bionic's "Fatal signal" line when no tombstone came with it: the signal, its address
    and the thread, without frames."""
    for i, line in enumerate(lines):
        if claimed[i] or "Fatal signal" not in line:
            continue
        m = _FATAL_SIGNAL.match(_strip(line))
        if m is None:
            continue
        finding = fd.Finding(FORMAT, i)
        address = fd.hex_int(m.group(5)) if m.group(5).startswith("0x") else None
        finding.set_signal(signals.normalize_name(m.group(2)), fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_NAMED, address=address, code=int(m.group(3)), code_name=m.group(4))
        thread = fd.TextThread(crashed=True)
        if m.group(6):
            thread.tid, thread.name, finding.pid = int(m.group(6)), m.group(7) or None, int(m.group(8))
        finding.add_thread(thread)
        claimed[i] = 1
        return [finding]
    return []
