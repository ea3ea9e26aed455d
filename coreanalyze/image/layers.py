"""One layer's tar stream, whatever its compression, and its members' names checked.

A plain layer (what `docker save` writes) is read in place: each member's data offset is kept,
so one file is read later by seeking to it. A compressed layer (gzip, zstd; also bzip2 and xz)
is read as a stream: a member is found again by its position in the stream.

Layers are untrusted input: a member whose name climbs out of the image ("../x", "/x") or a
link whose target does is refused, the whole image with it.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import io
import lzma
import posixpath
import tarfile
from typing import BinaryIO, Iterator

from coreanalyze.base import zstd
from coreanalyze.image.errors import ImageError
from coreanalyze.image.manifest import LayerRef

GZIP, ZSTD, BZIP2, XZ = b"\x1f\x8b", b"\x28\xb5\x2f\xfd", b"BZh", b"\xfd7zXZ\x00"


def _zstd_reader(raw: BinaryIO) -> BinaryIO:
    if not zstd.AVAILABLE:
        raise ImageError(f"a layer of the image is zstd-compressed: {zstd.MISSING}")
    return zstd.stream_reader(raw)


class Hashing(io.RawIOBase):
    """Reads through to a stream and hashes every byte read (a layer's diff_id)."""

    def __init__(self, stream: BinaryIO, algorithm: str):
        self._stream, self.hash = stream, hashlib.new(algorithm)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._stream.read(len(buffer))
        buffer[: len(data)] = data
        self.hash.update(data)
        return len(data)

    def drain(self) -> str:
        while self.read(1 << 20):
            pass
        return f"{self.hash.name}:{self.hash.hexdigest()}"


@contextlib.contextmanager
def open_layer(store, ref: LayerRef, *, verify: bool = False) -> Iterator[tuple[tarfile.TarFile, bool]]:
    """(the layer's tar, True when it is plain and its members' offset_data can be seeked to).

    verify: read it as a stream, every byte hashed, and check the config's diff_id at the end
    (the index is built so, once: the files later copied out are then the image's own)."""
    with store.open(ref.member) as raw:
        head = raw.read(6)
        raw.seek(0)
        if head.startswith(GZIP):
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif head.startswith(ZSTD):
            stream = _zstd_reader(raw)
        elif head.startswith(BZIP2):
            stream = bz2.BZ2File(raw)
        elif head.startswith(XZ):
            stream = lzma.LZMAFile(raw)
        else:
            stream = None
        try:
            if verify:
                hashing = Hashing(stream or raw, (ref.diff_id or "sha256:").split(":", 1)[0])
                with stream or contextlib.nullcontext():
                    with tarfile.open(fileobj=hashing, mode="r|") as tar:
                        yield tar, stream is None
                    found = hashing.drain()
                if ref.diff_id and found != ref.diff_id:
                    raise ImageError(f"layer {ref.member} of the image is not the one its config names (digest {found[:19]}…, not {ref.diff_id[:19]}…): refused")
            elif stream is None:
                with tarfile.open(fileobj=raw, mode="r:") as tar:
                    yield tar, True
            else:
                with stream, tarfile.open(fileobj=stream, mode="r|") as tar:
                    yield tar, False
        except (tarfile.TarError, OSError, EOFError, lzma.LZMAError) as e:
            why = (str(e).splitlines() or [type(e).__name__])[0]
            raise ImageError(f"layer {ref.member} of the image cannot be read: {why}") from None


def checked_name(member: tarfile.TarInfo, layer: str) -> str:
    """The member's path inside the image; ImageError when it would leave the image."""
    raw = member.name
    name = posixpath.normpath(raw.removeprefix("./")) if raw not in ("", ".", "./") else ""
    if raw.startswith("/") or name == ".." or name.startswith("../"):
        raise ImageError(f"layer {layer} of the image has a member {raw[:200]!r} that leaves the image: refused")
    return "" if name == "." else name


def checked_link(member: tarfile.TarInfo, name: str, layer: str) -> str:
    """A link's target, checked: a symlink's relative target and a hard link's name must stay
    inside the image (an absolute symlink is read inside the image, like in the container)."""
    target = member.linkname
    if member.issym():
        if target.startswith("/"):
            return target
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    else:
        resolved = posixpath.normpath(target.removeprefix("./")) if not target.startswith("/") else "/"
    if resolved == ".." or resolved.startswith("../") or resolved.startswith("/"):
        kind = "symlink" if member.issym() else "hard link"
        raise ImageError(f"layer {layer} of the image has a {kind} {name[:200]!r} -> {target[:200]!r} that leaves the image: refused")
    return target if member.issym() else resolved
