"""The classifier on frame lists from real TensorFlow crash reports (tests/data/traces and the
shapes of real TF 2.x / XLA / CUDA stacks), plus its rules file handling.

The frames are built here from the sample reports' text (the text parser has its own tests);
what is under test is category, fault kind, culprit, op, suspect, summary and advice.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.paths import DATA, REPO

from coreanalyze.base.errors import BadInput
from coreanalyze.base.model import FAULT_KINDS, CoreInfo, Frame, Module, Report, SignalInfo, Thread
from coreanalyze.classify import classify, fault_kind, load_rules
from coreanalyze.classify.rules import default_rules
from coreanalyze.triage.parse import triage_text

SITE = "/opt/venv/lib/python3.11/site-packages"
TF_FW = f"{SITE}/tensorflow/libtensorflow_framework.so.2"
TF_FW_PLATFORM = f"{SITE}/tensorflow/python/platform/../../libtensorflow_framework.so.2"
TF_CC = f"{SITE}/tensorflow/libtensorflow_cc.so.2"
TF_PYWRAP = f"{SITE}/tensorflow/python/lib_pywrap_tensorflow_common.so"
TFE = f"{SITE}/tensorflow/python/_pywrap_tfe.so"
TFLITE = f"{SITE}/tensorflow/lite/python/libpywrap_tflite_common.so"
TFLITE_WRAPPER = f"{SITE}/tensorflow/lite/python/_pywrap_tensorflow_interpreter_wrapper.so"
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
PYTHON = "/usr/bin/python3.11"
LIBCUDA = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
LIBCUDNN = f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8"
NUMPY = f"{SITE}/numpy/_core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"
CTYPES = "/usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so"
CUSTOM_OP = "/home/dev/ops/libbad_op.so"


def native(spec: list[tuple]) -> list[Frame]:
    """Frames from (function, module[, file, line]) tuples, innermost first."""
    frames = []
    for i, item in enumerate(spec):
        function, module, *rest = item
        file = rest[0] if rest else None
        line = rest[1] if len(rest) > 1 else None
        frames.append(Frame(index=i, kind="native", pc=0x7F0000001000 + 0x40 * i, function=function, module=module, file=file, line=line))
    return frames


def report(frames: list[Frame], signal: SignalInfo | None = None, *, pid: int | None = None, modules: list[Module] | None = None, source: str = "core", registers=None, fault_instruction=None) -> Report:
    core = CoreInfo(path="core.1", pid=pid, signal=signal or SignalInfo()) if (signal is not None or pid is not None) else None
    thread = Thread(tid=pid or 1, crashed=True, frames=frames, registers=registers or {})
    return Report(core=core, crashing_thread=thread.tid, threads=[thread], modules=modules or [], source=source, fault_instruction=fault_instruction)


SEGV = SignalInfo(number=11, name="SIGSEGV")


# ---------------------------------------------------------------------------------------------
# The four sample reports of tests/data/traces
# ---------------------------------------------------------------------------------------------

# custom_op_compute_segv.txt
CUSTOM_OP_FRAMES = [
    ("BadScaleOp::Compute (this=<optimized out>, ctx=<optimized out>)", None, "bad_op.cc", 14),
    ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW_PLATFORM),
    ("tensorflow::(anonymous namespace)::ExecutorState<tensorflow::SimplePropagatorState>::Process(tensorflow::SimplePropagatorState::TaggedNode const&, long)", TF_FW_PLATFORM),
    ("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)", TF_FW_PLATFORM),
    ("void std::__invoke_impl<void, tsl::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}&>(std::__invoke_other, tsl::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}&)", TF_FW_PLATFORM),
    ("tsl::(anonymous namespace)::PThread::ThreadFn(void*)", TF_FW_PLATFORM),
    ("start_thread", None, "./nptl/pthread_create.c", 442),
    ("clone3", None, "../sysdeps/unix/sysv/linux/x86_64/clone3.S", 81),
]

# heap_abort_tf_dealloc.txt
HEAP_ABORT_FRAMES = [
    ("__pthread_kill_implementation", None, "./nptl/pthread_kill.c", 44),
    ("__pthread_kill_internal", None, "./nptl/pthread_kill.c", 78),
    ("__GI_raise", None, "../sysdeps/posix/raise.c", 26),
    ("__GI_abort", None, "./stdlib/abort.c", 79),
    ("__libc_message", None, "../sysdeps/posix/libc_fatal.c", 156),
    ("malloc_printerr", None, "./malloc/malloc.c", 5660),
    ("_int_free", None, "./malloc/malloc.c", 4590),
    ("__GI___libc_free", None, "./malloc/malloc.c", 3391),
    ("tsl::port::AlignedFree(void*)", TF_FW),
    ("tensorflow::(anonymous namespace)::CPUAllocator::DeallocateRaw(void*)", TF_FW),
    ("tensorflow::TensorBuffer::~TensorBuffer()", TF_FW),
    ("tensorflow::Tensor::~Tensor()", TF_FW),
]

# saved_model_serialize_segv.txt
SAVED_MODEL_FRAMES = [
    ("google::protobuf::internal::WireFormatLite::InternalWriteMessage(int, google::protobuf::MessageLite const&, int, unsigned char*, google::protobuf::io::EpsCopyOutputStream*)", TF_FW),
    ("tensorflow::GraphDef::_InternalSerialize(unsigned char*, google::protobuf::io::EpsCopyOutputStream*) const", TF_FW),
    ("google::protobuf::MessageLite::SerializePartialToZeroCopyStream(google::protobuf::io::ZeroCopyOutputStream*) const", TF_FW),
    ("google::protobuf::MessageLite::SerializeToString(std::string*) const", TF_FW),
    ("tensorflow::WriteBinaryProto(tsl::Env*, std::string const&, google::protobuf::MessageLite const&)", TF_FW),
]


def test_custom_op_compute_segv_pasted_gdb_backtrace():
    r = report(native(CUSTOM_OP_FRAMES), SignalInfo(name="SIGSEGV"), source="triage")
    c = classify(r)
    assert c.category == "kernel-compute"
    assert c.culprit.function == "BadScaleOp::Compute" and c.culprit.frame_index == 0
    assert c.op == "BadScaleOp"
    assert c.suspect is None  # the culprit is the custom op itself
    assert c.fault_kind == "invalid-access"  # SIGSEGV, but the text has no fault address to call it null
    assert "custom op BadScaleOp::Compute (bad_op.cc)" in c.summary
    assert "ThreadPoolDevice::Compute" in c.summary
    assert any("custom-op code" in e for e in c.evidence)
    assert any("allocate_output" in a for a in c.advice)


def test_custom_op_compute_segv_from_a_core_names_library_and_address():
    frames = native(CUSTOM_OP_FRAMES)
    frames[0].module = CUSTOM_OP
    sig = SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x0)
    modules = [Module(path=TF_FW, start=0x7F4000000000, end=0x7F4010000000), Module(path=CUSTOM_OP, start=0x7F4020000000, end=0x7F4020100000)]
    c = classify(report(frames, sig, pid=4242, modules=modules))
    assert (c.category, c.fault_kind) == ("kernel-compute", "null-deref")
    assert c.summary == "SIGSEGV null-deref at 0x0 in custom op BadScaleOp::Compute (libbad_op.so), called by TensorFlow's ThreadPoolDevice::Compute."
    assert c.culprit.module == CUSTOM_OP
    assert any(CUSTOM_OP in a for a in c.advice)
    assert c.confidence == "high"


def test_custom_op_below_a_tensorflow_frame_is_the_suspect():
    frames = native(
        [
            ("__memmove_avx_unaligned_erms", LIBC),
            ("tensorflow::Tensor::CopyFromInternal(tensorflow::Tensor const&, tensorflow::TensorShape const&)", TF_FW),
            ("ScatterRowsOp::Compute(tensorflow::OpKernelContext*)", CUSTOM_OP),
            ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
            ("tensorflow::(anonymous namespace)::ExecutorState<tensorflow::PropagatorState>::Process(tensorflow::PropagatorState::TaggedNode const&, long)", TF_FW),
        ]
    )
    sig = SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x7F3A00000000)
    c = classify(report(frames, sig, pid=7))
    assert c.culprit.function == "tensorflow::Tensor::CopyFromInternal"
    assert c.suspect is not None and c.suspect.function == "ScatterRowsOp::Compute" and c.suspect.module == CUSTOM_OP
    assert c.category == "kernel-compute" and c.op == "ScatterRowsOp"
    assert c.fault_kind == "invalid-access"
    assert "called from custom op ScatterRowsOp::Compute (libbad_op.so)" in c.summary


def test_heap_abort_in_tensor_deallocation():
    r = report(native(HEAP_ABORT_FRAMES), SignalInfo(name="SIGABRT"), source="triage")
    c = classify(r, abort_message="free(): invalid next size (normal)")
    assert (c.category, c.fault_kind) == ("allocator", "heap-corruption")
    assert c.culprit.function == "tsl::port::AlignedFree" and c.culprit.frame_index == 8
    assert any("malloc_printerr" in e for e in c.evidence)
    assert any("MALLOC_CHECK_=3" in a for a in c.advice)
    assert any("earlier" in a for a in c.advice)
    assert "free(): invalid next size (normal)" in c.summary


def test_heap_abort_without_the_message_still_reads_the_allocator_frames():
    c = classify(report(native(HEAP_ABORT_FRAMES), SignalInfo(number=6, name="SIGABRT", code=-6, code_name="SI_TKILL", sender_pid=90412), pid=90412))
    assert (c.category, c.fault_kind) == ("allocator", "heap-corruption")


def test_heap_abort_lists_custom_op_libraries_loaded_in_the_process():
    modules = [Module(path=TF_FW), Module(path=TF_CC), Module(path=LIBC), Module(path=CUSTOM_OP), Module(path=NUMPY)]
    c = classify(report(native(HEAP_ABORT_FRAMES), SignalInfo(name="SIGABRT"), modules=modules), abort_message="double free or corruption (out)")
    assert c.fault_kind == "heap-corruption"
    assert any(CUSTOM_OP in a for a in c.advice)
    assert not any(NUMPY in a for a in c.advice)


def test_saved_model_serialization_segv():
    c = classify(report(native(SAVED_MODEL_FRAMES), SignalInfo(name="SIGSEGV"), source="triage"))
    assert c.category == "protobuf-serialization"
    assert c.culprit.function == "google::protobuf::internal::WireFormatLite::InternalWriteMessage"
    assert c.op is None


def test_tflite_invoke_faulthandler_dump_has_only_python_frames():
    frames = [
        Frame(index=0, kind="python", function="invoke", file=f"{SITE}/tensorflow/lite/python/interpreter.py", line=941),
        Frame(index=1, kind="python", function="detect", file="/srv/detector/infer.py", line=58),
        Frame(index=2, kind="python", function="<module>", file="/srv/detector/infer.py", line=91),
    ]
    c = classify(report(frames, SignalInfo(name="SIGSEGV"), source="triage"))
    assert c.category == "interpreter-invoke"
    assert c.culprit.function == "invoke" and c.culprit.module.endswith("interpreter.py")
    assert "no native frames" in c.summary
    assert c.confidence == "medium"


# ---------------------------------------------------------------------------------------------
# Real TensorFlow stacks by category
# ---------------------------------------------------------------------------------------------

# The crashing thread of a real core: tf.raw_ops.LRNGrad with a 1-D output_image (TF 2.21).
LRN_GRAD_CHECK = [
    ("__pthread_kill_implementation", LIBC),
    ("__pthread_kill_internal", LIBC),
    ("__GI_raise", LIBC),
    ("__GI_abort", LIBC),
    ("absl::lts_20250814::log_internal::LogMessage::FailWithoutStackTrace()", TF_FW),
    ("absl::lts_20250814::log_internal::LogMessage::SendToLog()", TF_FW),
    ("absl::lts_20250814::log_internal::LogMessage::Flush()", TF_FW),
    ("tensorflow::TensorShapeBase<tensorflow::TensorShape>::dim_size(int) const", TF_FW),
    ("tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)", TF_CC),
    ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
    ("tensorflow::(anonymous namespace)::SingleThreadedExecutorImpl::Run(tensorflow::Executor::Args const&)", TF_FW),
    ("tensorflow::FunctionLibraryRuntimeImpl::RunSync(tensorflow::FunctionLibraryRuntime::Options, unsigned long, absl::lts_20250814::Span<tensorflow::Tensor const>, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*)", TF_FW),
    ("tensorflow::ProcessFunctionLibraryRuntime::RunSync(tensorflow::FunctionLibraryRuntime::Options const&, unsigned long, absl::lts_20250814::Span<tensorflow::Tensor const>, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*) const", TF_FW),
    ("tensorflow::KernelAndDeviceFunc::Run(tensorflow::ScopedStepContainer*, tensorflow::EagerKernelArgs const&, std::vector<std::variant<tensorflow::Tensor, tensorflow::TensorShape>, std::allocator<std::variant<tensorflow::Tensor, tensorflow::TensorShape> > >*, tsl::CancellationManager*, std::optional<tensorflow::EagerFunctionParams> const&, std::optional<tensorflow::ManagedStackTrace> const&, tsl::CoordinationServiceAgent*)", TF_CC),
    ("tensorflow::EagerKernelExecute(tensorflow::EagerContext*, absl::lts_20250814::InlinedVector<tensorflow::TensorHandle*, 4ul, std::allocator<tensorflow::TensorHandle*> > const&, std::optional<tensorflow::EagerFunctionParams> const&, tsl::core::RefCountPtr<tensorflow::KernelAndDevice> const&, tensorflow::GraphCollector*, tsl::CancellationManager*, absl::lts_20250814::Span<tensorflow::TensorHandle*>, std::optional<tensorflow::ManagedStackTrace> const&)", TF_CC),
    ("tensorflow::ExecuteNode::Run()", TF_CC),
    ("tensorflow::EagerExecutor::SyncExecute(tensorflow::EagerNode*)", TF_CC),
    ("tensorflow::(anonymous namespace)::EagerLocalExecute(tensorflow::EagerOperation*, tensorflow::TensorHandle**, int*)", TF_CC),
    ("tensorflow::DoEagerExecute(tensorflow::EagerOperation*, tensorflow::TensorHandle**, int*)", TF_CC),
    ("tensorflow::EagerExecute(tensorflow::EagerOperation*, tensorflow::TensorHandle**, int*)", TF_CC),
    ("TFE_Execute", TF_CC),
    ("TFE_Py_ExecuteCancelable(TFE_Context*, char const*, char const*, absl::lts_20250814::InlinedVector<TFE_TensorHandle*, 4ul, std::allocator<TFE_TensorHandle*> >*, _object*, TFE_CancellationManager*, absl::lts_20250814::InlinedVector<TFE_TensorHandle*, 2ul, std::allocator<TFE_TensorHandle*> >*, TSL_Status*)", TF_PYWRAP),
    ("pybind11::cpp_function::dispatcher(_object*, _object*, _object*)", TFE),
    ("cfunction_call", PYTHON),
    ("_PyObject_MakeTpCall", PYTHON),
]
LRN_MESSAGE = "F0000 00:00:1795647935.282994   14831 tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)"


def test_lrn_grad_check_failure_names_the_kernel():
    sig = SignalInfo(number=6, name="SIGABRT", code=-6, code_name="SI_TKILL", sender_pid=31337)
    c = classify(report(native(LRN_GRAD_CHECK), sig, pid=31337), abort_message=LRN_MESSAGE)
    assert (c.category, c.fault_kind) == ("kernel-compute", "check-failure")
    assert c.op == "LRNGradOp"
    # The CHECK fired inside a checked accessor on the kernel's bad index: the kernel is blamed.
    assert c.culprit.function == "tensorflow::LRNGradOp<Eigen::ThreadPoolDevice, float>::Compute"
    assert c.summary == (
        "SIGABRT check failure (Check failed: d < dims() (1 vs. 1) (tensor_shape.cc:362)) in LRNGradOp::Compute"
        " (libtensorflow_cc.so.2), called by ThreadPoolDevice::Compute."
    )
    assert any("LRNGradOp" in a for a in c.advice)
    assert c.abort_message == LRN_MESSAGE
    assert c.confidence == "high"


def test_check_failure_is_known_from_the_logging_frames_without_the_message():
    sig = SignalInfo(number=6, name="SIGABRT", code=-6, code_name="SI_TKILL", sender_pid=31337)
    c = classify(report(native(LRN_GRAD_CHECK), sig, pid=31337))
    assert c.fault_kind == "check-failure"
    assert any("fatal logging" in e for e in c.evidence)


def test_tflite_builtin_op_in_native_frames():
    frames = native(
        [
            ("void tflite::optimized_ops::Conv(tflite::ConvParams const&, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float*, tflite::RuntimeShape const&, float*, tflite::CpuBackendContext*)", TFLITE),
            ("TfLiteStatus tflite::ops::builtin::conv::EvalImpl<(tflite::ops::builtin::conv::KernelType)2, (TfLiteType)1>(TfLiteContext*, TfLiteNode*)", TFLITE),
            ("TfLiteStatus tflite::ops::builtin::conv::Eval<(tflite::ops::builtin::conv::KernelType)2>(TfLiteContext*, TfLiteNode*)", TFLITE),
            ("tflite::Subgraph::InvokeImpl()", TFLITE),
            ("tflite::Subgraph::Invoke()", TFLITE),
            ("tflite::impl::Interpreter::Invoke()", TFLITE),
            ("tflite::interpreter_wrapper::InterpreterWrapper::Invoke(int)", TFLITE_WRAPPER),
            ("pybind11::cpp_function::dispatcher(_object*, _object*, _object*)", TFLITE_WRAPPER),
            ("_PyEval_EvalFrameDefault", PYTHON),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F12DEAD0000), pid=5))
    assert (c.category, c.fault_kind) == ("interpreter-invoke", "invalid-access")
    assert c.op == "conv"
    assert c.culprit.function == "tflite::optimized_ops::Conv"
    assert "TFLite builtin op conv" in c.summary


def test_gpu_driver_crash_in_libcuda():
    frames = native(
        [
            ("??", LIBCUDA),
            ("??", LIBCUDA),
            ("cuStreamSynchronize", LIBCUDA),
            ("stream_executor::gpu::GpuDriver::SynchronizeStream(stream_executor::gpu::GpuContext*, CUstream_st*)", TF_FW),
            ("stream_executor::gpu::GpuExecutor::BlockHostUntilDone(stream_executor::Stream*)", TF_FW),
            ("stream_executor::Stream::BlockHostUntilDone()", TF_FW),
            ("tensorflow::GPUUtil::SyncAll(tensorflow::Device*)", TF_FW),
            ("tensorflow::BaseGPUDevice::Sync()", TF_FW),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x18), pid=9))
    assert (c.category, c.fault_kind) == ("gpu-driver", "null-deref")
    assert c.culprit.module == LIBCUDA and c.culprit.function is None
    assert "libcuda.so.1" in c.summary
    assert any("nvidia-smi" in a for a in c.advice)


def test_gpu_driver_crash_in_cudnn_under_a_conv_kernel():
    frames = native(
        [
            ("cudnnConvolutionForward", LIBCUDNN),
            ("stream_executor::gpu::CudnnSupport::DoConvolve(stream_executor::dnn::ConvolutionKind, stream_executor::dnn::DataType, stream_executor::dnn::DataType, stream_executor::Stream*, stream_executor::dnn::BatchDescriptor const&, stream_executor::DeviceMemoryBase, stream_executor::dnn::FilterDescriptor const&, stream_executor::DeviceMemoryBase, stream_executor::dnn::BatchDescriptor const&, stream_executor::DeviceMemoryBase, stream_executor::dnn::ConvolutionDescriptor const&, stream_executor::dnn::AlgorithmDesc, stream_executor::DeviceMemory<unsigned char>, stream_executor::dnn::ProfileResult*)", TF_FW),
            ("tensorflow::LaunchConvOp<Eigen::GpuDevice, float>::operator()(tensorflow::OpKernelContext*, bool, tensorflow::Tensor const&, tensorflow::Tensor const&, absl::lts_20250814::Span<long const>, absl::lts_20250814::Span<long const>, tensorflow::Padding, std::vector<long, std::allocator<long> > const&, tensorflow::TensorFormat, tensorflow::Tensor*)", TF_CC),
            ("tensorflow::Conv2DOp<Eigen::GpuDevice, float>::Compute(tensorflow::OpKernelContext*)", TF_CC),
            ("tensorflow::BaseGPUDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F0012345678), pid=9))
    assert c.category == "gpu-driver"
    assert c.op == "Conv2DOp"
    assert c.suspect is None  # cuDNN is a known library, not a custom op


def test_xla_compilation_crash_in_llvm():
    frames = native(
        [
            ("llvm::X86TargetLowering::LowerOperation(llvm::SDValue, llvm::SelectionDAG&) const", TF_CC),
            ("(anonymous namespace)::SelectionDAGLegalize::LegalizeOp(llvm::SDNode*)", TF_CC),
            ("llvm::SelectionDAG::Legalize()", TF_CC),
            ("llvm::SelectionDAGISel::CodeGenAndEmitDAG()", TF_CC),
            ("llvm::legacy::PassManagerImpl::run(llvm::Module&)", TF_CC),
            ("xla::cpu::CompilerFunctor::operator()(llvm::Module&)", TF_CC),
            ("xla::cpu::CpuCompiler::RunBackend(std::unique_ptr<xla::HloModule, std::default_delete<xla::HloModule> >, stream_executor::StreamExecutor*, xla::Compiler::CompileOptions const&)", TF_CC),
            ("xla::LocalService::CompileExecutables(xla::XlaComputation const&, absl::lts_20250814::Span<xla::Shape const* const>, xla::ExecutableBuildOptions const&)", TF_CC),
            ("tensorflow::XlaDeviceCompilerClient::BuildExecutable(tensorflow::XlaCompiler::Options const&, tensorflow::XlaCompilationResult const&)", TF_CC),
            ("tensorflow::XlaLocalLaunchBase::ComputeAsync(tensorflow::OpKernelContext*, std::function<void ()>)", TF_CC),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x8), pid=3))
    assert (c.category, c.fault_kind) == ("xla", "null-deref")
    assert c.culprit.function == "llvm::X86TargetLowering::LowerOperation"
    assert any("jit_compile=False" in a for a in c.advice)


def test_tf_data_iterator_crash():
    frames = native(
        [
            ("__memmove_avx_unaligned_erms", LIBC),
            ("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::CallCompleted(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&)", TF_CC),
            ("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::CallFunction(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&)::{lambda(absl::lts_20250814::Status)#1}::operator()(absl::lts_20250814::Status)", TF_CC),
            ("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::RunnerThread(std::shared_ptr<tensorflow::data::IteratorContext> const&)", TF_CC),
            ("std::_Function_handler<void (), tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::EnsureThreadsStarted(tensorflow::data::IteratorContext*)::{lambda()#1}>::_M_invoke(std::_Any_data const&)", TF_CC),
            ("tsl::(anonymous namespace)::PThread::ThreadFn(void*)", TF_FW),
            ("start_thread", LIBC),
            ("clone3", LIBC),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x55D0DEADBEEF), pid=3))
    assert c.category == "tf-data"
    assert c.culprit.function == "tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::CallCompleted"
    assert any("enable_debug_mode" in a for a in c.advice)


def test_kernel_inside_a_tf_data_function_is_kernel_compute():
    frames = native(
        [
            ("Eigen::internal::EvalRange<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16>, Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_sum_op<float, float>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16> const, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16> const> const> const, Eigen::DefaultDevice>, long, true>::run(Eigen::TensorEvaluator<...>*, long, long)", TF_CC),
            ("tensorflow::BinaryOp<Eigen::ThreadPoolDevice, tensorflow::functor::add<float> >::Compute(tensorflow::OpKernelContext*)", TF_CC),
            ("tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*)", TF_FW),
            ("tensorflow::data::InstantiatedCapturedFunction::RunAsync(tensorflow::data::IteratorContext*, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >&&, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*, std::function<void (absl::lts_20250814::Status const&)>, std::string const&)", TF_CC),
            ("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::CallFunction(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&)", TF_CC),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F00BAD00000), pid=3))
    assert c.category == "kernel-compute"
    assert c.op == "BinaryOp"


def test_numpy_interop_tensor_to_ndarray():
    frames = native(
        [
            ("__memmove_avx_unaligned_erms", LIBC),
            ("tensorflow::TF_TensorToPyArray(std::unique_ptr<TF_Tensor, tensorflow::detail::TFTensorDeleter>, _object**)", TF_PYWRAP),
            ("tensorflow::TensorToNdarray(tensorflow::Tensor const&, _object**)", TF_PYWRAP),
            ("TFE_TensorHandleToNumpy(TFE_TensorHandle*, TF_Status*)", TF_PYWRAP),
            ("EagerTensor_numpy_internal(EagerTensor*)", TFE),
            ("cfunction_call", PYTHON),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F0000000000), pid=3))
    assert c.category == "numpy-interop"
    assert c.culprit.function == "tensorflow::TF_TensorToPyArray"


def test_numpy_interop_inside_numpy():
    frames = native(
        [
            ("PyArray_NewFromDescr_int", NUMPY),
            ("PyArray_NewFromDescrAndBase", NUMPY),
            ("tensorflow::TF_TensorToMaybeAliasedPyArray(std::unique_ptr<TF_Tensor, tensorflow::detail::TFTensorDeleter>, _object**)", TF_PYWRAP),
        ]
    )
    c = classify(report(frames, SEGV))
    assert c.category == "numpy-interop"
    assert c.suspect is None  # numpy is a known extension, not a custom op


def test_static_initializer_of_an_op_library_is_library_load():
    lib = "/srv/ops/libzero_out.so"
    frames = native(
        [
            ("??", lib),
            ("_GLOBAL__sub_I_zero_out.cc", lib),
            ("call_init", None, "./elf/dl-init.c", 70),
            ("_dl_init", None, "./elf/dl-init.c", 121),
            ("__GI__dl_catch_exception", LIBC),
            ("dl_open_worker", None, "./elf/dl-open.c", 808),
            ("_dl_open", None, "./elf/dl-open.c", 884),
            ("dlopen_doit", None, "./dlfcn/dlopen.c", 56),
            ("_dlerror_run", LIBC),
            ("dlopen@@GLIBC_2.34", LIBC),
            ("tsl::internal::LoadDynamicLibrary(char const*, void**)", TF_FW),
            ("tensorflow::LoadDynamicLibrary(char const*, void**, void const**, unsigned long*)", TF_FW),
            ("TF_LoadLibrary", TF_FW),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x0), pid=3))
    assert c.category == "library-load"
    assert c.culprit.module == lib
    assert c.suspect is None


def test_python_runtime_ctypes_crash():
    frames = native(
        [
            ("__memmove_avx_unaligned_erms", LIBC),
            ("string_at", CTYPES),
            ("ffi_call_unix64", "/lib/x86_64-linux-gnu/libffi.so.8"),
            ("ffi_call_int", "/lib/x86_64-linux-gnu/libffi.so.8"),
            ("_call_function_pointer", CTYPES),
            ("_ctypes_callproc", CTYPES),
            ("PyCFuncPtr_call", CTYPES),
            ("_PyObject_MakeTpCall", PYTHON),
            ("_PyEval_EvalFrameDefault", PYTHON),
        ]
    )
    frames.append(Frame(index=9, kind="python", function="read_config", file="/srv/app/ctypes_crash.py", line=6))
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x10), pid=3))
    assert (c.category, c.fault_kind) == ("python-runtime", "null-deref")
    assert c.culprit.function == "string_at"


def test_tf_runtime_tensor_destructor():
    frames = native(
        [
            ("tensorflow::TensorBuffer::~TensorBuffer()", TF_FW),
            ("tensorflow::Tensor::~Tensor()", TF_FW),
            ("tensorflow::(anonymous namespace)::ExecutorState<tensorflow::PropagatorState>::Process(tensorflow::PropagatorState::TaggedNode const&, long)", TF_FW),
            ("Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int)", TF_FW),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F0000000010), pid=3))
    assert c.category == "tf-runtime"
    assert c.suspect is None


def test_unknown_code_gives_unknown_with_low_confidence():
    frames = native([("??", "/srv/bin/mystery"), ("??", "/srv/bin/mystery")])
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x123456789), pid=3))
    assert c.category == "unknown" and c.confidence == "low"
    assert c.evidence and c.advice


@pytest.mark.parametrize(
    "function, module, category",
    [
        # allocators, in both spellings
        ("tensorflow::BFCAllocator::AllocateRawInternal(unsigned long, unsigned long, bool, unsigned long)", TF_FW, "allocator"),
        ("tsl::BFCAllocator::DeallocateRawInternal(void*)", TF_FW, "allocator"),
        ("tsl::port::AlignedMalloc(unsigned long, int)", TF_FW, "allocator"),
        ("tcmalloc::ThreadCache::ReleaseToCentralCache(tcmalloc::ThreadCache::FreeList*, unsigned int, int)", "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4", "allocator"),
        # kernels
        ("tensorflow::MatMulOp<Eigen::ThreadPoolDevice, float, true>::Compute(tensorflow::OpKernelContext*)", TF_CC, "kernel-compute"),
        ("tensorflow::functor::ReduceFunctorBase<Eigen::ThreadPoolDevice, Eigen::internal::SumReducer<float> >::Reduce<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16>, Eigen::TensorMap<Eigen::Tensor<float const, 2, 1, long>, 16>, Eigen::array<long, 1ul>, Eigen::internal::SumReducer<float> >(tensorflow::OpKernelContext*, Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16>, Eigen::TensorMap<Eigen::Tensor<float const, 2, 1, long>, 16>, Eigen::array<long, 1ul> const&, Eigen::internal::SumReducer<float> const&)", TF_CC, "kernel-compute"),
        ("dnnl::impl::cpu::x64::jit_avx512_common_convolution_fwd_t::execute_forward_2d(dnnl::impl::exec_ctx_t const&) const", TF_CC, "kernel-compute"),
        ("??", TF_CC, "kernel-compute"),
        # TFLite, old and new names and libraries
        ("tflite::impl::Interpreter::AllocateTensors()", TFLITE, "interpreter-invoke"),
        ("tflite::Subgraph::PrepareOpsAndTensors()", TFLITE, "interpreter-invoke"),
        ("tflite::ArenaPlanner::ExecuteAllocations(int, int)", TFLITE, "interpreter-invoke"),
        ("tflite::xnnpack::(anonymous namespace)::Subgraph::Invoke(TfLiteContext*)", TFLITE, "interpreter-invoke"),
        ("xnn_run_operator", TFLITE, "interpreter-invoke"),
        ("litert::internal::InterpreterWrapper::Invoke()", "/opt/venv/lib/python3.11/site-packages/ai_edge_litert/_pywrap_litert_interpreter_wrapper.so", "interpreter-invoke"),
        ("??", TFLITE_WRAPPER, "interpreter-invoke"),
        # protobuf
        ("upb_Decode", f"{SITE}/google/_upb/_message.abi3.so", "protobuf-serialization"),
        ("grpc::ProtoBufferWriter::Next(void**, int*)", TF_FW, "protobuf-serialization"),
        ("tensorflow::BundleWriter::Add(std::basic_string_view<char, std::char_traits<char> >, tensorflow::Tensor const&)", TF_FW, "protobuf-serialization"),
        # GPU
        ("cublasLtMatmul", f"{SITE}/nvidia/cublas/lib/libcublasLt.so.12", "gpu-driver"),
        ("stream_executor::gpu::GpuCommandBuffer::Submit(stream_executor::Stream*)", TF_FW, "gpu-driver"),
        # XLA / MLIR
        ("mlir::PassManager::run(mlir::Operation*)", TF_CC, "xla"),
        ("xla::HloInstruction::CreateFusion(xla::Shape const&, xla::HloInstruction::FusionKind, xla::HloInstruction*, std::basic_string_view<char, std::char_traits<char> >)", TF_CC, "xla"),
        ("__xla_cpu_runtime_EigenMatMulF32", TF_CC, "xla"),
        ("tensorflow::XlaLaunchOp::Compute(tensorflow::OpKernelContext*)", TF_CC, "xla"),
        # tf.data
        ("tensorflow::data::IteratorGetNextOp::DoCompute(tensorflow::OpKernelContext*)", TF_CC, "tf-data"),
        # runtime
        ("tensorflow::EagerExecute(tensorflow::EagerOperation*, tensorflow::TensorHandle**, int*)", TF_CC, "tf-runtime"),
        ("tensorflow::DirectSession::Run(tensorflow::RunOptions const&, std::vector<std::pair<std::string, tensorflow::Tensor>, std::allocator<std::pair<std::string, tensorflow::Tensor> > > const&)", TF_FW, "tf-runtime"),
        ("tsl::thread::ThreadPool::Schedule(std::function<void ()>)", TF_FW, "tf-runtime"),
        ("TF_SessionRun", TF_FW, "tf-runtime"),
        ("??", TF_FW, "tf-runtime"),
        # numpy
        ("PyArray_FromAny", NUMPY, "numpy-interop"),
        # library loading
        ("_dl_relocate_object", "/lib64/ld-linux-x86-64.so.2", "library-load"),
        ("tensorflow::kernel_factory::OpKernelRegistrar::InitInternal(tensorflow::KernelDef const*, std::basic_string_view<char, std::char_traits<char> >, std::unique_ptr<tensorflow::kernel_factory::OpKernelFactory, std::default_delete<tensorflow::kernel_factory::OpKernelFactory> >)", TF_FW, "library-load"),
        # CPython
        ("subtype_dealloc", PYTHON, "python-runtime"),
        ("_PyEval_EvalFrameDefault", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "python-runtime"),
        ("ffi_call_unix64", "/lib/x86_64-linux-gnu/libffi.so.8", "python-runtime"),
    ],
)
def test_rule_table(function, module, category):
    c = classify(report(native([(function, module)]), SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7F0000DEAD00), pid=2))
    assert c.category == category, c.evidence


# ---------------------------------------------------------------------------------------------
# Fault kinds
# ---------------------------------------------------------------------------------------------


def test_sent_signal_names_the_sender():
    frames = native([("pause", LIBC), ("wait_forever", "/srv/bin/waiter"), ("main", "/srv/bin/waiter")])
    sig = SignalInfo(number=11, name="SIGSEGV", code=0, code_name="SI_USER", sender_pid=4242)
    c = classify(report(frames, sig, pid=100))
    assert c.fault_kind == "sent-signal"
    assert "pid 4242" in c.summary
    assert any("4242" in a for a in c.advice)


def test_abort_raised_by_the_process_itself_is_not_a_sent_signal():
    frames = native([("__pthread_kill_implementation", LIBC), ("raise", LIBC), ("abort", LIBC), ("__assert_fail_base", LIBC), ("__assert_fail", LIBC), ("check_invariant", "/srv/bin/a"), ("main", "/srv/bin/a")])
    sig = SignalInfo(number=6, name="SIGABRT", code=-6, code_name="SI_TKILL", sender_pid=100)
    c = classify(report(frames, sig, pid=100))
    assert c.fault_kind == "abort"
    assert c.culprit.function == "check_invariant"


def test_fault_reraised_by_faulthandler_is_read_below_the_handler():
    frames = native(
        [
            ("__pthread_kill_implementation", LIBC),
            ("raise", LIBC),
            ("faulthandler_fatal_error", PYTHON),
            ("<signal handler called>", None),
            *CUSTOM_OP_FRAMES,
        ]
    )
    sig = SignalInfo(number=11, name="SIGSEGV", code=-6, code_name="SI_TKILL", sender_pid=55)
    c = classify(report(frames, sig, pid=55))
    assert c.culprit.function == "BadScaleOp::Compute"
    assert c.category == "kernel-compute"
    assert c.fault_kind != "sent-signal"
    assert any("re-raised" in e for e in c.evidence)


def test_chained_handlers_are_skipped_down_to_the_interrupted_code():
    # A handler that chains to the one it replaced (faulthandler does) re-raises into it.
    frames = native(
        [
            ("__pthread_kill_implementation", LIBC),
            ("raise", LIBC),
            ("crash_reporter_handler", "/srv/bin/app"),
            ("<signal handler called>", None),
            ("raise", LIBC),
            ("faulthandler_fatal_error", PYTHON),
            ("<signal handler called>", None),
            *CUSTOM_OP_FRAMES,
        ]
    )
    sig = SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x10, reraised_by="faulthandler")
    c = classify(report(frames, sig, pid=55))
    assert c.culprit.function == "BadScaleOp::Compute"
    assert c.fault_kind == "null-deref"
    assert "caught by faulthandler" in c.evidence[0]


def test_handler_that_crashed_under_another_handler_is_the_culprit():
    # Below the first trampoline, a handler's own code without a re-raise: it crashed there.
    frames = native(
        [
            ("raise", LIBC),
            ("faulthandler_fatal_error", PYTHON),
            ("<signal handler called>", None),
            ("parse_config_on_sigusr1", "/srv/bin/app"),
            ("<signal handler called>", None),
            ("main", "/srv/bin/app"),
        ]
    )
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x10), pid=55))
    assert c.culprit.function == "parse_config_on_sigusr1"


@pytest.mark.parametrize(
    "signal, registers, frames, kind",
    [
        (SignalInfo(number=11, name="SIGSEGV", code=1, address=0x10), {}, [], "null-deref"),
        (SignalInfo(number=11, name="SIGSEGV", code=1, address=0xDEAD0000BEEF), {}, [], "invalid-access"),
        (SignalInfo(number=11, name="SIGSEGV", code=0x80, address=0), {}, [], "invalid-access"),
        (SignalInfo(number=11, name="SIGSEGV", code=1, address=0x7FFC0000FFF8), {"rsp": 0x7FFC00010000}, [], "stack-overflow"),
        (SignalInfo(number=11, name="SIGSEGV"), {}, [Frame(index=i, function="recurse(int)") for i in range(300)], "stack-overflow"),
        (SignalInfo(number=7, name="SIGBUS", code=2, address=0x7F0000002000), {}, [], "bus-error"),
        (SignalInfo(number=8, name="SIGFPE", code=1, address=0x401136), {}, [], "divide-by-zero"),
        (SignalInfo(number=4, name="SIGILL", code=2, address=0x401126), {}, [], "illegal-instruction"),
        (SignalInfo(number=6, name="SIGABRT"), {}, [], "abort"),
        (SignalInfo(number=15, name="SIGTERM", code=0, sender_pid=1), {}, [], "sent-signal"),
        (None, {}, [], "unknown"),
    ],
)
def test_fault_kind_table(signal, registers, frames, kind):
    got, evidence = fault_kind(signal, None, frames, registers)
    assert got == kind
    assert got in FAULT_KINDS and evidence


@pytest.mark.parametrize(
    "message, kind",
    [
        ("free(): double free detected in tcache 2", "heap-corruption"),
        ("malloc(): corrupted top size", "heap-corruption"),
        ("corrupted size vs. prev_size", "heap-corruption"),
        ("F0000 00:00:1712345678.123456   31337 tensor_shape.cc:356] Check failed: d < dims() (1 vs. 1)", "check-failure"),
        ("[libprotobuf FATAL google/protobuf/repeated_field.h:1506] CHECK failed: (index) < (current_size_): ", "check-failure"),
        ("python3: prog.c:4: f: Assertion `x' failed.", "abort"),
    ],
)
def test_fault_kind_from_abort_messages(message, kind):
    got, _ = fault_kind(SignalInfo(number=6, name="SIGABRT"), message, [], {})
    assert got == kind
    # Without any signal information the message alone still decides.
    assert fault_kind(None, message, [], {})[0] == kind


def test_segv_inside_malloc_is_heap_corruption():
    frames = native([("_int_malloc", LIBC), ("__GI___libc_malloc", LIBC), ("operator new(unsigned long)", "/lib/x86_64-linux-gnu/libstdc++.so.6"), ("tensorflow::Tensor::Tensor(tensorflow::DataType, tensorflow::TensorShape const&)", TF_FW)])
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x4141414141414141), pid=2))
    assert (c.category, c.fault_kind) == ("allocator", "heap-corruption")
    assert c.culprit.function.startswith("tensorflow::Tensor::Tensor")


def test_uncaught_exception_names_the_exception_type():
    frames = native(
        [
            ("__pthread_kill_implementation", LIBC),
            ("raise", LIBC),
            ("abort", LIBC),
            ("__gnu_cxx::__verbose_terminate_handler()", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("__cxxabiv1::__terminate(void (*)())", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("std::terminate()", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("__cxa_throw", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("std::__throw_out_of_range_fmt(char const*, ...)", "/lib/x86_64-linux-gnu/libstdc++.so.6"),
            ("tensorflow::lookup::HashTable<long, float>::Find(tensorflow::OpKernelContext*, tensorflow::Tensor const&, tensorflow::Tensor*, tensorflow::Tensor const&)", TF_CC),
            ("tensorflow::LookupTableFindOp::Compute(tensorflow::OpKernelContext*)", TF_CC),
        ]
    )
    c = classify(report(frames, SignalInfo(number=6, name="SIGABRT", code=-6, sender_pid=8), pid=8))
    assert c.fault_kind == "uncaught-exception"
    assert any("std::out_of_range" in e for e in c.evidence)
    assert any("std::out_of_range" in a for a in c.advice)
    assert c.op == "LookupTableFindOp" and c.category == "kernel-compute"


@pytest.mark.parametrize(
    "instruction, feature",
    [
        ("=> 0x7f3a1c2b3c4d <_ZN5Eigen8internal4gemm+61>:\tvfmadd231ps %zmm1,%zmm2,%zmm0", "AVX-512"),
        ("=> 0x7f3a1c2b3c4d:\tvfmadd231ps %ymm1,%ymm2,%ymm0", "FMA"),
        ("=> 0x401126 <unreachable_path+4>:\tud2", "trap"),
        ("vpdpbusd %zmm3,%zmm2,%zmm1", "VNNI"),
    ],
)
def test_illegal_instruction_names_instruction_and_feature(instruction, feature):
    frames = native([("Eigen::internal::gebp_kernel<float, float, long, Eigen::internal::blas_data_mapper<float, long, 0, 0, 1>, 24, 4, false, false>::operator()(Eigen::internal::blas_data_mapper<float, long, 0, 0, 1> const&, float const*, float const*, long, long, long, float, long, long, long, long)", TF_CC)])
    c = classify(report(frames, SignalInfo(number=4, name="SIGILL", code=2, address=0x7F3A1C2B3C4D), pid=2, fault_instruction=instruction))
    assert c.fault_kind == "illegal-instruction"
    assert any(feature in e for e in c.evidence)
    if feature != "trap":
        assert any(feature in a for a in c.advice)


# ---------------------------------------------------------------------------------------------
# Partial input
# ---------------------------------------------------------------------------------------------


def test_only_an_abort_message():
    c = classify(Report(source="triage"), abort_message="F0000 00:00:1.0  7 lrn_op.cc:485] Check failed: in_image.dims() == 4 (1 vs. 4)")
    assert c.fault_kind == "check-failure"
    # absl names only the file: an op kernel's source (*_op.cc) still names the subsystem.
    assert c.category == "kernel-compute" and c.confidence == "low"
    assert c.summary and c.signature
    c = classify(Report(source="triage"), abort_message="F0000 00:00:1.0  7 mystery.cc:12] Check failed: x")
    assert c.category == "unknown" and c.confidence == "low"


def test_protobuf_message_alone_gives_the_category():
    c = classify(Report(source="triage"), abort_message="[libprotobuf FATAL external/com_google_protobuf/src/google/protobuf/message_lite.cc:123] CHECK failed: ...")
    assert c.category == "protobuf-serialization"


def test_empty_report():
    c = classify(Report())
    assert c.category in default_rules().categories and c.fault_kind == "unknown"
    assert "no frames" in c.summary


def test_core_without_signal_name_uses_the_number():
    frames = native([("store_result", "/srv/bin/null_thread"), ("worker", "/srv/bin/null_thread"), ("start_thread", LIBC)])
    c = classify(report(frames, SignalInfo(number=11, code=1, address=0), pid=3))
    assert c.fault_kind == "null-deref" and c.summary.startswith("SIGSEGV null-deref")


# ---------------------------------------------------------------------------------------------
# Rules files
# ---------------------------------------------------------------------------------------------


def documented_categories() -> list[str]:
    """The categories docs/categories.md's table lists, in its order."""
    lines = (REPO / "docs" / "categories.md").read_text().splitlines()
    start = lines.index("| category | sample summary |") + 2
    names: list[str] = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        name = line.split("|")[1].split()[0]
        if name not in names:
            names.append(name)
    return names


