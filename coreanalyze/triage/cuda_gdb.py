"""cuda-gdb on a GPU core dump or a live GPU exception.

    Opening GPU coredump: cores/gpu.564.nvcudmp
    [Current focus set to CUDA kernel 0, grid 2, block (0,0,0), thread (0,0,0), device 0, sm 124, warp 1, lane 0]
    CUDA Exception: Warp Illegal Address
    The exception was triggered at PC 0x7f163b7aceb0  scatter_rows
    #0  0x00007f163b7acec0 in scatter_rows<<<(1,1,1),(32,1,1)>>> ()
      Dev PCI Bus/Dev ID                  Name Description SM Type SMs Warps/SM ...
    *   0        00:06.0 NVIDIA H100 80GB HBM3   GH100GL-A   sm_90 132       64 ...

A live session says `received signal CUDA_EXCEPTION_14, Warp Illegal Address.` and
`[Switching focus to CUDA kernel ...]`. The focus is the faulting lane: kernel, grid, block,
thread, device, SM, warp, lane; the exception line names what happened and the PC line where.
The backtrace lines are left to the gdb parser (they are gdb's frames).
"""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text

FORMAT = "cuda-gdb"

_FOCUS = re.compile(
    r"\[(?:Current focus set to|Switching focus to) CUDA kernel (\d+), grid (\d+), block \((\d+),(\d+),(\d+)\), "
    r"thread \((\d+),(\d+),(\d+)\), device (\d+), sm (\d+), warp (\d+), lane (\d+)\]"
)
_EXCEPTION = re.compile(r"^\s*CUDA Exception: (.{1,200}?)\s*$|received signal CUDA_EXCEPTION_\d+, (.{1,200}?)\.?\s*$")
_PC = re.compile(r"^\s*The exception was triggered at PC (0x[0-9a-fA-F]{1,16})(?:\s+(\S.{0,300}?))?\s*$")
_KERNEL_FRAME = re.compile(r"^(?:#\d+\s+)?(?:0x[0-9a-fA-F]+ in )?([^\s<(]{1,300})<<<")
_CORE = re.compile(r"^\s*Opening GPU coredump: (\S.{0,500}?)\s*$")
_DEVICE_ROW = re.compile(r"^\*?\s+(\d+)\s+[0-9a-fA-F:.]+\s+(.+?)\s{2,}\S+\s+(sm_\d+\w*)\s+\d+")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    start = next((i for i, s in enumerate(lines) if not claimed[i] and ("CUDA Exception: " in s or "CUDA_EXCEPTION_" in s)), None)
    if start is None:
        return []
    m = _EXCEPTION.search(lines[start])
    if m is None:
        return []
    finding = fd.Finding(FORMAT, start)
    gpu = model.GpuFault(exception=(m.group(1) or m.group(2)).strip())
    for i, s in enumerate(lines):
        if not claimed[i] and _read_line(s, gpu):
            claimed[i] = 1
    finding.gpu = gpu
    finding.add_message(gpu_text.MESSAGE_GPU, f"cuda-gdb: CUDA Exception: {gpu.exception}" + (f" in {gpu.kernel}" if gpu.kernel else ""))
    return [finding]


def _read_line(s: str, gpu: model.GpuFault) -> bool:
    """Take what the line says about the faulting lane; True for lines this format owns."""
    focus = _FOCUS.search(s)
    if focus and gpu.grid is None:
        v = [int(x) for x in focus.groups()]
        gpu.grid, gpu.block, gpu.thread = v[1], v[2:5], v[5:8]
        gpu.device, gpu.sm, gpu.warp, gpu.lane = v[8], v[9], v[10], v[11]
        return True
    pc = _PC.match(s)
    if pc:
        gpu.pc = gpu.pc if gpu.pc is not None else fd.hex_int(pc.group(1))
        name = (pc.group(2) or "").strip()
        if name and not name.startswith("(") and gpu.kernel is None:
            gpu.kernel = name
        return True
    kernel = _KERNEL_FRAME.match(s.strip())
    if kernel and gpu.kernel is None:
        gpu.kernel = kernel.group(1)
    device = _DEVICE_ROW.match(s)
    if device and gpu.device_name is None and (gpu.device is None or int(device.group(1)) == gpu.device):
        gpu.device_name, gpu.sm_arch = device.group(2).strip(), device.group(3)
    core = _CORE.match(s)
    if core:
        gpu.gpu_core = gpu.gpu_core or core.group(1)
    return _EXCEPTION.search(s) is not None or core is not None
