"""coreanalyze.triage: crash text pasted into a ticket -> the data model.

Text fixtures (tests/data/traces, tests/data/triage) check each format; the same text
wrapped in terminal and ticket noise must give the same model; and the output of real
tools run on real crashes (gdb and pystack on kernel cores, faulthandler and
AddressSanitizer on real crashing processes) must parse into the frames those crashes have.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.paths import CRASHERS, DATA, PYCRASHERS, REPO
from support.require import missing, require

from coreanalyze.base import model
from coreanalyze.base.errors import BadInput
from coreanalyze.triage import TriageResult, limits, parse_text

TRACES = DATA / "traces"
TRIAGE = DATA / "triage"

TF_FRAMEWORK = "/opt/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_framework.so.2"


def parse_file(path: Path) -> TriageResult:
    return parse_text(path.read_text(), str(path))


def functions(thread: model.Thread) -> list[str | None]:
    return [f.function for f in thread.frames]


def summary(report: model.Report):
    """What must not change when the same crash text is wrapped in noise."""
    sig = report.core.signal
    return (
        sig.name,
        sig.number,
        sig.address,
        report.crashing_thread,
        [
            (t.tid, t.name, t.crashed, [(f.index, f.kind, f.pc, f.function, f.module, f.file, f.line, f.inlined) for f in t.frames])
            for t in report.threads
        ],
    )


# --------------------------------------------------------------------------- the shared samples


def test_custom_op_compute_segv_gdb():
    result = parse_file(TRACES / "custom_op_compute_segv.txt")
    report = result.report
    assert result.formats == ["gdb"]
    assert report.source == "triage"
    assert report.core.path.endswith("custom_op_compute_segv.txt")
    assert (report.core.signal.name, report.core.signal.number) == ("SIGSEGV", 11)
    assert report.core.cmdline == "/opt/venv/bin/python run_bad_op.py"
    assert len(report.threads) == 1
    crashed = report.crashed_thread
    assert crashed is not None and crashed.crashed and report.crashing_thread == crashed.tid
    top = crashed.frames[0]
    assert (top.function, top.file, top.line, top.pc) == ("BadScaleOp::Compute", "bad_op.cc", 14, 0x7F403C0B362B)
    assert top.module is None  # gdb names no library for a frame with debug info
    assert crashed.frames[1].function == "tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)"
    assert crashed.frames[1].module.endswith("tensorflow/python/platform/../../libtensorflow_framework.so.2")
    assert crashed.frames[4].function.startswith("void std::__invoke_impl<void, tsl::thread::EigenEnvironment::CreateThread")
    assert [f.function for f in crashed.frames[-2:]] == ["start_thread", "clone3"]
    assert [f.index for f in crashed.frames] == list(range(8))
    assert all(f.kind == "native" for f in crashed.frames)
    assert result.abort_message is None


def test_heap_abort_tf_dealloc_gdb_stop_line_and_allocator_message():
    result = parse_file(TRACES / "heap_abort_tf_dealloc.txt")
    report = result.report
    assert set(result.formats) == {"gdb", "abort-message"}
    assert report.core.signal.name == "SIGABRT"
    assert result.abort_message == "free(): invalid next size (normal)"
    # 'Thread 14 "python3" received signal' + '[Switching to Thread 0x7f2c8dffb6c0 (LWP 90412)]'
    assert report.crashing_thread == 90412
    crashed = report.crashed_thread
    assert crashed.name == "python3"
    assert len(crashed.frames) == 12  # the stop line is the same frame as #0, not a 13th
    assert crashed.frames[0].function == "__pthread_kill_implementation" and crashed.frames[0].pc is None
    assert functions(crashed)[5:8] == ["malloc_printerr", "_int_free", "__GI___libc_free"]
    assert crashed.frames[8].function == "tsl::port::AlignedFree(void*)"
    assert crashed.frames[9].function == "tensorflow::(anonymous namespace)::CPUAllocator::DeallocateRaw(void*)"
    assert crashed.frames[11].function == "tensorflow::Tensor::~Tensor()"
    assert crashed.frames[11].module == "/opt/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_framework.so.2"


def test_saved_model_serialize_segv_frame_zero_printed_twice():
    report = parse_file(TRACES / "saved_model_serialize_segv.txt").report
    assert report.core.signal.name == "SIGSEGV"
    assert report.core.cmdline == "python export.py --out /models/v7"
    assert report.crashing_thread == 5521  # [Current thread is 1 (Thread 0x7fc21b2f5740 (LWP 5521))]
    assert len(report.threads) == 1
    crashed = report.crashed_thread
    assert len(crashed.frames) == 5  # '#0' at core load and '#0' of `bt` are one frame
    assert crashed.frames[0].function.startswith("google::protobuf::internal::WireFormatLite::InternalWriteMessage(int, ")
    assert crashed.frames[4].function == (
        "tensorflow::WriteBinaryProto(tsl::Env*, std::string const&, google::protobuf::MessageLite const&)"
    )
    assert {f.module for f in crashed.frames} == {TF_FRAMEWORK}


def test_tflite_invoke_faulthandler():
    result = parse_file(TRACES / "tflite_invoke_segv_faulthandler.txt")
    report = result.report
    assert result.formats == ["faulthandler"]
    assert report.core.signal.name == "SIGSEGV"
    crashed = report.crashed_thread
    assert crashed is not None and report.crashing_thread == 0x00007F0A4C1FB740
    assert [(f.kind, f.function, f.line) for f in crashed.frames] == [
        ("python", "invoke", 941),
        ("python", "detect", 58),
        ("python", "<module>", 91),
    ]
    assert crashed.frames[0].file == "/opt/venv/lib/python3.11/site-packages/tensorflow/lite/python/interpreter.py"
    assert all(f.module is None and f.pc is None for f in crashed.frames)


# --------------------------------------------------------------------------- gdb


def test_gdb_live_thread_apply_all_bt():
    result = parse_file(TRIAGE / "gdb_live_thread_apply_all.txt")
    report = result.report
    assert result.formats == ["gdb"]
    assert report.core.signal.name == "SIGSEGV"
    assert [t.tid for t in report.threads] == [41878, 41877, 41863, 41858]
    assert all(t.name == "python3" for t in report.threads)
    assert report.crashing_thread == 41877
    assert [t.crashed for t in report.threads] == [False, True, False, False]
    crashed = report.crashed_thread
    # The stop line after "received signal" is frame #0 again: not an extra frame.
    assert len(crashed.frames) == 7
    assert crashed.frames[0].function == "RoiAlignOp::Compute(tensorflow::OpKernelContext*)"
    assert crashed.frames[0].module == "/home/ana/ops/roi_align_op.so"  # 'from' on a wrapped line
    assert crashed.frames[0].pc == 0x7FFF9C2A51D4
    main = report.thread(41858)
    # Frames wrapped by a narrow terminal are joined back.
    assert main.frames[0].function == "__futex_abstimed_wait_common64"
    assert (main.frames[0].file, main.frames[0].line) == ("./nptl/futex-internal.c", 57)
    assert (main.frames[1].function, main.frames[1].line, main.frames[1].inlined) == ("__futex_abstimed_wait_common", 87, True)
    assert main.frames[2].pc == 0x7FFFF7C8FF7B and main.frames[2].line == 139
    assert main.frames[7].module == "/usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2"
    assert main.frames[9].function == "TF_SessionRun"
    assert main.frames[-1].function == "_start"
    assert [f.index for f in main.frames] == list(range(23))
    worker = report.thread(41878)
    assert worker.frames[6].function.startswith("nsync::nsync_cv_wait_with_deadline_generic(nsync::nsync_cv_s_*, void*, void (*)(void*)")
    assert worker.frames[6].module.endswith("libtensorflow_framework.so.2")


def test_gdb_core_with_signal_handler_frames_and_siginfo():
    result = parse_file(TRIAGE / "gdb_core_signal_handler.txt")
    report = result.report
    assert report.core.signal.name == "SIGSEGV"
    assert report.core.signal.address == 0x7F69E1400000  # p $_siginfo._sifields._sigfault
    assert report.core.cmdline == "python3 -X faulthandler detect.py --model ssd.tflite"
    assert [t.tid for t in report.threads] == [2215, 2214, 2211]
    assert report.crashing_thread == 2211
    crashed = report.crashed_thread
    names = functions(crashed)
    assert names[:5] == [
        "__pthread_kill_implementation",
        "__pthread_kill_internal",
        "__GI_raise",
        "faulthandler_fatal_error",
        "<signal handler called>",
    ]
    assert crashed.frames[4].pc is None
    assert names[5].startswith("void tflite::optimized_ops::DepthwiseConv<float, float>(tflite::DepthwiseParams const&")
    assert names[8:11] == ["tflite::Subgraph::InvokeImpl()", "tflite::Subgraph::Invoke()", "tflite::impl::Interpreter::Invoke()"]
    assert crashed.frames[5].module.endswith("tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so")
    assert report.thread(2215).frames[3].function is None  # '?? ()'
    assert report.thread(2215).frames[3].module.endswith("_pywrap_tensorflow_interpreter_wrapper.so")


def test_gdb_thread_apply_all_without_any_crash_marker_guesses_with_a_warning():
    text = (TRIAGE / "gdb_live_thread_apply_all.txt").read_text()
    body = text[text.index("(gdb) thread apply all bt") :]
    report = parse_text(body, "bt.txt").report
    assert report.core.signal.name is None
    assert len(report.threads) == 4
    # Every other thread waits in a futex/sleep; the worker in the custom op is running.
    assert report.crashing_thread == 41877
    assert any("does not say which thread crashed" in w for w in report.warnings)


def test_gdb_frame_shapes():
    text = textwrap.dedent(
        """\
        Program received signal SIGSEGV, Segmentation fault.
        #0  0x0000000000000045 in ?? ()
        #1  0x00007fffaf185466 in tensorflow::Tensor::~Tensor() ()
           from /usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so
        #2  0x00007fffaf319a2a in std::_Function_handler<void (), tensorflow::(anonymous namespace)::ExecutorState::ScheduleReady(tensorflow::gtl::InlinedVector<tensorflow::(anonymous namespace)::ExecutorState::TaggedNode, 8> const&, tensorflow::(anonymous namespace)::ExecutorState::TaggedNodeReadyQueue*)::{lambda()#1}>::_M_invoke(std::_Any_data const&) ()
           from /usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so
        #3  0x00007fff337680c1 in std::call_once<void (&)()> (__once=..., __f=
            @0x7fff3543c7b6: {void (void)} 0x7fff3543c7b6 <tensorflow::port::(anonymous namespace)::CPUIDInfo::Initialize()>)
            at /opt/gcc/include/c++/4.9.2/mutex:736
        #4  0x00007ffff7a5e1a0 in Eigen::internal::TensorExecutor<Foo>::run(Bar const&)::{lambda(long, long)#1}::operator()(long, long) const (this=0x1, first=0, last=8) at external/eigen/TensorExecutor.h:91
        #5  0x00007ffff7a5e1b0 in std::operator<< <std::char_traits<char> > (__out=..., __s=0x1 "x") at /usr/include/c++/ostream:611
        #6  0x00000000004c45fa in PyEval_EvalFrameEx ()
        #7  0x00007ffff7a5e1c0 in _ZN10tensorflow8internal15LogMessageFatalD1Ev () from /x/libtensorflow_framework.so.2
        #8  0x00007ffff7a5e1d0 in foo (c=40 '(', s=0x2 "a (b") at foo.c:3
        """
    )
    report = parse_text(text, "frames.txt").report
    frames = report.crashed_thread.frames
    assert frames[0].pc == 0x45 and frames[0].function is None and frames[0].module is None
    assert frames[1].function == "tensorflow::Tensor::~Tensor()"
    assert frames[1].module == "/usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so"
    assert frames[2].function.startswith("std::_Function_handler<void (), tensorflow::(anonymous namespace)::ExecutorState")
    assert frames[2].function.endswith("::_M_invoke(std::_Any_data const&)")
    assert frames[3].function == "std::call_once<void (&)()>"
    assert (frames[3].file, frames[3].line) == ("/opt/gcc/include/c++/4.9.2/mutex", 736)
    assert frames[4].function.endswith("::{lambda(long, long)#1}::operator()(long, long) const")
    assert frames[4].line == 91
    assert frames[5].function == "std::operator<< <std::char_traits<char> >"
    assert (frames[6].function, frames[6].module, frames[6].file) == ("PyEval_EvalFrameEx", None, None)
    assert frames[7].function == "tensorflow::internal::LogMessageFatal::~LogMessageFatal()"
    assert frames[7].raw_function == "_ZN10tensorflow8internal15LogMessageFatalD1Ev"
    assert (frames[8].function, frames[8].line) == ("foo", 3)


def test_gdb_stop_line_alone_is_the_crashing_frame():
    text = textwrap.dedent(
        """\
        Thread 12 "python" received signal SIGSEGV, Segmentation fault.
        [Switching to Thread 0x7fffd5047700 (LWP 5069)]
        0x00007fffd5d2c33b in std::_Function_handler<void (long, long), PoolOp<float>::Compute(tensorflow::OpKernelContext*)::{lambda(long, long)#1}>::_M_invoke(std::_Any_data const&, long&&, long&&) ()
           from /home/v/proj/lib/pool_layer/pool.so
        (gdb)
        """
    )
    report = parse_text(text, "stop.txt").report
    assert report.crashing_thread == 5069
    (frame,) = report.crashed_thread.frames
    assert frame.function.startswith("std::_Function_handler<void (long, long), PoolOp<float>::Compute(")
    assert frame.module == "/home/v/proj/lib/pool_layer/pool.so" and frame.pc == 0x7FFFD5D2C33B


def test_gdb_bt_full_locals_are_not_frames():
    text = textwrap.dedent(
        """\
        (gdb) bt full
        #0  0x000055f17853c15c in store_result (j=j@entry=0x7f8896351ec8, value=value@entry=42) at null_thread.c:7
        No locals.
        #1  0x000055f17853c17d in worker (arg=<optimized out>) at null_thread.c:12
                j = {target = 0x0}
                from = 0x0
        #2  0x00007f88963df1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
                ret = <optimized out>
                pd = <optimized out>
                unwind_buf = {cancel_jmp_buf = {{jmp_buf = {140224612345536, -6915246151218434447}, mask_was_saved = 0}}, priv = {pad = {0x0, 0x0, 0x0, 0x0}}}
        """
    )
    report = parse_text(text, "full.txt").report
    frames = report.crashed_thread.frames
    assert functions(report.crashed_thread) == ["store_result", "worker", "start_thread"]
    assert frames[1].module is None and frames[1].line == 12


# --------------------------------------------------------------------------- noise around the same text

_ADDRESS = re.compile(r"0x[0-9a-f]+")


def _ansi(text: str) -> str:
    # gdb's own styling: addresses blue, function names yellow, file names green.
    text = _ADDRESS.sub(lambda m: f"\x1b[34m{m.group(0)}\x1b[m", text)
    text = re.sub(r" in ([\w:~<>]+)", lambda m: f" in \x1b[33m{m.group(1)}\x1b[m", text)
    return re.sub(r" at ([\w./-]+):", lambda m: f" at \x1b[32m{m.group(1)}\x1b[m:", text)


def _prompts(text: str) -> str:
    lines = text.splitlines()
    out = ["ana@gpu-07:~/proj$ ulimit -c unlimited", "ana@gpu-07:~/proj$ python3 -c 'import tensorflow'", ">>> import tensorflow as tf"]
    for line in lines:
        if line.startswith("Thread ") and line.endswith("):"):
            out += ["(gdb) ", "--Type <RET> for more, q to quit, c to continue without paging--"]
        out.append(line)
    out += ["(gdb) quit", "A debugging session is active.", "ana@gpu-07:~/proj$ "]
    return "\n".join(out) + "\n"


def _fenced(text: str) -> str:
    return f"### Crash\n\nHappens on every run:\n\n```gdb\n{text}```\n\nThanks!\n"


def _quoted(text: str) -> str:
    quoted = "".join(f"> {line}\n" if line else ">\n" for line in text.splitlines())
    return f"On Tue, Ana wrote:\n{quoted}\n> > older reply\nThanks, looking.\n"


NOISES = {
    "ansi": _ansi,
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "prompts": _prompts,
    "fenced": _fenced,
    "quoted": _quoted,
    "quoted twice": lambda t: _quoted(_quoted(t)),
    "everything": lambda t: _quoted(_fenced(_prompts(_ansi(t)))).replace("\n", "\r\n"),
}


@pytest.mark.parametrize("noise", list(NOISES))
@pytest.mark.parametrize("sample", ["gdb_live_thread_apply_all.txt", "gdb_core_signal_handler.txt"])
def test_same_gdb_text_in_noise_gives_the_same_model(sample, noise):
    text = (TRIAGE / sample).read_text()
    clean = parse_text(text, "clean.txt")
    noisy = parse_text(NOISES[noise](text), "noisy.txt")
    assert summary(noisy.report) == summary(clean.report)
    assert "gdb" in noisy.formats


def test_pasted_html_entities_and_single_backticks():
    text = (TRACES / "custom_op_compute_segv.txt").read_text()
    html = "`" + text.replace("<", "&lt;").replace(">", "&gt;").rstrip("\n") + "`\n"
    assert summary(parse_text(html, "x").report) == summary(parse_text(text, "x").report)


# --------------------------------------------------------------------------- faulthandler


def test_faulthandler_several_threads():
    result = parse_file(TRIAGE / "faulthandler_threads.txt")
    report = result.report
    assert result.formats == ["faulthandler"]
    assert report.core.signal.name == "SIGSEGV"
    assert [t.tid for t in report.threads] == [0x7F2B7D7FA6C0, 0x7F2B7DFFB6C0, 0x7F2C1A3B2740]
    assert report.threads[0].frames == []  # <no Python frame>
    assert functions(report.threads[1])[:2] == ["wait", "get"]
    assert report.crashing_thread == 0x7F2C1A3B2740
    crashed = report.crashed_thread
    assert [(f.function, f.line) for f in crashed.frames][-2:] == [("train", 88), ("<module>", 121)]
    assert crashed.frames[0].file.endswith("tensorflow/python/eager/execute.py")
    assert all(f.kind == "python" for t in report.threads for f in t.frames)


def test_faulthandler_fatal_error_message_is_an_abort():
    text = textwrap.dedent(
        """\
        Fatal Python error: PyThreadState_Get: the function must be called with the GIL held, but the GIL is released (the current Python thread state is NULL)
        Python runtime state: initialized

        Current thread 0x00007f1e9b3ff740 (most recent call first):
          File "/srv/app/native_call.py", line 12 in run
          File "/srv/app/native_call.py", line 30 in <module>
        """
    )
    result = parse_text(text, "fatal.txt")
    assert result.report.core.signal.name == "SIGABRT"
    assert result.abort_message.startswith("Fatal Python error: PyThreadState_Get: the function must be called")
    assert functions(result.report.crashed_thread) == ["run", "<module>"]


def test_real_faulthandler_output_of_a_crashing_process(tmp_path):
    script = PYCRASHERS / "sleeper_thread.py"
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_no_core,
    )
    assert proc.returncode < 0, proc.stderr
    report = parse_text(proc.stderr, "stderr").report
    assert report.core.signal.name == "SIGSEGV"
    assert len(report.threads) == 2
    crashed = report.crashed_thread
    assert [f.function for f in crashed.frames] == ["string_at", "crash_now", "main", "<module>"]
    assert crashed.frames[1].file == str(script) and crashed.frames[1].line == _line_of(script, "CRASH-LINE")
    sleeper = next(t for t in report.threads if not t.crashed)
    assert [f.function for f in sleeper.frames][:2] == ["wait_for_data", "worker_loop"]


def _no_core() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _line_of(script: Path, marker: str) -> int:
    return next(i for i, line in enumerate(script.read_text().splitlines(), 1) if marker in line)


# --------------------------------------------------------------------------- fatal logs


def test_tf_fatal_log_with_check_failure_stack_and_faulthandler():
    # Real TensorFlow 2.21 output (tf.raw_ops.LRNGrad with a 1-D output_image), paths shortened.
    result = parse_file(TRIAGE / "tf_check_failure_lrngrad.txt")
    report = result.report
    assert result.formats == ["tf-log", "faulthandler"]
    assert result.abort_message == "tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)"
    assert report.core.signal.name == "SIGABRT"
    # The logging thread (glog thread id 8965) and faulthandler's current thread are one.
    assert len(report.threads) == 1
    assert report.crashing_thread == 8965
    frames = report.crashed_thread.frames
    assert [f.kind for f in frames] == ["native"] * 24 + ["python"] * 3
    assert frames[0].pc == 0x7FD60E8CE564
    assert frames[0].function == "absl::lts_20250814::log_internal::LogMessage::SendToLog()"
    assert frames[3].function == "tensorflow::LRNGradOp<>::Compute()"
    assert frames[18].function == "TFE_Execute"
    assert [(f.function, f.line) for f in frames[24:]] == [("lrn_grad", 5973), ("wrapper", 377), ("<module>", 2)]


def test_fatal_log_line_alone_is_enough():
    result = parse_file(TRIAGE / "fatal_log_only.txt")
    assert result.formats == ["tf-log"]
    assert result.abort_message == "tensorflow/core/framework/tensor_shape.cc:356] Check failed: d >= 0 (0 vs. -1)"
    assert result.report.core.signal.name == "SIGABRT"
    assert result.report.threads == []


def test_glog_fatal_line_and_unknown_frames():
    text = textwrap.dedent(
        """\
        F0407 01:31:07.673615  5759 math_functions.cpp:250] Check failed: a <= b (0 vs. -1.19209e-07)
        *** Check failure stack trace: ***
            @     0x7f2f1c8d2daa  (unknown)
            @     0x7f2f1c8d2ce4  google::LogMessage::Fail()
            @     0x7f2f1c8d26e6  google::LogMessage::SendToLog()
            @     0x7f2f1d26e1ab  caffe::caffe_rng_uniform<>()
        Aborted (core dumped)
        """
    )
    result = parse_text(text, "glog.txt")
    assert result.abort_message == "math_functions.cpp:250] Check failed: a <= b (0 vs. -1.19209e-07)"
    assert result.report.crashing_thread == 5759
    frames = result.report.crashed_thread.frames
    assert [f.function for f in frames] == [None, "google::LogMessage::Fail()", "google::LogMessage::SendToLog()", "caffe::caffe_rng_uniform<>()"]
    assert frames[0].pc == 0x7F2F1C8D2DAA


def test_absl_failure_signal_handler():
    result = parse_file(TRIAGE / "absl_failure_signal.txt")
    report = result.report
    assert result.formats == ["absl-signal", "faulthandler"]
    assert report.core.signal.name == "SIGSEGV"
    frames = report.crashed_thread.frames
    names = [f.function for f in frames]
    assert names[:4] == [
        "absl::lts_20230802::WriteFailureInfo()",
        "absl::lts_20230802::AbslFailureSignalHandler()",
        "<signal handler called>",
        "xla::cpu::CpuExecutable::ExecuteComputeFunction()",
    ]
    assert frames[3].pc == 0x7F3A1C2B4E21
    assert names.count("xla::cpu::CpuExecutable::ExecuteComputeFunction()") == 1
    assert names[8] == "tensorflow::ThreadPoolDevice::Compute()"
    assert [f.kind for f in frames[-3:]] == ["python"] * 3  # faulthandler's current thread, merged
    assert any("cut by the crash handler" in w for w in report.warnings)


def test_tf_mangled_stack_trace_is_demangled():
    result = parse_file(TRIAGE / "tf_mangled_stack_trace.txt")
    report = result.report
    assert result.formats == ["backtrace-symbols"]
    assert report.core.signal.name == "SIGSEGV"  # *** Received signal 11 ***
    frames = report.crashed_thread.frames
    assert frames[1].function == "<signal handler called>"  # libpthread(+0x12890): __restore_rt
    assert frames[2].function == "tensorflow::Tensor::CopyFromInternal(tensorflow::Tensor const&, tensorflow::TensorShape const&)"
    assert frames[2].raw_function == "_ZN10tensorflow6Tensor16CopyFromInternalERKS0_RKNS_11TensorShapeE"
    assert frames[2].offset == 0x2D and frames[2].pc == 0x7F1E2A2F3A8D
    assert frames[3].function == "tensorflow::TileGradOp<Eigen::ThreadPoolDevice>::Compute(tensorflow::OpKernelContext*)"
    assert frames[3].module.endswith("tensorflow_core/python/_pywrap_tensorflow_internal.so")
    assert frames[-1].function == "clone" and frames[-1].module == "/lib/x86_64-linux-gnu/libc.so.6"


def test_protobuf_fatal_and_terminate():
    result = parse_file(TRIAGE / "protobuf_fatal.txt")
    assert result.abort_message == (
        "[libprotobuf FATAL external/com_google_protobuf/src/google/protobuf/repeated_field.h:1537] "
        "CHECK failed: (index) < (current_size_):"
    )
    assert result.report.core.signal.name == "SIGABRT"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("free(): double free detected in tcache 2", "free(): double free detected in tcache 2"),
        ("malloc(): corrupted top size", "malloc(): corrupted top size"),
        ("double free or corruption (out)", "double free or corruption (out)"),
        ("munmap_chunk(): invalid pointer", "munmap_chunk(): invalid pointer"),
        ("corrupted size vs. prev_size", "corrupted size vs. prev_size"),
        ("*** stack smashing detected ***: terminated", "*** stack smashing detected ***: terminated"),
        (
            "Fatal glibc error: malloc.c:4376 (_int_malloc): assertion failed: (unsigned long) (size) >= (unsigned long) (nb)",
            "Fatal glibc error: malloc.c:4376 (_int_malloc): assertion failed: (unsigned long) (size) >= (unsigned long) (nb)",
        ),
        (
            "*** Error in `python': double free or corruption (fasttop): 0x00000000022e7a90 ***",
            "*** Error in `python': double free or corruption (fasttop): 0x00000000022e7a90 ***",
        ),
        (
            "python3: /src/ops/pack.cc:41: void Pack(int): Assertion `n >= 0' failed.",
            "python3: /src/ops/pack.cc:41: void Pack(int): Assertion `n >= 0' failed.",
        ),
    ],
)
def test_allocator_and_assert_messages(line, expected):
    result = parse_text(f"Epoch 3/10\n{line}\nAborted (core dumped)\n", "msg.txt")
    assert result.abort_message == expected
    assert result.report.core.signal.name == "SIGABRT"
    assert result.formats == ["abort-message"]


def test_uncaught_exception_message():
    text = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted (core dumped)\n"
    result = parse_text(text, "t.txt")
    assert result.abort_message == "terminate called after throwing an instance of 'std::bad_alloc' (what(): std::bad_alloc)"


# --------------------------------------------------------------------------- sanitizers, coredumpctl


def test_asan_llvm_report():
    result = parse_file(TRIAGE / "asan_llvm_use_after_free.txt")
    report = result.report
    assert result.formats == ["asan"]
    assert report.core.pid == 51873
    assert result.abort_message.startswith("AddressSanitizer: heap-use-after-free on address 0x6080000bf3a0")
    assert report.core.signal.name is None  # the sanitizer found it before anything faulted
    assert len(report.threads) == 1  # 'freed by' / 'allocated by' stacks are history
    crashed = report.crashed_thread
    assert (crashed.name, crashed.tid) == ("tf_inter_op", 12)
    f = crashed.frames
    assert (f[0].function, f[0].file, f[0].line, f[0].pc) == (
        "ScaleBiasOp::Compute(tensorflow::OpKernelContext*)",
        "/src/ops/scale_bias_op.cc",
        41,
        0x7F0B9A4C21FD,
    )
    assert f[1].module == "/opt/venv/lib/python3.11/site-packages/tensorflow/libtensorflow_framework.so.2"
    assert f[1].function == "tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)"
    assert f[2].function is None and f[2].module.endswith("libtensorflow_framework.so.2")
    assert len(f) == 5
    assert any("heap-use-after-free /src/ops/scale_bias_op.cc:41:22" in w for w in report.warnings)


def _asan_binary(tmp_path: Path, source: str) -> Path:
    require("gcc")
    src = tmp_path / "asan_case.c"
    src.write_text(source)
    exe = tmp_path / "asan_case"
    proc = subprocess.run(
        ["gcc", "-g", "-O0", "-fsanitize=address", "-fno-omit-frame-pointer", str(src), "-o", str(exe)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        missing(f"gcc with -fsanitize=address ({proc.stderr[-300:]})")
    return exe


def test_real_asan_heap_buffer_overflow(tmp_path):
    exe = _asan_binary(
        tmp_path,
        textwrap.dedent(
            """\
            #include <stdlib.h>
            __attribute__((noinline)) void fill(int *p, int n) { for (int i = 0; i <= n; i++) p[i] = i; }
            int main(void) { int *p = malloc(4 * sizeof(int)); fill(p, 4); free(p); return 0; }
            """
        ),
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode != 0
    result = parse_text(proc.stderr, "asan.txt")
    assert result.formats == ["asan"]
    assert result.abort_message.startswith("AddressSanitizer: heap-buffer-overflow on address 0x")
    frames = result.report.crashed_thread.frames
    assert [f.function for f in frames[:2]] == ["fill", "main"]
    assert frames[0].file == str(tmp_path / "asan_case.c") and frames[0].line == 2
    assert result.report.crashing_thread == result.report.core.pid  # T0


def test_real_asan_segv(tmp_path):
    exe = _asan_binary(
        tmp_path,
        textwrap.dedent(
            """\
            #include <stddef.h>
            struct job { int *target; };
            __attribute__((noinline)) void store(struct job *j) { *j->target = 1; }
            int main(void) { struct job j = { NULL }; store(&j); return 0; }
            """
        ),
    )
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    result = parse_text(proc.stderr, "asan.txt")
    assert result.report.core.signal.name == "SIGSEGV"
    assert result.report.core.signal.address == 0
    assert [f.function for f in result.report.crashed_thread.frames[:2]] == ["store", "main"]
    assert result.abort_message is None


def test_coredumpctl_info():
    result = parse_file(TRIAGE / "coredumpctl_info.txt")
    report = result.report
    assert result.formats == ["coredumpctl"]
    assert report.core.signal.name == "SIGABRT"
    assert (report.core.pid, report.core.executable) == (18342, "/usr/bin/python3.11")
    assert report.core.cmdline == "python3 -m serving.worker --model /models/ranker"
    assert report.crashing_thread == 18371  # the first thread systemd lists
    frames = report.crashed_thread.frames
    assert (frames[1].function, frames[1].module) == ("raise", "libc.so.6")
    assert frames[4].function is None  # n/a
    assert frames[7].function == "tsl::port::AlignedFree(void*)"
    assert frames[7].raw_function == "_ZN3tsl4port11AlignedFreeEPv"
    assert frames[10].function == "tensorflow::Tensor::~Tensor()"
    assert len(report.threads) == 2


def test_kernel_log_segfault_line():
    result = parse_file(TRIAGE / "kernel_log_segfault.txt")
    report = result.report
    assert result.formats == ["kernel-log"]
    assert (report.core.signal.name, report.core.signal.address) == ("SIGSEGV", 0x10)
    assert (report.crashing_thread, report.crashed_thread.name) == (19877, "python3")
    (frame,) = report.crashed_thread.frames
    assert (frame.pc, frame.module, frame.function) == (0x7F3A2B1C4E2D, "libtensorflow_framework.so.2", None)


def test_kernel_log_trap_invalid_opcode():
    line = "traps: python3[4242] trap invalid opcode ip:7f3a2b1c4e2d sp:7ffd2b3c4d50 error:0 in libtensorflow_cc.so.2[7f3a10000000+3000000]"
    report = parse_text(line, "dmesg").report
    assert report.core.signal.name == "SIGILL"
    assert report.crashed_thread.frames[0].module == "libtensorflow_cc.so.2"


def test_lldb_bt_all():
    result = parse_file(TRIAGE / "lldb_bt_all.txt")
    report = result.report
    assert result.formats == ["lldb"]
    assert (report.core.signal.name, report.core.signal.address) == ("SIGSEGV", 0x10)
    assert report.crashing_thread == 1
    f = report.crashed_thread.frames
    assert (f[0].function, f[0].module, f[0].file, f[0].line) == (
        "__memmove_avx_unaligned_erms", "libc.so.6", "memmove-vec-unaligned-erms.S", 314
    )
    assert f[1].function == "PyBytes_FromStringAndSize"  # argument values dropped
    assert (f[2].function, f[2].offset) == (None, 74)  # ___lldb_unnamed_symbol248
    assert (f[3].function, f[3].inlined) == ("_call_function_pointer", True)
    assert [t.crashed for t in report.threads] == [True, False]


def test_macos_crash_report():
    result = parse_file(TRIAGE / "macos_crash_report.txt")
    report = result.report
    assert result.formats == ["macos-crash"]
    assert (report.core.signal.name, report.core.signal.address) == ("SIGSEGV", 0x10)
    crashed = report.crashed_thread
    assert (crashed.name, crashed.tid) == ("tf_inter_op", 7)
    assert crashed.frames[1].function == "tensorflow::GatherOp<Eigen::ThreadPoolDevice, float, int>::Compute(tensorflow::OpKernelContext*)"
    assert (crashed.frames[1].module, crashed.frames[1].offset) == ("libtensorflow_cc.2.dylib", 1660)
    assert crashed.frames[3].function is None and crashed.frames[3].module is None
    assert [t.crashed for t in report.threads] == [False, True]


def test_gdb_py_bt_merges_into_the_crashed_thread():
    gdb = (TRACES / "custom_op_compute_segv.txt").read_text()
    pybt = textwrap.dedent(
        """\
        (gdb) py-bt
        Traceback (most recent call first):
          <built-in method _TFE_Py_FastPathExecute of module object at remote 0x7f40a1b2c3d0>
          File "/opt/venv/lib/python3.11/site-packages/tensorflow/python/ops/gen_user_ops.py", line 41, in bad_scale
            _result = pywrap_tfe.TFE_Py_FastPathExecute(
          File "/srv/run_bad_op.py", line 12, in <module>
            out = ops.bad_scale(x)
        """
    )
    result = parse_text(gdb + pybt, "gdb.txt")
    assert result.formats == ["gdb", "gdb-py-bt"]
    frames = result.report.crashed_thread.frames
    assert [f.kind for f in frames] == ["native"] * 8 + ["python"] * 2
    assert (frames[8].function, frames[8].line, frames[8].source) == ("bad_scale", 41, "_result = pywrap_tfe.TFE_Py_FastPathExecute(")


def test_python_exception_traceback_is_not_a_crash_stack():
    text = 'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n    f()\nValueError: no\n'
    text += (TRACES / "tflite_invoke_segv_faulthandler.txt").read_text()
    report = parse_text(text, "t").report
    assert len(report.threads) == 1 and len(report.crashed_thread.frames) == 3


def test_windows_faulthandler():
    text = 'Windows fatal exception: access violation\n\nCurrent thread 0x00002c44 (most recent call first):\n  File "C:\\app\\run.py", line 9 in main\n'
    report = parse_text(text, "win.txt").report
    assert report.core.signal.name == "SIGSEGV"
    assert report.crashed_thread.frames[0].function == "main"


# --------------------------------------------------------------------------- mixtures


def test_markdown_ticket_with_log_and_gdb_backtrace():
    result = parse_file(TRIAGE / "ticket_markdown_double_free.md")
    report = result.report
    assert set(result.formats) == {"abort-message", "gdb"}
    assert result.abort_message == "free(): double free detected in tcache 2"
    assert report.core.signal.name == "SIGABRT"
    assert report.core.cmdline == "python train.py --config cfg/base.yaml"
    assert report.crashing_thread == 31402
    assert len(report.threads) == 1
    names = functions(report.crashed_thread)
    assert len(names) == 14
    assert names[8] == "RaggedPackOp::Compute(tensorflow::OpKernelContext*)"
    assert report.crashed_thread.frames[8].module == "/home/ana/proj/ops/_ragged_pack.so"
    assert names[10].startswith("tensorflow::data::(anonymous namespace)::PrefetchDatasetOp::Dataset::Iterator::PrefetchThread(")


def test_faulthandler_and_gdb_of_the_same_crash_are_one_thread():
    faulthandler = textwrap.dedent(
        """\
        Fatal Python error: Segmentation fault

        Current thread 0x00007f6a0d9f5740 (most recent call first):
          File "/opt/venv/lib/python3.11/site-packages/tflite_runtime/interpreter.py", line 941 in invoke
          File "/srv/detect.py", line 58 in detect
          File "/srv/detect.py", line 91 in <module>
        """
    )
    text = f"stderr:\n```\n{faulthandler}```\nand the core:\n```\n{(TRIAGE / 'gdb_core_signal_handler.txt').read_text()}```\n"
    result = parse_text(text, "ticket.md")
    report = result.report
    assert result.formats == ["faulthandler", "gdb"]
    assert len(report.threads) == 3
    crashed = report.crashed_thread
    assert report.crashing_thread == 2211  # pthread 0x7f6a0d9f5740 is LWP 2211 in gdb's output
    kinds = [f.kind for f in crashed.frames]
    assert kinds == ["native"] * 23 + ["python"] * 3
    assert [f.function for f in crashed.frames[-3:]] == ["invoke", "detect", "<module>"]
    assert [f.index for f in crashed.frames] == list(range(26))


def test_pystack_text_sample_with_locals():
    text = textwrap.dedent(
        """\
        The process died due receiving signal SIGABRT sent by pid 4242
        Traceback for thread 77 (python3) [Has the GIL] (most recent call last):
            (Python) File "/srv/app.py", line 30, in <module>
                main()
            (Python) File "/srv/app.py", line 12, in main
                run(model)
              Arguments:
                model: 'ssd'
              Locals:
                steps: 3
            (C) File "???", line 0, in tflite::impl::Interpreter::Invoke() (_pywrap_tensorflow_interpreter_wrapper.so)
        """
    )
    result = parse_text(text, "pystack.txt")
    report = result.report
    assert report.core.signal.name == "SIGABRT" and report.core.signal.sender_pid == 4242
    crashed = report.crashed_thread
    assert (crashed.tid, crashed.name, crashed.holds_gil) == (77, "python3", True)
    f = crashed.frames
    assert (f[0].kind, f[0].function, f[0].module, f[0].file) == (
        "native",
        "tflite::impl::Interpreter::Invoke()",
        "_pywrap_tensorflow_interpreter_wrapper.so",
        None,
    )
    assert (f[1].function, f[1].line, f[1].source) == ("main", 12, "run(model)")
    assert f[1].locals == {"model": "'ssd'", "steps": "3"}
    assert (f[2].function, f[2].source) == ("<module>", "main()")


# --------------------------------------------------------------------------- real tools on real cores


def _gdb_bt(case) -> str:
    require("gdb")
    proc = subprocess.run(
        ["gdb", "-nx", "-batch", "-iex", "set auto-load off", "-ex", "thread apply all bt", str(case.exe), str(case.core)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def test_real_gdb_output_of_null_thread_core(cores):
    case = cores.c_crash("null_thread")
    result = parse_text(_gdb_bt(case), str(case.core))
    report = result.report
    assert result.formats[0] == "gdb"
    assert report.core.signal.name == "SIGSEGV"
    assert len(report.threads) == 2
    crashed = report.crashed_thread
    assert crashed.frames[0].function == "store_result"
    assert crashed.frames[0].file.endswith("null_thread.c") and crashed.frames[0].pc is not None
    assert crashed.frames[1].function == "worker"
    assert "start_thread" in functions(crashed)
    main = next(t for t in report.threads if not t.crashed)
    assert "main" in functions(main)
    if case.method == "kernel":
        assert report.crashing_thread != case.pid  # the worker, not the main thread
        assert main.tid == case.pid


def test_real_gdb_output_of_double_free_core(cores):
    case = cores.c_crash("double_free")
    result = parse_text(_gdb_bt(case), str(case.core))
    report = result.report
    assert report.core.signal.name == "SIGABRT"
    names = functions(report.crashed_thread)
    assert any(n and ("raise" in n or "pthread_kill" in n) for n in names[:3])
    assert any(n and n.endswith("abort") for n in names)
    assert "release" in names and "main" in names
    assert names.index("release") < names.index("main")
    # glibc's message, read back from malloc_printerr's argument as gdb shows it.
    assert result.abort_message == "free(): double free detected in tcache 2"


def test_real_gdb_output_of_assert_core(cores):
    case = cores.c_crash("assert_fail")
    result = parse_text(_gdb_bt(case), str(case.core))
    assert result.report.core.signal.name == "SIGABRT"
    assert "check_invariant" in functions(result.report.crashed_thread)
    # glibc's own wording, rebuilt from __assert_fail's arguments and the program name.
    source = CRASHERS / "assert_fail.c"
    assert result.abort_message == (
        f"assert_fail: {source}:4: check_invariant: Assertion `items >= 0 && \"queue length went negative\"' failed."
    )


def _python_with_dwarf() -> Path:
    return Path(sys.executable).resolve()


def test_real_pystack_output_of_a_python_core(cores):
    python = _python_with_dwarf()
    script = PYCRASHERS / "sleeper_thread.py"
    case = cores.python_crash("triage_sleeper_thread", python, script)
    proc = subprocess.run(
        [sys.executable, "-m", "pystack", "core", "--native", str(case.core), str(python)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    result = parse_text(proc.stdout, str(case.core))
    report = result.report
    assert result.formats == ["pystack"]
    assert report.core.signal.name == "SIGSEGV" and report.core.signal.address == 0x10
    if case.method == "kernel":
        assert report.core.pid == case.pid
    assert len(report.threads) == 2
    crashed = report.crashed_thread
    python_frames = [f for f in crashed.frames if f.kind == "python"]
    assert [f.function for f in python_frames] == ["string_at", "crash_now", "main", "<module>"]
    assert python_frames[1].line == _line_of(script, "CRASH-LINE")
    assert "CRASH-LINE" in python_frames[1].source
    native = [f for f in crashed.frames if f.kind == "native"]
    assert native and crashed.frames[0].kind == "native"  # the fault is in native code
    assert any(f.module and f.module.startswith("libc.so") for f in native[:2])
    sleeper = next(t for t in report.threads if not t.crashed)
    assert [f.function for f in sleeper.frames if f.kind == "python"][:2] == ["wait_for_data", "worker_loop"]


# --------------------------------------------------------------------------- bad input and bounds


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello\nworld\n",
        "See #12 (merged) and #1234 for context.\n",
    ],
)
def test_text_without_a_crash_is_bad_input(text):
    with pytest.raises(BadInput, match=r"no crash found in ticket\.txt"):
        parse_text(text, "ticket.txt")


def test_an_exception_the_program_ended_with_is_a_stated_error():
    """Not a crash, yet what the text reports: read (fault kind unknown), not refused."""
    text = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
    result = parse_text(text, "ticket.txt")
    assert [h.rule.name for h in result.evidence] == ["error-python-raised"]
    assert result.report.core.signal.name is None


def test_a_verdict_alone_states_a_crash():
    """A shell's verdict is all some tickets hold: it gets a verdict, not a refusal."""
    assert parse_text("Segmentation fault (core dumped)\n", "ticket.txt").report.core.signal.name == "SIGSEGV"


def test_too_many_frames_and_threads_are_cut_with_warnings():
    frames = "".join(f"#{i:<3} 0x{0x400000 + i:016x} in recurse (depth={i}) at r.c:3\n" for i in range(3000))
    report = parse_text("Program received signal SIGSEGV, Segmentation fault.\n" + frames, "deep.txt").report
    assert len(report.crashed_thread.frames) == limits.MAX_FRAMES_PER_THREAD
    assert report.crashed_thread.frames[0].pc == 0x400000  # the innermost frames are kept
    assert any("frames were kept" in w for w in report.warnings)

    threads = "".join(
        f"\nThread {n} (Thread 0x{0x7F0000000000 + n:x} (LWP {1000 + n})):\n#0  0x00007f00000001 in poll () from /lib/libc.so.6\n"
        for n in range(2000, 0, -1)
    )
    report = parse_text(threads, "many.txt").report
    assert len(report.threads) <= limits.MAX_THREADS
    assert any("thread" in w and "left out" in w for w in report.warnings)


_PATHOLOGICAL = r"""
import random, sys
from coreanalyze.triage import parse_text
from coreanalyze.base.errors import BadInput
L = 16 * 1024
random.seed(7)
words = ["#1", "0x7f", "in", "(", ")", "at", "from", "Thread", "@", "F0000", "File", "\"", "<", ">", "operator<", "::", "]", "[0x1]"]
noise = "\n".join(" ".join(random.choice(words) for _ in range(12)) for _ in range(200_000))
crash = "Program terminated with signal SIGSEGV, Segmentation fault.\n#0  0x00007f403c0b362b in BadScaleOp::Compute (this=0x1) at bad_op.cc:14\n"
cases = {
    "50 MB of noise with a crash at the end": (noise + "\n") * 5 + crash,
    "one 50 MB line": "x (y) #1 0x1 in " * 3_000_000 + "\n" + crash,
    "open parentheses": ("#1  0x1 in f " + "(" * L + "\n") * 500 + crash,
    "operator names": ("#1  0x1 in " + "operator<" * (L // 9) + " ()\n") * 500 + crash,
    "repeated at": ("#1  0x1 in f () at " + " at a:" * (L // 6) + "\n") * 500 + crash,
    "fatal-log prefix": ("F0000 00:00:" + "1" * L + "\n") * 500 + crash,
    "at signs": ("    @ 0x1 " * (L // 10) + "\n") * 500 + crash,
    "quoting": ("> " * (L // 2) + "\n") * 500 + crash,
    "escape sequences": ("\x1b[" + "1;" * L + "\n") * 500 + crash,
    "backtrace_symbols": ("/lib/x.so(" + "a" * (L - 30) + "[0x1]\n") * 500 + crash,
    "faulthandler quotes": ('  File "' + '"' * L + '", line 1 in f\n') * 500 + crash,
    "a million frames": "Program received signal SIGSEGV, Segmentation fault.\n" + "#1  0x00007f4063b8f300 in f () from /x/lib.so\n" * 1_000_000,
}
for name, text in cases.items():
    result = parse_text(text, name)
    assert result.report.core.signal.name == "SIGSEGV", name
    print("ok", name, flush=True)
"""


def test_pathological_inputs_parse_in_linear_time(tmp_path):
    # Quadratic work on any of these (16 KiB lines, 50 MB inputs) would run for hours; the
    # subprocess limit only turns such a hang into a failure instead of a stuck test run.
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        proc = subprocess.run([sys.executable, "-c", _PATHOLOGICAL], capture_output=True, text=True, timeout=900, env=env)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the parser did not finish on pathological input; last ok: {(e.stdout or b'')[-300:]!r}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("ok ") == 12


# --------------------------------------------------------------------------- with the classifier


@pytest.mark.parametrize(
    "name, category, fault_kind",
    [
        ("custom_op_compute_segv.txt", "kernel-compute", None),
        ("tflite_invoke_segv_faulthandler.txt", "interpreter-invoke", None),
        ("heap_abort_tf_dealloc.txt", "allocator", "heap-corruption"),
        ("saved_model_serialize_segv.txt", "protobuf-serialization", None),
    ],
)
def test_triage_text_classifies_the_samples(name, category, fault_kind):
    from coreanalyze.triage import triage_text

    report = triage_text((TRACES / name).read_text(), name)
    assert report.source == "triage"
    assert report.classification.category == category
    if fault_kind is not None:
        assert report.classification.fault_kind == fault_kind
    if name == "heap_abort_tf_dealloc.txt":
        assert report.classification.abort_message == "free(): invalid next size (normal)"
