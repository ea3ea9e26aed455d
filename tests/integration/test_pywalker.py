"""The CPython walker over the in-process target: real cores, no debugger.

gdb_scripts/pywalker/ is debugger-neutral; coreanalyze.python.coretarget gives it the core file's own
memory (plus the mapped files for what the kernel did not dump), symbols from the interpreter's
ELF symbol tables and the threads from the core's notes. The tests take gdb off PATH once their
core exists (cores of the Python crashers, written by the kernel). The last test checks that
the gdb-hosted target reads the very same document from the same core.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.pycrash import INTERPRETERS, LOAD_WEIGHTS_LOCALS, crash, marker_line, pystack_threads, python_minor, short_name

from coreanalyze.corefile import read_core
from coreanalyze.corefile.modules import module_table
from coreanalyze.process.process import Process
from coreanalyze.python.coretarget import walk_core

# DWARF is not read in-process: the interpreters with debug info are walked with the tables
# (which a gdb test proves equal to their DWARF), 3.13 with its own _Py_DebugOffsets.
IN_PROCESS_LAYOUT = {"3.10": "table", "3.11": "table", "3.12": "table", "3.13": "debug-offsets", "system": "table"}


def in_process_walk(case, **options) -> dict:
    """The walker's document for a core, read with no debugger."""
    with read_core(case.core) as notes:
        return walk_core(Process(notes), module_table(notes, executable=str(case.exe)), options)


def crashed_thread(doc: dict, case) -> dict:
    found = [t for t in doc["threads"] if t["tid"] == case.pid] if case.pid else doc["threads"][:1]
    assert len(found) == 1
    return found[0]


def where(frames: list[dict]) -> list[tuple[str, int | None]]:
    return [(short_name(f["function"]), f["line"]) for f in frames]


@pytest.mark.parametrize("which", INTERPRETERS)
def test_frames_are_the_scripts_lines(python_cores, hide_gdb, which):
    case = crash(python_cores, "three_deep.py", which)
    hide_gdb()
    script = case.extra["script"]
    doc = in_process_walk(case)

    frames = crashed_thread(doc, case)["frames"]
    assert where(frames[1:]) == [
        ("load_weights", marker_line(script, "CRASH-LINE")),
        ("build_model", marker_line(script, "CALL-LOAD")),
        ("train", marker_line(script, "CALL-BUILD")),
        ("<module>", marker_line(script, "CALL-TRAIN")),
    ]
    assert short_name(frames[0]["function"]) == "string_at"
    assert all(f["file"] == str(script) for f in frames[1:])
    minor = python_minor(which, case.exe)
    assert doc["python_version"] == minor or doc["python_version"].startswith(minor + ".")
    assert doc["layout"] == IN_PROCESS_LAYOUT[which]
    assert doc["warnings"] == []
    assert crashed_thread(doc, case)["holds_gil"] is True


@pytest.mark.parametrize("which", INTERPRETERS)
def test_every_thread_and_the_gil(python_cores, hide_gdb, which):
    case = crash(python_cores, "sleeper_thread.py", which)
    hide_gdb()
    script = case.extra["script"]
    doc = in_process_walk(case)

    main = crashed_thread(doc, case)
    assert where(main["frames"][1:]) == [
        ("crash_now", marker_line(script, "CRASH-LINE")),
        ("main", marker_line(script, "CALL-CRASH")),
        ("<module>", marker_line(script, "CALL-MAIN")),
    ]
    (worker,) = [t for t in doc["threads"] if t is not main]
    assert where(worker["frames"][:2]) == [
        ("wait_for_data", marker_line(script, "SLEEP-LINE")),
        ("worker_loop", marker_line(script, "CALL-WAIT")),
    ]
    assert (main["holds_gil"], worker["holds_gil"]) == (True, False)
    assert doc["gil_holder"] == main["tid"] == doc["pid"]


@pytest.mark.parametrize("which", ["3.10", "3.12", "system"])
def test_locals_of_the_innermost_frames(python_cores, hide_gdb, which):
    case = crash(python_cores, "three_deep.py", which)
    hide_gdb()
    doc = in_process_walk(case, locals=True, locals_frames=5)
    frames = {short_name(f["function"]): f for f in crashed_thread(doc, case)["frames"]}

    weights = dict(frames["load_weights"]["locals"])
    assert weights.pop("blob").startswith("'xxxxxxxx")
    assert weights == LOAD_WEIGHTS_LOCALS
    assert frames["train"]["locals"] == {"epochs": "3", "label": "'resnet'"}


