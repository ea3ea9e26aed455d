"""A backtrace pasted into a ticket and the core it came from get the same verdict.

The text is what a user would paste: plain `gdb -batch -ex bt` output on the real core
(demangled names, `from /path/lib.so`, the `Program terminated with signal` header). Triage
of that text must agree with the analysis of the core: category, fault kind, signature.
"""

from __future__ import annotations

import pytest
from support.clirun import analyze_json, run_cli
from support.pastes import BEYOND_THE_TEXT, C_CASES
from support.tfcores import SCENARIOS


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
def test_c_crash_text_agrees_with_core(cores, pasted_backtraces, tmp_path, name):
    case = cores.c_crash(name)
    core_report = analyze_json(case.core, "--python", str(case.exe))
    assert_agree(core_report, triage_json(pasted_backtraces(case.exe, case.core), tmp_path))


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - BEYOND_THE_TEXT))
def test_tensorflow_crash_text_agrees_with_core(tf_reports, pasted_backtraces, tmp_path, name):
    case, core_report, _seconds = tf_reports(name)
    assert_agree(core_report, triage_json(pasted_backtraces(case.exe, case.core), tmp_path))
