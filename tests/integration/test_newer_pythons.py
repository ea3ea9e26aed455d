"""Cores of CPython 3.14 and 3.15 (Debian unstable's, run in a root of their own): everything
a 3.13 core gives, from the core alone where the interpreter is not here, checked against the
crash scripts' lines and against pystack's reading of the same cores.

The cores are real: the kernel writes them as the crashers die inside the root (tests/support/
sidroot.py). The analysis runs as a user's would, from outside, with `--sysroot ROOT`, with the
root's separate debug files hidden, and with no sysroot at all (the interpreter absent).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from support.clirun import analyze_json, crashed_thread
from support.coregen import compile_c
from support.hangcores import build_library, gcore, wait_until_all_sleep
from support.paths import HANGS, PYCRASHERS, REPO
from support.pycrash import LOAD_WEIGHTS_LOCALS, marker_line, short_name
from support.require import missing
from support.sidroot import NEWER, SidCrashes, chroot_env, in_root, sysroot_without_debug_info

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.gdb.programframes import CACHE_PART
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import pywalker, walk_core

THREE_DEEP = PYCRASHERS / "three_deep.py"


@pytest.fixture(scope="module")
def sid():
    crashes = SidCrashes()
    yield crashes
    crashes.close()


def python_frames(thread: dict) -> list[dict]:
    return [f for f in thread["frames"] if f["kind"] == "python"]


def where(frames: list[dict]) -> list[tuple[str, int | None]]:
    return [(short_name(f["function"]), f["line"]) for f in frames]


def three_deep_lines(script: Path) -> list[tuple[str, int]]:
    return [
        ("load_weights", marker_line(script, "CRASH-LINE")),
        ("build_model", marker_line(script, "CALL-LOAD")),
        ("train", marker_line(script, "CALL-BUILD")),
        ("<module>", marker_line(script, "CALL-TRAIN")),
    ]


def sysroot_args(case) -> tuple[str, ...]:
    return ("--sysroot", str(case.extra["sysroot"]))


def in_process(case, **options) -> dict:
    """The walker's document read with no debugger, the interpreter taken from the root."""
    with read_core(case.core) as notes:
        return walk_core(Process(notes), module_table(notes, executable=str(case.exe)), options)


@pytest.mark.parametrize("minor", NEWER)
def test_crashing_thread_frames_and_the_interpreter(sid, minor):
    case = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    report = analyze_json(case.core, *sysroot_args(case))
    crashed = crashed_thread(report)
    frames = python_frames(crashed)
    assert where(frames[1:]) == three_deep_lines(case.extra["script"])
    assert short_name(frames[0]["function"]) == "string_at"
    assert frames[0]["file"] == f"/usr/lib/python{minor}/ctypes/__init__.py"
    assert all(f["file"] == str(case.extra["script"]) for f in frames[1:])
    assert report["environment"]["python_version"].startswith(minor + ".")
    assert crashed["holds_gil"] is True
    assert not [w for w in report["warnings"] if "walker" in w or "Python" in w], report["warnings"]
    # gdb read the interpreter's debug file from the root: its own frames have lines.
    native = [f for f in crashed["frames"] if f["kind"] == "native" and f["function"] == "PyBytes_FromStringAndSize"]
    assert native and native[0]["line"] and native[0]["file"].endswith("Objects/bytesobject.c")


@pytest.mark.parametrize("minor", NEWER)
def test_every_thread_and_the_gil(sid, minor):
    case = sid.crash(f"sleeper-{minor}", f"/usr/bin/python{minor}", PYCRASHERS / "sleeper_thread.py")
    script = case.extra["script"]
    report = analyze_json(case.core, *sysroot_args(case))
    main = crashed_thread(report)
    worker = next(t for t in report["threads"] if t is not main and python_frames(t))
    assert where(python_frames(main)[1:]) == [
        ("crash_now", marker_line(script, "CRASH-LINE")),
        ("main", marker_line(script, "CALL-CRASH")),
        ("<module>", marker_line(script, "CALL-MAIN")),
    ]
    assert where(python_frames(worker)[:2]) == [
        ("wait_for_data", marker_line(script, "SLEEP-LINE")),
        ("worker_loop", marker_line(script, "CALL-WAIT")),
    ]
    assert [short_name(f["function"]) for f in python_frames(worker)[2:]] == ["run", "_bootstrap_inner", "_bootstrap"]
    assert (main["holds_gil"], worker["holds_gil"]) == (True, False)


