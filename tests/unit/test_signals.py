"""One table of Linux signals and si_codes, read the same way by every stage."""

from __future__ import annotations

import signal

import pytest

from coreanalyze.base import signals
from coreanalyze.base.model import SignalInfo
from coreanalyze.classify.faultkind import code_name as classified_code_name
from coreanalyze.corefile import signal_code_name
from coreanalyze.triage.signals import from_ntstatus, normalize_name


def test_linux_numbers_agree_with_this_linux_host():
    known_here = {name: number for name, number in signals.SIGNAL_NUMBERS.items() if hasattr(signal, name)}
    # Python's signal module names what the host's C library does (SIGSTKFLT only from 3.11).
    assert len(known_here) >= len(signals.SIGNAL_NUMBERS) - 1
    for name, number in known_here.items():
        assert getattr(signal, name) == number, name
    assert (signals.SIGRTMIN, signals.SIGRTMAX) == (signal.SIGRTMIN, signal.SIGRTMAX)


@pytest.mark.parametrize(
    ("signo", "code", "name"),
    [
        (signal.SIGFPE, 14, "FPE_FLTUNK"),  # Linux's name; not FPE_CONDTRAP (15)
        (signal.SIGFPE, 15, "FPE_CONDTRAP"),
        (signal.SIGSEGV, 1, "SEGV_MAPERR"),
        (signal.SIGSEGV, 0x80, "SI_KERNEL"),
        (signal.SIGABRT, -6, "SI_TKILL"),
        (signal.SIGTRAP, 6, "TRAP_PERF"),
        (signal.SIGSYS, 1, "SYS_SECCOMP"),
    ],
)
def test_every_reader_names_a_code_the_same(signo, code, name):
    assert signals.code_name(signals.signal_name(signo), code) == name
    assert signal_code_name(signo, code) == name  # the core's notes
    assert classified_code_name(SignalInfo(number=signo, code=code)) == name  # the fault-kind rules


def test_names_of_numbers_linux_has_and_has_not():
    assert signals.signal_name(11) == "SIGSEGV"
    assert signals.signal_name(36) == "SIGRTMIN+2"
    assert signals.signal_name(99) == "SIG99"
    assert normalize_name("11") == "SIGSEGV" and normalize_name("iot") == "SIGABRT"
    assert signals.code_number("SI_TKILL") == -6 and signals.code_number("SEGV_MAPERR") is None
    assert signal_code_name(signal.SIGSEGV, 77) == "code 77" and signal_code_name(signal.SIGSEGV, -99) == "SI_CODE(-99)"


@pytest.mark.parametrize(("code", "name"), [(-1073741819, "SIGSEGV"), (0xC0000005, "SIGSEGV"), (0xC000001D, "SIGILL"), (-1073740791, "SIGABRT"), (0xC0000135, None)])
def test_windows_exit_codes_read_as_the_signal_they_stand_for(code, name):
    """An NTSTATUS exit code in signed or hex form; a DLL-not-found status is no crash signal."""
    assert from_ntstatus(code) == name
