"""The note stream: bounded reading of PT_NOTE segments and what each note says
(NT_PRSTATUS, NT_PRPSINFO, NT_SIGINFO, NT_FILE, NT_AUXV)."""

from __future__ import annotations

import struct
from typing import Any

from elftools.elf.elffile import ELFFile

from coreanalyze.base import model, signals
from coreanalyze.corefile.buildids import build_ids_from_memory
from coreanalyze.corefile.cmdline import fill_command_line
from coreanalyze.corefile.memory import CoreMemory
from coreanalyze.corefile.structures import CoreNotes, Mapping, RawNote, ThreadNotes
from coreanalyze.corefile.tables import (
    AUXV_NAMES,
    AUXV_STRINGS,
    CORE_NOTE_NAMES,
    INTERPRETED_NOTES,
    MAX_MAPPINGS,
    MAX_NOTE_BYTES,
    MAX_NOTES,
    MAX_SIGNAL,
    MAX_THREADS,
    MAX_USER_ADDRESS,
    NOTE_TYPE_BY_NAME,
    NT_AUXV,
    NT_FILE,
    NT_PRPSINFO,
    NT_PRSTATUS,
    NT_SIGINFO,
    PRPSINFO,
    PRPSINFO_BE,
    PRSTATUS_CURSIG_OFFSET,
    PRSTATUS_PID_OFFSET,
    PRSTATUS_REG_OFFSET,
    REGISTER_NAMES,
    printable_text,
    round_up,
)

# ---------------------------------------------------------------------------------------------
# Notes
# ---------------------------------------------------------------------------------------------


_NOTE_NAMES_BY_TYPE = {v: k for k, v in NOTE_TYPE_BY_NAME.items()}


def read_notes(elf: ELFFile, headers: list[dict[str, Any]], size: int, warnings: list[str]) -> list[RawNote]:
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
            desc_start = name_start + round_up(namesz, 4)
            desc_end = desc_start + descsz
            if desc_end > len(data):
                kind = _NOTE_NAMES_BY_TYPE.get(ntype, f"type {ntype:#x}")
                present = max(0, len(data) - desc_start)
                warnings.append(f"note {kind} is cut short ({present} of {descsz} bytes)")
                break
            seen += 1
            name = printable_text(bytes(view[name_start:name_start + namesz]).split(b"\0", 1)[0])
            cursor = round_up(desc_end, 4)
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


def interpret_notes(core: CoreNotes, notes: list[RawNote]) -> None:
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
        fname = printable_text(fname_b.split(b"\0", 1)[0])
        psargs = printable_text(psargs_b.split(b"\0", 1)[0]).rstrip(" ")
    else:
        core.warnings.append("core has no process information (NT_PRPSINFO)")
        if len(core.threads) == 1:
            # A single-threaded process's only thread id is its pid.
            core.pid = core.threads[0].tid

    core.signal = parse_siginfo(siginfo, fmt) if siginfo else _signal_from_cursig(core)
    core.siginfo_note = siginfo is not None and core.signal.number is not None
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
    fill_command_line(core, auxv_raw, psargs)
    core.build_ids = build_ids_from_memory(core)


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


def parse_siginfo(desc: bytes, fmt: str) -> model.SignalInfo:
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
        mappings.append(Mapping(start=start, end=end, file_offset=ranges[3 * i + 2] * page_size, path=printable_text(names[i])))
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
                auxv[name] = printable_text(text)
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


