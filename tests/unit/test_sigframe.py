"""The signal frame's layouts and the re-raise rules, on bytes and frame lists built here: the
offsets of the kernel's headers, which siginfo is believed, which trap rebuilds which fault, and
which frames above a trampoline are a re-raising handler. Real cores: tests/integration/
test_reraised_signals.py."""

from __future__ import annotations

import struct

import pytest

from coreanalyze.arch import aarch64, architecture, fault_from_trap, x86_64
from coreanalyze.arch.sigframe import SIGINFO_SIZE
from coreanalyze.base.model import Frame, Module, SignalInfo
from coreanalyze.classify.frames import build_views
from coreanalyze.classify.reraise import describe, name_handler, reraise_rules
from coreanalyze.classify.rules import default_rules
from coreanalyze.corefile.sigframe import decode_frame, siginfo_written

PC, SP, CR2 = 0x5555_5555_1234, 0x7FFD_0000_1000, 0xDEAD0000


def siginfo(signo: int, code: int, union: bytes = b"") -> bytes:
    return (struct.pack("<iii4x", signo, 0, code) + union).ljust(SIGINFO_SIZE, b"\0")


def frame_bytes(layout, info: bytes, registers: dict[str, int], context: dict[str, int], restorer: int = 0) -> bytes:
    """A frame as the kernel lays it out, from layout.start on."""
    data = bytearray(layout.end - layout.start)
    base = -layout.start
    data[base + layout.siginfo : base + layout.siginfo + SIGINFO_SIZE] = info
    for i, name in enumerate(layout.register_names):
        struct.pack_into("<Q", data, base + layout.registers + 8 * i, registers.get(name, 0))
    for name, offset in layout.context_words:
        struct.pack_into("<Q", data, base + offset, context.get(name, 0))
    if layout.restorer is not None:
        struct.pack_into("<Q", data, base + layout.restorer, restorer)
    if layout.marker is not None:
        offset, marker = layout.marker
        data[base + offset : base + offset + len(marker)] = marker
    return bytes(data)


def test_x86_64_layout_follows_the_kernel_headers():
    layout = x86_64.SIGNAL_FRAME
    # uc at the trampoline's sp; uc_mcontext after uc_flags, uc_link, uc_stack; the siginfo
    # after the 256-byte sigcontext and the 8-byte sigmask; pretcode just below.
    assert (layout.registers, layout.siginfo, layout.restorer) == (40, 304, -8)
    assert layout.register_names.index("rip") == 16 and layout.register_names.index("rsp") == 15
    assert dict(layout.context_words) == {"error_code": 192, "trap_number": 200, "cr2": 216}
    assert (layout.start, layout.end) == (-8, 304 + SIGINFO_SIZE)


def test_aarch64_layout_follows_the_kernel_headers():
    layout = aarch64.SIGNAL_FRAME
    # siginfo first, uc at 128, uc_mcontext at 128 + 176: fault_address, x0..x30, sp, pc, pstate.
    assert (layout.siginfo, dict(layout.context_words)["fault_address"], layout.registers) == (0, 304, 312)
    assert layout.register_names[31:] == ("sp", "pc", "cpsr")
    assert layout.marker == (592, bytes.fromhex("01805046") + (528).to_bytes(4, "little"))
    assert architecture("aarch64").signal_frame is layout


def test_decode_reads_siginfo_registers_and_context():
    layout = x86_64.SIGNAL_FRAME
    data = frame_bytes(layout, siginfo(11, 1, struct.pack("<Q", CR2)), {"rip": PC, "rsp": SP, "rdi": CR2}, {"trap_number": 14, "cr2": CR2})
    frame = decode_frame(data, layout, address=SP - 0x100)
    assert frame.siginfo.name == "SIGSEGV" and frame.siginfo.code_name == "SEGV_MAPERR" and frame.siginfo.address == CR2
    assert frame.registers["rip"] == PC and frame.registers["rsp"] == SP and frame.registers["rdi"] == CR2
    assert frame.context["trap_number"] == 14
    assert decode_frame(data[:-1], layout) is None  # short: nothing, never a partial frame


@pytest.mark.parametrize(
    "info, context, number, written",
    [
        (siginfo(11, 1, struct.pack("<Q", CR2)), {"cr2": CR2}, 11, True),
        (siginfo(11, 1, struct.pack("<Q", CR2)), {"cr2": CR2 + 0x1000}, 11, False),  # not the fault cr2 names
        (siginfo(11, 1, struct.pack("<Q", CR2)), {"cr2": CR2}, 6, False),  # not the handler's signal
        (siginfo(11, 0, struct.pack("<iI", 4242, 1000)), {}, 11, True),  # kill(): a sender
        (siginfo(11, 0, struct.pack("<iI", -5, 0)), {}, 11, False),
        (siginfo(96282664, 0), {}, None, False),  # old stack bytes (a handler without SA_SIGINFO)
        (siginfo(11, 0x1234), {}, None, False),
        (siginfo(8, 1, struct.pack("<Q", PC)), {}, 8, True),  # SIGFPE: si_addr is the pc
        (siginfo(8, 1, struct.pack("<Q", PC + 4)), {}, 8, False),
    ],
)
def test_siginfo_is_believed_only_when_it_agrees_with_the_frame(info, context, number, written):
    layout = x86_64.SIGNAL_FRAME
    frame = decode_frame(frame_bytes(layout, info, {"rip": PC, "rsp": SP}, context), layout)
    assert siginfo_written(frame, layout, number) is written


