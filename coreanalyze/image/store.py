"""Where an image's files are: a tarball read in place (`docker save`, `podman save`, an OCI
archive) or a directory (an OCI image layout, an unpacked `docker save`).

Both answer the same three questions: which names exist, how big one is, and a seekable
read-only view of its bytes. Names come from the image (untrusted): a directory store never
opens anything outside its root, and a tar store only opens members the tarball holds.
"""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
from typing import BinaryIO

from coreanalyze.image.errors import ImageError

MAX_SMALL_FILE = 16 << 20  # manifests, indexes, configs: JSON of a few KiB


class Section(io.RawIOBase):
    """A read-only, seekable window [offset, offset + size) of a file (a member of a plain tar)."""

    def __init__(self, f: BinaryIO, offset: int, size: int):
        self._f, self._offset, self._size, self._pos = f, offset, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, min(self._size, base + pos))
        return self._pos

    def readinto(self, buffer) -> int:
        wanted = min(len(buffer), self._size - self._pos)
        if wanted <= 0:
            return 0
        self._f.seek(self._offset + self._pos)
        data = self._f.read(wanted)
        buffer[: len(data)] = data
        self._pos += len(data)
        return len(data)


def member_name(name: str) -> str:
    """A tar member's name as a relative path ("./a//b" -> "a/b")."""
    return posixpath.normpath(name.lstrip("/")) if name.strip("/.") else ""


class TarStore:
    def __init__(self, path: str):
        self.path = path
        try:
            self._file = open(path, "rb")
            # "r:*": a plain tar is read in place; a gzip'd `docker save | gzip` works too (slower).
            self._tar = tarfile.open(fileobj=self._file, mode="r:*")
            self._members = {member_name(m.name): m for m in self._tar.getmembers() if m.isfile()}
        except (OSError, tarfile.TarError, EOFError) as e:
            self.close()
            why = (str(e).splitlines() or [type(e).__name__])[0].rstrip(":")
            raise ImageError(f"{path}: not an image (neither a tarball nor an OCI layout directory: {why})") from None

    def has(self, name: str) -> bool:
        return member_name(name) in self._members

    def size(self, name: str) -> int:
        return self._member(name).size

    def open(self, name: str) -> BinaryIO:
        member = self._member(name)
        extracted = self._tar.extractfile(member)
        if extracted is None:
            raise ImageError(f"{self.path}: {name} is not a file")
        if self._tar.fileobj is self._file:
            return io.BufferedReader(Section(self._file, member.offset_data, member.size), 1 << 20)
        return extracted  # a compressed tarball: tarfile's own (slower) view

    def _member(self, name: str) -> tarfile.TarInfo:
        member = self._members.get(member_name(name))
        if member is None:
            raise ImageError(f"{self.path}: the image names {name!r}, which the tarball does not hold")
        return member

    def close(self) -> None:
        for thing in (getattr(self, "_tar", None), getattr(self, "_file", None)):
            if thing is not None:
                thing.close()


class DirStore:
    def __init__(self, path: str):
        self.path = path
        self._root = os.path.realpath(path)

    def _path(self, name: str) -> str:
        candidate = os.path.realpath(os.path.join(self._root, name.lstrip("/")))
        if os.path.commonpath([self._root, candidate]) != self._root:
            raise ImageError(f"{self.path}: the image names {name!r}, outside its directory")
        if not os.path.isfile(candidate):
            raise ImageError(f"{self.path}: the image names {name!r}, which the directory does not hold")
        return candidate

    def has(self, name: str) -> bool:
        try:
            self._path(name)
        except ImageError:
            return False
        return True

    def size(self, name: str) -> int:
        return os.path.getsize(self._path(name))

    def open(self, name: str) -> BinaryIO:
        return open(self._path(name), "rb")

    def close(self) -> None:
        pass


def read_small(store, name: str) -> bytes:
    if store.size(name) > MAX_SMALL_FILE:
        raise ImageError(f"{store.path}: {name} is larger than {MAX_SMALL_FILE >> 20} MiB")
    with store.open(name) as f:
        return f.read()
