"""Real cores of GPU processes (tests/data/gpu; its README says how they were made): a process
stuck waiting for a kernel that never ends, ended by a watchdog's SIGABRT, plain and with
faulthandler re-raising the signal; and a SIGSEGV inside the driver's copy of a host pointer the
process does not own, re-raised by faulthandler. Analyzed here, far from the GPU machine, with
that machine's files as the sysroot."""

from __future__ import annotations

import pytest
from support.clirun import analyze_json

WILD_HOST_POINTER = 0x7E0000000000  # memcpy_segv.py's source pointer; the copy faults just past it


@pytest.fixture(scope="module")
def analyzed(gpu_crash, gpu_device_cores):
    reports: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in reports:
            reports[name] = analyze_json(gpu_device_cores(name), "--sysroot", str(gpu_crash.sysroot))
        return reports[name]

    return get


def _main_wait(report: dict) -> dict:
    hang = report["classification"]["hang"]
    return next(t for t in hang["threads"] if t["tid"] == report["crashing_thread"])


@pytest.mark.parametrize("name", ["hang_spin", "hang_fh"])
def test_a_process_waiting_for_the_gpu_is_a_hang_not_an_abort(analyzed, name):
    report = analyzed(name)
    c = report["classification"]
    assert c["fault_kind"] == "hang"
    assert c["gpu"]["api"].startswith("cuCtxSynchronize")
    wait = _main_wait(report)
    assert wait["state"] == "gpu"
    assert (wait["function"], wait["line"]) == ("wait_for_gpu", 20)
    assert "waiting for the GPU" in c["summary"] and "hang.py:20" in c["summary"]
    assert "clock_gettime" not in c["summary"]
    assert c["signature"].startswith("hang | gpu cuCtxSynchronize")


def test_the_plain_watchdog_signal_names_its_sender(analyzed):
    signal = analyzed("hang_spin")["core"]["signal"]
    assert (signal["name"], signal["code_name"], signal["reraised_by"]) == ("SIGABRT", "SI_USER", None)
    assert signal["sender_pid"] not in (None, analyzed("hang_spin")["core"]["pid"])


def test_the_watchdog_signal_through_faulthandler_is_still_a_hang(analyzed):
    report = analyzed("hang_fh")
    assert report["core"]["signal"]["reraised_by"] == "faulthandler"
    # Both hangs of the same wait land in one batch group.
    assert report["classification"]["signature"] == analyzed("hang_spin")["classification"]["signature"]


def test_a_wild_host_pointer_in_the_drivers_copy(analyzed):
    report = analyzed("memcpy_segv")
    signal, c = report["core"]["signal"], report["classification"]
    # faulthandler re-raised it; the original fault is read back from the signal frame.
    assert (signal["name"], signal["code_name"], signal["reraised_by"]) == ("SIGSEGV", "SEGV_MAPERR", "faulthandler")
    assert WILD_HOST_POINTER <= int(signal["address"], 16) < WILD_HOST_POINTER + (1 << 20)
    assert c["fault_kind"] == "invalid-access" and c["category"] == "gpu-driver"
    assert c["gpu"]["api"] == "cuMemcpyHtoD_v2"
    assert "memcpy_segv.py:6" in c["summary"]
    assert any("not memory the process owns" in a for a in c["advice"])
    assert not any("tf.sysconfig" in a for a in c["advice"])
