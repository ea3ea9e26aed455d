"""x86-64: auxv feature bits people ask about, and the signal frame's layout."""

from typing import Mapping

from coreanalyze.arch.sigframe import SignalFrameLayout

NAME = "x86_64"
GDB_NAME = "i386:x86-64"

# Registers by role, named as the core's notes and gdb name them.
PC = "rip"
SP = "rsp"
# The thread pointer (TLS base): static TLS sits just below it.
THREAD_POINTER = "fs_base"
ADDRESS_BITS = 64  # saved addresses carry nothing above the address

# The AT_HWCAP on x86_64 is CPUID(1).EDX: a few bits people ask about.
HWCAP = {23: "mmx", 25: "sse", 26: "sse2", 28: "ht"}
# AT_HWCAP2 bits (arch/x86/include/uapi/asm/hwcap2.h).
HWCAP2 = {0: "ring3mwait", 1: "fsgsbase"}

# The signal frame: arch/x86/include/asm/sigframe.h, `struct rt_sigframe { char *pretcode;
# struct ucontext uc; struct siginfo info; }`. The handler's return pops pretcode, so the
# trampoline frame's sp points at uc: uc_flags, uc_link, uc_stack (24 bytes), then uc_mcontext
# (struct sigcontext, 256 bytes, arch/x86/include/uapi/asm/sigcontext.h) and uc_sigmask (8).
_MCONTEXT = 8 + 8 + 24
SIGNAL_FRAME = SignalFrameLayout(
    siginfo=_MCONTEXT + 256 + 8,
    registers=_MCONTEXT,
    register_names=(
        "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
        "rdi", "rsi", "rbp", "rbx", "rdx", "rax", "rcx", "rsp", "rip", "eflags",
    ),  # fmt: skip
    pc="rip",
    sp="rsp",
    # err, trapno, cr2 follow the registers and cs/gs/fs/ss.
    context_words=(("error_code", _MCONTEXT + 152), ("trap_number", _MCONTEXT + 160), ("cr2", _MCONTEXT + 176)),
    restorer=-8,  # pretcode: sa_restorer, glibc's __restore_rt
)

# A handler installed without SA_SIGINFO (Python's faulthandler) gets no siginfo in its frame,
# but the saved context still says which trap raised the signal (arch/x86/include/asm/trapnr.h)
# and, for a page fault, where (cr2) and how (the error code's bits).
TRAP_DIVIDE_ERROR, TRAP_BREAKPOINT, TRAP_INVALID_OPCODE, TRAP_GENERAL_PROTECTION, TRAP_PAGE_FAULT, TRAP_ALIGNMENT = 0, 3, 6, 13, 14, 17
PAGE_FAULT_PROTECTION, PAGE_FAULT_PROTECTION_KEY = 0x1, 0x20


def fault_from_trap(signal: str, context: Mapping[str, int], pc: int | None) -> tuple[str, int | None] | None:
    """(si_code name, fault address) the kernel gave a fault signal, rebuilt from the trap the
    saved context names; None when that trap does not raise this signal (a sent signal, or a
    trap number left over from an earlier fault)."""
    trap, error, cr2 = context.get("trap_number"), context.get("error_code") or 0, context.get("cr2")
    if signal in ("SIGSEGV", "SIGBUS") and trap == TRAP_PAGE_FAULT:
        if signal == "SIGBUS":
            return "BUS_ADRERR", cr2
        if error & PAGE_FAULT_PROTECTION_KEY:
            return "SEGV_PKUERR", cr2
        return ("SEGV_ACCERR" if error & PAGE_FAULT_PROTECTION else "SEGV_MAPERR"), cr2
    by_trap = {
        ("SIGSEGV", TRAP_GENERAL_PROTECTION): ("SI_KERNEL", None),
        ("SIGBUS", TRAP_ALIGNMENT): ("BUS_ADRALN", None),
        ("SIGILL", TRAP_INVALID_OPCODE): ("ILL_ILLOPN", pc),
        ("SIGFPE", TRAP_DIVIDE_ERROR): ("FPE_INTDIV", pc),
        ("SIGTRAP", TRAP_BREAKPOINT): ("SI_KERNEL", None),
    }
    return by_trap.get((signal, trap))
