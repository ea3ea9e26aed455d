"""Ubuntu apport crash reports and the one-line titles Launchpad makes of them.

    ProblemType: Crash
    Signal: 4
    Stacktrace:
     #0  0x00007f3a2b1c4e2d in _GLOBAL__sub_I_cpu_feature_guard.cc () from /usr/lib/.../_pywrap_tensorflow_internal.so
     #1  0x00007f3a2e8b1e9a in call_init (l=<optimized out>, ...) at dl-init.c:72
    StacktraceTop:
     _GLOBAL__sub_I_cpu_feature_guard.cc () from /usr/lib/.../_pywrap_tensorflow_internal.so
     call_init (l=<optimized out>, argc=argc@entry=1, ...) at dl-init.c:72
    Title: python3.10 crashed with SIGILL in _GLOBAL__sub_I_cpu_feature_guard.cc()

The `Stacktrace:` field is gdb's `bt` (the gdb parser reads it); this module reads the signal
and, when there is no full stack, the `StacktraceTop:` functions or the title's one function.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import signals

FORMAT = "apport"

_TITLE = re.compile(r"(?:^Title: |^)?(\S{1,100}) crashed with (SIG[A-Z]{2,8}) in (.{1,400}?)\s*$")
_SIGNAL = re.compile(r"^Signal: (\d{1,2})\s*$")
_TOP_FRAME = re.compile(r"^ (\S.{0,400}?) \((?:.*)\)(?: (?:from|at) (\S+))?\s*$|^ (\?\?) \(\)(?: from (\S+))?\s*$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding: fd.Finding | None = None
    top = fd.TextThread(crashed=True)
    title_function = None
    for i, line in enumerate(lines):
        if claimed[i]:
            continue
        if "crashed with SIG" in line and (m := _TITLE.search(line.strip())) is not None:
            finding = finding or fd.Finding(FORMAT, i)
            finding.executable = finding.executable or m.group(1)
            finding.set_signal(signals.normalize_name(m.group(2)), fd.SIGNAL_NAMED)
            title_function = re.sub(r"\(\)$", "", m.group(3).strip())
            claimed[i] = 1
        elif line.startswith("Signal: ") and (m := _SIGNAL.match(line)) is not None:
            finding = finding or fd.Finding(FORMAT, i)
            finding.set_signal(signals.normalize_name(m.group(1)), fd.SIGNAL_NAMED)
            claimed[i] = 1
        elif line.rstrip() == "StacktraceTop:":
            finding = finding or fd.Finding(FORMAT, i)
            claimed[i] = 1
            j = i + 1
            while j < len(lines) and lines[j].startswith(" ") and not claimed[j]:
                m = _TOP_FRAME.match(lines[j].rstrip())
                if m:
                    name = m.group(1) or None
                    top.add(fd.native_frame(name if name != "??" else None, module=m.group(2) or m.group(4)))
                claimed[j] = 1
                j += 1
    if finding is None:
        return []
    if not top.frames and title_function:
        top.add(fd.native_frame(title_function))
    if top.frames:
        # A weaker account of the crashing thread than the full `Stacktrace:` (when the gdb
        # parser found one, the merge keeps the longer stack).
        finding.add_thread(top)
    return [finding]
