"""The stages of one core's analysis, declared in order over one Context.

Each stage is a function of the Context: it reads what earlier stages left there and adds its
own part (the report, the Process, the options as the image or --fetch changed them). The list
is the pipeline; coreanalyze.pipeline.analyze runs it, times each stage, and turns a debugger that broke
(DebuggerError) into a report from the core's notes alone with exit code 3.

The debugger stage unwinds through the Opener it is given (coreanalyze.unwind.debugger: gdb's by
default, chosen by coreanalyze.pipeline.analyze, or any unwinder given to analyze_core), which keeps its
own plan; everything else reads the Process (coreanalyze.process.process).
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from coreanalyze import __version__
from coreanalyze.arch import stack_pointer
from coreanalyze.base import background
from coreanalyze.base.errors import EXIT_OK, BadInput, DebuggerError
from coreanalyze.base.model import Report, SignalInfo
from coreanalyze.base.vocabulary import ModuleStatus
from coreanalyze.corefile import threads_from_notes, to_core_info
from coreanalyze.corefile.modules import elf_build_id, module_table
from coreanalyze.pipeline.warmup import WarmUp
from coreanalyze.process import forked
from coreanalyze.process.process import Process
from coreanalyze.symbols.provenance import mark_debug_files, mark_sources
from coreanalyze.unwind.debugger import Opener


@dataclass
class Context:
    """What one core's analysis knows so far; each stage reads it and adds to it."""

    core_path: str
    options: Any  # coreanalyze.pipeline.analyze.AnalyzeOptions; the image and --fetch replace it
    rules: Rules
    process: Process
    report: Report
    cleanup: ExitStack
    debugger: Opener  # how the unwinder is opened on this core
    image: Any = None  # an ImageSysroot when --sysroot named an image
    user_sysroot: str | None = None  # the user's --sysroot directory
    executable: str | None = None  # the program given to the debugger
    link_map: Any = None  # where files were loaded, for cores without NT_FILE
    runtime: Any = None  # _PyRuntime located in the core (pyruntime.FoundRuntime), or None
    fetched: Any = None  # what --fetch found (fetch.FetchResult), or None
    symbolizer: Any = None
    abort_scan: AbortMessageScan | None = None
    # Modules whose separate debug file the unwinder reads: a line it found none for there has none.
    lines_from_debugger: set[str] = field(default_factory=set)
    walker: Any = None  # the CPython walker on the Process (coretarget.InProcessWalker)
    warm_up: Any = None  # the later stages' imports and patterns, prepared beside the debugger (warmup.WarmUp)
    overlay: str | None = None  # a private sysroot of links (the loader's names, fetched files)
    abort_message: str | None = None
    interrupted: dict[int, str] = field(default_factory=dict)  # pc -> instruction, where a signal interrupted
    jit: Any = None  # the run-time compiled function the crashing pc lies in (jitcode.JitFunction)
    failure: str | None = None  # why the analysis is partial
    exit_code: int = EXIT_OK
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds

    @property
    def notes(self):
        return self.process.notes


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Context], None]


def new_report(process: Process, core_path: str) -> Report:
    from coreanalyze.corefile.shrunk import marker_of_core

    report = Report(core=to_core_info(process.notes), tool_version=__version__)
    # A `coreanalyze shrink` copy says so, in every report made of it (one core, a batch's).
    report.core.shrunk = marker_of_core(core_path)
    report.warnings.extend(process.notes.warnings)
    report.crashing_thread = process.crashing_tid
    report.auxv = dict(process.auxv)
    return report


# --------------------------------------------------------------------------- files


def image_sysroot(ctx: Context) -> None:
    """A container image as --sysroot: the files this core needs, copied out once into a cache
    directory that then serves as the sysroot (coreanalyze.image)."""
    options = ctx.options
    if options.sysroot:
        from coreanalyze.image import image_sysroot as unpack
        from coreanalyze.image import is_image

        if is_image(options.sysroot):
            ctx.image = unpack(options.sysroot, ctx.process)
            ctx.options = replace(options, sysroot=ctx.image.root)
    ctx.user_sysroot = None if ctx.image is not None else ctx.options.sysroot


