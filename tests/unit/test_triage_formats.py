"""The crash formats users paste besides gdb and the sanitizers: Android tombstones, valgrind,
apport, the JVM's hs_err log, frame lists of source lines only, macOS Mach exception codes.
Each is accepted (never refused) and gives the culprit, signal and fault kind it states."""

from __future__ import annotations

import pytest
from support.paths import DATA as _DATA

from coreanalyze.triage.parse import parse_text, triage_text

DATA = _DATA / "triage"


def parsed(name: str):
    text = (DATA / name).read_text(encoding="utf-8")
    return parse_text(text, name), triage_text(text, name)


def test_android_tombstone_in_logcat():
    result, report = parsed("android_tombstone_logcat.txt")
    assert result.formats == ["android-tombstone"]
    assert report.core.signal.name == "SIGSEGV" and report.core.signal.address == 0x8
    assert report.core.signal.code_name == "SEGV_MAPERR"
    thread = report.crashed_thread
    assert thread.tid == 8051 and thread.name == "tflite-worker"
    assert thread.frames[0].module.endswith("/lib/arm/libtensorflowlite_jni.so")
    c = report.classification
    assert c.culprit.function.startswith("tflite::ops::builtin::conv::EvalFloat")
    assert (c.fault_kind, c.category) == ("null-deref", "interpreter-invoke")


def test_android_tombstone_abort_message():
    text = (
        "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n"
        "pid: 311, tid: 340, name: inference  >>> org.example <<<\n"
        "signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------\n"
        "Abort message: 'F0000 00:00:1712.5  340 tensor_shape.cc:356] Check failed: d < dims() (1 vs. 1)'\n"
        "backtrace:\n"
        "    #00 pc 0004e0a0  /apex/com.android.runtime/lib64/bionic/libc.so (abort+164)\n"
        "    #01 pc 01200010  /data/app/org.example/lib/arm64/libtensorflowlite_flex_jni.so (absl::lts_20250814::log_internal::LogMessageFatal::~LogMessageFatal()+24)\n"
        "    #02 pc 0123a4b0  /data/app/org.example/lib/arm64/libtensorflowlite_flex_jni.so (tensorflow::TensorShapeBase<tensorflow::TensorShape>::dim_size(int) const+80)\n"
        "    #03 pc 0123a600  /data/app/org.example/lib/arm64/libtensorflowlite_flex_jni.so (tensorflow::LRNGradOp::Compute(tensorflow::OpKernelContext*)+400)\n"
    )
    c = triage_text(text, "tombstone.txt").classification
    assert c.fault_kind == "check-failure"
    assert "Check failed: d < dims()" in c.abort_message
    assert c.culprit.function.startswith("tensorflow::LRNGradOp::Compute")


def test_valgrind_terminating_stack_and_error_class():
    result, report = parsed("valgrind_invalid_read.txt")
    assert result.formats == ["valgrind"]
    assert report.core.signal.name == "SIGSEGV" and report.core.signal.address == 0x3F8A0000
    c = report.classification
    assert c.culprit.function.startswith("tflite::ops::builtin::gather::Gather")
    assert c.fault_kind == "invalid-access"
    assert c.detail == "Invalid read of size 4"


def test_apport_report_signal_and_stacktrace():
    result, report = parsed("apport_sigill.txt")
    assert "apport" in result.formats
    assert report.core.signal.name == "SIGILL"
    c = report.classification
    assert c.culprit.function == "_GLOBAL__sub_I_cpu_feature_guard.cc"
    assert c.fault_kind == "illegal-instruction"
    assert c.category == "library-load"


def test_apport_title_alone():
    c = triage_text("python3.10 crashed with SIGSEGV in tensorflow::Tensor::~Tensor()\n", "title.txt").classification
    assert c.culprit.function == "tensorflow::Tensor::~Tensor"
    assert c.fault_kind == "invalid-access"


