"""Huge libraries without their symbol tables, for gdb: cached copies and a sysroot serving them.

gdb reads every ELF symbol of every library when it opens a core; for libtensorflow_cc.so.2
(1.2 million symbols) that alone is seconds and a gigabyte. Such a library is given to gdb as a
copy whose symbol tables (.symtab and .dynsym) are hidden: same bytes at the same offsets
(code, unwind tables, data), only the section types that make them symbol tables are changed
and the non-allocated .symtab/.strtab contents left out (holes in a sparse file). gdb then
unwinds through the copy exactly as through the original, and names what it needs through the
small symbol files of coreanalyze.gdb.libcopies.symbolfiles.

Copies are cached per library in the user cache (`$COREANALYZE_CACHE_DIR` or
`~/.cache/coreanalyze`), named by build-id (or, for the many wheels without one, by the file's
identity on disk) plus a hash of its headers, so a rebuilt or replaced library gets a new copy.
Each entry is written into a temporary directory and renamed into place: readers see a whole
entry or none. The entry also keeps the library's symbols in address order.

gdb finds libraries through `set sysroot`; the sysroot here is a directory of symbolic links
that mirrors, under the very names the core uses (the kernel's file mappings and the loader's
`l_name`s, `..` included), the files of this machine, except that the huge libraries point to
their copies. Everything else gdb opens is the same file as without it.

Only libraries whose symbols are all gdb would read qualify: no debug data but a little DWARF
(up to MAX_CARRIED_DWARF: a copy keeps it in place, a library gdb does not read has it carried in
its first symbol file), no separate debug file, x86_64 (where gdb's made-up PLT names are
reproduced).

Most analyses need no copy at all (`copies=False`, the analysis's way whenever gdb reads only
the libraries it is told to, coreanalyze.gdb.libraries): gdb is never asked to read such a
library, yet it still maps the library's sections (its code and data are read from the file
itself), and the small symbol file and the unwind entries are added beside it as object files
of their own. The cache then keeps only the library's symbols in address order (about 4 bytes
a symbol, under `libsymbols-v1/`), where a copy took the library's size (0.7 GB for
TensorFlow). Copies remain for cores whose libraries gdb reads all (those placed from the
loader's list).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import tempfile
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from coreanalyze.base import background, later, model
from coreanalyze.base.atomicfile import write_atomically
from coreanalyze.base.cachedir import cache_dir
from coreanalyze.base.elfheaders import ElfHeaderError, ElfHeaders
from coreanalyze.base.filecache import BoundedCache, PerFileCache, file_identity
from coreanalyze.base.filefacts import whole_int
from coreanalyze.gdb.libcopies.errors import LibraryCopyError
from coreanalyze.gdb.libcopies.selection import OutsideSelection, SymbolColumns, SymbolSelection
from coreanalyze.gdb.libcopies.symbolfiles import (
    CARRIED_DEBUG_PREFIXES,
    EM_X86_64,
    MAX_SECTIONS,
    SHT_DYNSYM,
    SHT_NOBITS,
    SHT_PROGBITS,
    SHT_STRTAB,
    SHT_SYMTAB,
    SYM_SIZE,
    ElfLayout,
    ElfSymbol,
    LibrarySymbols,
    SymbolOrder,
    carried_dwarf_size,
    plt_layout_known,
    sort_symbols_in,
)  # fmt: skip
from coreanalyze.gdb.libcopies.unwindtables import UnwindTable, usable_table
from coreanalyze.process.process import Process
from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, under, valid_build_id

FORMAT = 3  # 3: .eh_frame without contents too (unwindtables.py)
LIBRARIES_DIR = f"fastlibs-v{FORMAT}"
SYMBOLS_DIR = "libsymbols-v1"  # entries without a copy: the symbol order alone
SYSROOTS_DIR = f"sysroots-v{FORMAT}"
META = "meta.json"
ORDER = "symbols.order"
ORDER_META = "symbols.order.json"
ABSENT_SUFFIX = ".absent.json"  # next to a sysroot: the files missing when it was made
# A library with fewer symbols costs gdb little; it is loaded as it is.
MIN_SYMBOLS = 2_000
# Bytes of DWARF a fast library's symbol files carry at most (the first of each core's).
MAX_CARRIED_DWARF = 16 << 20
# Sections that give gdb names or lines beyond the ELF symbol tables.
DEBUG_SECTION_PREFIXES = (".debug_", ".zdebug_", ".gnu_debugdata", ".ctf", ".stab", ".mdebug", ".gdb_index", ".debug")
DEFAULT_CACHE_LIMIT_MB = 8192
CACHE_LIMIT_VARIABLE = "COREANALYZE_FASTLIBS_MAX_MB"
IN_USE_SECONDS = 3600
SYSROOTS_KEPT = 32
MAX_PATHS = 20_000
PT_LOAD = 1
ET_DYN = 3
COPY_CHUNK = 1 << 30
# A first run's selections around the addresses to name: this far each way at first (most
# functions are shorter; a window spans the function and the one below it), then wider.
FIRST_REACH = 64 << 10
REACH_GROWTH = 16
MAX_REACH = 64 << 20  # then the whole table is sorted


@dataclass
class FastLibrary:
    """One huge library of the core, served to gdb as a copy without symbol tables."""

    path: str  # the path the core recorded
    local_path: str  # the file on this machine
    copy: str  # the cached copy gdb opens; without copies, the file itself (never read whole)
    entry: str  # its cache directory
    layout: ElfLayout
    base: int | None = None  # run-time minus link-time address (the loader's l_addr)
    _symbols: LibrarySymbols | None = field(default=None, repr=False)
    _ordering: background.Job[SymbolOrder] | None = field(default=None, repr=False)
    _columns: SymbolColumns | None = field(default=None, repr=False)  # a first run's selections read it
    _preselected: background.Job[SymbolSelection] | None = field(default=None, repr=False)
    _unwind: UnwindTable | bool | None = field(default=None, repr=False)  # False: not served

    @property
    def unwind(self) -> UnwindTable | None:
        """The library's unwind entries when its copy hides them (see write_copy), else None."""
        if self._unwind is None:
            self._unwind = usable_table(self.layout, self.local_path) or False
        return self._unwind or None

    def contains(self, address: int) -> bool:
        return self.base is not None and self.layout.section_at(address - self.base) is not None

    def order_in_background(self) -> None:
        """Sort the symbols (first use of a library) in a thread: the sort holds the
        interpreter for a fraction of a second, which gdb's own work can hide."""
        if self._ordering is None and not os.path.isfile(os.path.join(self.entry, ORDER_META)):
            # A failed sort leaves no result: symbols() then sorts again and reports.
            self._ordering = background.start("symbol-order", write_order, self.layout, self.entry)

    def windows(self, addresses: Iterable[int]) -> list[ElfSymbol]:
        """The symbols gdb consults to name each link-time address, in address order. A first
        run sorts nothing: the symbols near the addresses are selected from the table (each
        selection wider than the last where a window reached past one), and the whole order is
        left to be made for the next runs."""
        wanted = sorted(set(addresses))
        if self._symbols is None and self._ordering is None and load_order(self.entry) is None:
            found = self._selected_windows(wanted)
            if found is not None:
                later.add(f"symbol order of {self.entry}", write_order, self.layout, self.entry)
                return [symbol for address in wanted for symbol in found[address]]
        table = self.symbols()
        return [symbol for address in wanted for symbol in table.window(address)]

    def select_in_background(self, addresses: Iterable[int]) -> None:
        """Select the symbols near these link-time addresses (those the threads reach) in a
        thread, while gdb loads the core: most addresses it will name are among them."""
        if self._preselected is None and not os.path.isfile(os.path.join(self.entry, ORDER_META)):
            self._preselected = background.start("symbol-selection", self._selection, sorted(set(addresses)), FIRST_REACH)

    def _selection(self, addresses: list[int], reach: int) -> SymbolSelection:
        if self._columns is None:
            symtab = self.layout.first_of_type(SHT_SYMTAB)
            if symtab is None:
                raise LibraryCopyError(f"{self.layout.path} has no symbol table")
            self._columns = SymbolColumns(self.layout.path, symtab.offset, symtab.size)
        return SymbolSelection(self._columns, addresses, reach)

    def _selected_windows(self, wanted: list[int], reach: int = FIRST_REACH) -> dict[int, list[ElfSymbol]] | None:
        found: dict[int, list[ElfSymbol]] = {}
        pending = wanted
        prepared = self._preselected.result() if self._preselected is not None else None
        if prepared is not None:
            pending = self._windows_in(prepared, pending, found)
        try:
            while pending and reach <= MAX_REACH:
                pending, reach = self._windows_in(self._selection(pending, reach), pending, found), reach * REACH_GROWTH
        except LibraryCopyError:
            return None
        return None if pending else found

    def _windows_in(self, selection: SymbolSelection, addresses: list[int], found: dict[int, list[ElfSymbol]]) -> list[int]:
        """Windows of the addresses the selection holds, into found; the addresses it does not."""
        missed = []
        with LibrarySymbols(self.layout, selection) as table:
            for address in addresses:
                try:
                    found[address] = table.window(address)
                except OutsideSelection:
                    missed.append(address)
        return missed

    def symbols(self) -> LibrarySymbols:
        if self._symbols is None:
            sorted_ = self._ordering.result() if self._ordering is not None else None
            order = sorted_ or load_order(self.entry)
            if order is None:
                order = write_order(self.layout, self.entry)
            self._symbols = LibrarySymbols(self.layout, order)
        return self._symbols

    def close(self) -> None:
        if self._ordering is not None:
            self._ordering.wait()
        if self._preselected is not None:
            self._preselected.wait()
        if self._symbols is not None:
            self._symbols.close()
            self._symbols = None
        if self._columns is not None:
            self._columns.close()
            self._columns = None
        if self._unwind:
            self._unwind.close()
        self._unwind = None


