"""Entry points: read a core's notes (without gdb) and turn them into the report's model."""

from __future__ import annotations

import os
from typing import Callable

from elftools.elf.elffile import ELFFile

from coreanalyze.base import model
from coreanalyze.base.errors import BadInput
from coreanalyze.corefile.filecheck import arch_name, check_is_core_candidate, describe_non_core, expected_size, program_headers
from coreanalyze.corefile.memory import CoreMemory, Segment
from coreanalyze.corefile.notes import interpret_notes, read_notes
from coreanalyze.corefile.structures import CoreNotes
from coreanalyze.corefile.tables import PARSE_ERRORS, SUPPORTED_ARCHES

# ---------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------


def read_core(path: str | os.PathLike[str], *, observer: Callable[[int, int], None] | None = None) -> CoreNotes:
    """Parse the notes of a core file; raise BadInput when it is not a usable core. observer:
    hears every read of the core's memory from the first (coreanalyze.process.process.Process.open)."""
    path = os.fspath(path)
    size = check_is_core_candidate(path)
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
            raise BadInput(f"{path} is {describe_non_core(elf, e_type)}, not a core file")
        arch = SUPPORTED_ARCHES.get(e_machine) if isinstance(e_machine, str) else None
        if arch is None or elf.elfclass != 64:
            raise BadInput(
                f"{path}: core is for the {arch_name(e_machine, elf.elfclass)} architecture; "
                "only x86_64 and aarch64 cores are supported"
            )
        warnings: list[str] = []
        headers = program_headers(elf, warnings)
        expected = expected_size(elf, headers)
        if size < expected:
            warnings.append(f"core file is truncated: {size} of {expected} bytes present")
        notes = read_notes(elf, headers, size, warnings)
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
    memory.observer = observer
    dropped = sum(1 for seg in segments if seg.end > seg.start) - len(memory.segments)
    if dropped:
        warnings.append(f"{dropped} memory segment(s) overlap others and are left out (corrupt program headers)")
    core = CoreNotes(path=path, size=size, arch=arch, memory=memory, warnings=warnings, little_endian=little_endian)
    try:
        interpret_notes(core, notes)
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

