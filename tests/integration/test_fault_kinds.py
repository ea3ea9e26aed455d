"""Fault kinds of real cores: the signal, registers and memory the kernel wrote, no gdb."""

from __future__ import annotations

import os

import pytest

from coreanalyze.classify import fault_kind
from coreanalyze.classify.abortmsg import find_abort_message
from coreanalyze.corefile import read_core


@pytest.mark.parametrize(
    "crasher, kind, evidence",
    [
        ("null_thread", "null-deref", "below 64 KiB"),
        ("wild_write", "invalid-access", "not mapped"),
        ("recursion", "stack-overflow", "stack pointer"),
        ("assert_fail", "abort", "assert"),
        ("double_free", "heap-corruption", "double free detected in tcache"),
        ("divzero", "divide-by-zero", "FPE_INTDIV"),
        ("ud2", "illegal-instruction", "SIGILL"),
        ("sigbus", "bus-error", "BUS_ADRERR"),
        ("killed", "sent-signal", "sent by pid"),
    ],
)
def test_fault_kind_of_real_cores(cores, crasher, kind, evidence):
    case = cores.c_crash(crasher)
    with read_core(case.core) as notes:
        thread = notes.thread(notes.crashing_tid) or notes.threads[0]
        message = find_abort_message(notes.memory, thread.registers.get(notes.sp_register))
        got, lines = fault_kind(notes.signal, message, [], thread.registers, pid=notes.pid)
        if crasher == "killed":
            assert notes.signal.sender_pid == os.getpid()
    assert got == kind
    assert any(evidence in line for line in lines), lines
