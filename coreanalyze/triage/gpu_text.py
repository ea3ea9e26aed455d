"""What the GPU text parsers share: turning an error's text into classification.gpu or .oom."""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.classify.gpuerrors import match_error, oom_from_text
from coreanalyze.triage import findings as fd

# A tool's or a framework's report of a GPU error: as telling as an allocator's message, less
# than a CHECK failure (which names the line that gave up).
MESSAGE_GPU = fd.MESSAGE_ALLOCATOR
# An allocator's log line about the failure: the exception or fatal line that ended the process
# (if the text has one) says more.
MESSAGE_GPU_LOG = fd.MESSAGE_TERMINATE
# Words of GPU errors that the error table has no entry for (an unnamed CUDA error).
GPU_WORDS = re.compile(r"\bCUDA (?:driver )?error\b|\bcuda(?:Error|_error)\w*|\bCUDA_ERROR_\w+")
# XLA names the kernel it could not launch: "Failed to launch CUDA kernel: fusion_2 with block dimensions: 256x1x1".
# The host call that reported the error: compute-sanitizer's "on CUDA API call to cudaDeviceSynchronize."
API_CALL = re.compile(r"\bon CUDA API call to (\w{1,100})")
_XLA_KERNEL = re.compile(r"[Ff]ailed to launch (?:CUDA |ROCm )?kernel:? ([\w.$-]{1,300})(?: with block dimensions: (\d+)x(\d+)x(\d+))?")


def attach_facts(finding: fd.Finding, text: str) -> None:
    """Set the finding's oom (an allocation failed) or gpu facts (anything else) from the text."""
    error = match_error(text)
    oom = oom_from_text(text)
    if oom is not None or (error is not None and error.fault_kind == "out-of-memory"):
        finding.oom = oom or model.OomInfo()
        return
    gpu = model.GpuFault(exception=error.matched if error is not None else _unnamed_error(text))
    kernel = _XLA_KERNEL.search(text)
    if kernel:
        gpu.kernel = kernel.group(1)
    api = API_CALL.search(text)
    if api:
        gpu.api = api.group(1)
    finding.gpu = gpu


def _unnamed_error(text: str) -> str:
    m = GPU_WORDS.search(text)
    return m.group(0) if m else text[:120]
