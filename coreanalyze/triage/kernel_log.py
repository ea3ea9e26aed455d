"""The kernel's one-line account of a fatal fault (dmesg, journalctl -k), often all a user has.

    [12345.678] python3[4242]: segfault at 0 ip 00007f3a2b1c4e2d sp 00007ffd2b3c4d50 error 4 in libtensorflow_framework.so.2[7f3a2a000000+2a00000]
    traps: python3[4242] trap invalid opcode ip:7f3a2b1c4e2d sp:7ffd2b3c4d50 error:0 in libtensorflow_cc.so.2[7f3a10000000+3000000]
    traps: python3[4242] trap divide error ip:55d1c3a2d151 sp:7ffd2b3c4d50 error:0 in a.out[55d1c3a2d000+1000]

The bracketed number is the faulting thread's id and the name before it its comm; the
line gives the faulting pc and the library it is in, i.e. a one-frame backtrace.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits

FORMAT = "kernel-log"

_SEGFAULT = re.compile(
    r"(\S{1,64})\[(\d{1,9})\]: segfault at ([0-9a-fA-F]{1,16}) ip ([0-9a-fA-F]{1,16}) sp [0-9a-fA-F]{1,16} "
    r"error \w{1,4}(?: cpu \d+)?(?: in ([^\s\[]{1,300})\[)?"
)
_TRAP = re.compile(
    r"(\S{1,64})\[(\d{1,9})\]:? (trap [a-z ]{1,40}?|general protection(?: fault)?) ip:?([0-9a-fA-F]{1,16}) "
    r"sp:?[0-9a-fA-F]{1,16} error:?\w{1,4}(?: cpu \d+)?(?: in ([^\s\[]{1,300})\[)?"
)
_TRAP_SIGNALS = {
    "trap invalid opcode": "SIGILL",
    "trap divide error": "SIGFPE",
    "trap int3": "SIGTRAP",
    "trap stack segment": "SIGBUS",
    "general protection": "SIGSEGV",
    "general protection fault": "SIGSEGV",
}


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    for i, line in enumerate(lines):
        if claimed[i] or "]" not in line:
            continue
        if "segfault at " in line:
            m = _SEGFAULT.search(line)
            if not m:
                continue
            name, address, pc, module = "SIGSEGV", fd.hex_int("0x" + m.group(3)), m.group(4), m.group(5)
        elif " ip" in line and ("trap " in line or "general protection" in line):
            m = _TRAP.search(line)
            if not m:
                continue
            name, address, pc, module = _TRAP_SIGNALS.get(m.group(3).strip(), "SIGSEGV"), None, m.group(4), m.group(5)
        else:
            continue
        if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
            break
        finding = fd.Finding(FORMAT, i)
        finding.set_signal(name, fd.SIGNAL_WITH_ADDRESS if address is not None else fd.SIGNAL_NAMED, address=address)
        thread = fd.TextThread(tid=int(m.group(2)), name=m.group(1).lstrip(":"), crashed=True)
        thread.add(fd.native_frame(None, pc=fd.hex_int("0x" + pc), module=module))
        finding.add_thread(thread)
        claimed[i] = 1
        found.append(finding)
    return found
