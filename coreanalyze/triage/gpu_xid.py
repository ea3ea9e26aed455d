"""The NVIDIA driver's Xid lines in a kernel log (dmesg, journalctl -k).

    [22859.081860] NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ
    [22859.081900] NVRM: Xid (PCI:0000:01:00): 43, pid=14292, name=python, Ch 00000030

The Xid number says what the GPU or the driver hit (gpu_errors.toml [[xid]]); the pid and name
say which process. The first Xid that is not the consequence of another (43 "GPU stopped
processing" and 45 "preemptive cleanup" follow a fault) is the verdict.
"""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.classify.gpuerrors import xid as xid_meaning
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text

FORMAT = "nvrm-xid"

_XID = re.compile(
    r"NVRM: Xid \(PCI:([0-9a-fA-F:.]{1,20})\): (\d{1,4}),\s*(?:pid='?(?:<unknown>|(\d{1,9}))'?,\s*name=([^,\s]{0,64}),\s*)?(.{0,1000})$"
)
_ADDRESS = re.compile(r"faulted @ (0x[0-9a-fA-F_]{1,24})")
# Xids that follow another fault rather than being one.
CONSEQUENCES = (43, 45)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    matches = []
    for i, s in enumerate(lines):
        if claimed[i] or "NVRM: Xid" not in s:
            continue
        m = _XID.search(s)
        if m:
            claimed[i] = 1
            matches.append((i, m))
    if not matches:
        return []
    i, m = next(((i, m) for i, m in matches if int(m.group(2)) not in CONSEQUENCES), matches[0])
    return [_finding(i, m, len(matches))]


def _finding(i: int, m: re.Match[str], count: int) -> fd.Finding:
    number = int(m.group(2))
    known = xid_meaning(number)
    meaning = known.meaning if known else "unknown Xid"
    finding = fd.Finding(FORMAT, i)
    gpu = model.GpuFault(exception=f"Xid {number}: {meaning}", device_name=f"PCI {m.group(1)}")
    address = _ADDRESS.search(m.group(5))
    if address:
        gpu.address = fd.hex_int(address.group(1).replace("_", ""))
    finding.gpu = gpu
    finding.detail = f"Xid {number}: {meaning}" + (f"; usually {known.cause}" if known else "")
    if m.group(3):
        finding.pid = int(m.group(3))
        finding.cmdline = m.group(4) or None
    finding.add_message(gpu_text.MESSAGE_GPU, f"NVRM: Xid {number} ({meaning}): {m.group(5).strip()}")
    if count > 1:
        finding.warnings.append(f"{count} Xid lines in the log; Xid {number} is the first that is not a consequence of another")
    return finding