@pytest.mark.parametrize("minor", NEWER)
def test_locals_layout_and_imports_without_a_debugger(sid, minor):
    """The in-process reader: the interpreter's own _Py_DebugOffsets, locals through 3.14's
    tagged stack references (a small int lives in the reference itself), sys.modules."""
    case = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    doc = in_process(case, locals=True, locals_tid=case.pid, imports=True)
    assert doc["layout"] == "debug-offsets" and doc["free_threaded"] is False
    assert doc["python_version"].startswith(minor + ".")
    thread = next(t for t in doc["threads"] if t["tid"] == case.pid)
    load_weights = next(f for f in thread["frames"] if f["name"] == "load_weights")
    blob = load_weights["locals"].pop("blob")
    assert blob.startswith("'xxxxxxxx") and blob.endswith("...") and len(blob) <= 120
    assert load_weights["locals"] == LOAD_WEIGHTS_LOCALS
    imports = {m["name"]: m for m in doc["imports"]}
    # What the module's namespace holds (3.15 serves ctypes.__version__ from a module __getattr__).
    declared = in_root(f"/usr/bin/python{minor}", "-c", "import ctypes; print(vars(ctypes).get('__version__'))").stdout.strip()
    version = None if declared == "None" else declared
    assert imports["ctypes"] == {"name": "ctypes", "file": f"/usr/lib/python{minor}/ctypes/__init__.py", "version": version}
    assert imports["sys"] == {"name": "sys", "file": None, "version": None}
    assert doc["warnings"] == []


@pytest.mark.parametrize("minor", NEWER)
def test_without_the_interpreters_debug_info(sid, minor, tmp_path):
    case = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    view = sysroot_without_debug_info(case.extra["sysroot"], tmp_path)
    report = analyze_json(case.core, "--sysroot", str(view))
    assert where(python_frames(crashed_thread(report))[1:]) == three_deep_lines(case.extra["script"])
    assert not [m for m in report["modules"] if m["debug_file"]], "the view holds no debug file"


def stable(report: dict) -> dict:
    """A report without what changes from one run to the next."""
    return {k: v for k, v in report.items() if k not in ("tool_version", "timings")}


@pytest.mark.parametrize("minor", NEWER)
def test_the_interpreters_frames_kept_give_the_plain_report(sid, minor, tmp_path):
    """gdb reads the interpreter's LTO debug file (seconds) once: later analyses open the core
    without it and name the interpreter's frames from what gdb said of their pcs then
    (coreanalyze.gdb.programframes). Their reports are those of the plain way: the same core
    again, and another core of the same interpreter whose new pcs send it the plain way."""
    sleeper = sid.crash(f"sleeper-{minor}", f"/usr/bin/python{minor}", PYCRASHERS / "sleeper_thread.py")
    other = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    kept_cache, fresh_cache = tmp_path / "kept", tmp_path / "fresh"

    def analyze(case, cache: Path) -> dict:
        return stable(analyze_json(case.core, *sysroot_args(case), base_env=dict(os.environ, COREANALYZE_CACHE_DIR=str(cache))))

    first = analyze(sleeper, kept_cache)
    (kept,) = (kept_cache / CACHE_PART).glob("*.json")
    assert analyze(sleeper, kept_cache) == first
    plain = analyze(other, fresh_cache)
    assert analyze(other, kept_cache) == plain  # some pcs kept, others not: the plain way
    assert analyze(other, kept_cache) == plain  # all kept now
    # The kept answers are what the report shows.
    data = json.loads(kept.read_text())
    for group in data["frames"].values():
        for entry in group:
            entry[0] = f"kept-{entry[0]}"
    kept.write_text(json.dumps(data))
    ours = [f for f in crashed_thread(analyze(sleeper, kept_cache))["frames"] if f["kind"] == "native" and f["module"] == f"/usr/bin/python{minor}"]
    assert ours and all(f["function"].startswith("kept-") for f in ours)


