"""`shrink --redact`: also blank what names the user's data — environment values, the
arguments after the program's name — in the notes and in the pages kept.

Where they are: the strings at the top of the initial stack (the kernel copies argv and the
environment there at exec), `NAME=value` copies elsewhere in kept memory (setenv's), and the
command line in NT_PRPSINFO's pr_psargs. The memory is blanked in the written file, so that
what the file holds is what was searched. The names of the variables stay (they are not
secrets, and say what the process was configured with).
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass

from coreanalyze.corefile import elfcore
from coreanalyze.corefile.tables import NT_PRPSINFO, PRPSINFO, PSARGS_LEN
from coreanalyze.process.process import Process
from coreanalyze.shrink.writer import WrittenRun

DROPPED = (
    "environment values",
    "arguments after the program name",
    "memory not needed for the stacks (the abort message, packages, op instance and the like are gone)",
)
MIN_ARGUMENT = 2  # shorter arguments are too common to blank without blanking other bytes


@dataclass(frozen=True)
class Needles:
    """What `--redact` blanks: each needle with where its blanked part starts in it."""

    environment: list[tuple[bytes, int]]  # `NAME=value`: the value after the `=`
    arguments: list[tuple[bytes, int]]  # `\0argument\0`: the argument between the NULs
    initial_stack: tuple[int, int] | None  # the only memory arguments are blanked in


def needles(process: Process) -> Needles:
    """The environment values and arguments of the process that dumped the core.

    Arguments are blanked only in the initial stack (the same path is also a Python string the
    frames name); `NAME=value` strings wherever they are."""
    # The values it started with and those it set later (setenv's strings on the heap, read by
    # the job's identity through Process.current_environment).
    pairs = {*process.environ.items(), *process.current_environment.items()}
    # No terminating NUL is asked of `NAME=value`: setenv builds the pair in an alloca'd buffer
    # first, and the stale copy left below the stack pointer may have lost its NUL to a later
    # call's frame while the value before it is intact.
    environment = [(f"{n}={v}".encode(), len(n) + 1) for n, v in sorted(pairs) if v]
    arguments = [(b"\0" + a.encode() + b"\0", 1) for a in process.notes.argv[1:] if len(a) >= MIN_ARGUMENT]
    anchor = process.notes.auxv_pointers.get("AT_EXECFN")
    initial = process.segment_containing(anchor) if isinstance(anchor, int) else None
    return Needles(environment, arguments, (initial.start, initial.end) if initial is not None else None)


def blank_written(path: str, runs: list[WrittenRun], found: Needles) -> None:
    """Blank the needles in the shrunk core at `path` itself, after it is written.

    The search is over the file's bytes, not the process's memory: what must not be left is
    what the file holds, and a string can cross from one run of kept memory into the next
    (two mappings that meet, a grain kept beside a grain of another reason) where no search of
    one mapping's bytes finds it."""
    stack = [r for r in runs if found.initial_stack and found.initial_stack[0] <= r.address < found.initial_stack[1]]
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            return
        with mmap.mmap(f.fileno(), size) as data:
            _blank_within(data, found.environment, 0, size)
            if stack:
                _blank_within(data, found.arguments, stack[0].offset, stack[-1].offset + stack[-1].size)


def _blank_within(data: mmap.mmap, needles_: list[tuple[bytes, int]], lo: int, hi: int) -> None:
    for needle, start in needles_:
        end = len(needle) - (needle[-1] == 0)  # a needle's closing NUL stays
        at = data.find(needle, lo, hi)
        while at >= 0:
            data[at + start : at + end] = bytes(end - start)
            at = data.find(needle, at + 1, hi)


def redact_notes(endian: str, data: bytes) -> bytes:
    """The notes with pr_psargs cut to the program's name."""
    out = bytearray(data)
    psargs_at = PRPSINFO.size - PSARGS_LEN
    for name, note_type, desc, _start, end in elfcore.iter_notes(endian, data):
        if name == b"CORE" and note_type == NT_PRPSINFO and len(desc) >= PRPSINFO.size:
            psargs = desc[psargs_at : PRPSINFO.size]
            program = psargs.split(b" ", 1)[0].split(b"\0", 1)[0]
            desc_at = end - len(desc) - (-len(desc) % 4)
            out[desc_at + psargs_at : desc_at + PRPSINFO.size] = program.ljust(PSARGS_LEN, b"\0")
    return bytes(out)
