"""A compressed core (zstd, LZ4, xz, gzip, or the CoreDump field of an apport .crash file) as a
plain file gdb can open.

Compression is decided by the file's magic bytes, never by its name. The stream is decompressed
into a temporary file with a bound on the size written (a corrupt or hostile stream must not
fill the disk) and a free-space check: the size the stream's own headers announce is compared
with the free space before the first byte is written, and the free space is watched while
writing (a stream need not announce its size), so a core that does not fit stops with one line
saying how much room it needs and where, instead of filling the disk.
"""

from __future__ import annotations

import errno
import gzip
import lzma
import os
import shutil
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from coreanalyze.base import zstd
from coreanalyze.base.errors import BadInput
from coreanalyze.base.safenames import safe_stem
from coreanalyze.corefile.apportcrash import MAGIC as APPORT_MAGIC
from coreanalyze.corefile.apportcrash import CoreDumpReader

# Magic bytes -> compression name (zstd frame, LZ4 frame, xz stream, gzip member, apport report).
# The name is also the extension a kept copy gets (coreanalyze.watch.keep).
MAGICS = (
    (b"\x28\xb5\x2f\xfd", "zst"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x1f\x8b", "gz"),
    (APPORT_MAGIC, "crash"),
)
# How a message names what was decompressed; the stream's name for the others.
WHAT = {"crash": "apport CoreDump field"}

MAX_CORE_BYTES = 64 << 30  # bound on one decompressed core
READ_CHUNK = 1 << 20
# Compressed input fed per call: bounds the memory one call may expand to (zstd RLE blocks).
COMPRESSED_FEED = 4096
# Room left free on the temporary file's disk: other programs there need some too.
FREE_SPACE_RESERVE = 256 << 20
CHECK_FREE_EVERY = 64 << 20  # bytes written between two looks at the free space
MAX_XZ_INDEX_RECORDS = 1 << 16


def compression_of(path: str) -> str | None:
    """The compression of the file by its first bytes; None for anything else."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    return next((name for magic, name in MAGICS if head.startswith(magic)), None)


# ------------------------------------------------------------------------------ announced sizes


def announced_size(path: str, compression: str) -> int | None:
    """The decompressed size the stream's headers announce (for several frames or members, the
    size of one: a lower bound); None when they announce none or cannot be read."""
    try:
        with open(path, "rb") as f:
            if compression == "zst":
                return zstd.frame_content_size(f.read(18))
            if compression == "lz4":
                import lz4.frame

                size = lz4.frame.get_frame_info(f.read(32)).get("content_size") or 0
                return size or None
            if compression == "xz":
                return _xz_size(f)
            if compression == "gz":
                # ISIZE: the size modulo 2**32 of the last member; at least that much.
                f.seek(-4, os.SEEK_END)
                return int.from_bytes(f.read(4), "little") or None
    except (ImportError, OSError, ValueError, RuntimeError, *_decompression_errors()):
        # Only a hint: a header that cannot be read is reported by the decompression itself.
        return None
    return None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(9):
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError("xz varint too long")


def _xz_size(f) -> int | None:
    """The uncompressed size the last xz stream's index records (xz file format 1.0.4, 4 and 5)."""
    f.seek(0, os.SEEK_END)
    end = f.tell()
    if end < 24:
        return None
    f.seek(end - 12)
    footer = f.read(12)
    if footer[10:12] != b"YZ":
        return None  # stream padding or damage: no announced size
    index_size = (int.from_bytes(footer[4:8], "little") + 1) * 4
    if index_size > end - 12:
        return None
    f.seek(end - 12 - index_size)
    index = f.read(index_size)
    if not index or index[0] != 0:
        return None
    count, pos = _varint(index, 1)
    total = 0
    for _ in range(min(count, MAX_XZ_INDEX_RECORDS)):
        _, pos = _varint(index, pos)  # unpadded size
        size, pos = _varint(index, pos)
        total += size
    return total or None


# ------------------------------------------------------------------------------ free space


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 30 else f"{max(n, 0) >> 20} MiB"


def _free_bytes(directory: str) -> int:
    return shutil.disk_usage(directory).free


def _no_room(name: str, directory: str, needed: str, free: int) -> BadInput:
    return BadInput(
        f"{name}: decompressed, the core does not fit in {directory} ({needed} needed, {_gib(free)} free); "
        "decompress it onto a larger disk or set TMPDIR to one"
    )


