"""Deterministic mutations of real kernel cores, for the hostile-core tests.

A case is named `<base>-<kind>-s<seed>`: the real core it starts from, the family of damage,
and the seed that picks offsets and values within that family. The layout of the real core
(ELF header, program headers, notes, NT_FILE entries, the initial stack) is read here with
plain struct, independently of coreanalyze's own reader, so that a bug in the reader cannot
hide a mutation from itself.

Each mutation says whether it surely loses information (`must_warn`) and, when it does,
words one of which a warning about it must contain (`warn_any`; empty = any warning).
"""

from __future__ import annotations

import os
import random
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

U16, U32, U64 = 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
PT_LOAD, PT_NOTE, PT_AARCH64_MEMTAG_MTE = 1, 4, 0x70000002
NT_PRSTATUS, NT_PRPSINFO, NT_AUXV = 1, 3, 6
NT_SIGINFO, NT_FILE = 0x53494749, 0x46494C45
PRSTATUS_PID_OFFSET, PRSTATUS_REG_OFFSET = 32, 112
X86_64_RIP, X86_64_RSP, X86_64_RBP = 16, 19, 4  # indexes into elf_gregset_t
AT_NULL, AT_EXECFN, AT_RANDOM = 0, 31, 25

# (name, offset, size) of the ELF64 header fields.
EHDR_FIELDS = [
    ("ei_class", 4, 1), ("ei_data", 5, 1), ("ei_version", 6, 1), ("ei_osabi", 7, 1),
    ("e_type", 16, 2), ("e_machine", 18, 2), ("e_version", 20, 4), ("e_entry", 24, 8),
    ("e_phoff", 32, 8), ("e_shoff", 40, 8), ("e_flags", 48, 4), ("e_ehsize", 52, 2),
    ("e_phentsize", 54, 2), ("e_phnum", 56, 2), ("e_shentsize", 58, 2), ("e_shnum", 60, 2),
    ("e_shstrndx", 62, 2),
]  # fmt: skip
# (name, offset, size) of an Elf64_Phdr's fields.
PHDR_FIELDS = [
    ("p_type", 0, 4), ("p_flags", 4, 4), ("p_offset", 8, 8), ("p_vaddr", 16, 8),
    ("p_paddr", 24, 8), ("p_filesz", 32, 8), ("p_memsz", 40, 8), ("p_align", 48, 8),
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# The layout of a pristine core
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phdr:
    index: int
    at: int  # file offset of the header itself
    type: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int


@dataclass(frozen=True)
class Note:
    at: int  # file offset of the note header
    name: bytes
    type: int
    desc_at: int
    descsz: int


@dataclass
class CoreLayout:
    path: Path
    data: bytes
    phoff: int
    phnum: int
    phdrs: list[Phdr]
    notes: list[Note]

    @classmethod
    def read(cls, path: Path) -> CoreLayout:
        data = Path(path).read_bytes()
        assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "a little-endian ELF64 core"
        phoff = struct.unpack_from("<Q", data, 32)[0]
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        phdrs = []
        for i in range(phnum):
            at = phoff + i * phentsize
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, _align = struct.unpack_from("<IIQQQQQQ", data, at)
            phdrs.append(Phdr(i, at, p_type, p_offset, p_vaddr, p_filesz, p_memsz))
        notes = []
        for p in phdrs:
            if p.type != PT_NOTE:
                continue
            cursor, end = p.offset, p.offset + p.filesz
            while cursor + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", data, cursor)
                desc_at = cursor + 12 + _align4(namesz)
                notes.append(Note(cursor, data[cursor + 12:cursor + 12 + namesz].rstrip(b"\0"), ntype, desc_at, descsz))
                cursor = desc_at + _align4(descsz)
        return cls(Path(path), data, phoff, phnum, phdrs, notes)

    @property
    def size(self) -> int:
        return len(self.data)

    def loads(self, with_data: bool = True) -> list[Phdr]:
        return [p for p in self.phdrs if p.type == PT_LOAD and (p.filesz > 0 or not with_data)]

    def note_segment(self) -> Phdr:
        return next(p for p in self.phdrs if p.type == PT_NOTE)

    def notes_of(self, ntype: int) -> list[Note]:
        return [n for n in self.notes if n.name == b"CORE" and n.type == ntype]

    def file_offset_of(self, address: int) -> int | None:
        """Where the byte at a process address lives in the file, if the core holds it."""
        for p in self.loads():
            if p.vaddr <= address < p.vaddr + min(p.filesz, p.memsz):
                return p.offset + (address - p.vaddr)
        return None

    def crashing_registers(self) -> list[int]:
        desc = self.notes_of(NT_PRSTATUS)[0]
        return list(struct.unpack_from("<27Q", self.data, desc.desc_at + PRSTATUS_REG_OFFSET))

    def auxv_on_stack(self) -> int | None:
        """File offset of the auxv copy on the initial stack (the kernel's NT_AUXV is a copy)."""
        note = self.notes_of(NT_AUXV)[0]
        raw = self.data[note.desc_at:note.desc_at + note.descsz]
        end = next((o + 16 for o in range(0, len(raw) - 15, 16) if struct.unpack_from("<Q", raw, o)[0] == AT_NULL), len(raw))
        needle = raw[:end]
        at = self.data.find(needle, self.note_segment().offset + self.note_segment().filesz)
        while at >= 0 and at % 8:
            at = self.data.find(needle, at + 1)
        return at if at >= 0 else None


def _align4(n: int) -> int:
    return (n + 3) & ~3


# --------------------------------------------------------------------------------------------
# Mutations
# --------------------------------------------------------------------------------------------


@dataclass
class Mutation:
    """What to do to the pristine bytes: append, then patches (offset -> bytes), then a cut."""

    description: str
    patches: list[tuple[int, bytes]] = field(default_factory=list)
    cut: int | None = None
    must_warn: bool = False
    warn_any: tuple[str, ...] = ()
    append: bytes = b""

    def apply(self, data: bytes) -> bytes:
        out = bytearray(data)
        out += self.append
        for offset, raw in self.patches:
            out[offset:offset + len(raw)] = raw
        if self.cut is not None:
            del out[self.cut:]
        return bytes(out)

    def write(self, data: bytes, target: Path) -> Path:
        target.write_bytes(self.apply(data))
        return target


def _put(size: int, value: int) -> bytes:
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _absurd(rng: random.Random, size: int, plausible: int, file_size: int) -> int:
    """A value that a parser must not trust: extremes, off-by-ones, the file's size."""
    top = (1 << (8 * size)) - 1
    choices = [0, 1, top, top - 1, top >> 1, (top >> 1) + 1, plausible + 1, max(0, plausible - 1),
               plausible * 4096, file_size, file_size + 1, rng.randrange(top + 1)]  # fmt: skip
    return rng.choice(choices) & top


TRUNCATED = ("truncated",)


def _truncate_header(lay: CoreLayout, rng: random.Random) -> Mutation:
    cut = rng.randrange(1, 64)
    return Mutation(f"cut at {cut}, inside the ELF header", cut=cut)


def _truncate_phdrs(lay: CoreLayout, rng: random.Random) -> Mutation:
    cut = rng.randrange(lay.phoff, lay.phoff + 56 * lay.phnum)
    return Mutation(f"cut at {cut}, inside the program headers", cut=cut, must_warn=True, warn_any=TRUNCATED)


def _truncate_notes(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = rng.choice(lay.notes)
    where = rng.choice(["header", "name", "desc", "desc-end"])
    cut = {
        "header": note.at + rng.randrange(0, 12),
        "name": note.at + 12 + rng.randrange(0, max(1, note.desc_at - note.at - 12)),
        "desc": note.desc_at + rng.randrange(0, max(1, note.descsz)),
        "desc-end": note.desc_at + max(0, note.descsz - 1),
    }[where]
    return Mutation(f"cut at {cut}, in the {where} of note type {note.type:#x}", cut=cut, must_warn=True, warn_any=TRUNCATED)


def _truncate_load(lay: CoreLayout, rng: random.Random) -> Mutation:
    seg = rng.choice(lay.loads())
    cut = seg.offset + rng.choice([0, 1, seg.filesz // 2, max(0, seg.filesz - 1), rng.randrange(seg.filesz)])
    return Mutation(f"cut at {cut}, inside PT_LOAD #{seg.index} ({seg.vaddr:#x})", cut=cut, must_warn=True, warn_any=TRUNCATED)


def _truncate_tail(lay: CoreLayout, rng: random.Random) -> Mutation:
    cut = lay.size - rng.randrange(1, min(lay.size // 4, 256 * 1024))
    return Mutation(f"cut at {cut}, near the end ({lay.size} bytes)", cut=cut, must_warn=True, warn_any=TRUNCATED)


def _zero_length(lay: CoreLayout, rng: random.Random) -> Mutation:
    return Mutation("zero bytes", cut=0)


def _ehdr_field(lay: CoreLayout, rng: random.Random) -> Mutation:
    name, offset, size = rng.choice(EHDR_FIELDS)
    plausible = int.from_bytes(lay.data[offset:offset + size], "little")
    value = _absurd(rng, size, plausible, lay.size)
    return Mutation(f"ELF header {name} = {value:#x} (was {plausible:#x})", patches=[(offset, _put(size, value))])


def _ehdr_flip(lay: CoreLayout, rng: random.Random) -> Mutation:
    patches = [(o, bytes([lay.data[o] ^ (1 << rng.randrange(8))])) for o in rng.sample(range(4, 64), rng.randint(1, 6))]
    return Mutation(f"flipped bits at ELF header offsets {[o for o, _ in patches]}", patches=patches)


def _phnum_xnum(lay: CoreLayout, rng: random.Random) -> Mutation:
    # PN_XNUM: the real count lives in section header 0, which a core may not have.
    shoff = rng.choice([0, 64, lay.size - 8, lay.size + 4096, U64])
    shnum = rng.choice([0, 1, U16])
    return Mutation(
        f"e_phnum = PN_XNUM with e_shoff {shoff:#x}, e_shnum {shnum}",
        patches=[(56, _put(2, 0xFFFF)), (40, _put(8, shoff)), (60, _put(2, shnum)), (58, _put(2, rng.choice([0, 64, U16])))],
    )


def _phdr_field(lay: CoreLayout, rng: random.Random) -> Mutation:
    seg = rng.choice([lay.note_segment(), *rng.sample(lay.loads(False), min(3, len(lay.loads(False))))])
    name, offset, size = rng.choice(PHDR_FIELDS)
    plausible = int.from_bytes(lay.data[seg.at + offset:seg.at + offset + size], "little")
    value = _absurd(rng, size, plausible, lay.size)
    # A data-carrying segment said to reach past the end of the file is surely cut short.
    cut_short = name in ("p_offset", "p_filesz") and seg.type == PT_LOAD and seg.filesz > 0 and (
        (name == "p_offset" and value + seg.filesz > lay.size) or (name == "p_filesz" and seg.offset + value > lay.size)
    )
    # A segment whose type is no longer one a core uses is dropped, and must be said to be.
    retyped = name == "p_type" and value not in (PT_LOAD, PT_NOTE, PT_AARCH64_MEMTAG_MTE)
    return Mutation(
        f"PT {seg.type} #{seg.index} {name} = {value:#x} (was {plausible:#x})",
        patches=[(seg.at + offset, _put(size, value))],
        must_warn=cut_short or retyped,
        warn_any=TRUNCATED if cut_short else ("type", "notes") if retyped else (),
    )


def _phdr_flip(lay: CoreLayout, rng: random.Random) -> Mutation:
    span = range(lay.phoff, lay.phoff + 56 * lay.phnum)
    patches = [(o, bytes([rng.randrange(256)])) for o in rng.sample(span, min(len(span), rng.randint(1, 24)))]
    return Mutation(f"{len(patches)} random bytes in the program headers", patches=patches)


def _overlapping_loads(lay: CoreLayout, rng: random.Random) -> Mutation:
    a, b = rng.sample(lay.loads(False), 2)
    return Mutation(
        f"PT_LOAD #{b.index} moved onto #{a.index} at {a.vaddr:#x}",
        patches=[(b.at + 16, _put(8, a.vaddr + rng.choice([0, 8])))],
        must_warn=True,
        warn_any=("overlap",),
    )


def _note_header(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = rng.choice(lay.notes)
    which = rng.choice(["namesz", "descsz", "type"])
    offset = {"namesz": 0, "descsz": 4, "type": 8}[which]
    plausible = struct.unpack_from("<I", lay.data, note.at + offset)[0]
    value = _absurd(rng, 4, plausible, lay.size)
    segment = lay.note_segment()
    # A size that runs past the note segment surely makes the reader lose this note.
    past = which in ("namesz", "descsz") and (
        note.at + 12 + (_align4(value) if which == "namesz" else _align4(len(note.name) + 1))
        + (value if which == "descsz" else note.descsz)
        > segment.offset + segment.filesz
    )
    return Mutation(
        f"note type {note.type:#x} at {note.at}: {which} = {value:#x} (was {plausible:#x})",
        patches=[(note.at + offset, _put(4, value))],
        must_warn=past,
    )


def _note_flip(lay: CoreLayout, rng: random.Random) -> Mutation:
    seg = lay.note_segment()
    patches = [(rng.randrange(seg.offset, seg.offset + seg.filesz), bytes([rng.randrange(256)])) for _ in range(rng.randint(1, 32))]
    return Mutation(f"{len(patches)} random bytes in the notes", patches=patches)


def _nt_file(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = lay.notes_of(NT_FILE)[0]
    count, page_size = struct.unpack_from("<QQ", lay.data, note.desc_at)
    what = rng.choice(["count-huge", "count-plus", "count-zero", "page-size", "range", "offset", "names"])
    d = note.desc_at
    if what == "count-huge":
        value = rng.choice([1 << 60, U64, (note.descsz // 24) + 1, 1 << 32])
        return Mutation(f"NT_FILE count = {value:#x}", patches=[(d, _put(8, value))], must_warn=True, warn_any=("NT_FILE",))
    if what == "count-plus":
        return Mutation(f"NT_FILE count = {count + 1}", patches=[(d, _put(8, count + 1))])
    if what == "count-zero":
        return Mutation("NT_FILE count = 0", patches=[(d, _put(8, 0))], must_warn=True, warn_any=("NT_FILE",))
    if what == "page-size":
        value = rng.choice([0, 1, 3, 1 << 40, U64, 1 << 63])
        return Mutation(f"NT_FILE page size = {value:#x}", patches=[(d + 8, _put(8, value))])
    if what == "range":
        i = rng.randrange(count)
        start, end = struct.unpack_from("<QQ", lay.data, d + 16 + 24 * i)
        new_start, new_end = rng.choice([(end, start), (0, U64), (U64 - 1, U64), (start, start)])
        return Mutation(
            f"NT_FILE entry {i} = [{new_start:#x}, {new_end:#x})",
            patches=[(d + 16 + 24 * i, _put(8, new_start) + _put(8, new_end))],
            must_warn=True,
            warn_any=("NT_FILE",),
        )
    if what == "offset":
        i = rng.randrange(count)
        value = rng.choice([U64, 1 << 50, rng.randrange(1 << 32)])
        return Mutation(f"NT_FILE entry {i} page offset = {value:#x}", patches=[(d + 16 + 24 * i + 16, _put(8, value))])
    names_at = d + 16 + 24 * count
    names_end = d + note.descsz
    # Every NUL gone: the paths run into each other and past the note.
    filler = bytes(rng.choice(b"A/\xff\xfe.") for _ in range(names_end - names_at))
    return Mutation("NT_FILE paths without NULs", patches=[(names_at, filler)], must_warn=True, warn_any=("NT_FILE",))


def _prstatus(lay: CoreLayout, rng: random.Random) -> Mutation:
    notes = lay.notes_of(NT_PRSTATUS)
    note = rng.choice(notes)
    regs = note.desc_at + PRSTATUS_REG_OFFSET
    what = rng.choice(["pid", "pc", "sp", "fp", "all-regs"])
    if what == "pid":
        value = rng.choice([0, U32, 0x7FFFFFFF, 1])
        return Mutation(f"thread pid = {value:#x}", patches=[(note.desc_at + PRSTATUS_PID_OFFSET, _put(4, value))])
    if what == "all-regs":
        return Mutation("every register = garbage", patches=[(regs, bytes(rng.randrange(256) for _ in range(27 * 8)))])
    index = {"pc": X86_64_RIP, "sp": X86_64_RSP, "fp": X86_64_RBP}[what]
    value = rng.choice([0, 1, U64, 1 << 63, 0x7FFFFFFFF001, rng.randrange(1 << 64)])
    return Mutation(f"thread register {what} = {value:#x}", patches=[(regs + 8 * index, _put(8, value))])


def _siginfo(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = lay.notes_of(NT_SIGINFO)[0]
    signo = rng.choice([0, -1, 65, 0x7FFFFFFF, 11, 7])
    code = rng.choice([0, -6, 0x80, 1, 99, -0x80000000])
    addr = rng.choice([0, U64, 1 << 47])
    no_such_signal = not 0 < signo <= 64
    return Mutation(
        f"siginfo signo {signo} code {code} addr {addr:#x}",
        patches=[(note.desc_at, struct.pack("<ii", signo, 0) + struct.pack("<i", code)), (note.desc_at + 16, _put(8, addr))],
        must_warn=no_such_signal,
        warn_any=("signal",),
    )


def _auxv(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = lay.notes_of(NT_AUXV)[0]
    what = rng.choice(["no-null", "execfn", "garbage"])
    if what == "no-null":
        filler = b"".join(struct.pack("<QQ", rng.randrange(1, 64), rng.randrange(1 << 64)) for _ in range(note.descsz // 16))
        return Mutation("auxv without AT_NULL", patches=[(note.desc_at, filler)])
    if what == "garbage":
        return Mutation("auxv bytes are garbage", patches=[(note.desc_at, bytes(rng.randrange(256) for _ in range(note.descsz)))])
    raw = lay.data[note.desc_at:note.desc_at + note.descsz]
    for o in range(0, len(raw) - 15, 16):
        if struct.unpack_from("<Q", raw, o)[0] == AT_EXECFN:
            value = rng.choice([0, U64, 1 << 47, lay.note_segment().offset])
            return Mutation(f"AT_EXECFN = {value:#x}", patches=[(note.desc_at + o + 8, _put(8, value))])
    return Mutation("auxv unchanged (no AT_EXECFN)")


def _prpsinfo(lay: CoreLayout, rng: random.Random) -> Mutation:
    note = lay.notes_of(NT_PRPSINFO)[0]
    # pr_fname (16) at 40 and pr_psargs (80) at 56 without NULs, with invalid UTF-8 and
    # terminal escapes; absurd pids.
    junk = bytes(rng.choice(b"\xff\xfe\x1b[31m<>\"'`\n\r\x00A") for _ in range(96)).replace(b"\x00", b"\x07")
    return Mutation(
        "NT_PRPSINFO names without NUL, pids absurd",
        patches=[(note.desc_at + 40, junk), (note.desc_at + 24, _put(4, rng.choice([0, U32])) + _put(4, rng.choice([0, U32])))],
    )


def _initial_stack(lay: CoreLayout, rng: random.Random) -> Mutation:
    """argc, argv and envp on the initial stack: the reader walks them back from auxv."""
    at = lay.auxv_on_stack()
    if at is None:
        return Mutation("initial stack unchanged (auxv copy not in the core)")
    what = rng.choice(["argc-huge", "argv-pointers", "no-nulls", "env-pointers"])
    if what == "no-nulls":
        # No NULL between argv, envp and auxv: the walk back must stop at the stack's start.
        stack = next(p for p in lay.loads() if p.offset <= at < p.offset + p.filesz)
        start = max(stack.offset, at - 8 * rng.choice([64, 4096, 1 << 16]))
        return Mutation("initial stack words before auxv all non-zero", patches=[(start, b"\xff" * (at - start))])
    # Find envp's NULL (at - 8), then argv's NULL before it.
    cursor = at - 16
    while cursor > 0 and struct.unpack_from("<Q", lay.data, cursor)[0] != 0:
        cursor -= 8
    argv_null = cursor
    argc_at = argv_null - 8
    while argc_at > 0 and struct.unpack_from("<Q", lay.data, argc_at)[0] > 4096:
        argc_at -= 8
    if what == "argc-huge":
        return Mutation("argc = 2**40", patches=[(argc_at, _put(8, 1 << 40))])
    if what == "argv-pointers":
        return Mutation(
            "argv pointers = garbage",
            patches=[(o, _put(8, rng.randrange(1, 1 << 64))) for o in range(argc_at + 8, argv_null, 8)],
            must_warn=True,
            warn_any=("command line",),
        )
    return Mutation(
        "envp pointers = garbage",
        patches=[(o, _put(8, rng.choice([1, U64, rng.randrange(1, 1 << 64)]))) for o in range(argv_null + 8, at - 8, 8)],
        must_warn=True,
        warn_any=("environment",),
    )


def _smashed_stack(lay: CoreLayout, rng: random.Random) -> Mutation:
    """The crashing thread's stack overwritten: frame-pointer loops, garbage return addresses."""
    regs = lay.crashing_registers()
    sp = regs[X86_64_RSP]
    at = lay.file_offset_of(sp)
    if at is None:
        return Mutation("crashing stack not in the core; unchanged")
    length = min(rng.choice([256, 4096, 65536]), lay.size - at)
    pattern = rng.choice(["self-loop", "garbage", "ones"])
    if pattern == "self-loop":
        words = [sp + (i & ~1) * 8 for i in range(length // 8)]  # each saved fp points at itself
        raw = b"".join(_put(8, w) for w in words)
    elif pattern == "garbage":
        raw = bytes(rng.randrange(256) for _ in range(length))
    else:
        raw = b"\xff" * length
    return Mutation(f"crashing thread's stack: {length} bytes of {pattern}", patches=[(at, raw)])


def _mapped_elf_headers(lay: CoreLayout, rng: random.Random) -> Mutation:
    """The ELF headers of mapped libraries, as the core holds them: where build-ids are read from."""
    note = lay.notes_of(NT_FILE)[0]
    count = struct.unpack_from("<Q", lay.data, note.desc_at)[0]
    patches = []
    for i in range(count):
        start, _end, page = struct.unpack_from("<QQQ", lay.data, note.desc_at + 16 + 24 * i)
        at = lay.file_offset_of(start)
        if page != 0 or at is None or lay.data[at:at + 4] != b"\x7fELF":
            continue
        # e_phoff, e_phentsize/e_phnum and the first PT_NOTE's sizes absurd.
        patches.append((at + 32, _put(8, rng.choice([U64, 1 << 40, 3]))))
        patches.append((at + 54, _put(2, rng.choice([0, 1, U16])) + _put(2, rng.choice([0, U16, 1024]))))
    return Mutation(f"ELF headers of {len(patches) // 2} mapped files made absurd", patches=patches)


def _random_flips(lay: CoreLayout, rng: random.Random) -> Mutation:
    seg = lay.note_segment()
    end = seg.offset + seg.filesz
    patches = []
    for _ in range(rng.randint(1, 64)):
        # Mostly where the parser makes decisions; sometimes anywhere.
        offset = rng.randrange(0, end) if rng.random() < 0.85 else rng.randrange(lay.size)
        patches.append((offset, bytes([rng.randrange(256)])))
    return Mutation(f"{len(patches)} random bytes", patches=patches)


def _cut_and_flip(lay: CoreLayout, rng: random.Random) -> Mutation:
    cut = rng.randrange(lay.note_segment().offset, lay.size)
    flips = _random_flips(lay, rng)
    return Mutation(f"cut at {cut} and {flips.description}", patches=flips.patches, cut=cut)


# kind -> (mutator, cases per base core)
KINDS: dict[str, tuple[Callable[[CoreLayout, random.Random], Mutation], int]] = {
    "zero-length": (_zero_length, 1),
    "cut-header": (_truncate_header, 2),
    "cut-phdrs": (_truncate_phdrs, 3),
    "cut-notes": (_truncate_notes, 6),
    "cut-load": (_truncate_load, 6),
    "cut-tail": (_truncate_tail, 2),
    "ehdr-field": (_ehdr_field, 6),
    "ehdr-flip": (_ehdr_flip, 3),
    "phnum-xnum": (_phnum_xnum, 2),
    "phdr-field": (_phdr_field, 8),
    "phdr-flip": (_phdr_flip, 3),
    "overlap": (_overlapping_loads, 2),
    "note-header": (_note_header, 8),
    "note-flip": (_note_flip, 3),
    "nt-file": (_nt_file, 6),
    "prstatus": (_prstatus, 5),
    "siginfo": (_siginfo, 2),
    "auxv": (_auxv, 3),
    "prpsinfo": (_prpsinfo, 1),
    "initial-stack": (_initial_stack, 4),
    "smashed-stack": (_smashed_stack, 3),
    "elf-headers": (_mapped_elf_headers, 1),
    "random": (_random_flips, 4),
    "cut-and-flip": (_cut_and_flip, 2),
}


@dataclass(frozen=True)
class Case:
    base: str  # a crasher of tests/conftest.py C_CRASHERS
    kind: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.base}-{self.kind}-s{self.seed}"

    @property
    def stable_hash(self) -> int:
        return zlib.crc32(self.id.encode())

    def mutation(self, layout: CoreLayout) -> Mutation:
        mutator, _ = KINDS[self.kind]
        return mutator(layout, random.Random(self.id))


def all_cases(bases: tuple[str, ...]) -> list[Case]:
    return [Case(base, kind, seed) for base in bases for kind, (_, n) in KINDS.items() for seed in range(n)]


def quick_cases(cases: list[Case], per_kind: int = 1) -> list[Case]:
    """A small subset that still covers every kind: the first case(s) of each, bases rotating."""
    chosen: list[Case] = []
    for i, kind in enumerate(KINDS):
        of_kind = [c for c in cases if c.kind == kind]
        rotated = of_kind[i % len(of_kind):] + of_kind[:i % len(of_kind)]
        chosen.extend(rotated[:per_kind])
    return chosen


def environment_flag(*names: str) -> bool:
    return any(os.environ.get(n, "").lower() in ("1", "true", "yes") for n in names)


# --------------------------------------------------------------------------------------------
# Floods: notes far bigger and more numerous than any real core's, to bound memory and time
# --------------------------------------------------------------------------------------------


def _note(ntype: int, desc: bytes, name: bytes = b"CORE") -> bytes:
    return struct.pack("<III", len(name) + 1, len(desc), ntype) + name + b"\0" * (_align4(len(name) + 1) - len(name)) + desc + b"\0" * (-len(desc) % 4)


def _moved_notes(lay: CoreLayout, notes: bytes, description: str, warn_any: tuple[str, ...]) -> Mutation:
    """The core with its PT_NOTE pointed at new notes appended to the file."""
    seg = lay.note_segment()
    at = lay.size
    return Mutation(
        description,
        append=notes,
        patches=[(seg.at + 8, _put(8, at)), (seg.at + 32, _put(8, len(notes)))],
        must_warn=True,
        warn_any=warn_any,
    )


def _original_notes(lay: CoreLayout, skip_type: int | None = None) -> bytes:
    return b"".join(lay.data[n.at:n.desc_at + _align4(n.descsz)] for n in lay.notes if n.type != skip_type)


def flood_empty_notes(lay: CoreLayout, megabytes: int) -> Mutation:
    unit = _note(0x999, b"")
    notes = _original_notes(lay) + unit * (megabytes * 2**20 // len(unit))
    return _moved_notes(lay, notes, f"{megabytes} MiB of empty notes", ("notes",))


def flood_thread_notes(lay: CoreLayout, megabytes: int) -> Mutation:
    first = lay.notes_of(NT_PRSTATUS)[0]
    unit = lay.data[first.at:first.desc_at + _align4(first.descsz)]
    notes = _original_notes(lay) + unit * (megabytes * 2**20 // len(unit))
    return _moved_notes(lay, notes, f"{megabytes} MiB of NT_PRSTATUS notes", ("threads",))


def _big_file_list(megabytes: int) -> bytes:
    count = megabytes * 2**20 // (24 + 24)
    ranges = b"".join(struct.pack("<QQQ", 0x10000000 + i * 0x2000, 0x10000000 + i * 0x2000 + 0x1000, 0) for i in range(count))
    names = b"".join(b"/nonexistent/lib%07d.so\0" % i for i in range(count))
    return _note(NT_FILE, struct.pack("<QQ", count, 4096) + ranges + names)


def flood_file_list(lay: CoreLayout, megabytes: int) -> Mutation:
    notes = _original_notes(lay, skip_type=NT_FILE) + _big_file_list(megabytes)
    return _moved_notes(lay, notes, f"an NT_FILE of {megabytes} MiB", ("NT_FILE",))


def flood_repeated_segments(lay: CoreLayout, megabytes: int, copies: int) -> Mutation:
    """The program header table moved to the end with `copies` more PT_NOTEs, all pointing
    at one big note region: gigabytes of notes claimed, megabytes on disk."""
    notes = _big_file_list(megabytes) + _original_notes(lay, skip_type=NT_FILE)
    notes_at = lay.size
    table_at = _align4(notes_at + len(notes) + 7) & ~7
    table = bytearray(lay.data[lay.phoff:lay.phoff + 56 * lay.phnum])
    for _ in range(copies):
        table += struct.pack("<IIQQQQQQ", PT_NOTE, 0, notes_at, 0, 0, len(notes), 0, 4)
    struct.pack_into("<QQ", table, lay.note_segment().index * 56 + 8, notes_at, 0)
    struct.pack_into("<Q", table, lay.note_segment().index * 56 + 32, len(notes))
    padding = b"\0" * (table_at - notes_at - len(notes))
    return Mutation(
        f"{copies + 1} PT_NOTE headers over one {megabytes} MiB note region",
        append=notes + padding + bytes(table),
        patches=[(32, _put(8, table_at)), (56, _put(2, lay.phnum + copies))],
        must_warn=True,
        warn_any=("notes claim",),
    )


FLOODS: dict[str, Callable[[CoreLayout], Mutation]] = {
    "empty-notes": lambda lay: flood_empty_notes(lay, 48),
    "thread-notes": lambda lay: flood_thread_notes(lay, 48),
    "file-list": lambda lay: flood_file_list(lay, 56),
    "repeated-note-segments": lambda lay: flood_repeated_segments(lay, 40, 30),
}