@dataclass
class FastLibraries:
    """What gdb gets for one core: its sysroot and the libraries replaced there."""

    sysroot: str | None  # the sysroot gdb is given (the caller's own when nothing is copied)
    libraries: list[FastLibrary]
    warnings: list[str] = field(default_factory=list)
    copied: bool = True  # False: gdb must not read these libraries; their files stand alone beside them
    _identities: set | None = field(default=None, repr=False)  # the libraries' files on disk (served)

    def served(self, name: str) -> bool:
        """Whether gdb's library name (as `info sharedlibrary` lists it) is one of these libraries."""
        identity = _identity(name)
        if identity is None:
            return False
        if self._identities is None:
            self._identities = {_identity(lib.local_path) for lib in self.libraries}
        return identity in self._identities

    def library_at(self, address: int) -> FastLibrary | None:
        return next((lib for lib in self.libraries if lib.contains(address)), None)

    def order_in_background(self, reached: Sequence[int] | None = None) -> None:
        """Sort the symbols of libraries met for the first time, in threads. Best called when
        the caller is about to wait for gdb: the sort holds the interpreter for a while.
        reached: only the libraries holding one of these addresses (the others are sorted when
        a frame turns out to need them)."""
        for lib in self.libraries:
            if reached is None or any(lib.contains(a) for a in reached):
                lib.order_in_background()

    def select_in_background(self, reached: Sequence[int]) -> None:
        """A first run's selections around the addresses the threads reach, in threads (see
        FastLibrary.select_in_background)."""
        for lib in self.libraries:
            near = [a - lib.base + d for a in reached if lib.contains(a) for d in (0, -1)] if lib.base is not None else []
            if near:
                lib.select_in_background(near)

    def close(self) -> None:
        for lib in self.libraries:
            lib.close()


