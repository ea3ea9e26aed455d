"""What a report says of a microcontroller's fault dump fits a microcontroller: a watchdog's verdict is
a hang, not a crash; a bus fault is not a file shrinking under a mapping; a task's stack is not
raised with ulimit. And what a text's words settle (a watchdog, a stated error) is what its summary
and advice speak of, not the frames' first reading."""

from __future__ import annotations

import pytest

from coreanalyze.base.errors import BadInput
from coreanalyze.classify.rules import load_rules as load_classify_rules
from coreanalyze.triage.device_rules import DeviceRulesError, load_rules
from coreanalyze.triage.parse import parse_text, triage_text

ESP_WATCHDOG = """\
E (20412) task_wdt: Task watchdog got triggered. The following tasks did not reset the watchdog in time:
E (20412) task_wdt:  - IDLE (CPU 0)
E (20412) task_wdt: Tasks currently running:
E (20412) task_wdt: CPU 0: inference
E (20412) task_wdt: Print CPU 0 (current core) backtrace

Backtrace: 0x420118d6:0x3fcebd40 0x42010a4e:0x3fcebd70 0x4200c4f2:0x3fcebda0
  #0  0x420118d6:0x3fcebd40 in tflite::reference_integer_ops::ConvPerChannel at tensorflow/lite/kernels/internal/reference/integer_ops/conv.h:101
  #1  0x42010a4e:0x3fcebd70 in tflite::MicroInterpreter::Invoke() at tensorflow/lite/micro/micro_interpreter.cc:289
  #2  0x4200c4f2:0x3fcebda0 in run_inference at main/main.cc:64
"""

MBED_BUS_FAULT = """\
++ MbedOS Fault Handler ++

FaultType: HardFault

Context:
R0   : 20003F10
R1   : 00000000
SP   : 20007E48
LR   : 0000A1C5
PC   : 0000B3F2
xPSR : 21000000
PSP  : 20007E28
MSP  : 2003FFC0
CPUID: 410FC241
HFSR : 40000000
MMFSR: 00000000
BFSR : 00000082
UFSR : 00000000
DFSR : 00000008
AFSR : 00000000
BFAR : 60000000
Mode : Thread Mode
Priv : Privileged
Stack: PSP

-- MbedOS Fault Handler --
"""

HOSTED_SIGBUS = """\
Thread 1 "python3" received signal SIGBUS, Bus error.
0x00007ffff7e3a1c4 in __memmove_avx_unaligned_erms () from /lib/x86_64-linux-gnu/libc.so.6
(gdb) bt
#0  0x00007ffff7e3a1c4 in __memmove_avx_unaligned_erms () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffe8a2b3d0 in tensorflow::io::RandomAccessInputStream::ReadNBytes(long, tensorflow::tstring*) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#2  0x00007fffe8a11f02 in tensorflow::io::RecordReader::ReadRecord(unsigned long*, tensorflow::tstring*) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
"""


def test_a_task_watchdog_is_summarized_as_a_hang_with_a_microcontrollers_advice():
    c = triage_text(ESP_WATCHDOG).classification
    assert c.fault_kind == "hang"
    assert c.summary.startswith("Hang (Task watchdog got triggered"), c.summary
    assert any("watchdog fired" in a for a in c.advice), c.advice
    # Not what a hung process's snapshot is told.
    assert not any("coreanalyze --pid" in a for a in c.advice), c.advice


def test_a_cortex_m_bus_fault_gets_a_bus_faults_advice_not_a_mapped_files():
    result = parse_text(MBED_BUS_FAULT)
    assert result.platform == "microcontroller"
    c = triage_text(MBED_BUS_FAULT).classification
    assert c.fault_kind == "bus-error"
    assert any("BFAR" in a for a in c.advice), c.advice
    assert not any("/dev/shm" in a or "memory-mapped file" in a for a in c.advice), c.advice


def test_frames_without_names_on_a_microcontroller_are_decoded_with_the_firmwares_elf():
    c = triage_text(MBED_BUS_FAULT).classification
    assert c.category == "unknown"
    assert any("addr2line" in a for a in c.advice), c.advice
    assert not any("--sysroot" in a for a in c.advice), c.advice


def test_a_processs_sigbus_keeps_the_mapped_file_advice():
    result = parse_text(HOSTED_SIGBUS)
    assert result.platform is None
    c = triage_text(HOSTED_SIGBUS).classification
    assert c.fault_kind == "bus-error"
    assert any("memory-mapped file" in a for a in c.advice), c.advice
    assert not any("BFAR" in a for a in c.advice), c.advice


def test_a_stack_overflow_on_a_microcontroller_names_the_tasks_stack_not_ulimit():
    text = "***ERROR*** A stack overflow in task camera_task has been detected.\n\nBacktrace: 0x40081f3e:0x3ffc3a50 0x400893a5:0x3ffc3a70\n"
    c = triage_text(text).classification
    assert c.fault_kind == "stack-overflow"
    assert any("xTaskCreate" in a for a in c.advice), c.advice
    assert not any("ulimit" in a for a in c.advice), c.advice
    # The kind is said once, with the handler's words after it.
    assert "stack overflow (***ERROR***" in c.summary and "(stack-overflow (" not in c.summary, c.summary


def test_advice_for_an_unknown_platform_is_refused_by_name(tmp_path):
    rules = tmp_path / "mine.toml"
    rules.write_text('[[advice]]\nfault_kind = "hang"\nplatform = "rtos"\ntext = ["x"]\n')
    with pytest.raises(BadInput, match="unknown platform 'rtos'"):
        load_classify_rules([rules])


def test_a_device_family_without_a_platform_is_refused():
    with pytest.raises(DeviceRulesError, match="without a \\[\\[family\\]\\] row: esp"):
        load_rules('[[verdict]]\nname = "x"\nfamily = "esp"\npattern = "LoadProhibited"\nsignal = "SIGSEGV"\n')