def executable(ctx: Context) -> None:
    ctx.executable = resolve_executable(ctx.process, ctx.options, ctx.report)
    ctx.report.core.executable_used = ctx.executable


def resolve_executable(process: Process, options, report: Report) -> str | None:
    """The binary to give the debugger: --python when given, else the core's own executable."""
    core_exe = process.executable
    if options.python:
        given = Path(options.python)
        if not given.exists():
            raise BadInput(f"--python {options.python}: no such file")
        if given.is_dir():
            raise BadInput(f"--python {options.python} is a directory, not a program")
        with open(given, "rb") as f:
            if f.read(4) != b"\x7fELF":
                raise BadInput(f"--python {options.python} is not an ELF executable (a script or wrapper?)")
        core_id = process.build_ids.get(core_exe) if core_exe else None
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
        from coreanalyze.base.rootpaths import file_in_root

        local = file_in_root(options.sysroot, core_exe)
    else:
        local = core_exe if os.path.isfile(core_exe) else None
    if local:
        return local
    report.warnings.append(f"the core's executable {core_exe} is not on this machine; pass --python or --sysroot")
    return None


def link_map(ctx: Context) -> None:
    """For a core without a file list: the objects placed from the loader's list in memory,
    which then stand in for the file list (none when the core has one, or nothing was found)."""
    from coreanalyze.corefile.buildids import build_ids_from_memory
    from coreanalyze.process.linkmap import needs_link_map, read_link_map

    notes, report = ctx.notes, ctx.report
    if not needs_link_map(ctx.process):
        return
    placed = read_link_map(ctx.process, ctx.executable, ctx.options.sysroot)
    report.warnings.extend(placed.warnings)
    if not placed.objects:
        return
    notes.mappings = placed.mappings
    # The build-ids in first pages the core kept (a library whose headers sit in a read-only,
    # non-executable segment: qemu dumps those) can be read only now that the files are placed.
    notes.build_ids = {**build_ids_from_memory(notes), **notes.build_ids}
    report.warnings.append(f"the files' places were read from the dynamic linker's list in memory ({len(placed.objects)} objects)")
    ctx.link_map = placed


def modules(ctx: Context) -> None:
    """The module table; from here on the Process reads the crashed build's files it names."""
    ctx.report.modules = module_table(ctx.process.notes, executable=ctx.options.python, sysroot=ctx.options.sysroot)
    ctx.process.set_modules(ctx.report.modules)


def python_runtime(ctx: Context) -> None:
    """_PyRuntime located in the core when the interpreter's own files are not here (then the
    walker starts from it); none when their symbols serve."""
    from coreanalyze.python.pyruntime import runtime_unless_symbols

    ctx.runtime = runtime_unless_symbols(ctx.process, ctx.report.modules)
    if ctx.runtime is not None:
        ctx.report.warnings.append(ctx.runtime.note())
        ctx.report.environment["python_runtime"] = f"located by scanning the core ({ctx.runtime.how})"


def overlay(ctx: Context) -> None:
    """A private directory for the sysroot of links the next stages may make."""
    import tempfile

    ctx.overlay = ctx.cleanup.enter_context(tempfile.TemporaryDirectory(prefix="coreanalyze-sysroot-"))
    if ctx.user_sysroot and os.path.isdir(ctx.user_sysroot):
        ctx.options = loader_view(ctx.process, ctx.report, ctx.options, ctx.overlay)


def fetch(ctx: Context) -> None:
    """--fetch: the missing site-packages libraries, downloaded and verified, in an overlay
    sysroot that the options then name (coreanalyze.fetch)."""
    if not ctx.options.fetch:
        return
    ctx.options, ctx.fetched = fetch_libraries(ctx.process, ctx.report, ctx.options, ctx.overlay, ctx.runtime)
    ctx.process.set_modules(ctx.report.modules)
    if ctx.link_map is not None and ctx.options.sysroot == ctx.overlay:
        ctx.link_map = place_fetched(ctx.process, ctx.executable, ctx.overlay, ctx.link_map, ctx.report)


def loader_names(ctx: Context) -> None:
    """An image's copy, or this machine's own files: the loader's names may still be missing."""
    if ctx.options.sysroot != ctx.overlay:
        ctx.options = loader_view(ctx.process, ctx.report, ctx.options, ctx.overlay)


