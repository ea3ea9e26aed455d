"""Which files a batch analyzes, what their names and extended attributes say, and how a
compressed core becomes a plain file gdb can open.

Inputs are directories (walked), globs and files. In a directory, a file is taken when its
name is a core's (`core`, `core.PID`, systemd-coredump's `core.COMM.UID.BOOTID.PID.USEC[.zst|.lz4|.xz]`,
apport's `NAME.crash`) or when its first bytes are an ELF core header, so reports or notes lying next to the cores are
left alone while a corrupt `core.1234` is still reported. A file or glob named explicitly is
always taken.

Compression is decided by the file's magic bytes, never by its name, and decompressed as the
one-core form does (coreanalyze.corefile.compressed: streamed into a temporary file, bounded,
with a free-space check).
"""

from __future__ import annotations

import glob
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from coreanalyze.base.errors import BadInput
from coreanalyze.base.safenames import without_controls
from coreanalyze.batch.identity import content_identity
from coreanalyze.corefile.compressed import MAGICS, MAX_CORE_BYTES, decompress_file, decompressed

# systemd-coredump escapes '.', '/' and ' ' in COMM as \xNN, so the fields split cleanly.
SYSTEMD_NAME = re.compile(
    r"^core\.(?P<comm>.+)\.(?P<uid>\d+)\.(?P<boot_id>[0-9a-f]{32})\.(?P<pid>\d+)\.(?P<usec>\d+)"
    r"(?:\.(?P<compression>zst|lz4|xz))?$"
)
PLAIN_NAME = re.compile(r"^core(?:\.(?P<pid>\d+))?$")
# core.NAME.zst as systemd and people name them; NAME.core.zst as `batch --shrink` does.
COMPRESSED_NAME = re.compile(r"^(?:core\..+|.+\.core)\.(?:zst|lz4|xz)$")
# apport's reports (/var/crash/_usr_bin_python3.12.1000.crash); NAME.core.crash as `watch` keeps them.
APPORT_NAME = re.compile(r"^[^.].*\.crash$")

ELF_CORE_HEADER = b"\x7fELF"
ET_CORE = 4

# systemd-coredump's extended attributes that a batch reads (user.coredump.<name>).
XATTR_PREFIX = "user.coredump."
XATTR_FIELDS = ("pid", "uid", "gid", "signal", "timestamp", "rlimit", "hostname", "comm", "exe")
MAX_XATTR_NAMES = 256
MAX_XATTR_CHARS = 1024


_SYSTEMD_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


@dataclass(frozen=True)
class SystemdName:
    comm: str
    uid: int
    boot_id: str
    pid: int
    usec: int
    compression: str | None


@dataclass(frozen=True)
class CoreInput:
    """One file to analyze, with everything known about it before analysis."""

    path: str  # absolute, as found
    size: int
    mtime: float
    compression: str | None  # "zst" | "lz4" | "xz" | "gz" | "crash" (apport) by magic bytes; None for a plain core
    file_identity: str  # identity of the bytes as stored (== the core's for a plain core)
    systemd: SystemdName | None = None
    xattrs: dict[str, str] = field(default_factory=dict)
    found_under: str | None = None  # the directory argument it was found in (None: named itself)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def pid(self) -> int | None:
        for text in (self.xattrs.get("pid"),):
            if text and text.isdigit():
                return int(text)
        if self.systemd:
            return self.systemd.pid
        m = PLAIN_NAME.match(self.name)
        return int(m.group("pid")) if m and m.group("pid") else None

    @property
    def host(self) -> tuple[str | None, str | None]:
        """The crashed machine's name and where it came from: systemd's attribute, else the
        directory it was collected in (a fleet's cores lie in one directory per host): the
        first directory below the argument it was found under, or that argument's own name."""
        if self.xattrs.get("hostname"):
            return self.xattrs["hostname"], "xattr"
        parent = os.path.dirname(self.path)
        if self.found_under:
            relative = os.path.relpath(parent, self.found_under)
            top = relative.split(os.sep)[0] if relative not in (".", "") else os.path.basename(os.path.normpath(self.found_under))
            name = _clean(top, 200)
        else:
            name = _clean(os.path.basename(parent), 200)
        return (name, "directory") if name and name != os.sep else (None, None)

    @property
    def timestamp(self) -> tuple[float, str]:
        """When the process crashed (epoch seconds) and where that came from."""
        text = self.xattrs.get("timestamp", "")
        if text.isdigit():
            return int(text) / 1e6, "xattr"
        if self.systemd:
            return self.systemd.usec / 1e6, "filename"
        return self.mtime, "mtime"

    @property
    def build_hint(self) -> str | None:
        """A cheap guess of which program dumped the core: cores with the same hint go to the
        same worker, whose warm gdb then already holds that program's libraries."""
        return self.xattrs.get("exe") or (self.systemd.comm if self.systemd else None)


# ------------------------------------------------------------------------------ names


