"""A second, blind batch of TensorFlow-family crash reports as users pasted them into public
trackers (tensorflow, tflite, serving, tfjs, tensorflow/java, openxla, and projects built on
TF). The texts are trimmed to the crash part; `source` names the public report.

The labels were written before the tool ran on them. Blind: category 27/32, fault kind 26/32,
3 refused (an hs_err copy without its `#` margin, a tombstone with `#00  pc 0x...` frames and no
thread name, a bare `Illegal instruction` after `python server.py`). Rules were then fixed as
general classes, never for one text; one label was corrected to the vocabulary (a SIGSEGV inside
glibc's `_int_free` is heap-corruption, not invalid-access). Fault kinds follow the vocabulary:
a text that names no signal and no fatal line has fault kind `unknown`.
"""

from __future__ import annotations

import pytest
from test_tf_issue_texts import Case, assert_classified, faulthandler_dump

CASES: dict[str, Case] = {}


def case(name: str, category: str, fault_kind: str, text: str, source: str) -> None:
    CASES[name] = Case(category, fault_kind, text, source)


case("gdb_cpuid_call_once_import", "library-load", "invalid-access", """Program received signal SIGSEGV, Segmentation fault.
0x00007fff337680c1 in std::call_once<void (&)()> (__once=..., __f=
    @0x7fff3543c7b6: {void (void)} 0x7fff3543c7b6 <tensorflow::port::(anonymous namespace)::CPUIDInfo::Initialize()>)
    at /home/user/tools/gcc-4.9.2/bin/lib/gcc/x86_64-unknown-linux-gnu/4.9.2/../../../../include/c++/4.9.2/mutex:736
736           __once_callable = &__bound_functor;
(gdb)
(gdb) bt
#0  0x00007fff337680c1 in std::call_once<void (&)()> (__once=..., __f=
    @0x7fff3543c7b6: {void (void)} 0x7fff3543c7b6 <tensorflow::port::(anonymous namespace)::CPUIDInfo::Initialize()>)
    at /home/user/tools/gcc-4.9.2/bin/lib/gcc/x86_64-unknown-linux-gnu/4.9.2/../../../../include/c++/4.9.2/mutex:736
#1  0x00007fff3543d582 in tensorflow::port::(anonymous namespace)::InitCPUIDInfo () at tensorflow/core/platform/cpu_info.cc:306
#2  0x00007fff3543d17d in tensorflow::port::(anonymous namespace)::CPUIDInfo::Initialize () at tensorflow/core/platform/cpu_info.cc:120
""", "tensorflow#10870")
case("custom_op_lambda_parallel_for", "kernel-compute", "unknown", """[Switching to Thread 0x7fffd5047700 (LWP 5069)]
0x00007fffd5d2c33b in std::_Function_handler<void (long long, long long), RoiPoolOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)::{lambda(long long, long long)#1}>::_M_invoke(std::_Any_data const&, long long&&, std::_Any_data const&) ()
   from /home/user/Faster-RCNN_TF/tools/../lib/roi_pooling_layer/roi_pooling.so
(gdb) backtrace
#0  0x00007fffd5d2c33b in std::_Function_handler<void (long long, long long), RoiPoolOp<Eigen::ThreadPoolDevice, float>::Compute(tensorflow::OpKernelContext*)::{lambda(long long, long long)#1}>::_M_invoke(std::_Any_data const&, long long&&, std::_Any_data const&) ()
   from /home/user/Faster-RCNN_TF/tools/../lib/roi_pooling_layer/roi_pooling.so
#1  0x00007fffeba953c9 in std::_Function_handler<void (long, long), Eigen::ThreadPoolDevice::parallelFor(long, Eigen::TensorOpCost const&, std::function<long (long)>, std::function<void (long, long)>) const::{lambda(long, long)#1}>::_M_invoke(std::_Any_data const&, long, long) ()
   from /home/user/anaconda2/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so
""", "smallcorgi/Faster-RCNN_TF#76")
case("tombstone_no_signal_memcpy_strided_slice", "interpreter-invoke", "unknown", """*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***
pid: 0, tid: 30757 >>> com.example.app <<<

backtrace:
  #00  pc 0x000000000005e0ac  /apex/com.android.runtime/lib/bionic/libc.so (__memcpy_a15+188)
  #01  pc 0x0000000000137e59  /data/app/~~YHISAMCFj==/com.example.app-lu0vN5hz==/split_config.armeabi_v7a.apk!libtensorflowlite_jni.so (void tflite::reference_ops::StridedSlice<float>(tflite::StridedSliceParams const&, tflite::RuntimeShape const&, tflite::RuntimeShape const&, tflite::SequentialTensorWriter<float>*)+21856256) (BuildId: d3f78d75e68278e94544097ec4371c6a)
  #02  pc 0x0000000000137697  /data/app/~~YHISAMCFj==/com.example.app-lu0vN5hz==/split_config.armeabi_v7a.apk!libtensorflowlite_jni.so (TfLiteStatus tflite::ops::builtin::strided_slice::EvalImpl<(tflite::ops::builtin::strided_slice::KernelType)1>(TfLiteContext*, TfLiteNode*)+21856256) (BuildId: d3f78d75e68278e94544097ec4371c6a)
""", "tensorflow#101889")
case("logcat_debug_unsymbolized_arm", "interpreter-invoke", "invalid-access", """04-12 11:37:19.164 1221-1221/? A/DEBUG: Build fingerprint: 'samsung/matisse10wifikx/matisse10wifikx:6.0.1/MMB29K/T536KXU1AQF1:user/release-keys'
04-12 11:37:19.164 1221-1221/? A/DEBUG: Revision: '4'
04-12 11:37:19.164 1221-1221/? A/DEBUG: ABI: 'arm'
04-12 11:37:19.164 1221-1221/? A/DEBUG: pid: 27456, tid: 28023, name: Thread-24515  >>> me.visual.camp.mobileeye <<<
04-12 11:37:19.164 1221-1221/? A/DEBUG: signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x6a9e1398
04-12 11:37:19.174 1221-1221/? A/DEBUG:     r0 00000004  r1 00000020  r2 dec48050  r3 00000002
04-12 11:37:19.174 1221-1221/? A/DEBUG:     r4 dec40010  r5 b8d7a6d0  r6 6a9e1398  r7 00000002
04-12 11:37:19.174 1221-1221/? A/DEBUG:     ip 00000000  sp d197f2f0  lr dec40008  pc f388cfee  cpsr a00f0030
04-12 11:37:19.184 1221-1221/? A/DEBUG: backtrace:
04-12 11:37:19.184 1221-1221/? A/DEBUG:     #00 pc 0005efee  /data/app/me.visual.camp.mobileeye-1/lib/arm/libtensorflowlite_jni.so
04-12 11:37:19.184 1221-1221/? A/DEBUG:     #01 pc 0007922d  /data/app/me.visual.camp.mobileeye-1/lib/arm/libtensorflowlite_jni.so
04-12 11:37:19.184 1221-1221/? A/DEBUG:     #02 pc 00007895  /data/app/me.visual.camp.mobileeye-1/lib/arm/libtensorflowlite_jni.so
""", "tensorflow#18440")
case("file_line_only_ruy_lstm", "interpreter-invoke", "unknown", """1:
org_tensorflow/external/ruy/ruy/context_get_ctx.cc:25
org_tensorflow/external/ruy/ruy/ruy.h:47
org_tensorflow/external/ruy/ruy/ruy.h:101
org_tensorflow/./tensorflow/lite/kernels/cpu_backend_gemm_ruy.h:141
org_tensorflow/./tensorflow/lite/kernels/cpu_backend_gemm.h:169
org_tensorflow/./tensorflow/lite/kernels/internal/optimized/optimized_ops.h:299
org_tensorflow/tensorflow/lite/kernels/lstm_eval.cc:59
org_tensorflow/tensorflow/lite/kernels/lstm_eval.cc:206
org_tensorflow/tensorflow/lite/kernels/lstm_eval.cc:913
org_tensorflow/tensorflow/lite/kernels/lstm_eval.cc:1894
""", "tensorflow#57049")
case("dmesg_segfault_model_server", "unknown", "null-deref", """[1644821.183503] tensorflow_mode[22702]: segfault at 2 ip 000000000a1b93f6 sp 00007fe77cf46fe0 error 4 in tensorflow_model_server[400000+11a0c000]
""", "tensorflow/serving#2171")
case("serving_core_int_free", "allocator", "heap-corruption", """(gdb) bt
#0  0x00007f7a8e051387 in raise () from /lib64/libc.so.6
#1  0x00007f7a8e052a78 in abort () from /lib64/libc.so.6
#2  0x00007f7a8e093f67 in __libc_message () from /lib64/libc.so.6
#3  0x00007f7a8e09c329 in _int_free () from /lib64/libc.so.6
""", "tensorflow/serving#2171")
case("serving_bfc_check_entrypoint", "allocator", "check-failure", """F external/org_tensorflow/tensorflow/core/common_runtime/bfc_allocator.cc:458] Check failed: c->in_use() && (c->bin_num == kInvalidBinNum)
/usr/bin/tf_serving_entrypoint.sh: line 3: 8 Aborted tensorflow_model_server --port=8500 --rest_api_port=8501 --model_name=${MODEL_NAME} --model_base_path=${MODEL_BASE_PATH}/${MODEL_NAME} "$@"
""", "tensorflow/serving#1206")
case("core_int_free_executor_manager", "allocator", "heap-corruption", """Corefile information as follow:
#0  0x00007fb46bf905f7 in raise () from /lib64/libc.so.6
#1  0x00007fb46bf91ce8 in abort () from /lib64/libc.so.6
#2  0x00007fb46bfd0317 in __libc_message () from /lib64/libc.so.6
#3  0x00007fb46bfd8023 in _int_free () from /lib64/libc.so.6
#4  0x00007fb3dd81616b in std::_Function_base::_Base_manager<std::_Bind<std::_Mem_fn<void (tensorflow::(anonymous namespace)::ExecutorState::*)(tensorflow::(anonymous namespace)::ExecutorState::TaggedNode, long long)> (tensorflow::(anonymous namespace)::ExecutorState*, tensorflow::(anonymous namespace)::ExecutorState::TaggedNode, long long)> >::_M_manager(std::_Any_data&, std::_Any_data const&, std::_Manager_operation) () from /opt/anaconda2/lib/python2.7/site-packages/tensorflow/python/../libtensorflow_framework.so
#5  0x00007fb3dd89254d in Eigen::NonBlockingThreadPoolTempl<tensorflow::thread::EigenEnvironment>::WorkerLoop(int) () from /opt/anaconda2/lib/python2.7/site-packages/tensorflow/python/../libtensorflow_framework.so
#6  0x00007fb3dd891582 in std::_Function_handler<void (), tensorflow::thread::EigenEnvironment::CreateThread(std::function<void ()>)::{lambda()#1}>::_M_invoke(std::_Any_data const&) () from /opt/anaconda2/lib/python2.7/site-packages/tensorflow/python/../libtensorflow_framework.so
#7  0x00007fb3dcdaf220 in ?? () from /lib64/libstdc++.so.6
""", "tensorflow#38494")
case("bad_alloc_shell_script", "allocator", "out-of-memory", """terminate called after throwing an instance of 'std::bad_alloc'
  what():  std::bad_alloc
./clean_wav.sh: line 26:  6499 Aborted
""", "santi-pdp/segan#40")
case("rocm_hip_throw_aarch64", "gpu-driver", "uncaught-exception", """Thread 195 "python3" received signal SIGABRT, Aborted.
[Switching to Thread 0xffff0d7ca1f0 (LWP 10683)]
__GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:51
51\t../sysdeps/unix/sysv/linux/raise.c: No such file or directory.
(gdb) bt
#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:51
#1  0x0000ffffbf40d8b4 in __GI_abort () at abort.c:79
#2  0x0000ffff4e04c0c4 in __gnu_cxx::__verbose_terminate_handler() () from /usr/lib/aarch64-linux-gnu/libstdc++.so.6
#3  0x0000ffff4e049c34 in ?? () from /usr/lib/aarch64-linux-gnu/libstdc++.so.6
#4  0x0000ffff4e049c80 in std::terminate() () from /usr/lib/aarch64-linux-gnu/libstdc++.so.6
#5  0x0000ffff4e049f38 in __cxa_throw () from /usr/lib/aarch64-linux-gnu/libstdc++.so.6
#6  0x0000ffff57bb3a74 in hip_impl::hip_throw(std::exception const&) () from /opt/rocm/lib/libhip_hcc.so
#7  0x0000ffff5cf6275c in std::vector<unsigned char, std::allocator<unsigned char> > hip_impl::make_kernarg<Eigen::TensorEvaluator<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<short, 1, 1, int>, 16, Eigen::MakePointer>, Eigen::TensorCwiseUnaryOp<Eigen::internal::scalar_right<short, short, Eigen::internal::scalar_product_op<short, short> >, Eigen::TensorMap<Eigen::Tensor<short const, 1, 1, int>, 16, Eigen::MakePointer> const> const> const, Eigen::GpuDevice>, int>() () from /usr/lib/python3/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
""", "ROCm/tensorflow-upstream#506")
case("static_init_cpu_feature_throw", "library-load", "uncaught-exception", """#0  0x00007ffff75f3625 in raise () from /lib64/libc.so.6
#1  0x00007ffff75f4e05 in abort () from /lib64/libc.so.6
#2  0x0000000001d8c395 in __gnu_cxx::__verbose_terminate_handler() () at ../../../../libstdc++-v3/libsupc++/vterminate.cc:95
#3  0x0000000001d59806 in __cxxabiv1::__terminate(void (*)()) () at ../../../../libstdc++-v3/libsupc++/eh_terminate.cc:38
#4  0x0000000001d59833 in std::terminate() () at ../../../../libstdc++-v3/libsupc++/eh_terminate.cc:48
#5  0x0000000001d5a58e in __cxa_throw () at ../../../../libstdc++-v3/libsupc++/eh_throw.cc:84
#6  0x0000000001d88c90 in std::__throw_system_error(int) () at ../../../../../libstdc++-v3/src/c++11/functexcept.cc:104
#7  0x0000000000cd5051 in tensorflow::port::TestCPUFeature(tensorflow::port::CPUFeature) ()
#8  0x0000000000cd4b0e in _GLOBAL__sub_I_cpu_feature_guard.cc ()
#9  0x0000000001db4966 in __do_global_ctors_aux ()
#10 0x0000000000a3954b in _init ()
#11 0x00007fffffffe588 in ?? ()
#12 0x0000000001db48f5 in __libc_csu_init ()
#13 0x00007ffff75dfcf0 in __libc_start_main () from /lib64/libc.so.6
""", "tensorflow#13967")
case("tensor_shape_dims_check_raw_op", "kernel-compute", "check-failure", """2024-05-01 03:28:07.055077: F tensorflow/core/framework/tensor_shape.cc:357] Check failed: d < dims() (1 vs. 1)
Aborted (core dumped)
""", "tensorflow#66761")
case("gpu_event_mgr_unexpected_status", "gpu-driver", "gpu-exception", """2019-02-21 16:43:26.973428: E tensorflow/stream_executor/cuda/cuda_driver.cc:1011] could not synchronize on CUDA context: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered ::
2019-02-21 16:43:26.973442: E tensorflow/stream_executor/cuda/cuda_event.cc:48] Error polling for event status: failed to query event: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered
2019-02-21 16:43:26.984939: F tensorflow/core/common_runtime/gpu/gpu_event_mgr.cc:274] Unexpected Event status: 1
""", "tensorflow#25866")
case("gpu_sync_failed_progress_bar", "gpu-driver", "gpu-exception", """ tensorflow/stream_executor/cuda/cuda_driver.cc:1140] could not synchronize on CUDA context: CUDA_ERROR_ILLEGAL_ADDRESS :: No stack trace availablech: 034 | loss: 0.21259 - acc: 0.9223 -- iter: 08128/50000
F tensorflow/core/common_runtime/gpu/gpu_util.cc:370] GPU sync failed
Aborted (core dumped)
""", "tensorflow#3422")
case("xla_hlo_pass_segv", "xla", "unknown", """#0  0x00007fbb63893850 in xla::HloInstruction::operand(long) const ()
   from /home/user/myenv/lib/python3.10/site-packages/jaxlib/xla_extension.so
#1  0x00007fbb5d39add6 in xla::MoveCollectivePermutes(xla::HloComputation*, xla::HloInstruction*) ()
   from /home/user/myenv/lib/python3.10/site-packages/jaxlib/xla_extension.so
#2  0x00007fbb5d39c42d in xla::CollectivePermuteMotion::Run(xla::HloModule*, absl::lts_20230802::flat_hash_set<std::basic_string_view<char, std::char_traits<char> >, absl::lts_20230802::container_internal::StringHash, absl::lts_20230802::container_internal::StringEq, std::allocator<std::basic_string_view<char, std::char_traits<char> > > > const&) ()
   from /home/user/myenv/lib/python3.10/site-packages/jaxlib/xla_extension.so
""", "openxla/xla#7155")
case("xla_absl_check_failure_stack", "xla", "check-failure", """WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
F0000 00:00:1786848211.450142 3821845 shape.h:852] Check failed: buffer != nullptr ((null) vs. (null))
*** Check failure stack trace: ***
    @     0x61e9e4fb4414  absl::lts_20260107::log_internal::LogMessage::SendToLog()
    @     0x61e9e4fb4396  absl::lts_20260107::log_internal::LogMessage::Flush()
    @     0x61e9dab2a74b  xla::Shape::mutable_layout()
    @     0x61e9e4a2971b  xla::MakeFakeLiteral()
    @     0x61e9dac074bf  xla::MakeFakeArguments()
    @     0x61e9daae26b8  xla::(anonymous namespace)::RunAndCompareInternal()
    @     0x61e9daae0e46  xla::RunAndCompare()
    @     0x61e9daadf7e1  main
    @     0x76db7542a1ca  (unknown)
    @     0x76db7542a28b  __libc_start_main
    @     0x61e9e4ff9a4a  _start
""", "openxla/xla#47376")
case("tfdata_snapshot_reader_dtor", "tf-data", "unknown", """#0  0x00007fa2236c08af in tensorflow::data::experimental::SnapshotDatasetV2Op::Dataset::Iterator::Reader::~Reader() ()
   from /home/user/tf-venv/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#1  0x00007fa2236c0971 in tensorflow::data::experimental::SnapshotDatasetV2Op::Dataset::Iterator::Reader::~Reader() ()
   from /home/user/tf-venv/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#2  0x00007fa2236c04aa in tensorflow::data::experimental::SnapshotDatasetV2Op::Dataset::Iterator::~Iterator() ()
   from /home/user/tf-venv/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#3  0x00007fa2222eefee in tensorflow::data::MapDatasetOp::Dataset::Iterator::~Iterator() ()
   from /home/user/tf-venv/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#4  0x00007fa222335867 in tensorflow::data::ShuffleDatasetOpBase::ShuffleDatasetBase::Iterator::~Iterator() ()
   from /home/user/tf-venv/lib/python3.7/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so
""", "tensorflow#48903")
case("gdb_int_free_numpy_unsymbolized", "allocator", "heap-corruption", """Program received signal SIGSEGV, Segmentation fault.
0x00007ffff716602f in _int_free (av=0x7ffff74a8760 <main_arena>,
    p=<optimized out>, have_lock=0) at malloc.c:3996
3996\tmalloc.c: No such file or directory.

gdb backtrace report

(gdb) bt
#0  0x00007ffff716602f in _int_free (av=0x7ffff74a8760 <main_arena>,
    p=<optimized out>, have_lock=0) at malloc.c:3996
#1  0x00007ffff2ad9ef0 in ?? ()
   from /home/user/venvs/lib/python2.7/site-packages/numpy/core/..0
#2  0x00007ffff2ad4770 in ?? ()
   from /home/user/venvs/lib/python2.7/site-packages/numpy/core/..0
#3  0x00007ffff2ad486a in ?? ()
   from /home/user/venvs/lib/python2.7/site-packages/numpy/core/..0
""", "tensorflow#9714")
case("faulthandler_pb2_import", "protobuf-serialization", "invalid-access", faulthandler_dump(
    ("/opt/hostedtoolcache/Python/3.9.18/x64/lib/python3.9/site-packages/tensorflow/core/framework/tensor_shape_pb2.py", 16, "<module>"),
    ("<frozen importlib._bootstrap>", 228, "_call_with_frames_removed"),
    ("<frozen importlib._bootstrap_external>", 850, "exec_module"),
    ("<frozen importlib._bootstrap>", 680, "_load_unlocked"),
    ("/opt/hostedtoolcache/Python/3.9.18/x64/lib/python3.9/site-packages/tensorflow/core/framework/resource_handle_pb2.py", 14, "<module>"),
), "mlflow/mlflow#15502")
case("faulthandler_no_fatal_line_h5py_close", "python-runtime", "unknown", """Following is the result of enabling fault handler

Current thread 0x0000200000044cd0 (most recent call first):
  File "/home/user/.conda/envs/env/lib/python3.6/site-packages/h5py/_hl/files.py", line 443 in close
  File "/home/user/.conda/envs/env/lib/python3.6/site-packages/tensorflow_core/python/keras/saving/hdf5_format.py", line 120 in save_model_to_hdf5
  File "/home/user/.conda/envs/env/lib/python3.6/site-packages/tensorflow_core/python/keras/saving/save.py", line 112 in save_model
  File "/home/user/.conda/envs/env/lib/python3.6/site-packages/tensorflow_core/python/keras/engine/network.py", line 1011 in save
""", "tensorflow#54747")
# Relabelled kernel-compute (was tf-runtime): the `<string>` wrapper is a tf.load_op_library op, and
# the native view of the same crash (the op library's shape function under _create_c_op) is
# custom-op code, kernel-compute by the vocabulary.
case("faulthandler_create_c_op_custom_op", "kernel-compute", "invalid-access", """Epoch 1/5000
Fatal Python error: Segmentation fault

Current thread 0x00007f8ea1ffa700 (most recent call first):
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/tensorflow/python/framework/ops.py", line 1853 in _create_c_op
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/tensorflow/python/framework/ops.py", line 2015 in __init__
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/tensorflow/python/framework/ops.py", line 3528 in _create_op_internal
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/tensorflow/python/framework/func_graph.py", line 590 in _create_op_internal
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/tensorflow/python/framework/op_def_library.py", line 748 in _apply_op_helper
  File "<string>", line 80 in warp_rnnt
  File "/home/user/miniconda3/envs/asr2/lib/python3.8/site-packages/warprnnt_tensorflow-0.1-py3.8-linux-x86_64.egg/warprnnt_tensorflow/__init__.py", line 32 in rnnt_loss
""", "HawkAaron/warp-transducer#88")
case("glibc_messages_tfjs_node", "allocator", "heap-corruption", """corrupted size vs. prev_size
corrupted size vs. prev_size while consolidating
""", "tensorflow/tfjs#7719")
case("shell_server_illegal_instruction", "library-load", "illegal-instruction", """python server.py
Illegal instruction (core dumped)
""", "tobegit3hub/simple_tensorflow_serving#4")
case("protobuf_fatal_wire_format", "protobuf-serialization", "check-failure", """2018-07-03 16:15:26.895400: I tensorflow/core/platform/cpu_feature_guard.cc:140] Your CPU supports instructions that this TensorFlow binary was not compiled to use: SSE4.1 SSE4.2 AVX
Converted 16 variables to const ops.

[libprotobuf FATAL external/protobuf_archive/src/google/protobuf/wire_format.cc:830] CHECK failed: (output->ByteCount()) == (expected_endpoint): : Protocol message serialized to a size different from what was originally expected.  Perhaps it was modified by another thread during serialization?
""", "tensorflow#20504")
case("asan_deadlysignal_xent_functor", "kernel-compute", "null-deref", """ASAN Report:

AddressSanitizer:DEADLYSIGNAL
=================================================================
==2083523==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x7fe71e96a65b bp 0x7ffd6f3a7700 sp 0x7ffd6f3a7620 T0)
==2083523==The signal is caused by a READ memory access.
==2083523==Hint: address points to the zero page.
    #0 0x7fe71e96a65b in std::_Function_handler<void (long, long), tensorflow::functor::XentFunctorBase<Eigen::ThreadPoolDevice, double>::operator()(Eigen::ThreadPoolDevice const&, Eigen::DSizes<long, 2> const&, Eigen::array<long, 2ul> const&, Eigen::array<long, 2ul> const&, Eigen::TensorMap<Eigen::Tensor<double, 2, 1, long>, 16, Eigen::MakePointer>)::{lambda(long, long)#1}>::_M_invoke(std::_Any_data const&, long&&, long&&) (/mnt/venv/lib/python3.11/site-packages/tensorflow/python/platform/../../libtensorflow_cc.so.2+0x2b56a65b)
""", "tensorflow#67531")
case("valgrind_eigen_contraction_custom_lib", "kernel-compute", "invalid-access", """==9068== Memcheck, a memory error detector
==9068== Command: ./decode /data/test.nopunc /data/export/default_build
==9068==
running punctuator
==9068== Invalid read of size 4
==9068==    at 0x5009807: void Eigen::TensorEvaluator<Eigen::TensorContractionOp<Eigen::array<Eigen::IndexPair<long>, 1ul> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const> const, Eigen::ThreadPoolDevice>::evalProduct<true, true, false, 0>(float*) const (in /home/user/export/punctuation/decode/generated/libpunctuation.so)
==9068==    by 0x5015C94: Eigen::internal::TensorExecutor<Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 2, 0, long>, 16, Eigen::MakePointer>, Eigen::TensorContractionOp<Eigen::array<Eigen::IndexPair<long>, 1ul> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const> const> const, Eigen::ThreadPoolDevice, true>::run(Eigen::TensorAssignOp<Eigen::TensorMap<Eigen::Tensor<float, 2, 0, long>, 16, Eigen::MakePointer>, Eigen::TensorContractionOp<Eigen::array<Eigen::IndexPair<long>, 1ul> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const, Eigen::TensorMap<Eigen::Tensor<float const, 2, 0, long>, 16, Eigen::MakePointer> const> const> const&, Eigen::ThreadPoolDevice const&) (in /home/user/export/punctuation/decode/generated/libpunctuation.so)
""", "tensorflow#24002")
case("hs_err_c_api_tensor_to_tensor", "tf-runtime", "invalid-access", """A fatal error has been detected by the Java Runtime Environment:
SIGSEGV (0xb) at pc=0x00007fab17a903dd, pid=26065, tid=140380063385344
JRE version: OpenJDK Runtime Environment (8.0_65-b17) (build 1.8.0_65-b17)
Java VM: OpenJDK 64-Bit Server VM (25.65-b01 mixed mode linux-amd64 compressed oops)
Problematic frame:
C  [libtensorflow.so+0x9b03dd]  tensorflow::TF_TensorToTensor(TF_Tensor const*, tensorflow::Tensor*)+0x1d
""", "tensorflow#32907")
case("hs_err_macos_tensor_bytesize", "tf-runtime", "invalid-access", """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00000001422d724c, pid=16660, tid=5635
#
# JRE version: OpenJDK Runtime Environment (11.0.2+9) (build 11.0.2+9)
# Java VM: OpenJDK 64-Bit Server VM (11.0.2+9, mixed mode, tiered, compressed oops, g1 gc, bsd-amd64)
# Problematic frame:
# C  [libtensorflow_cc.2.dylib+0x822924c]  tensorflow::TensorInterface::ByteSize() const+0xc
#
# Core dump will be written. Default location: /cores/core.16660
#
""", "tensorflow/java#320")
case("hs_err_sigill_static_init", "library-load", "illegal-instruction", """#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGILL (0x4) at pc=0x00007f3fe5154da9, pid=19433, tid=0x00007f402d3d3700
#
# JRE version: Java(TM) SE Runtime Environment (8.0_271-b09) (build 1.8.0_271-b09)
# Java VM: Java HotSpot(TM) 64-Bit Server VM (25.271-b09 mixed mode linux-amd64 compressed oops)
# Problematic frame:
# C  [libtensorflow_framework.so.1+0x744da9]  _GLOBAL__sub_I_loader.cc+0x99
#
# Failed to write core dump. Core dumps have been disabled. To enable core dumping, try "ulimit -c unlimited" before starting Java again
#

---------------  T H R E A D  ---------------

Current thread (0x00007f4024011000):  JavaThread "main" [_thread_in_native, id=19439, stack(0x00007f402d2d4000,0x00007f402d3d4000)]

siginfo: si_signo: 4 (SIGILL), si_code: 2 (ILL_ILLOPN), si_addr: 0x00007f3fe5154da9
""", "tensorflow#44754")
case("gdb_memmove_flex_delegate", "interpreter-invoke", "invalid-access", """Thread 1 "python3" received signal SIGSEGV, Segmentation fault.
__memmove_sse2_unaligned_erms () at ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:370
370    ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S: No such file or directory.
(gdb) bt
#0  __memmove_sse2_unaligned_erms () at ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:370
#1  0x00007ff291abd70c in tflite::FlexDelegate::CopyFromBufferHandle(TfLiteContext*, int, TfLiteTensor*) ()
   from /usr/local/lib/python3.6/dist-packages/tensorflow/python/_pywrap_tensorflow_internal.so
#2  0x00007ff280226f1d in tflite::impl::Subgraph::Invoke() ()
   from /usr/local/lib/python3.6/dist-packages/tensorflow/lite/python/interpreter_wrapper/_pywrap_tensorflow_interpreter_wrapper.so
#3  0x00007ff280229bd0 in tflite::impl::Interpreter::Invoke() ()
   from /usr/local/lib/python3.6/dist-packages/tensorflow/lite/python/interpreter_wrapper/_pywrap_tensorflow_interpreter_wrapper.so
#4  0x00007ff27ffc8a58 in tflite::interpreter_wrapper::InterpreterWrapper::Invoke() ()
   from /usr/local/lib/python3.6/dist-packages/tensorflow/lite/python/interpreter_wrapper/_pywrap_tensorflow_interpreter_wrapper.so
""", "tensorflow#41570")
case("gdb_strlen_signature_defs_no_signal", "interpreter-invoke", "unknown", """#0 0x0000007ff7d01710 in strlen () from /lib/aarch64-linux-gnu/libc.so.6
#1 0x0000007ff5ac1264 in tflite::InterpreterBuilder::ParseSignatureDefs(flatbuffers::Vector<flatbuffers::Offset<tflite::SignatureDef> > const*, tflite::Interpreter*) ()
from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.cpython-37m-aarch64-linux-gnu.so
#2 0x0000007ff5ac19d4 in tflite::InterpreterBuilder::operator()(std::unique_ptr<tflite::Interpreter, std::default_delete<tflite::Interpreter> >*, int) ()
from /usr/lib/python3/dist-packages/tflite_runtime/_pywrap_tensorflow_interpreter_wrapper.cpython-37m-aarch64-linux-gnu.so
""", "tensorflow#59604")

