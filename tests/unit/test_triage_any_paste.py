"""Issue 37's blind round (tests/data/blind/issue37.toml): 51 crash texts in formats the parsers
had not met, labelled from their threads before the tool ran. Scored then: category 20/51, fault
kind 32/51, 14 refused. The general pieces that read them (frames by shape, repairs of damaged
pastes, frameless evidence rules) are tested one at a time below.
"""

from __future__ import annotations

import pytest

from coreanalyze.triage.evidence import default_rules, load_rules
from coreanalyze.triage.frame_shapes import bare_name, frame_on
from coreanalyze.triage.parse import parse_text, triage_text
from coreanalyze.triage.repair import repair, wrap_width
from tests.support import blindsets

REPORTS = blindsets.load("issue37.toml")

# Where the rules read a report otherwise than its thread, and why (the deciding fact is not in the text).
DISAGREEMENTS = {
    "https://github.com/tensorflow/tensorflow/issues/38025": "two logcat lines: the Flex delegate is named in the thread, not the text",
    "https://github.com/tensorflow/tensorflow/issues/53413": "the call stack shows terminate(); the std::bad_alloc is in the description",
    "https://github.com/tensorflow/tensorflow/issues/26559": "nsync's futex wait under syscall() is not a wait the hang rules know",
}


@pytest.mark.parametrize("report", blindsets.params(REPORTS, DISAGREEMENTS))
def test_blind_report(report):
    blindsets.check_report(report)


def test_the_blind_round_meets_the_bar():
    """At least 90% category and fault kind, nothing refused."""
    blindsets.check_bar(REPORTS, 50)


# --------------------------------------------------------------------------- frames by shape


@pytest.mark.parametrize(
    ("line", "function", "module"),
    [
        ("00 000000a2`9f53f978 00007ff9`b85c1d44 nvcuda!cuDevicePrimaryCtxRelease+0x2a", "cuDevicePrimaryCtxRelease", None),
        (" \tucrtbase.dll!abort()\t", "abort", "ucrtbase.dll"),
        (">\tVCRUNTIME140_1.dll!FindHandler<__FrameHandler4>(EHExceptionRecord * pExcept=0x1) 行 682\tC++", "FindHandler<__FrameHandler4>", "VCRUNTIME140_1.dll"),
        ("    frame #8: 0x0000000159a7fffc libmetal_plugin.dylib`metal_plugin::MPSApplyMomentumOp<float>::Compute(metal_plugin::OpKernelContext*) + 2768",
         "metal_plugin::MPSApplyMomentumOp<float>::Compute", "libmetal_plugin.dylib"),
        ("# C  [libtensorflow_framework.so+0x178422]  _ZN10tensorflow6Status12SlowCopyFromEPKNS0_5StateE+0x22", "tensorflow::Status::SlowCopyFrom(tensorflow::Status::State const*)", "libtensorflow_framework.so"),
        ("2025-04-18 19:06:49.124  9584-9584  DEBUG  crash_dump64  A  #00 pc 00000000004a006c  /data/app/base.apk!libtask_vision_jni.so (offset 0xe50c000)", None, "libtask_vision_jni.so"),
        ("   at Tensorflow.c_api.TF_ImportGraphDefOptionsSetPrefix(Tensorflow.SafeImportGraphDefOptionsHandle, System.String)", "TF_ImportGraphDefOptionsSetPrefix", None),
        ("Exception thrown at 0x00007FFAE2A925F0 (tensorflow.dll) in app.exe: 0xC0000005: Access violation", None, "tensorflow.dll"),
    ],
)
def test_a_frame_is_read_by_its_shape(line, function, module):
    frame, _strong = frame_on(line)
    assert (frame.function, frame.module) == (function, module)


@pytest.mark.parametrize("line", ["Help!!! JVM crash", "`sh: line 1: 18590 Illegal instruction: 4` when trying to use it", "see foo::bar for details"])
def test_prose_is_not_a_frame(line):
    got = frame_on(line)
    assert got is None or not got[1]


def test_argument_lists_are_not_names():
    assert bare_name("tensorflow::(anonymous namespace)::ExecutorState<S>::Process(Node const&, long) const") == "tensorflow::(anonymous namespace)::ExecutorState<S>::Process"
    assert bare_name("abort()") == "abort"


