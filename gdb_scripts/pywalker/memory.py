"""Checked, counted and cached reads of the target's memory: everything the walker reads goes
through here, so that a corrupt core's absurd address or size is refused, and a walk that reads
without end stops at its budget."""

from __future__ import annotations

import struct
import time

from .target import ReadError, Target

# Limits: a corrupt core may make any count or length absurd.
MAX_READ = 1 << 20  # bytes in one read
MAX_READS = 2_000_000  # memory reads in one command
TIME_BUDGET = 60.0  # seconds for one command; the host's timeout is the real guard
# The unit of the walk's read cache: a page. The objects it reads lie scattered, but in the
# allocator's pools: the module names and namespaces of a TensorFlow process's sys.modules take
# ~2600 pages and ~5800 blocks of 256 bytes, each block one read of the core (a third slower).
# A target may ask for smaller blocks (its read_block): one whose reads are recorded, say.
CACHE_BLOCK = 4096
CACHE_BYTES = 16 << 20  # the most the cache holds


class BudgetExceeded(Exception):
    """The walk used up its read or time budget."""


class Memory:
    """Checked, counted reads of the target's memory."""

    def __init__(self, target: Target) -> None:
        self._target = target
        self.reads = 0
        self.deadline = time.monotonic() + TIME_BUDGET
        # A dead process's memory does not change: each block is asked of the target once (the
        # walk makes tens of thousands of small reads, each a round trip through the debugger).
        # b"" marks a block the target cannot give whole; reads there go to the target as asked.
        self._blocks: dict[int, bytes] = {}
        unit = getattr(target, "read_block", CACHE_BLOCK)
        self._unit = unit if isinstance(unit, int) and 16 <= unit <= CACHE_BLOCK and unit & (unit - 1) == 0 else CACHE_BLOCK

    def read(self, address: int, size: int) -> bytes:
        if size == 0:
            return b""
        if address < 4096 or size < 0 or size > MAX_READ or address + size > 1 << 64:
            raise ReadError(f"refused read of {size} bytes at 0x{address:x}")
        self.reads += 1
        if self.reads > MAX_READS or (self.reads % 1024 == 0 and time.monotonic() > self.deadline):
            raise BudgetExceeded("the walk used up its budget of memory reads/time")
        unit = self._unit
        block = address & ~(unit - 1)
        if address + size <= block + unit:
            data = self._block(block)
            if data:
                return data[address - block:address - block + size]
        elif address + size <= block + 2 * unit:
            # Across two blocks (a str's header and text often are): both from the cache.
            first, second = self._block(block), self._block(block + unit)
            if first and second:
                start = address - block
                return first[start:] + second[: start + size - unit]
        return self._target.read(address, size)

    def _block(self, block: int) -> bytes:
        data = self._blocks.get(block)
        if data is None:
            try:
                data = self._target.read(block, self._unit)
            except ReadError:
                data = b""
            if len(data) != self._unit:
                data = b""
            if len(self._blocks) < CACHE_BYTES // self._unit:
                self._blocks[block] = data
        return data

    def u8(self, a: int) -> int:
        return self.read(a, 1)[0]

    def u16(self, a: int) -> int:
        return struct.unpack("<H", self.read(a, 2))[0]

    def i32(self, a: int) -> int:
        return struct.unpack("<i", self.read(a, 4))[0]

    def u32(self, a: int) -> int:
        return struct.unpack("<I", self.read(a, 4))[0]

    def i64(self, a: int) -> int:
        return struct.unpack("<q", self.read(a, 8))[0]

    def u64(self, a: int) -> int:
        return struct.unpack("<Q", self.read(a, 8))[0]

    ptr = u64

    def cstring(self, a: int, limit: int = 256) -> str:
        out = bytearray()
        chunk = 64
        while len(out) < limit:
            try:
                data = self.read(a + len(out), chunk)
            except ReadError:
                if chunk == 1:
                    break
                chunk = 1  # the string may end right before an unmapped page
                continue
            end = data.find(b"\0")
            if end >= 0:
                out += data[:end]
                return out.decode("utf-8", "replace")[:limit]
            out += data
        return out.decode("utf-8", "replace")[:limit]
