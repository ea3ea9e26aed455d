"""The dead process: one object per core that every reader of the process's state takes.

Built once from the core's notes (coreanalyze.corefile) and, once the module table exists, the
files that stand for the crashed build. It answers:

- memory: the core's own segments first, then the files mapped there that are the crashed build
  (status ok / no-build-id: the local file, the sysroot's, the image's or a fetched copy, as the
  module table placed it), with the one provenance the module table gave them. What the kernel
  did not dump (read-only file pages: strings in .rodata, code) comes from those files, never
  from a file of another build;
- threads and their registers, the stack pointer and thread pointer by the architecture's names
  (coreanalyze.arch);
- the dynamic loader's list of loaded objects (`struct link_map`), walked once;
- per-core facts costly to find (the dist-info names in writable memory), read once (in the
  background while a debugger loads the core) and kept.

Every reader of the process takes the Process (one per core; a new module table updates it in
place): the notes' fields it needs are its properties below or `process.notes.X`. Readers read
memory through it, one way: read, read_u64, read_cstring and read_available go through the
tiers; read_core (and core_only=True) reads the core alone, for the readers that must see only
what the kernel dumped (a check of the core against a file, `coreanalyze shrink`, a scan of the
core's writable data that a file's initial bytes would misrepresent); segments,
segment_containing, is_present and find answer what the core holds. A Process stands wherever a
reader takes a memory object. Memory is a
stack of registered tiers (as drgn's Program.add_memory_segment): the core, the crashed build's
files, the content-verified data files (coreanalyze.process.filebacked, registered by the readers that
want them), and a recording wrapper on the core that `coreanalyze shrink` installs (record).
Symbols go through the one symbolizer (coreanalyze.symbols.process): symbol_at, symbol_address.
Process.in_memory makes one of the bytes and symbols a test gives.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, Sequence

from coreanalyze import arch as _arch
from coreanalyze.base import background
from coreanalyze.corefile.loader import libraries_of
from coreanalyze.corefile.memory import MAX_READ, BytesMemory, Segment
from coreanalyze.corefile.structures import CoreNotes, Mapping, ThreadNotes
from coreanalyze.process import forked
from coreanalyze.process.stackscan import stack_start

if TYPE_CHECKING:
    from coreanalyze.symbols.process import ProcessSymbols, Symbol, SymbolTable

# struct link_map { ElfW(Addr) l_addr; char *l_name; ElfW(Dyn) *l_ld; link_map *l_next, *l_prev; }
# on the 64-bit targets the tool reads (x86_64, aarch64).
LINK_MAP_ENTRY_SIZE = 32
MAX_LINK_MAP_ENTRIES = 10_000
# Bytes of each thread's stack searched for return addresses, from its stack pointer up, and
# of all threads' together (a frame beyond is still found: see coreanalyze.gdb.libraries).
STACK_SCAN_BYTES = 1 << 20
STACK_SCAN_TOTAL = 32 << 20


@dataclass(frozen=True)
class LinkMapEntry:
    """One node of the loader's list, as the core holds it."""

    address: int  # of the node
    base: int  # l_addr: run-time minus link-time addresses
    name_address: int  # l_name


class MemoryTier(Protocol):
    """One registered source of the process's memory: size bytes at address, or None."""

    def read(self, address: int, size: int) -> bytes | None: ...


