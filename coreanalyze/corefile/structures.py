"""What the notes reader returns: the dead process's identity, threads, mappings and memory."""

from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import Any

from coreanalyze.base import model
from coreanalyze.corefile.memory import CoreMemory
from coreanalyze.corefile.tables import PC_REGISTER, SP_REGISTER, round_up

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
    siginfo_note: bool = False  # `signal` is the core's NT_SIGINFO (else the thread status's signal)
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
        starts = self._mapping_starts()
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and self.mappings[i].start <= address < self.mappings[i].end:
            return self.mappings[i]
        return None

    def _mapping_starts(self) -> list[int]:
        # Asked for every frame and every read that falls back to a file: the starts are kept
        # until the mappings are replaced (a core without NT_FILE gets them from the link map).
        key = (id(self.mappings), len(self.mappings))
        cached = self.__dict__.get("_starts")
        if cached is None or cached[0] != key:
            cached = (key, [m.start for m in self.mappings])
            self.__dict__["_starts"] = cached
        return cached[1]

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



def parse_notes(data: bytes, align: int = 4, little_endian: bool = True, limit: int = 100_000) -> list[RawNote]:
    """ELF notes in a byte buffer (a PT_NOTE segment or SHT_NOTE section), bounds-checked."""
    header = struct.Struct("<III" if little_endian else ">III")
    align = 8 if align == 8 else 4
    notes: list[RawNote] = []
    offset = 0
    while offset + header.size <= len(data) and len(notes) < limit:
        namesz, descsz, ntype = header.unpack_from(data, offset)
        name_start = offset + header.size
        desc_start = name_start + round_up(namesz, align)
        desc_end = desc_start + descsz
        if desc_end > len(data):
            break
        name = data[name_start:name_start + namesz].split(b"\0", 1)[0].decode("ascii", "replace")
        notes.append(RawNote(name, ntype, bytes(data[desc_start:desc_end])))
        offset = round_up(desc_end, align)
    return notes


