"""TensorFlow-family crash reports in the shapes users paste into issue trackers, written after
public reports (TensorFlow's tracker and projects using TF/TFLite: tombstones of Android apps,
TF 1.x GPU logs, absl's bare-file-name CHECK lines, valgrind, apport titles, zsh/macOS shell
verdicts, hs_err, lldb, Python-only faulthandler dumps). The texts are reworded (addresses,
paths and names changed); `source` says which public report each follows.

They test the rules on text they were not tuned on: batches were written, measured, then the
general rules fixed (before: category 43/55, fault kind 50/55; see the report of issue 16).
Fault kinds follow the vocabulary: SIGSEGV below 64 KiB is null-deref, other SIGSEGV
invalid-access (also when the text gives no address).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from coreanalyze.triage.parse import triage_text


@dataclass(frozen=True)
class Case:
    category: str
    fault_kind: str
    text: str
    source: str = "common report shape"


CASES: dict[str, Case] = {}


def case(name: str, category: str, fault_kind: str, text: str, source: str = "common report shape") -> None:
    CASES[name] = Case(category, fault_kind, text, source)


def faulthandler_dump(*frames: tuple[str, int, str], fatal: str = "Segmentation fault", tail: str = "") -> str:
    """Python's faulthandler output for the current thread, innermost frame first."""
    rows = "".join(f'  File "{path}", line {line} in {function}\n' for path, line, function in frames)
    return f"Fatal Python error: {fatal}\n\nCurrent thread 0x00007f5b9c2f4740 (most recent call first):\n{rows}{tail}"


