"""The table of ELF objects the process had mapped, each matched to a local file by build-id.

A frame is only as trustworthy as the file its symbols come from: a library rebuilt or
upgraded since the crash names the wrong functions. Each module's build-id, read from the
core's own memory, is compared with the build-id of the file that would be used here.
"""

from __future__ import annotations

import os
import struct
from typing import Callable

from coreanalyze.base import model
from coreanalyze.base.elfheaders import (
    DT_NEEDED,
    DT_STRTAB,
    PT_DYNAMIC,
    PT_NOTE,
    SHT_DYNAMIC,
    SHT_NOTE,
    ElfHeaderError,
    ElfHeaders,
)
from coreanalyze.base.filecache import PerFileCache, is_regular_file
from coreanalyze.base.filefacts import optional_str, optional_str_list
from coreanalyze.base.rootpaths import file_in_root
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.corefile import NT_GNU_BUILD_ID, CoreNotes, Mapping, parse_notes

DELETED_SUFFIX = " (deleted)"
# Note segments and sections are small; anything bigger is not a real one.
MAX_NOTE_BYTES = 1024 * 1024
MAX_HEADERS_SCANNED = 4096

_build_ids: PerFileCache[str] = PerFileCache("build-ids", decode=optional_str)
_needed: PerFileCache[list[str]] = PerFileCache("needed", decode=optional_str_list)
MAX_NEEDED = 256


def module_table(
    notes: CoreNotes, executable: str | None = None, sysroot: str | None = None
) -> list[model.Module]:
    """Every mapped ELF object, in address order, with its build-id status.

    executable: the local binary to use for the core's executable (replaces its path).
    sysroot: look up every other file under this directory instead of at its own path.
    """
    spans: dict[str, list[Mapping]] = {}
    for m in notes.mappings:
        spans.setdefault(m.path, []).append(m)

    modules: list[model.Module] = []
    for path, mappings in spans.items():
        local_path = _local_path(path, notes.executable, executable, sysroot)
        if not _is_elf_object(notes, path, mappings, local_path):
            continue
        module = model.Module(
            path=path,
            start=min(m.start for m in mappings),
            end=max(m.end for m in mappings),
            build_id=notes.build_ids.get(path),
            local_path=local_path,
        )
        if local_path is not None:
            module.local_build_id = elf_build_id(local_path)
            module.source = "sysroot" if sysroot and local_path != executable else "local"
        module.status = _status(module)
        if module.status == ModuleStatus.NO_BUILD_ID and local_path is not None:
            # Without build-ids the ELF and program headers still tell different files apart
            # (e_shoff and segment sizes move with any change); equal headers prove nothing.
            if _headers_differ(notes, mappings, local_path):
                module.status = ModuleStatus.MISMATCH
        if module.status.trusted_image and local_path is not None:
            module.needed = elf_needed(local_path)
        modules.append(module)
    modules.sort(key=lambda m: m.start or 0)
    return modules


def elf_build_id(path: str | os.PathLike[str]) -> str | None:
    """The GNU build-id of an ELF file on this machine, or None (no file, not ELF, no note).

    Cached per (path, mtime, size) so a file replaced on disk is read again.
    """
    return _build_ids.get(os.fspath(path), _read_build_id)


def elf_needed(path: str) -> list[str] | None:
    """The DT_NEEDED entries of a local ELF file (None when unreadable), cached like build-ids."""
    return _needed.get(path, _read_needed)


def _read_needed(path: str) -> list[str] | None:
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            elf = ElfHeaders(f, os.fstat(f.fileno()).st_size)
            for i in range(min(elf.num_segments(), MAX_HEADERS_SCANNED)):
                p_type, offset, _vaddr, filesz, _align = elf.segment(i)
                if p_type != PT_DYNAMIC:
                    continue
                entries = elf.dynamic_entries(offset) if filesz else []
                wanted = [value for tag, value in entries if tag == DT_NEEDED]
                if not wanted:
                    return []
                string_at = _dynamic_strings(elf, offset, entries)
                if string_at is None:
                    return None
                return [string_at(value) for value in wanted][:MAX_NEEDED]
            return []
    except (OSError, ElfHeaderError, struct.error, ValueError, OverflowError):
        return None


def _dynamic_strings(elf: ElfHeaders, dynamic_offset: int, entries: list[tuple[int, int]]) -> Callable[[int], str] | None:
    """How names in a dynamic table are read: from the string table its section links to, else
    from DT_STRTAB's address, else from the section named .dynstr (None: no table at all)."""
    for i in range(elf.num_sections()):
        sh = elf.section(i)
        elf.section_name(sh[0])  # a section whose name cannot be read makes the file unreadable
        if sh[1] == SHT_DYNAMIC and sh[4] == dynamic_offset:
            linked = elf.section(sh[6])[4]
            return lambda offset: _string(elf, linked + offset, "replace")
    address = next((value for tag, value in entries if tag == DT_STRTAB), None)
    if address is not None:
        found = elf.file_offset(address)
        if found is not None:
            return lambda offset: _string(elf, found + offset, "strict")
    for i in range(elf.num_sections()):
        sh = elf.section(i)
        if elf.section_name(sh[0]) == ".dynstr":
            named = sh[4]
            return lambda offset: _string(elf, named + offset, "replace")
    return None


