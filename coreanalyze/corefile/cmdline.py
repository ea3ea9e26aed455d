"""The command line and environment the process started with, recovered from its initial
stack (the kernel's NT_PRPSINFO keeps only 80 bytes of it)."""

from __future__ import annotations

import shlex
import struct
from typing import Iterator

from coreanalyze.corefile.structures import CoreNotes
from coreanalyze.corefile.tables import (
    MAX_ARG_BYTES,
    MAX_ARGV,
    MAX_ARGV_TOTAL_BYTES,
    MAX_ENVIRON,
    PSARGS_LEN,
    STACK_SEARCH_BYTES,
    printable_text,
)


def fill_command_line(core: CoreNotes, auxv_raw: bytes | None, psargs: str | None) -> None:
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
        argv.append(printable_text(text))
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
        name, sep, value = printable_text(text).partition("=")
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


