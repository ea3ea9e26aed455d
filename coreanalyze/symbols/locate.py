"""Find the separate debug file of a module, the way gdb and elfutils lay them out.

Places, in order (the first file whose build-id matches wins):

1. the sysroot's own `/usr/lib/debug/.build-id/xx/rest.debug` (the crashed machine's files);
2. each `--debug-dir DIR`: `DIR/.build-id/xx/rest.debug`;
3. this machine's `/usr/lib/debug/.build-id/xx/rest.debug`;
4. the file's `.gnu_debuglink` name: next to the file, in its `.debug/` directory, and under
   each debug directory (and /usr/lib/debug) followed by the file's own directory;
5. the debuginfod client's cache: `$DEBUGINFOD_CACHE_PATH/<build-id>/debuginfo`.

A debug file is only used when its build-id is the one the crashed process had loaded: a file
of another build describes other code, and is rejected with a warning. For modules without any
build-id the debuglink's CRC32 stands in for it.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

from coreanalyze.base import model
from coreanalyze.base.elfheaders import ElfHeaderError, ElfHeaders
from coreanalyze.base.filecache import PerFileCache, is_regular_file
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.corefile.modules import DELETED_SUFFIX, elf_build_id
from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, build_id_relpath, debuginfod_cache_dirs, under, valid_build_id

MAX_DEBUGLINK_BYTES = 4096
MAX_SECTIONS_SCANNED = 4096

OpenHook = Callable[[str], None]
# "Not read yet" for a debuglink argument, as opposed to None: "the file has none".
UNKNOWN = object()


@dataclass(frozen=True)
class DebugLink:
    """The `.gnu_debuglink` section: the debug file's base name and the CRC32 of its bytes."""

    name: str
    crc: int


def _link_as_fact(link: DebugLink | None) -> list | None:
    return None if link is None else [link.name, link.crc]


def _link_from_fact(raw: object) -> DebugLink | None:
    if raw is None:
        return None
    if isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], str) and type(raw[1]) is int:
        return DebugLink(raw[0], raw[1])
    raise TypeError("not a debug link")


_debuglinks: PerFileCache[DebugLink] = PerFileCache("debug-links", encode=_link_as_fact, decode=_link_from_fact)


def read_debuglink(path: str, on_open: OpenHook | None = None) -> DebugLink | None:
    """The debuglink of an ELF file on this machine, or None (no file, no section, bad name).

    Cached per (path, mtime, size): a batch meets the same libraries in every core.
    """
    if not is_regular_file(path):
        return None
    if on_open is not None:
        on_open(path)
    return _debuglinks.get(path, _read_debuglink)


def _read_debuglink(path: str) -> DebugLink | None:
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            elf = ElfHeaders(f, os.fstat(f.fileno()).st_size)
            for i in range(min(elf.num_sections(), MAX_SECTIONS_SCANNED)):
                sh = elf.section(i)
                if elf.section_name(sh[0]) != ".gnu_debuglink":
                    continue
                size = sh[5]
                if not 5 < size <= MAX_DEBUGLINK_BYTES:
                    return None
                return _parse_debuglink(elf.read(sh[4], size), elf.little_endian)
    except (OSError, ElfHeaderError, struct.error, ValueError, OverflowError):
        return None
    return None


def _parse_debuglink(data: bytes, little_endian: bool) -> DebugLink | None:
    end = data.find(b"\0")
    if end <= 0:
        return None
    crc_at = (end + 4) & ~3  # the name's NUL, padded to 4 bytes, then the CRC
    if crc_at + 4 > len(data):
        return None
    try:
        name = data[:end].decode("utf-8")
    except UnicodeDecodeError:
        return None
    # A debuglink is a base name; anything with a directory in it could point anywhere.
    if "/" in name or name in (".", ".."):
        return None
    crc = struct.unpack_from("<I" if little_endian else ">I", data, crc_at)[0]
    return DebugLink(name, crc)


def file_crc32(path: str, limit: int = 16 * 1024**3) -> int | None:
    """CRC32 of a whole file, as `.gnu_debuglink` records it; None when unreadable or huge."""
    crc = 0
    total = 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1024 * 1024):
                total += len(chunk)
                if total > limit:
                    return None
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None
    return crc & 0xFFFFFFFF


