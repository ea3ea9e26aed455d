"""collect() on real kernel cores of real crashing programs, driven through real gdb."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.coregen import CrashCase, compile_c, run_to_core
from support.paths import CRASHERS
from support.require import require

from coreanalyze.gdb.collect import GdbAnalysis, collect, demangle, read_memory
from coreanalyze.gdb.session import GdbSession


def _line_of(source: str, text: str) -> int:
    """1-based line of the first line of a crasher's source containing text."""
    lines = (CRASHERS / source).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def analyze(case: CrashCase, **kwargs) -> GdbAnalysis:
    debug_dirs = kwargs.pop("debug_dirs", ())
    with GdbSession() as s:
        s.load(case.core, executable=case.exe, debug_dirs=debug_dirs)
        return collect(s, **kwargs)


def crashed_thread(analysis: GdbAnalysis):
    crashed = [t for t in analysis.threads if t.crashed]
    assert len(crashed) == 1
    assert crashed[0].tid == analysis.crashing_tid
    return crashed[0]


def functions(thread) -> list[str | None]:
    return [f.function for f in thread.frames]


def cpp_case(cores) -> CrashCase:
    """A C++ program killed by an uncaught exception; built once per test session."""
    if "cpp_throw" not in cores.cases:
        gxx = require("g++")
        workdir = cores.root / "cpp_throw"
        workdir.mkdir(parents=True, exist_ok=True)
        exe = workdir / "cpp_throw"
        subprocess.run(
            [gxx, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(CRASHERS / "cpp_throw.cc")],
            check=True,
            capture_output=True,
            text=True,
        )
        cores.cases["cpp_throw"] = run_to_core("cpp_throw", [str(exe)], workdir)
    return cores.cases["cpp_throw"]


# Crashes whose stacks gdb cannot fully trust; small enough to keep next to their tests.
ODD_STACK_CRASHERS = {
    "call_null": """
typedef void (*handler_fn)(int);
struct plugin { handler_fn on_event; };
__attribute__((noinline)) void dispatch(struct plugin *p) { p->on_event(7); }
int main(void) { struct plugin p = { 0 }; dispatch(&p); return 0; }
""",
    "smashed_stack": """
#include <string.h>
__attribute__((noinline)) void fill(char *dst, int n) { memset(dst, 0x41, n); }
__attribute__((noinline)) int smash(int n) { char buf[16]; fill(buf, n); return buf[3]; }
int main(int argc, char **argv) { (void)argv; return smash(500 + argc); }
""",
}


def odd_stack_case(cores, name: str) -> CrashCase:
    if name not in cores.cases:
        workdir = cores.root / name
        workdir.mkdir(parents=True, exist_ok=True)
        source = workdir / f"{name}.c"
        source.write_text(ODD_STACK_CRASHERS[name])
        exe = compile_c(source, workdir / name, extra_flags=("-fno-stack-protector",))
        cores.cases[name] = run_to_core(name, [str(exe)], workdir)
    return cores.cases[name]


def test_null_deref_in_a_worker_thread(cores):
    case = cores.c_crash("null_thread")
    a = analyze(case)
    assert len(a.threads) == 2
    worker = crashed_thread(a)
    # The kernel names the process after its main thread; the crash is in the other one.
    assert worker.tid != case.pid
    main = next(t for t in a.threads if t.tid == case.pid)
    assert not main.crashed
    assert "main" in functions(main)

    top = worker.frames[0]
    assert top.function == "store_result"
    assert top.module == str(case.exe)
    assert Path(top.file).name == "null_thread.c"
    assert top.line == _line_of("null_thread.c", "*j->target = value")
    assert top.pc == worker.registers["rip"]
    assert functions(worker)[:2] == ["store_result", "worker"]
    assert {"rip", "rsp", "rbp", "rax", "r15", "eflags", "fs_base"} <= set(worker.registers)
    assert not any(name.startswith(("xmm", "ymm", "st")) for name in worker.registers)
    assert main.registers["rsp"] != worker.registers["rsp"]

    assert a.siginfo.name == "SIGSEGV"
    assert a.siginfo.code_name == "SEGV_MAPERR"
    assert a.siginfo.address == 0
    assert a.fault_instruction.startswith(f"{top.pc:#x} <store_result+")
    assert a.abort_message is None


