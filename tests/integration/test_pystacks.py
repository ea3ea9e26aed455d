"""Python frames read from real cores of real crashing Python programs.

Every interpreter on the machine is used: pyenv's CPython 3.10-3.13 (with DWARF) and Debian's
stripped /usr/bin/python3.11, plus virtual environments. Frames are checked against the lines
of the crash scripts (found by their marker comments) and against pystack, an independent
reader of the same interpreter structures, on the same cores.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.coregen import CrashCase, compile_c
from support.paths import PYCRASHERS
from support.pycrash import (
    INTERPRETERS,
    LOAD_WEIGHTS_LOCALS,
    crash,
    interpreter,
    marker_line,
    pystack_threads,
    python_minor,
    short_name,
)

from coreanalyze.base import model
from coreanalyze.gdb.collect import collect
from coreanalyze.gdb.debugger import PYSTACKS_COMMAND as MI_COMMAND
from coreanalyze.gdb.debugger import PYSTACKS_SCRIPT as SCRIPT
from coreanalyze.gdb.debugger import GdbDebugger
from coreanalyze.gdb.session import GdbSession
from coreanalyze.pipeline.pystacks import PythonStacks, add_python_frames, find_launched_from, is_eval_frame
from coreanalyze.python.pywalk import parse_walk_result

# How the walker must find its layout on each: the stripped interpreter has only the table.
EXPECTED_LAYOUT = {"3.10": "dwarf", "3.11": "dwarf", "3.12": "dwarf", "3.13": "debug-offsets", "system": "table"}


def analyze(case: CrashCase, with_locals: bool = False) -> tuple[list[model.Thread], PythonStacks]:
    with GdbSession() as session:
        session.load(case.core, executable=case.exe)
        threads = collect(session).threads
        stacks = add_python_frames(GdbDebugger(session), threads, with_locals=with_locals)
    return threads, stacks


def walker_document(case: CrashCase, *args: str) -> dict:
    with GdbSession() as session:
        session.load(case.core, executable=case.exe)
        session.source(SCRIPT)
        payload = session.mi(" ".join([MI_COMMAND, *args]))
    return json.loads(payload["json"])


def crashed(threads: list[model.Thread]) -> model.Thread:
    found = [t for t in threads if t.crashed]
    assert len(found) == 1
    return found[0]


def python_frames(thread: model.Thread) -> list[model.Frame]:
    return [f for f in thread.frames if f.kind == "python"]


def where(frames: list[model.Frame]) -> list[tuple[str | None, int | None]]:
    return [(f.function, f.line) for f in frames]


def assert_placed_inside_eval_frames(thread: model.Thread) -> None:
    """Indexes are renumbered and each Python frame sits inside an evaluation-loop frame."""
    assert [f.index for f in thread.frames] == list(range(len(thread.frames)))
    for i, frame in enumerate(thread.frames):
        if frame.kind != "python":
            continue
        outward_native = next(f for f in thread.frames[i + 1 :] if f.kind == "native")
        assert is_eval_frame(outward_native), (frame.function, outward_native.function)


# --------------------------------------------------------------------------- the crashing thread


@pytest.mark.parametrize("which", INTERPRETERS)
def test_crashing_thread_frames_are_the_scripts_lines(cores, which):
    case = crash(cores, "three_deep.py", which)
    script = case.extra["script"]
    threads, stacks = analyze(case)
    thread = crashed(threads)
    frames = python_frames(thread)

    assert [short_name(f.function) for f in frames] == ["string_at", "load_weights", "build_model", "train", "<module>"]
    assert where(frames[1:]) == [
        ("load_weights", marker_line(script, "CRASH-LINE")),
        ("build_model", marker_line(script, "CALL-LOAD")),
        ("train", marker_line(script, "CALL-BUILD")),
        ("<module>", marker_line(script, "CALL-TRAIN")),
    ]
    assert all(f.file == str(script) for f in frames[1:])
    assert frames[1].source == "return ctypes.string_at(address, 8)  # CRASH-LINE"
    # ctypes' own frame: the line is the one in this interpreter's ctypes that calls down.
    ctypes_file = Path(frames[0].file)
    assert ctypes_file.parts[-2:] == ("ctypes", "__init__.py")
    assert "_string_at(" in ctypes_file.read_text().splitlines()[frames[0].line - 1]
    assert frames[0].source and "_string_at(" in frames[0].source

    assert thread.frames[0].kind == "native"  # the fault itself stays the innermost frame
    assert_placed_inside_eval_frames(thread)
    if which == "3.10":
        # 3.10 runs every Python frame in its own activation of the evaluation loop.
        for frame in frames:
            assert is_eval_frame(thread.frames[frame.index + 1])
    # 3.10 has no Py_Version: its minor version comes from the library's name.
    minor = python_minor(which, case.exe)
    assert stacks.python_version == minor or stacks.python_version.startswith(minor + ".")
    assert stacks.walk.layout == EXPECTED_LAYOUT[which]
    assert stacks.warnings == []
    assert thread.holds_gil is True
    assert thread.role == "main"
    assert stacks.launched_from is None  # the crashing thread shows its own Python caller


@pytest.mark.parametrize("which", INTERPRETERS)
def test_same_frames_as_pystack(cores, which):
    for script in ("three_deep.py", "sleeper_thread.py"):
        case = crash(cores, script, which)
        _, stacks = analyze(case)
        ours = {
            t.tid: [(f.file, f.line, short_name(f.function)) for f in t.frames]
            for t in stacks.walk.threads
            if t.frames
        }
        theirs = {tid: frames for tid, frames in pystack_threads(case).items() if frames}
        assert ours == theirs
        assert len(ours) == (2 if script == "sleeper_thread.py" else 1)


@pytest.mark.parametrize("which", ["3.10", "3.11", "3.12", "3.13"])
def test_builtin_layout_agrees_with_the_interpreters_debug_info(cores, which):
    """The offsets used for stripped interpreters are the ones DWARF gives for the same version."""
    case = crash(cores, "three_deep.py", which)
    doc = walker_document(case, "--show-layout")
    dwarf = doc["dwarf"]
    assert len(dwarf) > 30  # the types were really found
    for key, offset in doc["table"].items():
        assert dwarf.get(key, offset) == offset, key
    if which == "3.13":
        assert doc["layout"] == "debug-offsets"
        for key, offset in doc["debug_offsets"].items():
            assert dwarf.get(key, offset) == offset, key
    else:
        missing_from_table = set(dwarf) - set(doc["table"])
        assert not missing_from_table


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("which", INTERPRETERS)
def test_every_python_thread_with_roles_and_gil(cores, which):
    case = crash(cores, "sleeper_thread.py", which)
    script = case.extra["script"]
    threads, stacks = analyze(case)
    main = crashed(threads)
    worker = next(t for t in threads if t is not main and python_frames(t))

    assert where(python_frames(main)[1:]) == [
        ("crash_now", marker_line(script, "CRASH-LINE")),
        ("main", marker_line(script, "CALL-CRASH")),
        ("<module>", marker_line(script, "CALL-MAIN")),
    ]
    worker_frames = python_frames(worker)
    assert where(worker_frames[:2]) == [
        ("wait_for_data", marker_line(script, "SLEEP-LINE")),
        ("worker_loop", marker_line(script, "CALL-WAIT")),
    ]
    assert [short_name(f.function) for f in worker_frames[2:]] == ["run", "_bootstrap_inner", "_bootstrap"]
    assert worker_frames[2].source == "self._target(*self._args, **self._kwargs)"
    assert worker_frames[0].source == "time.sleep(seconds)  # SLEEP-LINE"
    for thread in (main, worker):
        assert_placed_inside_eval_frames(thread)

    assert (main.role, main.holds_gil) == ("main", True)
    assert (worker.role, worker.holds_gil) == ("python", False)
    assert main.tid == stacks.walk.pid
    assert stacks.warnings == []


# --------------------------------------------------------------------------- locals


@pytest.mark.parametrize("which", INTERPRETERS)
def test_locals_of_the_innermost_frames(cores, which):
    case = crash(cores, "three_deep.py", which)
    threads, _ = analyze(case, with_locals=True)
    frames = {short_name(f.function): f for f in python_frames(crashed(threads))}

    weights = frames["load_weights"].locals
    blob = weights.pop("blob")
    assert weights == LOAD_WEIGHTS_LOCALS
    assert blob.startswith("'xxxxxxxx") and blob.endswith("...") and len(blob) <= 120
    assert frames["build_model"].locals == {"name": "'resnet'", "scale": "1.5"}
    assert frames["train"].locals == {"epochs": "3", "label": "'resnet'"}
    assert frames["string_at"].locals == {"ptr": "16", "size": "8"}


@pytest.mark.parametrize("which", ["3.12"])
def test_locals_only_on_request_and_only_for_the_crashing_thread(cores, which):
    case = crash(cores, "sleeper_thread.py", which)
    threads, _ = analyze(case, with_locals=True)
    main = crashed(threads)
    assert python_frames(main)[1].locals == {}  # crash_now has no locals of its own
    assert "worker" in python_frames(main)[2].locals
    assert python_frames(main)[2].locals["worker"].startswith("<Thread object at 0x")
    for thread in threads:
        if thread is not main:
            assert all(f.locals is None for f in python_frames(thread))
    threads, _ = analyze(case)
    assert all(f.locals is None for t in threads for f in python_frames(t))


# --------------------------------------------------------------------------- launched from


@pytest.mark.parametrize("which", ["3.10", "system"])
def test_crash_in_a_native_worker_names_the_waiting_python_line(cores, which):
    """A thread without Python frames faults while its Python caller waits for it."""
    lib_dir = cores.root / "native_worker_lib"
    lib_dir.mkdir(exist_ok=True)
    lib = lib_dir / "libnative_worker.so"
    if not lib.exists():
        compile_c(PYCRASHERS / "native_worker.c", lib, ("-shared", "-fPIC"))
    case = crash(cores, "native_worker.py", which, env={"NATIVE_WORKER_LIB": str(lib)})
    script = case.extra["script"]
    threads, stacks = analyze(case)
    worker = crashed(threads)
    assert python_frames(worker) == []
    main = next(t for t in threads if t.role == "main")
    idle = next(t for t in threads if t.role == "python")
    assert where(python_frames(idle)[:1]) == [("idle_loop", marker_line(script, "IDLE-LINE"))]
    innermost = python_frames(main)[0]
    assert short_name(innermost.function) == "run" and Path(innermost.file).name == "sched.py"

    assert stacks.launched_from == model.LaunchedFrom(
        tid=main.tid, file=str(script), line=marker_line(script, "WAIT-LINE"), function="run_step"
    )
    assert main.holds_gil is False  # ctypes released it while waiting
    assert find_launched_from(threads) == stacks.launched_from
    # Once the crashing thread itself shows Python frames, it needs no launcher.
    worker.frames.insert(0, model.Frame(index=0, kind="python", function="f", file="x.py", line=1))
    assert find_launched_from(threads) is None


# --------------------------------------------------------------------------- damaged and absent state


@pytest.mark.parametrize("which", INTERPRETERS)
def test_damaged_interpreter_state_gives_the_readable_frames_and_a_warning(cores, which):
    case = crash(cores, "broken_caller.py", which)
    script = case.extra["script"]
    threads, stacks = analyze(case)
    frames = python_frames(crashed(threads))
    assert where(frames[1:]) == [
        ("break_caller_and_crash", marker_line(script, "CRASH-LINE")),
        ("???", None),
        ("outer", marker_line(script, "CALL-DAMAGED")),
        ("<module>", marker_line(script, "CALL-OUTER")),
    ]
    assert any("unreadable code object" in w for w in stacks.warnings)


def test_a_core_without_python(cores):
    case = cores.c_crash("null_thread")
    threads, stacks = analyze(case)
    assert stacks.python_version is None
    assert any("_PyRuntime" in w for w in stacks.warnings)
    assert all(f.kind == "native" for t in threads for f in t.frames)
    assert all(t.holds_gil is None for t in threads)
    assert stacks.launched_from is None


@pytest.mark.parametrize("which", ["system", "3.12"])
def test_virtual_environment(cores, which, tmp_path_factory):
    base = interpreter(which)
    venv = tmp_path_factory.mktemp(f"venv-{which}")
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    case = crash(cores, "three_deep.py", f"venv-{which}", python=venv / "bin" / "python")
    script = case.extra["script"]
    threads, stacks = analyze(case)
    assert where(python_frames(crashed(threads))[1:]) == [
        ("load_weights", marker_line(script, "CRASH-LINE")),
        ("build_model", marker_line(script, "CALL-LOAD")),
        ("train", marker_line(script, "CALL-BUILD")),
        ("<module>", marker_line(script, "CALL-TRAIN")),
    ]
    assert stacks.walk.layout == EXPECTED_LAYOUT[which]


# --------------------------------------------------------------------------- the answer's parser


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"format": "something-else/1", "json": "{}"},
        {"format": "coreanalyze-pystacks/1", "json": "{not json"},
        {"format": "coreanalyze-pystacks/1", "json": "[1, 2]"},
    ],
)
def test_unusable_walker_answers_become_warnings(payload):
    result = parse_walk_result(payload)
    assert result.threads == [] and len(result.warnings) == 1


def test_walker_answer_fields_of_the_wrong_type_are_dropped():
    doc = {
        "python_version": 3.11,
        "pid": "12",
        "warnings": ["kept", 7],
        "threads": [
            "not a thread",
            {"tid": "1", "holds_gil": "yes", "frames": [{"function": None, "line": "9", "group": -4}, 5]},
        ],
    }
    result = parse_walk_result({"format": "coreanalyze-pystacks/1", "json": json.dumps(doc)})
    assert (result.python_version, result.pid, result.warnings) == (None, None, ["kept"])
    (thread,) = result.threads
    assert (thread.tid, thread.holds_gil) == (None, None)
    (frame,) = thread.frames
    assert (frame.function, frame.line, frame.group) == ("???", None, 0)
