"""Code compiled at run time (XLA's CPU backend, any LLVM ORC JIT): which function a pc in an
anonymous executable mapping is, read from the in-memory object the JIT made.

A JIT that tells debuggers about its code (GDB's JIT interface, which LLVM's ORC implements)
keeps each compiled object as a relocatable ELF image in the heap, with the load address of each
section written into its header, and registers it with a `jit_code_entry {next, prev,
symfile_addr, symfile_size}` in a list the debugger reads. The core holds both: the object is
found by its ELF header, the entry by the (address, size) pair that points at it. XLA names the
function after the HLO instruction it implements ("custom-call", "minimum_add_fusion") and the
object's FILE symbol after the LLVM module ("__compute_module").

Everything is read from an untrusted core: sizes are bounded and every offset checked.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coreanalyze.process.process import Process

ELF_REL_HEADER = b"\x7fELF\x02\x01\x01"  # 64-bit, little-endian, version 1 (x86-64, aarch64)
ET_REL = 1
SHF_EXECINSTR = 0x4
SHT_SYMTAB = 2
STT_FUNC = 2
STT_FILE = 4
MAX_OBJECT = 64 * 1024 * 1024
MAX_SECTIONS = 4096
MAX_SYMBOLS = 1 << 20
MAX_NAME = 4096
# Writable memory searched for objects (the heap where the JIT keeps them), in all.
SEARCH_BUDGET = 2 << 30
MAX_CANDIDATES = 4096


@dataclass(frozen=True)
class JitFunction:
    name: str | None  # the function's symbol ("custom-call")
    module: str | None  # the object's FILE symbol (the LLVM module: "__compute_module")
    start: int | None  # of the function, in the process
    object_address: int  # of the in-memory ELF object
    object_size: int
    entry: int | None  # the jit_code_entry that registered it, when the core holds one

    @property
    def registered(self) -> bool:
        return self.entry is not None


def is_anonymous_code(process: Process, pc: int | None) -> bool:
    """True when pc lies in executable memory that no file is mapped at."""
    if pc is None or process.notes.mapping_containing(pc) is not None:
        return False
    segment = process.segment_containing(pc)
    return segment is not None and segment.executable


def _cstring(blob: bytes, offset: int) -> str | None:
    if not 0 <= offset < len(blob):
        return None
    end = blob.find(b"\0", offset, offset + MAX_NAME)
    if end < 0:
        return None
    try:
        return blob[offset:end].decode("utf-8") or None
    except UnicodeDecodeError:
        return None


def function_in_object(blob: bytes, pc: int) -> tuple[str | None, str | None, int | None] | None:
    """(function, module, function start) when the relocatable object's loaded code holds pc;
    None when it does not (or the bytes are no such object)."""
    if len(blob) < 64 or not blob.startswith(ELF_REL_HEADER):
        return None
    e_type, = struct.unpack_from("<H", blob, 16)
    e_shoff, = struct.unpack_from("<Q", blob, 40)
    e_shentsize, e_shnum = struct.unpack_from("<HH", blob, 58)
    if e_type != ET_REL or e_shentsize != 64 or not 0 < e_shnum <= MAX_SECTIONS or e_shoff + 64 * e_shnum > len(blob):
        return None
    sections = [struct.unpack_from("<IIQQQQIIQQ", blob, e_shoff + 64 * i) for i in range(e_shnum)]
    holding = [i for i, s in enumerate(sections) if s[2] & SHF_EXECINSTR and s[3] <= pc < s[3] + s[5]]
    if not holding:
        return None
    name = module = start = None
    for s in sections:
        if s[1] != SHT_SYMTAB or s[9] != 24 or s[6] >= e_shnum:
            continue
        strtab = sections[s[6]]
        if strtab[4] + strtab[5] > len(blob) or s[4] + s[5] > len(blob):
            continue
        names = blob[strtab[4] : strtab[4] + strtab[5]]
        count = min(s[5] // 24, MAX_SYMBOLS)
        for i in range(count):
            st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", blob, s[4] + 24 * i)
            kind = st_info & 0xF
            if kind == STT_FILE and module is None:
                module = _cstring(names, st_name)
            elif kind == STT_FUNC and st_shndx in holding:
                address = sections[st_shndx][3] + st_value
                if address <= pc < address + max(st_size, 1):
                    name, start = _cstring(names, st_name), address
    return name, module, start


def object_size(header: bytes) -> int | None:
    """The whole object's size from its ELF header: the section headers come last."""
    if len(header) < 64:
        return None
    e_shoff, = struct.unpack_from("<Q", header, 40)
    e_shentsize, e_shnum = struct.unpack_from("<HH", header, 58)
    size = e_shoff + e_shentsize * e_shnum
    return size if 64 <= size <= MAX_OBJECT else None


def find_jit_function(process: Process, pc: int) -> JitFunction | None:
    """The JIT-compiled function whose code holds pc, from the objects in the core's writable
    memory; None when no object there holds it."""
    spent = 0
    for segment in process.segments:
        if not segment.writable or spent >= SEARCH_BUDGET:
            continue
        size = segment.present_end - segment.start
        spent += size
        for i, address in enumerate(process.find(ELF_REL_HEADER, segment, size)):
            if i >= MAX_CANDIDATES:
                break
            header = process.read(address, 64)
            total = object_size(header) if header else None
            blob = process.read(address, total) if total else None
            found = function_in_object(blob, pc) if blob else None
            if found is not None:
                return JitFunction(found[0], found[1], found[2], address, total, _registration(process, address, total))
    return None


def _registration(process: Process, address: int, size: int) -> int | None:
    """The jit_code_entry {next, prev, symfile_addr, symfile_size} that points at the object."""
    pair = struct.pack("<QQ", address, size)
    for segment in process.segments:
        if not segment.writable:
            continue
        for at in process.find(pair, segment, segment.present_end - segment.start):
            if at % 8 == 0:
                return at - 16
    return None