# ------------------------------------------------------------------------------ decompression


class _ZstdReader:
    """Streaming zstd decoding (concatenated frames too) that notices a truncated stream,
    which zstandard's stream_reader silently accepts."""

    def __init__(self, src):
        self._src = src
        self._obj = zstd.frame_decoder()
        self._pending = b""
        self._in_frame = False

    def read(self, _size: int) -> bytes:
        while True:
            if not self._pending:
                self._pending = self._src.read(COMPRESSED_FEED)
                if not self._pending:
                    if self._in_frame:
                        raise EOFError("compressed stream ended before the end of its frame")
                    return b""
            data, self._pending = self._pending, b""
            self._in_frame = True
            out = self._obj.decompress(data)
            if self._obj.eof:
                self._pending = self._obj.unused_data
                self._obj = zstd.frame_decoder()
                self._in_frame = False
            if out:
                return out


def _reader(compression: str, src):
    if compression == "zst":
        return _ZstdReader(src)
    if compression == "lz4":
        import lz4.frame

        return lz4.frame.open(src, "rb")
    if compression == "xz":
        return lzma.open(src, "rb")
    if compression == "gz":
        return gzip.open(src, "rb")
    if compression == "crash":
        return CoreDumpReader(src, os.path.basename(src.name))
    raise BadInput(f"unknown compression {compression!r}")


def _decompression_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [EOFError, lzma.LZMAError, zlib.error, gzip.BadGzipFile, RuntimeError, ValueError]
    return (*errors, *zstd.errors())


def decompress_file(
    path: str, compression: str, target: str, limit: int = MAX_CORE_BYTES, *, reserve: int = FREE_SPACE_RESERVE,
    free_bytes: Callable[[str], int] = _free_bytes,
) -> int:  # fmt: skip
    """Decompress the file at `path` into `target`; returns the bytes written. A corrupt,
    truncated or oversized stream, or one that does not fit on the target's disk, is bad input
    with one line saying which."""
    name = os.path.basename(path)
    directory = os.path.dirname(os.path.abspath(target))
    announced = announced_size(path, compression)
    if announced is not None:
        if announced > limit:
            raise BadInput(f"{name}: decompresses to more than {limit >> 20} MiB; not analyzed")
        if announced + reserve > free_bytes(directory):
            raise _no_room(name, directory, _gib(announced), free_bytes(directory))
    written = next_check = 0
    try:
        with open(path, "rb") as src, open(target, "wb") as out:
            reader = _reader(compression, src)
            while True:
                chunk = reader.read(READ_CHUNK)
                if not chunk:
                    break
                written += len(chunk)
                if written > limit:
                    raise BadInput(f"{name}: decompresses to more than {limit >> 20} MiB; not analyzed")
                if written >= next_check:
                    next_check = written + CHECK_FREE_EVERY
                    if free_bytes(directory) < reserve + len(chunk):
                        raise _no_room(name, directory, f"more than {_gib(written)}", free_bytes(directory))
                out.write(chunk)
    except BadInput:
        raise
    except ImportError as e:
        raise BadInput(f"{name}: cannot decompress {compression}: {e}") from None
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise _no_room(name, directory, f"more than {_gib(written)}", free_bytes(directory)) from None
        raise BadInput(f"{name}: cannot decompress: {e.strerror or e}") from None
    except _decompression_errors() as e:
        what = WHAT.get(compression, f"{compression} stream")
        raise BadInput(f"{name}: corrupt {what}: {str(e)[:200] or type(e).__name__}") from None
    if written == 0:
        raise BadInput(f"{name}: the {WHAT.get(compression, f'{compression} stream')} holds nothing")
    return written


@contextmanager
def decompressed(
    path: str, compression: str | None, tmp_dir: str | None = None, limit: int = MAX_CORE_BYTES
) -> Iterator[str]:
    """A plain core file for the file at `path`: the file itself when `compression` is None,
    else a decompressed temporary copy that is removed on exit."""
    if compression is None:
        yield path
        return
    directory = tempfile.mkdtemp(prefix="coreanalyze-", dir=tmp_dir)
    try:
        target = os.path.join(directory, safe_stem(Path(path).stem))
        decompress_file(path, compression, target, limit)
        yield target
    finally:
        shutil.rmtree(directory, ignore_errors=True)
