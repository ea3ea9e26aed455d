"""GPU crash texts in triage: what a user of a real GPU process pastes (../shared/data/gpu, read
where it lies), and the shapes the GPU tools and frameworks print (compute-sanitizer, cuda-gdb,
CUDA errors in Python tracebacks, device-side assertions, allocator out-of-memory logs, Xid)."""

from __future__ import annotations

import pytest
from support.paths import DATA, GPU_DATA
from support.require import missing

from coreanalyze.classify.device import human_size
from coreanalyze.classify.gpuerrors import match_error, oom_from_text, parse_size
from coreanalyze.triage import parse_text, triage_text

GIB = 1 << 30
MIB = 1 << 20


def real_text(name: str) -> str:
    path = GPU_DATA / name
    if not path.is_file():
        missing(f"the real GPU crash texts ({path})")
    return path.read_text(encoding="utf-8")


def triaged(text: str, name: str = "gpu.txt"):
    return triage_text(text, name)


# ----------------------------------------------------------------------------- the real H100 texts


def test_compute_sanitizer_report_names_the_kernel_access_and_launch_site():
    report = triaged(real_text("compute_sanitizer.cupy_illegal_address.txt"))
    c = report.classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert c.gpu.exception == "Invalid __global__ write of size 4 bytes"
    assert (c.gpu.kernel, c.gpu.kernel_offset) == ("scatter_rows", 0xB0)
    assert (c.gpu.block, c.gpu.thread, c.gpu.address) == ([0, 0, 0], [1, 0, 0], 0x83D78A800200)
    assert c.signature.startswith("gpu-exception | Invalid __global__ write | scatter_rows #")
    assert "s2_illegal_address.py:16" in c.summary  # the launch, from the host backtrace
    frames = report.crashed_thread.frames
    assert frames[0].function == "scatter_rows"
    assert [f.function for f in frames if f.kind == "python"] == ["launch", "<module>"]
    assert any("33 errors" in w for w in report.warnings)


def test_cupy_runtime_error_is_an_illegal_address_seen_at_synchronize():
    report = triaged(real_text("cupy_runtime_error.cupy_illegal_address.txt"))
    c = report.classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert c.gpu.exception == "cudaErrorIllegalAddress"
    assert c.signature.startswith("gpu-exception | Illegal Address | no kernel #")
    assert "s2_illegal_address.py:17" in c.summary
    assert [f.line for f in report.crashed_thread.frames][-2:] == [17, 19]
    # The later tracebacks (module unload during cleanup) repeat the error; they are not the verdict.
    assert any("later GPU error was left out: cupy_backends.cuda.api.driver.CUDADriverError" in w for w in report.warnings)


def test_cuda_gdb_on_the_gpu_core_gives_the_focus():
    c = triaged(real_text("cuda_gdb.cupy_illegal_address.earlier_run.txt")).classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    g = c.gpu
    assert (g.exception, g.kernel, g.grid, g.block, g.thread) == ("Warp Illegal Address", "scatter_rows", 2, [0, 0, 0], [0, 0, 0])
    assert (g.device, g.sm, g.warp, g.lane, g.pc) == (0, 124, 1, 0, 0x7F163B7ACEB0)
    assert (g.device_name, g.sm_arch, g.gpu_core) == ("NVIDIA H100 80GB HBM3", "sm_90", "cores/gpu.564.nvcudmp")
    # One fault, two tools: the same group as the sanitizer's or the runtime's view of it.
    assert c.signature.startswith("gpu-exception | Illegal Address | scatter_rows #")


def test_stderr_of_the_aborted_process_says_the_driver_wrote_a_gpu_core():
    c = triaged(real_text("stderr.cupy_illegal_address.txt")).classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert "GPU core dump" in c.gpu.exception
    assert c.summary.startswith("SIGABRT after a GPU exception")
    assert "s2_illegal_address.py:17" in c.summary


# ----------------------------------------------------------------------------- the shapes of other tools

