"""Mbed OS's crash_log_parser.py output (a Cortex-M fault dump decoded with the firmware's ELF and
map files) is read like the dump itself: each sentence it prints for a fault status bit sets that
bit, the address it names is the bit's valid fault address, and the PC's, the LR's and the stack's
functions are the crashed thread's frames. The texts follow the tool's own print statements."""

from __future__ import annotations

import pytest

from coreanalyze.triage.device_rules import default_rules
from coreanalyze.triage.parse import parse_text, triage_text

DECODED = """\
$ python crash_log_parser.py crash.log BUILD/DISCO_L475VG_IOT01A/GCC_ARM/app.elf BUILD/DISCO_L475VG_IOT01A/GCC_ARM/app.map

Crash Info:
\tCrash location = tflite::MicroInterpreter::Invoke() (08004a10 + 0x2e/0x90) [0x08004A3E] (based on PC value)
\tCaller location = main (0800120c + 0x41/0x80) [0x0800124D] (based on LR value)
\tStack Pointer at the time of crash = [20017F10]
\tTarget and Fault Info:
\t\tProcessor Arch: ARM-V7M or above
\t\tProcessor Variant: C24
\t\tForced exception, a fault with configurable priority has been escalated to HardFault
\t\t{fault}
 [08004a3e] : tflite::MicroInterpreter::Invoke() (08004a10 + 0x2e/0x90)
 [0800124d] : main (0800120c + 0x41/0x80)
 [08002f01] : tflite::MicroAllocator::FinishModelAllocation(tflite::Model const*, tflite::SubgraphAllocations*, tflite::ScratchBufferHandle**) (08002e80 + 0x81/0x120)
"""


def test_a_decoded_precise_bus_fault_names_its_address_and_the_frames():
    result = parse_text(DECODED.format(fault="A precise data access error has occurred. Faulting address: 60000000"))
    assert result.formats == ["cortex-m-fault"] and result.platform == "microcontroller"
    signal = result.report.core.signal
    assert (signal.name, signal.address) == ("SIGBUS", 0x60000000)
    frames = result.report.threads[0].frames
    # The PC's function, then the LR's, then the stack's others (the PC and LR values not twice).
    assert [(f.pc, f.function) for f in frames[:2]] == [(0x08004A3E, "tflite::MicroInterpreter::Invoke()"), (0x0800124D, "main")]
    assert len(frames) == 3 and frames[2].function.startswith("tflite::MicroAllocator::FinishModelAllocation")
    c = triage_text(DECODED.format(fault="A precise data access error has occurred. Faulting address: 60000000")).classification
    assert (c.category, c.fault_kind) == ("interpreter-invoke", "bus-error"), c.evidence
    assert "PRECISERR" in c.summary and "MicroInterpreter::Invoke" in c.summary


@pytest.mark.parametrize(
    "fault, signal, code, kind",
    [
        ("Divide by zero error has occurred", "SIGFPE", "FPE_INTDIV", "divide-by-zero"),
        ("Unaligned access error has occurred", "SIGBUS", "BUS_ADRALN", "bus-error"),
        ("The processor has attempted to execute an undefined instruction", "SIGILL", "ILL_ILLOPC", "illegal-instruction"),
        ("Data access violation. Faulting address: 00000004", "SIGSEGV", "SEGV_ACCERR", "null-deref"),
        ("Imprecise data access error has occurred", "SIGBUS", None, "bus-error"),
    ],
)
def test_each_decoded_sentence_is_its_bit(fault, signal, code, kind):
    report = triage_text(DECODED.format(fault=fault))
    assert (report.core.signal.name, report.core.signal.code_name) == (signal, code)
    assert report.classification.fault_kind == kind, report.classification.evidence


def test_a_decoded_dump_without_symbols_has_unnamed_frames():
    text = DECODED.format(fault="A bus fault on an instruction prefetch has occurred").replace(
        "tflite::MicroInterpreter::Invoke() (08004a10 + 0x2e/0x90) [0x08004A3E]", "<unknown-symbol> [0x08004A3E]"
    )
    frames = parse_text(text).report.threads[0].frames
    assert (frames[0].pc, frames[0].function) == (0x08004A3E, None)


def test_every_bit_with_a_signal_has_the_decoders_sentence():
    rules = default_rules()
    # STKOF is ARMv8-M's stack limit bit, which crash_log_parser.py (ARMv7-M) does not decode.
    missing = [b.name for b in rules.bits if b.signal and b.phrase is None and b.name != "STKOF"]
    assert not missing
