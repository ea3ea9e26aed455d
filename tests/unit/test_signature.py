"""Signatures group the same crash across cores, builds and pasted backtraces, and only it."""

from __future__ import annotations

import re

import pytest

from coreanalyze.base.model import CoreInfo, Frame, Report, SignalInfo, Thread
from coreanalyze.classify import classify, default_rules, signature_of
from coreanalyze.classify.names import normalize_function

SIGNATURE_FORMAT = re.compile(r"^(?P<key>.+) #(?P<hash>[0-9a-f]{10})$")


@pytest.mark.parametrize(
    "raw, normalized",
    [
        ("BadScaleOp::Compute (this=<optimized out>, ctx=<optimized out>)", "BadScaleOp::Compute"),
        ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", "tensorflow::ThreadPoolDevice::Compute"),
        ("tensorflow::(anonymous namespace)::ExecutorState<tensorflow::SimplePropagatorState>::Process(tensorflow::SimplePropagatorState::TaggedNode const&, long)", "tensorflow::ExecutorState::Process"),
        ("tensorflow::{anonymous}::ExecutorState<tensorflow::PropagatorState>::Process", "tensorflow::ExecutorState::Process"),
        ("TfLiteStatus tflite::ops::builtin::conv::Eval<(tflite::ops::builtin::conv::KernelType)2>(TfLiteContext*, TfLiteNode*)", "tflite::ops::builtin::conv::Eval"),
        ("absl::lts_20250814::log_internal::LogMessageFatal::~LogMessageFatal()", "absl::log_internal::LogMessageFatal::~LogMessageFatal"),
        ("absl::lts_20230802::log_internal::LogMessageFatal::~LogMessageFatal()", "absl::log_internal::LogMessageFatal::~LogMessageFatal"),
        ("char const* absl::lts_20250814::log_internal::MakeCheckOpString<long, long>(long, long, char const*)", "absl::log_internal::MakeCheckOpString"),
        ("tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)", "tensorflow::LRNGradOp::Compute"),
        ("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::GetNextInternal(tensorflow::data::IteratorContext*, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*, bool*)::{lambda()#1}::operator()[abi:cxx11]() const", "tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::GetNextInternal::{lambda}::operator()"),
        ("std::_Function_handler<void (), tensorflow::ThreadPoolDevice::ComputeAsync(tensorflow::AsyncOpKernel*, tensorflow::OpKernelContext*, std::function<void ()>)::$_0>::_M_invoke(std::_Any_data const&)", "tensorflow::ThreadPoolDevice::ComputeAsync::{lambda}::operator()"),
        # A std::function of a library callable stays the handler.
        ("std::_Function_handler<void (), std::_Bind<void (Foo::*(Foo*))()> >::_M_invoke(std::_Any_data const&)", "std::_Function_handler::_M_invoke"),
        ("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)", "std::basic_string::_M_create"),
        ("bool std::operator< <char>(std::string const&, std::string const&)", "std::operator<"),
        ("Foo::operator()(int) const", "Foo::operator()"),
        ("operator new(unsigned long)", "operator new"),
        ("operator delete[](void*)", "operator delete[]"),
        ("xla::cpu::IrEmitter::HandleFusion(xla::HloInstruction*) [clone .cold]", "xla::cpu::IrEmitter::HandleFusion"),
        ("compute_block.isra.0", "compute_block"),
        ("compute_block.constprop.0.cold", "compute_block"),
        ("_ZN10tensorflow6TensorD1Ev", "tensorflow::Tensor::~Tensor"),
        ("dlopen@@GLIBC_2.34", "dlopen"),
        ("main+123", "main"),
        ("<signal handler called>", "<signal handler called>"),
        ("??", ""),
        (None, ""),
    ],
)
def test_normalize_function(raw, normalized):
    assert normalize_function(raw) == normalized


@pytest.mark.parametrize(
    "raw, folded",
    [
        ("__GI_raise", "raise"),
        ("__GI_abort", "abort"),
        ("__GI___libc_free", "free"),
        ("__libc_malloc", "malloc"),
        ("__memcpy_avx_unaligned_erms", "memcpy"),
        ("__memmove_evex_unaligned_erms", "memmove"),
        ("__strlen_avx2", "strlen"),
        ("__memset_avx512_unaligned_erms", "memset"),
        ("__pthread_kill_implementation", "__pthread_kill_implementation"),
        ("tensorflow::Tensor::~Tensor", "tensorflow::Tensor::~Tensor"),
    ],
)
def test_glibc_aliases_fold(raw, folded):
    assert default_rules().fold(normalize_function(raw)) == folded


