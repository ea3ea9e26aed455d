"""What the tool knows about each CPU architecture a core can come from, as data.

One module per architecture holds its tables (register names, auxv HWCAP bits, the
instructions compilers emit as deliberate traps, the signal frame's layout); this package looks them up by the short
name the notes reader gives a core's machine ("x86_64", "aarch64").
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from coreanalyze.arch import aarch64, x86_64
from coreanalyze.arch.sigframe import SignalFrameLayout


@dataclass(frozen=True)
class Architecture:
    name: str  # as corefile names it: "x86_64", "aarch64"
    gdb_name: str  # what `set architecture` accepts
    pc_register: str
    sp_register: str
    thread_pointer: str | None  # the register holding the TLS base, when the notes keep it
    address_bits: int = 64  # of a user address as saved on a stack (aarch64: pointer authentication above)
    hwcap: Mapping[int, str] = field(default_factory=dict)  # AT_HWCAP bit -> feature name
    hwcap2: Mapping[int, str] = field(default_factory=dict)  # AT_HWCAP2 bit -> feature name
    signal_frame: SignalFrameLayout | None = None  # where a handler's signal frame keeps siginfo and registers


ARCHITECTURES = {
    module.NAME: Architecture(
        name=module.NAME,
        gdb_name=module.GDB_NAME,
        pc_register=module.PC,
        sp_register=module.SP,
        thread_pointer=module.THREAD_POINTER,
        address_bits=module.ADDRESS_BITS,
        hwcap=MappingProxyType(module.HWCAP),
        hwcap2=MappingProxyType(module.HWCAP2),
        signal_frame=module.SIGNAL_FRAME,
    )
    for module in (x86_64, aarch64)
}

# Stack pointers by every name a register dump may use, for registers of an unknown
# architecture: each architecture's own, then gdb's generic `$sp`.
STACK_POINTER_NAMES = (*dict.fromkeys(a.sp_register for a in ARCHITECTURES.values()), "$sp")

# platform.machine() spellings of the same architectures.
_MACHINE_ALIASES = {"amd64": "x86_64", "x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def architecture(name: str | None) -> Architecture | None:
    return ARCHITECTURES.get(name) if name else None


def stack_pointer(registers: Mapping[str, int] | None, arch: str | None = None) -> int | None:
    """The stack pointer among a thread's registers (by the architecture's name for it, else by
    any known name); None when it is absent or zero."""
    if not registers:
        return None
    known = architecture(arch)
    for name in (known.sp_register,) if known else STACK_POINTER_NAMES:
        value = registers.get(name)
        if isinstance(value, int) and value:
            return value
    return None


def thread_pointer(registers: Mapping[str, int] | None, arch: str | None = None) -> int | None:
    """The thread pointer (TLS base) among a thread's registers, where the architecture's notes
    keep it."""
    known = architecture(arch)
    names = (known.thread_pointer,) if known else tuple(a.thread_pointer for a in ARCHITECTURES.values())
    for name in names:
        value = registers.get(name) if registers and name else None
        if isinstance(value, int):
            return value
    return None


def host_architecture() -> str:
    """The architecture of the machine doing the analysis, spelled as corefile spells it."""
    machine = platform.machine().lower()
    return _MACHINE_ALIASES.get(machine, machine)


def hwcap_features(arch: str | None, hwcap: int | None, hwcap2: int | None) -> dict[str, list[str]]:
    """{"hwcap_features": [...], "hwcap2_features": [...]} for the bits this tool can name."""
    known = architecture(arch)
    if known is None:
        return {}
    features: dict[str, list[str]] = {}
    if isinstance(hwcap, int):
        features["hwcap_features"] = [n for bit, n in known.hwcap.items() if hwcap >> bit & 1]
    if isinstance(hwcap2, int):
        features["hwcap2_features"] = [n for bit, n in known.hwcap2.items() if hwcap2 >> bit & 1]
    return features


def accessed_address(instruction: str | None, registers: Mapping[str, int] | None) -> tuple[int, str] | None:
    """(address, base register) the faulting load/store accessed, from its operand and the
    registers; for architectures whose memory operands this tool reads (aarch64, told apart by
    its register names), else None."""
    if not registers or "x0" not in registers:
        return None
    return aarch64.accessed_address(instruction, registers)


def fault_from_trap(arch: str | None, signal: str, context: Mapping[str, int], pc: int | None) -> tuple[str, int | None] | None:
    """(si_code name, fault address) of a fault signal rebuilt from a signal frame's saved context
    (see x86_64.fault_from_trap); None where the architecture's context cannot tell."""
    module = {m.NAME: m for m in (x86_64, aarch64)}.get(arch or "")
    return module.fault_from_trap(signal, context, pc) if module is not None else None