# --------------------------------------------------------------------------- planning


def plan_fast_libraries(
    process: Process,
    modules: Sequence[model.Module],
    *,
    sysroot: str | None = None,
    debug_dirs: Sequence[str] = (),
    cache_root: str | os.PathLike[str] | None = None,
    min_symbols: int = MIN_SYMBOLS,
    copies: bool = True,
) -> FastLibraries | None:
    """The fast libraries of a core, or None when none qualifies (gdb then loads all as they are).

    debug_dirs: the directories gdb searches for separate debug files; a library with one is
    left alone (gdb reads its DWARF, which a copy would not change). copies: False when gdb will
    read only the libraries it is told to (coreanalyze.gdb.libraries), which then leave these
    out: nothing is copied. Any failure is a LibraryCopyError.
    """
    try:
        return _plan(process, modules, sysroot, debug_dirs, cache_root, min_symbols, copies)
    except (OSError, ValueError, struct.error) as e:
        raise LibraryCopyError(str(e)) from e


def _plan(process: Process, modules, sysroot, debug_dirs, cache_root, min_symbols, copies=True) -> FastLibraries | None:
    root = os.fspath(cache_root) if cache_root is not None else str(cache_dir())
    executable = process.executable
    chosen: list[FastLibrary] = []
    warnings: list[str] = []
    for module in modules:
        if module.path == executable or module.local_path is None or not module.status.trusted_image:
            continue
        layout = _candidate_layout(module.local_path, min_symbols)
        if layout is None or has_debug_file(layout, module.path, debug_dirs):
            continue
        if not copies:
            if _stands_alone(module.path, layout):
                entry = symbols_entry(module.local_path, layout, root)
                served = module.local_path  # gdb opens the library itself, and reads none of it
                chosen.append(FastLibrary(path=module.path, local_path=served, copy=served, entry=entry, layout=layout))
            continue
        try:
            entry, copy = cached_copy(module.local_path, layout, root)
        except (LibraryCopyError, OSError) as e:
            warnings.append(f"{module.path} is loaded whole ({e})")
            continue
        chosen.append(FastLibrary(path=module.path, local_path=module.local_path, copy=copy, entry=entry, layout=layout))
    if not chosen:
        return None
    loaded = process.loaded_libraries
    if not loaded:
        return None  # without the loader's names gdb could not find the copies
    by_identity = {_identity(lib.local_path): lib for lib in chosen}
    by_identity.pop(None, None)
    for item in loaded:
        identity = _identity(_local(item.name, sysroot))
        lib = by_identity.get(identity) if identity is not None else None
        if lib is not None and lib.base is None:
            lib.base = item.base
    chosen = [lib for lib in chosen if lib.base is not None]
    if not chosen:
        return None
    if not copies:
        return FastLibraries(sysroot=sysroot, libraries=chosen, warnings=warnings, copied=False)
    paths = [m.path for m in process.mappings] + [item.name for item in loaded]
    try:
        farm = build_sysroot(paths, {os.path.realpath(lib.local_path): lib.copy for lib in chosen}, root, sysroot)
    except OSError as e:
        warnings.append(f"large libraries are loaded whole: cannot prepare gdb's sysroot ({e.strerror or e})")
        return None
    return FastLibraries(sysroot=farm, libraries=chosen, warnings=warnings)


