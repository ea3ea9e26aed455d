"""The words of a thread's registers and stack that point into memory the core holds: where the
objects a crashing kernel was running on are looked for."""

from __future__ import annotations

import struct

from coreanalyze.arch import stack_pointer
from coreanalyze.base.model import Thread
from coreanalyze.process.process import Process
from coreanalyze.process.stackscan import stack_start

# How far above the stack pointer the crashing thread's stack is searched: the objects sit in
# the executor's / interpreter's frames, a few frames (and a fatal-log buffer) above the fault.
STACK_WINDOW = 512 * 1024
LOWEST_POINTER = 0x10000


def pointer_words(process: Process, thread: Thread) -> list[int]:
    words: dict[int, None] = {v: None for v in thread.registers.values() if isinstance(v, int)}
    sp = stack_start(process, stack_pointer(thread.registers))
    if sp:
        stack = process.read_available(sp, STACK_WINDOW)
        for (value,) in struct.iter_unpack("<Q", stack[: len(stack) // 8 * 8]):
            words[value] = None
    return [w for w in words if w > LOWEST_POINTER and w % 8 == 0 and process.is_present(w)]


# Words either side of a frame read from the stack's memory (classify.beyond): the kernel's
# OpKernelContext sits in its caller's frame, next to the return address.
NEAR_WINDOW = 64 * 1024


def words_near(process: Process, at: int, thread: Thread) -> list[int]:
    words: dict[int, None] = {v: None for v in thread.registers.values() if isinstance(v, int)}
    segment = process.segment_containing(at)
    if segment is None:
        return []
    start = max(segment.start, at - NEAR_WINDOW)
    stack = process.read_available(start, at + NEAR_WINDOW - start)
    for (value,) in struct.iter_unpack("<Q", stack[: len(stack) // 8 * 8]):
        words[value] = None
    return [w for w in words if w > LOWEST_POINTER and w % 8 == 0 and process.is_present(w)]