def test_jvm_hs_err_native_frames():
    result, report = parsed("jvm_hs_err.txt")
    assert result.formats == ["jvm-hs-err"]
    assert report.core.signal.address == 0x18
    assert report.crashed_thread.frames[0].module == "libtensorflow_framework.so.2"
    c = report.classification
    assert c.culprit.function == "tensorflow::Tensor::~Tensor"
    assert c.fault_kind == "null-deref"


def test_source_line_only_frames_are_a_stack():
    result, report = parsed("source_lines_only.txt")
    assert "source-lines" in result.formats
    frames = report.crashed_thread.frames
    assert [(f.file, f.line) for f in frames] == [
        ("tensorflow/core/kernels/my_custom_op.cc", 88),
        ("tensorflow/core/framework/op_kernel.cc", 1410),
        ("tensorflow/core/common_runtime/executor.cc", 775),
    ]
    assert report.core.signal.name == "SIGSEGV"


def test_macos_mach_exception_codes_give_the_signal_and_fault_kind():
    result, report = parsed("macos_exc_codes.txt")
    assert report.core.signal.name == "SIGSEGV"
    assert report.core.signal.code_name == "SI_KERNEL"
    c = report.classification
    assert c.fault_kind == "invalid-access"  # a general-protection fault: no usable address
    assert any("general-protection" in e for e in c.evidence)


def test_gdb_frames_wrapped_after_from_and_at_keep_their_library_and_file():
    text = """Thread 1 (Thread 0xb7b4e6d0 (LWP 5434)):
[KCrash Handler]
#3  <signal handler called>
#6  0xb721455d in QGraphicsLinearLayout::removeItem () from
    /usr/lib/libQtGui.so.4
#7  0xb3fe1ac0 in QBasicAtomicInt::ref (this=0xc) at
    /home/u/qt/src/corelib/arch/qatomic_i386.h:116
#8  0x00007f778873dbde in _dbus_list_foreach () at /lib64/libdbus-1.so.3
"""
    frames = triage_text(text, "kde.txt").crashed_thread.frames
    named = {f.function: f for f in frames if f.function}
    assert named["QGraphicsLinearLayout::removeItem"].module == "/usr/lib/libQtGui.so.4"
    assert named["QBasicAtomicInt::ref"].file.endswith("qatomic_i386.h") and named["QBasicAtomicInt::ref"].line == 116
    assert named["_dbus_list_foreach"].module == "/lib64/libdbus-1.so.3"


def test_android_tombstone_with_symbolized_frames_and_interleaved_log_lines():
    text = """*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
pid: 1322, tid: 6998, name: generic  >>> /system/bin/mediaserver <<<
signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------
Abort message: frameworks/av/media/libstagefright/MPEG4Extractor.cpp:3301 CHECK_EQ( (unsigned)ptr[0],1u) failed: 25 vs. 1

backtrace:
AM write failed: Broken pipe
    #0 0x00084fe6 in tgkill /bionic/libc/arch-x86/syscalls/tgkill.S:20
    #1 0x00027205 in raise /bionic/libc/bionic/raise.cpp:34
    #2 0x000209e4 in abort /bionic/libc/bionic/abort.cpp:47
    #3 0x0000af2c in __android_log_assert /system/core/liblog/logger_write.c:451
    #4 0x0009c6a1 in android::MPEG4Source::MPEG4Source(android::sp<android::MetaData> const&) frameworks/av/media/libstagefright/MPEG4Extractor.cpp:3301
"""
    c = triage_text(text, "tombstone.txt").classification
    assert c.fault_kind == "check-failure"
    assert c.culprit.function == "android::MPEG4Source::MPEG4Source"


