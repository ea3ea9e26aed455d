"""gdb's `py-bt` (CPython's gdb extension): the Python stack of the selected thread.

    (gdb) py-bt
    Traceback (most recent call first):
      <built-in method string_at of module object at remote 0x7f3a...>
      File "/usr/lib/python3.11/ctypes/__init__.py", line 519, in string_at
        return _string_at(ptr, size)
      File "/srv/app.py", line 6, in read_config

"most recent call first" tells it apart from a Python exception's traceback ("most recent
call last"), which is not a crash stack.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits

FORMAT = "gdb-py-bt"

_HEADER = "Traceback (most recent call first):"
_FILE = re.compile(r'[ \t]*File "(.*)", line (\d{1,9}), in (\S.*)')
_BUILTIN = re.compile(r"[ \t]*<built-in method (\S{1,200})")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n:
        if claimed[i] or lines[i].strip() != _HEADER:
            i += 1
            continue
        if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
            break
        finding = fd.Finding(FORMAT, i)
        thread = fd.TextThread(crashed=True)
        claimed[i] = 1
        i += 1
        last: fd.model.Frame | None = None
        while i < n:
            line = lines[i]
            m = _FILE.match(line)
            if m:
                last = fd.python_frame(m.group(3).strip(), m.group(1), int(m.group(2)))
                thread.add(last)
            elif _BUILTIN.match(line):
                last = None
            elif line.startswith("    ") and last is not None and last.source is None:
                last.source = line.strip()[:500]
            else:
                break
            claimed[i] = 1
            i += 1
        if thread.frames:
            finding.add_thread(thread)
            found.append(finding)
    return found
