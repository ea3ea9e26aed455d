"""General causes behind misses of issue 46's tune half, each held by a text of its own (not the
blind set's): a crash reporter's symbolized stack, a frame cut inside its template arguments, a pc
told in words, a pure virtual call, a load error stated where nothing died, fatal lines whose
source file only the name index or TensorFlow's file naming places."""

from __future__ import annotations

import pytest

from coreanalyze.triage.frame_shapes import frame_on
from coreanalyze.triage.parse import triage_text
from tests.support import blindsets

REPORTER_STACK = """\
Segmentation fault encountered. (Bad write to 0x28)
crash_print_stack_trace+52
reporter::DumpStackTrace()+31
reporter::OnSignalHandler(int, siginfo_t*, void*)+911
tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::GetNextInternal(tensorflow::data::IteratorContext*, std::vector<tensorflow::Tensor>*, bool*)+88
tensorflow::data::DatasetBaseIterator::GetNext(tensorflow::data::IteratorContext*, std::vector<tensorflow::Tensor>*, bool*)+140
"""


def test_a_crash_reporters_stack_of_symbol_offset_lines_is_read_below_its_handler():
    c = triage_text(REPORTER_STACK, "reporter.txt").classification
    assert (c.category, c.fault_kind) == ("tf-data", "null-deref"), c.evidence
    assert c.culprit.function not in ("crash_print_stack_trace", "reporter::DumpStackTrace", "reporter::OnSignalHandler")


def test_symbol_offset_lines_alone_are_no_stack():
    assert triage_text("total+12\nSegmentation fault (core dumped)\n", "x").classification.culprit.function is None


def test_a_frame_cut_inside_its_template_arguments_still_names_its_code():
    # A symbolizer prints the return type first; the line ends inside the function's template arguments.
    cut = "std::map<int, google::protobuf::Descriptor const*>::mapped_type google::protobuf::FindOrNull<std::map<int, google::protobuf::Descr"
    frame, proof = frame_on(cut)
    assert frame.function == cut and not proof
    text = f"Segmentation fault encountered. (Bad read from 0x40)\ncrash_print_stack_trace+12\nfunlockfile+80\n{cut}\n"
    c = triage_text(text, "cut.txt").classification
    assert (c.category, c.fault_kind) == ("protobuf-serialization", "null-deref"), c.evidence


PC_IN_WORDS = (
    "* Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x18\n"
    "* the crash is at pc 000000000004a2c0 in libtensorflowlite_jni.so\n"
)
PURE_VIRTUAL = "Epoch 3/10\npure virtual method called\nterminate called without an active exception\nAborted (core dumped)\n"
LOAD_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    '    ops = tf.load_op_library("./roi_pool_ops.so")\n'
    '  File "/usr/lib/python3/dist-packages/tensorflow/python/framework/load_library.py", line 58, in load_op_library\n'
    "    lib_handle = py_tf.TF_LoadLibrary(library_filename)\n"
    "tensorflow.python.framework.errors_impl.NotFoundError: ./roi_pool_ops.so: undefined symbol: _ZN10tensorflow6StatusC1Ev\n"
)


@pytest.mark.parametrize(
    "text, category, fault_kind",
    [
        # A pc told in words, with its library: a frame of that library.
        (PC_IN_WORDS, "interpreter-invoke", "null-deref"),
        # A pure virtual call with no frames: an object of the runtime used after its release.
        (PURE_VIRTUAL, "tf-runtime", "abort"),
        # A load error where nothing died: the loading failed, the op library never ran.
        (LOAD_ERROR, "library-load", "unknown"),
        # TF 1.15 / 2.0 wheels compiled their sources under tensorflow_core/.
        ("F tensorflow_core/core/kernels/scatter_nd_op.cc:120] Check failed: x\n", "kernel-compute", "check-failure"),
        ("F tensorflow_core/core/common_runtime/executor.cc:640] Check failed: x\n", "tf-runtime", "check-failure"),
        # absl's bare file name of a custom op's kernel: no index holds it, TensorFlow's naming does.
        ("F0311 10:00:00.000000 4242 roi_pool_op.cc:77] Check failed: x\n", "kernel-compute", "check-failure"),
        # ... and of TensorFlow's own files, the index.
        ("F0311 10:00:00.000000 4242 placer.cc:77] Check failed: x\n", "tf-runtime", "check-failure"),
        ("F0311 10:00:00.000000 4242 dataset_utils.cc:77] Check failed: x\n", "tf-data", "check-failure"),
    ],
)
def test_the_verdict_of_a_text(text, category, fault_kind):
    blindsets.check_report({"text": text, "source": "paste.txt", "category": category, "fault_kind": fault_kind})


def test_a_pc_told_in_words_names_the_culprits_library():
    assert triage_text(PC_IN_WORDS, "prose.txt").classification.culprit.module == "libtensorflowlite_jni.so"


def test_a_pure_virtual_call_yields_to_frames_that_name_the_code():
    text = (
        "pure virtual method called\nterminate called without an active exception\n\n"
        "Thread 1 \"python\" received signal SIGABRT, Aborted.\n"
        "#0  __pthread_kill_implementation (no_tid=0, signo=6, threadid=140737) at ./nptl/pthread_kill.c:44\n"
        "#1  0x00007ffff7c42476 in __GI_raise (sig=sig@entry=6) at ../sysdeps/posix/raise.c:26\n"
        "#2  0x00007ffff7c287f3 in __GI_abort () at ./stdlib/abort.c:79\n"
        "#3  0x00007fffd2a9b2bd in __cxa_pure_virtual () from /lib/x86_64-linux-gnu/libstdc++.so.6\n"
        "#4  0x00007fffb1e0a1c4 in tflite::Subgraph::Invoke() () from /site-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so\n"
    )
    c = triage_text(text, "pv-gdb.txt").classification
    assert c.category == "interpreter-invoke", c.evidence
