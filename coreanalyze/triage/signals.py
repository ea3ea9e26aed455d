"""Signal names, numbers and the phrases that stand for them in crash output (Linux)."""

from __future__ import annotations

# Linux (x86-64, aarch64) numbering; pasted crash text names Linux signals.
SIGNAL_NUMBERS = {
    "SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
    "SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
    "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGSTKFLT": 16, "SIGCHLD": 17,
    "SIGCONT": 18, "SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23,
    "SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28, "SIGIO": 29,
    "SIGPWR": 30, "SIGSYS": 31,
}  # fmt: skip
SIGNAL_NAMES = {number: name for name, number in SIGNAL_NUMBERS.items()}
SIGNAL_ALIASES = {"SIGIOT": "SIGABRT", "SIGPOLL": "SIGIO", "SIGCLD": "SIGCHLD"}

# strsignal() texts (what shells, gdb and faulthandler print), lower-cased.
SIGNAL_DESCRIPTIONS = {
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "abort": "SIGABRT",
    "illegal instruction": "SIGILL",
    "bus error": "SIGBUS",
    "floating point exception": "SIGFPE",
    "floating-point exception": "SIGFPE",
    "arithmetic exception": "SIGFPE",
    "trace/breakpoint trap": "SIGTRAP",
    "killed": "SIGKILL",
    "terminated": "SIGTERM",
    "quit": "SIGQUIT",
    "bad system call": "SIGSYS",
}


def normalize_name(token: str) -> str | None:
    """'SIGSEGV', 'SEGV', 'sigsegv', '11' -> 'SIGSEGV'; None when it names no signal."""
    token = token.strip().upper()
    if token.isdigit():
        return SIGNAL_NAMES.get(int(token))
    if not token.startswith("SIG"):
        token = "SIG" + token
    token = SIGNAL_ALIASES.get(token, token)
    return token if token in SIGNAL_NUMBERS else None


def from_description(text: str) -> str | None:
    """'Segmentation fault' -> 'SIGSEGV'."""
    return SIGNAL_DESCRIPTIONS.get(text.strip().rstrip(".").lower())


def number_of(name: str | None) -> int | None:
    return SIGNAL_NUMBERS.get(name) if name else None


# macOS Mach exceptions (crash reports' "Exception Type:" without a signal in parentheses) and
# the codes that say more ("Exception Codes:", "Exception Subtype:"): -> (signal, si_code name).
MACH_EXCEPTIONS = {
    "EXC_BAD_ACCESS": "SIGSEGV",
    "EXC_BAD_INSTRUCTION": "SIGILL",
    "EXC_ARITHMETIC": "SIGFPE",
    "EXC_CRASH": "SIGABRT",
    "EXC_BREAKPOINT": "SIGTRAP",
    "EXC_GUARD": "SIGKILL",
    "EXC_RESOURCE": "SIGKILL",
}
MACH_CODES = {
    "KERN_INVALID_ADDRESS": ("SIGSEGV", "SEGV_MAPERR"),
    "KERN_PROTECTION_FAILURE": ("SIGSEGV", "SEGV_ACCERR"),
    # x86 general-protection fault: a non-canonical or otherwise unusable pointer, no address.
    "EXC_I386_GPFLT": ("SIGSEGV", "SI_KERNEL"),
    "EXC_I386_DIV": ("SIGFPE", "FPE_INTDIV"),
    "EXC_I386_INVOP": ("SIGILL", "ILL_ILLOPN"),
    "EXC_ARM_DA_ALIGN": ("SIGBUS", "BUS_ADRALN"),
    "EXC_ARM_BREAKPOINT": ("SIGTRAP", "TRAP_BRKPT"),
    "EXC_I386_BPT": ("SIGTRAP", "TRAP_BRKPT"),
}