PYTORCH_ASSERT = """/opt/conda/conda-bld/pytorch_1695392067780/work/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [1,0,0], thread: [115,0,0] Assertion `input_val >= zero && input_val <= one` failed.
/opt/conda/conda-bld/pytorch_1695392067780/work/aten/src/ATen/native/cuda/Loss.cu:94: operator(): block: [1,0,0], thread: [116,0,0] Assertion `input_val >= zero && input_val <= one` failed.
Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    loss.backward()
  File "/home/u/venv/lib/python3.10/site-packages/torch/_tensor.py", line 492, in backward
    torch.autograd.backward(
RuntimeError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_pytorch_device_side_assert_takes_block_and_thread_from_the_assertion_line():
    report = triaged(PYTORCH_ASSERT)
    c = report.classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert (c.gpu.block, c.gpu.thread) == ([1, 0, 0], [115, 0, 0])
    assert c.gpu.kernel == "operator() at Loss.cu:94"
    assert c.signature.startswith("gpu-exception | Device-side Assert | operator() at Loss.cu:94 #")
    assert "train.py:40" in c.summary
    assert any("2 GPU threads" in w for w in report.warnings)


def test_torch_out_of_memory_gives_request_capacity_and_use():
    text = """Traceback (most recent call last):
  File "/work/finetune.py", line 88, in <module>
    out = model(batch)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.11 GiB of which 6.56 MiB is free. Including non-PyTorch memory, this process has 79.10 GiB memory in use. Of the allocated memory 78.32 GiB is allocated by PyTorch.
"""
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "out-of-memory")
    assert (c.oom.allocator, c.oom.requested) == ("PyTorch CUDA caching allocator", 20 * MIB)
    assert (c.oom.limit, c.oom.in_use) == (int(79.11 * GIB), int(79.10 * GIB))
    assert c.signature.startswith("out-of-memory | PyTorch CUDA caching allocator #")
    assert "20.00 MiB requested" in c.summary and "finetune.py:88" in c.summary


def test_bfc_log_and_stats_then_resource_exhausted():
    text = """2020-04-01 13:06:02.950000: W tensorflow/core/common_runtime/bfc_allocator.cc:419] Allocator (GPU_0_bfc) ran out of memory trying to allocate 45.53MiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.