# The verdicts of _candidate_layout, per file version: a batch meets the same ~100 libraries
# in every core, and most are ruled out by reading their headers.
_candidates: BoundedCache[tuple, ElfLayout | None] = BoundedCache(4096)


def _candidate_layout(path: str, min_symbols: int) -> ElfLayout | None:
    """The layout of a library whose symbols could all be served from a copy's symbol files
    (_qualifies), else None. Kept per file identity: a file replaced is read again."""
    identity = file_identity(path)
    if identity is None:
        return None
    return _candidates.get((path, identity, min_symbols), lambda: _read_candidate(path, identity[2], min_symbols))


def _read_candidate(path: str, size: int, min_symbols: int) -> ElfLayout | None:
    if size < min_symbols * SYM_SIZE or not _may_qualify(path, min_symbols):
        return None  # too small for that many symbols, or no symbol table that large
    try:
        layout = ElfLayout.read(path)
    except (OSError, LibraryCopyError):
        return None
    return layout if _qualifies(layout, min_symbols) else None


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _may_qualify(path: str, min_symbols: int) -> bool:
    """A first look at the headers alone: a little-endian 64-bit x86-64 shared object whose
    first symbol table is large enough (most libraries of a process are not)."""
    count = _symbol_count.get(path, _read_symbol_count)
    return count is not None and count >= 0 and count >= min_symbols


# The entries of a library's first symbol table (-1: none, or not an x86-64 shared object),
# kept from one run to the next: a process's ~150 libraries are looked at on every analysis.
_symbol_count: PerFileCache[int] = PerFileCache("symbol-table-entries", decode=whole_int)


def _read_symbol_count(path: str) -> int:
    try:
        with open(path, "rb") as f:
            elf = ElfHeaders(f, os.fstat(f.fileno()).st_size)
            if not (elf.is64 and elf.little_endian and elf.e_machine == EM_X86_64 and elf.e_type == ET_DYN):
                return -1
            for i in range(min(elf.num_sections(), MAX_SECTIONS)):
                sh = elf.section(i)
                if sh[1] == SHT_SYMTAB:
                    return sh[5] // SYM_SIZE
    except (OSError, ElfHeaderError, struct.error, ValueError, OverflowError):
        return -1
    return -1


def _qualifies(layout: ElfLayout, min_symbols: int) -> bool:
    if layout.machine != EM_X86_64 or struct.unpack_from("<H", layout.header, 16)[0] != ET_DYN:
        return False
    symtab = layout.first_of_type(SHT_SYMTAB)
    if symtab is None or symtab.size // SYM_SIZE < min_symbols or not layout.has_contents(symtab):
        return False
    # A little DWARF travels in the symbol files (symbolfiles.CARRIED_DEBUG_PREFIXES); a library
    # built with debug info, or with debug data gdb would read otherwise, is read whole.
    if carried_dwarf_size(layout) > MAX_CARRIED_DWARF:
        return False
    return not any(s.name.startswith(DEBUG_SECTION_PREFIXES) and not s.name.startswith(CARRIED_DEBUG_PREFIXES) for s in layout.sections)


