"""C++ exceptions in real cores. Uncaught: the thrower is the culprit, the exception's type
and what() text are read from the exception object in the crashed process's heap. Caught and
then aborted (TensorFlow's DUCC FFT wrapper): the exception's "Assertion failure" text in the
heap is the abort message."""

from __future__ import annotations

import pytest

from coreanalyze.classify.abortmsg import find_handled_exception, reason_in
from coreanalyze.corefile import read_core
from coreanalyze.pipeline.analyze import analyze_core


@pytest.fixture(scope="module")
def uncaught(cores):
    return analyze_core(str(cores.c_crash("uncaught_shape_error").core)).report


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
def caught_then_abort(cores):
    return cores.c_crash("caught_then_abort")


@pytest.fixture(scope="module")
def caught_then_abort_report(caught_then_abort):
    return analyze_core(str(caught_then_abort.core)).report


def test_assertion_failure_text_of_a_caught_exception_is_the_abort_message(caught_then_abort_report):
    c = caught_then_abort_report.classification
    assert c.abort_message == "Assertion failure: no zero-sized FFTs (plan_impl.h:2948)"
    assert c.fault_kind == "abort"  # caught, then abort(): not an uncaught exception
    assert c.culprit.function == "fftkit::c2r"
    assert c.detail == "std::runtime_error"


def test_the_handled_exception_is_reached_through_the_thread_s_tls(caught_then_abort):
    """Not a search of the heap: libsupc++'s caughtExceptions of the crashed thread, found from
    its thread pointer, names the live exception object (the copies the thrower made while
    formatting are freed and may be reused before the core is written)."""
    notes = read_core(str(caught_then_abort.core))
    try:
        thread = notes.thread(notes.crashing_tid)
        thrown = find_handled_exception(notes.memory, thread.registers["fs_base"])
        assert thrown is not None
        assert thrown.handler_count == 1  # inside its catch block
        assert "Assertion failure\nno zero-sized FFTs" in thrown.what
        assert reason_in(thrown) == "Assertion failure: no zero-sized FFTs (plan_impl.h:2948)"
        assert find_handled_exception(notes.memory, thread.registers["fs_base"] + 4096 * 1024) is None
    finally:
        notes.close()
