"""classification.gpu as labelled facts, in one order for every report format (the formats
escape them: everything here comes from a core)."""

from __future__ import annotations

from coreanalyze.base.model import GpuFault

_STATUS_WORDS = {"not-found": "not found beside the core", "unreadable": "found, but could not be read"}


def triple(values) -> str:
    """(x,y,z) as CUDA tools write block and thread indices; "?" when unknown."""
    return "(" + ",".join(str(v) for v in values) + ")" if values else "?"


def gpu_facts(gpu: GpuFault | None) -> list[tuple[str, str]]:
    """(label, value) rows of what the GPU did; [] without a GPU fault."""
    if gpu is None:
        return []
    rows: list[tuple[str, str]] = []
    if gpu.exception:
        rows.append(("Exception", gpu.exception))
    if gpu.kernel:
        rows.append(("Kernel", gpu.kernel))
    if gpu.device is not None:
        about = ", ".join(p for p in (gpu.device_name, gpu.sm_arch) if p)
        rows.append(("Device", f"{gpu.device}" + (f" ({about})" if about else "")))
    place = [f"{label} {value}" for label, value in (("SM", gpu.sm), ("warp", gpu.warp), ("lane", gpu.lane)) if value is not None]
    if place:
        rows.append(("SM / warp / lane", ", ".join(place)))
    if gpu.pc is not None:
        where = f" (kernel +0x{gpu.kernel_offset:x})" if gpu.kernel_offset is not None else ""
        if gpu.function:
            where = f" ({gpu.function}" + (f" +0x{gpu.function_offset:x})" if gpu.function_offset is not None else ")")
        rows.append(("PC", f"0x{gpu.pc:x}{where}"))
    launch = [text for text in (f"grid {gpu.grid}" if gpu.grid is not None else None,
                                f"block {triple(gpu.block)}" if gpu.block else None,
                                f"thread {triple(gpu.thread)}" if gpu.thread else None) if text]  # fmt: skip
    if launch:
        rows.append(("Grid / block / thread", ", ".join(launch)))
    if gpu.address is not None:
        rows.append(("Address", f"0x{gpu.address:x}"))
    if gpu.api:
        rows.append(("Host call", gpu.api))
    if gpu.gpu_core:
        status = _STATUS_WORDS.get(gpu.gpu_core_status or "")
        rows.append(("GPU core", gpu.gpu_core + (f" ({status})" if status else "")))
    return rows
