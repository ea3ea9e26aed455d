"""Open MPI's crash handler block (mpirun / Horovod jobs), each line behind `[host:pid] `:

    [node1:03599] *** Process received signal ***
    [node1:03599] Signal: Segmentation fault (11)
    [node1:03599] Signal code: Address not mapped (1)
    [node1:03599] Failing at address: 0x88
    [node1:03599] [ 0] /lib/x86_64-linux-gnu/libpthread.so.0(+0x11390)[0x7fe26f028390]
    [node1:03599] [ 1] .../horovod/tensorflow/mpi_lib.so(+0x34887)[0x7fe1b6d46887]
    [node1:03599] *** End of error message ***

Frame [0] is the kernel's return trampoline (the handler leaves its own frames out); the
frames are backtrace_symbols() lines. Several ranks often crash at once and their lines
interleave: the first process that names a signal (or prints frames) is the crash, the other
blocks are counted.
"""

from __future__ import annotations

import re

from coreanalyze.triage import backtrace_symbols, limits, signals
from coreanalyze.triage import findings as fd

FORMAT = "openmpi"

# "[host:pid] " (or "[host] "), then the handler's line.
_PREFIX = re.compile(r"^\[([^\]\s]{1,200})\]\s?(.*)$")
_SIGNAL = re.compile(r"^Signal: (.{1,60}?) \((\d{1,2})\)$")
_CODE = re.compile(r"^Signal code: (.{0,80}?) ?\((-?\d{1,4})\)$")
_ADDRESS = re.compile(r"^Failing at address: (0x[0-9a-fA-F]{1,16}|\(nil\))$")
_FRAME = re.compile(r"^\[\s*(\d{1,4})\]\s+(.*)$")
_MARKERS = ("*** Process received signal ***", "*** End of error message ***")
# si_code names Open MPI prints (strsignal-like texts) -> the kernel's names.
_CODE_NAMES = {
    "address not mapped": "SEGV_MAPERR",
    "invalid permissions": "SEGV_ACCERR",
    "invalid address alignment": "BUS_ADRALN",
    "nonexistent physical address": "BUS_ADRERR",
    "integer divide-by-zero": "FPE_INTDIV",
    "illegal opcode": "ILL_ILLOPC",
}


class _Block:
    def __init__(self, line: int, key: str) -> None:
        self.finding = fd.Finding(FORMAT, line)
        self.thread = fd.TextThread(crashed=True)
        self.key = key
        host, _, pid = key.rpartition(":")
        if host and pid.isdigit():
            self.finding.pid = int(pid)


def parse(lines: list[str], claimed: bytearray) -> list[fd.Finding]:
    blocks: dict[str, _Block] = {}
    for i, line in enumerate(lines):
        if claimed[i] or "]" not in line:
            continue
        m = _PREFIX.match(line.strip())
        if m is None:
            continue
        key, body = m.group(1), m.group(2).strip()
        block = blocks.get(key)
        if body in _MARKERS:
            if block is None and len(blocks) < limits.MAX_THREADS:
                blocks[key] = _Block(i, key)
            claimed[i] = block is not None or key in blocks
            continue
        if block is None and not body.startswith(("Signal: ", "Signal code: ", "Failing at address: ")):
            continue
        if block is None:
            if len(blocks) >= limits.MAX_THREADS:
                continue
            block = blocks[key] = _Block(i, key)
        if _read_line(block, body):
            claimed[i] = 1
    crashed = [b for b in blocks.values() if b.finding.signal is not None or b.thread.frames]
    if not crashed:
        return []
    first = min(crashed, key=lambda b: (b.finding.signal is None, b.finding.line))
    first.finding.add_thread(_lay_out(first.thread))
    if len(crashed) > 1:
        first.finding.warnings.append(f"{len(crashed) - 1} more process(es) printed Open MPI's crash block; the first is shown")
    return [first.finding]


def _read_line(block: _Block, body: str) -> bool:
    f = block.finding
    if (m := _SIGNAL.match(body)) is not None:
        name = signals.normalize_name(m.group(2)) or signals.from_description(m.group(1))
        f.set_signal(name, fd.SIGNAL_NAMED, **_carried(f))
        return True
    if (m := _CODE.match(body)) is not None:
        if f.signal is not None:
            f.signal.code = int(m.group(2))
            f.signal.code_name = _CODE_NAMES.get(m.group(1).strip().lower())
        return True
    if (m := _ADDRESS.match(body)) is not None:
        address = 0 if m.group(1) == "(nil)" else fd.hex_int(m.group(1))
        if f.signal is not None:
            f.signal.address = address
            f.signal_strength = max(f.signal_strength, fd.SIGNAL_WITH_ADDRESS)
        f.fault_address = address
        return True
    if (m := _FRAME.match(body)) is not None:
        frame = backtrace_symbols.frame_of(m.group(2))
        if frame is not None:
            block.thread.add(frame)
        return True
    return False


def _carried(f: fd.Finding) -> dict:
    """What an earlier line of the block already said (the address may precede the name)."""
    return {"address": f.fault_address} if f.fault_address is not None else {}


def _lay_out(thread: fd.TextThread) -> fd.TextThread:
    """Frame [0] without a name in libc / libpthread is the signal trampoline: show it as gdb does."""
    frames = thread.frames
    if frames and frames[0].function is None:
        base = (frames[0].module or "").rsplit("/", 1)[-1]
        if base.startswith(("libc.so", "libpthread.so", "libc-")):
            frames = [fd.signal_handler_frame(), *frames[1:]]
    out = fd.TextThread(crashed=True)
    for frame in frames:
        out.add(frame)
    return out