def test_builtin_rules_cover_every_category_but_unknown():
    rules = load_rules()
    assert sorted(rules.categories) == sorted(documented_categories())
    CATEGORIES = rules.categories
    covered = {r.category for r in rules.rules}
    assert covered == set(CATEGORIES) - {"unknown"}
    assert {a.category for a in rules.advice if a.category} == set(CATEGORIES)
    assert {a.fault_kind for a in rules.advice if a.fault_kind} == set(FAULT_KINDS) - {"unknown"}


def test_user_rules_add_and_override(tmp_path: Path):
    extra = tmp_path / "mine.toml"
    extra.write_text(
        textwrap.dedent(
            """
            [[rule]]
            name = "acme-codecs"
            category = "kernel-compute"
            priority = 90
            module = '^libacme_codec'

            [[rule]]
            name = "tf-data"          # replaces the built-in rule of the same name
            category = "tf-runtime"
            priority = 72
            function = '^tensorflow::data::'

            [[advice]]
            category = "kernel-compute"
            text = ["Acme codecs: page #codec-oncall."]

            [skip]
            runtime = ['^acme::Trampoline']
            """
        )
    )
    rules = load_rules([extra])
    assert extra.as_posix() in rules.sources
    frames = native([("acme::Trampoline::Call()", "/srv/lib/libacme_codec.so"), ("decode_frame", "/srv/lib/libacme_codec.so"), ("tensorflow::data::Foo::Bar()", TF_CC)])
    c = classify(report(frames, SignalInfo(number=11, name="SIGSEGV", code=1, address=0x10), pid=3), rules=rules)
    assert c.culprit.function == "decode_frame"
    assert c.category == "kernel-compute"
    assert c.advice[0] == "Acme codecs: page #codec-oncall."
    data = native([("tensorflow::data::ParallelMapDatasetOp::Dataset::Iterator::GetNextInternal(tensorflow::data::IteratorContext*, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*, bool*)", TF_CC)])
    assert classify(report(data, SEGV), rules=rules).category == "tf-runtime"
    assert classify(report(data, SEGV)).category == "tf-data"  # the built-in rules are untouched


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("[[rule]]\nname = 'x'\ncategory = 'gpu'\nfunction = 'a'\n", "unknown category 'gpu'"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = '(unclosed'\n", "bad regex"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\n", "needs at least one of"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = 'a'\nanywhere = true\n", "anywhere is for line rules"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = 'a'\nyields_to = ['xla']\n", "yields_to is for abort_message rules"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nabort_message = 'a'\nyields_to = ['nowhere']\n", "yields_to: unknown category 'nowhere'"),
        ("[[rule]]\ncategory = 'xla'\nfunction = 'a'\n", "rule[1]: missing key 'name'"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = 'a'\npriority = 500\n", "priority must be"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfuncton = 'a'\n", "rule[1] ('x'): unknown key 'functon' (expected one of: name,"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = 'a'\npriority = 'high'\n", "rule[1] ('x').priority: expected an integer, got a string ('high')"),
        ("[[advice]]\ntext = [1]\n", "advice[1].text[1]: expected a string, got an integer (1)"),
        ("[settings]\nsignature_templates = 1\n", "settings.signature_templates: expected true or false, got an integer (1)"),
        ("rule = 3\n", "rule: expected an array of tables, got an integer (3)"),
        ("[[advice]]\nfault_kind = 'segfault'\ntext = ['x']\n", "unknown fault_kind 'segfault'"),
        ("[[rule]]\nname = 'x'\ncategory = 'xla'\nfunction = 'a'\nfault_kind = 'sigill'\n", "unknown fault_kind 'sigill'"),
        ("[rules]\n", "unknown key 'rules' (expected one of: category,"),
        ("this is = = not toml", "invalid TOML"),
    ],
)
def test_bad_rules_file_is_one_line_of_bad_input(tmp_path: Path, content, fragment):
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(BadInput) as info:
        load_rules([path])
    message = str(info.value)
    assert fragment in message and str(path) in message
    assert "\n" not in message


