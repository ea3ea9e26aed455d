"""An uncaught C++ exception, from a real core: the thrower is the culprit, the exception's type
and what() text are read from the exception object in the crashed process's heap."""

from __future__ import annotations

import subprocess

import pytest

from coreanalyze.analyze import analyze_core
from coregen import CRASHERS, require, run_to_core


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
