"""Orchestration of one core's analysis: notes -> gdb -> Python frames -> classify.

Each stage fills the one Report; when gdb breaks (missing, crashed, hung), the report is built
from the core's notes alone and the result carries exit code 3 with the reason.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from coreanalyze import __version__, background
from coreanalyze.corefile import read_core, threads_from_notes, to_core_info
from coreanalyze.errors import EXIT_OK, AnalysisFailed, BadInput, GdbError
from coreanalyze.model import Report, SignalInfo
from coreanalyze.modules import elf_build_id, module_table
from coreanalyze.provenance import mark_debug_files, mark_sources
from coreanalyze.vocabulary import ModuleStatus


@dataclass
class AnalyzeOptions:
    python: str | None = None
    gdb: str = "gdb"
    timeout: float = 300.0
    sysroot: str | None = None
    debug_dirs: list[str] = field(default_factory=list)
    debuginfod: bool = False
    rules_files: list[Path] = field(default_factory=list)
    with_locals: bool = False
    include_env: bool = False
    # Download the wheels of missing site-packages libraries with pip (coreanalyze.fetch).
    fetch: bool = False
    # Huge libraries reach gdb as cached copies without symbol tables, named per address
    # (coreanalyze.gdb.libcopies); the report is the same, in a fraction of the time and memory.
    fast_libraries: bool = True
    fast_libraries_min_symbols: int | None = None  # libraries with fewer are loaded as they are
    gpu_core: str | None = None  # the driver's GPU core dump (default: looked for beside the core)
    gpu_core_beside: str | None = None  # where the core was found, when it is analyzed from a copy


@dataclass
class AnalysisResult:
    report: Report
    failure: str | None = None  # why the analysis is partial
    exit_code: int = EXIT_OK


def _resolve_executable(notes, options: AnalyzeOptions, report: Report) -> str | None:
    """The binary to give gdb: --python when given, else the core's own executable."""
    core_exe = notes.executable
    if options.python:
        given = Path(options.python)
        if not given.exists():
            raise BadInput(f"--python {options.python}: no such file")
        if given.is_dir():
            raise BadInput(f"--python {options.python} is a directory, not a program")
        with open(given, "rb") as f:
            if f.read(4) != b"\x7fELF":
                raise BadInput(f"--python {options.python} is not an ELF executable (a script or wrapper?)")
        core_id = notes.build_ids.get(core_exe) if core_exe else None
        given_id = elf_build_id(str(given))
        if core_id and given_id and core_id != given_id:
            report.warnings.append(
                f"--python {options.python} is not the program that dumped this core "
                f"(build-id {given_id} here, {core_id} in the core: {core_exe}); frames may be wrong"
            )
        elif core_exe and not core_id and os.path.basename(os.path.realpath(given)) != os.path.basename(core_exe):
            report.warnings.append(f"--python {options.python} may not be the program that dumped this core ({core_exe})")
        return str(given)
    if not core_exe:
        report.warnings.append("the core does not name its executable; pass --python")
        return None
    if options.sysroot:
        from coreanalyze.rootpaths import file_in_root

        local = file_in_root(options.sysroot, core_exe)
    else:
        local = core_exe if os.path.isfile(core_exe) else None
    if local:
        return local
    report.warnings.append(f"the core's executable {core_exe} is not on this machine; pass --python or --sysroot")
    return None


def _merge_signal(primary: SignalInfo, extra: SignalInfo | None) -> None:
    """The core's own siginfo is authoritative; gdb's $_siginfo only fills gaps."""
    if extra is None:
        return
    for name in ("number", "name", "code", "code_name", "address", "sender_pid", "sender_uid"):
        if getattr(primary, name) is None and getattr(extra, name) is not None:
            setattr(primary, name, getattr(extra, name))


def _mark_unreliable(report: Report) -> None:
    bad = {m.path for m in report.modules if m.status.unreliable}
    if not bad:
        return
    for thread in report.threads:
        for frame in thread.frames:
            if frame.module in bad:
                frame.reliable = False


