"""Address -> function+offset and file:line, from a module's symbol tables and debug file.

Each ELF file is read once: its lookup index is written to the user cache and later runs map
that index instead of parsing the file again (the 790 MB libtensorflow_cc.so.2 takes seconds
the first time, a millisecond afterwards). Indexes are named by build-id and an index is used
only for the build-id it was built from, built only from a file whose build-id was checked.

Files without a build-id (TensorFlow's wheels ship none) are named by their identity on disk
instead: device, inode, size, times and a hash of their ELF and section headers. Replacing or
rewriting such a file changes the name, so a stale index is never used for it.

Two indexes can describe one module: its separate debug file ("debug": full .symtab and
DWARF lines) and the file itself ("image": .symtab or just .dynsym; lines only when it was
not stripped). The debug file is asked first.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from coreanalyze.base import model
from coreanalyze.base.buildlock import one_builder
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.base.cachesize import DEFAULT_LIMIT_MB
from coreanalyze.base.demangle import demangle
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.corefile.modules import elf_build_id
from coreanalyze.symbols import locate
from coreanalyze.symbols.elfindex import ElfIndexError, build_index
from coreanalyze.symbols.paths import valid_build_id
from coreanalyze.symbols.store import Index, IndexUnusable, write_cache_file

INDEX_DIR = "index-v1"
DEFAULT_CACHE_LIMIT_MB = DEFAULT_LIMIT_MB  # the whole cache's cap (coreanalyze.base.cachesize) bounds its indexes too
NO_BUILD_ID_PREFIX = "nb"  # index names of files without a build-id: "nb" + sha1 of identity
MAX_SECTION_HEADERS_HASHED = 1024 * 1024
# Statuses whose local file is the crashed build (as far as can be told).


@dataclass(frozen=True)
class SymbolInfo:
    name: str | None  # demangled, as shown to people
    raw_name: str | None  # as the symbol table spells it
    offset: int | None  # address - start of the function
    file: str | None = None
    line: int | None = None
    start: int | None = None  # the function's address in the file
    symbol_file: str | None = None  # the file the name came from


@dataclass
class _ModuleIndexes:
    debug: Index | None
    image: Index | None
    debug_file: str | None


class Symbolizer:
    """Names addresses of ELF files. Addresses are the file's own (link-time) virtual addresses.

    opened: every file this instance opened on disk, in order (a lookup answered from cached
    indexes of a file with a build-id leaves it empty); indexed: the files it parsed to build
    an index. warnings: problems met, each said once.
    """

    def __init__(
        self,
        debug_dirs: Sequence[str] = (),
        sysroot: str | None = None,
        *,
        cache: str | os.PathLike[str] | None = None,
        use_disk_cache: bool = True,
        cache_limit_mb: int | None = None,
    ) -> None:
        self.debug_dirs = [os.path.abspath(d) for d in debug_dirs]
        self.sysroot = sysroot
        self.cache_root = Path(cache) if cache is not None else cache_dir()
        self.use_disk_cache = use_disk_cache
        if cache_limit_mb is None:
            try:
                cache_limit_mb = int(os.environ.get("COREANALYZE_CACHE_MAX_MB", DEFAULT_CACHE_LIMIT_MB))
            except ValueError:
                cache_limit_mb = DEFAULT_CACHE_LIMIT_MB
        self.cache_limit = max(0, cache_limit_mb) * 1024 * 1024
        self.opened: list[str] = []
        self.indexed: list[str] = []
        self.warnings: list[str] = []
        self._warnings_taken = 0
        self._modules: dict[tuple, _ModuleIndexes] = {}
        self._debug_files: dict[tuple, str | None] = {}
        self._cache_unwritable = False

    # ------------------------------------------------------------------ public

    def symbolize(self, module_local_path: str | None, build_id: str | None, address: int) -> SymbolInfo | None:
        """Function (and file:line) at address of the file at module_local_path.

        build_id: the build-id the answer must be for (the crashed process's); a file with
        another build-id is not used, a debug file found by build-id still answers. None: the
        file's own build-id, whatever it is.
        """
        module = model.Module(path=module_local_path or "", build_id=build_id, local_path=module_local_path)
        if module_local_path is None:
            module.status = ModuleStatus.MISSING
        elif build_id is None:
            module.build_id = module.local_build_id = self._build_id_of(module_local_path)
            module.status = ModuleStatus.OK if module.build_id else ModuleStatus.NO_BUILD_ID
        else:
            # Taken as the crashed build until an index has to be built from the file: its
            # build-id is checked then (a cached index answers without opening the file).
            module.status = ModuleStatus.OK
        return self.symbolize_module(module, address)

    def symbolize_module(self, module: model.Module, address: int) -> SymbolInfo | None:
        """Like symbolize, for a row of the module table (its status decides what is trusted)."""
        indexes = self._indexes(module)
        found = None
        symbol_source = None
        for index in (indexes.debug, indexes.image):
            if index is not None:
                found = index.symbol(address)
                if found is not None:
                    symbol_source = index.meta.get("source")
                    break
        where = None
        for index in (indexes.debug, indexes.image):
            if index is not None and index.has_lines:
                where = index.line(address)
                if where is not None:
                    break
        if found is None and where is None:
            return None
        name = raw = start = offset = None
        if found is not None:
            start, _size, raw_bytes = found
            raw = raw_bytes.decode("utf-8", "backslashreplace")
            name = demangle(raw)
            offset = address - start
        return SymbolInfo(
            name=name,
            raw_name=raw,
            offset=offset,
            file=where[0] if where else None,
            line=where[1] if where else None,
            start=start,
            symbol_file=symbol_source,
        )

    def debug_file_for(self, module: model.Module, debuglink: object = locate.UNKNOWN) -> str | None:
        """The separate debug file of the module's crashed build (located once per module).

        debuglink: the module's debuglink when already known (None: it has none); left out, it
        is read from the module's file when needed.
        """
        key = (module.path, module.local_path, module.build_id, module.status)
        if key not in self._debug_files:
            self._debug_files[key] = locate.find_debug_file(
                module,
                self.debug_dirs,
                self.sysroot,
                warnings=_Sink(self),
                debuglink=debuglink,
                on_open=self._note_open,
            )
        return self._debug_files[key]

    def index_path(self, key: str, kind: str) -> Path:
        return self.cache_root / INDEX_DIR / key[:2] / f"{key[2:]}.{kind}.idx"

    def close(self) -> None:
        for entry in self._modules.values():
            for index in (entry.debug, entry.image):
                if index is not None:
                    index.close()
        self._modules.clear()

    def __enter__(self) -> Symbolizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ indexes

    def _indexes(self, module: model.Module) -> _ModuleIndexes:
        build_id = valid_build_id(module.build_id)
        image_trusted = module.local_path is not None and module.status.trusted_image
        memo = (build_id, module.status, None if build_id else module.local_path)
        entry = self._modules.get(memo)
        if entry is not None:
            return entry
        key = build_id
        if key is None and image_trusted:
            key = self._identity_key(module.local_path)
        image = self._index(module.local_path, key, build_id, "image") if image_trusted else None
        debug = self._cached(key, "debug") if key else None
        debug_file = debug.meta.get("source") if debug is not None else None
        # A file that was not stripped carries its own lines: no separate debug file is needed.
        if debug is None and not (image is not None and image.has_lines):
            link: object = locate.UNKNOWN
            if image is not None:
                # The index remembers the file's debuglink, so the file is not opened for it.
                recorded = image.meta.get("debuglink")
                link = locate.DebugLink(recorded[0], recorded[1]) if _is_link(recorded) else None
            debug_file = self.debug_file_for(module, debuglink=link)
            if debug_file is not None:
                debug = self._index(debug_file, key, None, "debug")
        entry = _ModuleIndexes(debug=debug, image=image, debug_file=debug_file)
        self._modules[memo] = entry
        return entry

    def _index(self, path: str | None, key: str | None, build_id: str | None, kind: str) -> Index | None:
        """The index of path, from the cache under key when there, else built (and cached).

        build_id: when given, path must have it (checked before anything is built from it).
        """
        if key is not None:
            cached = self._cached(key, kind)
            if cached is not None:
                return cached
        if path is None:
            return None
        if build_id is not None:
            found = self._build_id_of(path)
            if found != build_id:
                self.warn(f"{path} has build-id {found or 'none'}, not {build_id} (the crashed build); its symbols are not used")
                return None
        if key is None or not self.use_disk_cache or self._cache_unwritable:
            return self._build(path, key, kind)
        # Another process (a batch's other worker) may be indexing the same file: one builds,
        # the other then reads what it wrote.
        with one_builder(self.index_path(key, kind)):
            cached = self._cached(key, kind)
            if cached is not None:
                return cached
            return self._build(path, key, kind)

    def _cached(self, key: str, kind: str) -> Index | None:
        if not self.use_disk_cache:
            return None
        path = self.index_path(key, kind)
        if not path.is_file():
            return None
        try:
            index = Index.open(str(path))
        except IndexUnusable as e:
            self.warn(f"ignoring the damaged symbol index {path} ({e}); it is rebuilt")
            return None
        if index.meta.get("key") != key or index.meta.get("kind") != kind:
            # Never answer for one build with the symbols of another.
            index.close()
            self.warn(f"ignoring the symbol index {path}: it was built for another file")
            return None
        try:
            os.utime(path)  # the cache is trimmed least recently used first
        except OSError:
            pass
        return index

    def _build(self, path: str, key: str | None, kind: str) -> Index | None:
        self._note_open(path)
        self.indexed.append(path)
        meta = {"key": key, "kind": kind, "source": os.path.abspath(path)}
        if kind == "image":
            link = locate.read_debuglink(path)
            meta["debuglink"] = [link.name, link.crc] if link is not None else None
        warnings: list[str] = []
        try:
            data = build_index(path, meta, warnings)
        except ElfIndexError as e:
            self.warn(str(e))
            return None
        finally:
            for w in warnings:
                self.warn(w)
        blob = data.to_bytes()
        if key is not None and self.use_disk_cache and not self._cache_unwritable:
            target = self.index_path(key, kind)
            try:
                write_cache_file(str(target), blob)
            except OSError as e:
                self._cache_unwritable = True
                self.warn(
                    f"cannot write the symbol cache under {self.cache_root} ({e.strerror or e}); "
                    "symbols are read again at every run"
                )
            else:
                self._trim_cache(keep=target)
                try:
                    return Index.open(str(target))
                except IndexUnusable:
                    pass
        try:
            return Index(blob, source=os.path.abspath(path))
        except IndexUnusable as e:
            self.warn(f"{path}: its symbol index could not be built ({e})")
            return None

    def _identity_key(self, path: str) -> str | None:
        """A cache name for a file without a build-id: its identity on disk and its headers."""
        self._note_open(path)
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                digest = hashlib.sha1()
                digest.update(repr((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)).encode())
                head = f.read(64)
                digest.update(head)
                if len(head) == 64 and head[:4] == b"\x7fELF" and head[4] == 2:
                    fmt = "<" if head[5] == 1 else ">"
                    shoff = struct.unpack_from(fmt + "Q", head, 40)[0]
                    shentsize, shnum = struct.unpack_from(fmt + "HH", head, 58)
                    length = min(shentsize * shnum, MAX_SECTION_HEADERS_HASHED)
                    if 0 < shoff < st.st_size and length:
                        f.seek(shoff)
                        digest.update(f.read(length))
        except OSError:
            return None
        return NO_BUILD_ID_PREFIX + digest.hexdigest()

    def _trim_cache(self, keep: Path) -> None:
        """Keep the cache under its size limit by removing the least recently used indexes."""
        root = self.cache_root / INDEX_DIR
        entries = []
        total = 0
        try:
            for sub in root.iterdir():
                if not sub.is_dir():
                    continue
                for f in sub.iterdir():
                    if f.suffix != ".idx":
                        continue
                    st = f.stat()
                    entries.append((st.st_mtime, st.st_size, f))
                    total += st.st_size
        except OSError:
            return
        for _mtime, size, f in sorted(entries):
            if total <= self.cache_limit:
                break
            if f == keep:
                continue
            try:
                f.unlink()
                total -= size
            except OSError:
                pass

    # ------------------------------------------------------------------ small helpers

    def _build_id_of(self, path: str) -> str | None:
        self._note_open(path)
        return elf_build_id(path)

    def _note_open(self, path: str) -> None:
        self.opened.append(path)

    def warn(self, message: str) -> None:
        """Record a warning once."""
        if message not in self.warnings:
            self.warnings.append(message)

    def take_warnings(self) -> list[str]:
        """The warnings recorded since the last call (each is handed out once)."""
        fresh = self.warnings[self._warnings_taken :]
        self._warnings_taken = len(self.warnings)
        return fresh


def _is_link(value: object) -> bool:
    return isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int)


class _Sink(list):
    """A list whose appends become the symbolizer's (deduplicated) warnings."""

    def __init__(self, owner: Symbolizer) -> None:
        super().__init__()
        self._owner = owner

    def append(self, item: str) -> None:  # type: ignore[override]
        self._owner.warn(item)
