"""Is a file the one the core mapped? By build-id, or without one by the first page the core kept.

The loader never writes to a library's first page (ELF header, program headers, and for small
headers the start of the read-only data), so a file whose first page equals the core's is the
same build; a library without build-id whose first page the core did not keep cannot be
verified, and an unverified file is never used.
"""

from __future__ import annotations

import hashlib

from coreanalyze.corefile.modules import elf_build_id
from coreanalyze.process.process import Process

PAGE = 4096


def first_page_in_core(process: Process, path: str) -> bytes | None:
    first = next((m for m in process.mappings if m.path == path and m.file_offset == 0), None)
    if first is None:
        return None
    # The core's page alone: a file's own page would verify itself.
    data = process.read_core(first.start, min(PAGE, first.end - first.start))
    return data if data and data.startswith(b"\x7fELF") else None


def identity(process: Process, path: str) -> str | None:
    """What names this library in the cache: its build-id, else a digest of its first page."""
    build_id = process.build_ids.get(path)
    if build_id:
        return build_id
    page = first_page_in_core(process, path)
    return "page-" + hashlib.sha256(page).hexdigest()[:40] if page else None


def mismatch(process: Process, path: str, candidate: str) -> str | None:
    """None when `candidate` is the file mapped at `path`; else why it is not."""
    build_id = process.build_ids.get(path)
    if build_id:
        found = elf_build_id(candidate)
        return None if found == build_id else f"build-id {found or 'none'} is not the core's {build_id}"
    page = first_page_in_core(process, path)
    if page is None:
        return "the core has neither a build-id nor the first page of this library to check against"
    try:
        with open(candidate, "rb") as f:
            on_disk = f.read(len(page))
    except OSError as e:
        return f"unreadable: {e.strerror}"
    # A library smaller than a page is mapped whole, zeros after its end.
    same = page[: len(on_disk)] == on_disk and not page[len(on_disk) :].strip(b"\0")
    return None if same else "its ELF headers and first page differ from the core's"
