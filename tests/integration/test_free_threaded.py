"""Cores of a free-threaded CPython (3.13t, built by ./setup.sh from Debian trixie's python3.13
source with --disable-gil): every object has a larger header and no GIL serializes the threads.

The crashers die of a real fault in native code and the kernel writes their cores. Their Python
frames are checked against the scripts' marker lines and against pystack's reading of the same
cores; their locals against what the process itself wrote down before the fault (known.json: the
reprs of its frames' locals, and whether its GIL was on); the GIL against what the interpreter
said of itself: disabled by default, enabled with PYTHON_GIL=1.
"""

from __future__ import annotations

import json
import re

import pytest
from support.clirun import analyze_json, crashed_thread, run_cli
from support.pycrash import LOAD_WEIGHTS_LOCALS, crash, marker_line, short_name
from support.pythons import require_free_threaded_python
from support.require import require

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import walk_core

WORKERS = 3  # free_threads.py's


@pytest.fixture(scope="module")
def python():
    return require_free_threaded_python()


def threads_case(python_cores, python, gil: bool = False):
    """free_threads.py's core, run without its GIL (the default) or with it (PYTHON_GIL=1)."""
    env = {"PYTHON_GIL": "1"} if gil else {"PYTHON_GIL": "0"}
    return crash(python_cores, "free_threads.py", "3.13t-gil" if gil else "3.13t", python=python, env=env)


def known(case) -> dict:
    """What the process wrote down before its fault."""
    return json.loads((case.workdir / "known.json").read_text())


def python_frames(thread: dict) -> list[dict]:
    return [f for f in thread["frames"] if f["kind"] == "python"]


def where(frames: list[dict]) -> list[tuple[str, int | None]]:
    return [(short_name(f["function"]), f["line"]) for f in frames]


def in_process(case, **options) -> dict:
    """The walker's document read with no debugger."""
    with read_core(case.core) as notes:
        return walk_core(Process(notes), module_table(notes, executable=str(case.exe)), options)


def pystack_threads_with_locals(case) -> dict[int, list[tuple[str, int, str, set[str]]]]:
    """tid -> [(file, line, function, names of its arguments and locals)] innermost first, as
    pystack reads the core."""
    engine = require(module="pystack.engine", what="pystack (test dependency)")
    threads = engine.get_process_threads_for_core(
        str(case.core), str(case.exe), native_mode=engine.NativeReportingMode.OFF, locals=True
    )
    return {
        t.tid: [(f.code.filename, f.code.location.lineno, f.code.scope, set(f.arguments) | set(f.locals)) for f in t.frames][::-1]
        for t in threads
    }


def test_every_thread_runs_without_the_gil(python_cores, python):
    case = threads_case(python_cores, python)
    script = case.extra["script"]
    assert known(case)["gil_enabled"] is False, "the interpreter ran with a GIL: not a free-threaded build"
    report = analyze_json(case.core, "--python", str(python))
    assert report["environment"]["python_version"].startswith("3.13.")
    assert (report["environment"]["python_build"], report["environment"]["python_gil"]) == ("free-threaded", "disabled")
    main = crashed_thread(report)
    assert short_name(python_frames(main)[0]["function"]) == "string_at"
    assert where(python_frames(main)[1:]) == [
        ("crash_now", marker_line(script, "CRASH-LINE")),
        ("main", marker_line(script, "CALL-CRASH")),
        ("<module>", marker_line(script, "CALL-MAIN")),
    ]
    workers = [t for t in report["threads"] if t is not main and python_frames(t)]
    assert len(workers) == WORKERS
    for worker in workers:
        assert where(python_frames(worker)[:2]) == [
            ("hold_shard", marker_line(script, "SHARD-LINE")),
            ("feed", marker_line(script, "CALL-SHARD")),
        ]
    # No thread holds a GIL that is off; the report says why instead of "unknown".
    assert [t["holds_gil"] for t in report["threads"]] == [None] * len(report["threads"])
    assert not [w for w in report["warnings"] if "walker" in w or "Python" in w], report["warnings"]
    text = run_cli(str(case.core), "--python", str(python), "--format", "text", "-o", "-").stdout
    assert re.search(r"^  python_gil +disabled$", text, re.M) and "· GIL disabled ·" in text


