"""An uncaught std::bad_alloc in a real core: the fault kind is out-of-memory, the allocator
operator new, the culprit the function that asked for the memory."""

from __future__ import annotations

import pytest
from support.coregen import compile_cxx, run_to_core
from support.paths import CRASHERS
from support.require import require

from coreanalyze.analyze import analyze_core


@pytest.fixture(scope="module")
def bad_alloc(tmp_path_factory):
    require("gdb")
    workdir = tmp_path_factory.mktemp("bad_alloc")
    exe = compile_cxx(CRASHERS / "bad_alloc.cc", workdir / "bad_alloc")
    case = run_to_core("bad_alloc", [str(exe)], workdir)
    return analyze_core(str(case.core)).report


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
def bfc_abort(tmp_path_factory):
    require("gdb")
    workdir = tmp_path_factory.mktemp("bfc_oom_abort")
    exe = compile_cxx(CRASHERS / "bfc_oom_abort.cc", workdir / "bfc_oom_abort")
    case = run_to_core("bfc_oom_abort", [str(exe)], workdir)
    return analyze_core(str(case.core)).report


def test_allocator_message_in_memory_is_out_of_memory_with_its_sizes(bfc_abort):
    c = bfc_abort.classification
    assert c.abort_message.startswith("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB")
    assert c.fault_kind == "out-of-memory"
    assert (c.oom.allocator, c.oom.requested) == ("BFC (GPU_0_bfc)", 1 << 30)
    assert c.signature.startswith("out-of-memory | BFC (GPU_0_bfc) #")