case("tombstone_apk_offset", "interpreter-invoke", "invalid-access", """*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
Build fingerprint: 'Vendor/board/board:11/RQ1A.210105.003/1234:user/release-keys'
Revision: '0'
ABI: 'arm'
Timestamp: 2023-04-02 10:21:07+0800
pid: 20111, tid: 20175, name: InferenceThread  >>> com.example.vision <<<
uid: 10123
signal 11 (SIGSEGV), code 2 (SEGV_ACCERR), fault addr 0xb51fd3c0
    r0  00000008  r1  00000040  r2  00000200  r3  b51fd3c0
    ip  b51fd6c0  sp  8e1b73e8  lr  8d2ded97  pc  8d2f08ac

backtrace:
      #00 pc 000258ac  /data/app/com.example.vision/base.apk!libtensorflowlite_jni.so (offset 0x2f3000)
      #01 pc 00031d2b  /data/app/com.example.vision/base.apk!libtensorflowlite_jni.so (offset 0x2f3000)
""", "tensorflow#61633")
case("logcat_tflite_symbols", "interpreter-invoke", "null-deref", """2022-03-01 09:12:44.101 8812-8860/? A/libc: Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x70 in tid 8860 (inference), pid 8812 (ple.detector)
2022-03-01 09:12:44.230 9001-9001/? A/DEBUG: *** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
2022-03-01 09:12:44.230 9001-9001/? A/DEBUG: ABI: 'arm64'
2022-03-01 09:12:44.230 9001-9001/? A/DEBUG: pid: 8812, tid: 8860, name: inference  >>> com.example.detector <<<
2022-03-01 09:12:44.230 9001-9001/? A/DEBUG: signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x70
2022-03-01 09:12:44.231 9001-9001/? A/DEBUG: backtrace:
2022-03-01 09:12:44.231 9001-9001/? A/DEBUG:     #00 pc 00000000001a2b3c  /data/app/com.example.detector-1/lib/arm64/libtensorflowlite_jni.so (tflite::ops::builtin::conv::Eval(TfLiteContext*, TfLiteNode*)+412)
2022-03-01 09:12:44.231 9001-9001/? A/DEBUG:     #01 pc 00000000001f0a10  /data/app/com.example.detector-1/lib/arm64/libtensorflowlite_jni.so (tflite::Subgraph::Invoke()+980)
2022-03-01 09:12:44.231 9001-9001/? A/DEBUG:     #02 pc 00000000001f3b20  /data/app/com.example.detector-1/lib/arm64/libtensorflowlite_jni.so (tflite::Interpreter::Invoke()+32)
2022-03-01 09:12:44.231 9001-9001/? A/DEBUG:     #03 pc 0000000000045c1c  /data/app/com.example.detector-1/lib/arm64/libtensorflowlite_jni.so (Java_org_tensorflow_lite_NativeInterpreterWrapper_run+36)
""", "tensorflow#36654, #34313")
case("pc_small_tensor_dtor_pool", "tf-runtime", "null-deref", """Thread 20 "python3.5" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7fff779bf700 (LWP 2911)]
0x0000000000000045 in ?? ()
(gdb) bt
#0  0x0000000000000045 in ?? ()
#1  0x00007fffaf185466 in tensorflow::Tensor::~Tensor() ()
   from /usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so
#2  0x00007fffaf3180db in tensorflow::(anonymous namespace)::ExecutorState::Process(tensorflow::(anonymous namespace)::ExecutorState::TaggedNode, long long) ()
   from /usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so
#3  0x00007fffaf377fba in Eigen::NonBlockingThreadPoolTempl<tensorflow::thread::EigenEnvironment>::WorkerLoop(int) ()
   from /usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so
#4  0x00007ffff7bc16ba in start_thread (arg=0x7fff779bf700) at pthread_create.c:333
""", "tensorflow#20137")
case("import_static_tls_dlopen", "library-load", "invalid-access", """Program received signal SIGSEGV, Segmentation fault.
(gdb) bt
#0  0x00007f8ef604478b in init_one_static_tls (map=0x0) at allocatestack.c:1171
#1  __pthread_init_static_tls (map=0x0) at allocatestack.c:1196
#2  0x00007f8ef667e6eb in _dl_close_worker () from /lib64/ld-linux-x86-64.so.2
#3  0x00007f8ef667c613 in _dl_open () from /lib64/ld-linux-x86-64.so.2
#4  0x00007f8ef5e3af66 in dlopen_doit (a=0x7ffc4dda53f0) at dlopen.c:67
#5  0x00007f8ef6678266 in _dl_catch_error () from /lib64/ld-linux-x86-64.so.2
#6  0x00007f8ef5e3b2dc in _dlerror_run (operate=0x7f8ef5e3af00 <dlopen_doit>, args=0x7ffc4dda53f0) at dlerror.c:164
#7  0x00007f8ef5e3aee1 in __dlopen (file=<value optimized out>, mode=<value optimized out>) at dlopen.c:88
#8  0x00007f8ef63918ce in _PyImport_GetDynLoadFunc (fqname=<value optimized out>, shortname=<value optimized out>, pathname=0x7f8edc36fa54 "/usr/local/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so", fp=0x1d80f90) at Python/dynload_shlib.c:130
#9  0x00007f8ef6376128 in _PyImport_LoadDynamicModule (name=0x7f8edc36524c "_pywrap_tensorflow", pathname=0x7f8edc36fa54 "/usr/local/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so", fp=0x1d80f90) at ./Python/importdl.c:42
""", "tensorflow#8197")
case("python_gc_update_refs", "python-runtime", "invalid-access", """Program received signal SIGSEGV, Segmentation fault.
update_refs (generation=<value optimized out>, n_collected=0x7fffffffaad8, n_uncollectable=0x7fffffffaae0, nofail=0)
    at /tmp/build/80754af9/python_1546061345851/work/Modules/gcmodule.c:243
243     /tmp/build/80754af9/python_1546061345851/work/Modules/gcmodule.c: No such file or directory.
(gdb) bt
#0  update_refs (generation=<value optimized out>) at Modules/gcmodule.c:243
#1  collect (generation=2, n_collected=0x7fffffffaad8, n_uncollectable=0x7fffffffaae0, nofail=0) at Modules/gcmodule.c:1093
#2  0x00005555556a1d2b in collect_with_callback (generation=2) at Modules/gcmodule.c:1264
#3  0x00005555556a2a11 in _PyObject_GC_Alloc (use_calloc=0, basicsize=56) at Modules/gcmodule.c:1813
""", "tensorflow#39940")
case("tf1_cuda_timer_check", "gpu-driver", "gpu-exception", """2019-06-11 10:01:02.345678: E tensorflow/stream_executor/cuda/cuda_driver.cc:1078] failed to synchronize the stop event: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure
2019-06-11 10:01:02.345702: E tensorflow/stream_executor/cuda/cuda_timer.cc:55] Internal: error destroying CUDA event in context 0x55d5c8a0f6e0: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure
2019-06-11 10:01:02.345760: F tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream.
Aborted (core dumped)
""", "TF 1.x GPU reports")
case("cudnn_log_fatal_no_check", "gpu-driver", "check-failure", """2020-08-01 12:00:00.000001: E tensorflow/stream_executor/cuda/cuda_dnn.cc:329] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR
2020-08-01 12:00:00.000002: F tensorflow/core/kernels/conv_ops_fused_impl.h:721] Failed to enqueue convolution on stream: CUDNN_STATUS_EXECUTION_FAILED
Aborted (core dumped)
""")
case("tensor_shape_ndims_check", "kernel-compute", "check-failure", """2018-09-10 13:14:15.161718: F tensorflow/core/framework/tensor_shape.cc:44] Check failed: NDIMS == dims() (2 vs. 1)Asking for tensor of 2 dimensions from a tensor of 1 dimensions
Aborted (core dumped)
""")
case("repl_import_illegal", "library-load", "illegal-instruction", """Python 3.6.9 (default, Nov  7 2019, 10:44:02)
[GCC 8.3.0] on linux
Type "help", "copyright", "credits" or "license" for more information.
>>> import tensorflow as tf
Illegal instruction (core dumped)
""")
case("dmesg_trap_invalid_opcode", "library-load", "illegal-instruction", """[ 1234.567890] traps: python3[4242] trap invalid opcode ip:7f3b2c1d2e3f sp:7ffd5e6f7a80 error:0 in libtensorflow_framework.so.2[7f3b2a000000+2400000]
""")
case("xla_check", "xla", "check-failure", """2021-02-03 04:05:06.070809: F tensorflow/compiler/xla/service/gpu/ir_emitter_unnested.cc:3531] Check failed: ShapeUtil::Equal(first_reduce->shape(), inst->shape())
Aborted (core dumped)
""")
case("tfdata_segv", "tf-data", "invalid-access", """Thread 58 "python" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7ffe4a7fc700 (LWP 1201)]
0x00007fffb2a1b2c3 in tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::CallCompleted(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&) () from /usr/local/lib/python3.7/dist-packages/tensorflow_core/python/_pywrap_tensorflow_internal.so
(gdb) bt
#0  0x00007fffb2a1b2c3 in tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::CallCompleted(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&) () from /usr/local/lib/python3.7/dist-packages/tensorflow_core/python/_pywrap_tensorflow_internal.so
#1  0x00007fffb2a1c000 in std::_Function_handler<void (tensorflow::Status const&), tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::CallFunction(std::shared_ptr<tensorflow::data::IteratorContext> const&, std::shared_ptr<tensorflow::data::(anonymous namespace)::ParallelMapDatasetOp::Dataset::Iterator::InvocationResult> const&)::{lambda(tensorflow::Status)#1}>::_M_invoke(std::_Any_data const&, tensorflow::Status const&) () from /usr/local/lib/python3.7/dist-packages/tensorflow_core/python/_pywrap_tensorflow_internal.so
#2  0x00007fffadf00000 in Eigen::ThreadPoolTempl<tensorflow::thread::EigenEnvironment>::WorkerLoop(int) () from /usr/local/lib/python3.7/dist-packages/tensorflow_core/python/../libtensorflow_framework.so.2
""")
case("numpy_ndarray_convert", "numpy-interop", "null-deref", """Thread 1 "python" received signal SIGSEGV, Segmentation fault.
0x00007fffe8a12345 in tensorflow::TensorToNdarray(tensorflow::Tensor const&, _object**) () from /home/u/.local/lib/python3.6/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
(gdb) p $_siginfo._sifields._sigfault.si_addr
$1 = (void *) 0x10
(gdb) bt
#0  0x00007fffe8a12345 in tensorflow::TensorToNdarray(tensorflow::Tensor const&, _object**) () from /home/u/.local/lib/python3.6/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#1  0x00007fffe8a13000 in tensorflow::TF_Run_wrapper_helper(TF_DeprecatedSession*, char const*, TF_Buffer const*, _object*, tensorflow::gtl::InlinedVector<char const*, 8> const&, tensorflow::gtl::InlinedVector<char const*, 8> const&, TF_Status*, tensorflow::gtl::InlinedVector<_object*, 8>*, TF_Buffer*) () from /home/u/.local/lib/python3.6/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#2  0x00007fffe8a14000 in _wrap_TF_Run () from /home/u/.local/lib/python3.6/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#3  0x00005555556b2c3d in _PyCFunction_FastCallDict ()
""")
case("glibc_old_double_free_backtrace", "allocator", "heap-corruption", """*** Error in `python3': double free or corruption (!prev): 0x00000000024f6a70 ***
======= Backtrace: =========
/lib/x86_64-linux-gnu/libc.so.6(+0x777e5)[0x7f6b1e2a77e5]
/lib/x86_64-linux-gnu/libc.so.6(+0x8037a)[0x7f6b1e2b037a]
/lib/x86_64-linux-gnu/libc.so.6(cfree+0x4c)[0x7f6b1e2b453c]
/usr/local/lib/python3.5/dist-packages/tensorflow/python/../libtensorflow_framework.so(_ZN10tensorflow6TensorD1Ev+0x5a)[0x7f6ad0e1a2ba]
/usr/local/lib/python3.5/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so(+0x1d3a4f1)[0x7f6ad2c3a4f1]
======= Memory map: ========
00400000-007a9000 r-xp 00000000 08:01 1234 /usr/bin/python3.5
""")
case("hs_err_tf_jni", "tf-runtime", "null-deref", """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00007f2c4b1a2b3c, pid=3141, tid=0x00007f2c6a0e2700
#
# JRE version: OpenJDK Runtime Environment (8.0_292-b10) (build 1.8.0_292-8u292-b10-0ubuntu1~20.04-b10)
# Problematic frame:
# C  [libtensorflow_framework.so.1+0x8a2b3c]  tensorflow::DirectSession::Run(tensorflow::RunOptions const&, std::vector<std::pair<std::string, tensorflow::Tensor>, std::allocator<std::pair<std::string, tensorflow::Tensor> > > const&, std::vector<std::string, std::allocator<std::string> > const&, std::vector<std::string, std::allocator<std::string> > const&, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*, tensorflow::RunMetadata*)+0x1bc
#
siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000008

Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)
C  [libtensorflow_framework.so.1+0x8a2b3c]  tensorflow::DirectSession::Run(tensorflow::RunOptions const&, std::vector<std::pair<std::string, tensorflow::Tensor>, std::allocator<std::pair<std::string, tensorflow::Tensor> > > const&, std::vector<std::string, std::allocator<std::string> > const&, std::vector<std::string, std::allocator<std::string> > const&, std::vector<tensorflow::Tensor, std::allocator<tensorflow::Tensor> >*, tensorflow::RunMetadata*)+0x1bc
C  [libtensorflow_jni.so+0x1f2a3c]  TF_Run_Helper(tensorflow::Session*, char const*, TF_Buffer const*, std::vector<std::pair<std::string, tensorflow::Tensor>, std::allocator<std::pair<std::string, tensorflow::Tensor> > > const&, std::vector<std::string, std::allocator<std::string> > const&, TF_Tensor**, std::vector<std::string, std::allocator<std::string> > const&, TF_Buffer*, TF_Status*)+0x2ac
C  [libtensorflow_jni.so+0x1f3b00]  TF_SessionRun+0x1f0
""")
case("macos_exc_bad_access", "kernel-compute", "null-deref", """Process:               Python [51234]
Path:                  /Library/Frameworks/Python.framework/Versions/3.9/Resources/Python.app/Contents/MacOS/Python
Identifier:            Python
Version:               3.9.13 (3.9.13)
Code Type:             X86-64 (Native)

Exception Type:        EXC_BAD_ACCESS (SIGSEGV)
Exception Codes:       KERN_INVALID_ADDRESS at 0x0000000000000010
Exception Note:        EXC_CORPSE_NOTIFY

Termination Signal:    Segmentation fault: 11
Termination Reason:    Namespace SIGNAL, Code 0xb
Terminating Process:   exc handler [51234]

Thread 12 Crashed:
0   libtensorflow_cc.2.dylib      	0x000000013a1b2c3d tensorflow::functor::GatherFunctorCPU<float, int>::operator()(tensorflow::OpKernelContext*, Eigen::TensorMap<Eigen::Tensor<float const, 3, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<int const, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float, 3, 1, long>, 16, Eigen::MakePointer>) + 301
1   libtensorflow_cc.2.dylib      	0x000000013a1b3000 tensorflow::GatherOp<Eigen::ThreadPoolDevice, float, int>::Compute(tensorflow::OpKernelContext*) + 1200
2   libtensorflow_framework.2.dylib	0x0000000131a2b3c4 tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*) + 100
""")
case("faulthandler_session_run", "tf-runtime", "invalid-access", """Fatal Python error: Segmentation fault

Thread 0x00007f3a1b7fe700 (most recent call first):
  File "/usr/lib/python3.6/threading.py", line 295 in wait
  File "/usr/lib/python3.6/queue.py", line 164 in get

Current thread 0x00007f3a5e2b5740 (most recent call first):
  File "/usr/local/lib/python3.6/dist-packages/tensorflow_core/python/client/session.py", line 1443 in _call_tf_sessionrun
  File "/usr/local/lib/python3.6/dist-packages/tensorflow_core/python/client/session.py", line 1350 in _run_fn
  File "/usr/local/lib/python3.6/dist-packages/tensorflow_core/python/client/session.py", line 1365 in _do_call
  File "train.py", line 88 in main
Segmentation fault (core dumped)
""")
case("absl_signal_tf", "kernel-compute", "invalid-access", """*** SIGSEGV received at time=1700000000 on cpu 5 ***
PC: @     0x7f1a2b3c4d5e  (unknown)  tensorflow::(anonymous namespace)::SparseTensorDenseMatMulOp<>::Compute()
    @     0x7f1a9e8d7420       1360  (unknown)
    @     0x7f1a2b3c4000        256  tensorflow::ThreadPoolDevice::Compute()
    @     0x7f1a2a000000        512  tensorflow::(anonymous namespace)::ExecutorState<>::Process()
Segmentation fault (core dumped)
""")
case("valgrind_kernel", "kernel-compute", "invalid-access", """==4242== Invalid read of size 4
==4242==    at 0x1A2B3C4D: tensorflow::functor::ScatterFunctor<Eigen::ThreadPoolDevice, float, int, (tensorflow::scatter_op::UpdateOp)0>::operator()(tensorflow::OpKernelContext*, Eigen::ThreadPoolDevice const&, Eigen::TensorMap<Eigen::Tensor<float, 2, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 2, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<int const, 1, 1, long>, 16, Eigen::MakePointer>) (in /usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2)
==4242==    by 0x1A2B4000: tensorflow::ScatterUpdateOp<Eigen::ThreadPoolDevice, float, int, (tensorflow::scatter_op::UpdateOp)0>::Compute(tensorflow::OpKernelContext*) (in /usr/lib/python3/dist-packages/tensorflow/libtensorflow_cc.so.2)
==4242==  Address 0x7ffff0001000 is not stack'd, malloc'd or (recently) free'd
==4242==
==4242== Process terminating with default action of signal 11 (SIGSEGV)
==4242==  Access not within mapped region at address 0x7FFFF0001000
""")
case("apport_title_sigill", "library-load", "illegal-instruction", """python3.8 crashed with SIGILL in tensorflow::port::(anonymous namespace)::CPUIDInfo::Initialize()
""")
case("tflite_python_interp_segv", "interpreter-invoke", "invalid-access", faulthandler_dump(
    ("/usr/local/lib/python3.8/dist-packages/tflite_runtime/interpreter.py", 875, "invoke"),
    ("detect.py", 41, "run_inference"),
    ("detect.py", 60, "<module>"),
    tail="Segmentation fault (core dumped)\n",
))
case("stream_executor_new_gpu_check", "gpu-driver", "gpu-exception", """2023-05-06 07:08:09.101112: F tensorflow/core/common_runtime/device/device_event_mgr.cc:221] Unexpected Event status: 1
Fatal Python error: Aborted
""")
case("protobuf_fatal_terminate", "protobuf-serialization", "check-failure", """[libprotobuf FATAL external/com_google_protobuf/src/google/protobuf/map.h:1059] CHECK failed: it != end(): key not found: dense_1
terminate called after throwing an instance of 'google::protobuf::FatalException'
  what():  CHECK failed: it != end(): key not found: dense_1
Aborted (core dumped)
""")
case("bad_alloc_uncaught", "allocator", "out-of-memory", """terminate called after throwing an instance of 'std::bad_alloc'
  what():  std::bad_alloc
Aborted (core dumped)
""")
case("cuda_oom_check", "gpu-driver", "check-failure", """2020-01-01 00:00:01.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:890] failed to alloc 8589934592 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory
2020-01-01 00:00:01.000001: F ./tensorflow/core/util/cuda_launch_config.h:127] Check failed: work_element_count > 0 (0 vs. 0)
Aborted (core dumped)
""")
case("cublas_status", "gpu-driver", "check-failure", """2022-10-10 10:10:10.101010: F tensorflow/stream_executor/cuda/cuda_blas.cc:1018] Check failed: stat == CUBLAS_STATUS_SUCCESS (13 vs. 0)
""")
case("absl_basename_mkl_check", "kernel-compute", "check-failure", """F0000 00:00:1747120000.123456   91234 mkl_util.h:1296] Check failed: dims_tf_order.size() > 0 (0 vs. 0)
*** Check failure stack trace: ***
Aborted (core dumped)
""", "tensorflow#118345")
case("absl_basename_cost_estimator", "tf-runtime", "check-failure", """F0000 00:00:1747120000.654321   91240 op_level_cost_estimator.cc:192] Check failed: strides.size() == 4 Attr strides is not a length-4 vector
Aborted (core dumped)
""", "tensorflow#118353")
case("strided_slice_old", "kernel-compute", "check-failure", """F tensorflow/core/kernels/strided_slice_op.cc:316] Check failed: tmp.CopyFrom(input.Slice(begin[0], end[0]), final_shape)
Aborted (core dumped)
""", "tensorflow#6088")
case("conv_algorithms_old", "gpu-driver", "check-failure", """F tensorflow/core/kernels/conv_ops.cc:659] Check failed: stream->parent()->GetConvolveAlgorithms(&algorithms)
Aborted (core dumped)
""", "torrvision/siamfc-tf#21")
case("macos_malloc_checksum", "allocator", "heap-corruption", """Python(60770,0x70000fafb000) malloc: *** error for object 0x7fb861518b48: incorrect checksum for freed object - object was probably modified after being freed.
*** set a breakpoint in malloc_error_break to debug
Abort trap: 6
""", "tensorflow#14285")
case("tf_check_stack_trace_kernel", "kernel-compute", "check-failure", """2024-01-15 08:00:00.000000: F tensorflow/core/framework/tensor_shape.cc:357] Check failed: d < dims() (1 vs. 1)
*** Check failure stack trace: ***
    @     0x7f3c1a2b3c4d  absl::lts_20230802::log_internal::LogMessageFatal::~LogMessageFatal()
    @     0x7f3c0e1f2a3b  tensorflow::TensorShapeBase<>::dim_size()
    @     0x7f3c1b2c3d4e  tensorflow::MatrixDiagPartOp<>::Compute()
    @     0x7f3c0e4d5e6f  tensorflow::ThreadPoolDevice::Compute()
Aborted (core dumped)
""")
case("gdb_gpu_event_poll", "gpu-driver", "invalid-access", """Thread 33 "python3" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7ffe1dffb700 (LWP 5123)]
0x00007fffd1a2b3c4 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1
(gdb) bt
#0  0x00007fffd1a2b3c4 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1
#1  0x00007fffd1a30000 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1
#2  0x00007fffd19f0000 in cuEventQuery () from /usr/lib/x86_64-linux-gnu/libcuda.so.1
#3  0x00007fffe2a1b2c3 in stream_executor::gpu::GpuDriver::GetEventElapsedTime(stream_executor::gpu::GpuContext*, float*, CUevent_st*, CUevent_st*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
#4  0x00007fffe2a20000 in tensorflow::EventMgr::PollEvents(bool, absl::lts_20210324::InlinedVector<tensorflow::EventMgr::InUse, 4ul, std::allocator<tensorflow::EventMgr::InUse> >*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
""")
case("sigill_in_eigen_at_import", "library-load", "illegal-instruction", """Program received signal SIGILL, Illegal instruction.
0x00007fffe8e3c1a2 in Eigen::internal::TensorBlockAssignment<float, 1, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 0, Eigen::MakePointer>, long>::Run(Eigen::internal::TensorBlockAssignment<float, 1, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 0, Eigen::MakePointer>, long>::Target const&, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 0, Eigen::MakePointer> const&) () from /usr/local/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
(gdb) bt
#0  0x00007fffe8e3c1a2 in Eigen::internal::TensorBlockAssignment<float, 1, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 0, Eigen::MakePointer>, long>::Run(...) () from /usr/local/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#1  0x00007fffe5a00000 in _GLOBAL__sub_I_random_op.cc () from /usr/local/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#2  0x00007ffff7de5733 in call_init (env=0x7fffffffd6b8, argv=0x7fffffffd6a8, argc=2, l=<optimized out>) at dl-init.c:72
#3  _dl_init (main_map=main_map@entry=0x555555c0f2d0, argc=2, argv=0x7fffffffd6a8, env=0x7fffffffd6b8) at dl-init.c:119
#4  0x00007ffff7dea1ff in dl_open_worker (a=a@entry=0x7fffffffb8e0) at dl-open.c:522
""")
case("tombstone_abort_tflite_gpu_delegate", "interpreter-invoke", "abort", """*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
Build fingerprint: 'google/sunfish/sunfish:12/SP1A.210812.016/7679548:user/release-keys'
ABI: 'arm64'
pid: 14120, tid: 14188, name: Thread-5  >>> com.example.segment <<<
signal 6 (SIGABRT), code -1 (SI_QUEUE), fault addr --------
Abort message: 'TfLiteGpuDelegate Invoke: GpuDelegate must run on the same thread where it was initialized.'
    x0  0000000000000000  x1  000000000000372c  x2  0000000000000006  x3  0000007a8e5f0c70
backtrace:
      #00 pc 000000000004f3b0  /apex/com.android.runtime/lib64/bionic/libc.so (abort+164)
      #01 pc 00000000003c1a2c  /data/app/com.example.segment/lib/arm64/libtensorflowlite_gpu_jni.so (BuildId: 1a2b3c)
      #02 pc 00000000001f0a10  /data/app/com.example.segment/lib/arm64/libtensorflowlite_jni.so (tflite::Subgraph::Invoke()+980)
      #03 pc 00000000001f3b20  /data/app/com.example.segment/lib/arm64/libtensorflowlite_jni.so (tflite::Interpreter::Invoke()+32)
""", "TFLite GPU delegate reports")
case("faulthandler_keras_fit_native", "kernel-compute", "invalid-access", faulthandler_dump(
    ("/usr/local/lib/python3.9/site-packages/tensorflow/python/eager/execute.py", 54, "quick_execute"),
    ("/usr/local/lib/python3.9/site-packages/tensorflow/python/eager/function.py", 499, "call"),
    ("/usr/local/lib/python3.9/site-packages/keras/engine/training.py", 1409, "fit"),
    ("train.py", 30, "<module>"),
    tail="Segmentation fault (core dumped)\n",
))
case("h5py_faulthandler", "python-runtime", "invalid-access", faulthandler_dump(
    ("/opt/conda/lib/python3.8/site-packages/h5py/_hl/files.py", 173, "make_fid"),
    ("/opt/conda/lib/python3.8/site-packages/h5py/_hl/files.py", 424, "__init__"),
    ("/opt/conda/lib/python3.8/site-packages/keras/saving/hdf5_format.py", 176, "load_model_from_hdf5"),
    ("predict.py", 9, "<module>"),
))
case("double_free_tcache_tf", "allocator", "heap-corruption", """free(): double free detected in tcache 2
Aborted (core dumped)
""")
case("gdb_sigabrt_bfc_check", "allocator", "check-failure", """2021-09-09 09:09:09.090909: F tensorflow/core/common_runtime/bfc_allocator.cc:448] Check failed: h != kInvalidChunkHandle
Thread 1 "python" received signal SIGABRT, Aborted.
#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50
#1  0x00007ffff7a24859 in __GI_abort () at abort.c:79
#2  0x00007fffe1a2b3c4 in tensorflow::internal::LogMessageFatal::~LogMessageFatal() () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
#3  0x00007fffe1b00000 in tensorflow::BFCAllocator::DeallocateRawInternal(void*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
#4  0x00007fffe1b01000 in tensorflow::BFCAllocator::DeallocateRaw(void*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
#5  0x00007fffe1c00000 in tensorflow::TensorBuffer::~TensorBuffer() () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
""")
case("lldb_macos_m1_segv", "interpreter-invoke", "null-deref", """* thread #14, queue = 'com.apple.root.default-qos', stop reason = EXC_BAD_ACCESS (code=1, address=0x8)
  * frame #0: 0x0000000104a1b2c4 _pywrap_tensorflow_interpreter_wrapper.so`tflite::ops::builtin::reshape::Eval(TfLiteContext*, TfLiteNode*) + 40
    frame #1: 0x0000000104a20000 _pywrap_tensorflow_interpreter_wrapper.so`tflite::Subgraph::InvokeImpl() + 1500
    frame #2: 0x0000000104a21000 _pywrap_tensorflow_interpreter_wrapper.so`tflite::Subgraph::Invoke() + 40
""")
case("tf_sigsegv_handler_absl", "tf-runtime", "invalid-access", """*** SIGSEGV received at time=1712000000 on cpu 2 ***
PC: @     0x7f8e2a1b2c3d  (unknown)  tensorflow::EagerOperation::Reset()
    @     0x7f8e3c4d5e60  (unknown)  (unknown)
    @     0x7f8e2a1c0000        128  TFE_OpReset
    @     0x7f8e1b000000        256  tensorflow::EagerTensor_numpy()
""")
case("uncaught_runtime_error_tf", "tf-runtime", "uncaught-exception", """terminate called after throwing an instance of 'std::system_error'
  what():  Resource temporarily unavailable
Fatal Python error: Aborted

Thread 0x00007f1a2b3c4700 (most recent call first):
  File "/usr/lib/python3.8/threading.py", line 302 in wait

Current thread 0x00007f1a5c6d7740 (most recent call first):
  File "/usr/local/lib/python3.8/dist-packages/tensorflow/python/client/session.py", line 1453 in _call_tf_sessionrun
  File "/usr/local/lib/python3.8/dist-packages/tensorflow/python/client/session.py", line 1360 in _run_fn
""")
case("valgrind_uninit_jump_tf", "kernel-compute", "null-deref", """==1234== Invalid write of size 8
==1234==    at 0x4C3A2B1: memcpy@@GLIBC_2.14 (in /usr/lib/x86_64-linux-gnu/valgrind/vgpreload_memcheck-amd64-linux.so)
==1234==    by 0x1F2E3D4C: tensorflow::functor::DenseUpdate<Eigen::ThreadPoolDevice, float, (tensorflow::DenseUpdateType)2>::operator()(Eigen::ThreadPoolDevice const&, Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer>) (in /usr/local/lib/python3.8/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so)
==1234==    by 0x1F2E4000: tensorflow::AssignOp::Compute(tensorflow::OpKernelContext*) (in /usr/local/lib/python3.8/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so)
==1234==  Address 0x2a is not stack'd, malloc'd or (recently) free'd
==1234== Process terminating with default action of signal 11 (SIGSEGV)
""")
case("gpu_illegal_address_event_mgr", "gpu-driver", "gpu-exception", """2022-11-02 11:22:33.445566: E tensorflow/compiler/xla/stream_executor/cuda/cuda_event.cc:29] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered
2022-11-02 11:22:33.445612: F tensorflow/core/common_runtime/device/device_event_mgr.cc:221] Unexpected Event status: 1
Fatal Python error: Aborted

Current thread 0x00007f2d1c3b5740 (most recent call first):
  File "/usr/local/lib/python3.9/dist-packages/tensorflow/python/eager/execute.py", line 52 in quick_execute
""")
case("xla_jit_segv_gdb", "xla", "invalid-access", """Thread 45 "python" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7ffe0d7fa700 (LWP 9876)]
0x00007fffc2a3b4c5 in xla::HloInstruction::operand(long) const () from /usr/local/lib/python3.10/dist-packages/tensorflow/libtensorflow_cc.so.2
(gdb) bt
#0  0x00007fffc2a3b4c5 in xla::HloInstruction::operand(long) const () from /usr/local/lib/python3.10/dist-packages/tensorflow/libtensorflow_cc.so.2
#1  0x00007fffc2b00000 in xla::gpu::IrEmitterUnnested::EmitFusion(xla::HloFusionInstruction const*, xla::HloFusionAnalysis&) () from /usr/local/lib/python3.10/dist-packages/tensorflow/libtensorflow_cc.so.2
#2  0x00007fffc2c00000 in tensorflow::XlaCompilationCache::CompileStrict(...) () from /usr/local/lib/python3.10/dist-packages/tensorflow/libtensorflow_cc.so.2
""")
case("tflite_python_gdb_native", "interpreter-invoke", "null-deref", """Program received signal SIGSEGV, Segmentation fault.
0x00007fffd5a1b2c3 in tflite::optimized_ops::DepthwiseConv(tflite::DepthwiseParams const&, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float const*, tflite::RuntimeShape const&, float*, tflite::CpuBackendContext*) () from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so
(gdb) p $_siginfo._sifields._sigfault.si_addr
$1 = (void *) 0x0
(gdb) bt
#0  0x00007fffd5a1b2c3 in tflite::optimized_ops::DepthwiseConv(...) () from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so
#1  0x00007fffd5a20000 in TfLiteStatus tflite::ops::builtin::depthwise_conv::Eval<(tflite::ops::builtin::depthwise_conv::KernelType)1>(TfLiteContext*, TfLiteNode*) () from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so
#2  0x00007fffd5a30000 in tflite::Subgraph::InvokeImpl() () from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.so
""")
case("protobuf_2gb_fatal", "protobuf-serialization", "check-failure", """[libprotobuf FATAL external/com_google_protobuf/src/google/protobuf/message_lite.cc:68] CHECK failed: (byte_size_before_serialization) == (byte_size_after_serialization): tensorflow.GraphDef was modified concurrently during serialization.
terminate called after throwing an instance of 'google::protobuf::FatalException'
  what():  CHECK failed: (byte_size_before_serialization) == (byte_size_after_serialization): tensorflow.GraphDef was modified concurrently during serialization.
Aborted (core dumped)
""")
case("numpy_abi_import_segv", "numpy-interop", "invalid-access", """Thread 1 "python3" received signal SIGSEGV, Segmentation fault.
0x00007fffe9a1b2c3 in PyArray_DescrFromType () from /usr/local/lib/python3.8/dist-packages/numpy/core/_multiarray_umath.cpython-38-x86_64-linux-gnu.so
(gdb) bt
#0  0x00007fffe9a1b2c3 in PyArray_DescrFromType () from /usr/local/lib/python3.8/dist-packages/numpy/core/_multiarray_umath.cpython-38-x86_64-linux-gnu.so
#1  0x00007fffd0a00000 in tensorflow::TF_DataType_to_PyArray_TYPE(TF_DataType, int*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#2  0x00007fffd0a10000 in tensorflow::TensorToNdarray(tensorflow::Tensor const&, _object**) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
""")
case("tfdata_check_fatal", "tf-data", "check-failure", """2023-03-03 03:03:03.030303: F tensorflow/core/data/standalone.cc:126] Check failed: ctx.get() != nullptr
Aborted (core dumped)
""")
case("cpu_guard_avx512", "library-load", "illegal-instruction", """2019-12-12 12:12:12.121212: F tensorflow/core/platform/cpu_feature_guard.cc:37] The TensorFlow library was compiled to use AVX512F instructions, but these aren't available on your machine.
Aborted (core dumped)
""")
case("sigfpe_kernel_div", "kernel-compute", "divide-by-zero", """Thread 12 "python" received signal SIGFPE, Arithmetic exception.
[Switching to Thread 0x7fff5a7fc700 (LWP 4521)]
0x00007fffe3a1b2c3 in tensorflow::SpaceToBatchOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_cc.so.2
(gdb) bt
#0  0x00007fffe3a1b2c3 in tensorflow::SpaceToBatchOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_cc.so.2
#1  0x00007fffdc2a0000 in tensorflow::ThreadPoolDevice::Compute(tensorflow::OpKernel*, tensorflow::OpKernelContext*) () from /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2
""")
case("tombstone_arm64_tflite_xnnpack", "interpreter-invoke", "invalid-access", """*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
Build fingerprint: 'samsung/a52qnsxx/a52q:13/TP1A.220624.014/A525FXXS6EWA1:user/release-keys'
ABI: 'arm64'
pid: 30101, tid: 30155, name: pool-3-thread-1  >>> com.example.ocr <<<
signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0000007b12f00000
backtrace:
      #00 pc 00000000002a1b2c  /data/app/~~abc==/com.example.ocr-xyz==/lib/arm64/libtensorflowlite_jni.so (xnn_f32_gemm_minmax_ukernel_4x8__aarch64_neonfma_cortex_a53+124) (BuildId: 0a1b2c3d)
      #01 pc 00000000002a3000  /data/app/~~abc==/com.example.ocr-xyz==/lib/arm64/libtensorflowlite_jni.so (xnn_compute_gemm+96) (BuildId: 0a1b2c3d)
      #02 pc 00000000002b0000  /data/app/~~abc==/com.example.ocr-xyz==/lib/arm64/libtensorflowlite_jni.so (pthreadpool_parallelize_2d_tile_2d+200) (BuildId: 0a1b2c3d)
""", "inaturalist/react-native-inat-camera#51 (shape)")
case("valgrind_bfc_uaf", "allocator", "null-deref", """==777== Invalid read of size 8
==777==    at 0x1C2D3E4F: tensorflow::BFCAllocator::RemoveFreeChunkFromBin(unsigned long) (in /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2)
==777==    by 0x1C2D4000: tensorflow::BFCAllocator::AllocateRawInternal(unsigned long, unsigned long, bool, unsigned long) (in /usr/local/lib/python3.8/dist-packages/tensorflow/python/../libtensorflow_framework.so.2)
==777==  Address 0x18 is not stack'd, malloc'd or (recently) free'd
""")
case("shell_import_illegal_hw", "library-load", "illegal-instruction", """$ python -c 'import tensorflow as tf; print(tf.__version__)'
zsh: illegal hardware instruction  python -c 'import tensorflow as tf; print(tf.__version__)'
""")
case("executor_check_runtime", "tf-runtime", "check-failure", """2020-04-04 04:04:04.040404: F tensorflow/core/common_runtime/executor.cc:1078] Check failed: item.input_start + i < item.num_inputs (3 vs. 3)
Aborted (core dumped)
""")

