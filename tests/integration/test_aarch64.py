"""Cores from aarch64 devices, analyzed here: real aarch64 programs run under qemu-aarch64
with a sysroot made of Debian's arm64 packages (tests/support/armcores.py)."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from support.armcores import SITE_PACKAGES
from support.clirun import analyze_json, crashed_thread, native_functions, run_cli
from support.paths import CRASHERS
from support.require import require

from coreanalyze.arch.debugger import gdb_for_core
from coreanalyze.corefile import read_core
from coreanalyze.process.process import Process

# name -> (signal, fault kind, the crasher's own function, its source file)
EXPECTED = {
    "null_thread": ("SIGSEGV", "null-deref", "store_result", "null_thread.c"),
    "assert_fail": ("SIGABRT", "abort", "check_invariant", "assert_fail.c"),
    "recursion": ("SIGSEGV", "stack-overflow", "recurse", "recursion.c"),
    "trap": ("SIGTRAP", "illegal-instruction", "unreachable_path", "ud2.c"),
    "dotprod": ("SIGILL", "illegal-instruction", "int8_dot", "arm_dotprod.c"),
}


@pytest.fixture(scope="module")
def reports(arm_cores):
    @functools.cache
    def get(name):
        case = arm_cores.c_crash(name)
        return case, analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(arm_cores.sysroot))

    return get


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_arm_crasher_verdict(reports, name):
    case, report = reports(name)
    sig_name, kind, own_function, source = EXPECTED[name]
    assert report["core"]["arch"] == "aarch64"
    assert report["core"]["signal"]["name"] == sig_name
    assert report["classification"]["fault_kind"] == kind, report["classification"]["evidence"]
    thread = crashed_thread(report)
    assert own_function in native_functions(thread)
    own = next(f for f in thread["frames"] if f["function"] == own_function)
    assert own["file"] and own["file"].endswith(source) and own["line"], own


def test_null_deref_names_the_worker_thread_and_address(reports):
    _, report = reports("null_thread")
    assert len(report["threads"]) == 2
    evidence = report["classification"]["evidence"]
    # qemu writes no siginfo: the address comes from the faulting `str w1, [x0]` and x0.
    assert any("computed from the faulting instruction" in e and "[x0]" in e for e in evidence), evidence
    assert any("below 64 KiB" in e for e in evidence), evidence
    registers = crashed_thread(report)["registers"]
    assert {*(f"x{i}" for i in range(31)), "sp", "pc", "cpsr"} <= set(registers) and int(registers["x0"], 16) == 0


def test_abort_message_is_read(reports):
    _, report = reports("assert_fail")
    assert "queue length went negative" in (report["classification"]["abort_message"] or "")
    # With the sysroot's libc6-dbg, gdb names glibc's internal alias.
    assert {"abort", "__GI_abort"} & set(native_functions(crashed_thread(report)))


def test_brk_trap_names_the_instruction(reports):
    _, report = reports("trap")
    evidence = " ".join(report["classification"]["evidence"])
    assert "brk" in evidence and "deliberate trap" in evidence


def test_sigill_names_the_instruction_and_the_missing_feature(reports):
    _, report = reports("dotprod")
    classification = report["classification"]
    assert "`sdot v0.4s, v1.16b, v2.16b` needs Dot product (asimddp / dotprod)" in classification["evidence"]
    assert "sdot" in classification["summary"] and "asimddp" in classification["advice"][0]
    # The emulated Cortex-A53 is an Armv8.0 CPU: its HWCAP has no dot product.
    cpu = report["environment"]["cpu"]
    assert "asimd" in cpu["hwcap_features"] and "asimddp" not in cpu["hwcap_features"]


def test_stack_overflow_is_next_to_sp(reports):
    _, report = reports("recursion")
    evidence = report["classification"]["evidence"]
    assert any("computed from the faulting instruction" in e and "[sp, #" in e for e in evidence), evidence
    assert any("below the stack pointer" in e for e in evidence), evidence


def test_python_process_crashing_through_ctypes(arm_cores):
    case = arm_cores.python_crash("ctypes", CRASHERS / "ctypes_crash.py")
    report = analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(arm_cores.sysroot))
    classification = report["classification"]
    assert report["core"]["arch"] == "aarch64"
    assert classification["fault_kind"] == "null-deref", classification["evidence"]
    assert classification["category"] == "python-runtime"
    assert report["environment"]["python_version"].startswith("3.11")
    thread = crashed_thread(report)
    kinds = [f["kind"] for f in thread["frames"]]
    python_functions = [f["function"] for f in thread["frames"] if f["kind"] == "python"]
    assert python_functions[:4] == ["string_at", "read_config", "main", "<module>"], python_functions
    # Interleaved: native frames (libc, CPython, libffi, _ctypes) above the Python ones, the
    # interpreter's own below them.
    assert kinds[0] == "native" and "python" in kinds and kinds[-1] == "native"
    modules = {os.path.basename(f["module"] or "") for f in thread["frames"] if f["kind"] == "native"}
    assert {"libc.so.6", "libffi.so.8"} <= modules, modules
    assert any(m.startswith("_ctypes.") for m in modules), modules
    # The fault is in the C library's memcpy, named with its line from the sysroot's libc6-dbg.
    top = thread["frames"][0]
    assert os.path.basename(top["module"]) == "libc.so.6" and "memcpy" in top["function"], top
    assert top["file"].endswith(".S") and top["line"], top


def test_notes_give_aarch64_registers(arm_cores):
    case = arm_cores.c_crash("null_thread")
    with read_core(case.core) as notes:
        assert notes.arch == "aarch64"
        registers = notes.thread(notes.crashing_tid).registers
        assert set(registers) == {*(f"x{i}" for i in range(31)), "sp", "pc", "cpsr"}
        assert registers["pc"] and registers["sp"]
        assert notes.signal.name == "SIGSEGV"


def test_environment_names_arm_cpu_features(reports):
    _, report = reports("null_thread")
    cpu = report["environment"]["cpu"]
    assert {"fp", "asimd"} <= set(cpu["hwcap_features"]), cpu


def test_foreign_core_gets_gdb_multiarch():
    assert gdb_for_core("gdb", "aarch64") == "gdb-multiarch"


def test_gdb_that_cannot_read_the_core_is_one_line_exit_2(arm_cores):
    case = arm_cores.c_crash("null_thread")
    run = run_cli(str(case.core), "--gdb", require("gdb"), "--format", "json", "-o", "-")
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "aarch64" in lines[0] and "gdb-multiarch" in lines[0], run.stderr


def test_no_gdb_for_the_architecture_is_one_line_exit_2(arm_cores, tmp_path):
    """Without gdb-multiarch on PATH only the x86-64 gdb is left, which cannot read the core."""
    case = arm_cores.c_crash("null_thread")
    only_gdb = tmp_path / "bin"
    only_gdb.mkdir()
    (only_gdb / "gdb").symlink_to(require("gdb"))
    run = run_cli(str(case.core), "--format", "json", "-o", "-", env={"PATH": str(only_gdb)})
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "aarch64" in lines[0] and "install gdb-multiarch" in lines[0], run.stderr


def test_batch_of_aarch64_and_x86_64_cores(arm_cores, cores, tmp_path):
    """Each core gets a debugger that reads it: gdb-multiarch for aarch64, gdb for x86-64."""
    arm_null, arm_trap = arm_cores.c_crash("null_thread"), arm_cores.c_crash("trap")
    x86_null = cores.c_crash("null_thread")
    out = tmp_path / "out"
    run = run_cli("batch", str(arm_null.core), str(arm_trap.core), str(x86_null.core), "--out", str(out), "--jobs", "1", "--timeout", "120")
    assert run.code == 0, run.stderr
    lines = {Path(line["path"]): line for line in map(json.loads, (out / "cores.jsonl").read_text().splitlines())}
    assert {line["status"] for line in lines.values()} == {"ok"}, lines
    reports = {path: json.loads((out / line["report_json"]).read_text()) for path, line in lines.items()}
    assert reports[arm_null.core]["core"]["arch"] == "aarch64" and reports[x86_null.core]["core"]["arch"] == "x86_64"
    for core in (arm_null.core, x86_null.core):
        classification = reports[core]["classification"]
        assert classification["fault_kind"] == "null-deref", classification["evidence"]
        assert classification["culprit"]["function"] == "store_result"
    assert reports[arm_trap.core]["classification"]["fault_kind"] == "illegal-instruction"


@pytest.mark.parametrize(
    ("instruction", "registers", "expected"),
    [
        ("str\tw1, [x0]", {"x0": 0, "x1": 42}, (0, "x0")),
        ("ldr x0, [x1, #16]", {"x1": 8}, (24, "x1")),
        ("stp x29, x30, [sp, #-272]!", {"sp": 0x1000}, (0x1000 - 272, "sp")),
        ("ldr x1, [x0], #8", {"x0": 0x40}, (0x40, "x0")),
        ("ldr x3, [x1, x2, lsl #3]", {"x1": 0x100, "x2": 2}, (0x110, "x1")),
        ("ldr w3, [x1, w2, sxtw #2]", {"x1": 0x100, "x2": 0xFFFFFFFF}, (0xFC, "x1")),
        ("add x0, x1, x2", {"x1": 1, "x2": 2}, None),
        ("ldr x0, [x9]", {"x1": 1}, None),  # base register unknown
    ],
)
def test_accessed_address_of_aarch64_loads_and_stores(instruction, registers, expected):
    from coreanalyze.arch import aarch64

    assert aarch64.accessed_address(instruction, registers) == expected


def test_speed_path_leaves_aarch64_libraries_to_gdb(arm_cores, tmp_path):
    """The symbol-less library copies are made for x86-64 ELF only. An aarch64 library with a
    symbol table over the threshold is not copied, and gdb reads it as it is (the reports above
    come from that path)."""
    import subprocess

    from coreanalyze.base.model import Module
    from coreanalyze.corefile.modules import module_table
    from coreanalyze.gdb.libcopies.copies import plan_fast_libraries
    from coreanalyze.process.linkmap import read_link_map

    case = arm_cores.c_crash("null_thread")
    sysroot = str(arm_cores.sysroot)
    library = tmp_path / "libsymlib.so"  # keeps its .symtab: a candidate by size and symbols
    subprocess.run([require("aarch64-linux-gnu-gcc"), "-shared", "-fPIC", "-g", "-o", str(library), str(CRASHERS / "symlib_lib.c")], check=True)
    with read_core(case.core) as notes:
        notes.mappings = read_link_map(Process(notes), str(case.exe), sysroot).mappings
        modules = module_table(notes, executable=str(case.exe), sysroot=sysroot)
        assert any(m.path.endswith("/libc.so.6") and m.local_path for m in modules)
        modules.append(Module(path="/usr/lib/libsymlib.so", local_path=str(library), status="no-build-id"))
        assert plan_fast_libraries(Process(notes), modules, sysroot=sysroot, debug_dirs=[], min_symbols=1) is None


# ---------------------------------------------------------------------------------------------
# LiteRT (TFLite) on aarch64: the wheels of the package index, a model from TensorFlow's converter


@pytest.fixture(scope="module")
def litert(arm_cores):
    case = arm_cores.litert_crash()
    return case, analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(arm_cores.sysroot))


@pytest.mark.tf
def test_litert_invoke_names_the_node(litert):
    _, report = litert
    c = report["classification"]
    assert report["core"]["arch"] == "aarch64"
    assert (c["category"], c["fault_kind"]) == ("interpreter-invoke", "invalid-access"), c["evidence"]
    assert c["culprit"]["function"].startswith("tflite::ops::builtin::fully_connected::Eval")
    assert c["culprit"]["module"] == f"{SITE_PACKAGES}/ai_edge_litert/libpywrap_litert_common.so"
    # Eval's `ldp x20, x21, [x1, #32]` read through the corrupted node pointer (qemu writes no siginfo).
    assert any("computed from the faulting instruction" in e and "[x1, #" in e for e in c["evidence"]), c["evidence"]
    instance = c["op_instance"]
    assert instance is not None, c["evidence"]
    assert (instance["framework"], instance["op"], instance["node_index"], instance["delegate"]) == ("tflite", "FULLY_CONNECTED", 0, None)
    assert [(t["dtype"], t["shape"]) for t in instance["inputs"]] == [("float32", [1, 8]), ("float32", [4, 8]), ("float32", [4])]
    assert instance["inputs"][0]["value"] == [1.0] * 8
    assert f"In node `{instance['node']}` (FULLY_CONNECTED, node index 0" in c["summary"]
    assert f"op instance: node '{instance['node']}' read from the tflite node and its registration (layout tflite)" in c["evidence"]


@pytest.mark.tf
def test_litert_python_frames_are_interleaved(litert):
    _, report = litert
    thread = crashed_thread(report)
    kinds = [f["kind"] for f in thread["frames"]]
    python_functions = [f["function"] for f in thread["frames"] if f["kind"] == "python"]
    assert python_functions == ["Interpreter.invoke", "run", "<module>"], python_functions
    first_python = kinds.index("python")
    above = native_functions({"frames": thread["frames"][:first_python]})
    assert any(f.startswith("tflite::Subgraph::Invoke") for f in above), above
    assert kinds[0] == "native" and kinds[-1] == "native"
    assert report["environment"]["python_version"].startswith("3.11")
    # The interpreter's unnamed static functions are in the placed program, not strays.
    assert not any("outside every mapped file" in w for w in report["warnings"]), report["warnings"]


@pytest.mark.tf
def test_fetch_takes_aarch64_wheels_for_an_aarch64_core(litert, arm_cores, tmp_path):
    """The device's site-packages out of reach: --fetch downloads LiteRT's aarch64 wheel (from a
    local --find-links index, the one the device installed from) and checks it against the core."""
    case, local = litert
    sysroot = tmp_path / "sysroot"  # the device's OS files only
    for module in local["modules"]:
        if "/dist-packages/" in module["path"] or not module["local_path"]:
            continue
        copy = sysroot / module["path"].lstrip("/")
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(module["local_path"], copy)
    shutil.copytree(arm_cores.sysroot / "usr/lib/debug", sysroot / "usr/lib/debug")  # its libc6-dbg
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(arm_cores.wheels), "COREANALYZE_CACHE_DIR": str(tmp_path / "cache")}
    args = (str(case.core), "--python", str(case.exe), "--sysroot", str(sysroot), "--format", "json", "-o", "-")
    without = run_cli(*args, env=env)
    assert without.code == 0, without.stderr
    assert without.json["classification"]["op_instance"] is None
    litert_modules = [m for m in without.json["modules"] if "/ai_edge_litert/" in m["path"]]
    assert litert_modules and all(m["status"] == "missing" for m in litert_modules), litert_modules
    assert any("--fetch downloads" in w for w in without.json["warnings"])

    fetched = run_cli(*args, "--fetch", env=env)
    assert fetched.code == 0, fetched.stderr
    report = fetched.json
    modules = [m for m in report["modules"] if "/ai_edge_litert/" in m["path"]]
    assert {os.path.basename(m["path"]) for m in modules} >= {"libpywrap_litert_common.so", "_pywrap_tensorflow_interpreter_wrapper.so"}
    assert all(m["status"] == "ok" for m in modules), [(m["path"], m["status"]) for m in modules]
    wheels = {m["source"] for m in modules}
    assert len(wheels) == 1 and re.fullmatch(r"ai_edge_litert-[\w.]+-cp311-cp311-manylinux\w*_aarch64\.whl", wheels.pop())
    assert not any("/ai_edge_litert/" in w and "is not here" in w for w in report["warnings"]), report["warnings"]
    for key in ("category", "fault_kind", "culprit", "op_instance"):
        assert report["classification"][key] == local["classification"][key], key
    assert [f["function"] for f in crashed_thread(report)["frames"]] == [f["function"] for f in crashed_thread(local)["frames"]]