GDB_WITH_VALUES = """Program received signal SIGSEGV, Segmentation fault.
#0  0x00007fffe1a2b3c4 in tensorflow::grappler::GraphProperties::InferStatically(bool, bool, bool, bool) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#1  0x00007fffe1a2c000 in tensorflow::grappler::ConstantFolding::RunOptimizationPass(tensorflow::grappler::Cluster*, tensorflow::grappler::GrapplerItem*, tensorflow::GraphDef*) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
(gdb) p $_siginfo._sifields._sigfault.si_addr
$1 = (void *) 0x7ffd8a7fef88
(gdb) {sp_command}
{sp_output}
"""


@pytest.mark.parametrize(
    "sp_command,sp_output",
    [
        ("p $sp", "$2 = (void *) 0x7ffd8a7fef90"),
        ("info registers rsp", "rsp            0x7ffd8a7fef90      0x7ffd8a7fef90"),
        ("info frame", "Stack level 0, frame at 0x7ffd8a7fefa0:\n rip = 0x7fffe1a2b3c4; saved rip = 0x7fffe1a2c000"),
    ],
    ids=["p-sp", "info-registers", "info-frame"],
)
def test_gdb_printed_fault_address_next_to_the_stack_pointer_is_a_stack_overflow(sp_command, sp_output):
    report = triage_text(GDB_WITH_VALUES.format(sp_command=sp_command, sp_output=sp_output), "gdb.txt")
    assert report.core.signal.address == 0x7FFD8A7FEF88
    assert report.classification.fault_kind == "stack-overflow"


def test_gdb_printed_fault_address_alone_tells_null_from_wild():
    text = GDB_WITH_VALUES.replace("0x7ffd8a7fef88", "0x10").format(sp_command="", sp_output="")
    assert triage_text(text, "gdb.txt").classification.fault_kind == "null-deref"


def test_faulthandler_frames_without_their_header():
    text = (
        "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)\n"
        '  File "/usr/lib/python3/dist-packages/tflite_runtime/interpreter.py", line 917 in invoke\n'
        '  File "classify.py", line 30 in main\n'
    )
    report = triage_text(text, "pycharm.txt")
    assert report.core.signal.name == "SIGSEGV"
    assert [f.function for f in report.crashed_thread.frames] == ["invoke", "main"]
    assert report.classification.category == "interpreter-invoke"


def test_op_requires_failure_reporting_blames_the_kernel():
    text = (
        "2024-05-05 05:05:05.123456: F tensorflow/core/framework/op_kernel.cc:1780] Non-OK-status: status status: INTERNAL: bad shape\n"
        "*** Check failure stack trace: ***\n"
        "    @     0x7f0000001000  absl::lts_20230802::log_internal::LogMessageFatal::~LogMessageFatal()\n"
        "    @     0x7f0000002000  tensorflow::OpKernelContext::CtxFailureWithWarning(char const*, int, absl::lts_20230802::Status const&)\n"
        "    @     0x7f0000003000  tensorflow::ReshapeOp::Compute(tensorflow::OpKernelContext*)\n"
    )
    c = triage_text(text, "op_requires.txt").classification
    assert c.culprit.function == "tensorflow::ReshapeOp::Compute"
    assert (c.category, c.fault_kind) == ("kernel-compute", "check-failure")