def loader_view(process: Process, report: Report, options, overlay: str):
    """A --sysroot directory where gdb would miss files the loader found (no merged-/usr links,
    links from the machine's root): the overlay links every name to its file, and gdb and the
    rest of the analysis use it."""
    from coreanalyze.fetch.overlay import build_overlay, gdb_would_miss

    if not gdb_would_miss(options.sysroot or "/", process, report.modules):
        return options
    build_overlay(overlay, process, report.modules, {}, options.sysroot)
    return with_overlay(options, overlay)


def with_overlay(options, overlay: str):
    """The options with the overlay sysroot. The overlay links the mapped files only: the given
    sysroot's debug files stay in reach."""
    from coreanalyze.symbols.paths import SYSTEM_DEBUG_DIR, under

    if options.sysroot == overlay:
        return options
    debug = under(options.sysroot, SYSTEM_DEBUG_DIR) if options.sysroot else None
    extra = [debug] if debug and os.path.isdir(debug) and debug not in options.debug_dirs else []
    return replace(options, sysroot=overlay, debug_dirs=[*options.debug_dirs, *extra])


def fetch_libraries(process: Process, report: Report, options, overlay: str, runtime=None):
    """Fetch what is missing; the options then use the overlay sysroot. Returns (options, the
    FetchResult or None when nothing was tried)."""
    from coreanalyze.fetch import fetch_missing
    from coreanalyze.fetch.overlay import build_overlay
    from coreanalyze.pipeline.pystacks import walk_options
    from coreanalyze.process.imported import as_dicts, imported_packages
    from coreanalyze.python.coretarget import InProcessWalker

    walk = InProcessWalker(process, report.modules).python_stacks(walk_options(imports=True, runtime=runtime))
    in_memory = process.distributions_in_memory
    packages = as_dicts(imported_packages(walk.imports, in_memory))
    python_version = walk.python_version
    if not python_version or not report.core.arch:
        report.warnings.append("--fetch: the core's Python version is unknown here; nothing was fetched")
        return options, None
    result = fetch_missing(
        process, report.modules, packages, python_version=".".join(python_version.split(".")[:2]), arch=report.core.arch,
        distributions=in_memory,
    )  # fmt: skip
    report.environment["fetch_attempts"] = [asdict(a) for a in result.attempts]
    report.environment["fetch_target"] = result.target
    if result.unfetched:
        report.warnings.append(f"--fetch: {len(result.unfetched)} libraries could not be fetched and verified")
    if not result.files:
        return options, result
    build_overlay(overlay, process, report.modules, result.files, options.sysroot if options.sysroot != overlay else None)
    report.modules = module_table(process.notes, executable=options.python, sysroot=overlay)
    for module in report.modules:
        if module.path in result.files:
            module.status = ModuleStatus.OK  # verified against the core (fetch/verify.py)
    return with_overlay(options, overlay), result


def place_fetched(process: Process, executable: str | None, overlay: str, placed, report: Report):
    """The link map again, now that fetched libraries stand in the overlay sysroot: the debugger
    gets their files (the places are the same, read from the same list), and only what is
    still not here is warned about."""
    from coreanalyze.process.linkmap import read_link_map

    again = read_link_map(process, executable, overlay)
    if not again.objects:
        return placed
    report.warnings = [w for w in report.warnings if w not in placed.warnings] + again.warnings
    return again


def provenance(ctx: Context) -> None:
    fetched = ctx.fetched
    mark_sources(
        ctx.report.modules, python=ctx.options.python, sysroot=ctx.user_sysroot, image=ctx.image,
        wheels=fetched.wheels if fetched else None, unfetched=fetched.unfetched if fetched else (),
    )  # fmt: skip


# --------------------------------------------------------------------------- the debugger


