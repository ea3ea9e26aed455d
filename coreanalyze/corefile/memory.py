"""The crashed process's memory as the core file holds it, read lazily through PT_LOAD segments.

Cores run to many gigabytes, so nothing here reads more than it is asked for: every read is a
positioned read (os.pread) of the bytes that back the requested addresses, and every read is
bounded. Memory the kernel did not dump (file-backed text, p_filesz < p_memsz) or that a
truncated file lost reads as None, never as zeros: a caller must not mistake "not in the core"
for "the process had zeros there".
"""

from __future__ import annotations

import bisect
import errno
import functools
import mmap
import os
import struct
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

# The largest single read a caller may ask for; anything bigger is a bug or a hostile size.
MAX_READ = 16 * 1024 * 1024
# A search (CoreMemory.find) maps this much of the core at a time.
SEARCH_WINDOW = 16 * 1024 * 1024

_this_thread = threading.local()


@contextmanager
def searching() -> Iterator[None]:
    """Reads made inside look through memory for something (a message) instead of following a
    structure; the observer can ask (in_search): a shrunk core keeps what a search found, not
    all it looked through (coreanalyze.process.process.Process.record). Per thread: searches run beside the rest of an analysis."""
    depth = getattr(_this_thread, "searches", 0)
    _this_thread.searches = depth + 1
    try:
        yield
    finally:
        _this_thread.searches = depth


def in_search() -> bool:
    """Whether this thread's reads are a search (see searching)."""
    return getattr(_this_thread, "searches", 0) > 0


PF_X = 1
PF_W = 2
PF_R = 4


@dataclass(frozen=True)
class Segment:
    """One PT_LOAD: [start, end) in the process, backed by filesz bytes at file_offset."""

    start: int
    end: int
    file_offset: int
    filesz: int  # bytes present in the file, already clipped to the file's real size
    flags: int = 0  # PF_R | PF_W | PF_X

    @property
    def present_end(self) -> int:
        """First address past the bytes the file actually holds for this segment."""
        return self.start + min(self.filesz, self.end - self.start)

    @property
    def readable(self) -> bool:
        return bool(self.flags & PF_R)

    @property
    def executable(self) -> bool:
        return bool(self.flags & PF_X)

    @property
    def writable(self) -> bool:
        return bool(self.flags & PF_W)