def _looks_like_python(report: Report) -> bool:
    names = [os.path.basename(m.path) for m in report.modules]
    if report.core and report.core.executable:
        names.append(os.path.basename(report.core.executable))
    return any(n.startswith(("python", "libpython")) for n in names)


def _link_map(notes, executable: str | None, options: AnalyzeOptions, report: Report):
    """For a core without a file list: the objects placed from the loader's list in memory,
    which then stand in for the file list (None when the core has one, or nothing was found)."""
    from coreanalyze.corefile.buildids import build_ids_from_memory
    from coreanalyze.linkmap import needs_link_map, read_link_map

    if not needs_link_map(notes):
        return None
    link_map = read_link_map(notes, executable, options.sysroot)
    report.warnings.extend(link_map.warnings)
    if not link_map.objects:
        return None
    notes.mappings = link_map.mappings
    # The build-ids in first pages the core kept (a library whose headers sit in a read-only,
    # non-executable segment: qemu dumps those) can be read only now that the files are placed.
    notes.build_ids = {**build_ids_from_memory(notes), **notes.build_ids}
    report.warnings.append(f"the files' places were read from the dynamic linker's list in memory ({len(link_map.objects)} objects)")
    return link_map


def _place_fetched(notes, executable: str | None, overlay: str, link_map, report: Report):
    """The link map again, now that fetched libraries stand in the overlay sysroot: gdb gets
    their files (the places are the same, read from the same list), and only what is still
    not here is warned about."""
    from coreanalyze.linkmap import read_link_map

    placed = read_link_map(notes, executable, overlay)
    if not placed.objects:
        return link_map
    report.warnings = [w for w in report.warnings if w not in link_map.warnings] + placed.warnings
    return placed


def _modules_of_frames(report: Report, notes) -> None:
    """Frames' modules from the placed files: gdb, given them as symbol files rather than
    shared libraries, names none."""
    placed = []
    for thread in report.threads:
        for frame in thread.frames:
            if frame.module is None and frame.pc is not None and frame.kind == "native":
                mapping = notes.mapping_containing(frame.pc)
                frame.module = mapping.path if mapping else None
                if mapping is not None:
                    placed.append(f"thread {thread.tid}: frame #{frame.index} ")
    # gdb, not given the placed files' ranges, took these unnamed frames for strays.
    report.warnings = [w for w in report.warnings if not (w.startswith(tuple(placed)) and "outside every mapped file" in w)]


def _fast_libraries(notes, report: Report, options: AnalyzeOptions, debug_dirs: list[str]):
    """The huge libraries gdb gets as copies without symbols, or None (all loaded as they are)."""
    if not options.fast_libraries or options.debuginfod:
        return None  # with debuginfod, gdb may fetch debug info for any library
    from coreanalyze.gdb.libcopies.copies import plan_fast_libraries
    from coreanalyze.gdb.libcopies.errors import LibraryCopyError

    try:
        return plan_fast_libraries(
            notes,
            report.modules,
            sysroot=options.sysroot,
            debug_dirs=debug_dirs,
            **({} if options.fast_libraries_min_symbols is None else {"min_symbols": options.fast_libraries_min_symbols}),
        )
    except LibraryCopyError:
        return None  # an optimisation only: gdb then reads every library itself


@dataclass
class _GdbPlan:
    """How gdb opens this core: which files, which gdb, which speed work runs beside it."""

    core_path: str
    executable: str | None
    debug_dirs: list[str]
    fast: Any = None  # libcopies' plan of symbol-less library copies, or None
    gdb_pool: Any = None  # a warm pool serving one core after another, or None
    own_gdb: Any = None  # a gdb started early for this core alone, or None
    link_map: Any = None  # where files were loaded, for cores without NT_FILE
    while_gdb_loads: Callable[[], None] | None = None  # called once gdb starts reading libraries
    memory: Any = None  # the core's memory: the dist-info names that version the walk's imports
    python_runtime: Any = None  # _PyRuntime located in the core (pyruntime.FoundRuntime), or None