def test_failed_assert_reports_glibc_abort_message(cores):
    a = analyze(cores.c_crash("assert_fail"))
    thread = crashed_thread(a)
    names = functions(thread)
    # With libc debug info gdb calls it __GI_abort, without it the exported name.
    assert {"abort", "__GI_abort"} & set(names)
    assert "check_invariant" in names
    assert "queue length went negative" in a.abort_message
    assert a.siginfo.name == "SIGABRT"


def test_double_free_message_is_read_without_libc_debug_info(cores, tmp_path):
    case = cores.c_crash("double_free")
    # An empty debug-file-directory hides libc's debug info: __abort_msg has no type then.
    a = analyze(case, debug_dirs=[str(tmp_path)])
    assert "double free" in a.abort_message
    names = functions(crashed_thread(a))
    assert "free" in names and "release" in names
    with_debug_info = analyze(case)
    assert with_debug_info.abort_message == a.abort_message


def test_illegal_instruction_is_disassembled(cores):
    a = analyze(cores.c_crash("ud2"))
    assert "ud2" in a.fault_instruction
    assert "<unreachable_path+0>" in a.fault_instruction
    thread = crashed_thread(a)
    assert thread.frames[0].function == "unreachable_path"
    assert thread.frames[0].offset == 0
    assert a.siginfo.name == "SIGILL"
    assert a.siginfo.code_name == "ILL_ILLOPN"


def test_signal_sent_by_another_process_names_the_sender(cores):
    case = cores.c_crash("killed")
    a = analyze(case)
    assert a.siginfo.name == "SIGSEGV"
    assert a.siginfo.code == 0
    assert a.siginfo.code_name == "SI_USER"
    # The test process itself sent the signal (conftest's run_to_core).
    assert a.siginfo.sender_pid == os.getpid()
    assert a.siginfo.address is None
    # The signal may land while the program still flushes "ready": only main is certain.
    assert "main" in functions(crashed_thread(a))


def test_deep_recursion_is_bounded_by_max_frames(cores):
    a = analyze(cores.c_crash("recursion"), max_frames=64)
    thread = crashed_thread(a)
    assert len(thread.frames) == 64
    assert set(functions(thread)) == {"recurse"}
    assert [f.index for f in thread.frames] == list(range(64))
    assert any("only the first 64 frames" in w for w in a.warnings)
    assert a.siginfo.name == "SIGSEGV"


def test_thread_limit_keeps_the_crashing_thread(cores):
    a = analyze(cores.c_crash("null_thread"), max_threads=1)
    assert len(a.threads) == 1
    assert a.threads[0].crashed
    assert a.threads[0].frames[0].function == "store_result"
    assert any("2 threads" in w for w in a.warnings)


def test_cpp_frames_are_demangled_and_keep_the_mangled_name(cores):
    case = cpp_case(cores)
    a = analyze(case)
    thread = crashed_thread(a)
    method = next(f for f in thread.frames if f.raw_function and "ShapeChecker" in f.raw_function)
    assert method.function == "tensorkit::ShapeChecker::check_rank(int) const"
    assert method.raw_function.startswith("_ZNK9tensorkit12ShapeChecker")
    assert method.module == str(case.exe)
    terminate = next(f for f in thread.frames if f.raw_function == "_ZSt9terminatev")
    assert terminate.function == "std::terminate()"
    assert "libstdc++" in terminate.module
    assert a.siginfo.name == "SIGABRT"