def has_debug_file(layout: ElfLayout, path: str, debug_dirs: Sequence[str]) -> bool:
    """Whether gdb would find a separate debug file for the library: by build-id under a debug
    directory, or by its debuglink next to it, in its .debug/ or under a debug directory."""
    dirs = [*debug_dirs, SYSTEM_DEBUG_DIR]
    build_id = valid_build_id(_build_id(layout))
    if build_id and any(os.path.exists(os.path.join(d, ".build-id", build_id[:2], build_id[2:] + ".debug")) for d in dirs):
        return True
    name = _debuglink(layout)
    if not name:
        return False
    here = os.path.dirname(layout.path)
    places = [here, os.path.join(here, ".debug")]
    for d in dirs:
        places += [d + os.path.dirname(path), d + here]
    return any(os.path.exists(os.path.join(p, name)) for p in places)


def _section_bytes(layout: ElfLayout, name: str, limit: int = 4096) -> bytes | None:
    """The contents of a small section on disk (a note, a link name); None when absent, empty on
    disk or larger than `limit` (not the small section it should be)."""
    section = layout.by_name(name)
    if section is None or not layout.has_contents(section) or section.size > limit:
        return None
    with open(layout.path, "rb") as f:
        f.seek(section.offset)
        return f.read(section.size)


def _debuglink(layout: ElfLayout) -> str | None:
    data = _section_bytes(layout, ".gnu_debuglink")
    name = data.split(b"\0", 1)[0].decode("utf-8", "replace") if data else ""
    return name if name and "/" not in name else None


def _local(path: str, sysroot: str | None) -> str:
    """The file here that stands for a path of the crashed machine."""
    if sysroot:
        return under(sysroot, path) or os.path.join(sysroot, "nonexistent")
    return path


# --------------------------------------------------------------------------- cached copies


def library_key(path: str, layout: ElfLayout) -> str:
    """The cache name of a library: build-id (or identity on disk) + a hash of its headers."""
    st = os.stat(path)
    digest = hashlib.sha1()
    digest.update(layout.header)
    for s in layout.sections:
        digest.update(struct.pack("<IIQQQQ", s.type, s.flags, s.addr, s.offset, s.size, s.link))
    build_id = valid_build_id(_build_id(layout))
    if build_id is None:
        digest.update(repr((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)).encode())
        return "nb" + digest.hexdigest()
    return f"{build_id}-{digest.hexdigest()[:16]}"


def _build_id(layout: ElfLayout) -> str | None:
    data = _section_bytes(layout, ".note.gnu.build-id")
    if data is None or len(data) < 16:
        return None
    namesz, descsz, kind = struct.unpack_from("<III", data, 0)
    start = 12 + ((namesz + 3) & ~3)
    if kind != 3 or data[12 : 12 + namesz] != b"GNU\0" or start + descsz > len(data):
        return None
    return data[start : start + descsz].hex()


def _stands_alone(path: str, layout: ElfLayout) -> bool:
    """Whether gdb can do without reading the library at all: its unwind entries can be served
    (gdb gets them from no other place), its PLT names reproduced, and it is none of the
    libraries gdb looks symbols up in by name (the C library and the loader)."""
    import fnmatch

    from coreanalyze.gdb.libraries import ALWAYS_READ

    if any(fnmatch.fnmatchcase(os.path.basename(path), p) for p in ALWAYS_READ):
        return False
    return bool(_servable.get(layout.path, lambda _path: plt_layout_known(layout) and unwind_hidden(layout)))


def _a_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError("not a verdict")
    return value


# Whether a library's PLT names and unwind entries can be served (_stands_alone), per file
# version, kept from one run to the next: reading the PLT costs ~45 ms for a TensorFlow core's
# libraries on every run, for the same answer.
_servable: PerFileCache[bool] = PerFileCache("servable-without-copy", decode=_a_bool)


def symbols_entry(path: str, layout: ElfLayout, root: str) -> str:
    """The cache entry of a library given to gdb without a copy: it holds the symbol order
    (write_order) and is keyed like a copy (build-id and headers), so that two builds of a
    library (two TensorFlow versions) never share one. Made when the order is first written."""
    key = library_key(path, layout)
    entry = os.path.join(root, SYMBOLS_DIR, key[:2], key[2:])
    _touch(entry)
    return entry