class Process:
    """Memory, threads, modules, symbols and cached facts of one core's process."""

    def __init__(self, notes: CoreNotes, modules: Sequence[Any] = ()) -> None:
        self.notes = notes
        self._u64 = struct.Struct("<Q" if notes.little_endian else ">Q")
        self.modules: list[Any] = []
        self._tiers: dict[str, MemoryTier] = {}
        self._reads: tuple[Callable[[int, int], bytes | None], ...] = ()
        self._build_files = BuildFiles(notes)
        self.add_memory_tier("core", notes.memory)
        self.add_memory_tier("build files", self._build_files)
        self._symbols: ProcessSymbols | SymbolTable | None = None  # made on first use
        self._distributions: list | None = None
        self._scanning: background.Job | forked.ForkedJob | None = None
        # [start, end) of the interpreter's GIL, once the Python walker read it: a thread that
        # waits on a lock inside it waits for the GIL, whatever its native frames say.
        self.gil_range: tuple[int, int] | None = None
        self.set_modules(modules)

    @classmethod
    def open(cls, core_path: str, modules: Sequence[Any] = (), *, record: Callable[[int, int], None] | None = None) -> Process:
        """The Process of the core at core_path. record: a recorder installed on it from the first
        read of the core's memory, the notes' own reads included (coreanalyze.shrink keeps what
        an analysis read); see also record()."""
        from coreanalyze.corefile.reader import read_core

        return cls(read_core(core_path, observer=record), modules)

    @classmethod
    def in_memory(
        cls,
        segments: dict[int, bytes],
        *,
        symbols: dict[str, int | tuple[int, int]] | None = None,
        arch: str = "x86_64",
        threads: Sequence[ThreadNotes] = (),
        crashing_tid: int | None = None,
        mappings: Sequence[Mapping] = (),
        little_endian: bool = True,
        **fields: Any,
    ) -> Process:
        """A Process of the bytes and symbols given (address -> bytes; name -> address or
        (address, size)), with no core file: for the readers' tests. fields: further CoreNotes
        fields (auxv, signal, environ, ...)."""
        from coreanalyze.symbols.process import SymbolTable

        memory = BytesMemory(segments, little_endian=little_endian)
        notes = CoreNotes(
            path="<memory>", size=0, arch=arch, memory=memory, threads=list(threads),
            crashing_tid=crashing_tid if crashing_tid is not None else (threads[0].tid if threads else None),
            mappings=list(mappings), little_endian=little_endian, **fields,
        )  # fmt: skip
        process = cls(notes)
        process._symbols = SymbolTable(symbols or {})
        return process

    # -- what the notes say ---------------------------------------------------------------

    @property
    def arch(self) -> str:
        return self.notes.arch

    @property
    def little_endian(self) -> bool:
        return self.notes.little_endian

    @property
    def executable(self) -> str | None:
        return self.notes.executable

    @property
    def mappings(self) -> list[Mapping]:
        return self.notes.mappings

    def mapping_containing(self, address: int | None) -> Mapping | None:
        return self.notes.mapping_containing(address)

    @property
    def auxv(self) -> dict[str, Any]:
        return self.notes.auxv

    @property
    def build_ids(self) -> dict[str, str]:
        return self.notes.build_ids

    @property
    def environ(self) -> dict[str, str]:
        """The environment the process started with (its initial stack)."""
        return self.notes.environ

    @cached_property
    def current_environment(self) -> dict[str, str]:
        """The environment when the process died: libc's `environ` (which setenv/putenv and
        `os.environ[...] = ...` update) where the core holds it, else the initial one; read once
        (coreanalyze.process.currentenv)."""
        from coreanalyze.process.currentenv import current_environment

        found = current_environment(self)
        return self.notes.environ if found is None else found

    @property
    def signal(self) -> Any:
        return self.notes.signal

    @property
    def crashing_tid(self) -> int | None:
        return self.notes.crashing_tid

    # -- modules ---------------------------------------------------------------------------

    def set_modules(self, modules: Sequence[Any]) -> None:
        """The module table (again, after a fetch replaced files): which mapped files stand for
        the crashed build and may be read where the core has no bytes. The one Process of the
        core is updated in place."""
        self.modules = list(modules)
        self._build_files.set_modules(self.modules)
        if self._symbols is not None:
            self._symbols.set_modules(self.modules)

    # -- memory ----------------------------------------------------------------------------

    def add_memory_tier(self, name: str, tier: MemoryTier, *, default: bool = True) -> MemoryTier:
        """Register a source of memory. read() asks the default tiers in the order they were
        registered, the first answer wins; a tier that is not default is read by the readers
        that ask for it by name (tier)."""
        self._tiers[name] = tier
        if default:
            self._reads = (*self._reads, tier.read)
        return tier

    def tier(self, name: str) -> MemoryTier | None:
        return self._tiers.get(name)

    def read(self, address: int, size: int) -> bytes | None:
        """size bytes at address: from the core, else from the crashed build's file mapped there."""
        for read in self._reads:
            data = read(address, size)
            if data is not None:
                return data
        return None

    def read_core(self, address: int, size: int) -> bytes | None:
        """size bytes at address from the core alone: for readers that must see only what the kernel dumped."""
        return self.notes.memory.read(address, size)

    def read_u64(self, address: int, *, core_only: bool = False) -> int | None:
        """The word at address, in the process's byte order (core_only: from the core alone)."""
        if core_only:
            return self.notes.memory.read_u64(address)
        data = self.read(address, 8)
        return None if data is None else self._u64.unpack(data)[0]

    def read_cstring(self, address: int, max_len: int = 4096, *, core_only: bool = False) -> bytes | None:
        """The NUL-terminated bytes at address (without the NUL), at most max_len: from the core,
        else from the crashed build's file mapped there (string literals the kernel did not dump);
        None where neither has the address (core_only: from the core alone)."""
        found = self.notes.memory.read_cstring(address, max_len)
        if found is not None or core_only:
            return found
        data = self._build_files.read(address, max(0, min(max_len, MAX_READ)), False)
        return None if data is None else data.split(b"\0", 1)[0]

    def read_available(self, address: int, size: int, *, core_only: bool = False) -> bytes:
        """Up to size bytes from address, stopping where the source ends: the core's, else (where
        the core has no byte at address) the crashed build's file mapped there, to the mapping's
        end (core_only: from the core alone)."""
        found = self.notes.memory.read_available(address, size)
        if found or core_only:
            return found
        return self._build_files.read(address, max(0, min(size, MAX_READ)), False) or b""

    # What the core holds: the segments the kernel dumped. The mapped files add bytes where the
    # core has none (read, read_cstring, read_available), never segments: a reader that asks
    # where memory is (a stack's bounds, writable memory to search, whether a word points into
    # dumped memory) asks the core.

    @property
    def segments(self) -> list[Segment]:
        """The core's segments (PT_LOAD), by address."""
        return self.notes.memory.segments

    def segment_containing(self, address: int) -> Segment | None:
        """The core's segment holding address, or None."""
        return self.notes.memory.segment_containing(address)

    def is_present(self, address: int) -> bool:
        """Whether the core holds the byte at address (what the kernel dumped)."""
        return self.notes.memory.is_present(address)

    def find(self, needle: bytes, segment: Segment, limit: int) -> Iterator[int]:
        """Addresses of needle in the first limit bytes the core holds of one of its segments: a
        search of what the process wrote (heap, stacks, data), never of the mapped files."""
        return self.notes.memory.find(needle, segment, limit)

    def read_mapped_file(self, address: int, size: int, *, whole: bool = False) -> bytes | None:
        """Bytes at address from the file mapped there when it is the crashed build (never from
        the core). whole: all size bytes or None; else up to the mapping's end."""
        return self._build_files.read(address, size, whole)

    @contextmanager
    def record(self, observe: Callable[[int, int], None]) -> Iterator[None]:
        """While active, observe(address, size) hears every read of the core's own memory, on
        any thread (coreanalyze.shrink keeps what an analysis read)."""
        memory = self.notes.memory
        previous = memory.observer

        def both(address: int, size: int) -> None:
            observe(address, size)
            previous(address, size)

        memory.observer = observe if previous is None else both
        try:
            yield
        finally:
            memory.observer = previous

    @property
    def recording(self) -> bool:
        """Whether a recorder hears this core's reads (record)."""
        return self.notes.memory.observer is not None

    @property
    def _fmt(self) -> str:
        return "<" if self.notes.little_endian else ">"

    # -- symbols ---------------------------------------------------------------------------

    @property
    def symbols(self) -> ProcessSymbols | SymbolTable:
        """The one place the process's symbols are looked up (coreanalyze.symbols.process)."""
        if self._symbols is None:
            from coreanalyze.symbols.process import ProcessSymbols

            self._symbols = ProcessSymbols(self.notes, self.modules)
        return self._symbols

    def use_symbolizer(self, symbolizer: Any) -> None:
        """Name functions through this symbolizer (coreanalyze.symbols.Symbolizer) from now on."""
        self.symbols.use_symbolizer(symbolizer)

    def symbol_at(self, address: int, *, kind: str = "function") -> Symbol | None:
        """The symbol of the crashed build holding address: a function (kind "function"), or a
        global or static variable (kind "object"); None where no file of that build names it."""
        return self.symbols.symbol_at(address, kind)

    def symbol_address(self, name: str) -> int | None:
        """Where the crashed build's interpreter files (the executable, libpython) put the
        symbol name in this process; None where they do not define it."""
        return self.symbols.symbol_address(name)

    # -- threads ---------------------------------------------------------------------------

    @property
    def threads(self) -> list[ThreadNotes]:
        return self.notes.threads

    def thread(self, tid: int | None) -> ThreadNotes | None:
        return self.notes.thread(tid)

    @property
    def crashing_thread(self) -> ThreadNotes | None:
        return self.notes.thread(self.notes.crashing_tid)

    def stack_pointer(self, tid: int | None = None) -> int | None:
        """A thread's stack pointer as the notes saved it (the crashing thread's by default)."""
        thread = self.crashing_thread if tid is None else self.thread(tid)
        return _arch.stack_pointer(thread.registers, self.arch) if thread is not None else None

    def program_counter(self, tid: int | None = None) -> int | None:
        """A thread's pc as the notes saved it (the crashing thread's by default)."""
        thread = self.crashing_thread if tid is None else self.thread(tid)
        known = _arch.architecture(self.arch)
        value = thread.registers.get(known.pc_register) if thread is not None and known is not None else None
        return value if isinstance(value, int) else None

    def thread_pointer(self, tid: int | None = None) -> int | None:
        """A thread's TLS base as the notes saved it, where the architecture keeps it there."""
        thread = self.crashing_thread if tid is None else self.thread(tid)
        return _arch.thread_pointer(thread.registers, self.arch) if thread is not None else None

    def code_addresses_on_stacks(self, max_bytes: int = STACK_SCAN_BYTES) -> list[int]:
        """Every value in a thread's registers or on its live stack (from its stack pointer to
        the end of that segment, at most max_bytes) that points into executable memory, sorted
        and without repeats: the pc of every frame an unwinder can find is among them (a return
        address is a word of the stack), and more (stale words, function pointers)."""
        memory = self.notes.memory
        words: set[int] = set()
        budget = STACK_SCAN_TOTAL
        # The crashing thread first: with thousands of threads the budget ends before the last.
        for thread in sorted(self.threads, key=lambda t: t.tid != self.notes.crashing_tid):
            words.update(v for v in thread.registers.values() if isinstance(v, int))
            # A stack that overflowed has its pointer in the guard gap below it: read from its start.
            sp = stack_start(memory, _arch.stack_pointer(thread.registers, self.arch))
            segment = memory.segment_containing(sp) if sp is not None and budget > 0 else None
            if segment is None:
                continue
            data = memory.read_available(sp, min(segment.end - sp, max_bytes, budget))
            budget -= len(data)
            stack = array("Q")
            stack.frombytes(data[: len(data) // 8 * 8])
            if (sys.byteorder == "little") != self.notes.little_endian:
                stack.byteswap()
            words.update(stack)
        known = _arch.architecture(self.arch)
        if known is not None and known.address_bits < 64:
            words = {w & ((1 << known.address_bits) - 1) for w in words}
        return sorted(w for w in words if (segment := memory.segment_containing(w)) is not None and segment.executable)

    # -- the loader's list -----------------------------------------------------------------

    def link_map(self, r_debug: int | None) -> tuple[list[LinkMapEntry], int | None]:
        """The nodes of the loader's list from `struct r_debug` at r_debug, in load order, and
        the address of a node the core does not hold where the list breaks off (else None).
        Bounded; a cycle ends the walk."""
        entries: list[LinkMapEntry] = []
        if not r_debug:
            return entries, None
        node = self.notes.memory.read_u64(r_debug + 8)  # r_debug.r_map, after the int r_version
        seen: set[int] = set()
        layout = struct.Struct(self._fmt + "4Q")
        while node and node not in seen and len(seen) < MAX_LINK_MAP_ENTRIES:
            seen.add(node)
            raw = self.notes.memory.read(node, LINK_MAP_ENTRY_SIZE)
            if raw is None:
                return entries, node
            l_addr, l_name, _l_ld, l_next = layout.unpack(raw)
            entries.append(LinkMapEntry(node, l_addr, l_name))
            node = l_next
        return entries, None

    @cached_property
    def loaded_libraries(self) -> list:
        """The loader's libraries in load order, found from the program headers the core kept
        (coreanalyze.corefile.loader); read once."""
        return libraries_of(self)

    # -- costly facts, read once -----------------------------------------------------------

    def scan_in_background(self) -> None:
        """Start the scans of the process's memory that take time (the dist-info names) beside
        the analysis (a forked child, else a thread: coreanalyze.process.forked): they only read the
        core file, while a debugger loads it."""
        if self._distributions is None and self._scanning is None:
            from coreanalyze.process.imported import distributions_in_memory

            self._scanning = forked.start("dist-info-scan", distributions_in_memory, self.notes.memory)

    @property
    def distributions_in_memory(self) -> list:
        """Every `name-version.dist-info` named in the process's writable memory; read once."""
        if self._distributions is None:
            job, self._scanning = self._scanning, None
            found = job.result() if job is not None else None
            if found is None:  # not started, or it failed: here, where errors surface
                from coreanalyze.process.imported import distributions_in_memory

                found = distributions_in_memory(self.notes.memory)
            self._distributions = found
        return self._distributions

    def wait(self) -> None:
        """Wait for background scans (they read the core, which is closed after)."""
        if self._scanning is not None:
            self._scanning.wait()

    # -- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        self.wait()
        self._build_files.close()
        self.notes.close()

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()




class BuildFiles:
    """The memory tier of the files mapped in the process that are the crashed build (status ok
    / no-build-id: the local file, the sysroot's, the image's or a fetched copy, as the module
    table placed it): what the kernel did not dump (read-only file pages), never from a file of
    another build."""

    def __init__(self, notes: CoreNotes) -> None:
        self._notes = notes
        self._trusted: dict[str, str] = {}
        self._open_files: dict[str, int] = {}

    def set_modules(self, modules: Sequence[Any]) -> None:
        trusted = {m.path: m.local_path for m in modules if getattr(m, "local_path", None) and _trusted(m)}
        if trusted != self._trusted:
            self.close()
            self._trusted = trusted

    def read(self, address: int, size: int, whole: bool = True) -> bytes | None:
        """All size bytes at address, or None; whole=False: up to size bytes, to the mapping's end."""
        if not self._trusted:
            return None
        mapping = self._notes.mapping_containing(address)
        local = self._trusted.get(mapping.path) if mapping is not None else None
        if local is None:
            return None
        if whole and address + size > mapping.end:
            return None
        want = size if whole else max(0, min(size, mapping.end - address))
        fd = self._file(local)
        if fd is None:
            return None
        try:
            data = os.pread(fd, want, mapping.file_offset + (address - mapping.start))
        except (OSError, OverflowError, ValueError):
            return None
        if whole:
            return data if len(data) == size else None
        return data or None

    def _file(self, path: str) -> int | None:
        fd = self._open_files.get(path)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                return None
            self._open_files[path] = fd
        return fd

    def close(self) -> None:
        for fd in self._open_files.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._open_files.clear()

    def __del__(self) -> None:
        # Dropped without close(): its files.
        if "_open_files" in self.__dict__:
            self.close()


def _trusted(module: Any) -> bool:
    status = module.status
    trusted = getattr(status, "trusted_image", None)
    return bool(trusted) if trusted is not None else status in ("ok", "no-build-id")


__all__ = ["BuildFiles", "LinkMapEntry", "Mapping", "MemoryTier", "Process"]
