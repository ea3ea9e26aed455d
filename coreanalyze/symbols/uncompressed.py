"""Separate debug files with their sections uncompressed, kept in the user cache for gdb.

Distributions compress the sections of their debug packages (SHF_COMPRESSED, zlib or zstd):
gdb then inflates the whole of .debug_info, .debug_line, .debug_loclists ... of such a file on
every run, before it can read one line of it: ~30 ms of every analysis for the C library's
(libc6-dbg: 4 MB compressed, 10 MB whole). A copy with the same sections uncompressed holds
the same debug information, which gdb maps and reads in part. Copies are made once, under the
cache's `.build-id/` tree, which gdb searches before the system's (it finds a debug file by its
build-id, which the copy keeps); each analysis makes at most RUN_BUDGET bytes of them, for the
debug files of the libraries gdb is about to read.

A copy is the original file with each compressed section appended uncompressed and a new
section header table after them: the program headers and every other byte stay where they
were. Anything unexpected (no ELF, a compression type not known, sizes that do not add up)
means no copy: gdb reads the original, as before.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Any, Iterable

from coreanalyze.base import later, zstd
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.base.elfheaders import ElfHeaderError, ElfHeaders
from coreanalyze.symbols.paths import build_id_relpath

FORMAT_DIR = "debug-uncompressed-v1"
SHF_ALLOC = 0x2
SHF_COMPRESSED = 0x800
SHT_NOBITS = 8
ELFCOMPRESS_ZLIB = 1
ELFCOMPRESS_ZSTD = 2
MAX_COPY_BYTES = 512 << 20  # a debug file larger than this uncompressed is read as it is
RUN_BUDGET = 128 << 20  # uncompressed bytes one analysis writes at most
MAX_SECTIONS = 1 << 16


def directory() -> Path:
    """The debug directory of the copies (for gdb's debug-file-directory)."""
    return cache_dir() / FORMAT_DIR


class Budget:
    """Bytes of copies an analysis may still write."""

    def __init__(self, size: int = RUN_BUDGET) -> None:
        self.left = size


def uncompressed_copy(debug_file: str, build_id: str, budget: Budget, root: Path | None = None) -> str | None:
    """The path of an uncompressed copy of debug_file under root (default: directory()), made
    now if the budget allows; None when it has no compressed section or no copy can be made."""
    target = (root or directory()) / build_id_relpath(build_id)
    if target.is_file():
        return str(target)
    try:
        layout = _Layout.read(debug_file)
    except (OSError, ElfHeaderError, ValueError, struct.error):
        return None
    if layout is None:
        return None
    total = layout.uncompressed_size()
    if total > min(MAX_COPY_BYTES, budget.left):
        return None
    budget.left -= total
    try:
        data = layout.uncompressed()
        from coreanalyze.base.atomicfile import write_atomically

        os.makedirs(target.parent, mode=0o700, exist_ok=True)
        write_atomically(target, data)
    except (OSError, ValueError, zlib.error, struct.error, MemoryError):
        return None
    except Exception:  # noqa: BLE001 - a zstd decoder's errors; a copy is never a reason to fail
        return None
    return str(target)


class _Layout:
    """A debug file's bytes and section headers, with its compressed sections."""

    def __init__(self, data: bytes, elf: ElfHeaders, headers: list[list[int]], compressed: list[int]) -> None:
        self.data = data
        self.elf = elf
        self.headers = headers
        self.compressed = compressed  # indices of the compressed sections
        self._chdr = struct.Struct(elf.e + ("IIQQ" if elf.is64 else "III"))
        self._shdr = struct.Struct(elf.e + ("IIQQQQIIQQ" if elf.is64 else "IIIIIIIIII"))

    @classmethod
    def read(cls, path: str) -> _Layout | None:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            elf = ElfHeaders(f, size)
            count = elf.num_sections()
            if not 0 < count <= MAX_SECTIONS or elf.shentsize != (64 if elf.is64 else 40):
                return None
            headers = [list(elf.section(i)) for i in range(count)]
            compressed = [i for i, h in enumerate(headers) if h[2] & SHF_COMPRESSED and h[1] != SHT_NOBITS]
            if not compressed:
                return None
            if size > MAX_COPY_BYTES:
                return None
            f.seek(0)
            data = f.read()
        for i in compressed:
            header = headers[i]
            if header[2] & SHF_ALLOC or header[4] + header[5] > len(data):
                raise ValueError(f"section {i}: not a compressed debug section")
        return cls(data, elf, headers, compressed)

    def _chdr_of(self, header: list[int]) -> tuple[int, int, int]:
        """(ch_type, ch_size, ch_addralign) of a compressed section."""
        fields = self._chdr.unpack_from(self.data, header[4])
        return (fields[0], fields[2], fields[3]) if self.elf.is64 else (fields[0], fields[1], fields[2])

    def uncompressed_size(self) -> int:
        return len(self.data) + sum(self._chdr_of(self.headers[i])[1] for i in self.compressed)

    def uncompressed(self) -> bytes:
        out = bytearray(self.data)
        headers = [list(h) for h in self.headers]
        for i in self.compressed:
            header = headers[i]
            kind, size, align = self._chdr_of(header)
            payload = self.data[header[4] + self._chdr.size : header[4] + header[5]]
            body = _inflate(kind, payload, size)
            out += bytes(-len(out) % max(1, align))
            header[2] &= ~SHF_COMPRESSED
            header[4], header[5], header[8] = len(out), size, align
            out += body
        out += bytes(-len(out) % 8)
        table = len(out)
        for header in headers:
            out += self._shdr.pack(*header)
        struct.pack_into(self.elf.e + ("Q" if self.elf.is64 else "I"), out, 0x28 if self.elf.is64 else 0x20, table)
        return bytes(out)


def _inflate(kind: int, payload: bytes, size: int) -> bytes:
    """A section's bytes, exactly `size` of them (ValueError otherwise)."""
    if kind == ELFCOMPRESS_ZLIB:
        inflater = zlib.decompressobj()
        body = inflater.decompress(payload, size + 1)
    elif kind == ELFCOMPRESS_ZSTD:
        body = zstd.decompress(payload, size + 1)
    else:
        raise ValueError(f"compression type {kind} is not known")
    if len(body) != size:
        raise ValueError("a section's size differs from its header's")
    return body


def plan(debug_files: Iterable[tuple[Any, str, str]], gdb_reads) -> tuple[bool, list[tuple[str, str]]]:
    """(whether a copy exists for a debug file gdb will read, the (debug file, build-id) pairs
    of those without one yet). debug_files: (module, build-id, debug file) triples (as
    frames.gdb_debug_files gives them); gdb_reads(module): gdb will read that module (and so
    its debug file)."""
    found, missing = False, []
    for module, build_id, debug_file in debug_files:
        if not gdb_reads(module):
            continue
        if (directory() / build_id_relpath(build_id)).is_file():
            found = True
        else:
            missing.append((debug_file, build_id))
    return found, missing


def make(missing: list[tuple[str, str]], root: Path | None = None) -> None:
    """Uncompressed copies of those debug files that have compressed sections, within one
    analysis's budget (for the next analyses: gdb reads the originals in this one)."""
    budget = Budget()
    for debug_file, build_id in missing:
        uncompressed_copy(debug_file, build_id, budget, root)


def make_later(missing: list[tuple[str, str]]) -> None:
    """make(missing) for the next analyses, not on this one's time (coreanalyze.base.later)."""
    later.add("uncompressed debug files", make, missing, directory())
