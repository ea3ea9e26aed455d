"""TensorFlow crash text across versions and devices: ISA mismatches, old stream_executor names,
GPU fatal lines, Eigen work on pool threads, Python-only traces (rules data, fed text)."""

from __future__ import annotations

import pytest

from coreanalyze.triage.parse import triage_text

GUARD = (
    "2024-03-02 10:11:12.123456: F tensorflow/core/platform/cpu_feature_guard.cc:37] The TensorFlow library was "
    "compiled to use AVX instructions, but these aren't available on your machine.\nAborted (core dumped)\n"
)
SIGILL_AT_IMPORT = '$ python3 -c "import tensorflow"\nIllegal instruction (core dumped)\n'
SIGILL_IN_INITIALIZER = """Thread 1 "python3" received signal SIGILL, Illegal instruction.
#0  0x00007fffe4a1b2c3 in google::protobuf::internal::InitProtobufDefaults() () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#1  0x00007fffe4a00000 in _GLOBAL__sub_I_graph.pb.cc () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#2  0x00007ffff7fc947e in call_init (l=<optimized out>, argc=2) at ./elf/dl-init.c:70
#3  _dl_init (main_map=0x555555d0a1c0, argc=2) at ./elf/dl-init.c:117
"""
FAULTHANDLER_IMPORT_SIGILL = """Fatal Python error: Illegal instruction

Current thread 0x00007f1c2b3d4740 (most recent call first):
  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed
  File "<frozen importlib._bootstrap_external>", line 1233 in create_module
  File "/usr/lib/python3/dist-packages/tensorflow/python/pywrap_tensorflow.py", line 73 in <module>
  File "train.py", line 1 in <module>
"""


@pytest.mark.parametrize("text", [GUARD, SIGILL_AT_IMPORT, SIGILL_IN_INITIALIZER, FAULTHANDLER_IMPORT_SIGILL], ids=["cpu-feature-guard", "shell-after-import", "static-initializer", "faulthandler-import"])
def test_cpu_instruction_mismatch_is_library_load_illegal_instruction(text):
    c = triage_text(text, "isa.txt").classification
    assert (c.category, c.fault_kind) == ("library-load", "illegal-instruction")
    assert any("CPU flags" in line for line in c.advice)


GPU_TEXTS = {
    "perftools-gputools": """Thread 12 "python" received signal SIGSEGV, Segmentation fault.
#0  0x00007fff8c1d2e3f in perftools::gputools::cuda::CUDAExecutor::SynchronousMemcpy(void*, perftools::gputools::DeviceMemoryBase const&, unsigned long long) () from /usr/local/lib/python3.6/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#1  0x00007fff8b000000 in tensorflow::GPUUtil::CopyGPUTensorToCPU(tensorflow::Device*, tensorflow::DeviceContext const*, tensorflow::Tensor const*, tensorflow::Tensor*, std::function<void (tensorflow::Status const&)>) () from /usr/local/lib/python3.6/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
""",
    "conv-algorithms-check": "2020-02-02 02:02:02.000000: F tensorflow/core/kernels/conv_ops.cc:1106] Check failed: stream->parent()->GetConvolveAlgorithms( conv_parameters.ShouldIncludeWinogradNonfusedAlgo<T>(stream->parent()), &algorithms)\n",
    "cudnn-status": "2021-03-03 03:03:03.000000: F tensorflow/stream_executor/cuda/cuda_dnn.cc:534] Check failed: cudnnSetTensorNdDescriptor(handle_.get(), elem_type, nd, dims.data(), strides.data()) == CUDNN_STATUS_SUCCESS (3 vs. 0)\n",
    "gpu-sync-failed": "2018-01-01 00:00:00.000000: E tensorflow/core/common_runtime/gpu/gpu_util.cc:333] GPU sync failed\nSegmentation fault (core dumped)\n",
    "cuda-error-event": "2019-05-01 12:00:00.000000: E tensorflow/stream_executor/cuda/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\n2019-05-01 12:00:00.000000: F tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:273] Unexpected Event status: 1\n",
}


