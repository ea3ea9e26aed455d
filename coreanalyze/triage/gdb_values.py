"""Values people print in gdb next to the backtrace, which say more than `bt` does:

    (gdb) p $_siginfo._sifields._sigfault.si_addr
    $1 = (void *) 0x7ffffe7fef88
    (gdb) p $sp
    $2 = (void *) 0x7ffffe7fef90
    (gdb) info frame
    Stack level 0, frame at 0x7ffffe7fefa0:
    (gdb) info registers rsp
    rsp            0x7ffffe7fef90      0x7ffffe7fef90

The fault address and the stack pointer: a fault next to the stack pointer is a stack overflow,
which the backtrace alone cannot show. (`p $_siginfo` printed whole is read by the gdb parser.)
The cleaner has already taken gdb's prompt off the command lines.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd

FORMAT = "gdb-values"

_COMMAND = re.compile(r"^(?:p|print|output)(?:/\w+)?\s+(\$\S+)\s*$")
_VALUE = re.compile(r"^\$\d{1,6} = (?:\([^)]{1,80}\)\s*)?(0x[0-9a-fA-F]{1,16})\b")
_FRAME_AT = re.compile(r"^Stack level \d{1,6}, frame at (0x[0-9a-fA-F]{1,16}):")
_REGISTER = re.compile(r"^(rsp|esp|sp)\s+(0x[0-9a-fA-F]{1,16})\b")
_FAULT_EXPRESSIONS = re.compile(r"^\$_siginfo(?:\._sifields\._sigfault)?\.si_addr$")
_SP_EXPRESSIONS = re.compile(r"^\$(?:sp|rsp|esp)$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    finding = fd.Finding(FORMAT, 0, substantive=False)
    pending: str | None = None
    frame_at: int | None = None
    for i, line in enumerate(lines):
        if claimed[i]:
            continue
        s = line.strip()
        if not s:
            continue
        if (m := _COMMAND.match(s)) is not None:
            pending = m.group(1)
            claimed[i] = 1
            continue
        if pending is not None and (m := _VALUE.match(s)) is not None:
            value = int(m.group(1), 16)
            if _FAULT_EXPRESSIONS.match(pending):
                finding.fault_address = value
            elif _SP_EXPRESSIONS.match(pending):
                finding.stack_pointer = value
            claimed[i] = 1
        elif (m := _FRAME_AT.match(s)) is not None and frame_at is None:
            frame_at = int(m.group(1), 16)
        elif (m := _REGISTER.match(s)) is not None and finding.stack_pointer is None:
            finding.stack_pointer = int(m.group(2), 16)
        pending = None
    if finding.stack_pointer is None and frame_at is not None:
        # `info frame` gives frame 0's CFA: the stack pointer plus the return address slot.
        finding.stack_pointer = frame_at
    if finding.fault_address is None and finding.stack_pointer is None:
        return []
    return [finding]