2020-04-01 13:06:02.957000: W tensorflow/core/common_runtime/bfc_allocator.cc:424] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824).  Current allocation summary follows.
2020-04-01 13:06:02.957352: I tensorflow/core/common_runtime/bfc_allocator.cc:964] total_region_allocated_bytes_: 2397175808 memory_limit_: 2397175808 available bytes: 0
2020-04-01 13:06:02.957592: I tensorflow/core/common_runtime/bfc_allocator.cc:970] Stats: 
Limit:                  2397175808
InUse:                  2395943424
MaxInUse:               2395943424
tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[256,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:MatMul]
"""
    c = triaged(text).classification
    assert c.fault_kind == "out-of-memory"
    assert c.oom.allocator == "BFC (GPU_0_bfc)"
    assert (c.oom.requested, c.oom.limit, c.oom.in_use) == (GIB, 2397175808, 2395943424)


def test_jax_out_of_memory_is_xla():
    text = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 7406166528 bytes.\n"
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("xla", "out-of-memory")
    assert (c.oom.allocator, c.oom.requested) == ("XLA", 7406166528)


def test_jax_illegal_address_names_the_fusion_kernel():
    text = ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: "
            "custom call 'xla.gpu.func.launch' failed: Failed to launch CUDA kernel: fusion_2 with block dimensions: 256x1x1 "
            "and grid dimensions: 1x1x1: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered\n")  # fmt: skip
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("xla", "gpu-exception")
    assert (c.gpu.exception, c.gpu.kernel) == ("CUDA_ERROR_ILLEGAL_ADDRESS", "fusion_2")


def test_xid_line_names_the_fault_and_the_process():
    text = ("[22859.081860] NVRM: Xid (PCI:0000:01:00): 31, pid=14292, name=python, Ch 00000030, intr 00000000. MMU Fault: "
            "ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f29_5b8c9000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
            "[22859.081900] NVRM: Xid (PCI:0000:01:00): 43, pid=14292, name=python, Ch 00000030\n")  # fmt: skip
    report = triaged(text)
    c = report.classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert c.gpu.exception == "Xid 31: GPU memory page fault (MMU fault)"
    assert c.gpu.address == 0x7F295B8C9000
    assert report.core.pid == 14292
    assert "an address that is not mapped" in c.detail


def test_xid_consequence_lines_are_not_the_verdict_but_hardware_xids_are():
    text = ("NVRM: Xid (PCI:0000:0a:00): 45, pid='<unknown>', name=<unknown>, Ch 00000008\n"
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1911, name=python3, GPU has fallen off the bus.\n")  # fmt: skip
    c = triaged(text).classification
    assert c.gpu.exception == "Xid 79: GPU has fallen off the bus"
    assert "hardware" in c.detail


SANITIZER_RACECHECK = """========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at reduce(int*)+0x1a0 in /home/u/race.cu:12
=========     and Read access at reduce(int*)+0x1c0 in /home/u/race.cu:14 [248 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""
SANITIZER_INITCHECK = """========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at 0x70 in /home/u/init.cu:8:use(int*)
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x7f4a2e000000
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame:/lib/x86_64-linux-gnu/libcuda.so.1 (cuLaunchKernel + 0x2cd) [0x24a5dd]
=========
========= ERROR SUMMARY: 1 error
"""
SANITIZER_SYNCCHECK = """========= COMPUTE-SANITIZER
========= Barrier error detected. Divergent thread(s) in warp
=========     at divergent+0x90 in /home/u/sync.cu:21
=========     by thread (0,0,0) in block (0,0,0)
=========
========= ERROR SUMMARY: 1 error
"""


@pytest.mark.parametrize(
    ("text", "exception", "kernel"),
    [
        (SANITIZER_RACECHECK, "Error: Race reported between Write access at reduce(int*)+0x1a0 in /home/u/race.cu:12", None),
        (SANITIZER_INITCHECK, "Uninitialized __global__ memory read of size 4 bytes", "use(int*)"),
        (SANITIZER_SYNCCHECK, "Barrier error detected. Divergent thread(s) in warp", "divergent"),
    ],
    ids=["racecheck", "initcheck", "synccheck"],
)
def test_sanitizer_tools_other_than_memcheck(text, exception, kernel):
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert (c.gpu.exception, c.gpu.kernel) == (exception, kernel)


def test_api_errors_are_gpu_driver_but_not_device_faults():
    text = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    c = triaged(text).classification
    assert c.category == "gpu-driver"
    assert c.fault_kind != "gpu-exception"


def test_formats_are_named():
    assert parse_text(real_text("compute_sanitizer.cupy_illegal_address.txt")).formats == ["compute-sanitizer"]
    assert "cuda-gdb" in parse_text(real_text("cuda_gdb.cupy_illegal_address.earlier_run.txt")).formats


# ----------------------------------------------------------------------------- the data behind them


@pytest.mark.parametrize(
    ("text", "size"),
    [("1.00GiB", GIB), ("20.00 MiB", 20 * MIB), ("17179869184", 17179869184), ("4.00G", 4 * GIB), ("256B", 256), ("big", None)],
)
def test_sizes_in_allocator_units(text, size):
    assert parse_size(text) == size


def test_error_names_of_runtime_driver_and_debugger_share_one_exception():
    names = ["cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", "Warp Illegal Address"]
    assert {match_error(n).exception for n in names} == {"Illegal Address"}
    assert match_error("CUDA_ERROR_OUT_OF_MEMORY").fault_kind == "out-of-memory"
    assert match_error("cudaErrorNoKernelImageForDevice").fault_kind == ""


def test_bad_alloc_message_is_operator_new():
    assert oom_from_text("terminate called after throwing an instance of 'std::bad_alloc'").allocator == "operator new"


def test_human_size():
    assert (human_size(512), human_size(GIB), human_size(20 * MIB)) == ("512 B", "1.00 GiB", "20.00 MiB")


# ----------------------------------------------------------------------------- real texts from public trackers
# tests/data/triage/gpu_*.txt, each with its source and the thread's verdict in that folder's README.

TRACKER_VERDICTS = {
    # cupy/cupy#7539: the RawKernel computed its index in 32-bit int; arrays over 8 GB overflowed it.
    "gpu_cupy_rawkernel_index_overflow.txt": ("gpu-driver", "gpu-exception", "gpu-exception | Illegal Address | no kernel"),
    # pytorch/pytorch#132640: NCCL's all-reduce reads 4 bytes of barrier()'s 1-byte buffer.
    "gpu_pytorch_nccl_barrier_sanitizer.txt": (
        "gpu-driver", "gpu-exception", "gpu-exception | Invalid __global__ read | ncclDevKernel_AllReduce_Sum_u8_RING_LL",
    ),
    # pytorch/pytorch#4701: a target class outside [0, n_classes) in the NLL loss kernel.
    "gpu_pytorch_classnll_assert.txt": (
        "gpu-driver", "gpu-exception", "gpu-exception | Device-side Assert | cunn_ClassNLLCriterion_updateOutput_kernel",
    ),
    # pytorch/pytorch#16417: the GPU's memory was used up; a smaller batch fixed it.
    "gpu_pytorch_cuda_oom.txt": ("gpu-driver", "out-of-memory", "out-of-memory | PyTorch CUDA caching allocator"),
    # jax-ml/jax#22755: the GPU ran out of memory in a jitted update step.
    "gpu_jax_resource_exhausted.txt": ("xla", "out-of-memory", "out-of-memory | XLA"),
    # tinygrad/tinygrad#6947: MMU faults of the NV backend on the stock kernel module.
    "gpu_nvrm_xid31_mmu_fault.txt": ("gpu-driver", "gpu-exception", "gpu-exception | Xid 31: GPU memory page fault (MMU fault) | no kernel"),
    # Made on an NVIDIA H200 (tests/data/triage/README.md says how): what each program did is the verdict.
    "gpu_torch_index_assert_h200.txt": ("gpu-driver", "gpu-exception", "gpu-exception | Device-side Assert | operator() at IndexKernel.cu:111"),
    "gpu_torch_oom_h200.txt": ("gpu-driver", "out-of-memory", "out-of-memory | PyTorch CUDA caching allocator"),
    "gpu_jax_bfc_oom_h200.txt": ("xla", "out-of-memory", "out-of-memory | BFC (GPU_0_bfc)"),
    "gpu_sanitizer_initcheck_cupy_h200.txt": ("gpu-driver", "gpu-exception", "gpu-exception | Uninitialized __global__ memory read | init"),
    "gpu_sanitizer_synccheck_cupy_h200.txt": (
        "gpu-driver", "gpu-exception", "gpu-exception | Barrier error detected. Divergent thread(s) in warp. | sync",
    ),
    "gpu_nvrm_xid43_h200.txt": ("gpu-driver", "gpu-exception", "gpu-exception | Xid 43: GPU stopped processing | no kernel"),
    # equinor/ert#7797: a process filling the machine's memory, killed by the kernel (reproduced on purpose).
    "oom_kill_global_dmesg.txt": ("unknown", "out-of-memory", "out-of-memory | kernel OOM killer"),
    # ArjunaCluster/ArjunaUsers#52: a training job killed at its SLURM job's memory cgroup limit.
    "oom_kill_slurm_cgroup.txt": ("unknown", "out-of-memory", "out-of-memory | cgroup"),
    # CharlesShang/FastMaskRCNN#129: TensorFlow 1.x aborted in its GPU allocator.
    "gpu_tf_eigen_allocator_oom_fatal.txt": ("allocator", "out-of-memory", "out-of-memory | EigenAllocator (GPU)"),
}


@pytest.mark.parametrize("name", sorted(TRACKER_VERDICTS))
def test_tracker_texts_get_the_threads_verdict(name):
    category, kind, signature = TRACKER_VERDICTS[name]
    c = triaged((DATA / "triage" / name).read_text(encoding="utf-8"), name).classification
    assert (c.category, c.fault_kind) == (category, kind), c.evidence
    assert c.signature.startswith(signature + " #")


def test_tracker_texts_details():
    def classification(name):
        return triaged((DATA / "triage" / name).read_text(encoding="utf-8"), name).classification

    nccl = classification("gpu_pytorch_nccl_barrier_sanitizer.txt").gpu
    assert (nccl.kernel_offset, nccl.address) == (0x1AD0, 0x7F4AC0200000)
    nll = classification("gpu_pytorch_classnll_assert.txt")
    assert (nll.gpu.block, nll.gpu.thread) == ([0, 0, 0], [0, 0, 0])
    assert nll.detail == "Assertion `t >= 0 && t < n_classes` failed (ClassNLLCriterion.cu:101)"
    oom = classification("gpu_pytorch_cuda_oom.txt").oom
    assert (oom.requested, oom.in_use, oom.limit) == (22 * MIB, int(23.60 * GIB), int(23.65 * GIB))
    assert classification("gpu_jax_resource_exhausted.txt").oom.requested == 3743729664
    assert "main.py:720" in classification("gpu_jax_resource_exhausted.txt").summary
    assert classification("gpu_cupy_rawkernel_index_overflow.txt").gpu.exception == "cudaErrorIllegalAddress"


def test_xla_execution_failure_log_line_is_an_xla_gpu_exception():
    text = ("E1120 10:59:55.894873   35984 pjrt_stream_executor_client.cc:3067] Execution of replica 0 failed: INTERNAL: "
            "Failed to retrieve branch_index value on stream 0x5583cca477e0: CUDA error: Could not synchronize CUDA stream: "
            "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered.\n")  # fmt: skip
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("xla", "gpu-exception")
    assert c.gpu.exception == "CUDA_ERROR_ILLEGAL_ADDRESS"


def test_live_cuda_gdb_session():
    text = """CUDA Exception: Warp Illegal Address
The exception was triggered at PC 0x555555b8a3d0 (kernel.cu:12)

Thread 1 "app" received signal CUDA_EXCEPTION_14, Warp Illegal Address.
[Switching focus to CUDA kernel 0, grid 1, block (3,0,0), thread (64,0,0), device 0, sm 2, warp 5, lane 0]
0x0000555555b8a3e0 in fill<<<4,128>>> (p=0x0) at kernel.cu:12
12\t    p[i] = 1;
"""
    c = triaged(text).classification
    assert c.fault_kind == "gpu-exception"
    g = c.gpu
    assert (g.exception, g.kernel, g.grid, g.block, g.thread, g.sm, g.warp) == ("Warp Illegal Address", "fill", 1, [3, 0, 0], [64, 0, 0], 2, 5)
    assert c.signature.startswith("gpu-exception | Illegal Address | fill #")


def test_sanitizer_line_quoted_without_its_margin():
    text = '> Program hit CUDA_ERROR_ILLEGAL_ADDRESS (error 700) due to "an illegal memory access was encountered" on CUDA API call to cuMemcpyDtoHAsync_v2\n'
    c = triaged(text).classification
    assert c.fault_kind == "gpu-exception"
    assert (c.gpu.exception, c.gpu.api) == ("CUDA_ERROR_ILLEGAL_ADDRESS", "cuMemcpyDtoHAsync_v2")


def test_bfc_warning_the_caller_survives_is_not_the_failure():
    text = ("2020-09-24 21:35:23.363348: W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran out of "
            "memory trying to allocate 1.02GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean "
            "that there could be performance gains if more memory were available.\n"
            "Segmentation fault (core dumped)\n")  # fmt: skip
    assert triaged(text).classification.fault_kind != "out-of-memory"


# ----------------------------------------------------------------------------- fatal messages of cores


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("F0000 00:00:1712345678.123456  4242 gpu_device.cc:1430] failed to allocate 8.00G: CUDA_ERROR_OUT_OF_MEMORY: out of memory", "out-of-memory"),
        ("Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to 1073741824)", "out-of-memory"),
        ("F0000 00:00:1712345678.123456  4242 gpu_util.cc:370] GPU sync failed", "gpu-exception"),
        ("2024-01-01 00:00:00.000000: F tensorflow/stream_executor/cuda/cuda_dnn.cc:194] Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)", "check-failure"),
    ],
)
def test_fatal_messages_of_a_core_name_the_fault_kind(message, kind):
    from coreanalyze.base.model import SignalInfo
    from coreanalyze.classify.faultkind import fault_kind

    got, evidence = fault_kind(SignalInfo(number=6, name="SIGABRT"), message, [], {})
    assert got == kind, evidence