def prepare_debugger(ctx: Context) -> None:
    """What the unwinder is given (its opener's plan) and the work that runs beside it while it
    loads the core."""
    from coreanalyze.python.coretarget import InProcessWalker
    from coreanalyze.symbols import Symbolizer

    options = ctx.options
    ctx.symbolizer = ctx.cleanup.enter_context(Symbolizer(options.debug_dirs, options.sysroot))
    ctx.debugger.prepare(ctx)
    ctx.abort_scan = AbortMessageScan(ctx.process)
    ctx.walker = InProcessWalker(ctx.process, ctx.report.modules, shrunk=ctx.report.core.shrunk is not None)


def while_debugger_loads(ctx: Context) -> Callable[[], None]:
    def start() -> None:
        # Python work that needs no debugger, in threads while it reads the core's libraries
        # (the commands before that would only be slowed down by threads wanting the interpreter).
        ctx.process.scan_in_background()  # first: forked while no other thread runs (coreanalyze.process.forked)
        ctx.abort_scan.start()
        ctx.walker.start(_walk_options(ctx))
        ctx.rules.read_in_background()
        ctx.debugger.beside(ctx)
        ctx.warm_up = WarmUp(ctx.rules.get)
        ctx.cleanup.callback(ctx.warm_up.wait)
        ctx.warm_up.start()  # last: the work above is needed sooner

    return start


def _walk_options(ctx: Context):
    """The walk _python_frames will ask for when the debugger agrees on the crashing thread
    (the notes' crashing thread gets the locals)."""
    from coreanalyze.pipeline.pystacks import walk_options

    return walk_options(with_locals=ctx.options.with_locals, locals_tid=ctx.process.crashing_tid, imports=True, runtime=ctx.runtime)


def debugger(ctx: Context) -> None:
    """The unwinder's view of the core into the report: threads, native frames, registers, the
    faulting instruction; then the Python frames, placed among them. A debugger that breaks
    leaves the report to the core's notes (exit code 3)."""
    try:
        with ExitStack() as stack:
            stack.callback(ctx.process.wait)
            stack.callback(ctx.walker.wait)
            stack.callback(ctx.abort_scan.wait)  # they read the core, which is closed after
            with ctx.debugger.open(ctx, while_debugger_loads(ctx)) as analysis:
                if ctx.warm_up is not None:
                    # The main thread needs the interpreter from here on; the step under way
                    # (an import the stages below would make) is finished first.
                    ctx.warm_up.wait()
                _take_analysis(ctx, analysis)
            # The walk is in-process: the debugger is ended (and torn down beside) before it.
            _python_frames(ctx)
    except DebuggerError as e:
        ctx.failure, ctx.exit_code = f"{e}; this report is built from the core's notes alone", e.exit_code
        ctx.report.warnings.append(ctx.failure)
        ctx.report.threads = threads_from_notes(ctx.notes)


def after_debugger(ctx: Context) -> None:
    """What the unwinder leaves for the next analyses, made beside the rest of this one."""
    ctx.debugger.after(ctx)


def _take_analysis(ctx: Context, analysis) -> None:
    report = ctx.report
    report.threads = analysis.threads
    report.warnings.extend(analysis.warnings)
    if analysis.crashing_tid is not None:
        report.crashing_thread = analysis.crashing_tid
    merge_signal(report.core.signal, analysis.siginfo)
    report.fault_instruction = analysis.fault_instruction
    ctx.abort_message = analysis.abort_message
    ctx.interrupted = analysis.interrupted_instructions


def _python_frames(ctx: Context) -> None:
    """Python frames from the in-process walker (started while the debugger loaded the core)."""
    from coreanalyze.classify import load_rules
    from coreanalyze.pipeline.pystacks import add_python_frames
    from coreanalyze.process.imported import as_dicts, imported_packages

    report, options = ctx.report, ctx.options
    # A user's rules may name thread roles of their own; the built-in ones need no wait.
    user_rules = load_rules(options.rules_files) if options.rules_files else None
    stacks = add_python_frames(
        ctx.walker, report.threads, with_locals=options.with_locals, rules=user_rules, imports=True, runtime=ctx.runtime
    )
    if stacks.python_version or looks_like_python(report):
        # A program without an interpreter has no Python frames to miss.
        report.warnings.extend(stacks.warnings)
    report.launched_from = stacks.launched_from
    if stacks.walk is not None:
        ctx.process.gil_range = stacks.walk.gil_range
    if stacks.python_version:
        report.environment["python_version"] = stacks.python_version
    if stacks.walk is not None:
        report.environment.update(stacks.walk.build_environment())
    if stacks.walk is not None and stacks.walk.imports:
        # The packages of the process that died; describe_environment adds the libraries
        # each one installed, as the wheels here recorded them.
        report.environment["packages"] = as_dicts(imported_packages(stacks.walk.imports, ctx.process.distributions_in_memory))


