"""Signal names, numbers and the phrases that stand for them in crash output (Linux)."""

from __future__ import annotations

from coreanalyze.base.signals import SIGNAL_NAMES, SIGNAL_NUMBERS

# Pasted crash text names Linux signals: coreanalyze.base.signals has their numbers.
SIGNAL_ALIASES = {"SIGIOT": "SIGABRT", "SIGPOLL": "SIGIO", "SIGCLD": "SIGCHLD"}

# strsignal() texts (what shells, gdb and faulthandler print), lower-cased.
SIGNAL_DESCRIPTIONS = {
    "segmentation fault": "SIGSEGV",
    "aborted": "SIGABRT",
    "abort": "SIGABRT",
    "abort trap": "SIGABRT",  # macOS shells: "Abort trap: 6"
    "illegal instruction": "SIGILL",
    "illegal hardware instruction": "SIGILL",  # zsh
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


# The same verdicts as shells print them in other languages (glibc's translated strsignal()),
# each alone on its line: a word that only names a signal in that position.
LOCALIZED_VERDICTS = {
    # German
    "Speicherzugriffsfehler": "SIGSEGV", "Abgebrochen": "SIGABRT", "Ungültiger Maschinenbefehl": "SIGILL",
    "Bus-Zugriffsfehler": "SIGBUS", "Gleitkomma-Ausnahme": "SIGFPE",
    # French
    "Erreur de segmentation": "SIGSEGV", "Abandon": "SIGABRT", "Instruction non permise": "SIGILL",
    "Instruction illégale": "SIGILL", "Erreur du bus": "SIGBUS", "Exception en point flottant": "SIGFPE",
    # Spanish / Portuguese / Italian
    "Violación de segmento": "SIGSEGV", "Abortado": "SIGABRT", "Instrucción ilegal": "SIGILL",
    "Falha de segmentação": "SIGSEGV", "Instrução ilegal": "SIGILL", "Errore di segmentazione": "SIGSEGV",
    "Annullato": "SIGABRT", "Istruzione non consentita": "SIGILL",
    # Dutch / Swedish / Polish / Czech
    "Segmentatiefout": "SIGSEGV", "Afgebroken": "SIGABRT", "Segmenteringsfel": "SIGSEGV",
    "Naruszenie ochrony pamięci": "SIGSEGV", "Przerwane": "SIGABRT",
    "Neoprávněný přístup do paměti": "SIGSEGV", "Neúspěšně ukončen": "SIGABRT",
    # Russian
    "Ошибка сегментирования": "SIGSEGV", "Аварийный останов": "SIGABRT", "Недопустимая инструкция": "SIGILL",
    "Ошибка шины": "SIGBUS",
    # Chinese / Japanese / Korean
    "段错误": "SIGSEGV", "已放弃": "SIGABRT", "已中止": "SIGABRT", "非法指令": "SIGILL", "总线错误": "SIGBUS",
    "浮点数例外": "SIGFPE", "浮点异常": "SIGFPE", "程式記憶體區段錯誤": "SIGSEGV", "セグメンテーション違反": "SIGSEGV", "中止": "SIGABRT",
    "不正な命令": "SIGILL", "バスエラー": "SIGBUS", "浮動小数点例外": "SIGFPE", "세그멘테이션 오류": "SIGSEGV",
    "중지됨": "SIGABRT",
}  # fmt: skip


# Windows processes end with an NTSTATUS exit code instead of a signal (PyCharm: "Process finished
# with exit code -1073741819 (0xC0000005)"): the POSIX signal each exception corresponds to.
NTSTATUS_SIGNALS = {
    0xC0000005: "SIGSEGV",  # STATUS_ACCESS_VIOLATION
    0xC0000006: "SIGBUS",  # STATUS_IN_PAGE_ERROR (a mapped file went away)
    0xC000001D: "SIGILL",  # STATUS_ILLEGAL_INSTRUCTION
    0xC0000096: "SIGILL",  # STATUS_PRIVILEGED_INSTRUCTION
    0xC0000094: "SIGFPE",  # STATUS_INTEGER_DIVIDE_BY_ZERO
    0xC00000FD: "SIGSEGV",  # STATUS_STACK_OVERFLOW
    0xC0000409: "SIGABRT",  # STATUS_STACK_BUFFER_OVERRUN: __fastfail, what abort() and std::terminate use
    0x80000003: "SIGTRAP",  # STATUS_BREAKPOINT
    0xC0000374: "SIGABRT",  # STATUS_HEAP_CORRUPTION: the heap manager ended the process
    0x40000015: "SIGABRT",  # STATUS_FATAL_APP_EXIT: the C runtime's abort()
}
# Codes that say more than their signal: the fault itself, as a report's own class (detail).
NTSTATUS_DETAILS = {
    0xC00000FD: "stack-overflow (STATUS_STACK_OVERFLOW)",
    0xC0000374: "heap-corruption (STATUS_HEAP_CORRUPTION)",
}


def from_ntstatus(code: int) -> str | None:
    """0xC0000005 (or its signed form -1073741819) -> 'SIGSEGV'."""
    return NTSTATUS_SIGNALS.get(code & 0xFFFFFFFF)


def ntstatus_detail(code: int) -> str | None:
    """0xC00000FD -> 'stack-overflow (STATUS_STACK_OVERFLOW)': what the code says beyond its signal."""
    return NTSTATUS_DETAILS.get(code & 0xFFFFFFFF)


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
