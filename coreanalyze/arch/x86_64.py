"""x86-64: auxv feature bits people ask about."""

NAME = "x86_64"
GDB_NAME = "i386:x86-64"

# Registers by role, named as the core's notes and gdb name them.
PC = "rip"
SP = "rsp"
# The thread pointer (TLS base): static TLS sits just below it.
THREAD_POINTER = "fs_base"

# The AT_HWCAP on x86_64 is CPUID(1).EDX: a few bits people ask about.
HWCAP = {23: "mmx", 25: "sse", 26: "sse2", 28: "ht"}
# AT_HWCAP2 bits (arch/x86/include/uapi/asm/hwcap2.h).
HWCAP2 = {0: "ring3mwait", 1: "fsgsbase"}
