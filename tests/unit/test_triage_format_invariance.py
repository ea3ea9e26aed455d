"""One crash, many pastes: the verdict does not depend on the tool that printed the crash.

The crashes are every real one whose text the tests hold: gdb's output on real cores, TensorFlow's
own fatal output with faulthandler, the sample reports of tests/data/traces. tests/support/
pasteformats.py writes each into the shapes other debuggers, crash reporters and runtimes print,
and the same text wrapped at 80 columns or with its frame numbers turned into issue links.
Category, fault kind, culprit and signature must be those of the gdb rendering for every one.
(tests/integration/test_triage_format_invariance_cores.py does the same for the crash cores the
suite makes.)
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from coreanalyze.triage.parse import parse_text, triage_text
from tests.support.pasteformats import WRITERS, crash_of

DATA = Path(__file__).resolve().parent.parent / "data"
# Real crash texts whose crashing thread shows no native frame: there is nothing to write in the
# formats that carry native frames, and gdb's (the reference) is one of them.
NO_NATIVE_FRAME = {
    "tflite_invoke_segv_faulthandler": "faulthandler's Python stack only (the process had no C stack dump)",
}
REAL = {
    path.stem: path
    for path in (
        *sorted(p for p in (DATA / "traces").glob("*.txt") if p.stem not in NO_NATIVE_FRAME),
        # Real TensorFlow 2.21 output (LRNGrad's CHECK, absl's stack trace), and real gdb 13 on
        # the core of a ctypes fault that faulthandler re-raised.
        DATA / "triage" / "tf_check_failure_lrngrad.txt",
        DATA / "triage" / "gdb_bt_faulthandler_reraise.txt",
    )
}
# Crash x format pairs whose format cannot carry what the verdict rests on, with the reason
# (strict: when one starts to pass, it leaves this table).
_WINDOWS_LIBRARY = (
    "an unnamed frame is signed by its library's file name (libffi.so.8 -> libffi.so); WinDbg and "
    "Visual Studio name the module the Windows way (libffi, libffi.dll), which is not that file"
)
CANNOT_CARRY: dict[tuple[str, str], str] = {
    ("gdb_bt_faulthandler_reraise", "windbg-kn"): _WINDOWS_LIBRARY,
    ("gdb_bt_faulthandler_reraise", "windbg-analyze"): _WINDOWS_LIBRARY,
    ("gdb_bt_faulthandler_reraise", "visual-studio"): _WINDOWS_LIBRARY,
}


@functools.cache
def crash(name: str):
    path = REAL[name]
    return crash_of(parse_text(path.read_text(encoding="utf-8"), path.name).report)


@functools.cache
def verdict(text: str, name: str) -> tuple[str, str, str | None, str]:
    c = triage_text(text, name).classification
    return c.category, str(c.fault_kind), c.culprit.function, c.signature


def _cases():
    for name in sorted(REAL):
        for writer in sorted(WRITERS):
            reason = CANNOT_CARRY.get((name, writer))
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            yield pytest.param(name, writer, marks=marks, id=f"{name}-{writer}")


@pytest.mark.parametrize(("name", "writer"), list(_cases()))
def test_every_paste_of_a_crash_gets_the_same_verdict(name, writer):
    c = crash(name)
    expected = verdict(WRITERS["gdb"](c), "gdb.txt")
    assert expected[0] != "unknown" and expected[1] != "unknown", expected
    text = WRITERS[writer](c)
    assert verdict(text, f"{writer}.txt") == expected, text


@pytest.mark.parametrize("name", sorted(REAL))
def test_the_gdb_rendering_reads_as_the_original(name):
    path = REAL[name]
    original = triage_text(path.read_text(encoding="utf-8"), path.name).classification
    category, _, culprit, _ = verdict(WRITERS["gdb"](crash(name)), "gdb.txt")
    assert (original.category, original.culprit.function) == (category, culprit)


@pytest.mark.parametrize("name", sorted(NO_NATIVE_FRAME))
def test_a_crash_left_out_has_no_native_frame(name):
    path = DATA / "traces" / f"{name}.txt"
    report = parse_text(path.read_text(encoding="utf-8"), path.name).report
    assert not crash_of(report).frames
