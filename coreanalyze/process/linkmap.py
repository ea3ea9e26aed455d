"""Where the program and its libraries were loaded, from the dynamic linker's list in memory.

A core without NT_FILE (qemu-user writes none; neither do some minimal dumpers) does not say
which files were mapped where, and when it also leaves out the files' read-only pages (qemu
does) gdb can place neither the program nor its libraries: it finds the link map through the
program headers at AT_PHDR, which read as zeros there. The loader's own list survives in the
core's writable memory, though: the program's `.dynamic` (its address from the local copy of
the program and the load bias AT_ENTRY - e_entry) holds DT_DEBUG -> `struct r_debug` ->
`r_map`, a chain of `struct link_map {l_addr, l_name, l_ld, l_next, l_prev}`.

Each library's segments come from its local file, else from its ELF and program headers in the
core, when the core kept them (qemu keeps a first segment that is not executable, as lld and
`ld -z separate-code` lay it out): such a library is placed without a file here, so that it is
listed as missing and `--fetch` can look for it.

Everything read from the core is untrusted: every walk is bounded, names are only looked up
under the sysroot, and a list that does not hold together yields nothing.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from coreanalyze.base.rootpaths import file_in_root
from coreanalyze.corefile import Mapping
from coreanalyze.process.process import Process

DT_NULL, DT_DEBUG = 0, 21
MAX_DYNAMIC_ENTRIES = 1024
MAX_NAME_BYTES = 4096
MAX_PROGRAM_HEADERS = 256
PAGE = 4096
PT_LOAD = 1


@dataclass
class PlacedObject:
    """One ELF object of the process: its path in the core's world, the local file, its bias."""

    path: str
    local_path: str | None  # None: placed from its headers in the core, no file here
    bias: int
    mappings: list[Mapping] = field(default_factory=list)


@dataclass
class LinkMap:
    objects: list[PlacedObject] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def mappings(self) -> list[Mapping]:
        return sorted((m for o in self.objects for m in o.mappings), key=lambda m: m.start)


def needs_link_map(process: Process) -> bool:
    """True for a core that says neither where its files were mapped (no NT_FILE) nor, by
    keeping the program's headers, lets gdb find out for itself."""
    if process.mappings or not process.threads:
        return False
    phdr = process.auxv.get("AT_PHDR")
    headers = process.read_core(phdr, 56) if isinstance(phdr, int) else None  # what gdb finds in the core
    return headers is None or not any(headers)


def read_link_map(process: Process, executable: str | None, sysroot: str | None) -> LinkMap:
    """The objects the dynamic linker had loaded, placed by their load bias.

    executable: the local copy of the program (needed: its program headers are not in the core).
    """
    result = LinkMap()
    if not executable or not os.path.isfile(executable):
        result.warnings.append("the core has no file list and the program is not here, so its libraries cannot be placed")
        return result
    program = _load_segments(executable)
    entry = process.auxv.get("AT_ENTRY")
    if program is None or not isinstance(entry, int):
        result.warnings.append("the core has no file list and its program's load address is unknown")
        return result
    e_entry, is_pie, loads, dynamic = program
    bias = entry - e_entry if is_pie else 0
    core_path = process.executable or executable
    result.objects.append(PlacedObject(core_path, executable, bias, _mappings(core_path, bias, loads)))
    if dynamic is None:
        return result  # a static program: nothing else was loaded
    fmt = "<" if process.little_endian else ">"
    r_debug = _dynamic_value(process, bias + dynamic, DT_DEBUG, fmt)
    entries, broken_at = process.link_map(r_debug)
    if not entries and broken_at is None:
        result.warnings.append("the dynamic linker's list of libraries is not in the core; frames in libraries stay unnamed")
        return result
    for entry in entries:
        name = process.read_cstring(entry.name_address, MAX_NAME_BYTES) if entry.name_address else None
        path = name.decode("utf-8", "backslashreplace") if name else ""
        if name is None and entry.base == process.auxv.get("AT_BASE"):
            # The loader's own name points into the program's .interp, a read-only page the
            # core may lack; the local program names the same loader.
            path = _interpreter(executable) or ""
        if not path.startswith("/"):
            continue  # the program itself ("") and the vDSO ("linux-vdso.so.1")
        local = _local(path, sysroot)
        segments = _load_segments(local) if local else None
        loads = segments[2] if segments else _loads_in_memory(process, entry.base, fmt)
        if segments is None:
            result.warnings.append(f"{path} (loaded at 0x{entry.base:x}) is not here{' under the sysroot' if sysroot else ''}")
            local = None
        if loads:
            result.objects.append(PlacedObject(path, local, entry.base, _mappings(path, entry.base, loads)))
    if broken_at is not None:
        result.warnings.append(f"the dynamic linker's list breaks off at 0x{broken_at:x}")
    return result