def test_frames_as_pystack_and_locals_as_the_process_knew_them(python_cores, python):
    case = threads_case(python_cores, python)
    doc = in_process(case, locals=True, locals_frames=2)
    assert (doc["layout"], doc["free_threaded"], doc["gil_enabled"]) == ("debug-offsets", True, False)
    assert doc["warnings"] == []
    theirs = {tid: frames for tid, frames in pystack_threads_with_locals(case).items() if frames}
    ours = {t["tid"]: t["frames"] for t in doc["threads"]}
    assert {tid: [(f["file"], f["line"], short_name(f["function"])) for f in frames] for tid, frames in ours.items()} == {
        tid: [frame[:3] for frame in frames] for tid, frames in theirs.items()
    }
    # Each thread's own function (the workers' innermost, the main thread's under string_at).
    noted = {int(tid): values for tid, values in known(case)["threads"].items()}
    assert sorted(noted) == sorted(ours)
    for tid, frames in ours.items():
        index = 1 if tid == case.pid else 0
        own = frames[index]
        assert own["locals"] is not None and set(noted[tid]) <= set(own["locals"]), (tid, own)
        assert {name: own["locals"][name] for name in noted[tid]} == noted[tid]
        assert set(own["locals"]) == theirs[tid][index][3]


def test_locals_of_every_kind(python_cores, python):
    """three_deep.py's locals (bytes, tuple, list, dict, a big int, a non-ASCII str, a long one)
    through gdb, each object read past the free-threaded header."""
    case = crash(python_cores, "three_deep.py", "3.13t", python=python)
    report = analyze_json(case.core, "--python", str(python), "--locals")
    frames = python_frames(crashed_thread(report))
    load_weights = next(f for f in frames if short_name(f["function"]) == "load_weights")
    locals_ = dict(load_weights["locals"])
    blob = locals_.pop("blob")
    assert blob.startswith("'xxxxxxxx") and blob.endswith("...") and len(blob) <= 120
    assert locals_ == LOAD_WEIGHTS_LOCALS


def test_the_gil_turned_on(python_cores, python):
    """PYTHON_GIL=1: the same build runs with a GIL, and the faulting thread holds it."""
    case = threads_case(python_cores, python, gil=True)
    assert known(case)["gil_enabled"] is True
    report = analyze_json(case.core, "--python", str(python))
    assert (report["environment"]["python_build"], report["environment"]["python_gil"]) == ("free-threaded", "enabled")
    holders = [t["tid"] for t in report["threads"] if t["holds_gil"]]
    assert holders == [report["crashing_thread"]]
    workers = [t for t in report["threads"] if python_frames(t) and t["tid"] != report["crashing_thread"]]
    assert len(workers) == WORKERS and all(t["holds_gil"] is False for t in workers)


def test_with_the_interpreter_absent(python_cores, python, tmp_path):
    """An empty sysroot: no file of the interpreter here; _PyRuntime is found in the core by its
    _Py_DebugOffsets cookie, which says the build is free-threaded, and the frames are the same."""
    case = threads_case(python_cores, python)
    report = analyze_json(case.core, "--sysroot", str(tmp_path))
    assert report["environment"]["python_runtime"] == "located by scanning the core (debug-offsets)"
    assert (report["environment"]["python_build"], report["environment"]["python_gil"]) == ("free-threaded", "disabled")
    script = case.extra["script"]
    assert where(python_frames(crashed_thread(report))[1:2]) == [("crash_now", marker_line(script, "CRASH-LINE"))]
    workers = [t for t in report["threads"] if python_frames(t) and t["tid"] != report["crashing_thread"]]
    assert len(workers) == WORKERS
    assert all(where(python_frames(t)[:1]) == [("hold_shard", marker_line(script, "SHARD-LINE"))] for t in workers)