def cached_copy(path: str, layout: ElfLayout, root: str) -> tuple[str, str]:
    """(cache entry, copy) of a library, made on first use."""
    key = library_key(path, layout)
    entry = os.path.join(root, LIBRARIES_DIR, key[:2], key[2:])
    copy = os.path.join(entry, os.path.basename(path))
    if _entry_ok(entry, copy, key):
        _touch(entry)
        return entry, copy
    if not plt_layout_known(layout):
        raise LibraryCopyError("its PLT has a layout gdb's names for it cannot be reproduced from")
    os.makedirs(os.path.dirname(entry), mode=0o700, exist_ok=True)
    _trim_libraries(os.path.join(root, LIBRARIES_DIR), incoming=layout.file_size)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.dirname(entry))
    try:
        write_copy(layout, os.path.join(tmp, os.path.basename(path)))
        meta = {"format": FORMAT, "key": key, "source": os.path.abspath(path)}
        with open(os.path.join(tmp, META), "w") as f:
            json.dump(meta, f)
        try:
            os.rename(tmp, entry)
        except OSError:
            if not _entry_ok(entry, copy, key):
                raise
            # Another run made the same entry meanwhile; theirs is as good.
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return entry, copy


def _entry_ok(entry: str, copy: str, key: str) -> bool:
    try:
        with open(os.path.join(entry, META)) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("key") == key and os.path.isfile(copy)


def _touch(entry: str) -> None:
    try:
        os.utime(os.path.join(entry, META))  # entries are trimmed least recently used first
    except OSError:
        pass
    try:
        os.utime(entry)  # the whole cache's trim (coreanalyze.base.cachesize) goes by the entry's time
    except OSError:
        pass


def write_copy(layout: ElfLayout, target: str) -> None:
    """The library with its symbol tables hidden; every other byte where it was."""
    hidden = [s for s in layout.sections if s.type in (SHT_SYMTAB, SHT_DYNSYM)]
    holes = []
    for s in hidden:
        if s.type == SHT_SYMTAB:
            holes.append((s.offset, s.offset + s.size))
            strtab = layout.sections[s.link] if 0 < s.link < len(layout.sections) else None
            if strtab is not None and strtab.type == SHT_STRTAB and not strtab.alloc:
                holes.append((strtab.offset, strtab.offset + strtab.size))
    loads = _load_ranges(layout)
    table = (layout.shoff, layout.shoff + len(layout.sections) * 64)
    for lo, hi in holes:
        if any(lo < end and start < hi for start, end in [*loads, table]):
            raise LibraryCopyError("its symbol table overlaps what the process mapped")
    hide_unwind = unwind_hidden(layout)
    headers = bytearray()
    for s in layout.sections:
        sh_type = SHT_PROGBITS if s.type in (SHT_SYMTAB, SHT_DYNSYM) else s.type
        if hide_unwind and s.name == ".eh_frame":
            # Without contents gdb reads none of it (as in a separate debug file); the entries a
            # core needs come with its symbol files, which gdb places by this section's name.
            sh_type = SHT_NOBITS
        headers += struct.pack(
            "<IIQQQQIIQQ", _name_offset(layout, s), sh_type, s.flags, s.addr, s.offset, s.size, s.link, s.info, s.align, s.entsize
        )
    with open(layout.path, "rb") as src, open(target, "wb") as dst:
        dst.truncate(layout.file_size)
        position = 0
        for lo, hi in sorted(holes) + [(layout.file_size, layout.file_size)]:
            if lo > position:
                _copy_range(src.fileno(), dst.fileno(), position, lo)
            position = max(position, hi)
        dst.seek(layout.shoff)
        dst.write(headers)


def unwind_hidden(layout: ElfLayout) -> bool:
    """Whether the copy of this library hides its .eh_frame: when the entries a core needs can
    be served from its .eh_frame_hdr instead."""
    table = usable_table(layout)
    if table is None:
        return False
    table.close()
    return True


def _name_offset(layout: ElfLayout, section) -> int:
    with open(layout.path, "rb") as f:
        f.seek(layout.shoff + section.index * 64)
        return struct.unpack("<I", f.read(4))[0]