def test_pytorch_c10_error_backtrace_under_terminate():
    # The shape of https://github.com/Scalsol/RepPointsV2/issues/15 (PyTorch 1.x, paths shortened).
    text = """terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: device-side assert triggered (insert_events at /tmp/pip-req-build-4baxydiv/c10/cuda/CUDACachingAllocator.cpp:569)
frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) + 0x6d (0x7f0e393a8e7d in /env/lib/python3.7/site-packages/torch/lib/libc10.so)
frame #1: <unknown function> + 0x21a83 (0x7f0e5b3d9a83 in /env/lib/python3.7/site-packages/torch/lib/libc10_cuda.so)
frame #2: c10::TensorImpl::release_resources() + 0x4d (0x7f0e3939422d in /env/lib/python3.7/site-packages/torch/lib/libc10.so)
"""
    result = parse_text(text)
    assert "c10-backtrace" in result.formats
    report = triaged(text)
    c = report.classification
    assert (c.category, c.fault_kind) == ("gpu-driver", "gpu-exception")
    assert c.signature.startswith("gpu-exception | Device-side Assert | no kernel #")
    frames = report.crashed_thread.frames
    assert [f.function for f in frames][0].startswith("c10::Error::Error")
    assert frames[1].function is None and frames[1].offset is None and frames[1].module.endswith("libc10_cuda.so")
    assert c.culprit.function != "c10::Error::Error"  # the exception's constructor is not where the error was seen