@pytest.mark.parametrize("minor", NEWER)
def test_with_the_interpreter_absent(sid, minor):
    """No sysroot: /usr/bin/python3.X of the core is not on this machine; _PyRuntime is found
    in the core by its _Py_DebugOffsets cookie, and the frames are the same."""
    case = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    assert not Path(f"/usr/bin/python{minor}").exists() or Path(f"/usr/bin/python{minor}").resolve() != case.exe
    report = analyze_json(case.core)
    assert where(python_frames(crashed_thread(report))[1:]) == three_deep_lines(case.extra["script"])
    assert report["environment"]["python_version"].startswith(minor + ".")


@pytest.mark.parametrize("minor", NEWER)
def test_same_frames_as_pystack(sid, minor):
    try:
        from pystack.engine import NativeReportingMode, get_process_threads_for_core
    except ImportError:
        missing("pystack (test dependency)")
    case = sid.crash(f"sleeper-{minor}", f"/usr/bin/python{minor}", PYCRASHERS / "sleeper_thread.py")
    libs = case.extra["sysroot"] / "usr" / "lib" / "x86_64-linux-gnu"
    threads = get_process_threads_for_core(str(case.core), str(case.exe), str(libs), native_mode=NativeReportingMode.OFF)
    theirs = {t.tid: [(f.code.filename, f.code.location.lineno, f.code.scope) for f in t.frames][::-1] for t in threads}
    doc = in_process(case)
    ours = {t["tid"]: [(f["file"], f["line"], short_name(f["function"])) for f in t["frames"]] for t in doc["threads"]}
    assert ours == {tid: frames for tid, frames in theirs.items() if frames}


@pytest.mark.parametrize("minor", NEWER)
def test_launched_from_a_native_worker(sid, minor, tmp_path):
    """A thread without Python frames faults while the Python caller that started it waits."""
    lib = compile_c(PYCRASHERS / "native_worker.c", tmp_path / "libnative_worker.so", ("-shared", "-fPIC"))
    name = f"native_worker-{minor}"
    case = sid.crash(
        name, f"/usr/bin/python{minor}", PYCRASHERS / "native_worker.py", lib,
        env={"NATIVE_WORKER_LIB": str(sid.base / name / lib.name)},  # where crash() copies it
    )  # fmt: skip
    script = case.extra["script"]
    report = analyze_json(case.core, *sysroot_args(case))
    assert python_frames(crashed_thread(report)) == []
    launched = report["launched_from"]
    assert (launched["file"], launched["line"], launched["function"]) == (str(script), marker_line(script, "WAIT-LINE"), "run_step")


@pytest.mark.parametrize("minor", NEWER)
def test_a_hung_process_waits_on_the_gil_in_python(sid, minor, tmp_path):
    """A GIL deadlock through a native mutex, snapshot by gcore: who holds the GIL and the
    Python line each thread waits at."""
    library = build_library("gil_lock", tmp_path)
    workdir = sid.base / f"gil_cycle-{minor}"
    workdir.mkdir()
    for path in (HANGS / "gil_cycle.py", library):
        (workdir / path.name).write_bytes(path.read_bytes())
    command = f"cd {workdir} && exec /usr/bin/python{minor} gil_cycle.py ./{library.name}"
    proc = subprocess.Popen(["chroot", str(sid.root), *chroot_env(), "/bin/sh", "-c", command], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        wait_until_all_sleep(proc.pid)
        core, _ = gcore(proc.pid, tmp_path)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    report = analyze_json(core, "--sysroot", str(sid.root))
    c = report["classification"]
    script = workdir / "gil_cycle.py"

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(script.read_text().splitlines(), 1) if text in line)

    assert c["fault_kind"] == "hang"
    hang = c["hang"]
    assert hang["gil_holder"] == proc.pid
    cycle = {step["tid"]: step for step in hang["deadlock"]}
    main = cycle[proc.pid]
    refresher = next(s for t, s in cycle.items() if t != proc.pid)
    assert main["holds"] == "the GIL" and main["wants"].startswith("mutex cache_lock (0x") and main["function"] == "read_cache"
    # The refresher waits inside take_gil, on the GIL's own condition variable; glibc 2.43's
    # cancellable futex wait ends the native unwinding there, so the wait is known by the
    # futex's address inside the GIL, and named by the Python line that made the call.
    assert refresher["wants"] == "the GIL" and refresher["holds"] == main["wants"]
    assert (refresher["function"], refresher["line"]) == ("refresher", line_of("released.refresh_cache_with_callback()"))
    assert hang["gil_waiters"] == [refresher["tid"]]
    assert c["signature"].startswith("hang | GIL deadlock | read_cache <-> ")
    main_thread = next(t for t in report["threads"] if t["tid"] == proc.pid)
    assert where(python_frames(main_thread)[:1]) == [("main", line_of("holding.read_cache()"))]


