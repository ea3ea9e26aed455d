"""Orchestration of one core's analysis: the core's notes -> the Process -> the declared stages
(coreanalyze.pipeline.stages: files, modules, the debugger's unwinding, Python frames, symbols, the
crash's messages, classification), each timed.

Each stage fills the one Report; when the debugger breaks (missing, crashed, hung), the report
is built from the core's notes alone and the result carries exit code 3 with the reason.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from coreanalyze.base.errors import EXIT_OK, AnalysisFailed, BadInput
from coreanalyze.base.model import Report
from coreanalyze.pipeline.stages import STAGES, Context, Rules, Stage, new_report
from coreanalyze.process.process import Process
from coreanalyze.unwind.debugger import Opener

# The stages that need the debugger end with its own; those after run on what it left.
_DEBUGGER_STAGE = next(i for i, stage in enumerate(STAGES) if stage.name == "debugger")
UP_TO_DEBUGGER = STAGES[: _DEBUGGER_STAGE + 1]
AFTER_DEBUGGER = STAGES[_DEBUGGER_STAGE + 1 :]


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
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds


def analyze_core(
    core_path: str,
    options: AnalyzeOptions | None = None,
    *,
    gdb_pool=None,
    debugger: Opener | None = None,
    record: Callable[[int, int], None] | None = None,
) -> AnalysisResult:
    """gdb_pool: a coreanalyze.gdb.pool.GdbPool whose gdb processes (and the libraries they have
    read) serve one core after another; without one, a gdb is started for this core.
    debugger: how to open another unwinder than gdb on the core (coreanalyze.unwind.debugger.Opener).
    record: hears every read of the core's memory, from the first (Process.open; coreanalyze.shrink)."""
    return begin_analysis(core_path, options, gdb_pool=gdb_pool, debugger=debugger, record=record).finish()


class Analysis:
    """One core's analysis begun: the stages up to the debugger's have run (its debugger is no
    longer needed), finish() runs the others. A batch worker has them run in a child process
    while its gdb loads the next core."""

    def __init__(self, ctx: Context | None, cleanup: ExitStack, result: AnalysisResult | None = None) -> None:
        self._ctx = ctx
        self._cleanup = cleanup
        self._result = result

    def finish(self) -> AnalysisResult:
        if self._result is None:
            assert self._ctx is not None
            ctx = self._ctx
            with self._cleanup:
                run_stages(ctx, AFTER_DEBUGGER)
                self._result = AnalysisResult(ctx.report, ctx.failure, ctx.exit_code, ctx.timings)
        return self._result

    def abandon(self) -> None:
        """Release what the analysis holds without running the remaining stages."""
        self._cleanup.close()


def begin_analysis(
    core_path: str,
    options: AnalyzeOptions | None = None,
    *,
    gdb_pool=None,
    debugger: Opener | None = None,
    record: Callable[[int, int], None] | None = None,
) -> Analysis:
    """The analysis up to and including the debugger's stage (see analyze_core)."""
    from coreanalyze.classify import load_rules

    options = options or AnalyzeOptions()
    from coreanalyze.gpu.coredump import is_gpu_core

    if is_gpu_core(core_path):  # a GPU core alone: what the GPU did
        from coreanalyze.gpu.stage import gpu_core_report

        report, failure = gpu_core_report(core_path)
        return Analysis(None, ExitStack(), AnalysisResult(report, failure, EXIT_OK if failure is None else AnalysisFailed.exit_code))
    if options.gpu_core is not None and not is_gpu_core(options.gpu_core):
        raise BadInput(f"--gpu-core {options.gpu_core}: not a GPU core dump (an ELF core of the CUDA architecture)")
    # A bad rules file is bad input: the user's files are read before the work. The built-in
    # rules cannot be bad; they are read while the debugger works (see stages.Rules).
    rules = Rules(load_rules(options.rules_files) if options.rules_files else None)
    started = time.perf_counter()
    process = Process.open(core_path, record=record)
    held = ExitStack()  # what the Analysis releases; here when a stage raises
    try:
        held.callback(process.close)  # closed last
        if debugger is None:
            from coreanalyze.gdb.opening import GdbOpener

            options, debugger = GdbOpener.for_analysis(process.arch, options, gdb_pool, held)
        cleanup = held.enter_context(ExitStack())
        ctx = Context(core_path, options, rules, process, new_report(process, core_path), cleanup, debugger)
        ctx.timings["core notes"] = time.perf_counter() - started
        run_stages(ctx, UP_TO_DEBUGGER)
        return Analysis(ctx, held.pop_all())
    finally:
        held.close()


def run_stages(ctx: Context, stages: tuple[Stage, ...] = STAGES) -> None:
    """The declared stages in order, each timed (ctx.timings)."""
    for stage in stages:
        started = time.perf_counter()
        stage.run(ctx)
        ctx.timings[stage.name] = time.perf_counter() - started


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