def parse_systemd_name(name: str) -> SystemdName | None:
    m = SYSTEMD_NAME.match(name)
    if not m:
        return None
    comm = _SYSTEMD_ESCAPE.sub(lambda e: chr(int(e.group(1), 16)), m.group("comm"))
    return SystemdName(
        comm=_clean(comm),
        uid=int(m.group("uid")),
        boot_id=m.group("boot_id"),
        pid=int(m.group("pid")),
        usec=int(m.group("usec")),
        compression=m.group("compression"),
    )


def looks_like_core_name(name: str) -> bool:
    return bool(PLAIN_NAME.match(name) or SYSTEMD_NAME.match(name) or COMPRESSED_NAME.match(name) or APPORT_NAME.match(name))


def sniff(path: str) -> tuple[str | None, bool]:
    """(compression by magic, is an ELF core) from the first bytes of the file."""
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return None, False
    for magic, name in MAGICS:
        if head.startswith(magic):
            return name, False
    if not head.startswith(ELF_CORE_HEADER) or len(head) < 18:
        return None, False
    byteorder = "big" if head[5:6] == b"\x02" else "little"  # EI_DATA
    return None, int.from_bytes(head[16:18], byteorder) == ET_CORE


# ------------------------------------------------------------------------------ xattrs


def _clean(text: str, limit: int = MAX_XATTR_CHARS) -> str:
    return without_controls(text, limit)


def read_xattrs(path: str) -> dict[str, str]:
    """systemd-coredump's `user.coredump.*` attributes of the file, cleaned; {} when none
    (or when the file system has no extended attributes)."""
    if not hasattr(os, "listxattr"):
        return {}
    try:
        names = os.listxattr(path)
    except OSError:
        return {}
    found: dict[str, str] = {}
    for name in names[:MAX_XATTR_NAMES]:
        if not name.startswith(XATTR_PREFIX):
            continue
        key = name[len(XATTR_PREFIX):]
        if key not in XATTR_FIELDS:
            continue
        try:
            raw = os.getxattr(path, name)
        except OSError:
            continue
        found[key] = _clean(raw.decode("utf-8", errors="replace").strip("\0 \n"))
    return found


# ------------------------------------------------------------------------------ discovery


def describe(path: str, found_under: str | None = None) -> CoreInput:
    """Everything known about one file before analysis (reads its first bytes, its last MiB
    and its extended attributes)."""
    st = os.stat(path)
    compression, _ = sniff(path)
    return CoreInput(
        path=path,
        size=st.st_size,
        mtime=st.st_mtime,
        compression=compression,
        file_identity=content_identity(path),
        systemd=parse_systemd_name(os.path.basename(path)),
        xattrs=read_xattrs(path),
        found_under=found_under,
    )


def walk_cores(directory: str, skip: set[str]) -> Iterator[str]:
    """The files under `directory` taken as cores (see the module docstring), in a stable order."""
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if os.path.realpath(os.path.join(root, d)) not in skip)
        for name in sorted(files):
            path = os.path.join(root, name)
            if not os.path.isfile(path):
                continue
            if looks_like_core_name(name):
                yield path
                continue
            _, is_core = sniff(path)
            if is_core:
                yield path


def discover(arguments: list[str], exclude: list[str] = ()) -> list[CoreInput]:
    """The cores named by directories, globs and files, each once (by real path), in a stable
    order. A path that does not exist or a glob that matches nothing is bad input."""
    skip = {os.path.realpath(p) for p in exclude}
    paths: list[tuple[str, str | None]] = []  # (path, the directory argument it was found under)
    for argument in arguments:
        if os.path.isdir(argument):
            paths.extend((p, os.path.abspath(argument)) for p in walk_cores(argument, skip))
        elif os.path.exists(argument):
            if not os.path.isfile(argument):
                raise BadInput(f"{argument}: not a regular file or directory")
            paths.append((argument, None))
        elif glob.has_magic(argument):
            matches = sorted(glob.glob(argument, recursive=True))
            if not matches:
                raise BadInput(f"{argument}: matches no file")
            for match in matches:
                if os.path.isdir(match):
                    paths.extend((p, os.path.abspath(match)) for p in walk_cores(match, skip))
                elif os.path.isfile(match):
                    paths.append((match, None))
        else:
            raise BadInput(f"{argument}: no such file or directory")
    seen: set[str] = set()
    inputs: list[CoreInput] = []
    for path, under in paths:
        real = os.path.realpath(path)
        if real in seen or any(real == s or real.startswith(s + os.sep) for s in skip):
            continue
        seen.add(real)
        try:
            inputs.append(describe(os.path.abspath(path), under))
        except OSError as e:
            raise BadInput(f"{path}: cannot read: {e.strerror or e}") from None
    return inputs


# ------------------------------------------------------------------------------ decompression


def decompress_to(core: CoreInput, target: str, limit: int = MAX_CORE_BYTES) -> int:
    """Decompress `core` into the file `target`; returns the bytes written (see
    coreanalyze.corefile.compressed)."""
    return decompress_file(core.path, core.compression or "", target, limit)


@contextmanager
def materialized(core: CoreInput, tmp_dir: str | None = None, limit: int = MAX_CORE_BYTES) -> Iterator[str]:
    """A plain core file for `core`: the file itself, or a decompressed temporary copy that is
    removed on exit."""
    with decompressed(core.path, core.compression, tmp_dir, limit) as path:
        yield path
