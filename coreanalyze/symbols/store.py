"""The lookup index of one ELF file, as bytes on disk and as a read-only view for lookups.

Layout (native byte order, recorded in the header; numbers are aligned to 8 bytes):

    magic (8) | header length (u32) | JSON header | arrays...

The JSON header names the build-id the index describes, where it was built from, and where
each array lies: symbol starts and sizes (sorted by start), offsets of the zlib-compressed
blocks of symbol names, and the line table (addresses, line numbers, file numbers) with the
file names. An index is opened through mmap, so a lookup touches a few pages of it instead of
reading the whole file: a library with 750k symbols answers in well under a millisecond.

An index file lives in the user's cache but is still checked before use: a wrong magic, a
header that does not parse, an array that runs past the end of the file or a build-id other
than the one asked for makes the file be ignored (and rebuilt).
"""

from __future__ import annotations

import array
import bisect
import json
import mmap
import os
import sys
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from coreanalyze.base.atomicfile import write_atomically

MAGIC = b"CAIDX\x00\x01\x00"
FORMAT_VERSION = 1
MAX_HEADER_BYTES = 1024 * 1024
# Names are compressed in blocks so that one lookup decompresses ~50 KB, not the whole blob.
NAMES_PER_BLOCK = 256
MAX_BLOCK_BYTES = 64 * 1024 * 1024
DECOMPRESSED_BLOCKS_KEPT = 16
# Symbols nested in a bigger one (labels inside a function) are skipped over, this far back.
MAX_ENCLOSING_STEPS = 16

ARRAY_TYPES = {"sym_start": "Q", "sym_size": "Q", "name_block": "Q", "line_addr": "Q", "line_num": "I",
               "line_file": "I", "file_offset": "Q"}
BLOBS = ("names", "files")


@dataclass
class IndexData:
    """An index being built: plain arrays and blobs, before they are written out."""

    meta: dict[str, Any]
    sym_start: array.array = field(default_factory=lambda: array.array("Q"))
    sym_size: array.array = field(default_factory=lambda: array.array("Q"))
    name_block: array.array = field(default_factory=lambda: array.array("Q"))  # n_blocks + 1 offsets
    names: bytes = b""
    line_addr: array.array = field(default_factory=lambda: array.array("Q"))
    line_num: array.array = field(default_factory=lambda: array.array("I"))  # 0: end of a sequence
    line_file: array.array = field(default_factory=lambda: array.array("I"))
    file_offset: array.array = field(default_factory=lambda: array.array("Q"))  # n_files + 1 offsets
    files: bytes = b""

    def to_bytes(self) -> bytes:
        parts: list[bytes] = []
        layout: dict[str, list[Any]] = {}
        position = 0

        def place(name: str, data: bytes, count: int, typecode: str) -> None:
            nonlocal position
            pad = (-position) % 8
            if pad:
                parts.append(b"\0" * pad)
                position += pad
            layout[name] = [position, count, typecode]
            parts.append(data)
            position += len(data)

        for name, typecode in ARRAY_TYPES.items():
            values: array.array = getattr(self, name)
            place(name, values.tobytes(), len(values), typecode)
        for name in BLOBS:
            blob: bytes = getattr(self, name)
            place(name, blob, len(blob), "B")
        header = dict(self.meta)
        header.update(version=FORMAT_VERSION, byteorder=sys.byteorder, names_per_block=NAMES_PER_BLOCK, layout=layout)
        head = json.dumps(header, sort_keys=True).encode()
        prefix = MAGIC + len(head).to_bytes(4, "little") + head
        prefix += b"\0" * ((-len(prefix)) % 8)
        # Array offsets in the layout are relative to the end of the (padded) header.
        return prefix + b"".join(parts)


class IndexUnusable(Exception):
    """An index file that cannot be used (corrupt, truncated, another format or build)."""