def _run_gdb(report: Report, options: AnalyzeOptions, plan: _GdbPlan):
    """gdb's view of the core into the report; returns the abort message gdb found, if any, and
    the instructions at the pcs a signal interrupted."""
    from coreanalyze.classify import load_rules
    from coreanalyze.gdb.libcopies.naming import collected_core
    from coreanalyze.gdb.pool import default_index_cache, gdb_for_analysis
    from coreanalyze.imported import as_dicts, distributions_in_memory, imported_packages
    from coreanalyze.linkmap import PlacingGdb
    from coreanalyze.pystacks import add_python_frames

    index_cache = default_index_cache() if options.fast_libraries else None
    with gdb_for_analysis(
        plan.gdb_pool,
        gdb_path=options.gdb,
        timeout=options.timeout,
        debuginfod=options.debuginfod,
        index_cache=index_cache,
        own=plan.own_gdb,
    ) as gdb, collected_core(
        gdb if plan.link_map is None else PlacingGdb(gdb, plan.link_map),
        plan.core_path,
        executable=plan.executable,
        sysroot=options.sysroot,
        debug_dirs=plan.debug_dirs,
        fast=plan.fast,
        before_target=plan.while_gdb_loads,
    ) as (session, analysis):
        report.threads = analysis.threads
        report.warnings.extend(analysis.warnings)
        if analysis.crashing_tid is not None:
            report.crashing_thread = analysis.crashing_tid
        _merge_signal(report.core.signal, analysis.siginfo)
        report.fault_instruction = analysis.fault_instruction
        try:
            # The walker is sourced into gdb on first use (a pooled gdb keeps it for later cores).
            # A user's rules may name thread roles of their own; the built-in ones need no wait.
            user_rules = load_rules(options.rules_files) if options.rules_files else None
            stacks = add_python_frames(
                session,
                report.threads,
                with_locals=options.with_locals,
                rules=user_rules,
                imports=True,
                runtime=plan.python_runtime,
            )
        except GdbError as e:
            report.warnings.append(f"Python frames could not be read: {e}")
        else:
            if stacks.python_version or _looks_like_python(report):
                # A program without an interpreter has no Python frames to miss.
                report.warnings.extend(stacks.warnings)
            report.launched_from = stacks.launched_from
            if stacks.python_version:
                report.environment["python_version"] = stacks.python_version
            if stacks.walk is not None and stacks.walk.imports:
                # The packages of the process that died; describe_environment adds the libraries
                # each one installed, as the wheels here recorded them.
                report.environment["packages"] = as_dicts(
                    imported_packages(stacks.walk.imports, distributions_in_memory(plan.memory))
                )
        return analysis.abort_message, analysis.interrupted_instructions


def analyze_core(core_path: str, options: AnalyzeOptions | None = None, *, gdb_pool=None) -> AnalysisResult:
    """gdb_pool: a coreanalyze.gdb.pool.GdbPool whose gdb processes (and the libraries they have
    read) serve one core after another; without one, a gdb is started for this core."""
    from coreanalyze.classify import load_rules

    options = options or AnalyzeOptions()
    from coreanalyze.gpu.coredump import is_gpu_core

    if is_gpu_core(core_path):  # a GPU core alone: what the GPU did
        from coreanalyze.gpu.stage import gpu_core_report

        report, failure = gpu_core_report(core_path)
        return AnalysisResult(report, failure, EXIT_OK if failure is None else AnalysisFailed.exit_code)
    if options.gpu_core is not None and not is_gpu_core(options.gpu_core):
        raise BadInput(f"--gpu-core {options.gpu_core}: not a GPU core dump (an ELF core of the CUDA architecture)")
    # A bad rules file is bad input: the user's files are read before the work. The built-in
    # rules cannot be bad; they are read while gdb works (see _Rules).
    rules = _Rules(load_rules(options.rules_files) if options.rules_files else None)
    notes = read_core(core_path)
    own_gdb = None
    try:
        options, gdb_pool = _gdb_for_architecture(notes.arch, options, gdb_pool)
        if gdb_pool is None:
            own_gdb = _own_gdb(options)
            own_gdb.start_early()  # comes up while the notes and libraries are read
        return _analyze_notes(core_path, notes, options, rules, gdb_pool, own_gdb)
    finally:
        if own_gdb is not None:
            own_gdb.close()
        notes.close()