def test_read_memory_reads_the_core(cores):
    case = cores.c_crash("ud2")
    with GdbSession() as s:
        s.load(case.core, executable=case.exe)
        pc = int(s.mi("-data-evaluate-expression $pc")["value"].split()[0], 0)
        assert read_memory(s, pc, 2) == b"\x0f\x0b"  # ud2
        assert read_memory(s, 0, 16) is None
        assert read_memory(s, pc, 0) is None


def test_demangle_leaves_plain_and_broken_names_alone():
    assert demangle("_ZN3foo3barEv") == "foo::bar()"
    assert demangle("store_result") == "store_result"
    assert demangle("_Z_not_really_mangled") == "_Z_not_really_mangled"
    assert demangle(None) is None


@pytest.mark.parametrize("name", ["null_thread", "killed"])
def test_every_thread_has_frames_and_registers(cores, name):
    a = analyze(cores.c_crash(name))
    for thread in a.threads:
        assert thread.frames, thread.tid
        assert thread.registers.get("rsp"), thread.tid
        assert all(f.kind == "native" and f.pc for f in thread.frames)
    assert not a.warnings


def test_call_through_a_null_function_pointer(cores):
    a = analyze(odd_stack_case(cores, "call_null"))
    thread = crashed_thread(a)
    assert thread.frames[0].pc == 0
    assert thread.frames[0].function is None and thread.frames[0].module is None
    # gdb still finds the caller that made the bad call.
    assert "dispatch" in functions(thread)
    assert a.fault_instruction is None
    assert any("cannot read the instruction at the crashing pc 0x0" in w for w in a.warnings)


def test_smashed_stack_yields_what_was_read_and_a_warning(cores):
    a = analyze(odd_stack_case(cores, "smashed_stack"), max_frames=32)
    thread = crashed_thread(a)
    assert thread.frames[0].function == "smash"
    assert "ret" in a.fault_instruction
    assert thread.frames[1].pc == 0x4141414141414141
    assert any("frame #1" in w and "corrupt" in w for w in a.warnings)
    assert len(thread.frames) <= 32


def _gdb_generated_core(cores, name: str) -> CrashCase:
    """The crasher's core as gdb's generate-core-file writes it (what machines whose kernel
    pipes cores elsewhere get)."""
    from support.coregen import _run_under_gdb_to_core

    key = f"{name}-gdb-core"
    if key not in cores.cases:
        kernel = cores.c_crash(name)
        workdir = cores.root / key
        workdir.mkdir(parents=True, exist_ok=True)
        cores.cases[key] = _run_under_gdb_to_core(key, kernel.argv, workdir, dict(os.environ), kernel.exe, None, 120)
    return cores.cases[key]


@pytest.mark.parametrize("writer", ["kernel", "gdb"])
def test_the_notes_module_map_is_gdbs_info_proc_mappings(cores, writer):
    """collect() takes the frames' modules from the core's NT_FILE instead of asking gdb for
    `info proc mappings`, which prints that same note: both lists must be one."""
    from coreanalyze.corefile import read_core
    from coreanalyze.gdb.collect import FromNotes, file_ranges
    from coreanalyze.gdb.debugger import GdbDebugger

    # Where the kernel pipes cores away, the "kernel" core is gdb's too: the same check holds.
    case = cores.c_crash("null_thread") if writer == "kernel" else _gdb_generated_core(cores, "null_thread")
    notes = read_core(str(case.core))
    with GdbSession() as s:
        s.load(case.core, executable=case.exe)
        from_gdb = GdbDebugger(s).file_mappings()
        asked = collect(s)
        given = collect(s, from_notes=FromNotes(file_mappings=file_ranges(notes.mappings)))
    assert from_gdb and sorted(file_ranges(notes.mappings)) == sorted(from_gdb)
    assert [f.module for t in given.threads for f in t.frames] == [f.module for t in asked.threads for f in t.frames]
    assert any(f.module == str(case.exe) for t in given.threads for f in t.frames)