def test_an_unknown_format_with_frames_gets_the_verdict_its_frames_give():
    text = "(1a2c.3b4): Access violation - code c0000005 (first chance)\n" "00 0000004f`2e3fe8c0 00007ffb`1c2d3e4f tensorflow_framework!tensorflow::BFCAllocator::AllocateRawInternal+0x1f3\n" "01 0000004f`2e3fe950 00007ffb`1c2d1a2b tensorflow_framework!tensorflow::BFCAllocator::AllocateRaw+0x4b\n"
    c = triage_text(text, "kn.txt").classification
    assert (c.category, c.fault_kind, c.culprit.function) == ("allocator", "invalid-access", "tensorflow::BFCAllocator::AllocateRawInternal")


# --------------------------------------------------------------------------- damaged pastes


def test_a_hard_wrapped_text_is_joined_back():
    line = "#1  0x00007f4063b8f300 in tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*) () from /x/libtensorflow_framework.so.2"
    wrapped = [line[k : k + 80] for k in range(0, len(line), 80)] * 3
    assert wrap_width(wrapped) == 80
    lines, warnings = repair(wrapped)
    assert lines == [line] * 3 and "wrapped at 80 columns" in warnings[0]


def test_lines_of_one_length_are_not_always_a_wrap():
    assert wrap_width(["x" * 500] * 10) is None  # longer than any terminal
    assert wrap_width(["short", "x" * 80, "y" * 120, "z" * 130]) is None


def test_long_lines_of_one_length_that_do_not_go_on_are_not_a_wrap():
    # The same frame in four threads, each followed by gdb's own indented "at file:line".
    frame = "#{}  0x0000000000402dbb in QtConcurrent::MapKernel<QList<QString>::iterator>::runIteration (this=<value optimized out>, it=<value optimized out>)"
    gdb = [line for k in range(4) for line in (frame.format(k), "    at /usr/include/qt4/QtCore/qtconcurrentmapkernel.h:73")]
    assert wrap_width(gdb) is None
    # Records of a fixed layout: each line after one of the width begins the way it began.
    records = [f"2021-08-10 20:36:02.53{k:04d}: I bfc_allocator.cc:1046] InUse at 70e41c{k:03d} of size 1024 next {k}" for k in range(200, 206)]
    valgrind = [f"==5463==    by 0xBFA45{k:02d}: ??? (in /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.460.106.00)" for k in range(10, 15)]
    assert wrap_width(records) is None and wrap_width(valgrind) is None
    # A sentence that ended at the width, then the next one.
    internal = ["cuda-gdb/14/gdb/cuda/cuda-state.c:182: internal-error: initialize: Assertion `m_instance.m_num_devices > 0' failed.", "A problem internal to GDB has been detected,"] * 3
    assert wrap_width(internal) is None
    assert repair(gdb)[0] == gdb


def test_a_wrap_that_cuts_in_padding_or_before_a_blank_is_still_a_wrap():
    # Cuts inside a run of blanks (logcat's columns) leave blanks on both sides of the cut.
    line = "2025-04-18 19:06:49.124  9584-9584  DEBUG" + " " * 40 + "A  #0{} pc 00000000004a006c  /data/app/base.apk!libtask_vision_jni.so (offset 0xe50c000)"
    lines = [line.format(k) for k in range(4)]
    wrapped = [piece for one in lines for piece in (one[:60], one[60:120], one[120:])]
    assert wrap_width(wrapped) == 60 and repair(wrapped)[0] == lines


def test_issue_links_become_frame_numbers_again():
    lines, warnings = repair(["[#12](https://github.com/o/r/issues/12) 0x1 in f () from /lib/x.so", "owner/repo#3 0x2 in g ()"])
    assert lines == ["#12 0x1 in f () from /lib/x.so", "#3 0x2 in g ()"] and warnings


def test_terminal_padding_inside_a_line_is_removed():
    lines, _ = repair(["cpuset=/,me" + " " * 100 + "ms_allowed=0"])
    assert lines == ["cpuset=/,mems_allowed=0"]


# --------------------------------------------------------------------------- frameless evidence