def test_a_rule_limited_to_a_fault_kind_applies_only_to_crashes_of_that_kind(tmp_path: Path):
    path = tmp_path / "sigill.toml"
    path.write_text(
        "[[rule]]\nname = 'mylib-sigill'\ncategory = 'xla'\npriority = 99\nmodule = '^libmine'\nfault_kind = 'illegal-instruction'\n"
    )
    rules = load_rules([path])
    text = "Program received signal {sig}.\n#0  0x00007f0000001000 in ?? () from /opt/libmine.so\n#1  0x00007f0000002000 in main ()\n"
    sigill = triage_text(text.format(sig="SIGILL, Illegal instruction"), "a.txt", rules=rules).classification
    sigsegv = triage_text(text.format(sig="SIGSEGV, Segmentation fault"), "b.txt", rules=rules).classification
    assert (sigill.category, sigill.fault_kind) == ("xla", "illegal-instruction")
    assert sigsegv.category != "xla"


def test_missing_or_binary_rules_file(tmp_path: Path):
    with pytest.raises(BadInput, match="no such file"):
        load_rules([tmp_path / "nope.toml"])
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BadInput, match="not UTF-8"):
        load_rules([binary])


def test_jump_to_the_null_page_blames_the_caller():
    """A pasted gdb bt (TF issue shape): frame #0 is `0x45 in ?? ()` with no library, the fault
    address is not in the text. The thread jumped through a corrupt function pointer."""
    sig = SignalInfo(number=11, name="SIGSEGV")
    frames = [
        Frame(index=0, pc=0x45, function="??"),
        Frame(index=1, pc=0x7FFFAF185466, function="tensorflow::Tensor::~Tensor()", module="/x/tensorflow/libtensorflow_framework.so"),
        Frame(index=2, pc=0x7FFFAF3180DB, function="tensorflow::(anonymous namespace)::ExecutorState::Process(tensorflow::(anonymous namespace)::ExecutorState::TaggedNode, long long)", module="/x/tensorflow/libtensorflow_framework.so"),
    ]
    report = Report(core=CoreInfo(path="t.txt", signal=sig), threads=[Thread(tid=1, crashed=True, frames=frames)], crashing_thread=1, source="triage")
    c = classify(report)
    assert c.fault_kind == "null-deref"
    assert c.culprit.function == "tensorflow::Tensor::~Tensor"
    assert c.category == "tf-runtime"
    assert "function pointer" in c.summary


