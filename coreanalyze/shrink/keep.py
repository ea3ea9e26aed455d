"""What a shrunk core keeps besides what the analysis read: what gdb needs for its backtraces.

- each thread's stack from its stack pointer up to the top of its mapping (bounded per thread;
  the crashing thread's whole stack), where gdb unwinds;
- the first page of every mapped ELF object (its headers and build-id note, which gdb and the
  module table read) and the vDSO whole (gdb reads its symbols from memory);
- the dynamic linker's r_debug and link map, through which gdb finds the shared libraries of a
  core: without them its stacks lose their names.

Every read is of the core alone (Process.read_core, core_only=True), so the recorder
(coreanalyze.shrink.recorder) keeps the bytes, and what is kept is what the core holds, never a
mapped file's; nothing here trusts a count or a pointer from the core without a bound.
"""

from __future__ import annotations

import struct

from coreanalyze.corefile.elfcore import ELF_MAGIC
from coreanalyze.corefile.tables import SP_REGISTER
from coreanalyze.process.process import Process
from coreanalyze.shrink.pages import PAGE, PageSet, page_floor

STACK_PER_THREAD = 1 << 20  # bytes above the stack pointer kept for a thread that did not crash
CRASHING_STACK = 64 << 20  # the crashing thread's whole stack, up to this much
BELOW_STACK_POINTER = 256  # the red zone and what a signal handler pushed
VDSO_MAX = 64 << 10
LOADER_DATA_MAX = 256 << 10
THREAD_DESCRIPTOR = 2560  # glibc's struct pthread on x86-64 (2304 bytes in 2.35-2.39)
MAX_PHDRS = 256
MAX_DYNAMIC = 1024  # entries of one dynamic section
MAX_LINK_MAP = 4096  # objects in one link map
MAX_NAME = 4096
LINK_MAP_BYTES = 40  # l_addr, l_name, l_ld, l_next, l_prev
R_DEBUG_BYTES = 48  # r_debug_extended: r_version .. r_ldbase, r_next
PT_DYNAMIC, PT_PHDR = 2, 6
DT_NULL, DT_DEBUG = 0, 21


def keep_stacks(process: Process, kept: PageSet, per_thread: int = STACK_PER_THREAD) -> None:
    register = SP_REGISTER.get(process.arch)
    for thread in process.threads:
        sp = thread.registers.get(register) if register else None
        if isinstance(sp, int):
            whole = thread.tid == process.crashing_tid
            keep_stack_from(process, kept, sp, CRASHING_STACK if whole else per_thread)


def keep_thread_descriptors(process: Process, kept: PageSet) -> None:
    """glibc's struct pthread at each thread's thread pointer (x86-64's fs_base): gdb's
    libthread_db reads it to name a thread (`Thread 0x7f.. (LWP n)`)."""
    for thread in process.threads:
        pointer = thread.registers.get("fs_base")
        if isinstance(pointer, int) and process.is_present(pointer):
            kept.add(pointer, THREAD_DESCRIPTOR, "thread descriptors")


def keep_loader_data(process: Process, kept: PageSet) -> None:
    """The dynamic linker's writable data (`_rtld_global`: the lists of threads' descriptors
    that libthread_db walks to list the threads, `_r_debug`)."""
    base = process.auxv.get("AT_BASE")
    loader = next((m.path for m in process.mappings if isinstance(base, int) and m.start <= base < m.end), None)
    if loader is None:
        return
    spans = [(m.start, m.end) for m in process.mappings if m.path == loader]
    last_end = max(end for _start, end in spans)
    for segment in process.segments:
        ours = any(start <= segment.start < end for start, end in spans) or segment.start == last_end  # + its .bss
        if ours and segment.writable and segment.present_end > segment.start:
            kept.add(segment.start, min(LOADER_DATA_MAX, segment.present_end - segment.start), "dynamic linker's data")


def keep_stack_from(process: Process, kept: PageSet, sp: int, limit: int, why: str = "stacks") -> None:
    """From just below sp to the top of its mapping (at most `limit` bytes)."""
    segment = process.segment_containing(sp)
    if segment is None:
        return
    start = max(segment.start, sp - BELOW_STACK_POINTER)
    end = min(segment.present_end, page_floor(sp) + limit)
    kept.add(start, end - start, why)


def keep_object_headers(process: Process, kept: PageSet) -> None:
    for segment in process.segments:
        if segment.present_end > segment.start and process.read_core(segment.start, 4) == ELF_MAGIC:
            kept.add(segment.start, min(PAGE, segment.present_end - segment.start), "object headers")
    vdso = process.auxv.get("AT_SYSINFO_EHDR")
    segment = process.segment_containing(vdso) if isinstance(vdso, int) else None
    if segment is not None:
        kept.add(segment.start, min(VDSO_MAX, segment.present_end - segment.start), "object headers")


def keep_link_map(process: Process, kept: PageSet) -> None:
    """Walk r_debug and the link map as gdb does; the recorder keeps what is read."""
    fmt = "<" if process.little_endian else ">"
    phdr, phnum = process.auxv.get("AT_PHDR"), process.auxv.get("AT_PHNUM")
    if not isinstance(phdr, int) or not isinstance(phnum, int):
        return
    raw = process.read_core(phdr, 56 * min(phnum, MAX_PHDRS))
    if raw is None:
        return
    headers = [struct.unpack_from(fmt + "IIQQQQQQ", raw, i) for i in range(0, len(raw), 56)]
    bias = next((phdr - h[3] for h in headers if h[0] == PT_PHDR), None)
    dynamic = next((h for h in headers if h[0] == PT_DYNAMIC), None)
    if bias is None or dynamic is None:
        return  # a static program
    r_debug = _dynamic_value(process, bias + dynamic[3], DT_DEBUG, fmt)
    namespaces = 0
    seen: set[int] = set()
    while r_debug and namespaces < 16:
        namespaces += 1
        head = process.read_core(r_debug, R_DEBUG_BYTES) or process.read_core(r_debug, 40)
        if head is None:
            return
        node = struct.unpack_from(fmt + "Q", head, 8)[0]
        while node and node not in seen and len(seen) < MAX_LINK_MAP:
            seen.add(node)
            entry = process.read_core(node, LINK_MAP_BYTES)
            if entry is None:
                break
            _l_addr, l_name, l_ld, node, _prev = struct.unpack(fmt + "5Q", entry)
            if l_name:
                process.read_cstring(l_name, MAX_NAME, core_only=True)
            if l_ld:
                _dynamic_value(process, l_ld, DT_NULL, fmt)
        version = struct.unpack_from(fmt + "i", head, 0)[0]
        r_debug = struct.unpack_from(fmt + "Q", head, 40)[0] if version >= 2 and len(head) >= R_DEBUG_BYTES else 0


def _dynamic_value(process: Process, address: int, tag: int, fmt: str) -> int | None:
    """The value of `tag` in the dynamic section at address (reading it up to DT_NULL)."""
    for i in range(MAX_DYNAMIC):
        entry = process.read_core(address + 16 * i, 16)
        if entry is None:
            return None
        d_tag, d_val = struct.unpack(fmt + "qQ", entry)
        if d_tag == tag:
            return d_val
        if d_tag == DT_NULL:
            return None
    return None
