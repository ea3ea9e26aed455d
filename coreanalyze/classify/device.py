"""The verdict of a GPU fault or a failed allocation: classification.gpu / .oom, the signature
that groups such crashes (the exception and the kernel; the allocator), and the summary.

The facts come from the report (a GPU core, a GPU text) or, failing that, from the fatal
message (gpu_errors.toml); the stack only says where the host stood.
"""

from __future__ import annotations

import re

from coreanalyze.base.model import GpuFault, OomInfo
from coreanalyze.base.pyfiles import is_library_file
from coreanalyze.classify.frames import FrameView
from coreanalyze.classify.gpuerrors import canonical_exception, match_error, oom_from_text
from coreanalyze.classify.names import normalize_function
from coreanalyze.classify.signature import hashed_signature
from coreanalyze.classify.summary import _where

OOM_ALLOCATOR_FOR_EXCEPTION = "operator new"  # an uncaught std::bad_alloc
PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")


def gpu_facts(kind: str, preset: GpuFault | None, abort_message: str | None) -> GpuFault | None:
    if preset is not None or kind != "gpu-exception":
        return preset
    error = match_error(abort_message)
    return GpuFault(exception=error.matched) if error is not None else None


def oom_facts(kind: str, preset: OomInfo | None, abort_message: str | None, detail: str | None = None) -> OomInfo | None:
    if preset is not None or kind != "out-of-memory":
        return preset
    found = oom_from_text(abort_message) or oom_from_text(detail)
    if found is not None:
        return found
    # An uncaught exception whose type the rules call out-of-memory: operator new threw it.
    return OomInfo(allocator=OOM_ALLOCATOR_FOR_EXCEPTION if detail and "bad_alloc" in detail else None)


def device_signature(kind: str, gpu: GpuFault | None, oom: OomInfo | None) -> str | None:
    """'gpu-exception | Illegal Address | scatter_rows #..', 'out-of-memory | BFC (GPU_0_bfc) #..'."""
    if kind == "gpu-exception" and gpu is not None:
        exception = canonical_exception(gpu.exception) or _without_values(gpu.exception) or "unknown exception"
        parts = [kind, exception, _kernel_key(gpu.kernel)]
    elif kind == "out-of-memory" and oom is not None:
        parts = [kind, oom.allocator or "unknown allocator"]
    else:
        return None
    return hashed_signature(parts)


_TEMPLATE_NOTE = re.compile(r"\s*\[with [^\]]*\]\s*$")  # nvcc's "[with T = float]" after a kernel's name
_VALUES = re.compile(r" of size \d+(?: bytes?)?|\s*\((?:error )?\d+\)|0x[0-9a-fA-F]+|(?<!Xid )\b\d+\b")


def _without_values(exception: str | None) -> str | None:
    """'Invalid __global__ write of size 4 bytes' -> 'Invalid __global__ write': this run's values out."""
    return " ".join(_VALUES.sub("", exception).split()) if exception else None


def _kernel_key(kernel: str | None) -> str:
    """The kernel's name as signatures name functions: no launch configuration, return type,
    parameters or template arguments (nvcc's "[with T = float]" and "<unnamed>" included)."""
    if not kernel:
        return "no kernel"
    name = _TEMPLATE_NOTE.sub("", kernel.split("<<<", 1)[0]).replace("<unnamed>::", "").strip()
    return normalize_function(name) or name


def host_site(views: list[FrameView], culprit: FrameView | None) -> FrameView | None:
    """Where the user stands: the innermost Python frame of their own code, else the culprit."""
    own = (v for v in views if v.python and _own_file(v.frame.file))
    return next(own, None) or culprit


def _own_file(path: str | None) -> bool:
    """Not a framework's: not installed as a package, not compiled Cython (cupy's .pyx frames)."""
    if not path or is_library_file(path) or path.endswith((".pyx", ".pxd")):
        return False
    return not any(marker in path for marker in PACKAGE_DIRS)


def device_summary(
    kind: str, gpu: GpuFault | None, oom: OomInfo | None, signal: str | None, site: FrameView | None
) -> str | None:
    if kind == "gpu-exception" and gpu is not None:
        head = _gpu_head(gpu)
        if site is not None and gpu.kernel and site.name and _kernel_key(site.name) == _kernel_key(gpu.kernel):
            site = None  # the kernel's own frame: not where the host stood
    elif kind == "out-of-memory" and oom is not None:
        head = _oom_head(oom)
    else:
        return None
    if signal:
        head = f"{signal} after a {head}" if kind == "gpu-exception" else f"{signal}: {head}"
    if site is None:
        return f"{head}."
    return f"{head}; the host was in {_where(site)}." if kind == "gpu-exception" else f"{head}; the process was in {_where(site)}."


def _gpu_head(gpu: GpuFault) -> str:
    head = f"GPU exception {gpu.exception}"
    if gpu.kernel:
        head += f" in kernel {_kernel_key(gpu.kernel)}"
    place = [f"{name} ({','.join(map(str, v))})" for name, v in (("block", gpu.block), ("thread", gpu.thread)) if v]
    if gpu.device is not None:
        place.append(f"device {gpu.device}")
    if place:
        head += ", " + ", ".join(place)
    if gpu.address is not None:
        head += f", address 0x{gpu.address:x}"
    return head


def _oom_head(oom: OomInfo) -> str:
    head = f"Out of memory in {oom.allocator or 'an allocator'}"
    if oom.requested is not None:
        head += f": {human_size(oom.requested)} requested"
    held = [f"{human_size(v)} {what}" for what, v in (("in use", oom.in_use), ("limit", oom.limit)) if v is not None]
    if held:
        head += f" ({', '.join(held)})"
    return head


def human_size(n: int) -> str:
    """1073741824 -> '1.00 GiB'; sizes below 1 KiB in bytes."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024 or unit == "EiB":
            return f"{n} B" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{n} B"
