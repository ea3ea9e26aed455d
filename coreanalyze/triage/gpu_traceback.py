"""A Python exception that reports a CUDA, XLA or allocator error, with its traceback.

    Traceback (most recent call last):
      File "/home/user/job/train.py", line 17, in launch
        cp.cuda.Device().synchronize()
      File "cupy_backends/cuda/api/runtime.pyx", line 146, in cupy_backends.cuda.api.runtime.check_status
    cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered

Also PyTorch's `RuntimeError: CUDA error: device-side assert triggered` and
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`, TensorFlow's
`InternalError: GPU sync failed` / `ResourceExhaustedError: OOM when allocating tensor ...` and
JAX's `XlaRuntimeError: INTERNAL: ... CUDA_ERROR_...` / `RESOURCE_EXHAUSTED: Out of memory ...`.
Only exceptions that name such an error are read (gpu_errors.toml); the first one is the
verdict (the ones after it are usually the same error seen again during cleanup). An
exception line of that kind without a traceback counts too.
"""

from __future__ import annotations

import re

from coreanalyze.classify.gpuerrors import match_error, oom_from_text
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text, limits

FORMAT = "python-gpu-error"

_START = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_FILE = re.compile(r'^\s*File "(.{1,1000})", line (\d{1,9}), in (\S.{0,300})$')
_EXCEPTION = re.compile(r"^\s*((?:[A-Za-z_][\w]*\.){0,8}[A-Za-z_]\w*(?:Error|Exception|Exhausted\w*)): (.{1,16384})$")
# Lines PyTorch and JAX print under the exception line that belong to it.
_CONTINUATION = re.compile(r"^(?:CUDA kernel errors might|For debugging consider|Compile with `TORCH_USE_CUDA_DSA`|Search for `cudaError|BufferAssignment OOM|If you want to disable|Device-side assertion tracking)")
TRACEBACK_LINES = 4000
# TensorFlow's exception for a step that failed in the graph names no error itself:
# "InternalError: 2 root error(s) found." with each error on its own line below it,
# "  (0) Internal: Failed to complete all kernels launched on stream ...: CUDA_ERROR_...".
_ROOT_ERRORS = re.compile(r"\broot error\(s\) found\.?\s*$")
_ROOT_ERROR = re.compile(r"^\s*\(\d{1,4}\)\s+[A-Z]\w{0,40}:\s+(\S.{0,16383})$")
# The node the error came from, on the line under it: "[[{{node cluster_0_1/xla_run}}]]".
_NODE = re.compile(r"^\s*\[\[\{\{node [^}]{1,500}\}\}\]\]")
ROOT_ERROR_LINES = 12


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    found: list[fd.Finding] = []
    i, n = 0, len(lines)
    while i < n:
        if claimed[i]:
            i += 1
            continue
        end, frames = _traceback(lines, i) if _START.match(lines[i]) else (i, [])
        m = _EXCEPTION.match(lines[end]) if end < n and not claimed[end] else None
        exception = _with_root_error(m, lines, end) if m is not None else ""
        if m is None or not _names_gpu_error(exception):
            i += 1
            continue
        for k in range(i, end + 1):
            claimed[k] = 1
        if found:
            found[0].warnings.append(f"a later GPU error was left out: {exception[:200]}")
        else:
            found.append(_finding(i, frames, exception, lines[end + 1 : end + 6]))
        i = end + 1
    return found[: limits.MAX_BLOCKS_PER_FORMAT]


def _with_root_error(m: re.Match, lines: list[str], end: int) -> str:
    """The exception line, or for TensorFlow's "N root error(s) found." the exception's type with
    its first root error (the line below that says what failed)."""
    exception = m.group(0).strip()
    if not _ROOT_ERRORS.search(m.group(2)):
        return exception
    below = lines[end + 1 : end + 1 + ROOT_ERROR_LINES]
    for k, line in enumerate(below):
        root = _ROOT_ERROR.match(line)
        if root:
            node = _NODE.match(below[k + 1]) if k + 1 < len(below) else None
            return f"{m.group(1)}: {root.group(1).strip()}" + (f" {node.group(0).strip()}" if node else "")
    return exception


def _names_gpu_error(line: str) -> bool:
    error = match_error(line)
    return error is not None or oom_from_text(line) is not None or gpu_text.GPU_WORDS.search(line) is not None


def _traceback(lines: list[str], start: int) -> tuple[int, list[fd.model.Frame]]:
    """(index of the exception line, frames innermost first) of the traceback at start."""
    frames: list[fd.model.Frame] = []
    j = start + 1
    limit = min(len(lines), start + TRACEBACK_LINES)
    while j < limit:
        fm = _FILE.match(lines[j])
        if fm:
            frames.append(fd.python_frame(fm.group(3).strip(), fm.group(1), int(fm.group(2))))
        elif _EXCEPTION.match(lines[j]):
            break
        j += 1
    return j, frames[::-1]


def _finding(line: int, frames: list[fd.model.Frame], exception: str, after: list[str]) -> fd.Finding:
    finding = fd.Finding(FORMAT, line)
    thread = fd.TextThread(crashed=True)
    for f in frames:
        thread.add(f)
    finding.add_thread(thread)
    text = " ".join([exception, *(s.strip() for s in after if _CONTINUATION.match(s.strip()))])
    finding.add_message(gpu_text.MESSAGE_GPU, exception)
    finding.detail = exception.split(": ", 1)[1][:200] if ": " in exception else exception[:200]
    gpu_text.attach_facts(finding, text)
    return finding