def _gdb_for_architecture(arch: str, options: AnalyzeOptions, gdb_pool):
    """Options naming a gdb that reads this core's architecture (gdb-multiarch for a core from
    another machine), and the pool only when its gdb is that one."""
    from dataclasses import replace

    from coreanalyze.arch.debugger import gdb_for_core

    chosen = gdb_for_core(options.gdb, arch)
    if chosen == options.gdb:
        return options, gdb_pool
    if gdb_pool is not None and getattr(gdb_pool, "gdb_path", None) != chosen:
        gdb_pool = None  # a pool of another gdb: this core gets a gdb of its own
    return replace(options, gdb=chosen), gdb_pool


def analyze_live_process(pid: int, options: AnalyzeOptions | None = None, *, keep_core: str | None = None) -> AnalysisResult:
    """Snapshot a live process (it is left running as it was), analyze the snapshot, and delete
    it unless keep_core names where to keep it."""
    from coreanalyze.hang.snapshot import live_snapshot

    options = options or AnalyzeOptions()
    with live_snapshot(pid, keep_core=keep_core, gdb=options.gdb, timeout=options.timeout) as core:
        result = analyze_core(str(core), options)
    if keep_core is None and result.report.core is not None:
        result.report.core.path = f"pid {pid} (snapshot, not kept)"
    return result


def _own_gdb(options: AnalyzeOptions):
    from coreanalyze.gdb.pool import OwnGdb, default_index_cache

    index_cache = default_index_cache() if options.fast_libraries else None
    return OwnGdb(gdb_path=options.gdb, timeout=options.timeout, debuginfod=options.debuginfod, index_cache=index_cache)


class _Rules:
    """The rules to classify with: given, or the built-in ones compiled in the background while
    gdb works (their few hundred patterns then cost no time)."""

    def __init__(self, given) -> None:
        self._given = given
        self._reading: background.Job | None = None

    def read_in_background(self) -> None:
        from coreanalyze.classify import load_rules

        if self._given is None and self._reading is None:
            self._reading = background.start("rules", load_rules)

    def get(self):
        from coreanalyze.classify import load_rules

        if self._given is not None:
            return self._given
        if self._reading is not None:
            self._reading.wait()  # then cached: load_rules() answers at once
        return load_rules()


class _AbortMessageScan:
    """find_abort_message for the crashing thread's stack pointer as the core's notes give it,
    run in the background while gdb loads the core: the scan only reads the core file, and its
    time then costs nothing. Its answer is used only for that same stack pointer."""

    def __init__(self, notes):
        thread = notes.thread(notes.crashing_tid)
        self.sp = (thread.registers.get("rsp") or thread.registers.get("sp")) if thread else None
        self.signal = notes.signal
        self._memory = notes.memory
        self._job: background.Job | None = None

    def start(self) -> None:
        from coreanalyze.abortmsg import find_abort_message

        if self._job is None:
            self._job = background.start("abort-message", find_abort_message, self._memory, self.sp, self.signal)

    def result_for(self, memory, sp) -> str | None:
        from coreanalyze.abortmsg import find_abort_message

        self.wait()
        if sp == self.sp and self._job is not None and self._job.done:
            return self._job.result()
        # Another stack pointer, or the scan failed: scan here, where errors surface.
        return find_abort_message(memory, sp, self.signal)

    def wait(self) -> None:
        if self._job is not None:
            self._job.wait()