def _local(path: str, sysroot: str | None) -> str | None:
    """The local file for a path in the core's world: under the sysroot only (a core's name
    must not climb out of it with ".."), else as named. A name already inside the sysroot is
    taken as it is (a program run from an unpacked sysroot, as under qemu-user, names its
    files so). Links inside the sysroot are followed, as the module table follows them (the
    --fetch overlay is made of links)."""
    if not sysroot:
        return path if os.path.isfile(path) else None
    root = os.path.abspath(sysroot)
    inside = os.path.normpath(path)
    for candidate in (file_in_root(root, path), inside if os.path.commonpath([root, inside]) == root else None):
        if candidate is not None and os.path.isfile(candidate):
            return candidate
    return None


def _interpreter(path: str) -> str | None:
    """The program's PT_INTERP: the dynamic linker's path."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for i in range(min(elf.num_segments(), MAX_PROGRAM_HEADERS)):
                segment = elf.get_segment(i)
                if segment.header["p_type"] == "PT_INTERP":
                    return segment.get_interp_name()
    except (OSError, ELFError, ValueError, struct.error, UnicodeDecodeError):
        return None
    return None


def _load_segments(path: str) -> tuple[int, bool, list[tuple[int, int, int]], int | None] | None:
    """(e_entry, position independent, [(p_vaddr, p_memsz, p_offset)] of PT_LOAD, PT_DYNAMIC vaddr)."""
    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            loads, dynamic = [], None
            for i in range(min(elf.num_segments(), MAX_PROGRAM_HEADERS)):
                h = elf.get_segment(i).header
                if h["p_type"] == "PT_LOAD":
                    loads.append((h["p_vaddr"], h["p_memsz"], h["p_offset"]))
                elif h["p_type"] == "PT_DYNAMIC":
                    dynamic = h["p_vaddr"]
            return elf["e_entry"], elf["e_type"] == "ET_DYN", loads, dynamic
    except (OSError, ELFError, ValueError, struct.error):
        return None


def _loads_in_memory(process: Process, base: int, fmt: str) -> list[tuple[int, int, int]]:
    """[(p_vaddr, p_memsz, p_offset)] of PT_LOAD from the ELF headers the core kept at base."""
    header = process.read_core(base, 64)
    if header is None or not header.startswith(b"\x7fELF\x02"):
        return []
    e_phoff, e_phentsize, e_phnum = struct.unpack_from(fmt + "Q", header, 32)[0], *struct.unpack_from(fmt + "HH", header, 54)
    if e_phentsize != 56 or not 0 < e_phnum <= MAX_PROGRAM_HEADERS or e_phoff > PAGE:
        return []
    table = process.read_core(base + e_phoff, e_phnum * e_phentsize)
    if table is None:
        return []
    loads = []
    for p_type, _flags, p_offset, p_vaddr, _paddr, _filesz, p_memsz, _align in struct.iter_unpack(fmt + "IIQQQQQQ", table):
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_memsz, p_offset))
    return loads


def _mappings(path: str, bias: int, loads: list[tuple[int, int, int]]) -> list[Mapping]:
    mappings = []
    for vaddr, memsz, offset in loads:
        start = (bias + vaddr) & ~(PAGE - 1)
        end = (bias + vaddr + memsz + PAGE - 1) & ~(PAGE - 1)
        if start < end:
            mappings.append(Mapping(start=start, end=end, file_offset=offset & ~(PAGE - 1), path=path))
    return mappings


def _dynamic_value(process: Process, address: int, tag: int, fmt: str) -> int | None:
    pair = struct.Struct(fmt + "qQ")
    for i in range(MAX_DYNAMIC_ENTRIES):
        # The core alone: the loader writes DT_DEBUG at start-up, the file's is 0.
        raw = process.read_core(address + i * pair.size, pair.size)
        if raw is None:
            return None
        d_tag, d_val = pair.unpack(raw)
        if d_tag == DT_NULL:
            return None
        if d_tag == tag:
            return d_val
    return None
