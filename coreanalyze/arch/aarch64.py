"""aarch64 (arm64): auxv feature bits, named as the kernel names them in /proc/cpuinfo.

The tables follow arch/arm64/include/uapi/asm/hwcap.h. The ISA-mismatch advice compares the
instruction a SIGILL stopped at with these names: `sdot` needs asimddp (dotprod), `smmla`
needs i8mm, `bfdot` needs bf16, any z/p register needs sve.
"""

import re
from typing import Mapping

from coreanalyze.arch.sigframe import SignalFrameLayout

NAME = "aarch64"
GDB_NAME = "aarch64"

# Registers by role, named as the core's notes and gdb name them.
PC = "pc"
SP = "sp"
# tpidr_el0 is not among the general registers the notes keep.
THREAD_POINTER = None
# Bits of a user address: pointer-authentication codes sit above them in saved return addresses.
ADDRESS_BITS = 48

HWCAP = dict(enumerate((
    "fp", "asimd", "evtstrm", "aes", "pmull", "sha1", "sha2", "crc32",
    "atomics", "fphp", "asimdhp", "cpuid", "asimdrdm", "jscvt", "fcma", "lrcpc",
    "dcpop", "sha3", "sm3", "sm4", "asimddp", "sha512", "sve", "asimdfhm",
    "dit", "uscat", "ilrcpc", "flagm", "ssbs", "sb", "paca", "pacg",
    "gcs",
)))  # fmt: skip

HWCAP2 = dict(enumerate((
    "dcpodp", "sve2", "sveaes", "svepmull", "svebitperm", "svesha3", "svesm4", "flagm2",
    "frint", "svei8mm", "svef32mm", "svef64mm", "svebf16", "i8mm", "bf16", "dgh",
    "rng", "bti", "mte", "ecv", "afp", "rpres", "mte3", "sme",
    "smei16i64", "smef64f64", "smei8i32", "smef16f32", "smeb16f32", "smef32f32", "smefa64", "wfxt",
    "ebf16", "sveebf16", "cssc", "rprfm", "sve2p1", "sme2", "sme2p1", "smei16i32",
    "smebi32i32", "smeb16b16", "smef16f16", "mops", "hbc", "sveb16b16", "lrcpc3", "lse128",
    "fpmr", "lut", "faminmax", "f8cvt", "f8fma", "f8dp4", "f8dp2", "f8e4m3",
    "f8e5m2", "smelutv2", "smef8f16", "smef8f32", "smesf8fma", "smesf8dp4", "smesf8dp2", "poe",
)))  # fmt: skip

# A load/store's memory operand as gdb disassembles it: [base], [base, #imm], [base, #imm]!,
# [base], #imm (post-index: the access is at base), [base, index{, lsl|uxtw|sxtw|sxtx #n}].
MEMORY_OPERAND = re.compile(
    r"\[(?P<base>x\d{1,2}|sp)"
    r"(?:,\s*#(?P<imm>-?(?:0x[0-9a-f]+|\d+))"
    r"|,\s*(?P<index>[xw]\d{1,2})(?:,\s*(?P<extend>lsl|uxtw|sxtw|sxtx)(?:\s*#(?P<shift>\d))?)?)?\]",
    re.IGNORECASE,
)


def accessed_address(instruction: str | None, registers: Mapping[str, int]) -> tuple[int, str] | None:
    """(address, base register) a load or store accessed, computed from its operand and the
    registers at the fault; None when the instruction has no memory operand or a register is
    unknown. For cores without siginfo (qemu-user writes none), where si_addr is missing."""
    if not instruction:
        return None
    m = MEMORY_OPERAND.search(instruction)
    if m is None:
        return None
    base = registers.get(m.group("base").lower())
    if not isinstance(base, int):
        return None
    address = base
    if m.group("imm"):
        address += int(m.group("imm"), 0)
    elif m.group("index"):
        name = m.group("index").lower()
        index = registers.get("x" + name[1:])
        if not isinstance(index, int):
            return None
        if name.startswith("w"):
            index &= 0xFFFFFFFF
            if (m.group("extend") or "").lower() == "sxtw" and index & 0x80000000:
                index -= 1 << 32
        address += index << int(m.group("shift") or 0)
    return address & 0xFFFFFFFFFFFFFFFF, m.group("base").lower()

# The signal frame: arch/arm64/kernel/signal.c, `struct rt_sigframe { struct siginfo info;
# struct ucontext uc; }` at the trampoline frame's sp. uc_mcontext sits at offset 176 of the
# ucontext (uc_flags, uc_link, uc_stack, uc_sigmask, 120 bytes of padding, aligned to 16);
# struct sigcontext is fault_address, regs[31], sp, pc, pstate, then __reserved (16-aligned)
# where the FPSIMD context always comes first: FPSIMD_MAGIC 0x46508001, size 528.
_MCONTEXT = 128 + 176
SIGNAL_FRAME = SignalFrameLayout(
    siginfo=0,
    registers=_MCONTEXT + 8,
    register_names=(*(f"x{i}" for i in range(31)), "sp", "pc", "cpsr"),
    pc="pc",
    sp="sp",
    context_words=(("fault_address", _MCONTEXT),),
    marker=(_MCONTEXT + 288, (0x46508001).to_bytes(4, "little") + (528).to_bytes(4, "little")),
)


def fault_from_trap(signal: str, context: Mapping[str, int], pc: int | None) -> tuple[str, int | None] | None:
    """aarch64's saved context keeps fault_address but no trap number that would tell a fault
    from a sent signal, so nothing is rebuilt from it."""
    return None
