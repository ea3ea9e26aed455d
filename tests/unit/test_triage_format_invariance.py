"""One crash, many pastes: the verdict does not depend on the tool that printed the crash.

The crashes are real ones the tests hold (gdb's output on a real core); tests/support/pasteformats.py
writes each into the shapes other debuggers, crash reporters and runtimes print, and the same text
wrapped at 80 columns or with its frame numbers turned into issue links. Category, fault kind,
culprit and signature must be those of the gdb rendering for every one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coreanalyze.triage.frame_shapes import bare_name
from coreanalyze.triage.parse import parse_text, triage_text
from tests.support.pasteformats import WRITERS, Crash, PastedFrame

DATA = Path(__file__).resolve().parent.parent / "data"
# Real crash texts, and a fault address where the text has none (so that every format can say it;
# a non-null one, as the core's was).
REAL = {
    "custom_op_compute_segv": (DATA / "traces" / "custom_op_compute_segv.txt", 0x7F3F2A000010),
}


def _library(frame) -> str | None:
    """The library a frame's code is in. gdb names a source file instead where it has one; the
    other tools name the library, which for these was libc or the custom op's own library."""
    if frame.module:
        return frame.module
    if not frame.file:
        return None
    if frame.file.startswith(("./nptl/", "../sysdeps/")):
        return "/lib/x86_64-linux-gnu/libc.so.6"
    return f"/opt/app/lib{Path(frame.file).stem}.so"


def crash_of(path: Path, address: int | None) -> Crash:
    """The crashing thread of a real text as the writers need it."""
    report = parse_text(path.read_text(encoding="utf-8"), path.name).report
    frames = [
        PastedFrame(function=bare_name(f.function) if f.function else None, module=_library(f), pc=f.pc or 0x400000 + 16 * f.index, file=f.file, line=f.line)
        for f in report.crashed_thread.frames
        if f.kind == "native"
    ]
    return Crash(signal=report.core.signal.name, address=report.core.signal.address if report.core.signal.address is not None else address, frames=frames)


def verdict(text: str, name: str) -> tuple[str, str, str | None, str]:
    c = triage_text(text, name).classification
    return c.category, str(c.fault_kind), c.culprit.function, c.signature


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("crash", sorted(REAL))
def test_every_paste_of_a_crash_gets_the_same_verdict(crash, writer):
    path, address = REAL[crash]
    c = crash_of(path, address)
    expected = verdict(WRITERS["gdb"](c), "gdb.txt")
    assert expected[0] != "unknown" and expected[1] != "unknown", expected
    text = WRITERS[writer](c)
    assert verdict(text, f"{writer}.txt") == expected, text


@pytest.mark.parametrize("crash", sorted(REAL))
def test_the_gdb_rendering_reads_as_the_original(crash):
    path, address = REAL[crash]
    original = triage_text(path.read_text(encoding="utf-8"), path.name).classification
    category, _, culprit, _ = verdict(WRITERS["gdb"](crash_of(path, address)), "gdb.txt")
    assert (original.category, original.culprit.function) == (category, culprit)
