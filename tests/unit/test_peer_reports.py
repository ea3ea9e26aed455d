"""Crash texts other projects wrote: the culprit, fault kind and detail their own tests state.

Unit tests run on the excerpts under tests/data/peer/ (see its README for sources and licenses).
The corpus test scores the whole peer corpus (satyr, KDE, CASR, ClusterFuzz test data) with
bench/peer_eval.py when it is present beside the repository (../shared/data/external); in CI it
must be.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from support.paths import DATA as _DATA
from support.require import missing

from coreanalyze.triage.parse import triage_text

DATA = _DATA / "peer"
from support.paths import REPO

sys.path.insert(0, str(REPO / "bench"))

import peer_eval  # noqa: E402


def triage(name: str):
    return triage_text((DATA / name).read_text(encoding="utf-8"), name).classification


def test_ubsan_runtime_error_frames_are_parsed_and_null_load_is_null_deref():
    c = triage("ubsan_null_pointer_read.txt")
    assert c.culprit.function.startswith("SHPReadOGRObject")
    assert c.fault_kind == "null-deref"
    assert c.detail.startswith("runtime error: load of null pointer")


def test_msan_warning_header_is_a_sanitizer_report():
    c = triage("msan_uninitialized_value.txt")
    assert c.culprit.function.startswith("content::BrowserMessageFilter::Send")
    assert c.detail == "use-of-uninitialized-value"


def test_asan_stack_overflow_is_trusted_over_operator_new_on_top():
    c = triage("asan_stack_overflow.txt")
    assert c.fault_kind == "stack-overflow"
    assert c.culprit.function.startswith("CPDF_ColorSpace::Load")
    assert c.category != "allocator"  # operator new on top is where the stack ran out, not the heap


def test_heap_buffer_overflow_in_memcpy_interceptor_blames_the_caller_with_class_as_detail():
    c = triage("casr_heap_buffer_overflow_memcpy.AsanReport.txt")
    assert c.culprit.function.startswith("xlnt::detail::compound_document::read_directory")
    assert c.fault_kind == "invalid-access"
    assert c.detail == "heap-buffer-overflow READ of size 128"
    assert c.category != "allocator"


def test_gdb_uncaught_exception_blames_the_thrower_below_std_frames():
    c = triage("casr_uncaught_invalid_argument.Stacktrace.txt")
    assert c.fault_kind == "uncaught-exception"
    assert c.culprit.function.startswith("xlnt::detail::xlsx_consumer::read_variant")
    assert c.detail == "std::invalid_argument"


def test_libfuzzer_deadly_signal_with_uncaught_exception():
    c = triage("casr_libfuzzer_deadly_signal.AsanReport.txt")
    assert c.fault_kind == "uncaught-exception"
    assert c.culprit.function.startswith("xlnt::detail::compound_document::read_sector")
    assert c.detail == "deadly signal"


def test_crash_handler_stack_above_signal_trampoline_is_skipped():
    c = triage("drkonqi_kcrash_handler.txt")
    assert c.culprit.function.startswith("KCmdLineArgs::arg")


def test_chromium_check_through_vdso_and_log_message_is_a_check_failure():
    c = triage("ignore_vdso.txt")
    assert c.culprit.function.startswith("blink::SimplifiedBackwardsTextIteratorAlgorithm")


def test_chromium_fatal_line_and_stack_trace_is_a_check_failure_in_the_caller():
    text = """[24256:24256:0324/233644:FATAL:latency_info.cc(299)] Check failed: !terminated_.
