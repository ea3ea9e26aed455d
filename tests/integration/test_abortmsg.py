"""Fatal messages recovered from the memory of real cores written by the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.coregen import compile_c, run_to_core
from support.paths import CRASHERS
from support.require import require

from coreanalyze.classify.abortmsg import find_abort_message, scan_abort_messages
from coreanalyze.corefile import read_core


@pytest.fixture(scope="session")
def fatal_log_cores(tmp_path_factory):
    """fatal_log.cc run in each of its modes; mode -> CrashCase."""
    require("gcc")
    root = tmp_path_factory.mktemp("fatal_log")
    exe = compile_c(CRASHERS / "fatal_log.cc", root / "fatal_log", ("-lstdc++",))
    cases = {}

    def get(mode: str):
        if mode not in cases:
            cases[mode] = run_to_core(f"fatal_log_{mode}", [str(exe), mode], root / mode)
        return cases[mode]

    return get


def crashing_sp(notes) -> int:
    thread = notes.thread(notes.crashing_tid) or notes.threads[0]
    return thread.registers[notes.sp_register]


def messages_of(core: Path, **limits):
    with read_core(core) as notes:
        return scan_abort_messages(notes.memory, crashing_sp(notes), **limits)


def message_of(core: Path) -> str | None:
    with read_core(core) as notes:
        return find_abort_message(notes.memory, crashing_sp(notes))


def test_glibc_assert_message(cores):
    case = cores.c_crash("assert_fail")
    text = message_of(case.core)
    assert text is not None
    assert text.startswith("assert_fail: ")
    assert text.endswith("check_invariant: Assertion `items >= 0 && \"queue length went negative\"' failed.")


def test_glibc_malloc_message(cores):
    case = cores.c_crash("double_free")
    assert message_of(case.core) == "free(): double free detected in tcache 2"


def test_absl_style_check_failure_on_the_stack(fatal_log_cores):
    case = fatal_log_cores("stack")
    best = messages_of(case.core)[0]
    assert best.kind == "fatal-log" and best.where == "stack"
    assert best.text.startswith("F0000 00:00:")
    assert best.text.endswith(" tensor_shape.cc:356] Check failed: d < dims() (2 vs. 1)")


def test_check_failure_in_a_heap_buffer(fatal_log_cores):
    case = fatal_log_cores("heap")
    best = messages_of(case.core)[0]
    assert best.kind == "fatal-log"
    assert best.where in ("stack-pointer", "small-mapping", "writable-memory")
    assert best.text.endswith(" lrn_op.cc:485] Check failed: in_image.dims() == 4 (2 vs. 4)")


def test_protobuf_fatal(fatal_log_cores):
    case = fatal_log_cores("protobuf")
    assert message_of(case.core) == "[libprotobuf FATAL google/protobuf/repeated_field.h:1506] CHECK failed: (index) < (current_size_): 7 >= 3"


def test_found_without_a_stack_pointer(cores):
    case = cores.c_crash("assert_fail")
    with read_core(case.core) as notes:
        text = find_abort_message(notes.memory, None)
    assert text is not None and "Assertion `items >= 0" in text


def test_no_message_when_the_process_did_not_abort(cores):
    for name in ("null_thread", "wild_write"):
        assert message_of(cores.c_crash(name).core) is None


class CountingMemory:
    """A real CoreMemory whose reads are counted, to check the scan's budget."""

    def __init__(self, memory):
        self.memory = memory
        self.segments = memory.segments
        self.bytes_read = 0
        self.largest_read = 0

    def read(self, address: int, size: int):
        self.bytes_read += size
        self.largest_read = max(self.largest_read, size)
        return self.memory.read(address, size)


@pytest.mark.parametrize("budget", [0, 4096, 200_000])
def test_scan_stays_within_its_budget(cores, budget):
    case = cores.c_crash("assert_fail")
    with read_core(case.core) as notes:
        counting = CountingMemory(notes.memory)
        scan_abort_messages(counting, crashing_sp(notes), budget=budget)
    assert counting.bytes_read <= budget
    assert counting.largest_read <= 1024 * 1024


def test_hostile_inputs_do_not_raise(cores):
    case = cores.c_crash("assert_fail")
    with read_core(case.core) as notes:
        assert isinstance(scan_abort_messages(notes.memory, -1), list)
        assert isinstance(scan_abort_messages(notes.memory, 2**64 - 8), list)
    assert find_abort_message(None, 0x1000) is None