# Later blind passes: 6 labelled, 2 right, 2 refused (Windows exit codes). Left out: a bare
# "exit code 0xC0000409" sentence with no context (a verdict alone is not a report) and a
# truncated gdb SIGILL line in a std:: template of TensorFlow types with no library named
# (still unknown; see the report).
case("win_import_access_violation", "library-load", "invalid-access", """import tensorflow as tf
print("Hi");

output
Process finished with exit code -1073741819 (0xC0000005)
""", "tensorflow#26853")
case("win_after_python_logging", "unknown", "invalid-access", """INFO:tensorflow:  name = segment_ids, shape = (?, 320)
INFO:tensorflow:  name = token_label_ids, shape = (?, 320)
WARNING:tensorflow:From E:\\LACO\\ie\\src\\bert\\modeling.py:171: The name tf.variable_scope is deprecated. Please use tf.compat.v1.variable_scope instead.

Process finished with exit code -1073741819 (0xC0000005)
""", "EiraZhang/LACO#4")
case("startup_logs_then_segv", "unknown", "invalid-access", """(tf2.10) user@host:~$ python 59415.py
2023-02-08 09:38:16.564689: I tensorflow/core/platform/cpu_feature_guard.cc:193] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 AVX512F AVX512_VNNI FMA
To enable them in other operations, rebuild TensorFlow with the appropriate compiler flags.
2023-02-08 09:38:17.335082: I tensorflow/core/util/util.cc:169] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.
2023-02-08 09:38:17.722850: E tensorflow/stream_executor/cuda/cuda_blas.cc:2981] Unable to register cuBLAS factory: Attempting to register factory for plugin cuBLAS when one has already been registered
2023-02-08 09:38:19.791230: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or directory
Segmentation fault (core dumped)
""", "tensorflow#59415")
case("root_prompt_import_then_repl", "library-load", "illegal-instruction", """root@d87518e6c38b:/# python3 -c "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))"
Illegal instruction (core dumped)
root@d87518e6c38b:/# python3
Python 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] on linux
Type "help", "copyright", "credits" or "license" for more information.
>>> import tensorflow as tf
Illegal instruction (core dumped)
root@d87518e6c38b:/#
""", "tensorflow#62342")
# A last blind pass: 5 labelled, 4 right; gdb's "Program" that lost its P in the paste was not
# read as the signal line.
case("backtrace_symbols_wrapped_shape_inference", "tf-runtime", "unknown", """/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/../libtensorflow_framework.so.2(_ZN10tensorflow15shape_inference16InferenceContext3RunERKSt8functionIFNS_6Statu
sEPS1_EE+0x4e)[0x7f26c4a371ee]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/../libtensorflow_framework.so.2(_ZN10tensorflow12ShapeRefiner10RunShapeFnEPKNS_4NodeEPKNS_18OpRegistrationDataE
PNS_24ExtendedInferenceContextEPNS_15shape_inference16InferenceContextE+0x2b4)[0x7f26c4bc2834]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/../libtensorflow_framework.so.2(_ZN10tensorflow12ShapeRefiner15AddNodeInternalEPKNS_4NodeEPNS_15shape_inference
16InferenceContextE+0x907)[0x7f26c4bc3d07]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/../libtensorflow_framework.so.2(_ZN10tensorflow12ShapeRefiner7AddNodeEPKNS_4NodeE+0x13)[0x7f26c4bc4e13]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so(TF_FinishOperation+0x62c)[0x7f26ca047ccc]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/_pywrap_tf_session.so(+0x3b9bf)[0x7f26c34929bf]
/root/miniconda/envs/DEEPLABCUT/lib/python3.8/site-packages/tensorflow/python/_pywrap_tf_session.so(+0x307d0)[0x7f26c34877d0]
""", "DeepLabCut/DeepLabCut#1435")
case("fatal_check_then_python_abort", "kernel-compute", "check-failure", """2024-12-10 09:23:12.332684: F tensorflow/core/framework/tensor_shape.cc:356] Check failed: d >= 0 (0 vs. -1)
Fatal Python error: Aborted
""", "google-research/tensorflow-coder#8")
case("macos_gdb_perftools_dso_loader", "gpu-driver", "invalid-access", """Program received signal SIGSEGV, Segmentation fault.
0x00007fff8d2b8f92 in strlen () from /usr/lib/system/libsystem_c.dylib
(gdb) py-bt
Undefined command: "py-bt".  Try "help".
(gdb) bt
#0  0x00007fff8d2b8f92 in strlen () from /usr/lib/system/libsystem_c.dylib
#1  0x0000000104a0b4f0 in perftools::gputools::internal::DsoLoader::GetDsoHandle(tensorflow::StringPiece, void**, perftools::gputools::internal::DsoLoader::LoadKind) ()
   from /Users/user/anaconda2/envs/tensorflow2/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so
#2  0x0000000104a0c06c in perftools::gputools::internal::DsoLoader::GetLibcudaDsoHandle(void**) ()
   from /Users/user/anaconda2/envs/tensorflow2/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so
#3  0x0000000104a0d0d2 in std::__1::__function::__func<tensorflow::Status (*)(void**), std::__1::allocator<tensorflow::Status (*)(void**)>, tensorflow::Status (void**)>::operator()(void**&&) ()
   from /Users/user/anaconda2/envs/tensorflow2/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so
#4  0x0000000104a0c86f in perftools::gputools::internal::CachedDsoLoader::FetchHandleResult(std::__1::function<tensorflow::Status (void**)>) ()
   from /Users/user/anaconda2/envs/tensorflow2/lib/python2.7/site-packages/tensorflow/python/_pywrap_tensorflow.so
""", "tensorflow#2773")
case("gdb_numpy_api_scipy_import", "numpy-interop", "invalid-access", """stacktrace from gdb

rogram received signal SIGSEGV, Segmentation fault.
0x00007fffd50e0220 in PyArray_API () from /usr/lib64/python2.7/site-packages/numpy/core/multiarray.so
(gdb) bt
#0  0x00007fffd50e0220 in PyArray_API () from /usr/lib64/python2.7/site-packages/numpy/core/multiarray.so
#1  0x00007fffc513f3c4 in initspecfun () from /usr/lib64/python2.7/site-packages/scipy/special/specfun.so
#2  0x00007ffff7b09eb9 in _PyImport_LoadDynamicModule () from /lib64/libpython2.7.so.1.0
#3  0x00007ffff7b07f91 in import_submodule () from /lib64/libpython2.7.so.1.0
#4  0x00007ffff7b0848f in ensure_fromlist () from /lib64/libpython2.7.so.1.0
#5  0x00007ffff7b08cca in PyImport_ImportModuleLevel () from /lib64/libpython2.7.so.1.0
""", "tensorflow#2129")
case("gdb_malloc_assert_sysmalloc", "allocator", "heap-corruption", """python: malloc.c:2379: sysmalloc: Assertion `(old_top == initial_top (av) && old_size == 0) || ((unsigned long) (old_size) >= MINSIZE && prev_inuse (old_top) && ((unsigned long) old_end & (pagesize - 1)) == 0)' failed.
--Type <RET> for more, q to quit, c to continue without paging--

Thread 1 "python" received signal SIGABRT, Aborted.
__GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50
50      ../sysdeps/unix/sysv/linux/raise.c: No such file or directory.
(gdb) bt
#0  __GI_raise (sig=sig@entry=6) at ../sysdeps/unix/sysv/linux/raise.c:50
#1  0x00007ffff7d9d859 in __GI_abort () at abort.c:79
#2  0x00007ffff7e1045a in __malloc_assert (
    assertion=assertion@entry=0x7ffff7f348a8 "(old_top == initial_top (av) && old_size == 0) || ((unsigned long) (old_size) >= MINSIZE && prev_inuse (old_top) && ((unsigned long) old_end & (pagesize - 1)) == 0)", file=file@entry=0x7ffff7f303c3 "malloc.c", line=line@entry=2379,
    function=function@entry=0x7ffff7f35030 <__PRETTY_FUNCTION__.13066> "sysmalloc") at malloc.c:298
#3  0x00007ffff7e12abf in sysmalloc (nb=nb@entry=384, av=av@entry=0x7ffff7f63b80 <main_arena>) at malloc.c:2379
""", "pytorch/pytorch#46807 (a tf-nightly run)")


@pytest.mark.parametrize(("name", "c"), sorted(CASES.items()))
def test_category_and_fault_kind(name, c):
    assert_classified(name, c)


def test_the_blind_batch_is_large_enough():
    assert len(CASES) >= 40