def _uncaught_exception(report: Report, notes, abort_message: str | None) -> str | None:
    """The C++ exception the crashed thread was handling, read from the core.

    Dying in std::terminate: the exception's type (as classification.detail) and libstdc++'s own
    message with what(). Aborting inside a catch block (TensorFlow's DUCC FFT wrapper prints the
    exception and calls abort()): the reason in its what() text is the abort message, unless the
    program logged a CHECK / LOG(FATAL) line of its own."""
    from coreanalyze.abortmsg import (
        dying_of_terminate,
        find_handled_exception,
        find_uncaught_exception,
        is_log_fatal,
        mapped_file_reader,
        reason_in,
        searches_far_memory,
    )

    crashed = report.crashed_thread
    if crashed is None or not searches_far_memory(notes.signal):
        return abort_message  # a fault of an instruction, not an abort
    terminating = dying_of_terminate([f.function for f in crashed.frames])
    read_mapped = mapped_file_reader(notes, report.modules)
    thread = notes.thread(notes.crashing_tid)
    thread_pointer = thread.registers.get("fs_base") if thread is not None else None
    thrown = find_handled_exception(notes.memory, thread_pointer, read_mapped)
    if terminating and (thrown is None or not thrown.type):
        thrown = find_uncaught_exception(notes.memory, read_mapped) or thrown
    if thrown is None:
        return abort_message
    if thrown.type:
        report.classification.detail = thrown.type
    if terminating:
        if thrown.type and (not abort_message or "terminate called" not in abort_message):
            return thrown.message()
        return abort_message
    if is_log_fatal(abort_message):
        return abort_message
    return reason_in(thrown) or abort_message


def _analyze_notes(core_path: str, notes, options: AnalyzeOptions, rules: _Rules, gdb_pool=None, own_gdb=None) -> AnalysisResult:
    report = Report(core=to_core_info(notes), tool_version=__version__)
    report.warnings.extend(notes.warnings)
    report.crashing_thread = notes.crashing_tid
    report.auxv = dict(notes.auxv)
    image = None
    if options.sysroot:
        from coreanalyze.image import image_sysroot, is_image

        if is_image(options.sysroot):
            # A container image: the files this core needs, copied out once into a cache
            # directory that then serves as the sysroot (coreanalyze.image).
            image = image_sysroot(options.sysroot, notes)
            options = replace(options, sysroot=image.root)
    user_sysroot = None if image is not None else options.sysroot
    executable = _resolve_executable(notes, options, report)
    report.core.executable_used = executable
    link_map = _link_map(notes, executable, options, report)
    report.modules = module_table(notes, executable=options.python, sysroot=options.sysroot)
    runtime = _python_runtime(notes, report)
    with tempfile.TemporaryDirectory(prefix="coreanalyze-sysroot-") as overlay:
        fetched = None
        if user_sysroot and os.path.isdir(user_sysroot):
            options = _loader_view(notes, report, options, overlay)
        if options.fetch:
            options, fetched = _fetch_libraries(notes, report, options, overlay, runtime)
            if link_map is not None and options.sysroot == overlay:
                link_map = _place_fetched(notes, executable, overlay, link_map, report)
        if options.sysroot != overlay:
            # An image's copy, or this machine's own files: the loader's names may still be missing.
            options = _loader_view(notes, report, options, overlay)
        mark_sources(
            report.modules, python=options.python, sysroot=user_sysroot, image=image,
            wheels=fetched.wheels if fetched else None, unfetched=fetched.unfetched if fetched else (),
        )  # fmt: skip
        files_from = _FilesFrom(image, user_sysroot)
        return _analyze_with_modules(
            core_path, notes, report, executable, options, rules, gdb_pool, own_gdb, link_map, files_from, runtime
        )


def _python_runtime(notes, report: Report):
    """_PyRuntime located in the core when the interpreter's own files are not here (then the
    walker starts from it, in gdb and in-process alike); None when their symbols serve."""
    from coreanalyze.pyruntime import runtime_unless_symbols

    runtime = runtime_unless_symbols(notes, report.modules)
    if runtime is not None:
        report.warnings.append(runtime.note())
        report.environment["python_runtime"] = f"located by scanning the core ({runtime.how})"
    return runtime