@pytest.mark.parametrize("name", sorted(GPU_TEXTS))
def test_gpu_failures_across_versions_are_gpu_driver(name):
    assert triage_text(GPU_TEXTS[name], f"{name}.txt").classification.category == "gpu-driver"


def test_old_tensorflow_core_paths_in_fatal_lines():
    c = triage_text("F tensorflow_core/core/kernels/gather_op.cc:81] Check failed: index < limit\n", "old.txt").classification
    assert (c.category, c.fault_kind) == ("kernel-compute", "check-failure")


def test_eigen_executor_on_a_pool_thread_is_kernel_work():
    text = """Thread 27 "python" received signal SIGSEGV, Segmentation fault.
#0  0x00007fffe1a2b3c4 in Eigen::internal::EvalRange<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const, Eigen::ThreadPoolDevice>, long, true>::run(Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const, Eigen::ThreadPoolDevice>*, long, long) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2
#1  0x00007fffe1a2b500 in std::_Function_handler<void (long, long), Eigen::internal::TensorExecutor<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const, Eigen::ThreadPoolDevice, true, (Eigen::internal::TiledEvaluation)0>::run(Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const&, Eigen::ThreadPoolDevice const&)::{lambda(long, long)#1}>::_M_invoke(std::_Any_data const&, long&&, long&&) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2
#2  0x00007fffdff00000 in Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#3  0x00007ffff7d94ac3 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
"""
    c = triage_text(text, "eigen.txt").classification
    assert c.category == "kernel-compute"
    assert c.culprit.function.startswith("Eigen::internal::EvalRange")


PY_ONLY = """Fatal Python error: Segmentation fault

Current thread 0x00007f9a8b7c6740 (most recent call first):
  File "{inner}", line 758 in {function}
  File "/home/u/venv/lib/python3.10/site-packages/keras/src/saving/legacy/hdf5_format.py", line 800 in load_weights
  File "train.py", line 12 in <module>
"""


@pytest.mark.parametrize(
    "inner,function,category",
    [
        ("/usr/lib/python3/dist-packages/h5py/_hl/dataset.py", "__getitem__", "python-runtime"),
        ("/usr/lib/python3/dist-packages/tensorflow/core/framework/tensor_shape_pb2.py", "<module>", "protobuf-serialization"),
        ("/usr/lib/python3/dist-packages/google/protobuf/descriptor.py", "__new__", "protobuf-serialization"),
    ],
)
def test_python_only_traces_by_the_innermost_modules(inner, function, category):
    c = triage_text(PY_ONLY.format(inner=inner, function=function), "py.txt").classification
    assert c.category == category
    assert c.fault_kind == "invalid-access"


def test_std_function_running_an_eigen_executor_shard_is_named_by_its_callable():
    text = """Thread 27 "python" received signal SIGSEGV, Segmentation fault.
#0  0x00007fffe1a2b500 in std::_Function_handler<void (long, long), Eigen::internal::TensorExecutor<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const, Eigen::ThreadPoolDevice, true, (Eigen::internal::TiledEvaluation)0>::run(Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> const&, Eigen::ThreadPoolDevice const&)::{lambda(long, long)#1}>::_M_invoke(std::_Any_data const&, long&&, long&&) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2
#1  0x00007fffe0000000 in Eigen::ThreadPoolDevice::parallelFor(long, Eigen::TensorOpCost const&, std::function<long (long)>, std::function<void (long, long)>) const::{lambda(long, long)#1}::operator()(long, long) const () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#2  0x00007fffdff00000 in Eigen::ThreadPoolTempl<tsl::thread::EigenEnvironment>::WorkerLoop(int) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#3  0x00007fffdfe00000 in std::_Function_handler<void (), tsl::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}>::_M_invoke(std::_Any_data const&) () from /usr/lib/python3/dist-packages/tensorflow/libtensorflow_framework.so.2
#4  0x00007ffff7d94ac3 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
"""
    c = triage_text(text, "eigen_handler.txt").classification
    assert c.category == "kernel-compute"
    assert "Eigen::internal::TensorExecutor" in c.culprit.function
    assert c.signature.split(" | ")[1] == "Eigen::internal::TensorExecutor::run::{lambda}::operator()"