case("logs_then_shell_segv", "gpu-driver", "invalid-access", """2021-05-05 10:00:00.000000: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] Successfully opened dynamic library libcudart.so.11.0
2021-05-05 10:00:01.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1733] Found device 0 with properties: pciBusID: 0000:01:00.0 name: GeForce RTX 3090
2021-05-05 10:00:05.000000: I tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded cuDNN version 8100
Segmentation fault (core dumped)
""", "the most common TF tracker shape: the process's log, then the shell's verdict")
case("faulthandler_sigill_in_package_init", "library-load", "illegal-instruction", faulthandler_dump(
    ("/usr/lib/python3/dist-packages/tensorflow/__init__.py", 41, "<module>"),
    ("<frozen importlib._bootstrap>", 241, "_call_with_frames_removed"),
    ("classify.py", 1, "<module>"),
    fatal="Illegal instruction",
))
case("logcat_fatal_signal_only", "unknown", "null-deref", """--------- beginning of crash
A/libc: Fatal signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0 in tid 5012 (Thread-3), pid 4990 (ample.classify)
""", "tensorflow#34313 (the libc line alone)")


def assert_classified(name: str, c: Case) -> None:
    got = triage_text(c.text, f"{name}.txt").classification
    assert (got.category, got.fault_kind) == (c.category, c.fault_kind), got.evidence


@pytest.mark.parametrize("name", sorted(CASES))
def test_category_and_fault_kind(name):
    assert_classified(name, CASES[name])


def test_the_cases_cover_every_format_the_issue_names():
    """Tombstones, logcat, valgrind, apport, hs_err, macOS, faulthandler, absl signal handler,
    fatal-log lines, dmesg traps, shell verdicts: none of them may be refused."""
    assert len(CASES) >= 58
    assert {c.category for c in CASES.values()} >= {
        "kernel-compute", "interpreter-invoke", "gpu-driver", "library-load", "tf-runtime", "tf-data",
        "xla", "numpy-interop", "protobuf-serialization", "allocator", "python-runtime",
    }
