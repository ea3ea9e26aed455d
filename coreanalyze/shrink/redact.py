"""`shrink --redact`: also blank what names the user's data — environment values, the
arguments after the program's name — in the notes and in the pages kept.

Where they are: the strings at the top of the initial stack (the kernel copies argv and the
environment there at exec), `NAME=value` copies elsewhere in kept memory (setenv's), and the
command line in NT_PRPSINFO's pr_psargs. The names of the variables stay (they are not
secrets, and say what the process was configured with).
"""

from __future__ import annotations

from collections.abc import Iterator

from coreanalyze.corefile import elfcore
from coreanalyze.corefile.tables import NT_PRPSINFO, PRPSINFO, PSARGS_LEN
from coreanalyze.process.process import Process
from coreanalyze.shrink.pages import PageSet

DROPPED = (
    "environment values",
    "arguments after the program name",
    "memory not needed for the stacks (the abort message, packages, op instance and the like are gone)",
)
PAGE = 4096  # the smallest unit a core's segments hold bytes in
MIN_ARGUMENT = 2  # shorter arguments are too common to blank without blanking other bytes


def blanks(process: Process, kept: PageSet) -> dict[int, bytes]:
    """address -> zeros over each environment value and argument found in the kept pages.

    Arguments are blanked only in the initial stack (the same path is also a Python string the
    frames name); `NAME=value` strings wherever they are kept."""
    # The values it started with and those it set later (setenv's strings on the heap, read by
    # the job's identity through Process.current_environment).
    pairs = {*process.environ.items(), *process.current_environment.items()}
    # No terminating NUL is asked of `NAME=value`: setenv builds the pair in an alloca'd buffer
    # first, and the stale copy left below the stack pointer may have lost its NUL to a later
    # call's frame while the value before it is intact.
    environment = [(f"{n}={v}".encode(), len(n) + 1) for n, v in sorted(pairs) if v]
    arguments = [(b"\0" + a.encode() + b"\0", 1) for a in process.notes.argv[1:] if len(a) >= MIN_ARGUMENT]
    anchor = process.notes.auxv_pointers.get("AT_EXECFN")
    initial = process.memory.segment_containing(anchor) if isinstance(anchor, int) else None
    patches: dict[int, bytes] = {}
    for lo, hi in kept.runs_within(0, 1 << 64):
        for address, data in _present(process, lo, hi):
            on_initial_stack = initial is not None and initial.start <= address < initial.end
            for needle, start in environment + (arguments if on_initial_stack else []):
                at = data.find(needle)
                while at >= 0:
                    patches[address + at + start] = b"\0" * (len(needle) - start - (needle[-1] == 0))
                    at = data.find(needle, at + 1)
    return patches


def _present(process: Process, lo: int, hi: int) -> Iterator[tuple[int, bytes]]:
    """(address, bytes) for all of [lo, hi) the core holds. One read stops where a segment's
    bytes end, and a kept run may go on into the next mapping: every byte written is searched."""
    cursor = lo
    while cursor < hi:
        data = process.memory.read_available(cursor, hi - cursor)
        if data:
            yield cursor, data
            cursor += len(data)
        else:
            cursor += PAGE - cursor % PAGE


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
