"""C++ exceptions in real cores. Uncaught: the thrower is the culprit, the exception's type
and what() text are read from the exception object in the crashed process's heap. Caught and
then aborted (TensorFlow's DUCC FFT wrapper): the exception's "Assertion failure" text in the
heap is the abort message."""

from __future__ import annotations

import subprocess

import pytest
from support.coregen import run_to_core
from support.paths import CRASHERS
from support.require import require

from coreanalyze.analyze import analyze_core


@pytest.fixture(scope="module")
def uncaught(tmp_path_factory):
    gxx = require("g++")
    require("gdb")
    workdir = tmp_path_factory.mktemp("uncaught")
    exe = workdir / "uncaught_shape_error"
    subprocess.run(
        [gxx, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(CRASHERS / "uncaught_shape_error.cc")],
        check=True,
        capture_output=True,
        text=True,
    )
    case = run_to_core("uncaught_shape_error", [str(exe)], workdir)
    return analyze_core(str(case.core)).report


def test_fault_kind_is_uncaught_exception_and_the_thrower_is_the_culprit(uncaught):
    c = uncaught.classification
    assert uncaught.core.signal.name == "SIGABRT"
    assert c.fault_kind == "uncaught-exception"
    assert c.culprit.function == "tensorkit::reshape"


def test_type_and_what_are_read_from_the_core(uncaught):
    c = uncaught.classification
    assert c.detail == "tensorkit::ShapeError"  # not one of the caught (and freed) logic_errors
    assert c.abort_message == (
        "terminate called after throwing an instance of 'tensorkit::ShapeError'\n"
        "  what():  cannot reshape a tensor of rank -10 to [2, -1]"
    )
    assert "tensorkit::ShapeError" in " ".join(c.advice)


@pytest.fixture(scope="module")
def caught_then_abort(tmp_path_factory):
    gxx = require("g++")
    require("gdb")
    workdir = tmp_path_factory.mktemp("caught_then_abort")
    exe = workdir / "caught_then_abort"
    subprocess.run(
        [gxx, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(exe), str(CRASHERS / "caught_then_abort.cc")],
        check=True,
        capture_output=True,
        text=True,
    )
    case = run_to_core("caught_then_abort", [str(exe)], workdir)
    return analyze_core(str(case.core)).report


def test_assertion_failure_text_of_a_caught_exception_is_the_abort_message(caught_then_abort):
    c = caught_then_abort.classification
    assert c.abort_message == "Assertion failure: no zero-sized FFTs (plan_impl.h:2948)"
    assert c.fault_kind == "abort"  # caught, then abort(): not an uncaught exception
    assert c.culprit.function == "fftkit::c2r"