#0 0x7f48a3cf4141 __interceptor_backtrace
#0 0x7f48a3cf4141 /usr/lib/x86_64-linux-gnu/libx.so
#1 0x7f48a51f99e0 base::debug::StackTrace::StackTrace()
#2 0x7f48a526964d logging::LogMessage::~LogMessage()
#3 0x7f48b4856ef4 ui::LatencyInfo::AddLatencyNumberWithTimestampImpl()
#4 0x7f48b4855974 ui::LatencyInfo::AddLatencyNumberWithTimestamp()
"""
    c = triage_text(text, "chrome.txt").classification
    assert c.fault_kind == "check-failure"
    assert c.culprit.function == "ui::LatencyInfo::AddLatencyNumberWithTimestampImpl"
    assert "Check failed: !terminated_." in c.abort_message


def test_v8_fatal_error_block_and_glog_fatal_without_check_failed_are_check_failures():
    v8 = "#\n# Fatal error in ../../src/flags/flags.cc, line 856\n# Check failed: iteration++ < 1000 (1000 vs. 1000).\n#\n"
    assert triage_text(v8, "v8.txt").classification.fault_kind == "check-failure"
    glog = "F0812 20:32:32.874783   47273 file.h:195] Log fatal.\n"
    assert triage_text(glog, "glog.txt").classification.fault_kind == "check-failure"


def test_chromium_crash_handler_signal_line_and_bare_addresses():
    text = "Received signal 11 SEGV_MAPERR 7f6b0c580000\n==== C stack trace ===============================\n[0x7f6b13882bf1]\n[0x7f6b137dadb5]\n[end of stack trace]\n"
    r = triage_text(text, "segv.txt")
    assert r.core.signal.name == "SIGSEGV" and r.core.signal.address == 0x7F6B0C580000
    assert r.classification.fault_kind == "invalid-access"


def _corpus() -> Path | None:
    for candidate in (os.environ.get("COREANALYZE_PEER_CORPUS"), peer_eval.DEFAULT_CORPUS):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    missing(f"the peer corpus (looked at {peer_eval.DEFAULT_CORPUS})")


# The "Done when": at least 90% on both, where the peer states one.
TARGET = 0.90


@pytest.fixture(scope="module")
def corpus_score():
    return peer_eval.score(_corpus(), peer_eval.load_expectations())[0]


def test_peer_corpus_no_traceback_no_timeout_nothing_in_scope_refused(corpus_score):
    assert corpus_score.tracebacks == 0
    assert corpus_score.timeouts == 0
    assert corpus_score.refused_in_scope == []
    assert corpus_score.files >= 150


def test_peer_corpus_crash_function_and_fault_kind_reach_the_target(corpus_score):
    assert corpus_score.function_rate >= TARGET, corpus_score.misses
    assert corpus_score.kind_rate >= TARGET, corpus_score.misses
    assert corpus_score.detail_right == corpus_score.detail_stated, corpus_score.misses


def test_peer_corpus_what_the_peers_tests_state_themselves(corpus_score):
    """Counted apart from this project's own reading of files the peers rate only (satyr's
    quality scores, drkonqi's usefulness): the crash threads satyr's tests find, and the
    functions and fault kinds the peers' tests and reports name."""
    assert corpus_score.frame0_stated >= 5
    assert corpus_score.frame0_right == corpus_score.frame0_stated, corpus_score.misses
    assert corpus_score.stated_rate >= TARGET, corpus_score.misses


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_the_reports_own_class_is_shown_in_every_format(fmt):
    from coreanalyze.render import render

    report = triage_text((DATA / "casr_heap_buffer_overflow_memcpy.AsanReport.txt").read_text(encoding="utf-8"), "hbo.txt")
    out = render(report, fmt)
    assert "heap-buffer-overflow READ of size 128" in out
    if fmt == "json":
        import json

        assert json.loads(out)["classification"]["detail"] == "heap-buffer-overflow READ of size 128"


def test_sanitizer_stack_with_blank_lines_between_frames_keeps_every_frame():
    """Android's log copies of an ASan report put blank lines between frames."""
    text = (
        "==378==ERROR: AddressSanitizer: heap-use-after-free on address 0xac80d400 at pc 0xaf036288 bp 0xac9ff740 sp 0xac9ff30c\n\n"
        "READ of size 2 at 0xac80d400 thread T27 (Worker)\n\n"
        "    #0 0xaf036287 in strlen\n\n"
        "    #1 0xaef0a307 in __strlen_chk bionic/libc/bionic/fortify.cpp:313:16\n\n"
        "    #2 0xaf9f961d in media::Name::assign(char const*) media/name.cpp:112\n"
        "    #3 0xaf9f9700 in media::Source::connect() media/source.cpp:69:44\n"
    )
    c = triage_text(text, "android_asan.txt").classification
    assert c.culprit.function == "media::Name::assign"
    assert c.detail.startswith("heap-use-after-free")


@pytest.mark.parametrize(
    "header",
    [
        # Windows builds say access-violation where Linux says SEGV.
        "==4712==ERROR: AddressSanitizer: access-violation on unknown address 0x000000000010 (pc 0x7ff7cc4b2426 bp 0x00f6614fee60 sp 0x00f6614feb20 T4)",
        # A memory error whose address is in the null page: no allocation lives there.
        "==1==ERROR: AddressSanitizer: unknown-crash on address 0x000000000006 at pc 0x00000056d8b2 bp 0x7fffff869d10 sp 0x7fffff869d08\nREAD of size 8 at 0x000000000006 thread T0",
    ],
)
def test_sanitizer_reports_in_the_null_page_are_null_derefs(header):
    c = triage_text(f"{header}\n    #0 0x56d8b1 in Decoder::copy_line() src/decoder.cpp:40:3\n", "asan.txt").classification
    assert (c.fault_kind, c.culprit.function) == ("null-deref", "Decoder::copy_line")


@pytest.mark.parametrize(
    "message, signal_line",
    [
        ("ASSERTION FAILED: start.compareTo(end) <= 0", "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x00009f7537dd (pc 0x7f162ddcf25d bp 0x7ffdac2cfda0 sp 0x7ffdac2cfc00 T0)"),
        ("abort: CSA_ASSERT failed: IsFastElementsKind(kind) [../../src/csa.cc:1567]", "==9==ERROR: AddressSanitizer: ILL on unknown address 0x7f28948306d8 (pc 0x7f28948306d8 bp 0x7ffd868ade30 sp 0x7ffd868ade30 T0)"),
    ],
)
def test_a_failed_assertion_ended_by_a_trap_or_poison_write_is_an_abort(message, signal_line):
    text = f"{message}\n{signal_line}\n    #0 0x7f28948306d7 in engine::Run() src/engine.cc:395:5\n"
    c = triage_text(text, "assert.txt").classification
    assert c.fault_kind == "abort"
    assert message in (c.abort_message or "")
