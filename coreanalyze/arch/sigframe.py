"""The shape of the signal frame the kernel pushes on a thread's stack before it runs a handler.

Each architecture module fills one SignalFrameLayout from its kernel headers. Offsets are
relative to the stack pointer of the signal-trampoline frame (gdb's `<signal handler called>`):
that is the stack pointer the handler returns to, and the only address a reader needs.
"""

from __future__ import annotations

from dataclasses import dataclass

# Every frame the kernel builds starts 16-byte aligned (the ABIs of x86-64 and aarch64).
FRAME_ALIGNMENT = 16
WORD = 8


@dataclass(frozen=True)
class SignalFrameLayout:
    siginfo: int  # offset of struct siginfo (128 bytes)
    registers: int  # offset of the first saved register of the sigcontext
    register_names: tuple[str, ...]  # 8-byte words from `registers` on, named as gdb names them
    pc: str  # which of them is the interrupted pc
    sp: str  # ... and the interrupted stack pointer
    # Other words of the saved context, by name and offset: x86-64's trap number, error code
    # and cr2, aarch64's fault_address. The kernel writes them whatever the handler's flags.
    context_words: tuple[tuple[str, int], ...] = ()
    # Offset of a word that holds the trampoline's own address (x86-64's pretcode), or None.
    restorer: int | None = None
    # A record the kernel always writes at a fixed offset (aarch64's FPSIMD context header):
    # (offset, the bytes), or None.
    marker: tuple[int, bytes] | None = None

    @property
    def start(self) -> int:
        """The lowest offset this layout reads (negative when a word sits below the sp)."""
        offsets = [0, self.siginfo, self.registers, *(o for _, o in self.context_words)]
        offsets += [o for o in (self.restorer, self.marker and self.marker[0]) if o is not None]
        return min(offsets)

    @property
    def end(self) -> int:
        """One past the highest offset this layout reads."""
        ends = [self.siginfo + SIGINFO_SIZE, self.registers + WORD * len(self.register_names)]
        ends += [o + WORD for _, o in self.context_words]
        if self.restorer is not None:
            ends.append(self.restorer + WORD)
        if self.marker is not None:
            ends.append(self.marker[0] + len(self.marker[1]))
        return max(ends)


SIGINFO_SIZE = 128
