"""The signal frame a handler runs over, read back from the core's memory: the original siginfo
and the registers of the code the signal interrupted.

Before the kernel runs a handler it pushes a frame (x86-64 and aarch64 `struct rt_sigframe`)
holding the interrupted registers and, for a handler installed with SA_SIGINFO, the siginfo it
delivered; sigreturn restores the registers from there. A handler that re-raises (faulthandler,
absl, a crash reporter) leaves that frame on the stack under its own frames, so the core still
holds the first signal. The layouts are data (coreanalyze.arch); this module reads and checks
them.

Everything read here is untrusted. A frame is found by a bounded scan from the stack pointer and
kept only when its saved pc is the interrupted frame's pc as the debugger unwound it (or, with no
such frame, in executable memory) and its saved sp is mapped. Its siginfo is believed only when
it agrees with what else is known: the kernel leaves that area as it was (old stack bytes) for a
handler without SA_SIGINFO, and Python's faulthandler is one.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coreanalyze.arch.sigframe import FRAME_ALIGNMENT, SIGINFO_SIZE, WORD, SignalFrameLayout
from coreanalyze.base.model import SignalInfo
from coreanalyze.base.signals import SENDER_CODES, SI_KERNEL
from coreanalyze.corefile.notes import parse_siginfo
from coreanalyze.corefile.tables import MAX_SIGNAL

# How far above the stack pointer a handler's frames may reach before its signal frame: a
# crash reporter formatting a stack trace uses a few pages, an alternate signal stack is
# SIGSTKSZ to a few hundred KiB.
MAX_SCAN = 512 * 1024
# Candidates tried when no anchor narrows the scan: every aligned slot of a 64 KiB window.
MAX_CANDIDATES = 4096
# si_code values the kernel and the libc write: SI_ASYNCNL (-60) .. SI_KERNEL (0x80).
MIN_CODE, MAX_CODE = -60, SI_KERNEL
# Linux's PID_MAX_LIMIT: no sender pid is above it.
MAX_PID = 4 * 1024 * 1024


@dataclass(frozen=True)
class SignalFrame:
    address: int  # the trampoline frame's stack pointer the frame was read at
    siginfo: SignalInfo  # as the bytes say: meaningful only where siginfo_written() agrees
    registers: dict[str, int]  # the interrupted registers, named as gdb names them
    context: dict[str, int]  # the layout's context words (trap number, fault address, ...)


def decode_frame(data: bytes, layout: SignalFrameLayout, address: int = 0, little_endian: bool = True) -> SignalFrame | None:
    """The frame in data, which holds the bytes from address + layout.start on; None when data is
    too short. Nothing is checked here."""
    base = -layout.start
    if len(data) < base + layout.end:
        return None
    fmt = "<" if little_endian else ">"
    siginfo = parse_siginfo(data[base + layout.siginfo : base + layout.siginfo + SIGINFO_SIZE], fmt)
    words = struct.unpack_from(f"{fmt}{len(layout.register_names)}Q", data, base + layout.registers)
    context = {name: struct.unpack_from(fmt + "Q", data, base + offset)[0] for name, offset in layout.context_words}
    return SignalFrame(address, siginfo, dict(zip(layout.register_names, words)), context)


def implausible(frame: SignalFrame, layout: SignalFrameLayout, memory, expected_pc: int | None = None) -> str | None:
    """Why frame cannot be the signal frame under the handler, or None when it can be."""
    pc, sp = frame.registers.get(layout.pc), frame.registers.get(layout.sp)
    if pc is None or sp is None:
        return "it has no pc or stack pointer"
    if expected_pc is not None:
        # The debugger unwound through this very frame: the same pc means the same place.
        if pc != expected_pc:
            return f"its saved pc {pc:#x} is not the interrupted frame's pc {expected_pc:#x}"
    else:
        segment = memory.segment_containing(pc)
        if segment is None or not segment.executable:
            return f"its saved pc {pc:#x} is not in executable memory"
    if memory.segment_containing(sp) is None:
        return f"its saved stack pointer {sp:#x} is not mapped"
    return None


def siginfo_written(frame: SignalFrame, layout: SignalFrameLayout, number: int | None = None) -> bool:
    """Whether the frame's siginfo is one the kernel wrote for this signal, not old stack bytes.

    number: the signal the handler took, where it is known (a handler that re-raises its own
    signal). A fault's address must be the one the saved context names (cr2, fault_address)."""
    info = frame.siginfo
    if info.number is None or not 0 < info.number <= MAX_SIGNAL or (number is not None and info.number != number):
        return False
    if info.code is None or not MIN_CODE <= info.code <= MAX_CODE:
        return False
    if info.code in SENDER_CODES:
        return info.sender_pid is not None and 0 <= info.sender_pid <= MAX_PID
    fault_address = frame.context.get("cr2", frame.context.get("fault_address"))
    if info.address is not None and info.name in ("SIGSEGV", "SIGBUS") and fault_address is not None:
        return info.address == fault_address
    if info.address is not None and info.name in ("SIGILL", "SIGFPE"):
        return info.address == frame.registers.get(layout.pc)
    return True


def _candidates(window: bytes, window_start: int, layout: SignalFrameLayout, trampoline_pc: int | None, little_endian: bool):
    """Trampoline stack pointers to try, lowest first: where an anchor (the restorer word, the
    marker record) sits, else every aligned slot of the first 64 KiB."""
    if layout.restorer is not None and trampoline_pc is not None:
        needle, at = trampoline_pc.to_bytes(WORD, "little" if little_endian else "big"), layout.restorer
    elif layout.marker is not None:
        at, needle = layout.marker
    else:
        first = -(-(window_start - layout.start) // FRAME_ALIGNMENT) * FRAME_ALIGNMENT
        yield from range(first, first + MAX_CANDIDATES * FRAME_ALIGNMENT, FRAME_ALIGNMENT)
        return
    found = window.find(needle)
    while found >= 0:
        address = window_start + found - at
        if address % FRAME_ALIGNMENT == 0 and address + layout.start >= window_start:
            yield address
        found = window.find(needle, found + 1)


def find_signal_frame(
    memory,
    layout: SignalFrameLayout,
    stack_pointer: int,
    *,
    trampoline_pc: int | None = None,
    expected_pc: int | None = None,
    little_endian: bool = True,
    limit: int = MAX_SCAN,
) -> tuple[SignalFrame | None, str]:
    """The innermost plausible signal frame at or above stack_pointer: (the frame, "") or
    (None, why none was found) for a warning."""
    window = memory.read_available(stack_pointer, limit)
    if not window:
        return None, f"the stack at {stack_pointer:#x} is not in the core"
    rejected = ""
    for address in _candidates(window, stack_pointer, layout, trampoline_pc, little_endian):
        lo = address + layout.start - stack_pointer
        data = window[lo : lo + layout.end - layout.start]
        frame = decode_frame(data, layout, address, little_endian)
        if frame is None:
            break  # past the bytes the core holds
        why = implausible(frame, layout, memory, expected_pc)
        if why is None:
            return frame, ""
        rejected = rejected or f"the one at {address:#x} is damaged: {why}"
    return None, rejected or f"none within {len(window) // 1024} KiB above the stack pointer {stack_pointer:#x}"
