"""Stacks that name only source locations, one per line (sanitizer output without symbols
folded to files, IDE copies, hand-trimmed tickets):

    #0 tensorflow/core/kernels/conv_ops.cc:659
    #1 tensorflow/core/framework/op_kernel.cc:1410
    at third_party/xla/xla/service/cpu/runtime.cc:88

Two or more such lines in a row make a stack; each frame has a file and a line and no name
(the classifier reads the subsystem from the paths).
"""

from __future__ import annotations

import re

from coreanalyze.triage import findings as fd
from coreanalyze.triage import limits

FORMAT = "source-lines"

_LINE = re.compile(
    r"^\s*(?:#\d{1,6}\s+)?(?:at\s+)?(?:0x[0-9a-fA-F]{1,16}\s+(?:in\s+)?)?"
    r"((?:[\w.+-]{1,200}/){0,40}[\w.+-]{1,200}\.(?:cc|cpp|cxx|c|h|hh|hpp|hxx|cu|cuh|inc|mm|m|S|s)):(\d{1,9})(?::\d{1,6})?\s*$"
)
MIN_FRAMES = 2


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n and len(found) < limits.MAX_BLOCKS_PER_FORMAT:
        run = []
        j = i
        while j < n and not claimed[j] and (m := _LINE.match(lines[j])) is not None:
            run.append((j, m))
            j += 1
        if len(run) < MIN_FRAMES:
            i = max(j, i + 1)
            continue
        finding = fd.Finding(FORMAT, i)
        thread = fd.TextThread(crashed=True)
        for k, m in run:
            thread.add(fd.native_frame(None, file=m.group(1), line=int(m.group(2))))
            claimed[k] = 1
        finding.add_thread(thread)
        found.append(finding)
        i = j
    return found