THIN_REPORTS = [
    # (pasted text, category): only the fatal log line, as in many tickets.
    ("2024-12-16 15:21:27.252299: F tensorflow/core/framework/tensor_shape.cc:356] Check failed: d >= 0 (0 vs. -1)\nAborted (core dumped)\n", "kernel-compute"),
    ("F tensorflow/core/kernels/strided_slice_op.cc:316] Check failed: tmp.CopyFrom(input.Slice(begin[0], end[0]), final_shape)\nAborted (core dumped)\n", "kernel-compute"),
    ("2023-01-02 10:00:00.000000: F tensorflow/core/data/standalone.cc:120] Check failed: iterator_ != nullptr\nAborted\n", "tf-data"),
    ("2023-01-02 10:00:00.000000: F external/local_xla/xla/service/cpu/cpu_compiler.cc:1201] Check failed: module != nullptr\n", "xla"),
    ("F0000 00:00:1700000000.000000 1234 tensorflow/lite/kernels/kernel_util.cc:90] Check failed: tensor != nullptr\n", "interpreter-invoke"),
]


@pytest.mark.parametrize("text, category", THIN_REPORTS)
def test_fatal_log_line_alone_is_classified_by_its_source(text, category):
    from coreanalyze.triage import triage_text

    report = triage_text(text, "ticket.txt")
    c = report.classification
    assert (c.category, c.fault_kind) == (category, "check-failure")
    assert c.confidence == "low"
    assert "no frames" not in c.signature


def test_thin_reports_of_the_same_check_group_together():
    from coreanalyze.triage import triage_text

    a = triage_text("F tensorflow/core/framework/tensor_shape.cc:356] Check failed: d >= 0 (0 vs. -1)\n", "a")
    b = triage_text("2025-01-01 00:00:00.1: F tensorflow/core/framework/tensor_shape.cc:358] Check failed: d >= 0 (0 vs. -7)\n", "b")
    c = triage_text("F tensorflow/core/framework/tensor_shape.cc:362] Check failed: d < dims() (1 vs. 1)\n", "c")
    assert a.classification.signature == b.classification.signature
    assert a.classification.signature != c.classification.signature


def test_absl_failure_signal_handler_frames_are_skipped():
    """TensorFlow's absl handler prints its own frames above the trampoline; the crash is below."""
    from coreanalyze.triage import triage_text

    text = (DATA / "triage/absl_failure_signal.txt").read_text()
    c = triage_text(text, "absl.txt").classification
    assert c.category == "xla"
    assert c.culprit.function == "xla::cpu::CpuExecutable::ExecuteComputeFunction"
    assert "WriteFailureInfo" not in c.signature