class Index:
    """Read-only lookups over an index held in memory or mapped from its file."""

    def __init__(self, buffer: bytes | mmap.mmap, source: str | None = None, owner: Any = None):
        self._buffer = buffer
        self._owner = owner  # keeps the file (and mapping) open
        self.source = source
        view = memoryview(buffer)
        self._view = view
        if len(view) < len(MAGIC) + 4 or bytes(view[: len(MAGIC)]) != MAGIC:
            raise IndexUnusable("not an index file")
        head_len = int.from_bytes(view[len(MAGIC) : len(MAGIC) + 4], "little")
        if head_len > MAX_HEADER_BYTES or len(MAGIC) + 4 + head_len > len(view):
            raise IndexUnusable("index header is truncated")
        try:
            header = json.loads(bytes(view[len(MAGIC) + 4 : len(MAGIC) + 4 + head_len]))
        except (UnicodeDecodeError, ValueError) as e:
            raise IndexUnusable(f"index header does not parse: {e}") from None
        if not isinstance(header, dict) or header.get("version") != FORMAT_VERSION:
            raise IndexUnusable("index of another format version")
        if header.get("byteorder") != sys.byteorder:
            raise IndexUnusable("index written on a machine of another byte order")
        self.meta: dict[str, Any] = header
        base = len(MAGIC) + 4 + head_len
        base += (-base) % 8
        body = view[base:]
        layout = header.get("layout")
        if not isinstance(layout, dict):
            raise IndexUnusable("index header has no layout")
        self._arrays: dict[str, memoryview] = {}
        for name, typecode in [*ARRAY_TYPES.items(), *((b, "B") for b in BLOBS)]:
            entry = layout.get(name)
            if not (isinstance(entry, list) and len(entry) == 3 and entry[2] == typecode):
                raise IndexUnusable(f"index has no {name} array")
            offset, count = entry[0], entry[1]
            itemsize = array.array(typecode).itemsize
            if not (isinstance(offset, int) and isinstance(count, int)) or offset < 0 or count < 0:
                raise IndexUnusable(f"index array {name} is malformed")
            end = offset + count * itemsize
            if end > len(body) or (typecode != "B" and offset % 8):
                raise IndexUnusable(f"index array {name} runs past the end of the file")
            self._arrays[name] = body[offset:end].cast(typecode) if typecode != "B" else body[offset:end]
        self.starts = self._arrays["sym_start"]
        self.sizes = self._arrays["sym_size"]
        self.line_addrs = self._arrays["line_addr"]
        if len(self.sizes) != len(self.starts):
            raise IndexUnusable("index symbol arrays differ in length")
        n_blocks = (len(self.starts) + NAMES_PER_BLOCK - 1) // NAMES_PER_BLOCK
        if len(self._arrays["name_block"]) != n_blocks + 1:
            raise IndexUnusable("index name blocks do not match its symbols")
        if not (len(self._arrays["line_num"]) == len(self._arrays["line_file"]) == len(self.line_addrs)):
            raise IndexUnusable("index line arrays differ in length")
        if len(self._arrays["file_offset"]) == 0 and len(self.line_addrs):
            raise IndexUnusable("index has lines but no file names")
        self._blocks: OrderedDict[int, list[bytes]] = OrderedDict()

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, path: str) -> Index:
        try:
            f = open(path, "rb")
        except OSError as e:
            raise IndexUnusable(f"cannot open {path}: {e.strerror or e}") from None
        try:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise IndexUnusable("empty index file")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            f.close()
            raise IndexUnusable(f"cannot map {path}: {e}") from None
        except IndexUnusable:
            f.close()
            raise
        try:
            return cls(mapped, source=path, owner=(f, mapped))
        except IndexUnusable as e:
            error = str(e)
        # Only now, with the exception (and the views its traceback kept alive) gone, can the
        # mapping be closed.
        try:
            mapped.close()
        except BufferError:
            pass  # closed when the last view is collected
        f.close()
        raise IndexUnusable(error)

    def close(self) -> None:
        # Every view into the mapping must be released before the mapping can be closed.
        for view in self._arrays.values():
            view.release()
        self._arrays.clear()
        self._blocks.clear()
        self.starts = self.sizes = self.line_addrs = memoryview(b"").cast("Q")
        self._view.release()
        if self._owner is not None:
            f, mapped = self._owner
            try:
                mapped.close()
            except BufferError:
                pass  # a view is still alive somewhere; the mapping goes with the process
            f.close()
            self._owner = None

    @property
    def build_id(self) -> str | None:
        return self.meta.get("build_id")

    @property
    def has_lines(self) -> bool:
        return len(self.line_addrs) > 0

    @property
    def symbol_count(self) -> int:
        return len(self.starts)

    # ------------------------------------------------------------------ lookups

    def symbol(self, address: int) -> tuple[int, int, bytes] | None:
        """(start, size, raw name) of the function containing address, or None."""
        starts = self.starts
        i = bisect.bisect_right(starts, address) - 1
        for j in range(i, max(i - MAX_ENCLOSING_STEPS, -1), -1):
            start, size = starts[j], self.sizes[j]
            if start <= address < start + size:
                name = self._name(j)
                return (start, size, name) if name is not None else None
        return None

    def line(self, address: int) -> tuple[str, int] | None:
        """(file, line) of the line-table row covering address, or None."""
        i = bisect.bisect_right(self.line_addrs, address) - 1
        if i < 0:
            return None
        line = self._arrays["line_num"][i]
        if line == 0:
            return None  # past the end of a sequence: no code of this table is there
        name = self._file(self._arrays["line_file"][i])
        return (name, line) if name is not None else None

    def _name(self, index: int) -> bytes | None:
        block = index // NAMES_PER_BLOCK
        names = self._blocks.get(block)
        if names is None:
            offsets = self._arrays["name_block"]
            lo, hi = offsets[block], offsets[block + 1]
            blob = self._arrays["names"]
            if not lo <= hi <= len(blob):
                return None
            try:
                d = zlib.decompressobj()
                data = d.decompress(blob[lo:hi], MAX_BLOCK_BYTES)
            except zlib.error:
                return None
            names = data.split(b"\0")
            self._blocks[block] = names
            if len(self._blocks) > DECOMPRESSED_BLOCKS_KEPT:
                self._blocks.popitem(last=False)
        position = index % NAMES_PER_BLOCK
        return names[position] if position < len(names) else None

    def _file(self, number: int) -> str | None:
        offsets = self._arrays["file_offset"]
        if not 0 <= number < len(offsets) - 1:
            return None
        lo, hi = offsets[number], offsets[number + 1]
        blob = self._arrays["files"]
        if not lo <= hi <= len(blob):
            return None
        return bytes(blob[lo:hi]).decode("utf-8", "backslashreplace")


def write_cache_file(path: str, data: bytes) -> None:
    """Write a cache file whole (its directory made private when it is new)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    write_atomically(path, data, durable=True)
