"""The host side of GPU processes on frames spelled the way gdb names them: the GPU call rules
(coreanalyze/gpu/host_calls.toml), entry points of stripped libraries, the thread where the user
stands, GPU waits of snapshots, signatures and advice. The real GPU core is analyzed in
tests/integration/test_gpu_host.py."""

from __future__ import annotations

import pytest

from coreanalyze.base.model import CoreInfo, Frame, Module, Report, SignalInfo, Thread
from coreanalyze.base.vocabulary import GpuCallRole
from coreanalyze.classify import classify
from coreanalyze.classify.gpuhost import find_host_call, host_call_rules, host_launched_from, parse_host_call_rules, thread_call
from coreanalyze.hang import classify_hang
from coreanalyze.hang.describe import describe_wait
from coreanalyze.hang.detect import snapshot_reason
from coreanalyze.hang.rules import hang_rules
from coreanalyze.hang.waits import thread_wait
from coreanalyze.symbols.entrypoints import mark_entry_points

PID = 464
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
LIBCUDA = "/usr/local/nvidia/lib64/libcuda.so.580.159.04"
LIBCUDART = "/venv/lib/python3.12/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12"
SCRIPT = "/home/user/job/train.py"
RUNNING = (1 << 64) - 1  # orig_rax of a thread running user code (-1)


def frames(*spec: tuple) -> list[Frame]:
    """(function, module) native frames or ("py", function, file, line) Python frames, innermost
    first, with entry points marked as the pipeline marks them."""
    out = []
    for i, item in enumerate(spec):
        if item[0] == "py":
            out.append(Frame(index=i, kind="python", function=item[1], file=item[2], line=item[3]))
        else:
            out.append(Frame(index=i, pc=0x1000 + i, function=item[0], module=item[1]))
    mark_entry_points(out)
    return out


SYNC_WAIT = frames(
    (None, LIBCUDA), (None, LIBCUDA), (None, LIBCUDA), ("cuCtxSynchronize_v2", LIBCUDA), ("cudaDeviceSynchronize", LIBCUDART),
    ("py", "launch", SCRIPT, 17), ("py", "<module>", SCRIPT, 19),
)  # fmt: skip
DRIVER_ABORT = frames(
    ("pthread_kill", LIBC), ("raise", LIBC), ("abort", LIBC), (None, LIBCUDA), (None, LIBCUDA), (None, LIBCUDA), (None, LIBCUDA), (None, LIBC),
)  # fmt: skip
MEMCPY_SEGV = frames(
    ("__memmove_avx_unaligned_erms", LIBC), (None, LIBCUDA), (None, LIBCUDA), ("cuMemcpyHtoD_v2", LIBCUDA),
    ("cudaMemcpy", LIBCUDART), ("py", "upload", SCRIPT, 8), ("py", "<module>", SCRIPT, 30),
)  # fmt: skip


def report(*threads: Thread, crashed: int, signal: SignalInfo, modules=()) -> Report:
    for t in threads:
        t.crashed = t.tid == crashed
    return Report(core=CoreInfo(path="core", pid=PID, signal=signal), crashing_thread=crashed, threads=list(threads), modules=list(modules))


ABORT = SignalInfo(number=6, name="SIGABRT", code=-6, code_name="SI_TKILL", sender_pid=PID)
SEGV = SignalInfo(number=11, name="SIGSEGV", code=1, code_name="SEGV_MAPERR", address=0x7F0012345000)


@pytest.mark.parametrize(
    "name, role, waits",
    [
        ("cuCtxSynchronize_v2", "synchronize", True),
        ("cudaDeviceSynchronize", "synchronize", True),
        ("hipDeviceSynchronize", "synchronize", True),
        ("cuStreamSynchronize_ptsz", "stream-wait", True),
        ("cudaStreamSynchronize", "stream-wait", True),
        ("hsa_signal_wait_scacquire", "stream-wait", True),
        ("cuEventSynchronize", "event-wait", True),
        ("cuMemcpyHtoD_v2", "memcpy", True),
        ("cuMemcpyDtoH_v2", "memcpy", True),
        ("cudaMemcpy", "memcpy", True),
        ("hipMemcpy", "memcpy", True),
        ("cuMemcpyHtoDAsync_v2", "memcpy", False),
        ("cudaMemcpyAsync", "memcpy", False),
        ("cuLaunchKernel", "launch", False),
        ("cudaLaunchKernel", "launch", False),
        ("hipModuleLaunchKernel", "launch", False),
        ("cudaFree", "memory", True),
        ("cudaMalloc", "memory", False),
        ("ncclAllReduce", "collective", True),
        ("ncclCommInitRank", "collective", True),
        ("stream_executor::gpu::GpuDriver::SynchronizeStream", "framework-wait", True),
        ("c10d::ProcessGroupNCCL::WorkNCCL::wait", "framework-wait", True),
    ],
)
def test_gpu_calls_and_their_roles(name, role, waits):
    rule = host_call_rules().match(name)
    assert rule is not None and (rule.role, rule.waits) == (role, waits)


