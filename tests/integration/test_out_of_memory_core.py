"""An uncaught std::bad_alloc in a real core: the fault kind is out-of-memory, the allocator
operator new, the culprit the function that asked for the memory."""

from __future__ import annotations

import pytest

from coreanalyze.pipeline.analyze import analyze_core


@pytest.fixture(scope="module")
def bad_alloc(cores):
    return analyze_core(str(cores.c_crash("bad_alloc").core)).report


def test_uncaught_bad_alloc_is_out_of_memory(bad_alloc):
    c = bad_alloc.classification
    assert bad_alloc.core.signal.name == "SIGABRT"
    assert c.fault_kind == "out-of-memory"
    assert c.detail == "std::bad_alloc"
    assert c.oom is not None and c.oom.allocator == "operator new"
    assert c.culprit.function == "tensorkit::allocate_buffer"


def test_signature_groups_by_allocator_and_advice_is_about_memory(bad_alloc):
    c = bad_alloc.classification
    assert c.signature.startswith("out-of-memory | operator new #")
    assert c.summary.startswith("SIGABRT: Out of memory in operator new")
    assert any("allocation failed" in a for a in c.advice)


@pytest.fixture(scope="module")
def bfc_abort(cores):
    return analyze_core(str(cores.c_crash("bfc_oom_abort").core)).report


def test_allocator_message_in_memory_is_out_of_memory_with_its_sizes(bfc_abort):
    c = bfc_abort.classification
    assert c.abort_message.startswith("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB")
    assert c.fault_kind == "out-of-memory"
    assert (c.oom.allocator, c.oom.requested) == ("BFC (GPU_0_bfc)", 1 << 30)
    assert c.signature.startswith("out-of-memory | BFC (GPU_0_bfc) #")
