"""Python crashers (tests/pycrashers) run under each interpreter of the machine, and what an
independent reader (pystack) finds in their cores."""

from __future__ import annotations

from pathlib import Path

from support.coregen import CrashCase
from support.paths import PYCRASHERS
from support.pythons import SYSTEM_PYTHON, require_pyenv_python
from support.require import missing

INTERPRETERS = ["3.10", "3.11", "3.12", "3.13", "system"]


def interpreter(which: str) -> Path:
    if which == "system":
        exe = SYSTEM_PYTHON.resolve()
        if not exe.is_file():
            missing(f"the system interpreter {SYSTEM_PYTHON}")
        return exe
    return require_pyenv_python(which.split(".")[1])


def python_minor(which: str, exe: Path) -> str:
    return exe.name.removeprefix("python") if which == "system" else which


def crash(cores, script: str, which: str, python: Path | None = None, env: dict | None = None) -> CrashCase:
    exe = python or interpreter(which)
    return cores.python_crash(f"{Path(script).stem}-{which}", exe, PYCRASHERS / script, env=env)


def marker_line(script: Path, marker: str) -> int:
    hits = [i for i, text in enumerate(script.read_text().splitlines(), 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"{marker} must mark exactly one line of {script}"
    return hits[0]


def short_name(function: str) -> str:
    """co_name from a co_qualname ("Thread.run" -> "run"), as pystack reports functions."""
    return function.rsplit(".", 1)[-1]


def pystack_threads(case: CrashCase) -> dict[int, list[tuple[str, int, str]]]:
    """tid -> [(file, line, function)] innermost first, as pystack reads the same core."""
    try:
        from pystack.engine import NativeReportingMode, get_process_threads_for_core
    except ImportError:
        missing("pystack (test dependency)")
    threads = get_process_threads_for_core(str(case.core), str(case.exe), native_mode=NativeReportingMode.OFF)
    return {
        t.tid: [(f.code.filename, f.code.location.lineno, f.code.scope) for f in t.frames][::-1] for t in threads
    }


# The safe reprs of load_weights' locals in three_deep.py ("blob" is checked apart: clipped).
LOAD_WEIGHTS_LOCALS = {
    "address": "16",
    "header": "b'weights'",
    "count": "3",
    "shape": "<tuple of 2 items>",
    "names": "<list of 2 items>",
    "meta": "<dict of 1 items>",
    "missing": "None",
    "enabled": "True",
    "big": str(-(2**70)),
    "title": repr("na\u00efve \u2713"),
}
