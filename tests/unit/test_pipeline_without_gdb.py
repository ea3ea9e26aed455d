"""The whole pipeline on a real core with no debugger: the Process of a C crasher's kernel core,
native frames from its frame-pointer chain (tests/support/framepointers.py) instead of gdb, then
every stage after (symbols, the crash's messages, classification, rendering) as for gdb."""

from __future__ import annotations

import json
import subprocess

import pytest
from support.coregen import compile_c, kernel_writes_cores_here, run_to_core
from support.framepointers import FramePointerOpener, FramePointerUnwinder
from support.paths import CRASHERS
from support.require import missing, require

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.pipeline.analyze import AnalyzeOptions, analyze_core
from coreanalyze.process.process import Process
from coreanalyze.render import render
from coreanalyze.unwind.debugger import Debugger, Opener


@pytest.fixture(scope="module")
def null_thread(tmp_path_factory):
    """The null_thread crasher linked statically: every frame is in the program itself (a
    shared libc's frames would be named from its separate debug file, indexed cold per session)."""
    require("gcc")
    if not kernel_writes_cores_here():
        missing("a kernel that writes cores beside the crasher (core_pattern; without one they are made with gdb)")
    workdir = tmp_path_factory.mktemp("null_thread")
    try:
        exe = compile_c(CRASHERS / "null_thread.c", workdir / "null_thread", ("-static",))
    except subprocess.CalledProcessError:
        missing("a static C library (libc6-dev) for gcc -static")
    return run_to_core("null_thread", [str(exe)], workdir)


def test_the_unwinder_speaks_the_debugger_protocol(null_thread):
    with Process(read_core(str(null_thread.core))) as process:
        # The program's own file: its code is not in the core (read-only pages are not dumped).
        process.set_modules(module_table(process.notes, executable=str(null_thread.exe)))
        unwinder = FramePointerUnwinder(process)
        assert isinstance(unwinder, Debugger)
        threads, current = unwinder.threads()
        assert {t.tid for t in threads} == {t.tid for t in process.threads}
        crashed = next(t for t in threads if t.id == current)
        assert crashed.tid == process.crashing_tid
        frames = unwinder.frames(crashed.id, 0, 255)
        assert len(frames) >= 2
        pc, sp = process.notes.pc_register, process.notes.sp_register
        registers = unwinder.registers(crashed.id, {pc, sp, "no-such-register"})
        assert set(registers) == {pc, sp}
        assert registers[pc] == frames[0].pc == process.program_counter()
        instruction = unwinder.instruction_at(crashed.id, frames[0].pc, 16)
        assert instruction is not None and instruction.text  # the faulting store, disassembled


def test_the_opener_opens_the_unwinder_for_the_stages():
    assert isinstance(FramePointerOpener(), Opener)


def test_the_pipeline_runs_on_a_real_core_without_gdb(null_thread):
    result = analyze_core(str(null_thread.core), AnalyzeOptions(python=str(null_thread.exe)), debugger=FramePointerOpener())
    report = result.report
    assert result.exit_code == 0 and result.failure is None
    assert report.crashing_thread != null_thread.pid  # the worker, not the main thread
    crashed = report.crashed_thread
    assert crashed is not None and crashed.name is None
    # Frame 0 named by the symbols stage from the crasher's own symbol table, as gdb names it.
    assert crashed.frames[0].function == "store_result"
    assert len(crashed.frames) >= 2 and all(f.kind == "native" for f in crashed.frames)
    assert report.classification.fault_kind == "null-deref"
    assert report.classification.culprit.function == "store_result"
    assert report.core.signal.name == "SIGSEGV" and report.core.signal.address == 0
    assert report.fault_instruction and report.fault_instruction.startswith(f"{crashed.frames[0].pc:#x}: ")
    assert crashed.frames[0].pc in crashed.registers.values()
    assert list(result.timings)[:3] == ["core notes", "image", "executable"]
    assert "debugger" in result.timings and "classification" in result.timings
    document = json.loads(render(report, "json"))
    assert document["classification"]["fault_kind"] == "null-deref"
    for fmt in ("text", "markdown", "html"):
        assert "store_result" in render(report, fmt)
