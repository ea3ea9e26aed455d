"""Checks on the file itself before any note is read: is it an ELF core of a supported
architecture, are its program headers sane, is it truncated."""

from __future__ import annotations

import os
import stat
import struct
from typing import Any, Iterator

from elftools.elf import enums
from elftools.elf.elffile import ELFFile

from coreanalyze.base.errors import BadInput
from coreanalyze.corefile.tables import (
    COMPRESSED_MAGIC,
    CORE_SEGMENT_TYPES,
    MAX_SEGMENTS,
    OTHER_ARCH_NAMES,
    PARSE_ERRORS,
    SUPPORTED_ARCHES,
)

# ---------------------------------------------------------------------------------------------
# Checks on the file itself
# ---------------------------------------------------------------------------------------------


def check_is_core_candidate(path: str) -> int:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path} is a directory, not a core file")
    if not stat.S_ISREG(st.st_mode):
        # A FIFO or a device would block or never end.
        raise BadInput(f"{path} is not a regular file")
    if st.st_size == 0:
        raise BadInput(f"{path} is empty (zero bytes), not a core file")
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not head.startswith(b"\x7fELF"):
        for magic, kind in COMPRESSED_MAGIC.items():
            if head.startswith(magic):
                raise BadInput(f"{path} is a {kind}-compressed file; decompress it first")
        raise BadInput(f"{path} is not an ELF file")
    if len(head) < 64:
        raise BadInput(f"{path} has no readable notes (truncated or corrupt)")
    return st.st_size


def describe_non_core(elf: ELFFile, e_type: Any) -> str:
    if e_type == "ET_EXEC":
        return "an ELF executable"
    if e_type == "ET_REL":
        return "an ELF object file"
    if e_type == "ET_DYN":
        # A PIE executable and a shared library are both ET_DYN; the interpreter tells them apart.
        try:
            if any(seg["p_type"] == "PT_INTERP" for seg in _bounded_segments(elf, 256)):
                return "an ELF executable"
        except PARSE_ERRORS:
            pass
        return "an ELF shared library"
    return f"an ELF file of type {e_type}"


def arch_name(e_machine: Any, elfclass: int) -> str:
    if isinstance(e_machine, str):
        if e_machine in SUPPORTED_ARCHES and elfclass != 64:
            return f"a 32-bit {SUPPORTED_ARCHES[e_machine]} process"
        return OTHER_ARCH_NAMES.get(e_machine, e_machine.removeprefix("EM_").lower())
    return f"machine type {e_machine}"


def _bounded_segments(elf: ELFFile, limit: int) -> Iterator[Any]:
    for i in range(min(elf.num_segments(), limit)):
        yield elf.get_segment(i)


def program_headers(elf: ELFFile, warnings: list[str]) -> list[dict[str, Any]]:
    """Program headers as plain dicts; a damaged table yields the headers before the damage.

    A TensorFlow process's core has a thousand of them: the table is read in one go and
    unpacked with struct (as pyelftools reads each entry, with its names for the types)."""
    headers: list[dict[str, Any]] = []
    try:
        count = elf.num_segments()
    except PARSE_ERRORS:
        warnings.append("program header count is unreadable")
        return headers
    if count > MAX_SEGMENTS:
        warnings.append(f"core claims {count} program headers; reading the first {MAX_SEGMENTS}")
        count = MAX_SEGMENTS
    layout = struct.Struct(("<" if elf.little_endian else ">") + ("IIQQQQQQ" if elf.elfclass == 64 else "IIIIIIII"))
    stride = elf["e_phentsize"]
    try:
        elf.stream.seek(elf["e_phoff"])
        table = elf.stream.read(max(0, (count - 1) * stride + layout.size) if count else 0)
    except (OSError, OverflowError, ValueError):
        table = b""
    names = _segment_type_names(elf["e_machine"])
    unknown_type_seen = False
    for i in range(count):
        start = i * stride
        if start + layout.size > len(table):
            warnings.append(f"program headers are unreadable from entry {i} of {count}")
            break
        if elf.elfclass == 64:
            p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, _align = layout.unpack_from(table, start)
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, p_flags, _align = layout.unpack_from(table, start)
        p_type = names.get(p_type, p_type)
        if p_type not in CORE_SEGMENT_TYPES and not unknown_type_seen:
            unknown_type_seen = True
            warnings.append(f"program header {i} has type {p_type}, which a core does not use; it is left out")
        headers.append(
            {"p_type": p_type, "p_offset": p_offset, "p_vaddr": p_vaddr, "p_filesz": p_filesz, "p_memsz": p_memsz, "p_flags": p_flags}
        )
    return headers


def _segment_type_names(e_machine: Any) -> dict[int, str]:
    """p_type value -> name, as pyelftools names them for the machine (the last name of a value
    wins, as in its tables' decoding)."""
    table = {
        "EM_ARM": enums.ENUM_P_TYPE_ARM,
        "EM_AARCH64": enums.ENUM_P_TYPE_AARCH64,
        "EM_MIPS": enums.ENUM_P_TYPE_MIPS,
        "EM_RISCV": enums.ENUM_P_TYPE_RISCV,
    }.get(e_machine, enums.ENUM_P_TYPE_BASE)
    return {value: name for name, value in table.items() if isinstance(value, int)}


def expected_size(elf: ELFFile, headers: list[dict[str, Any]]) -> int:
    end = 0
    try:
        end = elf["e_phoff"] + elf.num_segments() * elf["e_phentsize"]
    except PARSE_ERRORS:
        pass
    for h in headers:
        if h["p_type"] in ("PT_LOAD", "PT_NOTE"):
            end = max(end, h["p_offset"] + h["p_filesz"])
    return end


