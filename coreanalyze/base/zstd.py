"""The one zstd decoder: the zstandard package where it is installed, else the standard
library's compression.zstd (Python 3.14+), so that Python 3.14 and newer, for which zstandard
publishes wheels late or never, need no compiler. Both decode the same frames.

Compressed cores (systemd-coredump), compressed debug sections and image layers use it.
"""

from __future__ import annotations

from typing import Any, BinaryIO

try:
    import zstandard as _zstandard
except ImportError:  # Python 3.14+ without the package: the standard library's decoder
    _zstandard = None

try:
    from compression import zstd as _stdlib  # type: ignore[import-not-found]  # Python 3.14+
except ImportError:
    _stdlib = None

AVAILABLE = _zstandard is not None or _stdlib is not None
MISSING = "zstd-compressed input needs the zstandard package (pip install zstandard) or Python 3.14+"


def _need() -> None:
    if not AVAILABLE:
        raise ImportError(MISSING)


def frame_decoder() -> Any:
    """A decoder of one frame: .decompress(data) -> bytes, then .eof and .unused_data once the
    frame ended (as zlib's decompressobj)."""
    _need()
    if _zstandard is not None:
        return _zstandard.ZstdDecompressor().decompressobj()
    return _stdlib.ZstdDecompressor()


def decompress(payload: bytes, max_size: int) -> bytes:
    """One frame's content, at most max_size bytes of it."""
    _need()
    if _zstandard is not None:
        return _zstandard.ZstdDecompressor().decompress(payload, max_output_size=max_size)
    return _stdlib.ZstdDecompressor().decompress(payload, max_length=max_size)


def frame_content_size(header: bytes) -> int | None:
    """The content size a frame header announces; None when it announces none."""
    _need()
    if _zstandard is not None:
        size = _zstandard.frame_content_size(header)
        return size if size > 0 else None
    return _stdlib.get_frame_info(header).decompressed_size or None


def stream_reader(raw: BinaryIO) -> BinaryIO:
    """A file object of the decompressed stream (concatenated frames included)."""
    _need()
    if _zstandard is not None:
        return _zstandard.ZstdDecompressor().stream_reader(raw)
    return _stdlib.ZstdFile(raw)


def errors() -> tuple[type[BaseException], ...]:
    """The exceptions a damaged stream raises."""
    found: list[type[BaseException]] = []
    if _zstandard is not None:
        found.append(_zstandard.ZstdError)
    if _stdlib is not None:
        found.append(_stdlib.ZstdError)
    return tuple(found)
