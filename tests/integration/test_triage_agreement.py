"""A backtrace pasted into a ticket and the core it came from get the same verdict.

The text is what a user would paste: plain `gdb -batch -ex bt` output on the real core
(demangled names, `from /path/lib.so`, the `Program terminated with signal` header). Triage
of that text must agree with the analysis of the core: category, fault kind, signature.
"""

from __future__ import annotations

import subprocess

import pytest
from support.clirun import analyze_json, run_cli
from support.require import require
from support.tfcores import SCENARIOS

C_CASES = ["null_thread", "double_free", "assert_fail", "divzero", "ud2", "sigbus", "null_callback"]
# Crashes whose verdict rests on memory a pasted `bt` does not show: the op found in the
# crashing thread's stack memory past the unwound frames (a caught exception's thrower, a
# dataset iterator, the far end of a 70,000-frame recursion) or in XLA's JIT objects. The
# core's analysis of these is checked in test_tf_op_beyond.py and test_tf_corpus.py.
BEYOND_THE_TEXT = {"caught_exception_no_gil", "dataset_exception_no_gil", "dataset_bad_alloc", "xla_jit_segv", "deep_recursion_overflow"}


def gdb_backtrace_text(exe, core) -> str:
    gdb = require("gdb")
    cmd = [gdb, "-nx", "-batch", "-iex", "set auto-load off", "-iex", "set debuginfod enabled off",
           "-ex", "set pagination off", "-ex", "bt", str(exe), str(core)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    return proc.stdout + proc.stderr


def triage_json(text: str, tmp_path) -> dict:
    paste = tmp_path / "ticket.txt"
    paste.write_text(text)
    run = run_cli("triage", str(paste), "--format", "json")
    assert run.code == 0, run.stderr
    return run.json


def assert_agree(core_report: dict, triage_report: dict) -> None:
    core_c, text_c = core_report["classification"], triage_report["classification"]
    assert text_c["category"] == core_c["category"]
    if text_c["fault_kind"] == "invalid-access" and core_report["core"]["signal"]["name"] == "SIGSEGV" and triage_report["core"]["signal"]["address"] is None:
        # `bt` does not print the fault address: without it a SIGSEGV cannot be told to be a
        # null dereference, only a bad access; the core knows the address.
        assert triage_report["core"]["signal"]["address"] is None
    else:
        assert text_c["fault_kind"] == core_c["fault_kind"]
    assert text_c["signature"] == core_c["signature"]
    assert text_c["culprit"]["function"] == core_c["culprit"]["function"]


@pytest.mark.parametrize("name", C_CASES)
def test_c_crash_text_agrees_with_core(cores, tmp_path, name):
    case = cores.c_crash(name)
    core_report = analyze_json(case.core, "--python", str(case.exe))
    assert_agree(core_report, triage_json(gdb_backtrace_text(case.exe, case.core), tmp_path))


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - BEYOND_THE_TEXT))
def test_tensorflow_crash_text_agrees_with_core(tf_cores, tmp_path, name):
    case = tf_cores.get(name)
    core_report = analyze_json(case.core, "--python", str(case.exe))
    assert_agree(core_report, triage_json(gdb_backtrace_text(case.exe, case.core), tmp_path))