def merge_signal(primary: SignalInfo, extra: SignalInfo | None) -> None:
    """The core's own siginfo is authoritative; the debugger's only fills gaps."""
    if extra is None:
        return
    for name in ("number", "name", "code", "code_name", "address", "sender_pid", "sender_uid"):
        if getattr(primary, name) is None and getattr(extra, name) is not None:
            setattr(primary, name, getattr(extra, name))


def looks_like_python(report: Report) -> bool:
    names = [os.path.basename(m.path) for m in report.modules]
    if report.core and report.core.executable:
        names.append(os.path.basename(report.core.executable))
    return any(n.startswith(("python", "libpython")) for n in names)


# --------------------------------------------------------------------------- frames


def threads(ctx: Context) -> None:
    """Threads from the notes where the debugger gave none; frames' modules; the crashed one."""
    report = ctx.report
    if not report.threads:
        report.threads = threads_from_notes(ctx.notes)
    if ctx.link_map is not None:
        modules_of_frames(report, ctx.process)
    for thread in report.threads:
        thread.crashed = thread.tid == report.crashing_thread
    mark_unreliable(report)


def modules_of_frames(report: Report, process: Process) -> None:
    """Frames' modules from the placed files: gdb, given them as symbol files rather than
    shared libraries, names none."""
    placed = []
    for thread in report.threads:
        for frame in thread.frames:
            if frame.module is None and frame.pc is not None and frame.kind == "native":
                mapping = process.mapping_containing(frame.pc)
                frame.module = mapping.path if mapping else None
                if mapping is not None:
                    placed.append(f"thread {thread.tid}: frame #{frame.index} ")
    # gdb, not given the placed files' ranges, took these unnamed frames for strays.
    report.warnings = [w for w in report.warnings if not (w.startswith(tuple(placed)) and "outside every mapped file" in w)]


def mark_unreliable(report: Report) -> None:
    bad = {m.path for m in report.modules if m.status.unreliable}
    if not bad:
        return
    for thread in report.threads:
        for frame in thread.frames:
            if frame.module in bad:
                frame.reliable = False


def symbols(ctx: Context) -> None:
    """Names and lines for frames the debugger could not name; which debug files were used."""
    from coreanalyze.symbols import improve_frames

    report, options = ctx.report, ctx.options
    report.warnings.extend(
        improve_frames(
            report, debug_dirs=options.debug_dirs, sysroot=options.sysroot, symbolizer=ctx.symbolizer, notes=ctx.process.notes,
            lines_known=ctx.lines_from_debugger,
        )  # fmt: skip
    )
    in_frames = {f.module for t in report.threads for f in t.frames if f.module}
    mark_debug_files(
        [m for m in report.modules if m.path in in_frames], ctx.symbolizer.debug_file_for,
        debug_dirs=options.debug_dirs, sysroot=ctx.user_sysroot, image=ctx.image,
    )  # fmt: skip
    ctx.symbolizer.close()  # its indexes are large: not kept for the stages after


def jit_code(ctx: Context) -> None:
    """A crashing pc in code compiled at run time (XLA's): the frame is named from the object
    the JIT made, and the frames gdb made up under it - it has no unwind tables for such code,
    so they lie outside every file and have no name - are left out; the classification reads
    the callers from the stack instead (classify.beyond)."""
    from coreanalyze.process.jitcode import find_jit_function, is_anonymous_code

    thread = ctx.report.crashed_thread
    if thread is None or not thread.frames or not is_anonymous_code(ctx.process, thread.frames[0].pc):
        return
    top = thread.frames[0]
    jit = find_jit_function(ctx.process, top.pc)
    if jit is None:
        return
    ctx.jit = jit
    top.function = top.raw_function = jit.name
    if jit.start is not None:
        top.offset = top.pc - jit.start
    made_up = 0
    for frame in thread.frames[1:]:
        if frame.kind != "native" or frame.function or frame.module:
            break
        made_up += 1
    if made_up:
        del thread.frames[1 : 1 + made_up]
        for i, frame in enumerate(thread.frames):
            frame.index = i
        prefix = f"thread {thread.tid}: frame #"
        ctx.report.warnings = [w for w in ctx.report.warnings if not (w.startswith(prefix) and "outside every mapped file" in w)]
        ctx.report.warnings.append(
            f"thread {thread.tid}: {made_up} frame(s) under the code compiled at run time ({jit.name or 'unnamed'}) were left out:"
            " the debugger had no unwind tables for that code"
        )


