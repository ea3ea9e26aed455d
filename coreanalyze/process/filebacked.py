"""What the core does not hold but a file it mapped does: a TFLite model's tensor names and
weights (`Interpreter(model_path=...)` maps the model read-only), a memory-mapped vocabulary.

The kernel leaves unmodified file-backed pages out of a core; the file the core's file list
names is often still there. It is read only when it is reachable and its identity checks out:

- reachable: in the --sysroot, at the path the core names, or beside the core;
- identity: its size fits the mapping (every mapped page lies at least partly in the file: a
  file truncated or rewritten shorter since does not), and every page of the mapping that the core
  does hold (up to CONTENT_PAGES of them) has the same bytes in the file.

Reads are bounded and a path from the core never leaves the sysroot (rootpaths.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from coreanalyze.base.rootpaths import file_in_root
from coreanalyze.corefile.modules import DELETED_SUFFIX
from coreanalyze.process.process import Process

# The name of this tier among the Process's memory tiers (coreanalyze.process.process.Process.tier).
DATA_FILES = "data files"
PAGE = 4096
CONTENT_PAGES = 64
MAX_READ = 1 << 20


@dataclass(frozen=True)
class BackingFile:
    path: str | None  # the file here, when one checked out
    why_not: str | None = None  # when none did: why, in words
    checked: str = ""  # how its identity was checked: "size", "size and N pages of content"


class FileBackedMemory:
    """read(address, size) of file-backed memory from the mapped file, verified once per file."""

    def __init__(self, process: Process, *, sysroot: str | None = None, core_path: str | None = None):
        self._process = process
        self._sysroot = sysroot
        self._beside = os.path.dirname(os.path.abspath(core_path)) if core_path else None
        self._files: dict[str, BackingFile] = {}

    def backing(self, address: int) -> tuple[str, BackingFile] | None:
        """(the mapped path, its file here or why there is none) for a file-backed address."""
        mapping = self._process.mapping_containing(address)
        if mapping is None:
            return None
        if mapping.path not in self._files:
            self._files[mapping.path] = self._find(mapping.path)
        return mapping.path, self._files[mapping.path]

    def read(self, address: int, size: int) -> bytes | None:
        """Exactly `size` bytes at address from the mapped file, or None."""
        data = self._pread(address, size)
        return data if data is not None and len(data) == min(size, MAX_READ) else None

    def cstring(self, address: int, max_len: int = 1024) -> bytes | None:
        """The NUL-terminated bytes at address (a string may end where the file ends)."""
        data = self._pread(address, max_len)
        if data is None:
            return None
        end = data.find(b"\0")
        return data[:end] if end >= 0 else None

    def _pread(self, address: int, size: int) -> bytes | None:
        found = self.backing(address)
        if found is None or found[1].path is None:
            return None
        mapping = self._process.mapping_containing(address)
        size = max(0, min(size, MAX_READ, mapping.end - address))
        try:
            with open(found[1].path, "rb") as f:
                return os.pread(f.fileno(), size, mapping.file_offset + (address - mapping.start))
        except (OSError, OverflowError, ValueError):
            return None

    def _places(self, path: str) -> list[str]:
        places = []
        if self._sysroot:
            found = file_in_root(self._sysroot, path)
            if found:
                places.append(found)
        places.append(path)
        if self._beside:
            places.append(os.path.join(self._beside, os.path.basename(path)))
        return list(dict.fromkeys(places))

    def _find(self, path: str) -> BackingFile:
        if path.endswith(DELETED_SUFFIX) or not path.startswith("/"):
            return BackingFile(None, "the file was deleted or replaced after the process mapped it")
        mappings = [m for m in self._process.mappings if m.path == path]
        reasons = []
        for place in self._places(path):
            if not os.path.isfile(place):
                continue
            checked = _identity(self._process, mappings, place)
            if checked.path is not None:
                return checked
            reasons.append(f"{place}: {checked.why_not}")
        if reasons:
            return BackingFile(None, "; ".join(reasons))
        return BackingFile(None, f"{path} is not here (nor under the sysroot or beside the core)")


def data_files(process: Process, *, sysroot: str | None = None, core_path: str | None = None) -> FileBackedMemory:
    """The Process's tier of content-verified data files, registered on first use; it is read
    only by the readers that ask for it (a TFLite model's tensors), never by Process.read."""
    tier = process.tier(DATA_FILES)
    if not isinstance(tier, FileBackedMemory):
        tier = FileBackedMemory(process, sysroot=sysroot, core_path=core_path)
        process.add_memory_tier(DATA_FILES, tier, default=False)
    return tier


def _identity(process: Process, mappings, place: str) -> BackingFile:
    try:
        size = os.path.getsize(place)
    except OSError as e:
        return BackingFile(None, f"unreadable ({e.strerror})")
    end = max(m.file_offset + (m.end - m.start) for m in mappings)
    # Mapped lengths are whole pages: the file reaches into the mapping's last page (a file
    # mapped whole ends there; one mapped in part may go on).
    if size <= end - PAGE:
        return BackingFile(None, f"its size ({size} bytes) does not fit the mapping ({end} bytes mapped)")
    compared = 0
    try:
        with open(place, "rb") as f:
            for m in mappings:
                for start in range(m.start, m.end, PAGE):
                    if compared >= CONTENT_PAGES:
                        break
                    held = process.read_core(start, min(PAGE, m.end - start))  # a file's own page would match itself
                    if held is None:
                        continue
                    on_disk = os.pread(f.fileno(), len(held), m.file_offset + (start - m.start))
                    # Beyond the end of the file a mapped page reads as zeros.
                    if held[: len(on_disk)] != on_disk or held[len(on_disk) :].strip(b"\0"):
                        return BackingFile(None, f"its bytes differ from the core's page at 0x{start:x}")
                    compared += 1
    except OSError as e:
        return BackingFile(None, f"unreadable ({e.strerror})")
    how = f"size and {compared} pages of content" if compared else "size"
    return BackingFile(place, None, how)
