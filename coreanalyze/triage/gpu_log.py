"""GPU failures told by log lines rather than by a stack.

    /pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [1,0,0] Assertion `idx < n` failed.
    W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)...
    I tensorflow/core/common_runtime/bfc_allocator.cc:1100] Stats:
    Limit:        10619240448
    InUse:        10500000000
    E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: ...
    E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2985] Execution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.

A kernel's failed assertion (PyTorch, any CUDA `assert`) gives the block and thread; the BFC
allocator's "ran out of memory" and its stats give the request, the limit and what was in use
(the same line with "The caller indicates that this is not a failure" is a warning, not the
failure); a log line naming a GPU fault gives the error. One finding per kind, the first one.
"""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.classify.gpuerrors import match_error, oom_from_text
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text

FORMAT = "gpu-log"

_ASSERTION = re.compile(
    r"^\s*(?P<file>\S.{0,500}?):(?P<line>\d{1,7}): (?:(?P<func>.{1,600}?): )?block: \[(\d+),(\d+),(\d+)\], "
    r"thread: \[(\d+),(\d+),(\d+)\] Assertion `(?P<cond>.{0,1000})` failed\.?\s*$"
)
_OOM_ANCHORS = ("ran out of memory trying to allocate", "Ran out of memory trying to allocate", "ran out of memory when allocating", "Out of memory while trying to allocate", "Out of memory allocating", "CUDA out of memory", "OOM when allocating")
_NOT_A_FAILURE = "caller indicates that this is not a failure"
_STAT = re.compile(r"^\s*(Limit|InUse|bytes_limit|bytes_in_use):\s+(\d{1,20})\s*$")
# Lines the CUDA driver prints to the process's stderr, and a sanitizer's line copied without
# its "=========" margin.
_DRIVER_LINES = ("Starting GPU coredump generation", "Program hit ")
STATS_SCAN = 200_000  # lines after the OOM line searched for the allocator's stats
_LOG_LINE = re.compile(r"^(?:.{0,80}?\b[EFW]\s?\d{0,4}\s[\d:. ]{0,30}|.{0,40}\b[EFW] )?\S{0,300}\.(?:cc|cpp|h):\d{1,6}\] (.{1,2000})$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found = [_assertions(lines, claimed), _oom(lines, claimed), _fault_line(lines, claimed)]
    return [f for f in found if f is not None]


def _assertions(lines: list[str], claimed: bytearray) -> fd.Finding | None:
    finding = None
    count = 0
    for i, s in enumerate(lines):
        if claimed[i] or "Assertion `" not in s:
            continue
        m = _ASSERTION.match(s)
        if not m:
            continue
        claimed[i] = 1
        count += 1
        if finding is None:
            finding = _assertion_finding(i, m)
    if finding is not None and count > 1:
        finding.warnings.append(f"{count} GPU threads reported the failed assertion; the first is the verdict")
    return finding


def _assertion_finding(i: int, m: re.Match[str]) -> fd.Finding:
    finding = fd.Finding(FORMAT, i)
    where = f"{m.group('file').replace(chr(92), '/').rsplit('/', 1)[-1]}:{m.group('line')}"
    func = (m.group("func") or "").strip()
    kernel = func if func and func != "operator()" else f"{func or 'kernel'} at {where}"
    finding.gpu = model.GpuFault(
        exception="device-side assert triggered",
        kernel=kernel,
        block=[int(m.group(k)) for k in (4, 5, 6)],
        thread=[int(m.group(k)) for k in (7, 8, 9)],
    )
    finding.detail = f"Assertion `{m.group('cond')[:150]}` failed ({where})"
    finding.add_message(gpu_text.MESSAGE_GPU, m.group(0).strip())
    return finding


def _oom(lines: list[str], claimed: bytearray) -> fd.Finding | None:
    for i, s in enumerate(lines):
        if claimed[i] or not any(a in s for a in _OOM_ANCHORS) or _NOT_A_FAILURE in s:
            continue
        oom = oom_from_text(s)
        if oom is None:
            continue
        finding = fd.Finding(FORMAT, i)
        _add_stats(oom, lines, i + 1)
        finding.oom = oom
        finding.add_message(gpu_text.MESSAGE_GPU_LOG, s.strip())
        return finding
    return None


def _add_stats(oom: model.OomInfo, lines: list[str], start: int) -> None:
    """The BFC allocator's "Stats:" block after its OOM line: Limit and InUse in bytes."""
    for s in lines[start : start + STATS_SCAN]:
        if ":" not in s or s[:1] not in (" ", "L", "I", "b"):
            continue
        m = _STAT.match(s)
        if not m:
            continue
        if m.group(1) in ("Limit", "bytes_limit") and oom.limit is None:
            oom.limit = int(m.group(2))
        elif m.group(1) in ("InUse", "bytes_in_use") and oom.in_use is None:
            oom.in_use = int(m.group(2))
        if oom.limit is not None and oom.in_use is not None:
            return


def _fault_line(lines: list[str], claimed: bytearray) -> fd.Finding | None:
    """The first log line that names a GPU fault (the lines stay for the log parsers)."""
    for i, s in enumerate(lines):
        if claimed[i] or not ("] " in s or s.startswith(_DRIVER_LINES)):
            continue
        m = _LOG_LINE.match(s)
        text = m.group(1) if m else s if s.startswith(_DRIVER_LINES) else None
        if text is None:
            continue
        error = match_error(text)
        if error is None or error.fault_kind != "gpu-exception":
            continue
        finding = fd.Finding(FORMAT, i)
        gpu_text.attach_facts(finding, text)
        finding.add_message(gpu_text.MESSAGE_GPU, s.strip())
        return finding
    return None
