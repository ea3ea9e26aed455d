"""Linux signals and their si_code values: one table for the core's notes, gdb's $_siginfo, the
fault-kind rules, batch records and the triage parsers.

Cores and pasted crash text come from Linux (x86-64, aarch64: the same numbering), whatever
machine reads them, so nothing here asks the host's `signal` module. si_code names follow the
kernel's include/uapi/asm-generic/siginfo.h.
"""

from __future__ import annotations

SIGNAL_NUMBERS = {
    "SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
    "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
    "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17,
    "SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23,
    "SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29,
    "SIGPWR": 30, "SIGSYS": 31,
}  # fmt: skip
SIGNAL_NAMES = {number: name for name, number in SIGNAL_NUMBERS.items()}
# glibc keeps the first two real-time signals for itself: SIGRTMIN is 34 for programs.
SIGRTMIN, SIGRTMAX = 34, 64

# si_code values shared by every signal (sent by a process, or by the kernel).
SI_USER, SI_KERNEL, SI_QUEUE, SI_TKILL = 0, 0x80, -1, -6
SI_CODES = {
    0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER", -3: "SI_MESGQ",
    -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL", -7: "SI_DETHREAD", -60: "SI_ASYNCNL",
}  # fmt: skip
# Codes that mean "a process sent this with kill/tgkill/sigqueue": siginfo then carries the
# sender's pid and uid.
SENDER_CODES = frozenset({SI_USER, SI_QUEUE, SI_TKILL})

# Fault-specific si_code values, per signal.
SIGNAL_CODES = {
    "SIGSEGV": {
        1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR", 5: "SEGV_ACCADI",
        6: "SEGV_ADIDERR", 7: "SEGV_ADIPERR", 8: "SEGV_MTEAERR", 9: "SEGV_MTESERR", 10: "SEGV_CPERR",
    },
    "SIGBUS": {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR", 5: "BUS_MCEERR_AO"},
    "SIGILL": {
        1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP", 5: "ILL_PRVOPC",
        6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK", 9: "ILL_BADIADDR",
    },
    "SIGFPE": {
        1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF", 5: "FPE_FLTUND",
        6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB", 14: "FPE_FLTUNK", 15: "FPE_CONDTRAP",
    },
    "SIGTRAP": {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT", 5: "TRAP_UNK", 6: "TRAP_PERF"},
    "SIGSYS": {1: "SYS_SECCOMP", 2: "SYS_USER_DISPATCH"},
}  # fmt: skip
# Signals whose siginfo carries the faulting address (si_addr) when the kernel raised them
# (a positive si_code; SI_KERNEL faults leave it 0).
FAULT_ADDRESS_SIGNALS = frozenset({"SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP"})


def signal_name(number: int) -> str:
    """'SIGSEGV' for 11, 'SIGRTMIN+2' for 36, 'SIG99' for a number Linux does not have."""
    name = SIGNAL_NAMES.get(number)
    if name is not None:
        return name
    if SIGRTMIN <= number <= SIGRTMAX:
        return f"SIGRTMIN+{number - SIGRTMIN}"
    return f"SIG{number}"


def code_name(signal: str | None, code: int | None) -> str | None:
    """The symbolic si_code of a signal (by name); None when Linux has no name for it."""
    if code is None:
        return None
    if code <= 0 or code == SI_KERNEL:
        return SI_CODES.get(code)
    return SIGNAL_CODES.get(signal or "", {}).get(code)


def code_number(name: str | None) -> int | None:
    """The value of a shared si_code name ('SI_TKILL' -> -6)."""
    return next((number for number, known in SI_CODES.items() if known == name), None) if name else None