def _string(elf: ElfHeaders, offset: int, errors: str) -> str:
    raw = elf.cstring(offset)
    return raw.decode("utf-8", errors) if raw else ""


def _read_build_id(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            elf = ElfHeaders(f, os.fstat(f.fileno()).st_size)
            little_endian = elf.little_endian
            # Program headers first: PT_NOTE sits in the first page, so this avoids reading
            # the section table of a huge library. Separate debug files keep it too.
            for i in range(min(elf.num_segments(), MAX_HEADERS_SCANNED)):
                p_type, offset, _vaddr, filesz, align = elf.segment(i)
                if p_type == PT_NOTE:
                    found = _build_id_in(f, offset, filesz, align, little_endian)
                    if found:
                        return found
            for i in range(min(elf.num_sections(), MAX_HEADERS_SCANNED)):
                sh = elf.section(i)
                elf.section_name(sh[0])
                if sh[1] == SHT_NOTE:
                    found = _build_id_in(f, sh[4], sh[5], sh[8], little_endian)
                    if found:
                        return found
    except (OSError, ElfHeaderError, struct.error, ValueError, OverflowError):
        return None
    return None


def _build_id_in(f, offset: int, size: int, align: int, little_endian: bool) -> str | None:
    if size <= 0 or size > MAX_NOTE_BYTES:
        return None
    f.seek(offset)
    data = f.read(size)
    for note in parse_notes(data, align=align, little_endian=little_endian):
        if note.name == "GNU" and note.type == NT_GNU_BUILD_ID and 0 < len(note.desc) <= 64:
            return note.desc.hex()
    return None


def _local_path(path: str, core_executable: str | None, executable: str | None, sysroot: str | None) -> str | None:
    """The file on this machine that stands for a mapped path, or None when there is none."""
    if executable and path == core_executable:
        return executable
    if path.endswith(DELETED_SUFFIX) or not path.startswith("/"):
        # The file was deleted (or replaced) after it was mapped: no local file is the same.
        return None
    if sysroot:
        root = os.path.abspath(sysroot)
        # As the machine's loader resolves it, inside the sysroot (rootpaths.py).
        found = file_in_root(root, path)
        if found is not None:
            return found
        # A path already inside the sysroot names its own file (a program run from an unpacked
        # sysroot, as under qemu-user, loads its modules by such paths).
        inside = os.path.normpath(path)
        return inside if os.path.commonpath([root, inside]) == root and is_regular_file(inside) else None
    return path if is_regular_file(path) else None


def _is_elf_object(notes: CoreNotes, path: str, mappings: list[Mapping], local_path: str | None) -> bool:
    if path in notes.build_ids:
        return True
    first = next((m for m in mappings if m.file_offset == 0), None)
    if first is not None:
        head = notes.memory.read(first.start, 4)
        # Zeros are no header: the loader never writes there, so the page's bytes were lost
        # (a core whose file-backed pages were zero-filled to shrink it).
        if head is not None and head != b"\0\0\0\0":
            return head == b"\x7fELF"
    # The core did not keep the file's first page: ask the local file, if there is one.
    if local_path is not None:
        try:
            with open(local_path, "rb") as f:
                return f.read(4) == b"\x7fELF"
        except OSError:
            return False
    # A deleted file whose header is not in the core: only an executable mapping suggests code.
    return path.endswith(DELETED_SUFFIX) and any(
        (seg := notes.memory.segment_containing(m.start)) is not None and seg.executable for m in mappings
    )


def _headers_differ(notes: CoreNotes, mappings: list[Mapping], local_path: str) -> bool:
    """True when the ELF header and program headers in the core differ from the local file's.

    The loader never writes to these bytes, so any difference means a different file. False
    when they are equal or cannot be compared.
    """
    first = next((m for m in mappings if m.file_offset == 0), None)
    if first is None:
        return False
    fmt = "<" if notes.little_endian else ">"
    header = notes.memory.read(first.start, 64)
    if header is None or not header.startswith(b"\x7fELF") or header[4] != 2:
        return False
    phoff = struct.unpack_from(fmt + "Q", header, 32)[0]
    phentsize, phnum = struct.unpack_from(fmt + "HH", header, 54)
    length = phoff + phentsize * phnum
    if phoff < 64 or length > first.end - first.start or length > MAX_NOTE_BYTES:
        length = 64
    in_core = notes.memory.read(first.start, length)
    if in_core is None:
        return False
    try:
        with open(local_path, "rb") as f:
            on_disk = f.read(length)
    except OSError:
        return False
    return in_core != on_disk


def _status(module: model.Module) -> ModuleStatus:
    if module.local_path is None:
        return ModuleStatus.MISSING
    if module.build_id is None:
        return ModuleStatus.NO_BUILD_ID
    return ModuleStatus.OK if module.build_id == module.local_build_id else ModuleStatus.MISMATCH