@pytest.mark.parametrize("which", INTERPRETERS)
def test_damaged_state_gives_the_readable_frames_and_a_warning(python_cores, hide_gdb, which):
    case = crash(python_cores, "broken_caller.py", which)
    hide_gdb()
    script = case.extra["script"]
    doc = in_process_walk(case)
    assert where(crashed_thread(doc, case)["frames"][1:]) == [
        ("break_caller_and_crash", marker_line(script, "CRASH-LINE")),
        ("???", None),
        ("outer", marker_line(script, "CALL-DAMAGED")),
        ("<module>", marker_line(script, "CALL-OUTER")),
    ]
    assert any("unreadable code object" in w for w in doc["warnings"])


@pytest.mark.parametrize("which", INTERPRETERS)
def test_same_frames_as_pystack(python_cores, hide_gdb, which):
    case = crash(python_cores, "sleeper_thread.py", which)
    hide_gdb()
    doc = in_process_walk(case)
    ours = {
        t["tid"]: [(f["file"], f["line"], short_name(f["function"])) for f in t["frames"]] for t in doc["threads"]
    }
    assert ours == {tid: frames for tid, frames in pystack_threads(case).items() if frames}


@pytest.mark.parametrize("which", INTERPRETERS)
def test_imported_modules_with_file_and_version(python_cores, hide_gdb, which):
    """sys.modules of the dead process: its top-level modules, where each was loaded from and
    the __version__ it declared (ctypes says 1.1.0 on every version tested)."""
    case = crash(python_cores, "three_deep.py", which)
    hide_gdb()
    doc = in_process_walk(case, imports=True)
    imports = {m["name"]: m for m in doc["imports"]}
    prefix = str(case.exe.resolve().parent.parent)
    assert imports["ctypes"]["version"] == "1.1.0"
    assert imports["ctypes"]["file"].startswith(prefix) and imports["ctypes"]["file"].endswith("/ctypes/__init__.py")
    assert imports["os"]["file"].endswith("/os.py") and imports["os"]["version"] is None
    assert imports["sys"] == {"name": "sys", "file": None, "version": None}  # built in
    assert all("." not in name for name in imports)
    assert not any("sys.modules" in w for w in doc["warnings"])


@pytest.mark.parametrize("which", INTERPRETERS)
def test_module_attributes_looked_up_by_hash_are_those_a_scan_finds(python_cores, hide_gdb, monkeypatch, which):
    """A module's __file__ and __version__ are found as CPython's own dict lookup finds them,
    once their keys' hashes are learned: the same answers as reading every entry of every
    module's namespace."""
    from coreanalyze.python.coretarget import pywalker

    case = crash(python_cores, "three_deep.py", which)
    hide_gdb()
    looked_up = in_process_walk(case, imports=True)
    monkeypatch.setattr(pywalker.Imports, "_looked_up", lambda self, namespace, names: None)
    scanned = in_process_walk(case, imports=True)
    assert looked_up["imports"] == scanned["imports"] and len(scanned["imports"]) > 20
    assert sum(1 for m in scanned["imports"] if m["version"]) >= 2


def test_a_program_without_python(cores, hide_gdb):
    """A C program's core: no Python runtime to find, said in one warning."""
    case = cores.c_crash("null_thread")
    hide_gdb()
    doc = in_process_walk(case)
    assert doc["threads"] == [] and doc["python_version"] is None
    assert doc["warnings"] == ["no _PyRuntime symbol: not a CPython 3.10+ process, or its libpython is missing"]


@pytest.mark.parametrize("which", INTERPRETERS)
@pytest.mark.parametrize("script", ["three_deep.py", "sleeper_thread.py", "broken_caller.py"])
def test_gdb_and_in_process_targets_read_the_same(python_cores, which, script):
    """The same walker through gdb's view of the core and through the core file: one document
    (only the layout's source differs where gdb reads the interpreter's DWARF)."""
    from support.require import require

    from coreanalyze.gdb.debugger import GdbDebugger
    from coreanalyze.gdb.session import GdbSession
    from coreanalyze.process.process import Process
    from coreanalyze.python.coretarget import InProcessWalker
    from coreanalyze.python.pywalk import WalkOptions

    require("gdb")
    case = crash(python_cores, script, which)
    options = WalkOptions(with_locals=True, imports=True)
    with read_core(case.core) as notes:
        ours = InProcessWalker(Process(notes), module_table(notes, executable=str(case.exe))).python_stacks(options)
    with GdbSession() as session:
        session.load(case.core, executable=case.exe)
        theirs = GdbDebugger(session).python_stacks(options)
    assert ours.layout == IN_PROCESS_LAYOUT[which]
    assert replace(ours, layout=None) == replace(theirs, layout=None)
    assert ours.threads and ours.imports