def test_tensorflow_oom_error_gives_the_tensor_bytes():
    text = ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node __wrapped__MatMul_device_/job:localhost/"
            "replica:0/task:0/device:GPU:0}} OOM when allocating tensor with shape[65536,65536] and type float on "
            "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc [Op:MatMul]\n")  # fmt: skip
    c = triaged(text).classification
    assert (c.category, c.fault_kind) == ("allocator", "out-of-memory")
    assert (c.oom.allocator, c.oom.requested) == ("BFC (GPU_0_bfc)", 65536 * 65536 * 4)


def test_h200_texts_details():
    def triage_file(name):
        return triaged((DATA / "triage" / name).read_text(encoding="utf-8"), name)

    torch_oom = triage_file("gpu_torch_oom_h200.txt").classification.oom
    assert (torch_oom.requested, torch_oom.in_use, torch_oom.limit) == (32768 * GIB, 518 * MIB, int(139.80 * GIB))
    jax_oom = triage_file("gpu_jax_bfc_oom_h200.txt").classification
    assert jax_oom.oom.requested == 8796093022208
    assert jax_oom.abort_message.startswith("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED")
    init = triage_file("gpu_sanitizer_initcheck_cupy_h200.txt").classification.gpu
    assert (init.address, init.kernel_offset, init.thread) == (0x7FE842800000, 0x60, [0, 0, 0])
    sync = triage_file("gpu_sanitizer_synccheck_cupy_h200.txt")
    assert sync.classification.gpu.exception.startswith("Barrier error detected")  # the sanitizer's error, not the traceback's
    assert "race.py:10" in sync.classification.summary
    xid = triage_file("gpu_nvrm_xid43_h200.txt")
    assert xid.core.pid == 521