@pytest.mark.parametrize(
    ("text", "category", "fault_kind"),
    [
        ("[  687.29] python invoked oom-killer: gfp_mask=0x24280ca, order=0, oom_score_adj=0\n", "unknown", "out-of-memory"),
        ("INFO: task python:19772 blocked for more than 120 seconds.\n  amdgpu_bo_create+0x42/0x210 [amdgpu]\n", "gpu-driver", "hang"),
        ("futex(0x7fffece5828c, FUTEX_WAIT_PRIVATE, 1, NULL\n", "tf-runtime", "hang"),
        ("LLVM ERROR: Cannot select: t24: i16,ch = AtomicCmpSwap\n", "xla", "abort"),
        ("Memory access fault by GPU node-2 (Agent handle: 0x55fe) on address 0x7fc1. Reason: Page not present or supervisor privilege.\n", "gpu-driver", "gpu-exception"),
        ("2021-08-04 16:39:48.53: I tensorflow/core/common_runtime/bfc_allocator.cc:1046] InUse at c01799300 of size 256 by op Fill\n", "allocator", "out-of-memory"),
        ("F tensorflow/c/logging.cc:43] HRESULT failed with 0x887a0001: dml_device_->GetDeviceRemovedReason()\n", "gpu-driver", "check-failure"),
    ],
)
def test_frameless_evidence_names_subsystem_and_fault_kind(text, category, fault_kind):
    c = triage_text(text, "log.txt").classification
    assert (c.category, c.fault_kind) == (category, fault_kind), c.evidence


def test_a_tensorflow_source_path_names_its_subsystem_through_the_name_index():
    # No rule names this runtime error; the source path in it does, through the name index (layout.py).
    c = triage_text("Could not load library libcudnn_ops.so.9\nE external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:535] failed\nAborted (core dumped)\n", "x").classification
    assert c.category == "gpu-driver"


def test_evidence_is_not_a_format_and_its_fatal_lines_are_not_refused():
    result = parse_text("INFO: task python:1 blocked for more than 120 seconds.\n", "hung.txt")
    assert "evidence" not in result.formats and result.evidence


def test_the_evidence_rules_load_and_a_bad_one_is_refused():
    assert len(default_rules().rules) >= 15
    with pytest.raises(ValueError):
        load_rules('[[evidence]]\nname = "x"\npattern = "y"\nneedles = ["y"]\nfault_kind = "explosion"\n')
    with pytest.raises(ValueError):
        load_rules('[[evidence]]\nname = "x"\npattern = "y"\n')  # no needles


@pytest.mark.parametrize(
    "frame",
    [
        "#5 0x00007f69f8b9a3c0 in void tflite::optimized_ops::DepthwiseConv<float, float>(tflite::DepthwiseParams const&) ()",
        "==4242==    at 0x1A2B3C4D: tflite::ops::builtin::gather::Gather<float, int>(TfLiteContext*) (gather.cc:132)",
        "    #00 pc 0005efee  /data/app/lib/arm/libtensorflowlite_jni.so (tflite::Subgraph::Invoke()+122)",
    ],
)
def test_a_frame_that_names_a_library_is_never_the_abort_message(frame):
    # The library rule (tflite-named) matches the frame's own name: that is where the code ran, not what went wrong.
    text = f"Program terminated with signal SIGSEGV, Segmentation fault.\n{frame}\n"
    result = parse_text(text, "x")
    assert result.evidence and result.abort_message is None


def test_a_line_that_carries_a_frame_and_says_more_is_a_message_after_plain_lines():
    vs = "Exception thrown at 0x00007FFAE2A925F0 (tensorflow.dll) in app.exe: 0xC0000005: Access violation reading location 0x0000000000000000."
    assert parse_text(vs + "\n", "x").abort_message == vs
    jni = "A/app: runtime.cc:638] JNI DETECTED ERROR IN APPLICATION: JNI NewStringUTF called with pending exception"
    frame = "A/app: runtime.cc:630] native: #23 pc 0000000000192cf4 [anon:dalvik-classes3.dex extracted in memory] (org.tensorflow.lite.task.vision.detector.ObjectDetector.detect+16)"
    assert parse_text(f"{frame}\n{jni}\n", "x").abort_message == jni