def frames(spec, *, pc_base=0x7F0000000000, module_prefix="/opt/venv/lib/python3.11/site-packages"):
    out = []
    for i, (function, module) in enumerate(spec):
        path = module.replace("{site}", module_prefix) if module else None
        out.append(Frame(index=i, pc=pc_base + 0x1000 * i + 0x2B, function=function, module=path))
    return out


TF_FW = "{site}/tensorflow/libtensorflow_framework.so.2"

# The same crash as gdb shows it for a core (mangled-then-demangled names with parameters,
# library paths, the signal handler of Python's faulthandler on top) ...
FROM_CORE = [
    ("__pthread_kill_implementation", "/lib/x86_64-linux-gnu/libc.so.6"),
    ("__GI_raise", "/lib/x86_64-linux-gnu/libc.so.6"),
    ("faulthandler_fatal_error", "/usr/bin/python3.11"),
    ("<signal handler called>", None),
    ("BadScaleOp::Compute(tensorflow::OpKernelContext*)", "/srv/ops/libbad_op.so"),
    ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
    ("tensorflow::(anonymous namespace)::ExecutorState<tensorflow::SimplePropagatorState>::Process(tensorflow::SimplePropagatorState::TaggedNode const&, long)", TF_FW),
    ("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)", TF_FW),
    ("void std::__invoke_impl<void, tsl::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}&>(std::__invoke_other, tsl::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}&)", TF_FW),
    ("tsl::(anonymous namespace)::PThread::ThreadFn(void*)", TF_FW),
    ("start_thread", "/lib/x86_64-linux-gnu/libc.so.6"),
    ("clone3", "/lib/x86_64-linux-gnu/libc.so.6"),
]
# ... and as pasted into a ticket from `bt` (gdb printing arguments, no library for frames with
# debug info, another install prefix, another absl, no handler).
FROM_PASTE = [
    ("BadScaleOp::Compute (this=<optimized out>, ctx=<optimized out>)", None),
    ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
    ("tensorflow::{anonymous}::ExecutorState<tensorflow::SimplePropagatorState>::Process(tensorflow::SimplePropagatorState::TaggedNode const&, long)", TF_FW),
    ("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)", TF_FW),
    ("tsl::(anonymous namespace)::PThread::ThreadFn(void*)", TF_FW),
    ("start_thread", None),
    ("clone3", None),
]
EXPECTED_KEY = "SIGSEGV | BadScaleOp::Compute | tensorflow::ThreadPoolDevice::Compute | tensorflow::ExecutorState::Process | Eigen::ThreadPoolTempl::WorkerLoop | tsl::PThread::ThreadFn"


def test_signature_is_readable_with_a_short_hash():
    sig = signature_of("SIGSEGV", frames(FROM_PASTE))
    m = SIGNATURE_FORMAT.match(sig)
    assert m, sig
    assert m.group("key") == EXPECTED_KEY


def test_same_crash_from_core_and_from_pasted_backtrace():
    core = signature_of("SIGSEGV", frames(FROM_CORE, pc_base=0x7F403C0B3000))
    pasted = signature_of("SIGSEGV", frames(FROM_PASTE, pc_base=0x7F1111110000, module_prefix="/usr/local/lib/python3.11/dist-packages"))
    assert core == pasted


def test_same_crash_through_classify_in_core_and_triage_reports():
    core_report = Report(
        core=CoreInfo(path="core.1", pid=55, signal=SignalInfo(number=11, name="SIGSEGV", code=-6, code_name="SI_TKILL", sender_pid=55)),
        crashing_thread=55,
        threads=[Thread(tid=55, crashed=True, frames=frames(FROM_CORE))],
    )
    triage_report = Report(
        core=CoreInfo(path="bt.txt", signal=SignalInfo(name="SIGSEGV")),
        threads=[Thread(tid=1, frames=frames(FROM_PASTE, module_prefix="/home/me/.venv/lib/python3.11/site-packages"))],
        source="triage",
    )
    assert classify(core_report).signature == classify(triage_report).signature


def build_variant(**changes):
    spec = [
        ("__GI_raise", "/lib/libc.so.6"),
        ("__GI_abort", "/lib/libc.so.6"),
        ("absl::lts_20250814::log_internal::LogMessageFatal::~LogMessageFatal()", TF_FW),
        ("tensorflow::TensorShapeBase<tensorflow::TensorShape>::dim_size(int) const", TF_FW),
        ("tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)", "{site}/tensorflow/libtensorflow_cc.so.2"),
        ("tensorflow::KernelAndDeviceOp::Run(tensorflow::ScopedStepContainer*, tensorflow::EagerKernelArgs const&)", "{site}/tensorflow/libtensorflow_cc.so.2"),
    ]
    for i, fn in changes.items():
        index = int(i[1:])
        spec[index] = (fn, spec[index][1])
    return frames(spec)


