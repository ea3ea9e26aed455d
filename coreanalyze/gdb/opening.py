"""gdb's opening of one core, behind the Opener of the stages (coreanalyze.unwind.debugger): which gdb
(gdb-multiarch for another machine's core, a pool's, or one started early for this core alone),
and gdb's speed plan - the libraries it reads (coreanalyze.gdb.libraries), the huge libraries it
gets as copies without symbols (coreanalyze.gdb.libcopies), the uncompressed copies of compressed
debug files (coreanalyze.symbols.uncompressed) - then the threads and the crash it reads
(coreanalyze.gdb.collect). The stages see none of it: they call prepare, open and after.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterator

from coreanalyze.base import later

if TYPE_CHECKING:  # imported when gdb opens the core: the opener is made before gdb starts
    from coreanalyze.gdb.collect import FromNotes, GdbAnalysis


def warm_pool(options: Any) -> Any:
    """A pool of warm gdb processes set up as an analysis with these options starts its gdb,
    for analyses one after another (a batch worker's), or None where none can start: a pool is
    reached only through this module, as every other use of gdb is."""
    from coreanalyze.base.errors import CoreAnalyzeError
    from coreanalyze.gdb.pool import GdbPool

    try:
        return GdbPool.from_options(options)
    except (TypeError, CoreAnalyzeError, OSError):
        return None  # a pool that cannot start is no reason to stop: a fresh gdb per core


class GdbOpener:
    """An Opener (coreanalyze.unwind.debugger) with gdb, for one core's analysis."""

    def __init__(self, gdb_pool: Any = None, own_gdb: Any = None) -> None:
        self.gdb_pool = gdb_pool  # a warm pool serving one core after another, or None
        self.own_gdb = own_gdb  # a gdb started early for this core alone, or None
        self.debug_dirs: list[str] = []  # where gdb looks for separate debug files
        self.fast: Any = None  # libcopies' plan of symbol-less library copies, or None
        self.libraries: Any = None  # the libraries gdb reads (gdb.libraries.LibraryChoice), None: all
        self.reached: list[int] = []  # code addresses the threads hold (Process.code_addresses_on_stacks)
        self.debug_files_to_copy: list[tuple[str, str]] = []  # (debug file, build-id) gdb reads compressed
        self.program_frames: Any = None  # the program's frames kept from earlier (gdb.programframes), or None

    @classmethod
    def for_analysis(cls, arch: str, options: Any, gdb_pool: Any, held: Any) -> tuple[Any, GdbOpener]:
        """The options naming a gdb that reads this core's architecture and the opener: with the
        pool when its gdb is that one, else with a gdb of this core's own, started now so that it
        comes up while the notes and libraries are read (held: an ExitStack that closes it)."""
        options, gdb_pool = _gdb_for_architecture(arch, options, gdb_pool)
        own_gdb = None
        if gdb_pool is None:
            own_gdb = _own_gdb(options)
            held.callback(own_gdb.close)
            own_gdb.start_early()
        return options, cls(gdb_pool, own_gdb)

    # -- the Opener --------------------------------------------------------------------------

    def prepare(self, ctx: Any) -> None:
        """What gdb is given: debug directories, symbol-less copies of huge libraries, the
        libraries it reads, the uncompressed debug files the cache has."""
        from coreanalyze.symbols import debug_dirs_for_gdb

        options = ctx.options
        self.debug_dirs = debug_dirs_for_gdb(ctx.report, options.debug_dirs, sysroot=options.sysroot, symbolizer=ctx.symbolizer)
        self.fast = self._fast_libraries(ctx)
        if options.fast_libraries:  # they choose the libraries gdb reads and the copies' entries
            self.reached = ctx.process.code_addresses_on_stacks()
        self.libraries = self._chosen_libraries(ctx)
        self._uncompressed_debug_files(ctx)

    def beside(self, ctx: Any) -> None:
        """gdb's own work while it reads the core. A command's one analysis sorts no symbol table
        (it selects the symbols near the addresses the threads reach, those gdb will name,
        FastLibrary.windows, and leaves the whole order for later); an analysis among others (a batch worker, a caller of the library) sorts the
        libraries met for the first time meanwhile, for itself and the cores after it."""
        if self.fast is None:
            return
        if not later.deferred():
            self.fast.order_in_background(self.reached)
        elif self.reached:
            self.fast.select_in_background(self.reached)

    @contextmanager
    def open(self, ctx: Any, while_loading: Callable[[], None]) -> Iterator[GdbAnalysis]:
        try:
            with self._collected_core(ctx, while_loading) as (_session, analysis):
                yield analysis
        finally:
            if self.fast is not None:
                self.fast.close()

    def after(self, ctx: Any) -> None:
        """The uncompressed copies of the debug files gdb read compressed, made beside the rest of
        the analysis and its report, for the next analyses: made before gdb loaded the core, they
        would have cost this one more than they save it."""
        if self.debug_files_to_copy:
            from coreanalyze.symbols import uncompressed

            uncompressed.make_later(self.debug_files_to_copy)
        from coreanalyze.base import cachesize

        cachesize.trim_later()  # the cache's size cap, once this analysis has written its part

    # -- the plan ----------------------------------------------------------------------------

    def _fast_libraries(self, ctx: Any):
        """The huge libraries gdb gets as copies without symbols, or None (all loaded as they are)."""
        options = ctx.options
        if not options.fast_libraries or options.debuginfod:
            return None  # with debuginfod, gdb may fetch debug info for any library
        from coreanalyze.gdb.libcopies.copies import plan_fast_libraries
        from coreanalyze.gdb.libcopies.errors import LibraryCopyError

        try:
            return plan_fast_libraries(
                ctx.process,
                ctx.report.modules,
                sysroot=options.sysroot,
                debug_dirs=self.debug_dirs,
                # Copies only where gdb reads every library (files placed from the loader's list):
                # elsewhere gdb is told not to read these, which costs the cache nothing.
                copies=ctx.link_map is not None,
                **({} if options.fast_libraries_min_symbols is None else {"min_symbols": options.fast_libraries_min_symbols}),
            )
        except LibraryCopyError:
            return None  # an optimisation only: gdb then reads every library itself

    def _chosen_libraries(self, ctx: Any):
        """The libraries gdb reads: those the threads reach (coreanalyze.gdb.libraries), or None
        (all, as gdb would: the plain path, and files placed from the loader's list)."""
        if not ctx.options.fast_libraries or ctx.link_map is not None:
            return None
        from coreanalyze.gdb.libraries import LibraryChoice

        return LibraryChoice.for_process(ctx.process, self.reached)

    def _uncompressed_debug_files(self, ctx: Any) -> None:
        """gdb reads the uncompressed copies of compressed debug files where the cache has them
        (coreanalyze.symbols.uncompressed): first in its list, found by build-id. Those it lacks
        for the libraries gdb will read are made once gdb is done (after)."""
        from coreanalyze.symbols import gdb_debug_files, uncompressed

        def gdb_reads(module) -> bool:
            return self.libraries is None or self.libraries.may_read(module.path, module.start, module.end)

        debug_files = list(gdb_debug_files(ctx.report.modules, ctx.symbolizer.debug_file_for))
        ctx.lines_from_debugger = {module.path for module, _build_id, _file in debug_files if gdb_reads(module)}
        found, self.debug_files_to_copy = uncompressed.plan(debug_files, gdb_reads)
        if found:
            self.debug_dirs.insert(0, str(uncompressed.directory()))
        self.program_frames = self._program_frames(ctx, debug_files)

    def _program_frames(self, ctx: Any, debug_files: list) -> Any:
        """The program's frames kept from earlier analyses, where gdb can open the core without
        the program's separate debug file (coreanalyze.gdb.programframes): a gdb of this
        analysis's own (a pool's reads it once for many cores), told which libraries to read and
        where their debug files are (the program is read with no debug directory, the libraries
        after it with these)."""
        if self.gdb_pool is not None or self.libraries is None or ctx.link_map is not None or not self.debug_dirs:
            return None
        found = [(m, build_id) for m, build_id, _file in debug_files if ctx.executable and m.local_path == ctx.executable]
        if not found or found[0][0].start is None or found[0][0].end is None:
            return None
        from coreanalyze.gdb.programframes import KnownFrames, ProgramFrames

        program, build_id = found[0]
        return ProgramFrames(program.start, program.end, KnownFrames.load(build_id))

    # -- gdb ---------------------------------------------------------------------------------

    @contextmanager
    def _collected_core(self, ctx: Any, while_loading: Callable[[], None]) -> Iterator:
        from coreanalyze.gdb.pool import default_index_cache, gdb_for_analysis

        options = ctx.options
        index_cache = default_index_cache() if options.fast_libraries else None
        with gdb_for_analysis(
            self.gdb_pool, gdb_path=options.gdb, timeout=options.timeout, debuginfod=options.debuginfod,
            index_cache=index_cache, own=self.own_gdb,
        ) as gdb:  # fmt: skip
            use = self.program_frames
            if use is None:
                with self._collected_with(ctx, gdb, while_loading) as opened:
                    yield opened
                return
            from coreanalyze.gdb.programframes import Recording, WithoutProgramDebugFile

            # Without the program's debug file first: every frame of the program kept from
            # earlier is the answer; one that is not has gdb open the core the plain way.
            with self._collected_with(ctx, WithoutProgramDebugFile(gdb, use), while_loading) as opened:
                if not use.missed:
                    yield opened
                    return
            with self._collected_with(ctx, Recording(gdb, use), None) as opened:
                use.known.save()
                yield opened

    def _collected_with(self, ctx: Any, gdb: Any, while_loading: Callable[[], None] | None):
        from coreanalyze.gdb.libcopies.naming import collected_core
        from coreanalyze.gdb.placing import PlacingGdb

        options = ctx.options
        return collected_core(
            gdb if ctx.link_map is None else PlacingGdb(gdb, ctx.link_map), ctx.core_path, executable=ctx.executable,
            sysroot=options.sysroot, debug_dirs=self.debug_dirs, fast=self.fast,
            before_target=while_loading, libraries=self.libraries,
            reached=self.reached, crash_pc=ctx.process.program_counter(), from_notes=_from_notes(ctx),
        )  # fmt: skip


def _from_notes(ctx: Any) -> FromNotes:
    """What gdb is not asked for: the frames' module map from the core's own file list
    (NT_FILE), which is what gdb would list for it, except for files placed from the loader's
    list (gdb then knows them only as libraries, and names modules from those); and the signal's
    details when the core has its siginfo (NT_SIGINFO), which outranks gdb's (merge_signal)."""
    from coreanalyze.gdb.collect import FromNotes, file_ranges

    notes = ctx.process.notes
    return FromNotes(
        file_mappings=file_ranges(notes.mappings) if ctx.link_map is None else None,
        siginfo=notes.siginfo_note,
    )


def _gdb_for_architecture(arch: str, options: Any, gdb_pool: Any):
    """Options naming a gdb that reads this core's architecture (gdb-multiarch for a core from
    another machine), and the pool only when its gdb is that one."""
    from coreanalyze.arch.debugger import gdb_for_core

    chosen = gdb_for_core(options.gdb, arch)
    if chosen == options.gdb:
        return options, gdb_pool
    if gdb_pool is not None and getattr(gdb_pool, "gdb_path", None) != chosen:
        gdb_pool = None  # a pool of another gdb: this core gets a gdb of its own
    return replace(options, gdb=chosen), gdb_pool


def _own_gdb(options: Any):
    from coreanalyze.gdb.pool import OwnGdb, default_index_cache

    index_cache = default_index_cache() if options.fast_libraries else None
    return OwnGdb(gdb_path=options.gdb, timeout=options.timeout, debuginfod=options.debuginfod, index_cache=index_cache)
