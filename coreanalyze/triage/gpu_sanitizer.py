"""NVIDIA compute-sanitizer (and cuda-memcheck) reports: memcheck, racecheck, initcheck, synccheck.

    ========= COMPUTE-SANITIZER
    ========= Invalid __global__ write of size 4 bytes
    =========     at scatter_rows+0xb0
    =========     by thread (1,0,0) in block (0,0,0)
    =========     Access to 0x83d78a800200 is out of bounds
    =========     Saved host backtrace up to driver entry point at kernel launch time
    =========         Host Frame: launchKernel(long, ...) in driver.cpp:8369 [0xda7f] in driver.cpython-312-x86_64-linux-gnu.so
    =========         Host Frame: launch in s2_illegal_address.py:16
    ...
    ========= ERROR SUMMARY: 33 errors

The first error is the verdict: its class, the kernel (with the offset of the access), the
thread and block, the address, and the host stack that launched the kernel (its Python frames
too, in newer versions). The kernel is put on top of that stack: it is where the fault is.
"""

from __future__ import annotations

import re

from coreanalyze.base import model
from coreanalyze.triage import findings as fd
from coreanalyze.triage import gpu_text, limits

FORMAT = "compute-sanitizer"

_PREFIX = re.compile(r"^[ \t]*=========(?: |$)")
_ERROR = re.compile(
    r"^(Invalid __\w+__ (?:read|write|atomic)\w* of size \d+(?: bytes)?|Uninitialized __\w+__ memory read of size \d+(?: bytes)?"
    r"|(?:Error|Warning): Race reported between .{1,300}|ERROR: Potential \w+ hazard detected.{0,300}|Barrier error detected\..{0,200}"
    r"|Invalid (?:global|shared|local) (?:read|write) of size \d+|Misaligned \w+ Address|Out-of-range \w+ Address"
    r"|Malloc/Free error encountered.{0,200}|Program hit \w+ \(error \d+\) due to .{1,300}|Device-side assertion failed.{0,200})$"
)
_AT = re.compile(r"^at (?:(0x[0-9a-fA-F]+) in (?:(\S+?):(\d+):)?(.+)|(.+)\+(0x[0-9a-fA-F]+)(?: in (\S+?):(\d+))?)$")
_BY = re.compile(r"by thread \((\d+),(\d+),(\d+)\) in block \((\d+),(\d+),(\d+)\)")
_ADDRESS = re.compile(r"^(?:Access (?:to|at)|Address) (0x[0-9a-fA-F]+)\b")
# compute-sanitizer 12 prints a host frame's module on a line of its own: "in /lib/.../libcuda.so.1".
_MODULE_LINE = re.compile(r"^in (/\S.*|\S+\.so(?:\.\d+)*)$")
_HOST = re.compile(r"^Host Frame:\s?(.*?)\s*$")
_HOST_NEW = re.compile(r"^(.*?)(?: in (\S+?):(\d+))?(?:\s*\[(0x[0-9a-fA-F]+)\])?(?: in (\S+))?$")
_HOST_OLD = re.compile(r"^(\S+) \((.+?) \+ (0x[0-9a-fA-F]+)\) \[(0x[0-9a-fA-F]+)\]$")
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_PYTHON_FILE = re.compile(r"\.py[cw]?$")


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    body = [(i, _PREFIX.sub("", s, count=1).strip()) for i, s in enumerate(lines) if not claimed[i] and _PREFIX.match(s)]
    errors = [k for k, (_, s) in enumerate(body) if _ERROR.match(s)]
    if not errors:
        return []
    finding = fd.Finding(FORMAT, body[errors[0]][0])
    first_end = errors[1] if len(errors) > 1 else len(body)
    _read_error(finding, body[errors[0]:first_end])
    for i, s in body:
        claimed[i] = 1
        summary = _SUMMARY.search(s)
        if summary:
            finding.warnings.append(f"compute-sanitizer reported {summary.group(1)} errors; the first one is the verdict")
    return [finding]


def _read_error(finding: fd.Finding, block: list[tuple[int, str]]) -> None:
    what = block[0][1]
    finding.detail = what[:200]
    gpu = model.GpuFault(exception=what[:200])
    api = gpu_text.API_CALL.search(what)
    if api:
        gpu.api = api.group(1)
    thread = fd.TextThread(crashed=True)
    kernel_frame = None
    for _, s in block[1:]:
        if len(thread.frames) >= limits.MAX_FRAMES_PER_THREAD:
            break
        kernel_frame = kernel_frame or _kernel(s, gpu)
        _place(s, gpu)
        host = _HOST.match(s)
        if host:
            thread.add(_host_frame(host.group(1)))
        module = _MODULE_LINE.match(s) if thread.frames and not host else None
        if module and thread.frames[-1].module is None:
            thread.frames[-1].module = module.group(1)
    if kernel_frame is not None:
        thread.frames.insert(0, kernel_frame)
        for k, f in enumerate(thread.frames):
            f.index = k
    finding.gpu = gpu
    where = f" at {gpu.kernel}" if gpu.kernel else ""
    finding.add_message(gpu_text.MESSAGE_GPU, f"compute-sanitizer: {what}{where}")
    finding.add_thread(thread)


def _kernel(s: str, gpu: model.GpuFault) -> model.Frame | None:
    m = _AT.match(s)
    if not m:
        return None
    if m.group(1):  # cuda-memcheck: "at 0x00000128 in vectorAdd.cu:33:vectorAdd(float const*, ...)"
        name, offset, file, line = m.group(4).strip(), fd.hex_int(m.group(1)), m.group(2), m.group(3)
    else:  # "at scatter_rows+0xb0" / "at kernel(int*)+0x70 in file.cu:12"
        name, offset, file, line = m.group(5), fd.hex_int(m.group(6)), m.group(7), m.group(8)
    gpu.kernel = fd.demangle(name) or name
    gpu.kernel_offset = offset
    return fd.native_frame(name, offset=offset, file=file, line=int(line) if line else None)


def _place(s: str, gpu: model.GpuFault) -> None:
    by = _BY.search(s)
    if by and gpu.thread is None:
        gpu.thread = [int(by.group(k)) for k in (1, 2, 3)]
        gpu.block = [int(by.group(k)) for k in (4, 5, 6)]
    address = _ADDRESS.match(s)
    if address and gpu.address is None:
        gpu.address = fd.hex_int(address.group(1))


def _host_frame(text: str) -> model.Frame:
    old = _HOST_OLD.match(text)
    if old:  # "/usr/lib/libcuda.so (cuLaunchKernel + 0x2cd) [0x24a5dd]"
        return fd.native_frame(old.group(2), module=old.group(1), offset=fd.hex_int(old.group(3)))
    m = _HOST_NEW.match(text)
    name, file, line, module = m.group(1).strip(), m.group(2), m.group(3), m.group(5)
    if file and _PYTHON_FILE.search(file) and module is None:
        return fd.python_frame(name, file, int(line))
    # The bracketed number is the pc's offset in its module, not in the function: left out.
    return fd.native_frame(name or None, module=module, file=file, line=int(line) if line else None)
