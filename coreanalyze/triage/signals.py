"""Signal names, numbers and the phrases that stand for them in crash output (Linux)."""

from __future__ import annotations

from coreanalyze.signals import SIGNAL_NAMES, SIGNAL_NUMBERS

# Pasted crash text names Linux signals: coreanalyze.signals has their numbers.
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