@pytest.mark.parametrize(
    "changes",
    [
        {"f0": "raise", "f1": "abort"},  # glibc with and without the __GI_ aliases
        {"f2": "absl::lts_20230802::log_internal::LogMessageFatal::~LogMessageFatal()"},  # another absl
        {"f3": "tensorflow::TensorShapeBase<tensorflow::TensorShape>::dim_size(int) const [clone .cold]"},
        {"f4": "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, Eigen::half>::Compute(tensorflow::OpKernelContext*)"},
        {"f4": "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute"},
        {"f5": "tensorflow::KernelAndDeviceOp::Run"},
    ],
)
def test_build_noise_does_not_change_the_signature(changes):
    base = signature_of("SIGABRT", build_variant())
    assert signature_of("SIGABRT", build_variant(**changes)) == base


def test_addresses_and_paths_do_not_change_the_signature():
    a = frames(FROM_PASTE, pc_base=0x7F0000000000)
    b = frames(FROM_PASTE, pc_base=0x55AA00000000, module_prefix="/nfs/envs/x/lib/python3.11/site-packages")
    for f in b:
        f.file, f.line = "/build/src/whatever.cc", 4242
    assert signature_of("SIGSEGV", a) == signature_of("SIGSEGV", b)


@pytest.mark.parametrize(
    "signal, changes",
    [
        ("SIGSEGV", {}),  # another signal
        ("SIGABRT", {"f3": "tensorflow::TensorShapeBase<tensorflow::TensorShape>::dim_size_checked(int) const"}),
        ("SIGABRT", {"f4": "tensorflow::LRNOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)"}),
        ("SIGABRT", {"f5": "tensorflow::EagerKernelExecute(tensorflow::EagerContext*)"}),
    ],
)
def test_a_different_crash_has_a_different_signature(signal, changes):
    base = signature_of("SIGABRT", build_variant())
    assert signature_of(signal, build_variant(**changes)) != base


def test_unnamed_frames_use_the_library_basename():
    f = [Frame(index=0, pc=0x7F0012345678, module="/usr/lib/libfoo.so.1"), Frame(index=1, pc=0x7F0012340000, function="foo_run", module="/usr/lib/libfoo.so.1")]
    sig = signature_of("SIGSEGV", f)
    assert sig.startswith("SIGSEGV | libfoo.so | foo_run #")
    assert "0x" not in sig
    resolved = [Frame(index=0, pc=0x7F0012345000, module="/usr/lib/libfoo.so.1.2.3"), f[1]]
    assert signature_of("SIGSEGV", resolved) == sig


def test_unnamed_frames_of_a_stripped_vendor_library_stand_for_its_entry_point():
    cuda = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    f = [Frame(index=i, pc=0x7F0012345678 + i, module=cuda) for i in range(4)]
    f.append(Frame(index=4, pc=0x7F0012340000, function="cuStreamSynchronize", module=cuda))
    sig = signature_of("SIGSEGV", f)
    assert sig.startswith("SIGSEGV | cuStreamSynchronize #")
    resolved = [Frame(index=0, pc=0x7F0012345000, module="/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05"), f[-1]]
    resolved[1].module = resolved[0].module
    assert signature_of("SIGSEGV", resolved) == sig
    # With no entry point on the stack (the driver's own thread): one key for the whole run.
    own_thread = [Frame(index=i, pc=0x7F0012345678 + i, module=cuda) for i in range(5)]
    assert signature_of("SIGSEGV", own_thread).startswith("SIGSEGV | libcuda.so #")


def test_python_only_signature_uses_file_basenames_and_functions():
    f = [
        Frame(index=0, kind="python", function="invoke", file="/opt/venv/lib/python3.11/site-packages/tensorflow/lite/python/interpreter.py", line=941),
        Frame(index=1, kind="python", function="detect", file="/srv/detector/infer.py", line=58),
    ]
    other_install = [Frame(index=i, kind="python", function=x.function, file=x.file.replace("/opt/venv", "/usr/local"), line=x.line + 3) for i, x in enumerate(f)]
    sig = signature_of("SIGSEGV", f)
    assert sig.startswith("SIGSEGV | interpreter.py:invoke | infer.py:detect #")
    assert signature_of("SIGSEGV", other_install) == sig


def test_no_frames():
    assert signature_of(None, []).startswith("crash | no frames #")