def _fetch_libraries(notes, report: Report, options: AnalyzeOptions, overlay: str, runtime=None):
    """Fetch what is missing (see coreanalyze.fetch); the options then use the overlay sysroot.
    Returns (options, the FetchResult or None when nothing was tried). runtime: _PyRuntime as
    located in the core, when the interpreter's files are not here."""
    from coreanalyze.coretarget import walk_core
    from coreanalyze.fetch import fetch_missing
    from coreanalyze.fetch.overlay import build_overlay
    from coreanalyze.imported import as_dicts, distributions_in_memory, imported_packages

    walk = walk_core(notes, report.modules, {"imports": True, **(runtime.walker_options() if runtime else {})})
    in_memory = distributions_in_memory(notes.memory)
    packages = as_dicts(imported_packages(walk.get("imports") or [], in_memory))
    python_version = walk.get("python_version")
    if not python_version or not report.core.arch:
        report.warnings.append("--fetch: the core's Python version is unknown here; nothing was fetched")
        return options, None
    result = fetch_missing(
        notes, report.modules, packages, python_version=".".join(python_version.split(".")[:2]), arch=report.core.arch,
        distributions=in_memory,
    )  # fmt: skip
    report.environment["fetch_attempts"] = [asdict(a) for a in result.attempts]
    report.environment["fetch_target"] = result.target
    if result.unfetched:
        report.warnings.append(f"--fetch: {len(result.unfetched)} libraries could not be fetched and verified")
    if not result.files:
        return options, result
    build_overlay(overlay, notes, report.modules, result.files, options.sysroot if options.sysroot != overlay else None)
    report.modules = module_table(notes, executable=options.python, sysroot=overlay)
    for module in report.modules:
        if module.path in result.files:
            module.status = ModuleStatus.OK  # verified against the core (fetch/verify.py)
    return _with_overlay(options, overlay), result


def _with_overlay(options: AnalyzeOptions, overlay: str) -> AnalyzeOptions:
    """The options with the overlay sysroot. The overlay links the mapped files only: the given
    sysroot's debug files stay in reach."""
    from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, under

    if options.sysroot == overlay:
        return options
    debug = under(options.sysroot, SYSTEM_DEBUG_DIR) if options.sysroot else None
    extra = [debug] if debug and os.path.isdir(debug) and debug not in options.debug_dirs else []
    return replace(options, sysroot=overlay, debug_dirs=[*options.debug_dirs, *extra])


def _loader_view(notes, report: Report, options: AnalyzeOptions, overlay: str) -> AnalyzeOptions:
    """A --sysroot directory where gdb would miss files the loader found (no merged-/usr links,
    links from the machine's root): the overlay links every name to its file, and gdb and the
    rest of the analysis use it."""
    from coreanalyze.fetch.overlay import build_overlay, gdb_would_miss

    if not gdb_would_miss(options.sysroot or "/", notes, report.modules):
        return options
    build_overlay(overlay, notes, report.modules, {}, options.sysroot)
    return _with_overlay(options, overlay)


def _suggest_fetch(report: Report, options: AnalyzeOptions) -> None:
    from coreanalyze.packages import site_packages_of

    if options.fetch:
        return
    absent = [m for m in report.modules if m.status.unreliable and site_packages_of(m.path) is not None]
    if absent:
        report.warnings.append(
            f"{len(absent)} site-packages libraries of the core are missing or different here;"
            " --fetch downloads their wheels with pip and uses those that match the core"
        )


@dataclass
class _FilesFrom:
    """Where the files given to the analysis came from, for the report (coreanalyze.provenance)."""

    image: Any  # an ImageSysroot when --sysroot named an image
    sysroot: str | None  # the user's --sysroot directory