@pytest.mark.parametrize("name", ["cuInit", "cudaGetDevice", "cuCtxGetCurrent", "cuMemcpyHtoDfoo", "my_cudaMemcpy", "pthread_cond_wait", ""])
def test_other_functions_are_no_gpu_call(name):
    assert host_call_rules().match(name) is None


def test_call_rules_speak_the_roles_vocabulary():
    rules = host_call_rules()
    assert rules.calls and {c.role for c in rules.calls} == set(GpuCallRole)
    with pytest.raises(ValueError, match="unknown role"):
        parse_host_call_rules({"call": [{"role": "wait", "waits": True, "function": "^x$"}]})
    with pytest.raises(ValueError, match="waits"):
        parse_host_call_rules({"call": [{"role": "launch", "function": "^x$"}]})


def test_unnamed_frames_of_a_stripped_library_carry_the_entry_point_they_run_for():
    assert [f.entry_point for f in SYNC_WAIT[:5]] == ["cuCtxSynchronize_v2"] * 3 + [None, None]
    assert all(f.function is None for f in SYNC_WAIT[:3])  # still unnamed: the code is not the entry point's own
    # A library's own thread has no entry point on its stack; libc's frames are another library.
    assert all(f.entry_point is None for f in DRIVER_ABORT)


def test_a_signal_frame_or_another_library_ends_a_run():
    handled = frames((None, LIBCUDA), ("<signal handler called>", LIBC), (None, LIBCUDA), ("cuLaunchKernel", LIBCUDA))
    assert handled[0].entry_point is None and handled[2].entry_point == "cuLaunchKernel"
    crossed = frames((None, LIBCUDA), (None, LIBCUDART), ("cudaLaunchKernel", LIBCUDART), ("cuLaunchKernel", LIBCUDA))
    assert crossed[0].entry_point is None and crossed[1].entry_point == "cudaLaunchKernel"


def test_the_innermost_call_and_the_users_python_line():
    call = thread_call(Thread(tid=PID, frames=SYNC_WAIT), main=True)
    assert call is not None
    assert (call.api, call.short_api, call.role, call.waits, call.frame_index) == ("cuCtxSynchronize_v2", "cuCtxSynchronize", "synchronize", True, 0)
    assert (call.python.function, call.python.line) == ("launch", 17)


def test_a_driver_thread_crash_points_at_the_thread_waiting_for_the_gpu():
    worker = Thread(tid=PID + 2, frames=frames(("pthread_cond_wait", LIBC), (None, LIBCUDA)))
    main = Thread(tid=PID, frames=SYNC_WAIT, role="main")
    driver = Thread(tid=PID + 6, frames=DRIVER_ABORT)
    r = report(driver, worker, main, crashed=driver.tid, signal=ABORT)
    call = find_host_call(r)
    assert call is not None and call.tid == PID and call.main
    c = classify(r)
    assert c.gpu is not None and c.gpu.api == "cuCtxSynchronize_v2"
    assert "the main thread (464) was waiting for the GPU in cuCtxSynchronize_v2, from Python launch (train.py:17)" in c.summary
    assert "in a thread of libcuda.so.580.159.04" in c.summary
    key = c.signature.rsplit(" #", 1)[0]
    assert key == "SIGABRT | libcuda.so | host cuCtxSynchronize_v2"
    assert host_launched_from(r) is None  # not yet classified as the GPU's
    r.classification = c
    launched = host_launched_from(r)
    assert launched is not None and (launched.tid, launched.function, launched.line) == (PID, "launch", 17)


def test_a_fault_inside_a_driver_copy_is_anchored_on_its_entry_point():
    main = Thread(tid=PID, frames=MEMCPY_SEGV, role="main")
    r = report(main, crashed=PID, signal=SEGV, modules=[Module(path=LIBCUDA, start=0x1000, end=0x9000)])
    c = classify(r)
    parts = c.signature.rsplit(" #", 1)[0].split(" | ")
    assert parts[:3] == ["SIGSEGV", "cuMemcpyHtoD_v2", "cudaMemcpy"]
    assert all(a != b for a, b in zip(parts, parts[1:])), parts
    assert "libcuda.so" not in parts
    assert "under cuMemcpyHtoD_v2" in c.summary and "from Python upload (/home/user/job/train.py:8)" in c.summary
    assert c.gpu is not None and c.gpu.api == "cuMemcpyHtoD_v2"
    copy_advice = [a for a in c.advice if "does not map" in a]
    assert copy_advice and "cuMemcpyHtoD_v2" in copy_advice[0] and "0x7f0012345000" in copy_advice[0]
    assert c.advice.index(copy_advice[0]) == 0


def test_a_copy_whose_address_is_mapped_gets_no_unowned_pointer_advice():
    main = Thread(tid=PID, frames=MEMCPY_SEGV, role="main")
    mapped = SignalInfo(number=11, name="SIGSEGV", code=2, code_name="SEGV_ACCERR", address=0x7F0012345000)
    c = classify(report(main, crashed=PID, signal=mapped))
    assert not any("does not map" in a for a in c.advice)
    assert any("read-only" in a for a in c.advice)