@pytest.mark.parametrize(
    "signal, context, fault",
    [
        ("SIGSEGV", {"trap_number": 14, "error_code": 0x4, "cr2": 0x10}, ("SEGV_MAPERR", 0x10)),
        ("SIGSEGV", {"trap_number": 14, "error_code": 0x7, "cr2": CR2}, ("SEGV_ACCERR", CR2)),
        ("SIGSEGV", {"trap_number": 14, "error_code": 0x25, "cr2": CR2}, ("SEGV_PKUERR", CR2)),
        ("SIGSEGV", {"trap_number": 13, "cr2": 0x10}, ("SI_KERNEL", None)),
        ("SIGBUS", {"trap_number": 14, "cr2": CR2}, ("BUS_ADRERR", CR2)),
        ("SIGILL", {"trap_number": 6}, ("ILL_ILLOPN", PC)),
        ("SIGFPE", {"trap_number": 0}, ("FPE_INTDIV", PC)),
        ("SIGSEGV", {"trap_number": 0, "cr2": 0}, None),  # a sent SIGSEGV: no page fault behind it
        ("SIGABRT", {"trap_number": 14, "cr2": CR2}, None),
    ],
)
def test_x86_64_trap_rebuilds_the_fault(signal, context, fault):
    assert fault_from_trap("x86_64", signal, context, PC) == fault


def test_aarch64_context_rebuilds_nothing():
    assert fault_from_trap("aarch64", "SIGSEGV", {"fault_address": 0x10}, PC) is None


LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PYTHON = "/usr/bin/python3.11"


def views(spec: list[tuple[str | None, str]]):
    frames = [Frame(index=i, pc=0x7F00_0000_1000 + i, function=f, module=m) for i, (f, m) in enumerate(spec)]
    return build_views(frames, [Module(path=LIBC), Module(path=PYTHON)], default_rules())


@pytest.mark.parametrize(
    "above, classes, handler",
    [
        ([("__pthread_kill_implementation", LIBC), ("raise", LIBC), ("faulthandler_fatal_error", PYTHON)], set(), "faulthandler"),
        # CPython's handler tail-calls raise(): only raise() over the trampoline, in a Python process.
        ([("pthread_kill", LIBC), ("raise", LIBC)], {"python"}, "faulthandler"),
        ([("pthread_kill", LIBC), ("raise", LIBC)], set(), "a signal handler in libc.so.6"),
        ([("raise", LIBC), ("absl::lts_20230802::(anonymous namespace)::RaiseToDefaultHandler(int)", "/x/libabsl.so"),
          ("absl::lts_20230802::AbslFailureSignalHandler(int, siginfo_t*, void*)", "/x/libabsl.so")], set(),
         "absl's failure signal handler"),
        ([("raise", LIBC), ("report_crash_and_reraise", "/srv/app")], set(), "report_crash_and_reraise"),
        # Breakpad raises with an inline tgkill: its own frame is all there is.
        ([("google_breakpad::ExceptionHandler::SignalHandler(int, siginfo_t*, void*)", "/srv/app")], set(), "Breakpad"),
        # No re-raise above the trampoline: the handler crashed by itself.
        ([("store_value", "/srv/app"), ("faulty_usr1_handler", "/srv/app")], {"python"}, None),
    ],
)  # fmt: skip
def test_handler_above_a_trampoline(above, classes, handler):
    rule = name_handler(views(above), reraise_rules(), classes)
    assert (rule.name if rule else None) == handler


def test_every_handler_rule_compiles_and_names_itself():
    rules = reraise_rules()
    assert rules.handlers and all(h.name and h.functions for h in rules.handlers)
    assert rules.reraises("raise") and rules.reraises("__pthread_kill_implementation") and not rules.reraises("store_value")


def test_describe_a_signal_for_the_warning():
    assert describe(SignalInfo(number=11, name="SIGSEGV", code=-6, code_name="SI_TKILL", sender_pid=7), 7) == "SIGSEGV (SI_TKILL) from the process itself"
    assert describe(SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x10), 7) == "SIGSEGV (SEGV_MAPERR) at 0x10"
    assert describe(SignalInfo(number=11, name="SIGSEGV", code=0, code_name="SI_USER", sender_pid=9), 7) == "SIGSEGV (SI_USER) from pid 9"