class CoreMemory:
    """Reads process memory out of an open core file; close() (or `with`) releases it."""

    # Hears every read, (address, size), where one is installed: the recording wrapper that
    # `coreanalyze shrink` puts on the Process (coreanalyze.process.process.Process.record).
    observer: Callable[[int, int], None] | None = None

    def __init__(self, path: str, segments: list[Segment], little_endian: bool = True):
        self.path = path
        # Overlapping or empty segments only come from corrupt headers; keep the first of each.
        ordered: list[Segment] = []
        for seg in sorted(segments, key=lambda s: (s.start, s.end)):
            if seg.end <= seg.start:
                continue
            if ordered and seg.start < ordered[-1].end:
                continue
            ordered.append(seg)
        self.segments: list[Segment] = ordered
        self._starts = [s.start for s in ordered]
        self._u64 = struct.Struct("<Q" if little_endian else ">Q")
        self._file = self._open(path)

    def _open(self, path: str):
        return open(path, "rb")

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> CoreMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lookup -----------------------------------------------------------------------------

    def segment_containing(self, address: int) -> Segment | None:
        i = bisect.bisect_right(self._starts, address) - 1
        if i >= 0 and self.segments[i].start <= address < self.segments[i].end:
            return self.segments[i]
        return None

    def is_present(self, address: int) -> bool:
        """True when the byte at address is backed by data in the file."""
        seg = self.segment_containing(address)
        return seg is not None and address < seg.present_end

    # -- reads ------------------------------------------------------------------------------

    def read(self, address: int, size: int) -> bytes | None:
        """size bytes at address, or None unless every byte is present in the file."""
        if size < 0 or size > MAX_READ or address < 0 or self._file.closed:
            return None
        if self.observer is not None:
            self.observer(address, size)
        if size == 0:
            return b"" if self.segment_containing(address) else None
        chunks: list[bytes] = []
        cursor, remaining = address, size
        # A read may run across adjacent segments (e.g. two VMAs of one stack); each must be
        # present without a gap.
        while remaining > 0:
            seg = self.segment_containing(cursor)
            if seg is None or cursor >= seg.present_end:
                return None
            take = min(remaining, seg.present_end - cursor)
            data = self._pread(seg.file_offset + (cursor - seg.start), take)
            if data is None or len(data) != take:
                return None
            chunks.append(data)
            cursor += take
            remaining -= take
        return b"".join(chunks)

    def read_available(self, address: int, size: int) -> bytes:
        """Up to size bytes from address, stopping at the first byte not in the file."""
        size = max(0, min(size, MAX_READ))
        chunks: list[bytes] = []
        cursor, remaining = address, size
        while remaining > 0:
            seg = self.segment_containing(cursor)
            if seg is None or cursor >= seg.present_end:
                break
            take = min(remaining, seg.present_end - cursor)
            data = self._pread(seg.file_offset + (cursor - seg.start), take)
            if not data:
                break
            chunks.append(data)
            if len(data) < take:
                break
            cursor += take
            remaining -= take
        if self.observer is not None and chunks:
            self.observer(address, sum(map(len, chunks)))  # only what was there
        return b"".join(chunks)

    def find(self, needle: bytes, segment: Segment, limit: int) -> Iterator[int]:
        """Addresses of needle (not all NUL bytes) in the first `limit` present bytes of one
        segment, searched in the mapped file: a search through megabytes to find a few strings
        copies nothing.
        (The observer hears it as one read of what it searched.)"""
        size = min(limit, segment.present_end - segment.start)
        if size <= 0 or self._file.closed:
            return
        if self.observer is not None:
            self.observer(segment.start, size)
        fd, begin = self._file.fileno(), segment.file_offset
        try:
            end = min(begin + size, os.fstat(fd).st_size)
        except OSError:
            return
        # Only the file's data is searched (the pages a process never touched are holes of the
        # sparse core: zeros, no needle), a window at a time, mapped and unmapped: the process
        # does not hold the whole core it searched (the pages stay in the page cache).
        for low, high in self._data_extents(begin, end):
            for window in range(low - low % mmap.PAGESIZE, high, SEARCH_WINDOW):
                first, stop = max(window, low), min(window + SEARCH_WINDOW, high)
                last = min(stop + len(needle) - 1, end)
                for at in _search_window(fd, window, last - window, needle, first - window):
                    yield segment.start + (window + at - begin)

    def _data_extents(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The runs of [start, end) the file holds data for (all of it where the file system
        cannot tell)."""
        fd, position = self._file.fileno(), start
        while position < end:
            try:
                data = os.lseek(fd, position, os.SEEK_DATA)
                hole = os.lseek(fd, data, os.SEEK_HOLE)
            except OSError as e:
                if e.errno == errno.ENXIO:
                    return  # no data from here to the end of the file
                yield position, end
                return
            except (AttributeError, ValueError):
                yield position, end  # no SEEK_DATA on this system
                return
            if data >= end:
                return
            if hole <= data:  # a file changing under us: search the rest as it is
                yield data, end
                return
            yield data, min(hole, end)
            position = hole

    def read_cstring(self, address: int, max_len: int = 4096) -> bytes | None:
        """The NUL-terminated bytes at address (without the NUL).

        None when address itself is not in the file. When no NUL comes within max_len bytes
        (or before the dumped memory ends) the bytes found so far are returned.
        """
        if not self.is_present(address):
            return None
        max_len = max(0, min(max_len, MAX_READ))
        found = bytearray()
        cursor = address
        # Small steps first: nearly every string is short, and a page-sized read of a string
        # near a segment's end must not fail for want of the rest of the page.
        step = 256
        while len(found) < max_len:
            chunk = self.read_available(cursor, min(step, max_len - len(found)))
            if not chunk:
                break
            nul = chunk.find(b"\0")
            if nul >= 0:
                found += chunk[:nul]
                return bytes(found)
            found += chunk
            cursor += len(chunk)
            step = min(step * 4, 65536)
        return bytes(found[:max_len])

    def read_u64(self, address: int) -> int | None:
        data = self.read(address, 8)
        return None if data is None else self._u64.unpack(data)[0]

    def _pread(self, offset: int, size: int) -> bytes | None:
        try:
            data = os.pread(self._file.fileno(), size, offset)
        except (OSError, OverflowError, ValueError):
            return None
        return data if len(data) == size else (data or None)


class BytesMemory(CoreMemory):
    """A process's memory given as bytes (address -> bytes) instead of a core file: the memory of
    coreanalyze.process.process.Process.in_memory, for the readers' tests. Segments are readable and
    writable; none is executable."""

    def __init__(self, segments: dict[int, bytes], little_endian: bool = True):
        self._blob = b"".join(segments[start] for start in sorted(segments))
        placed, offset = [], 0
        for start in sorted(segments):
            size = len(segments[start])
            placed.append(Segment(start, start + size, offset, size, PF_R | PF_W))
            offset += size
        super().__init__("<memory>", placed, little_endian)

    def _open(self, path: str):
        import io

        return io.BytesIO(self._blob)

    def _pread(self, offset: int, size: int) -> bytes | None:
        data = self._blob[offset : offset + size]
        return data if len(data) == size else (data or None)

    def find(self, needle: bytes, segment: Segment, limit: int) -> Iterator[int]:
        size = min(limit, segment.present_end - segment.start)
        if self.observer is not None and size > 0:
            self.observer(segment.start, size)
        data = self._blob[segment.file_offset : segment.file_offset + max(0, size)]
        at = data.find(needle)
        while at >= 0:
            yield segment.start + at
            at = data.find(needle, at + 1)


def find_in_writable(memory: CoreMemory, needle: bytes, limit: int) -> Iterator[int]:
    """Addresses of needle in the core's writable memory (heaps, stacks, data: where a process
    keeps the strings it made), segment by segment, the first `limit` present bytes searched at
    most. A caller that wants a few stops taking them."""
    scanned = 0
    for segment in memory.segments:
        if not segment.writable or scanned >= limit:
            continue
        yield from memory.find(needle, segment, limit - scanned)
        scanned += max(0, segment.present_end - segment.start)


def _search_window(fd: int, offset: int, length: int, needle: bytes, start: int) -> Iterator[int]:
    """Offsets (from `offset`) of needle in the file's bytes [offset + start, offset + length).

    libc's memmem where ctypes reaches it: three times as fast as mmap.find, whose two-way
    search runs at ~3 GB/s, on the hundreds of megabytes of a TensorFlow core. memmem needs the
    window's address, which ctypes gives only for a writable buffer: a private (copy-on-write)
    mapping, never written."""
    memmem = _libc_memmem()
    try:
        mapped = mmap.mmap(fd, length, offset=offset, access=mmap.ACCESS_READ if memmem is None else mmap.ACCESS_COPY)
    except (OSError, ValueError, OverflowError):
        return
    with mapped:
        if memmem is None:
            at = mapped.find(needle, start)
            while at >= 0:
                yield at
                at = mapped.find(needle, at + 1)
            return
        import ctypes

        view = (ctypes.c_char * length).from_buffer(mapped)
        try:
            base, at = ctypes.addressof(view), start
            while length - at >= len(needle):
                hit = memmem(base + at, length - at, needle, len(needle))
                if not hit:
                    break
                at = hit - base
                yield at
                at += 1
        finally:
            del view  # the mapping cannot close while ctypes holds it


@functools.cache
def _libc_memmem() -> Callable[..., int | None] | None:
    """libc's memmem(haystack, length, needle, length) through ctypes, or None."""
    try:
        import ctypes

        memmem = ctypes.CDLL(None).memmem
    except (ImportError, OSError, AttributeError):
        return None
    memmem.restype = ctypes.c_void_p
    memmem.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
    return memmem