def test_gpu_advice_names_tensorflow_only_in_a_tensorflow_process():
    driver = Thread(tid=PID + 6, frames=DRIVER_ABORT)
    main = Thread(tid=PID, frames=SYNC_WAIT, role="main")
    cuda = Module(path=LIBCUDA, start=0x1000, end=0x9000)
    plain = classify(report(driver, main, crashed=driver.tid, signal=ABORT, modules=[cuda]))
    assert plain.category == "gpu-driver"
    assert not any("tf.sysconfig" in a or "TensorFlow" in a for a in plain.advice)
    assert any("CUDA_LAUNCH_BLOCKING=1" in a for a in plain.advice)
    assert any("compute-sanitizer" in a for a in plain.advice)
    assert any("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in a for a in plain.advice)
    dumping = report(driver, main, crashed=driver.tid, signal=ABORT, modules=[cuda])
    dumping.environment["environment_variable_names"] = ["CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_FILE"]
    assert not any("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in a for a in classify(dumping).advice)  # no news to it
    tf = Module(path="/venv/lib/python3.12/site-packages/tensorflow/libtensorflow_framework.so.2", start=0x10000, end=0x20000)
    with_tf = classify(report(driver, main, crashed=driver.tid, signal=ABORT, modules=[cuda, tf]))
    assert any("tf.sysconfig.get_build_info()" in a for a in with_tf.advice)


def test_a_thread_in_a_gpu_wait_waits_for_the_gpu_even_while_its_cpu_spins():
    main = Thread(tid=PID, frames=SYNC_WAIT)
    wait = thread_wait(main, {"orig_rax": RUNNING}, hang_rules(), "x86_64", None, None)
    assert wait.state == "gpu" and wait.object_kind == "cuCtxSynchronize"
    assert (wait.function, wait.line) == ("launch", 17)
    assert describe_wait(wait) == "thread 464 waiting for the GPU (cuCtxSynchronize) in launch (train.py:17)"
    polling = thread_wait(main, {"orig_rax": 7}, hang_rules(), "x86_64", None, None)
    assert (polling.state, polling.syscall) == ("gpu", "poll")
    launching = Thread(tid=PID, frames=frames((None, LIBCUDA), ("cuLaunchKernel", LIBCUDA), ("py", "step", SCRIPT, 3)))
    assert thread_wait(launching, {"orig_rax": RUNNING}, hang_rules(), "x86_64", None, None).state == "running"


def test_a_watchdogs_signal_to_a_thread_waiting_for_the_gpu_is_a_hang():
    main = Thread(tid=PID, frames=SYNC_WAIT, role="main")
    watchdog = Thread(tid=PID + 9, frames=frames(("nanosleep", LIBC)))
    from_inside = report(main, watchdog, crashed=PID, signal=ABORT)
    assert "waited for the GPU in cuCtxSynchronize_v2" in snapshot_reason(from_inside, hang_rules())
    from_outside = report(main, crashed=PID, signal=SignalInfo(number=6, name="SIGABRT", code=0, code_name="SI_USER", sender_pid=99))
    assert snapshot_reason(from_outside, hang_rules()) is not None
    # faulthandler caught it and raised it again: its frames above the signal frame are not a crash.
    handled = frames(("pthread_kill", LIBC), ("raise", LIBC), ("faulthandler_fatal_error", LIBC), ("<signal handler called>", LIBC), *[
        (f.function, f.module) for f in SYNC_WAIT[:5]])  # fmt: skip
    reraised = SignalInfo(number=6, name="SIGABRT", code=0, code_name="SI_USER", sender_pid=99, reraised_by="faulthandler")
    assert snapshot_reason(report(Thread(tid=PID, frames=handled), crashed=PID, signal=reraised), hang_rules()) is not None
    # The same before the original siginfo is read: the handler's raise names the thread itself.
    handler_only = frames(("pthread_kill", LIBC), ("raise", LIBC), ("<signal handler called>", LIBC), *[(f.function, f.module) for f in SYNC_WAIT[:5]])
    assert "waited for the GPU" in snapshot_reason(report(Thread(tid=PID, frames=handler_only), crashed=PID, signal=ABORT), hang_rules())
    sleeping = frames(("pthread_kill", LIBC), ("raise", LIBC), ("<signal handler called>", LIBC), ("clock_nanosleep", LIBC))
    assert snapshot_reason(report(Thread(tid=PID, frames=sleeping), crashed=PID, signal=ABORT), hang_rules()) is None
    # The verdict on it.
    hang = classify_hang(from_inside, None)
    assert hang is not None and hang.fault_kind == "hang" and hang.gpu is not None and hang.gpu.api == "cuCtxSynchronize_v2"
    assert hang.summary.startswith("hang: thread 464 waiting for the GPU (cuCtxSynchronize) in launch (train.py:17)")
    assert any("collective" in a for a in hang.advice)
    assert hang.signature == "hang | gpu cuCtxSynchronize | launch"
    # A driver thread that aborted on its own is a crash.
    driver = Thread(tid=PID + 6, frames=DRIVER_ABORT)
    assert snapshot_reason(report(driver, main, crashed=driver.tid, signal=ABORT), hang_rules()) is None
