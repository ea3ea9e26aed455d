"""Signals a handler caught and raised again (a crash reporter, Python's faulthandler): the report
names the signal the handler took, read from the signal frame on the crashing thread's stack,
and the handler that re-raised it. Real cores of real programs, analyzed end to end."""

from __future__ import annotations

import os
import signal

import pytest
from support.clirun import analyze_json, crashed_thread, native_functions, run_cli
from support.gpudata import core_alone
from support.paths import CRASHERS, PYCRASHERS
from support.pycrash import interpreter

from coreanalyze.corefile import read_core

TRAMPOLINE = "<signal handler called>"


def _core_signal(case) -> dict:
    """What the core's own notes say: the re-raise."""
    with read_core(case.core) as notes:
        return {"name": notes.signal.name, "code_name": notes.signal.code_name, "sender_pid": notes.signal.sender_pid}


def _interrupted_frame(report: dict) -> dict:
    frames = [f for f in crashed_thread(report)["frames"] if f["kind"] == "native"]
    at = next(i for i, f in enumerate(frames) if f["function"] == TRAMPOLINE)
    return frames[at + 1]


def _registers(report: dict) -> dict[str, int]:
    return {name: int(value, 16) for name, value in crashed_thread(report)["registers"].items()}


def test_crash_reporter_reraise_reports_the_wild_write(cores):
    case = cores.c_crash("reraise_handler")
    assert _core_signal(case)["code_name"] == "SI_TKILL"  # the core itself holds the re-raise
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["code_name"], sig["address"]) == ("SIGSEGV", "SEGV_MAPERR", "0xdead0000"), sig
    assert sig["sender_pid"] is None
    assert sig["reraised_by"] == "report_crash_and_reraise"
    cls = report["classification"]
    assert cls["fault_kind"] == "invalid-access", cls["evidence"]
    assert cls["culprit"]["function"] == "store_value"
    assert any("caught by report_crash_and_reraise" in e for e in cls["evidence"]), cls["evidence"]
    assert any("SI_TKILL" in w and "re-raise by report_crash_and_reraise" in w for w in report["warnings"]), report["warnings"]
    # The registers and the instruction shown are the interrupted code's, not raise()'s.
    interrupted = _interrupted_frame(report)
    assert interrupted["function"] == "store_value"
    registers = _registers(report)
    assert registers["rip"] == int(interrupted["pc"], 16)
    assert registers["rdi"] == 0xDEAD0000  # store_value's pointer argument
    assert "store_value" in report["fault_instruction"]


def test_reraise_is_rendered_in_every_format(cores):
    case = cores.c_crash("reraise_handler")
    for fmt, needle in (("text", "re-raised by report_crash_and_reraise"), ("markdown", "re-raised by report\\_crash\\_and\\_reraise"),
                        ("html", "re-raised by report_crash_and_reraise")):  # fmt: skip
        run = run_cli(str(case.core), "--python", str(case.exe), "--format", fmt, "-o", "-")
        assert run.code == 0, run.stderr
        assert needle in run.stdout, fmt


def test_signal_sent_by_another_process_keeps_its_sender_through_the_reraise(cores):
    case = cores.c_crash("reraise_sent")
    core_says = _core_signal(case)
    assert core_says["code_name"] == "SI_TKILL" and core_says["sender_pid"] != os.getpid()
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["code_name"], sig["sender_pid"]) == ("SIGSEGV", "SI_USER", os.getpid()), sig
    assert sig["reraised_by"] == "report_crash_and_reraise"
    assert report["classification"]["fault_kind"] == "sent-signal"
    assert f"pid {os.getpid()}" in report["classification"]["summary"]


def test_watchdog_abort_caught_by_a_handler_is_a_hang(cores):
    case = cores.c_crash("reraise_watchdog")
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["code_name"], sig["sender_pid"]) == ("SIGABRT", "SI_USER", os.getpid()), sig
    cls = report["classification"]
    # The handler's raise() above the trampoline is not the process aborting on its own.
    assert cls["fault_kind"] == "hang", cls["evidence"]
    assert cls["hang"]["thread"] == report["crashing_thread"]


def test_chained_handlers_lead_back_to_the_fault(cores):
    case = cores.c_crash("reraise_chained")
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    # The innermost frame holds the first handler's re-raise; the one under it, the fault.
    assert (sig["code_name"], sig["address"], sig["reraised_by"]) == ("SEGV_MAPERR", "0xdead0000", "chain_to_replaced_handler"), sig
    assert sum("is a re-raise by" in w for w in report["warnings"]) == 2, report["warnings"]
    assert report["classification"]["culprit"]["function"] == "store_value"
    assert "store_value" in report["fault_instruction"]