def test_gdb_frames_whose_source_and_library_paths_hold_spaces():
    # gdb prints paths as they are: a checkout under "My Projects", a library under "Program Files".
    text = (
        "Program terminated with signal SIGSEGV, Segmentation fault.\n"
        "#0  0x0000556698df315c in store_result (j=j@entry=0x7f6289918ec8, value=value@entry=42) at /home/me/My Projects/null thread.c:8\n"
        "#1  0x0000556698df317d in worker (arg=<optimized out>) at /home/me/My Projects/null thread.c:13\n"
        "#2  0x00007f62899a61f5 in helper () from /opt/Vendor Libs/libhelp.so.1\n"
        "#3  0x00007f6289a268ec in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
    )
    frames = triage_text(text).threads[0].frames
    assert [(f.function, f.file, f.line, f.module) for f in frames] == [
        ("store_result", "/home/me/My Projects/null thread.c", 8, None),
        ("worker", "/home/me/My Projects/null thread.c", 13, None),
        ("helper", None, None, "/opt/Vendor Libs/libhelp.so.1"),
        ("clone3", "../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81, None),
    ]


_KN = "00 00000000`9f53f978 00007fd6`e7bd5989     "


def test_windbg_rows_of_an_anonymous_namespace_an_unnamed_frame_and_a_null_pc():
    text = "\n".join([
        "(1a2c.3b4): Access violation - code c0000005 (first chance)",
        " # Child-SP          RetAddr               Call Site",
        _KN + "0x0",
        _KN + "crash_ops!(anonymous namespace)::ScatterToSlotsOp::Compute+0x1c",
        _KN + "libffi+0x4cf7a",
        _KN + "tensorflow_framework!tensorflow::ThreadPoolDevice::Compute+0x1c",
    ])  # fmt: skip
    frames = parse_text(text, "kn.txt").report.crashed_thread.frames
    assert [(f.function, f.pc) for f in frames][:3] == [(None, 0), ("(anonymous namespace)::ScatterToSlotsOp::Compute", None), (None, None)]
    assert triage_text(text, "kn.txt").classification.culprit.function == "ScatterToSlotsOp::Compute"


def test_visual_studio_frame_without_a_symbol_keeps_its_module():
    text = "\tName\tLanguage\n>\tlibffi.dll!00007ffff734cf7a()\tUnknown\n \t_ctypes.pyd!_ctypes_callproc() Line 1262\tC\n"
    frames = parse_text(text, "vs.txt").report.crashed_thread.frames
    assert (frames[0].module, frames[0].pc) == ("libffi.dll", 0x7FFFF734CF7A)


@pytest.mark.parametrize(
    ("line", "signal"),
    [
        ("(1a2c.3b4): Security check failure or stack buffer overrun - code c0000409 (first chance)", "SIGABRT"),
        ("   ExceptionCode: c000001d (Illegal instruction)", "SIGILL"),
        ("Exception thrown at 0x00007FF6 (app.dll) in python.exe: 0xC0000094: Integer division by zero.", "SIGFPE"),
        ("(1a2c.3b4): In-page I/O error - code c0000006 (first chance)", "SIGBUS"),
    ],
)
def test_windows_exception_codes_give_the_signal(line, signal):
    text = line + "\n\tName\tLanguage\n>\tapp.dll!Kernel::Run() Line 3\tC++\n \tapp.dll!main() Line 9\tC++\n"
    assert triage_text(text, "win.txt").core.signal.name == signal


def test_a_raised_signal_names_its_sender_in_hs_err_and_a_tombstone_names_none_for_its_own():
    hs_err = (
        "#  SIGABRT (0x6) at pc=0x00007f0000001000, pid=4242, tid=4260\n"
        "Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)\n"
        "C  [libc.so.6+0x1000]  abort+0x1c\n"
        "siginfo: si_signo: 6 (SIGABRT), si_code: -6 (SI_TKILL), sent from pid: 4242 (current process), sent from uid: 1000\n"
    )
    assert triage_text(hs_err, "hs_err.txt").core.signal.sender_pid == 4242
    tombstone = (
        "pid: 4242, tid: 4260, name: worker  >>> app <<<\n"
        "signal 6 (SIGABRT), code -6 (SI_TKILL), fault addr --------\n"
        "backtrace:\n"
        "      #00 pc 0000000000001000  /system/lib64/libc.so (abort+28)\n"
    )
    assert triage_text(tombstone, "tombstone.txt").core.signal.sender_pid == 4242
    other = tombstone.replace("code -6 (SI_TKILL)", "code 0 (SI_USER from pid 1, uid 0)")
    assert triage_text(other, "tombstone.txt").core.signal.sender_pid == 1