# --------------------------------------------------------------------------- the crash


def abort_message(ctx: Context) -> None:
    """The message the process left before it aborted: the debugger's (glibc's __abort_msg),
    else the scan of the memory near the crash."""
    if ctx.abort_message:
        return
    crashed = ctx.report.crashed_thread
    sp = stack_pointer(crashed.registers, ctx.process.arch) if crashed else None
    ctx.abort_message = ctx.abort_scan.result_for(ctx.process, sp)


def uncaught_exception(ctx: Context) -> None:
    """The C++ exception the crashed thread was handling, read from the core.

    Dying in std::terminate: the exception's type (as classification.detail) and libstdc++'s own
    message with what(). Aborting inside a catch block (TensorFlow's DUCC FFT wrapper prints the
    exception and calls abort()): the reason in its what() text is the abort message, unless the
    program logged a CHECK / LOG(FATAL) line of its own."""
    from coreanalyze.classify.abortmsg import (
        dying_of_terminate,
        find_handled_exception,
        find_uncaught_exception,
        is_log_fatal,
        reason_in,
        searches_far_memory,
    )

    report, process, message = ctx.report, ctx.process, ctx.abort_message
    crashed = report.crashed_thread
    if crashed is None or not searches_far_memory(process.signal):
        return  # a fault of an instruction, not an abort
    terminating = dying_of_terminate([f.function for f in crashed.frames])
    read_mapped = process.read_mapped_file
    thrown = find_handled_exception(process, process.thread_pointer(), read_mapped)
    if terminating and (thrown is None or not thrown.type):
        thrown = find_uncaught_exception(process, read_mapped) or thrown
    if thrown is None:
        return
    if thrown.type:
        report.classification.detail = thrown.type
    if terminating:
        if thrown.type and (not message or "terminate called" not in message):
            ctx.abort_message = thrown.message()
    elif not is_log_fatal(message):
        ctx.abort_message = reason_in(thrown) or message


def environment(ctx: Context) -> None:
    from coreanalyze.process.environment import describe_environment
    from coreanalyze.process.packages import site_packages_of

    report, options = ctx.report, ctx.options
    report.environment.update(describe_environment(ctx.process, report, include_env=options.include_env))
    if options.fetch:
        return
    absent = [m for m in report.modules if m.status.unreliable and site_packages_of(m.path) is not None]
    if absent:
        report.warnings.append(
            f"{len(absent)} site-packages libraries of the core are missing or different here;"
            " --fetch downloads their wheels with pip and uses those that match the core"
        )


def reraised_signal(ctx: Context) -> None:
    """A handler that re-raised (faulthandler, a crash reporter): the signal frame holds the original."""
    from coreanalyze.classify.reraise import settle_reraised_signal

    settle_reraised_signal(ctx.report, ctx.process, ctx.rules.get(), ctx.interrupted)


def classification(ctx: Context) -> None:
    """A snapshot of a stuck process (gcore, --pid, a watchdog's signal) is a hang, not a crash;
    a crash's classification gets the op instance its kernel was running."""
    from coreanalyze.classify import classify
    from coreanalyze.classify.gpuhost import host_launched_from
    from coreanalyze.hang import classify_hang
    from coreanalyze.opinstance import add_op_instance

    report, options = ctx.report, ctx.options
    hang = classify_hang(report, ctx.process, ctx.rules.get())
    report.classification = hang or classify(report, abort_message=ctx.abort_message, rules=ctx.rules.get())
    # A crash in a thread of the GPU driver: the user's Python line is the one blocked in a GPU call.
    report.launched_from = host_launched_from(report) or report.launched_from
    if hang is None:  # a running kernel's node, for crashes (a snapshot has no faulting kernel)
        beyond = op_beyond(ctx)
        add_op_instance(report, ctx.process, ctx.symbolizer, sysroot=options.sysroot,
                        kernel=beyond.kernel_frame() if beyond else None, kernel_at=beyond.kernel.at if beyond else None)