def _load_ranges(layout: ElfLayout) -> list[tuple[int, int]]:
    phoff = struct.unpack_from("<Q", layout.header, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", layout.header, 54)
    if phentsize != 56 or phnum > 4096:
        raise LibraryCopyError("unusual program headers")
    with open(layout.path, "rb") as f:
        f.seek(phoff)
        raw = f.read(phnum * 56)
    out = []
    for i in range(len(raw) // 56):
        p_type, _flags, offset, _vaddr, _paddr, filesz, _memsz, _align = struct.unpack_from("<IIQQQQQQ", raw, i * 56)
        if p_type == PT_LOAD:
            out.append((offset, offset + filesz))
    return out


def _copy_range(src: int, dst: int, start: int, end: int) -> None:
    """Copy bytes [start, end) at the same offset, in the kernel when it can."""
    offset = start
    while offset < end:
        try:
            done = os.copy_file_range(src, dst, min(COPY_CHUNK, end - offset), offset, offset)
        except OSError:
            done = 0
        if done <= 0:
            data = os.pread(src, min(1 << 24, end - offset), offset)
            if not data:
                raise LibraryCopyError("the library is shorter than its headers say")
            done = os.pwrite(dst, data, offset)
        offset += done


_sorting = threading.Lock()


def _unlock_sorting_in_child() -> None:
    # A process forked while another thread sorted (later.detach) would find the lock held.
    global _sorting
    _sorting = threading.Lock()


os.register_at_fork(after_in_child=_unlock_sorting_in_child)


def write_order(layout: ElfLayout, entry: str) -> SymbolOrder:
    """Sort the library's symbols by address and keep the result in its cache entry."""
    symtab = layout.first_of_type(SHT_SYMTAB)
    if symtab is None:
        raise LibraryCopyError(f"{layout.path} has no symbol table")
    # One sort at a time: each holds the interpreter anyway, and side by side (a core's libraries
    # are sorted in threads) their memory would add up at the first run's peak.
    with _sorting, open(layout.path, "rb") as f:
        order = sort_symbols_in(f, symtab.offset, symtab.size)
    try:
        os.makedirs(entry, mode=0o700, exist_ok=True)
        # The order first, then the small file that makes it valid: a reader never sees half.
        write_atomically(os.path.join(entry, ORDER), array("I", order.order).tobytes())
        lowest = {"count": len(order.order), "lowest": order.lowest, "lowest_sized": order.lowest_sized}
        write_atomically(os.path.join(entry, ORDER_META), json.dumps(lowest).encode())
    except OSError:
        pass  # a full disk or a read-only cache costs the next run the sort, not this one its report
    return order


# Orders read from cache entries, kept for the next core of the same build (a batch worker
# serves many). The key holds the entry's two files' identities on disk, so a rewritten order
# is read afresh; each order is 4 bytes a symbol (~5 MB for libtensorflow_cc).
_orders: BoundedCache[tuple, SymbolOrder | None] = BoundedCache(8)


def load_order(entry: str) -> SymbolOrder | None:
    """The cached symbol order of a library, or None when there is none (yet)."""
    paths = (os.path.join(entry, ORDER_META), os.path.join(entry, ORDER))
    key = tuple(map(file_identity, paths))
    if None in key:
        return None
    return _orders.get(key, lambda: _read_order(*paths))


def _read_order(meta_path: str, order_path: str) -> SymbolOrder | None:
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        order = array("I")
        with open(order_path, "rb") as f:
            order.frombytes(f.read())
        if len(order) != meta["count"]:
            return None
        return SymbolOrder(
            order=order,
            lowest={int(k): int(v) for k, v in meta["lowest"].items()},
            lowest_sized={int(k): int(v) for k, v in meta["lowest_sized"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _trim_libraries(directory: str, incoming: int) -> None:
    """Keep the copies under the cache limit, removing the least recently used first (and the
    copies and sysroots of earlier formats, which nothing reads any more)."""
    root = os.path.dirname(directory)
    for old in range(1, FORMAT):
        for name in (f"fastlibs-v{old}", f"sysroots-v{old}"):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    try:
        limit = int(os.environ.get(CACHE_LIMIT_VARIABLE, DEFAULT_CACHE_LIMIT_MB)) * 1024 * 1024
    except ValueError:
        limit = DEFAULT_CACHE_LIMIT_MB * 1024 * 1024
    now = time.time()
    entries = []
    total = incoming
    try:
        for prefix in os.scandir(directory):
            if not prefix.is_dir() or prefix.name.startswith("."):
                continue
            for entry in os.scandir(prefix.path):
                if not entry.is_dir():
                    continue
                size = sum(f.stat().st_blocks * 512 for f in os.scandir(entry.path) if f.is_file())
                try:
                    used = os.stat(os.path.join(entry.path, META)).st_mtime
                except OSError:
                    used = 0
                entries.append((used, size, entry.path))
                total += size
    except OSError:
        return
    for used, size, path in sorted(entries):
        if total <= limit:
            break
        if now - used < IN_USE_SECONDS:
            continue  # a gdb may still reopen this copy by name
        shutil.rmtree(path, ignore_errors=True)
        total -= size


# --------------------------------------------------------------------------- the sysroot


def build_sysroot(paths: Iterable[str], replaced: dict[str, str], root: str, sysroot: str | None) -> str:
    """A directory standing for `/` (or for sysroot): links named like paths of the core.

    paths: the core's file mappings and the loader's library names; replaced: real path of a
    file here -> the copy to serve instead. One is made per set of paths and reused as long as
    every file that was missing when it was made is still missing (the links themselves point
    to paths, so files replaced since are followed).
    """
    usable = [p for p in dict.fromkeys(paths) if p.startswith("/") and "\0" not in p and not p.endswith(" (deleted)")]
    usable = usable[:MAX_PATHS]
    key = json.dumps([FORMAT, sysroot, sorted(usable), sorted(replaced.items())])
    base = os.path.join(root, SYSROOTS_DIR)
    farm = os.path.join(base, hashlib.sha1(key.encode()).hexdigest())
    if _still_current(farm):
        os.utime(farm)
        return farm
    links, dirs, absent = _links(usable, replaced, sysroot)
    os.makedirs(base, mode=0o700, exist_ok=True)
    _trim_sysroots(base)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=base)
    try:
        for d in sorted(dirs):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        for rel, target in links.items():
            os.symlink(target, os.path.join(tmp, rel))
        if os.path.isdir(farm):  # stale: a file missing then is here now
            shutil.rmtree(farm, ignore_errors=True)
        try:
            os.rename(tmp, farm)
        except OSError:
            if not os.path.isdir(farm):
                raise  # not a concurrent run that made the same one
        write_atomically(farm + ABSENT_SUFFIX, json.dumps(sorted(absent)).encode())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return farm


def _still_current(farm: str) -> bool:
    try:
        with open(farm + ABSENT_SUFFIX) as f:
            absent = json.load(f)
    except (OSError, ValueError):
        return False
    return os.path.isdir(farm) and isinstance(absent, list) and not any(os.path.exists(str(p)) for p in absent)


def _links(paths: list[str], replaced: dict[str, str], sysroot: str | None) -> tuple[dict[str, str], set[str], set[str]]:
    """(link -> target, directories to make, files here that were looked for and are missing)."""
    links: dict[str, str] = {}
    dirs: set[str] = set()
    absent: set[str] = set()
    for path in paths:
        local = _local(path, sysroot)
        if not os.path.isfile(local):
            absent.add(local)
            continue
        placed = _place(path, dirs)
        if placed is None:
            continue
        links.setdefault(placed, replaced.get(os.path.realpath(local), local))
        for name_here, candidate in _debuglink_candidates(path, local):
            if not os.path.isfile(candidate):
                absent.add(candidate)
                continue
            spot = _place(name_here, dirs)
            if spot is not None:
                links.setdefault(spot, candidate)
    # A name that is also a directory of another name stays a directory.
    return {rel: target for rel, target in links.items() if rel not in dirs}, dirs, absent


def _place(path: str, dirs: set[str]) -> str | None:
    """Where a link for path goes (relative to the sysroot), noting the real directories that
    must exist for the kernel to resolve it there: `a/b/../c` needs a real `a/b`."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        return None
    current: list[str] = []
    for part in parts[:-1]:
        if part == "..":
            if not current:
                return None  # would climb out of the sysroot
            current.pop()
        else:
            current.append(part)
            dirs.add("/".join(current))
    if parts[-1] == "..":
        return None
    rel = "/".join([*current, parts[-1]])
    return rel if rel not in dirs else None


def _debuglink_candidates(path: str, local: str) -> list[tuple[str, str]]:
    """Where gdb looks for a library's debuglink file next to it (`dir/NAME`, `dir/.debug/NAME`,
    also in the directory's real path): (name in the core's terms, file here)."""
    try:
        name = _debuglink(ElfLayout.read(local))
    except (OSError, LibraryCopyError):
        return []
    if not name:
        return []
    out = []
    for sub in ("", ".debug/"):
        for local_dir in dict.fromkeys((os.path.dirname(local), os.path.realpath(os.path.dirname(local)))):
            out.append((os.path.join(os.path.dirname(path), sub + name), os.path.join(local_dir, sub + name)))
    return out


def _trim_sysroots(base: str) -> None:
    try:
        farms = sorted((e.stat().st_mtime, e.path) for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return
    now = time.time()
    for mtime, path in farms[: max(0, len(farms) - SYSROOTS_KEPT)]:
        if now - mtime > 60:  # one a concurrent run may just have made is left alone
            shutil.rmtree(path, ignore_errors=True)
            try:
                os.unlink(path + ABSENT_SUFFIX)
            except OSError:
                pass