def test_oom_killer_lines_give_the_process_its_memory_and_the_cgroup_limit():
    global_kill = triaged((DATA / "triage" / "oom_kill_global_dmesg.txt").read_text(encoding="utf-8"))
    assert (global_kill.core.pid, global_kill.core.signal.name) == (1440763, "SIGKILL")
    assert global_kill.classification.oom.in_use == 60356340 * 1024
    text = """[ 812.130000] memory: usage 8388608kB, limit 8388608kB, failcnt 5321
[ 812.140000] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/c1,task=python3,pid=4242,uid=1000
[ 812.141000] Memory cgroup out of memory: Killed process 4242 (python3) total-vm:12345678kB, anon-rss:8123456kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:17000kB oom_score_adj:0
"""
    oom = triaged(text).classification.oom
    assert (oom.allocator, oom.in_use, oom.limit) == ("cgroup", 8123456 * 1024, 8388608 * 1024)


SANITIZER_OOM = {
    "asan-size-too-big": (
        "==12345==ERROR: AddressSanitizer: requested allocation size 0xfffffffffffffffc (0x800 after adjustments for alignment, "
        "red zones etc.) exceeds maximum supported size of 0x10000000000 (thread T0)\n"
        "    #0 0x4c1234 in malloc (/out/fuzzer+0x4c1234)\n    #1 0x4f0000 in parse_header /src/lib/parse.c:77:9\n"
        "SUMMARY: AddressSanitizer: allocation-size-too-big (/out/fuzzer+0x4c1234) in malloc\n",
        ("AddressSanitizer", 0xFFFFFFFFFFFFFFFC, None, None),
    ),
    "libfuzzer-rss": (
        "==4242== ERROR: libFuzzer: out-of-memory (used: 2049Mb; exceeds: 2048Mb)\n"
        "   To change the out-of-memory limit use -rss_limit_mb=<N>\n\n"
        "2039217152 byte(s) (99%) in 1 allocation(s)\n"
        "    #0 0x52a9f8 in malloc (/out/fuzzer+0x52a9f8)\n    #1 0x55c8f4 in decode /src/decode.c:120:14\n",
        ("libFuzzer", None, 2049 * MIB, 2048 * MIB),
    ),
}


@pytest.mark.parametrize("name", sorted(SANITIZER_OOM))
def test_sanitizer_and_fuzzer_allocation_refusals_are_out_of_memory(name):
    text, (allocator, requested, in_use, limit) = SANITIZER_OOM[name]
    c = triaged(text).classification
    assert c.fault_kind == "out-of-memory"
    assert (c.oom.allocator, c.oom.requested, c.oom.in_use, c.oom.limit) == (allocator, requested, in_use, limit)
