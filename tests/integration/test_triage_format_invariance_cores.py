"""One crash, many pastes, for every crash core the suite makes: the C crashers (a null
dereference, a double free, an assert, a division by zero, ud2, SIGBUS, a bad callback) and the
TensorFlow scenarios a pasted `bt` can stand for (support/pastes.py).

The crash is read from gdb's real `bt` on the core (the session's paste, shared with
test_triage_agreement.py, which checks it against the core's own analysis); the writers of
tests/support/pasteformats.py put it into every format the tool reads. Category, fault kind,
culprit and signature must be those of the gdb rendering for every one.
"""

from __future__ import annotations

import functools

import pytest
from support.pasteformats import WRITERS, crash_of
from support.pastes import BEYOND_THE_TEXT, C_CASES
from support.paths import REPO
from support.tfcores import SCENARIOS

from coreanalyze.triage.parse import parse_text, triage_text

TF_CASES = sorted(set(SCENARIOS) - BEYOND_THE_TEXT)
# Crash x format pairs whose format cannot carry what the verdict rests on, with the reason (strict: one that starts to pass
# leaves this table).
_SHORT_WRAP = (
    "a paste of two or three frames wrapped at 80 columns has fewer cut lines than repair.py needs "
    "(MIN_WRAPPED_LINES) to tell a wrap from a text whose lines are that long"
)
CANNOT_CARRY: dict[tuple[str, str], str] = {
    **{(name, "gdb-wrapped-80"): _SHORT_WRAP for name in ("double_free", "divzero", "ud2", "sigbus", "null_callback")},
    ("null_callback", "pystack"): (
        "pystack prints no pc: the frame at 0x0 a call through a null pointer left is an unnamed frame like any "
        "other, which the culprit may be, where gdb's 0x0 says it is the jump, not code"
    ),
}


def _cases(names):
    return [
        pytest.param(name, writer, id=f"{name}-{writer}", marks=[pytest.mark.xfail(reason=CANNOT_CARRY[name, writer], strict=True)] if (name, writer) in CANNOT_CARRY else [])
        for name in names
        for writer in sorted(WRITERS)
    ]


@functools.cache
def verdict(text: str, name: str) -> tuple[str, str, str | None, str]:
    c = triage_text(text, name).classification
    return c.category, str(c.fault_kind), c.culprit.function, c.signature


def _shortened(paste: str) -> str:
    """The paste with the checkout's path as one fixed path: where a line is cut when it is wrapped
    at 80 columns must not depend on where the repository was cloned."""
    return paste.replace(str(REPO), "/src/coreanalyze")


def assert_same_verdict(paste: str, writer: str, *, tensorflow: bool) -> None:
    paste = _shortened(paste)
    crash = crash_of(parse_text(paste, "bt.txt").report)
    assert crash.frames, paste[-2000:]
    expected = verdict(WRITERS["gdb"](crash), "gdb.txt")
    # A plain C program's crash is in no TensorFlow subsystem: its category is rightly unknown.
    assert expected[1] != "unknown" and (expected[0] != "unknown" or not tensorflow), expected
    text = WRITERS[writer](crash)
    assert verdict(text, f"{writer}.txt") == expected, text


def assert_rendering_reads_as_the_paste(paste: str) -> None:
    # Not the fault kind: `bt` shows no fault address, and the rendering states one.
    original = triage_text(paste, "bt.txt").classification
    category, _, culprit, _ = verdict(WRITERS["gdb"](crash_of(parse_text(paste, "bt.txt").report)), "gdb.txt")
    assert (original.category, original.culprit.function) == (category, culprit)


@pytest.mark.parametrize(("name", "writer"), _cases(C_CASES))
def test_every_paste_of_a_c_crash_gets_the_same_verdict(cores, pasted_backtraces, name, writer):
    case = cores.c_crash(name)
    assert_same_verdict(pasted_backtraces(case.exe, case.core), writer, tensorflow=False)


@pytest.mark.parametrize("name", C_CASES)
def test_the_gdb_rendering_of_a_c_crash_reads_as_its_paste(cores, pasted_backtraces, name):
    case = cores.c_crash(name)
    assert_rendering_reads_as_the_paste(pasted_backtraces(case.exe, case.core))


@pytest.mark.tf
@pytest.mark.parametrize(("name", "writer"), _cases(TF_CASES))
def test_every_paste_of_a_tensorflow_crash_gets_the_same_verdict(tf_cores, pasted_backtraces, name, writer):
    case = tf_cores.get(name)
    assert_same_verdict(pasted_backtraces(case.exe, case.core), writer, tensorflow=True)


@pytest.mark.tf
@pytest.mark.parametrize("name", TF_CASES)
def test_the_gdb_rendering_of_a_tensorflow_crash_reads_as_its_paste(tf_cores, pasted_backtraces, name):
    case = tf_cores.get(name)
    assert_rendering_reads_as_the_paste(pasted_backtraces(case.exe, case.core))
