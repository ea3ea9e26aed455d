"""Read what a core file says about the dead process, without gdb.

The kernel (or gdb's generate-core-file) writes an ELF ET_CORE file: PT_NOTE segments carry
the process's identity (NT_PRPSINFO), one NT_PRSTATUS per thread with its registers (the
thread that took the signal comes first), the signal details (NT_SIGINFO), the auxiliary
vector (NT_AUXV) and the mapped files (NT_FILE); PT_LOAD segments carry the memory.

Everything in a core is untrusted input: sizes and counts are checked against the bytes that
are really there, every loop is bounded, and a damaged core yields what could be read plus
warnings. Only input that cannot be a usable core at all raises errors.BadInput.
"""

from __future__ import annotations

import bisect
import os
import shlex
import stat
import struct
from dataclasses import dataclass, field
from typing import Any, Iterator

from elftools.common.exceptions import ELFError
from elftools.construct.core import ConstructError
from elftools.elf.elffile import ELFFile

from coreanalyze import model, signals
from coreanalyze.errors import BadInput
from coreanalyze.memory import CoreMemory, Segment

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
PC_REGISTER = {"x86_64": "rip", "aarch64": "pc"}
SP_REGISTER = {"x86_64": "rsp", "aarch64": "sp"}

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
_NOTE_TYPE_BY_NAME = {"NT_PRSTATUS": NT_PRSTATUS, "NT_PRPSINFO": NT_PRPSINFO, "NT_AUXV": NT_AUXV,
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
CORE_NOTE_NAMES = frozenset({"CORE", "LINUX", "GNU", "GDB"})
# Above any user-space address on x86_64 (57-bit with 5-level paging) and aarch64.
MAX_USER_ADDRESS = 1 << 57

COMPRESSED_MAGIC = {
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x04\x22\x4d\x18": "lz4",
    b"\xfd7zXZ\x00": "xz",
    b"\x1f\x8b": "gzip",
}


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


@dataclass
class Mapping:
    """One file-backed mapping from NT_FILE."""

    start: int
    end: int
    file_offset: int
    path: str

    @property
    def deleted(self) -> bool:
        return self.path.endswith(" (deleted)")


@dataclass
class ThreadNotes:
    tid: int
    registers: dict[str, int] = field(default_factory=dict)
    cursig: int = 0


@dataclass
class CoreNotes:
    path: str
    size: int
    arch: str
    memory: CoreMemory
    pid: int | None = None
    ppid: int | None = None
    uid: int | None = None
    gid: int | None = None
    executable: str | None = None
    cmdline: str | None = None
    argv: list[str] = field(default_factory=list)
    # The environment the process was started with (NAME -> value), read from the initial
    # stack; values may be secrets, so reports show them only when asked to.
    environ: dict[str, str] = field(default_factory=dict)
    signal: model.SignalInfo = field(default_factory=model.SignalInfo)
    threads: list[ThreadNotes] = field(default_factory=list)
    crashing_tid: int | None = None
    mappings: list[Mapping] = field(default_factory=list)
    # AT_* names -> int; AT_EXECFN / AT_PLATFORM / AT_BASE_PLATFORM hold the strings they
    # point to when the core has them (their addresses stay in auxv_pointers).
    auxv: dict[str, Any] = field(default_factory=dict)
    auxv_pointers: dict[str, int] = field(default_factory=dict)
    build_ids: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    little_endian: bool = True

    @property
    def pc_register(self) -> str:
        return PC_REGISTER[self.arch]

    @property
    def sp_register(self) -> str:
        return SP_REGISTER[self.arch]

    def thread(self, tid: int | None) -> ThreadNotes | None:
        return next((t for t in self.threads if t.tid == tid), None)

    def mapping_containing(self, address: int | None) -> Mapping | None:
        if address is None:
            return None
        starts = [m.start for m in self.mappings]
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and self.mappings[i].start <= address < self.mappings[i].end:
            return self.mappings[i]
        return None

    def close(self) -> None:
        self.memory.close()

    def __enter__(self) -> CoreNotes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RawNote:
    name: str
    type: int
    desc: bytes


# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def read_core(path: str | os.PathLike[str]) -> CoreNotes:
    """Parse the notes of a core file; raise BadInput when it is not a usable core."""
    path = os.fspath(path)
    size = _check_is_core_candidate(path)
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        try:
            elf = ELFFile(handle)
            e_type = elf["e_type"]
            e_machine = elf["e_machine"]
        except PARSE_ERRORS:
            raise BadInput(f"{path} has no readable notes (truncated or corrupt)") from None
        if e_type != "ET_CORE":
            raise BadInput(f"{path} is {_describe_non_core(elf, e_type)}, not a core file")
        arch = SUPPORTED_ARCHES.get(e_machine) if isinstance(e_machine, str) else None
        if arch is None or elf.elfclass != 64:
            raise BadInput(
                f"{path}: core is for the {_arch_name(e_machine, elf.elfclass)} architecture; "
                "only x86_64 and aarch64 cores are supported"
            )
        warnings: list[str] = []
        headers = _program_headers(elf, warnings)
        expected = _expected_size(elf, headers)
        if size < expected:
            warnings.append(f"core file is truncated: {size} of {expected} bytes present")
        notes = _read_notes(elf, headers, size, warnings)
        little_endian = elf.little_endian
    if not notes:
        raise BadInput(f"{path} has no readable notes (truncated or corrupt)")

    segments = [
        Segment(
            start=h["p_vaddr"],
            end=h["p_vaddr"] + h["p_memsz"],
            file_offset=h["p_offset"],
            filesz=max(0, min(h["p_filesz"], h["p_memsz"], size - h["p_offset"])),
            flags=h["p_flags"],
        )
        for h in headers
        if h["p_type"] == "PT_LOAD"
    ]
    try:
        memory = CoreMemory(path, segments, little_endian=little_endian)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    dropped = sum(1 for seg in segments if seg.end > seg.start) - len(memory.segments)
    if dropped:
        warnings.append(f"{dropped} memory segment(s) overlap others and are left out (corrupt program headers)")
    core = CoreNotes(path=path, size=size, arch=arch, memory=memory, warnings=warnings, little_endian=little_endian)
    try:
        _interpret_notes(core, notes)
    except PARSE_ERRORS as exc:
        # Every field is parsed with bounds checks; this is the last line of defence so that a
        # core damaged in a way nobody foresaw still yields what was read before the damage.
        core.warnings.append(f"core notes could not be fully interpreted ({type(exc).__name__}: {exc})")
    except BaseException:
        memory.close()
        raise
    return core


def to_core_info(notes: CoreNotes) -> model.CoreInfo:
    return model.CoreInfo(
        path=notes.path,
        pid=notes.pid,
        executable=notes.executable,
        cmdline=notes.cmdline,
        signal=notes.signal,
        uid=notes.uid,
        gid=notes.gid,
        ppid=notes.ppid,
        arch=notes.arch,
        size=notes.size,
    )


def threads_from_notes(notes: CoreNotes) -> list[model.Thread]:
    """Threads with frame 0 only (the pc and its module): what is known without unwinding."""
    threads = []
    for t in notes.threads:
        pc = t.registers.get(notes.pc_register)
        mapping = notes.mapping_containing(pc)
        frame = model.Frame(index=0, pc=pc, module=mapping.path if mapping else None)
        threads.append(
            model.Thread(
                tid=t.tid,
                crashed=t.tid == notes.crashing_tid,
                frames=[frame] if pc is not None else [],
                registers=dict(t.registers),
            )
        )
    return threads


def parse_notes(data: bytes, align: int = 4, little_endian: bool = True, limit: int = 100_000) -> list[RawNote]:
    """ELF notes in a byte buffer (a PT_NOTE segment or SHT_NOTE section), bounds-checked."""
    header = struct.Struct("<III" if little_endian else ">III")
    align = 8 if align == 8 else 4
    notes: list[RawNote] = []
    offset = 0
    while offset + header.size <= len(data) and len(notes) < limit:
        namesz, descsz, ntype = header.unpack_from(data, offset)
        name_start = offset + header.size
        desc_start = name_start + _round_up(namesz, align)
        desc_end = desc_start + descsz
        if desc_end > len(data):
            break
        name = data[name_start:name_start + namesz].split(b"\0", 1)[0].decode("ascii", "replace")
        notes.append(RawNote(name, ntype, bytes(data[desc_start:desc_end])))
        offset = _round_up(desc_end, align)
    return notes


# ---------------------------------------------------------------------------------------------
# Checks on the file itself
# ---------------------------------------------------------------------------------------------


def _check_is_core_candidate(path: str) -> int:
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


def _describe_non_core(elf: ELFFile, e_type: Any) -> str:
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


def _arch_name(e_machine: Any, elfclass: int) -> str:
    if isinstance(e_machine, str):
        if e_machine in SUPPORTED_ARCHES and elfclass != 64:
            return f"a 32-bit {SUPPORTED_ARCHES[e_machine]} process"
        return OTHER_ARCH_NAMES.get(e_machine, e_machine.removeprefix("EM_").lower())
    return f"machine type {e_machine}"


def _bounded_segments(elf: ELFFile, limit: int) -> Iterator[Any]:
    for i in range(min(elf.num_segments(), limit)):
        yield elf.get_segment(i)


def _program_headers(elf: ELFFile, warnings: list[str]) -> list[dict[str, Any]]:
    """Program headers as plain dicts; a damaged table yields the headers before the damage."""
    headers: list[dict[str, Any]] = []
    try:
        count = elf.num_segments()
    except PARSE_ERRORS:
        warnings.append("program header count is unreadable")
        return headers
    if count > MAX_SEGMENTS:
        warnings.append(f"core claims {count} program headers; reading the first {MAX_SEGMENTS}")
        count = MAX_SEGMENTS
    unknown_type_seen = False
    for i in range(count):
        try:
            h = elf.get_segment(i).header
            if h["p_type"] not in CORE_SEGMENT_TYPES and not unknown_type_seen:
                unknown_type_seen = True
                warnings.append(f"program header {i} has type {h['p_type']}, which a core does not use; it is left out")
            headers.append(
                {
                    "p_type": h["p_type"],
                    "p_offset": int(h["p_offset"]),
                    "p_vaddr": int(h["p_vaddr"]),
                    "p_filesz": int(h["p_filesz"]),
                    "p_memsz": int(h["p_memsz"]),
                    "p_flags": int(h["p_flags"]),
                }
            )
        except PARSE_ERRORS:
            warnings.append(f"program headers are unreadable from entry {i} of {count}")
            break
    return headers


def _expected_size(elf: ELFFile, headers: list[dict[str, Any]]) -> int:
    end = 0
    try:
        end = elf["e_phoff"] + elf.num_segments() * elf["e_phentsize"]
    except PARSE_ERRORS:
        pass
    for h in headers:
        if h["p_type"] in ("PT_LOAD", "PT_NOTE"):
            end = max(end, h["p_offset"] + h["p_filesz"])
    return end


# ---------------------------------------------------------------------------------------------
# Notes
# ---------------------------------------------------------------------------------------------


_NOTE_NAMES_BY_TYPE = {v: k for k, v in _NOTE_TYPE_BY_NAME.items()}


def _read_notes(elf: ELFFile, headers: list[dict[str, Any]], size: int, warnings: list[str]) -> list[RawNote]:
    """The notes this module interprets (see INTERPRETED_NOTES), within the bounds above.

    Parsed here with struct rather than pyelftools, whose note reader builds Python objects
    for every NT_FILE entry: a hostile NT_FILE of a million entries would cost gigabytes.
    """
    notes: list[RawNote] = []
    stream = elf.stream
    header = struct.Struct("<III" if elf.little_endian else ">III")
    garbled_seen = False
    seen = threads = 0
    budget, over_budget = MAX_NOTE_BYTES, False
    process_notes: set[int] = set()  # one each of NT_PRPSINFO, NT_SIGINFO, NT_AUXV, NT_FILE
    for h in headers:
        if h["p_type"] != "PT_NOTE":
            continue
        offset, want = h["p_offset"], h["p_filesz"]
        if want > budget and not over_budget:
            over_budget = True
            warnings.append(f"the notes claim more than {MAX_NOTE_BYTES} bytes; only the first {MAX_NOTE_BYTES} are read")
        have = max(0, min(want, size - offset, budget))
        if have == 0:
            continue
        budget -= have
        try:
            stream.seek(offset)
            data = stream.read(have)
        except (OSError, OverflowError, ValueError):
            continue
        view = memoryview(data)
        cursor = 0
        while cursor < len(data):
            if seen >= MAX_NOTES:
                warnings.append(f"the core has more than {MAX_NOTES} notes; the rest are left out")
                return notes
            if cursor + header.size > len(data) or not any(data[cursor:cursor + header.size]):
                if data.count(0, cursor) != len(data) - cursor:  # zeros are padding, not damage
                    warnings.append(f"notes are unreadable after {seen} entries (a note header is cut short or empty)")
                break
            namesz, descsz, ntype = header.unpack_from(data, cursor)
            name_start = cursor + header.size
            desc_start = name_start + _round_up(namesz, 4)
            desc_end = desc_start + descsz
            if desc_end > len(data):
                kind = _NOTE_NAMES_BY_TYPE.get(ntype, f"type {ntype:#x}")
                present = max(0, len(data) - desc_start)
                warnings.append(f"note {kind} is cut short ({present} of {descsz} bytes)")
                break
            seen += 1
            name = _text(bytes(view[name_start:name_start + namesz]).split(b"\0", 1)[0])
            cursor = _round_up(desc_end, 4)
            if name not in CORE_NOTE_NAMES and not garbled_seen:
                garbled_seen = True
                warnings.append(
                    f"note {seen - 1} has the name {name!r}: the notes are damaged from there on "
                    "and some may be missing"
                )
            # Register sets beyond the general ones (FPU, XSTATE, ...) are gdb's business;
            # keeping only what is interpreted bounds the memory a core's notes can take.
            if name != "CORE" or ntype not in INTERPRETED_NOTES:
                continue
            if ntype != NT_PRSTATUS:
                if ntype in process_notes:
                    continue  # a second one is damage (or a flood); the first is kept
                process_notes.add(ntype)
            else:
                threads += 1
                if threads == MAX_THREADS + 1:
                    warnings.append(f"the core has more than {MAX_THREADS} threads; only the first {MAX_THREADS} are read")
                if threads > MAX_THREADS:
                    continue
            notes.append(RawNote(name, ntype, bytes(view[desc_start:desc_end])))
    return notes


def _interpret_notes(core: CoreNotes, notes: list[RawNote]) -> None:
    fmt = "<" if core.little_endian else ">"
    psinfo: tuple | None = None
    siginfo: bytes | None = None
    auxv_raw: bytes | None = None
    for note in notes:
        if note.name != "CORE":
            continue
        if note.type == NT_PRSTATUS:
            thread = _parse_prstatus(note.desc, core.arch, fmt, core.warnings)
            if thread is not None:
                core.threads.append(thread)
        elif note.type == NT_PRPSINFO and psinfo is None:
            layout = PRPSINFO if core.little_endian else PRPSINFO_BE
            if len(note.desc) >= layout.size:
                psinfo = layout.unpack_from(note.desc)
            else:
                core.warnings.append("NT_PRPSINFO is too short")
        elif note.type == NT_SIGINFO and siginfo is None:
            siginfo = note.desc
        elif note.type == NT_AUXV and auxv_raw is None:
            auxv_raw = note.desc
        elif note.type == NT_FILE and not core.mappings:
            core.mappings = _parse_nt_file(note.desc, fmt, core.warnings)

    if not core.threads:
        core.warnings.append("core has no thread registers (NT_PRSTATUS)")
    else:
        # The kernel writes the thread that took the fatal signal first.
        core.crashing_tid = core.threads[0].tid

    fname = psargs = None
    if psinfo is not None:
        _state, _sname, _zomb, _nice, _flag, uid, gid, pid, ppid, _pgrp, _sid, fname_b, psargs_b = psinfo
        core.uid, core.gid, core.pid, core.ppid = uid, gid, pid, ppid
        fname = _text(fname_b.split(b"\0", 1)[0])
        psargs = _text(psargs_b.split(b"\0", 1)[0]).rstrip(" ")
    else:
        core.warnings.append("core has no process information (NT_PRPSINFO)")
        if len(core.threads) == 1:
            # A single-threaded process's only thread id is its pid.
            core.pid = core.threads[0].tid

    core.signal = _parse_siginfo(siginfo, fmt) if siginfo else _signal_from_cursig(core)
    if core.signal.number is not None and not 0 < core.signal.number <= MAX_SIGNAL:
        core.warnings.append(f"the core names signal {core.signal.number}, which does not exist (damaged siginfo)")
    if siginfo is None:
        core.warnings.append("core has no NT_SIGINFO; the signal comes from the thread status")

    if auxv_raw is not None:
        core.auxv, core.auxv_pointers = _parse_auxv(auxv_raw, fmt, core.memory)
    else:
        core.warnings.append("core has no auxiliary vector (NT_AUXV)")
    if not core.mappings:
        core.warnings.append("core has no mapped-file list (NT_FILE)")

    core.executable = _executable(core, fname)
    _fill_command_line(core, auxv_raw, psargs)
    core.build_ids = _build_ids_from_memory(core)


def _parse_prstatus(desc: bytes, arch: str, fmt: str, warnings: list[str]) -> ThreadNotes | None:
    names = REGISTER_NAMES[arch]
    if len(desc) < PRSTATUS_PID_OFFSET + 4:
        warnings.append("an NT_PRSTATUS note is too short to name its thread")
        return None
    cursig = struct.unpack_from(fmt + "h", desc, PRSTATUS_CURSIG_OFFSET)[0]
    tid = struct.unpack_from(fmt + "i", desc, PRSTATUS_PID_OFFSET)[0]
    registers: dict[str, int] = {}
    if len(desc) >= PRSTATUS_REG_OFFSET + 8 * len(names):
        values = struct.unpack_from(f"{fmt}{len(names)}Q", desc, PRSTATUS_REG_OFFSET)
        registers = dict(zip(names, values))
    else:
        warnings.append(f"thread {tid}: NT_PRSTATUS is {len(desc)} bytes, too short for {arch} registers")
    return ThreadNotes(tid=tid, registers=registers, cursig=cursig)


def signal_code_name(signo: int | None, code: int | None) -> str | None:
    """The symbolic si_code: fault codes are per signal, SI_* codes are shared."""
    if code is None:
        return None
    name = signals.code_name(signals.SIGNAL_NAMES.get(signo) if signo is not None else None, code)
    if name is not None:
        return name
    return f"SI_CODE({code})" if code <= 0 or code == signals.SI_KERNEL else f"code {code}"


def _parse_siginfo(desc: bytes, fmt: str) -> model.SignalInfo:
    info = model.SignalInfo()
    if len(desc) < 12:
        return info
    signo, errno, code = struct.unpack_from(fmt + "iii", desc, 0)
    info.number = signo
    info.name = signals.signal_name(signo)
    info.code = code
    info.code_name = signal_code_name(signo, code)
    info.errno = errno or None
    # The union starts at offset 16 on 64-bit Linux (after three ints and padding).
    if code in signals.SENDER_CODES and len(desc) >= 24:
        info.sender_pid, info.sender_uid = struct.unpack_from(fmt + "iI", desc, 16)
    elif info.name in signals.FAULT_ADDRESS_SIGNALS and code > 0 and code != signals.SI_KERNEL and len(desc) >= 24:
        # SI_KERNEL faults (e.g. a general protection fault on x86_64) report si_addr 0,
        # which is not the address that was accessed; leave it unknown rather than "null".
        info.address = struct.unpack_from(fmt + "Q", desc, 16)[0]
    return info


def _signal_from_cursig(core: CoreNotes) -> model.SignalInfo:
    if not core.threads or not core.threads[0].cursig:
        return model.SignalInfo()
    number = core.threads[0].cursig
    return model.SignalInfo(number=number, name=signals.signal_name(number))


def _parse_nt_file(desc: bytes, fmt: str, warnings: list[str]) -> list[Mapping]:
    # count, page_size, count * (start, end, page_offset), then count NUL-terminated paths.
    if len(desc) < 16:
        warnings.append("NT_FILE is too short")
        return []
    count, page_size = struct.unpack_from(fmt + "QQ", desc, 0)
    if count > (len(desc) - 16) // 24:
        warnings.append(f"NT_FILE claims {count} mappings but holds fewer; file list dropped")
        return []
    if page_size == 0 or page_size > 1 << 30:
        warnings.append(f"NT_FILE has an implausible page size {page_size}")
        page_size = 4096
    names_start = 16 + 24 * count
    if count > MAX_MAPPINGS:
        warnings.append(f"NT_FILE lists {count} mappings; only the first {MAX_MAPPINGS} are read")
        count = MAX_MAPPINGS
    ranges = struct.unpack_from(f"{fmt}{3 * count}Q", desc, 16)
    names: list[bytes] = []
    cursor = names_start
    while len(names) < count and cursor <= len(desc):  # only the paths used: no copy of the rest
        nul = desc.find(b"\0", cursor)
        end = len(desc) if nul < 0 else nul
        names.append(desc[cursor:end])
        cursor = end + 1
    if len(names) < count:
        warnings.append("NT_FILE has fewer paths than mappings; file list dropped")
        return []
    mappings = []
    impossible = 0
    for i in range(count):
        start, end = ranges[3 * i], ranges[3 * i + 1]
        if not start < end <= MAX_USER_ADDRESS:
            impossible += 1
            continue
        mappings.append(Mapping(start=start, end=end, file_offset=ranges[3 * i + 2] * page_size, path=_text(names[i])))
    if impossible:
        warnings.append(f"NT_FILE has {impossible} mapping(s) with an impossible address range; left out")
    # The kernel writes absolute paths ("(unreachable)/..." outside the process's root).
    odd = next((m.path for m in mappings if not m.path.startswith(("/", "(unreachable)"))), None)
    if odd is not None:
        warnings.append(f"NT_FILE paths look damaged (e.g. {odd[:80]!r}); file names of modules may be wrong")
    mappings.sort(key=lambda m: m.start)
    return mappings


def _parse_auxv(desc: bytes, fmt: str, memory: CoreMemory) -> tuple[dict[str, Any], dict[str, int]]:
    auxv: dict[str, Any] = {}
    pointers: dict[str, int] = {}
    pair = struct.Struct(fmt + "QQ")
    for offset in range(0, len(desc) - pair.size + 1, pair.size):
        key, value = pair.unpack_from(desc, offset)
        if key == 0:
            break
        auxv.setdefault(AUXV_NAMES.get(key, f"AT_{key}"), value)
    for name in AUXV_STRINGS:
        address = auxv.get(name)
        if isinstance(address, int):
            pointers[name] = address
            text = memory.read_cstring(address, 4096)
            if text is not None:
                auxv[name] = _text(text)
    return auxv, pointers


def _executable(core: CoreNotes, fname: str | None) -> str | None:
    # The mapping that holds the program's entry point (or its program headers) is the
    # executable, with the path the kernel resolved; AT_EXECFN is what execve was given.
    for key in ("AT_ENTRY", "AT_PHDR"):
        mapping = core.mapping_containing(core.auxv.get(key))
        if mapping is not None:
            return mapping.path
    execfn = core.auxv.get("AT_EXECFN")
    if isinstance(execfn, str) and execfn:
        return execfn
    return fname or None


def _fill_command_line(core: CoreNotes, auxv_raw: bytes | None, psargs: str | None) -> None:
    argv, reason = (None, "the core has no auxiliary vector") if auxv_raw is None else _argv_from_stack(core, auxv_raw)
    if argv is not None:
        core.argv = argv
        core.cmdline = shlex.join(argv)
        return
    if psargs:
        core.cmdline = psargs
        core.argv = psargs.split()
        core.warnings.append(
            f"command line taken from the process status ({reason}); it is cut at {PSARGS_LEN} "
            "characters and arguments containing spaces are split"
        )
    else:
        core.warnings.append(f"command line is unknown ({reason})")


def _argv_from_stack(core: CoreNotes, auxv_raw: bytes) -> tuple[list[str] | None, str]:
    """The real argv, read from the initial stack.

    At exec the kernel lays out the stack top as: argc, argv[0..argc-1], NULL, envp..., NULL,
    auxv pairs, then the strings. The saved auxv in NT_AUXV is a byte-for-byte copy of the
    stack's auxv, so finding it locates argc by walking back over envp and argv.
    """
    memory = core.memory
    fmt = "<" if core.little_endian else ">"
    # AT_EXECFN, AT_RANDOM and AT_PLATFORM point into the initial stack's string area.
    anchor = _auxv_pointer(auxv_raw, fmt, (31, 25, 15))
    segment = memory.segment_containing(anchor) if anchor is not None else None
    if segment is None or anchor >= segment.present_end:
        return None, "the initial stack is not in the core"
    window_end = segment.present_end
    window_start = max(segment.start, window_end - STACK_SEARCH_BYTES)
    window = memory.read(window_start, window_end - window_start)
    if window is None:
        return None, "the initial stack is not in the core"
    needle = _auxv_needle(auxv_raw, fmt)
    if len(needle) < 32:
        return None, "the auxiliary vector is too short to locate"
    at = window.find(needle)
    while at >= 0 and at % 8:
        at = window.find(needle, at + 1)
    if at < 0:
        return None, "the auxiliary vector was not found on the stack"
    word = struct.Struct(fmt + "Q")

    def word_at(offset: int) -> int | None:
        return word.unpack_from(window, offset)[0] if 0 <= offset <= len(window) - 8 else None

    # at - 8 is envp's NULL; walk back over the environment to argv's NULL.
    cursor = at - 16
    env_pointers: list[int] = []
    for _ in range(len(window) // 8):
        value = word_at(cursor)
        if value is None:
            return None, "the environment runs off the stack"
        if value == 0:
            break
        env_pointers.append(value)
        cursor -= 8
    argv_null = cursor
    core.environ = _environ_from(core, reversed(env_pointers))
    pointers: list[int] = []
    for count in range(MAX_ARGV + 1):
        value = word_at(argv_null - 8 * (count + 1))
        if value is None:
            return None, "argv runs off the stack"
        if value == count:
            break  # argc
        pointers.append(value)
    else:
        return None, "argc was not found"
    pointers.reverse()
    argv: list[str] = []
    total = 0
    for pointer in pointers:
        text = memory.read_cstring(pointer, MAX_ARG_BYTES)
        if text is None:
            return None, "an argument string is not in the core"
        total += len(text)
        if total > MAX_ARGV_TOTAL_BYTES:
            core.warnings.append(f"command line longer than {MAX_ARGV_TOTAL_BYTES} bytes; the rest is left out")
            break
        argv.append(_text(text))
    if not argv:
        return None, "argc is zero"
    return argv, ""


def _environ_from(core: CoreNotes, pointers: Iterator[int] | list[int]) -> dict[str, str]:
    """NAME=value strings at the envp pointers; the first of a repeated name wins, as getenv's."""
    environ: dict[str, str] = {}
    total = 0
    unreadable = 0
    for count, pointer in enumerate(pointers):
        if count >= MAX_ENVIRON:
            core.warnings.append(f"more than {MAX_ENVIRON} environment variables; the rest are left out")
            break
        text = core.memory.read_cstring(pointer, MAX_ARG_BYTES)
        if text is None:
            unreadable += 1
            continue
        total += len(text)
        if total > MAX_ARGV_TOTAL_BYTES:
            core.warnings.append(f"environment longer than {MAX_ARGV_TOTAL_BYTES} bytes; the rest is left out")
            break
        name, sep, value = _text(text).partition("=")
        if sep and name:
            environ.setdefault(name, value)
    if unreadable:
        core.warnings.append(f"{unreadable} environment string(s) are not in the core (damaged initial stack)")
    return environ


def _auxv_pointer(auxv_raw: bytes, fmt: str, keys: tuple[int, ...]) -> int | None:
    pair = struct.Struct(fmt + "QQ")
    values = {}
    for offset in range(0, len(auxv_raw) - pair.size + 1, pair.size):
        key, value = pair.unpack_from(auxv_raw, offset)
        if key == 0:
            break
        values.setdefault(key, value)
    return next((values[k] for k in keys if values.get(k)), None)


def _auxv_needle(auxv_raw: bytes, fmt: str) -> bytes:
    """The auxv bytes up to and including AT_NULL (the note pads the rest with zeros)."""
    pair = struct.Struct(fmt + "QQ")
    for offset in range(0, len(auxv_raw) - pair.size + 1, pair.size):
        if pair.unpack_from(auxv_raw, offset)[0] == 0:
            return auxv_raw[: min(offset + pair.size, 512)]
    return auxv_raw[:512]


# ---------------------------------------------------------------------------------------------
# Build-ids from the core's own memory
# ---------------------------------------------------------------------------------------------


def _build_ids_from_memory(core: CoreNotes) -> dict[str, str]:
    """path -> build-id, from the ELF headers the kernel dumps with each file's first page."""
    by_path: dict[str, list[Mapping]] = {}
    for m in core.mappings:
        by_path.setdefault(m.path, []).append(m)
    build_ids: dict[str, str] = {}
    for path, mappings in by_path.items():
        build_id = build_id_from_memory(core.memory, mappings, core.little_endian)
        if build_id:
            build_ids[path] = build_id
    return build_ids


def build_id_from_memory(memory: CoreMemory, mappings: list[Mapping], little_endian: bool = True) -> str | None:
    """The GNU build-id of one mapped file, read through its mappings in the core's memory."""
    fmt = "<" if little_endian else ">"

    def read_file_range(file_offset: int, size: int) -> bytes | None:
        for m in mappings:
            if m.file_offset <= file_offset and file_offset + size <= m.file_offset + (m.end - m.start):
                return memory.read(m.start + (file_offset - m.file_offset), size)
        return None

    header = read_file_range(0, 64)
    if header is None or not header.startswith(b"\x7fELF") or header[4] != 2:
        return None
    phoff = struct.unpack_from(fmt + "Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from(fmt + "HH", header, 54)
    if phentsize < 56 or phnum == 0 or phnum > MAX_PHNUM_IN_MEMORY:
        return None
    table = read_file_range(phoff, phentsize * phnum)
    if table is None:
        return None
    for i in range(phnum):
        p_type, _flags, p_offset, _vaddr, _paddr, p_filesz, _memsz, p_align = struct.unpack_from(
            fmt + "IIQQQQQQ", table, i * phentsize
        )
        if p_type != 4 or p_filesz == 0 or p_filesz > MAX_BUILD_ID_NOTES_BYTES:  # PT_NOTE
            continue
        data = read_file_range(p_offset, p_filesz)
        if data is None:
            continue
        for note in parse_notes(data, align=p_align, little_endian=little_endian):
            if note.name == "GNU" and note.type == NT_GNU_BUILD_ID and 0 < len(note.desc) <= 64:
                return note.desc.hex()
    return None


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------


def _round_up(value: int, align: int) -> int:
    return (value + align - 1) & ~(align - 1)


def _text(raw: bytes) -> str:
    # Strings from a core may hold any bytes; keep them printable and valid UTF-8 everywhere
    # downstream (JSON, HTML) by spelling undecodable bytes as \xNN.
    return raw.decode("utf-8", "backslashreplace")
