"""PyTorch's C++ exception backtrace (c10::Error), printed under its message: often the only
stack of a CUDA error that ended a PyTorch process.

    terminate called after throwing an instance of 'c10::Error'
      what():  CUDA error: device-side assert triggered (insert_events at ../c10/cuda/CUDACachingAllocator.cpp:569)
    Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
    frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x6d (0x7f0e393a8e7d in /site-packages/torch/lib/libc10.so)
    frame #1: <unknown function> + 0x21a83 (0x7f0e5b3d9a83 in /site-packages/torch/lib/libc10_cuda.so)

Frame 0 is where the exception was made; the stack is the throwing thread's, innermost first.
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits

FORMAT = "c10-backtrace"

_FRAME = re.compile(r"^\s*frame #(\d{1,6}): (.{0,4000}?)(?: \+ (0x[0-9a-fA-F]{1,16}))? \((0x[0-9a-fA-F]{1,16}) in (\S.{0,1000})\)\s*$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    thread: fd.TextThread | None = None
    for i, s in enumerate(lines):
        m = _FRAME.match(s) if not claimed[i] and "frame #" in s else None
        if m is None:
            continue
        if m.group(1) == "0" or thread is None:
            if len(found) >= limits.MAX_BLOCKS_PER_FORMAT:
                break
            finding = fd.Finding(FORMAT, i)
            thread = fd.TextThread(crashed=not found)
            finding.add_thread(thread)
            found.append(finding)
        claimed[i] = 1
        name = m.group(2).strip()
        known = name != "<unknown function>"
        # After "<unknown function>" the offset is the pc's in its library, not in a function.
        offset = fd.hex_int(m.group(3)) if known else None
        thread.add(fd.native_frame(name if known else None, pc=fd.hex_int(m.group(4)), module=m.group(5), offset=offset))
    return found