def _analyze_with_modules(
    core_path: str, notes, report: Report, executable, options: AnalyzeOptions, rules, gdb_pool, own_gdb, link_map,
    files_from: _FilesFrom, runtime=None,
):  # fmt: skip
    from coreanalyze.classify import classify
    from coreanalyze.environment import describe_environment
    from coreanalyze.gpu.host import host_launched_from
    from coreanalyze.gpu.stage import add_gpu_exception
    from coreanalyze.hang import classify_hang
    from coreanalyze.opinstance import add_op_instance
    from coreanalyze.reraise import settle_reraised_signal
    from coreanalyze.symbols import Symbolizer, debug_dirs_for_gdb, improve_frames

    failure = None
    exit_code = EXIT_OK
    abort_message = None
    interrupted: dict[int, str] = {}
    symbolizer = Symbolizer(options.debug_dirs, options.sysroot)
    gdb_debug_dirs = debug_dirs_for_gdb(report, options.debug_dirs, sysroot=options.sysroot, symbolizer=symbolizer)
    fast = _fast_libraries(notes, report, options, gdb_debug_dirs)
    abort_scan = _AbortMessageScan(notes)

    def while_gdb_loads() -> None:
        # Python work that needs no gdb, in threads while gdb reads the core's libraries (the
        # commands before that would only be slowed down by threads wanting the interpreter).
        abort_scan.start()
        rules.read_in_background()
        if fast is not None:
            fast.order_in_background()
    try:
        plan = _GdbPlan(
            core_path, executable, gdb_debug_dirs, fast, gdb_pool, own_gdb, link_map, while_gdb_loads, notes.memory, runtime
        )
        abort_message, interrupted = _run_gdb(report, options, plan)
    except GdbError as e:
        failure, exit_code = f"{e}; this report is built from the core's notes alone", e.exit_code
        report.warnings.append(failure)
        report.threads = threads_from_notes(notes)
    finally:
        if fast is not None:
            fast.close()
        abort_scan.wait()  # it reads the core, which the caller closes after this returns
    if not report.threads:
        report.threads = threads_from_notes(notes)
    if link_map is not None:
        _modules_of_frames(report, notes)
    for thread in report.threads:
        thread.crashed = thread.tid == report.crashing_thread

    _mark_unreliable(report)
    try:
        report.warnings.extend(
            improve_frames(report, debug_dirs=options.debug_dirs, sysroot=options.sysroot, symbolizer=symbolizer, notes=notes)
        )
        in_frames = {f.module for t in report.threads for f in t.frames if f.module}
        mark_debug_files(
            [m for m in report.modules if m.path in in_frames], symbolizer.debug_file_for,
            debug_dirs=options.debug_dirs, sysroot=files_from.sysroot, image=files_from.image,
        )  # fmt: skip
    finally:
        symbolizer.close()
    if not abort_message:
        crashed = report.crashed_thread
        sp = (crashed.registers.get("rsp") or crashed.registers.get("sp")) if crashed else None
        abort_message = abort_scan.result_for(notes.memory, sp)
    abort_message = _uncaught_exception(report, notes, abort_message)
    report.environment.update(describe_environment(notes, report, include_env=options.include_env))
    _suggest_fetch(report, options)
    # A handler that re-raised (faulthandler, a crash reporter): the signal frame holds the original.
    settle_reraised_signal(report, notes.memory, rules.get(), interrupted)
    # A snapshot of a stuck process (gcore, --pid, a watchdog's signal) is a hang, not a crash.
    hang = classify_hang(report, notes, rules.get())
    report.classification = hang or classify(report, abort_message=abort_message, rules=rules.get())
    # A crash in a thread of the GPU driver: the user's Python line is the one blocked in a GPU call.
    report.launched_from = host_launched_from(report) or report.launched_from
    if hang is None:  # a running kernel's node, for crashes (a snapshot has no faulting kernel)
        add_op_instance(report, notes, debug_dirs=options.debug_dirs, sysroot=options.sysroot)
    add_gpu_exception(report, getattr(notes, "environ", None), options.gpu_core_beside or core_path, options.gpu_core, rules.get())
    return AnalysisResult(report, failure, exit_code)