def test_damaged_signal_frame_keeps_the_reraise_and_warns(cores):
    case = cores.c_crash("reraise_smashed")
    run = run_cli(str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-")
    assert run.code == 0 and "Traceback" not in run.stderr, run.stderr
    report = run.json
    sig = report["core"]["signal"]
    assert (sig["code_name"], sig["reraised_by"]) == ("SI_TKILL", None), sig
    assert any("signal frame could not be read" in w for w in report["warnings"]), report["warnings"]


def test_crash_inside_a_handler_is_not_a_reraise(cores):
    case = cores.c_crash("handler_crashes")
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["code_name"], sig["address"], sig["reraised_by"]) == ("SIGSEGV", "SEGV_MAPERR", "0x0", None), sig
    assert report["classification"]["fault_kind"] == "null-deref"
    assert report["classification"]["culprit"]["function"] == "store_value"
    assert "faulty_usr1_handler" in native_functions(crashed_thread(report))
    assert not any("re-raise" in w for w in report["warnings"]), report["warnings"]


@pytest.mark.parametrize("which", ["system", "3.12"])
def test_faulthandler_reraise_reports_the_ctypes_fault(cores, which):
    python = interpreter(which)
    case = cores.python_crash(
        f"ctypes_faulthandler-{which}", python, CRASHERS / "ctypes_crash.py", env={"PYTHONFAULTHANDLER": "1"}, reraised=True
    )
    assert _core_signal(case)["code_name"] == "SI_TKILL"
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["code_name"], sig["address"], sig["reraised_by"]) == ("SIGSEGV", "SEGV_MAPERR", "0x10", "faulthandler"), sig
    cls = report["classification"]
    assert cls["fault_kind"] == "null-deref", cls["evidence"]
    assert "read_config" in cls["summary"]
    # faulthandler takes no siginfo: the fault comes from the trap the saved registers name.
    assert any("took no siginfo" in w for w in report["warnings"]), report["warnings"]
    assert _registers(report)["rip"] == int(_interrupted_frame(report)["pc"], 16)


def test_faulthandler_reraise_of_a_sent_signal_claims_no_sender(cores):
    python = interpreter("system")
    case = cores.python_crash(
        "wait_for_signal-faulthandler", python, PYCRASHERS / "wait_for_signal.py", env={"PYTHONFAULTHANDLER": "1"},
        kill_after_ready=signal.SIGSEGV, reraised=True,
    )  # fmt: skip
    report = analyze_json(case.core, "--python", str(case.exe))
    sig = report["core"]["signal"]
    # The kernel writes no siginfo for a handler without SA_SIGINFO: the sender is not in the
    # core, and neither the process itself (the re-raise) nor a fault is claimed instead.
    assert (sig["name"], sig["reraised_by"], sig["sender_pid"], sig["address"]) == ("SIGSEGV", "faulthandler", None, None), sig
    assert sig["code_name"] is None
    assert report["classification"]["fault_kind"] != "null-deref"


def test_gpu_driver_abort_reraised_by_faulthandler(gpu_crash, tmp_path):
    core_says = _core_signal(type("Case", (), {"core": gpu_crash.core}))
    assert core_says["code_name"] == "SI_TKILL"
    # Alone: the GPU core beside it would make the kernel the culprit, with no host frame.
    report = analyze_json(core_alone(gpu_crash, tmp_path), "--sysroot", str(gpu_crash.sysroot))
    sig = report["core"]["signal"]
    assert (sig["name"], sig["reraised_by"]) == ("SIGABRT", "faulthandler"), sig
    assert sig["sender_pid"] is None  # faulthandler took no siginfo: no sender is claimed
    assert any("re-raise by faulthandler" in w for w in report["warnings"]), report["warnings"]
    evidence = report["classification"]["evidence"]
    assert any("caught by faulthandler" in e for e in evidence), evidence
    assert any("abort/raise under the handler" in e for e in evidence), evidence
    # The registers shown are those of the driver thread's abort(), under the handler.
    interrupted = _interrupted_frame(report)
    assert _registers(report)["rip"] == int(interrupted["pc"], 16)
    culprit = report["classification"]["culprit"]["frame_index"]
    assert culprit is not None and culprit > interrupted["index"]


def test_aarch64_crash_reporter_reraise(arm_cores):
    case = arm_cores.c_crash("reraise_handler")
    report = analyze_json(case.core, "--python", str(case.exe), "--sysroot", str(arm_cores.sysroot))
    assert report["core"]["arch"] == "aarch64"
    sig = report["core"]["signal"]
    # qemu writes no siginfo note; the handler's SA_SIGINFO frame holds the whole original.
    assert (sig["name"], sig["code_name"], sig["address"]) == ("SIGSEGV", "SEGV_MAPERR", "0xdead0000"), (sig, report["warnings"])
    assert sig["reraised_by"] == "report_crash_and_reraise"
    assert report["classification"]["culprit"]["function"] == "store_value"
    interrupted = _interrupted_frame(report)
    assert _registers(report)["pc"] == int(interrupted["pc"], 16)