def _runtime_file_offset(core: Path, exe: Path) -> int:
    """Where _PyRuntime (the executable's, not position-independent in Debian's build) lies in
    the core file."""
    with open(exe, "rb") as f:
        symbols = ELFFile(f).get_section_by_name(".dynsym")
        address = next(s["st_value"] for s in symbols.iter_symbols() if s.name == "_PyRuntime")
    with open(core, "rb") as f:
        for segment in ELFFile(f).iter_segments():
            if segment["p_type"] == "PT_LOAD" and segment["p_vaddr"] <= address < segment["p_vaddr"] + segment["p_filesz"]:
                return segment["p_offset"] + address - segment["p_vaddr"]
    raise AssertionError("_PyRuntime is not in the core")


@pytest.mark.parametrize("minor", NEWER)
def test_a_damaged_debug_offsets_block_falls_back_to_the_tables(sid, minor, tmp_path):
    """A core whose _Py_DebugOffsets says absurd sizes: the walker reads with the tabled layout
    of the build, gives the same frames, and says why."""
    case = sid.crash(f"three_deep-{minor}", f"/usr/bin/python{minor}", THREE_DEEP)
    damaged = tmp_path / "core.damaged"
    damaged.write_bytes(case.core.read_bytes())
    fields = pywalker.DEBUG_OFFSETS_FIELDS[tuple(int(p) for p in minor.split("."))]
    at = _runtime_file_offset(case.core, case.exe) + 16 + 8 * fields.index("thread_state.size")
    with open(damaged, "r+b") as f:
        f.seek(at)
        f.write(struct.pack("<Q", 1 << 40))
    report = analyze_json(damaged, *sysroot_args(case))
    assert where(python_frames(crashed_thread(report))[1:]) == three_deep_lines(case.extra["script"])
    assert any("_Py_DebugOffsets" in w and "damaged" in w for w in report["warnings"]), report["warnings"]


def test_tensorflow_kernel_crash_on_python_3_14(sid):
    """TensorFlow's first cp314 wheels: LRNGrad CHECK-fails inside its kernel's Compute."""
    script = REPO / "tests" / "tf_corpus" / "kernel_check_failure.py"
    case = sid.crash("tf-kernel-check-3.14", "/opt/tensorflow-py314/bin/python", script, timeout=600)
    report = analyze_json(case.core, *sysroot_args(case))
    c = report["classification"]
    assert (c["category"], c["fault_kind"]) == ("kernel-compute", "check-failure")
    assert "LRNGrad" in (c.get("op_instance") or {}).get("op", "") or "LRNGrad" in c["summary"]
    assert "d < dims()" in (c["abort_message"] or "")
    env = report["environment"]
    assert env["python_version"].startswith("3.14.")
    assert env["tensorflow_version"].startswith("2.22.0")
    installed = in_root(
        "/opt/tensorflow-py314/bin/python", "-c",
        "import importlib.metadata as m; print(m.version('tensorflow-cpu'), m.version('numpy'))",
    ).stdout.split()  # fmt: skip
    packages = {p["module"]: p for p in env["packages"] if p.get("module")}
    assert env["tensorflow_package"].replace("_", "-") == "tensorflow-cpu"  # as its metadata spells it
    # tensorflow.__version__ spells the release candidate "2.22.0-rc0"; its metadata "2.22.0rc0".
    assert [packages["tensorflow"]["version"].replace("-", ""), packages["numpy"]["version"]] == installed
    assert packages["tensorflow"]["path"] == "/opt/tensorflow-py314/lib/python3.14/site-packages/tensorflow/__init__.py"
    line = next(i for i, text in enumerate(script.read_text().splitlines(), 1) if "tf.raw_ops.LRNGrad" in text)
    frames = python_frames(crashed_thread(report))
    assert any(f["file"] == str(case.extra["script"]) and f["line"] == line for f in frames)
    case.core.unlink()  # ~300 MB
