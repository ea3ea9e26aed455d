"""An ELF core of a process held at its fatal signal, written as the kernel writes one.

The notes follow the kernel's order (fs/binfmt_elf.c): the signalled thread first with
NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE and its FP/XSTATE sets, then every other
thread's NT_PRSTATUS and register sets; gdb and `coreanalyze CORE` take the first thread as the
one signalled. The memory follows the kernel's default coredump_filter (0x33): anonymous memory
whole, shared memory whose file is gone, private file mappings the process wrote to, and the
first page of each mapped ELF file (its build-id); read-only file contents stay in the files.
Pages never touched are holes in a sparse file, as in the kernel's cores.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
from dataclasses import dataclass, field

from coreanalyze.capture import procfs, ptrace
from coreanalyze.capture.procfs import PAGE, MapEntry
from coreanalyze.corefile import elfcore

EM = {"x86_64": 62, "aarch64": 183}
PF_X, PF_W, PF_R = 1, 2, 4
NT_PRSTATUS, NT_PRFPREG, NT_PRPSINFO, NT_AUXV = 1, 2, 3, 6
NT_SIGINFO = 0x53494749
NT_FILE = 0x46494C45
CHUNK = 1 << 20
ZEROS = bytes(CHUNK)
# The register sets read per thread beside the general registers: (note type, note name, size).
EXTRA_REGSETS = {
    "x86_64": ((ptrace.NT_PRFPREG, b"CORE", 512), (ptrace.NT_X86_XSTATE, b"LINUX", 1 << 14)),
    "aarch64": ((ptrace.NT_PRFPREG, b"CORE", 528), (ptrace.NT_ARM_TLS, b"LINUX", 16)),
}


@dataclass
class HeldThread:
    """A thread of the held process, in a ptrace stop: what goes into its notes."""

    tid: int
    registers: bytes
    extra: list[tuple[int, bytes, bytes]] = field(default_factory=list)  # (type, name, desc)


@dataclass
class CoreWritten:
    path: str
    size: int  # bytes of memory written (holes not counted)
    complete: bool
    problem: str | None = None  # why it is not complete (the disk filled, a read failed)


def read_thread(tid: int) -> HeldThread | None:
    """The registers of a stopped thread (None: it is gone)."""
    arch = platform.machine()
    try:
        regs = ptrace.regset(tid, ptrace.NT_PRSTATUS, 1024)
        if regs is None:
            return None
        held = HeldThread(tid, regs)
        for note_type, name, size in EXTRA_REGSETS.get(arch, ()):
            data = ptrace.regset(tid, note_type, size)
            if data:
                held.extra.append((note_type, name, data))
        return held
    except ptrace.PtraceError as e:
        if ptrace.gone(e):
            return None
        raise


def write_core(pid: int, threads: list[HeldThread], signo: int, siginfo: bytes, path: str) -> CoreWritten:
    """Write the core of held process `pid` (threads[0] is the signalled one) to `path`."""
    arch = platform.machine()
    if arch not in EM:
        raise OSError(errno.ENOSYS, f"cores of {arch} processes are not written here")
    entries = procfs.maps(pid)
    anonymous = procfs.anonymous_bytes(pid)
    notes = _notes(pid, threads, signo, siginfo, entries)
    plan = [(e, _dump_runs(pid, e, anonymous)) for e in entries if not e.special]
    headers_size = elfcore.EHDR_SIZE + (1 + len(plan)) * elfcore.PHDR_SIZE
    notes_offset = headers_size
    offset = notes_offset + len(notes)
    offset += -offset % PAGE
    loads = []
    for entry, runs in plan:
        # The bytes the segment holds: from its start to the end of its last run (only the ELF
        # header's page of a mapped file; the rest is read from the file, as from a kernel core).
        size = max(hi for _, hi in runs) - entry.start if runs else 0
        loads.append((entry, runs, offset, size))
        offset += size
    header = _elf_header(arch, 1 + len(loads))
    phdrs = [struct.pack("<IIQQQQQQ", elfcore.PT_NOTE, 0, notes_offset, 0, 0, len(notes), 0, 4)]
    for entry, _runs, at, size in loads:
        flags = (PF_R if entry.readable else 0) | (PF_W if entry.writable else 0) | (PF_X if entry.executable else 0)
        phdrs.append(struct.pack("<IIQQQQQQ", elfcore.PT_LOAD, flags, at, entry.start, 0, size, entry.end - entry.start, PAGE))
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        try:
            _write_all(fd, header + b"".join(phdrs) + notes, 0)
            written, problem = _copy_memory(pid, fd, loads)
            # The file ends where the last segment ends, holes included.
            os.ftruncate(fd, offset)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                return CoreWritten(path, written, False, f"the disk filled while the core was written ({os.strerror(e.errno)})")
            raise
    finally:
        os.close(fd)
    return CoreWritten(path, written, problem is None, problem)


def _dump_runs(pid: int, entry: MapEntry, anonymous: dict[int, int]) -> list[tuple[int, int]] | None:
    """What of a mapping goes into the core: runs of addresses whose pages may hold data, or
    None for no bytes at all (the segment is then only described)."""
    if not entry.readable:
        return None
    if not entry.file_backed or entry.deleted or anonymous.get(entry.start, 0) > 0:
        if entry.shared and entry.file_backed and not entry.deleted:
            return None  # a shared mapping of a file that exists: the file holds it
        return [(entry.start, entry.end)]
    if entry.offset == 0 and _starts_with_elf(pid, entry.start):
        return [(entry.start, min(entry.end, entry.start + PAGE))]
    return None


def _starts_with_elf(pid: int, address: int) -> bool:
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            return os.pread(mem.fileno(), 4, address) == b"\x7fELF"
    except OSError:
        return False


def _copy_memory(pid: int, fd: int, loads) -> tuple[int, str | None]:
    """Copy each segment's bytes from /proc/PID/mem; unreadable pages and untouched anonymous
    pages stay holes. Returns (bytes written, a problem or None)."""
    written = 0
    unreadable = 0
    mem = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    try:
        pagemap = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
    except OSError:
        pagemap = None
    try:
        for entry, runs, at, _size in loads:
            if not runs:
                continue
            # Untouched pages of private anonymous memory are zeros and stay holes; [vdso] and
            # the like are the kernel's pages, present or not in the page tables: read them.
            private_anonymous = not entry.file_backed and not entry.shared and (entry.path in ("", "[heap]", "[stack]") or entry.path.startswith("[anon:"))
            for lo, hi in runs:
                parts = procfs.pages_in_use(pagemap if private_anonymous else None, lo, hi)
                for start, end in parts:
                    address = start
                    while address < end:
                        want = min(CHUNK, end - address)
                        try:
                            data = os.pread(mem, want, address)
                        except OSError:
                            data = b""
                        if not data:
                            unreadable += PAGE
                            address += PAGE  # a page the kernel would not give: a hole
                            continue
                        if data != ZEROS[: len(data)]:
                            _write_all(fd, data, at + address - entry.start)
                            written += len(data)
                        address += len(data)
    finally:
        os.close(mem)
        if pagemap is not None:
            os.close(pagemap)
    problem = f"{unreadable // 1024} KiB of memory could not be read and read as zeros" if unreadable > 1 << 20 else None
    return written, problem


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def _elf_header(arch: str, phnum: int) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    return ident + struct.pack(
        "<HHIQQQIHHHHHH", elfcore.ET_CORE, EM[arch], 1, 0, elfcore.EHDR_SIZE, 0, 0, elfcore.EHDR_SIZE, elfcore.PHDR_SIZE, phnum, 0, 0, 0
    )


def _notes(pid: int, threads: list[HeldThread], signo: int, siginfo: bytes, entries: list[MapEntry]) -> bytes:
    status = procfs.status_fields(pid)
    ids = _ids(status)
    notes = []
    for i, thread in enumerate(threads):
        notes.append(elfcore.note("<", b"CORE", NT_PRSTATUS, _prstatus(thread, signo, siginfo, ids)))
        if i == 0:
            notes.append(elfcore.note("<", b"CORE", NT_PRPSINFO, _prpsinfo(pid, status, ids)))
            notes.append(elfcore.note("<", b"CORE", NT_SIGINFO, siginfo))
            auxv = procfs.read_bytes(f"/proc/{pid}/auxv")
            if auxv:
                notes.append(elfcore.note("<", b"CORE", NT_AUXV, auxv))
            notes.append(elfcore.note("<", b"CORE", NT_FILE, _nt_file(entries)))
        for note_type, name, desc in thread.extra:
            notes.append(elfcore.note("<", name, note_type, desc))
    return b"".join(notes)


def _ids(status: dict[str, str]) -> dict[str, int]:
    def first(name: str) -> int:
        try:
            return int(status.get(name, "0").split()[0])
        except (ValueError, IndexError):
            return 0

    return {"pid": first("Tgid"), "ppid": first("PPid"), "uid": first("Uid"), "gid": first("Gid")}


def _prstatus(thread: HeldThread, signo: int, siginfo: bytes, ids: dict[str, int]) -> bytes:
    """struct elf_prstatus: every thread carries the dump's signal, as the kernel writes it."""
    _signo, err, code = ptrace.unpack_siginfo(siginfo)
    pgrp, sid = _session(thread.tid)
    head = struct.pack("<iiihxxQQiiii", signo, code, err, signo, 0, 0, thread.tid, ids["ppid"], pgrp, sid)
    head += bytes(64)  # user, system and children's times
    body = head + thread.registers + struct.pack("<i", 1 if thread.extra else 0)
    return body + bytes(-len(body) % 8)


def _session(tid: int) -> tuple[int, int]:
    try:
        return os.getpgid(tid), os.getsid(tid)
    except OSError:
        return 0, 0


def _prpsinfo(pid: int, status: dict[str, str], ids: dict[str, int]) -> bytes:
    """struct elf_prpsinfo: state, ids, the short name and the first 80 bytes of the arguments."""
    args = procfs.read_bytes(f"/proc/{pid}/cmdline").replace(b"\0", b" ").strip()[:79]
    name = procfs.read_bytes(f"/proc/{pid}/comm").strip()[:15]
    pgrp, sid = _session(pid)
    return struct.pack(
        "<bcbbxxxxQIIiiii16s80s", 0, b"R", 0, 0, 0, ids["uid"], ids["gid"], pid, ids["ppid"], pgrp, sid, name, args
    )


def _nt_file(entries: list[MapEntry]) -> bytes:
    files = [e for e in entries if e.file_backed]
    table = struct.pack("<QQ", len(files), PAGE)
    table += b"".join(struct.pack("<QQQ", e.start, e.end, e.offset // PAGE) for e in files)
    names = b"".join(os.fsencode(e.path) + b"\0" for e in files)
    return table + names

