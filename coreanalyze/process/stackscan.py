"""Return addresses read straight from a thread's stack memory, without unwinding it.

An unwinder follows the frames one by one from the top; that is what the report's frames are,
and it stops where the stack stops making sense or after a few hundred frames. The words of the
stack tell more: below the stack pointer, the frames of calls that already returned (a thrower's,
unwound by the exception that left them); at the far end of a stack tens of thousands of frames
deep, the frames that started it; above code compiled at run time, which no unwinder has tables
for, the frames of its callers. A word is taken for a return address when it points into code of
a file the crashed build mapped and the bytes before it are a call instruction (x86-64): a
scan, not an unwind, so stale words of finished calls are among them and the reader judges by
place and name.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable

from coreanalyze.base.demangle import demangle

# A stack pointer this far below its stack's mapping is a stack that overflowed into the guard
# gap (the main thread's stack_guard_gap is 256 pages; threads' guards are a page or a few).
GUARD_REACH = 1024 * 1024
MAX_WORDS = 1 << 20  # words looked at in one scan (8 MiB)
MAX_FOUND = 4096  # return addresses kept from one scan

# x86-64 calls, by the bytes that end right before the return address:
# e8 rel32 (5 bytes), ff /2 with a 1-byte, 4-byte, or no displacement, register or memory
# operand, with or without a REX prefix (2 to 7 bytes).
_CALL_LENGTHS = (2, 3, 4, 6, 7)


def looks_like_call(code: bytes) -> bool:
    """True when the 7 bytes before a return address end with a call instruction."""
    if len(code) < 7:
        return False
    if code[2] == 0xE8:
        return True
    for length in _CALL_LENGTHS:
        start = 7 - length
        if code[start] == 0xFF and (code[start + 1] >> 3) & 7 == 2:
            return True
        if start > 0 and 0x40 <= code[start - 1] <= 0x4F and code[start] == 0xFF and (code[start + 1] >> 3) & 7 == 2:
            return True
    return False


@dataclass(frozen=True)
class StackWord:
    at: int  # where on the stack the word lies
    pc: int  # the return address
    function: str | None  # demangled; None when no symbol names it
    raw_function: str | None
    start: int | None  # of that function, in the process
    module: str | None  # path of the mapped file

    @property
    def offset(self) -> int | None:
        return None if self.start is None else self.pc - self.start


def stack_start(memory, sp: int | None) -> int | None:
    """Where a thread's stack can be read from: its stack pointer, or - for a stack that
    overflowed, whose stack pointer lies in the guard gap below it - the mapping's first byte."""
    if sp is None:
        return None
    if memory.segment_containing(sp) is not None:
        return sp
    above = min((s.start for s in memory.segments if sp < s.start <= sp + GUARD_REACH), default=None)
    return above


def stack_end(memory, address: int) -> int | None:
    """The end of the stack mapping holding address (the outermost frames lie just below it)."""
    segment = memory.segment_containing(address)
    return segment.end if segment is not None else None


def return_addresses(process, names, start: int, end: int, limit: int = MAX_FOUND) -> list[StackWord]:
    """The return addresses among the words of [start, end), lowest address (innermost) first.

    process: a coreanalyze.process.process.Process (memory, and the mapped files for code bytes the core
    left out); names: a coreanalyze.opinstance.codenames.CodeNames."""
    start = max(start, 0) & ~7
    size = min(max(end - start, 0), MAX_WORDS * 8)
    data = process.read_available(start, size)
    found: list[StackWord] = []
    code_cache: dict[int, bool] = {}
    demangled: dict[str, str | None] = {}  # a recursion repeats the same few return addresses
    for i, (word,) in enumerate(struct.iter_unpack("<Q", data[: len(data) // 8 * 8])):
        if word < 4096 or names.module_at(word) is None:
            continue
        called = code_cache.get(word)
        if called is None:
            code = process.read(word - 7, 7)
            called = code_cache[word] = bool(code) and looks_like_call(code)
        if not called:
            continue
        named = names.function_at(word - 1)
        raw, fstart = named if named is not None else (None, None)
        module = names.module_at(word)
        if raw and raw not in demangled:
            demangled[raw] = demangle(raw)
        found.append(StackWord(start + 8 * i, word, demangled[raw] if raw else None, raw, fstart, module.path if module else None))
        if len(found) >= limit:
            break
    return found


def named(words: Iterable[StackWord]) -> list[StackWord]:
    return [w for w in words if w.function]
