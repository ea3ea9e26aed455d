"""Tables of the core format: architectures, note types, register layouts, limits (data, not code paths)."""

from __future__ import annotations

import struct

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError

from coreanalyze.arch import ARCHITECTURES

# What pyelftools and struct raise on data that does not hold together.
# OSError: a corrupt offset makes seek() fail with EINVAL.
PARSE_ERRORS = (
    ELFError, ConstructError, ValueError, struct.error, EOFError, IndexError, KeyError, TypeError, OverflowError, OSError,
)

# ---------------------------------------------------------------------------------------------
# Tables (data, not code paths)
# ---------------------------------------------------------------------------------------------

SUPPORTED_ARCHES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}

# Names for architectures we recognise but do not analyze, for the error message.
OTHER_ARCH_NAMES = {
    "EM_386": "i386",
    "EM_ARM": "arm (32-bit)",
    "EM_PPC": "ppc",
    "EM_PPC64": "ppc64",
    "EM_S390": "s390x",
    "EM_MIPS": "mips",
    "EM_RISCV": "riscv64",
    "EM_SPARCV9": "sparc64",
    "EM_LOONGARCH": "loongarch64",
    "EM_IA_64": "ia64",
}

# elf_gregset_t in struct elf_prstatus, in the kernel's order (user_regs_struct / user_pt_regs),
# named the way gdb names them so that gdb's and our register dumps agree.
REGISTER_NAMES = {
    "x86_64": (
        "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
        "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
        "fs_base", "gs_base", "ds", "es", "fs", "gs",
    ),
    "aarch64": tuple(f"x{i}" for i in range(31)) + ("sp", "pc", "cpsr"),
}
PC_REGISTER = {a.name: a.pc_register for a in ARCHITECTURES.values()}
SP_REGISTER = {a.name: a.sp_register for a in ARCHITECTURES.values()}

# struct elf_prstatus on 64-bit Linux (same on x86_64 and aarch64):
# pr_info (12) pr_cursig (2 + 2 pad) pr_sigpend (8) pr_sighold (8) pr_pid pr_ppid pr_pgrp pr_sid
# 4 timevals (64) then pr_reg.
PRSTATUS_CURSIG_OFFSET = 12
PRSTATUS_PID_OFFSET = 32
PRSTATUS_REG_OFFSET = 112

# struct elf_prpsinfo on 64-bit Linux.
PRPSINFO = struct.Struct("<bcbb4xQIIiiii16s80s")
PRPSINFO_BE = struct.Struct(">bcbb4xQIIiiii16s80s")
PSARGS_LEN = 80

NT_PRSTATUS = 1
NT_PRPSINFO = 3
NT_AUXV = 6
NT_SIGINFO = 0x53494749
NT_FILE = 0x46494C45
NT_GNU_BUILD_ID = 3
INTERPRETED_NOTES = frozenset({NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_SIGINFO, NT_FILE})
NOTE_TYPE_BY_NAME = {"NT_PRSTATUS": NT_PRSTATUS, "NT_PRPSINFO": NT_PRPSINFO, "NT_AUXV": NT_AUXV,
                      "NT_SIGINFO": NT_SIGINFO, "NT_FILE": NT_FILE}

AUXV_NAMES = {
    0: "AT_NULL", 1: "AT_IGNORE", 2: "AT_EXECFD", 3: "AT_PHDR", 4: "AT_PHENT", 5: "AT_PHNUM",
    6: "AT_PAGESZ", 7: "AT_BASE", 8: "AT_FLAGS", 9: "AT_ENTRY", 10: "AT_NOTELF", 11: "AT_UID",
    12: "AT_EUID", 13: "AT_GID", 14: "AT_EGID", 15: "AT_PLATFORM", 16: "AT_HWCAP",
    17: "AT_CLKTCK", 23: "AT_SECURE", 24: "AT_BASE_PLATFORM", 25: "AT_RANDOM", 26: "AT_HWCAP2",
    27: "AT_RSEQ_FEATURE_SIZE", 28: "AT_RSEQ_ALIGN", 29: "AT_HWCAP3", 30: "AT_HWCAP4",
    31: "AT_EXECFN", 32: "AT_SYSINFO", 33: "AT_SYSINFO_EHDR", 51: "AT_MINSIGSTKSZ",
}
# auxv entries whose value points at a string in the process's memory.
AUXV_STRINGS = ("AT_EXECFN", "AT_PLATFORM", "AT_BASE_PLATFORM")

# Bounds on what we are willing to read for one purpose; a core that claims more is corrupt.
# A real core's notes: ~3.5 KB per thread (general and vector registers) and an NT_FILE the
# kernel keeps under 4 MiB by default. Beyond these limits a core is hostile, not big.
MAX_NOTE_BYTES = 64 * 1024 * 1024  # all note segments together
MAX_NOTES = 262_144
MAX_THREADS = 4096  # gdb reads at most 512 (gdb/collect.py); the notes keep more
MAX_MAPPINGS = 262_144  # vm.max_map_count is 65530 by default
MAX_SEGMENTS = 200_000
MAX_ARGV = 100_000
MAX_ARG_BYTES = 128 * 1024  # the kernel's MAX_ARG_STRLEN
MAX_ARGV_TOTAL_BYTES = 4 * 1024 * 1024
MAX_ENVIRON = 100_000
MAX_SIGNAL = 64  # _NSIG on Linux
STACK_SEARCH_BYTES = 8 * 1024 * 1024
MAX_PHNUM_IN_MEMORY = 1024
MAX_BUILD_ID_NOTES_BYTES = 64 * 1024

# Segment types a Linux core holds (the kernel's and gdb's gcore); anything else is damage.
CORE_SEGMENT_TYPES = frozenset({"PT_LOAD", "PT_NOTE", "PT_AARCH64_MEMTAG_MTE", 0x70000002})
# Note names a Linux core holds; another name means the note stream lost its alignment.
# "GDB": gdb's gcore / generate-core-file writes its own notes (the target description).
# COREANALYZE: the note `coreanalyze shrink` adds to the cores it writes (shrink/marker.py).
CORE_NOTE_NAMES = frozenset({"CORE", "LINUX", "GNU", "GDB", "COREANALYZE"})
# Above any user-space address on x86_64 (57-bit with 5-level paging) and aarch64.
MAX_USER_ADDRESS = 1 << 57

COMPRESSED_MAGIC = {
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x04\x22\x4d\x18": "lz4",
    b"\xfd7zXZ\x00": "xz",
    b"\x1f\x8b": "gzip",
}


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def round_up(value: int, align: int) -> int:
    return (value + align - 1) & ~(align - 1)


def printable_text(raw: bytes) -> str:
    # Strings from a core may hold any bytes; keep them printable and valid UTF-8 everywhere
    # downstream (JSON, HTML) by spelling undecodable bytes as \xNN.
    return raw.decode("utf-8", "backslashreplace")