def op_beyond(ctx: Context):
    """The op read from the crashing thread's stack where its frames name none (classify.beyond)."""
    from coreanalyze.classify.beyond import apply, find_op_beyond, may_find
    from coreanalyze.opinstance.codenames import CodeNames

    report = ctx.report
    if not may_find(report, ctx.rules.get(), ctx.jit):
        return None
    try:
        found = find_op_beyond(report, ctx.process, CodeNames(report.modules, ctx.process, ctx.symbolizer), ctx.rules.get(), ctx.jit)
    except (OSError, ValueError, KeyError, IndexError) as e:  # a broken core: the report stands as classified
        report.warnings.append(f"the op beyond the crashing frames could not be read: {type(e).__name__}: {e}")
        return None
    finally:
        ctx.symbolizer.close()  # the indexes it read: the op instance's reading opens what it needs
    if found is not None:
        apply(report, found)
    return found


def gpu_exception(ctx: Context) -> None:
    """What the GPU did, from the driver's GPU core dump beside the core (coreanalyze.gpu)."""
    from coreanalyze.gpu.stage import add_gpu_exception

    options = ctx.options
    add_gpu_exception(ctx.report, ctx.process.environ, options.gpu_core_beside or ctx.core_path, options.gpu_core, ctx.rules.get())


def job(ctx: Context) -> None:
    """Which job and rank of a multi-process run this was, and its part in the job's failure."""
    from coreanalyze.jobs.stage import add_job

    add_job(ctx.report, ctx.process)


STAGES: tuple[Stage, ...] = (
    Stage("image", image_sysroot),
    Stage("executable", executable),
    Stage("link map", link_map),
    Stage("modules", modules),
    Stage("python runtime", python_runtime),
    Stage("overlay", overlay),
    Stage("fetch", fetch),
    Stage("loader names", loader_names),
    Stage("provenance", provenance),
    Stage("prepare debugger", prepare_debugger),
    Stage("debugger", debugger),
    Stage("after debugger", after_debugger),
    Stage("threads", threads),
    Stage("symbols", symbols),
    Stage("jit code", jit_code),
    Stage("abort message", abort_message),
    Stage("uncaught exception", uncaught_exception),
    Stage("environment", environment),
    Stage("re-raised signal", reraised_signal),
    Stage("classification", classification),
    Stage("gpu exception", gpu_exception),
    Stage("job", job),
)


# --------------------------------------------------------------------------- helpers


class Rules:
    """The rules to classify with: given, or the built-in ones compiled in the background while
    the debugger works (their few hundred patterns then cost no time)."""

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


class AbortMessageScan:
    """find_abort_message for the crashing thread's stack pointer as the core's notes give it,
    run in the background while the debugger loads the core: the scan only reads the core
    file, and its time then costs nothing. Its answer is used only for that same stack pointer."""

    def __init__(self, process: Process):
        self.sp = process.stack_pointer()
        self.signal = process.signal
        self._process = process
        self._job: background.Job | forked.ForkedJob | None = None

    def start(self) -> None:
        from coreanalyze.classify.abortmsg import find_abort_message

        if self._job is None:
            self._job = forked.start("abort-message", find_abort_message, self._process, self.sp, self.signal)

    def result_for(self, process: Process, sp) -> str | None:
        from coreanalyze.classify.abortmsg import find_abort_message

        self.wait()
        if sp == self.sp and self._job is not None and self._job.done:
            return self._job.result()
        # Another stack pointer, or the scan failed: scan here, where errors surface.
        return find_abort_message(process, sp, self.signal)

    def wait(self) -> None:
        if self._job is not None:
            self._job.wait()