def find_debug_file(
    module: model.Module,
    debug_dirs: Sequence[str] = (),
    sysroot: str | None = None,
    *,
    warnings: list[str] | None = None,
    debuglink: DebugLink | None | object = UNKNOWN,
    on_open: OpenHook | None = None,
) -> str | None:
    """The separate debug file that describes exactly the code the crashed process ran.

    debuglink: the module's debuglink when already known, None when it is known to have none
    (either saves opening the module's file); left out, it is read when needed.
    warnings: receives one line for every debug file found but rejected.
    on_open: called with every file this opens (to account for I/O).
    """
    wanted = valid_build_id(module.build_id) or valid_build_id(module.local_build_id)
    if module.status == ModuleStatus.MISMATCH:
        # The local file is another build: its debuglink names another build's debug file too,
        # but a file found by the crashed build-id is still right.
        wanted = valid_build_id(module.build_id)
        if not wanted:
            # Without the crashed build-id nothing can prove a debug file belongs to it.
            return None
    seen: set[str] = set()
    link_state: dict[str, DebugLink | None] = {}

    def link() -> DebugLink | None:
        if "link" not in link_state:
            found = debuglink if isinstance(debuglink, DebugLink) or debuglink is None else None
            if debuglink is UNKNOWN and module.local_path:
                found = read_debuglink(module.local_path, on_open)
            link_state["link"] = found
        return link_state["link"]

    for candidate, by_link in _candidates(module, wanted, debug_dirs, sysroot, link):
        if not is_regular_file(candidate):
            continue  # most places hold nothing: their paths need no resolving
        real = os.path.realpath(candidate)
        if real in seen:
            continue
        seen.add(real)
        if module.local_path and os.path.realpath(module.local_path) == real:
            continue
        if on_open is not None:
            on_open(candidate)
        if wanted:
            found_id = elf_build_id(real)
            if found_id == wanted:
                return candidate
            if warnings is not None:
                warnings.append(
                    f"debug file {candidate} has build-id {found_id or 'none'}, not {wanted} "
                    f"(the {os.path.basename(module.path)} the process ran); ignored"
                )
            continue
        # No build-id anywhere: only a debuglink's CRC ties a debug file to its module.
        expected = link()
        if by_link and expected is not None:
            crc = file_crc32(real)
            if crc == expected.crc:
                return candidate
            if warnings is not None:
                warnings.append(
                    f"debug file {candidate} does not match {os.path.basename(module.path)} "
                    f"(CRC32 {crc:#010x} vs {expected.crc:#010x} in its .gnu_debuglink); ignored"
                    if crc is not None
                    else f"debug file {candidate} cannot be read; ignored"
                )
    return None


def _candidates(
    module: model.Module,
    build_id: str | None,
    debug_dirs: Sequence[str],
    sysroot: str | None,
    link: Callable[[], DebugLink | None],
) -> Iterator[tuple[str, bool]]:
    """(path, found-through-debuglink) in the order they are tried."""
    rel = build_id_relpath(build_id) if build_id else None
    if rel and sysroot:
        path = under(sysroot, os.path.join(SYSTEM_DEBUG_DIR, rel))
        if path:
            yield path, False
    if rel:
        for d in debug_dirs:
            yield os.path.join(os.path.abspath(d), rel), False
        yield os.path.join(SYSTEM_DEBUG_DIR, rel), False

    found = link()
    if found is not None:
        yield from ((p, True) for p in _debuglink_places(module, found.name, debug_dirs, sysroot))

    if build_id:
        for d in debuginfod_cache_dirs():
            yield str(d / build_id / "debuginfo"), False


def _debuglink_places(module: model.Module, name: str, debug_dirs: Sequence[str], sysroot: str | None) -> Iterator[str]:
    # The directory of the file as used here, and of the file as the crashed process saw it.
    own_dirs: list[str] = []
    if module.local_path:
        own_dirs.append(os.path.dirname(os.path.abspath(module.local_path)))
    if module.path.startswith("/") and not module.path.endswith(DELETED_SUFFIX):
        own = os.path.dirname(module.path)
        if sysroot:
            own = under(sysroot, own) or ""
        if own:
            own_dirs.append(own)
    for d in own_dirs:
        yield os.path.join(d, name)
        yield os.path.join(d, ".debug", name)
    roots = [os.path.abspath(d) for d in debug_dirs]
    if sysroot:
        system = under(sysroot, SYSTEM_DEBUG_DIR)
        if system:
            roots.append(system)
    roots.append(SYSTEM_DEBUG_DIR)
    crashed_dir = os.path.dirname(module.path) if module.path.startswith("/") else None
    local_dir = os.path.dirname(os.path.abspath(module.local_path)) if module.local_path else None
    for root in roots:
        for d in dict.fromkeys(x for x in (crashed_dir, local_dir) if x):
            path = under(root, os.path.join(d, name))
            if path:
                yield path
