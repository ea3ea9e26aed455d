"""The host side of a real GPU fault (../shared/data/gpu: an NVIDIA H100, cupy): the CUDA driver
aborts the process from a thread of its own while the main thread waits in cuCtxSynchronize_v2,
called from Python line 17. Analyzed with the machine's sysroot, whose libcuda keeps only its
exported names and unwind tables, and which holds the driver's file but not the libcuda.so.1
link the program opened; the site-packages libraries (cupy) are not here."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from support.clirun import analyze_json
from support.gpudata import core_alone

from coreanalyze.base.model import report_from_dict
from coreanalyze.corefile import read_core
from coreanalyze.hang.describe import describe_wait
from coreanalyze.hang.rules import hang_rules
from coreanalyze.hang.waits import thread_waits
from coreanalyze.process.process import Process

MAIN = 464
DRIVER_THREAD = 470
LIBCUDA = "libcuda.so.580.159.04"


@functools.cache
def _report(core: Path, sysroot: Path) -> dict:
    return analyze_json(core, "--sysroot", str(sysroot))


@pytest.fixture
def gpu_report(gpu_crash) -> dict:
    return _report(gpu_crash.core, gpu_crash.sysroot)


def _thread(report: dict, tid: int) -> dict:
    return next(t for t in report["threads"] if t["tid"] == tid)


def test_gdb_unwinds_through_libcuda_under_the_name_the_program_opened(gpu_crash, gpu_report):
    # The sysroot has the driver's file only: gdb is given a link under the loader's name.
    assert not (gpu_crash.sysroot / "usr/local/nvidia/lib64/libcuda.so.1").exists()
    frames = _thread(gpu_report, MAIN)["frames"]
    entry = next(f for f in frames if f["function"] == "cuCtxSynchronize_v2")
    assert entry["module"].endswith(LIBCUDA)
    inner = frames[: entry["index"]]
    assert inner and all(f["module"].endswith(LIBCUDA) and f["function"] is None for f in inner)
    assert {f["entry_point"] for f in inner} == {"cuCtxSynchronize_v2"}
    # The driver's own thread unwinds through libcuda too, and has no entry point on its stack.
    driver = _thread(gpu_report, DRIVER_THREAD)["frames"]
    in_cuda = [f for f in driver if (f["module"] or "").endswith(LIBCUDA)]
    assert len(in_cuda) > 1 and not any(f["entry_point"] for f in in_cuda)


def test_the_python_frames_sit_under_the_native_call_they_made(gpu_report):
    frames = _thread(gpu_report, MAIN)["frames"]
    kinds = [f["kind"] for f in frames]
    first_python = kinds.index("python")
    assert first_python > 0 and all(k == "native" for k in kinds[:first_python])
    assert [(f["function"], f["line"]) for f in frames if f["kind"] == "python"] == [("launch", 17), ("<module>", 19)]


def test_the_verdict_names_where_the_user_stands(gpu_report):
    c = gpu_report["classification"]
    assert gpu_report["crashing_thread"] == DRIVER_THREAD
    assert c["gpu"]["api"] == "cuCtxSynchronize_v2"
    assert "the main thread (464) was waiting for the GPU in cuCtxSynchronize_v2" in c["summary"]
    assert "launch" in c["summary"] and ".py:17)" in c["summary"]
    launched = gpu_report["launched_from"]
    assert (launched["tid"], launched["function"], launched["line"]) == (MAIN, "launch", 17)
    assert launched["file"].endswith(".py")


def test_the_signature_is_no_run_of_module_names(gpu_crash, gpu_report, tmp_path):
    parts = gpu_report["classification"]["signature"].rsplit(" #", 1)[0].split(" | ")
    assert all(a != b for a, b in zip(parts, parts[1:])), parts
    # The GPU core beside the core names the exception and the kernel: the signature's anchor.
    assert parts == ["gpu-exception", "Illegal Address", "scatter_rows"]
    # Without it, the host's call is.
    alone = _report(core_alone(gpu_crash, tmp_path), gpu_crash.sysroot)["classification"]["signature"]
    assert "host cuCtxSynchronize_v2" in alone.rsplit(" #", 1)[0].split(" | ")


def test_the_advice_fits_a_cupy_process(gpu_report):
    names = {p["name"] for p in gpu_report["environment"]["packages"]}
    # The import name, or the distribution the core's own dist-info names (cupy-cuda13x).
    assert any(n == "cupy" or n.startswith("cupy-") for n in names), names
    assert not any("tensorflow" in n for n in names)
    advice = " ".join(gpu_report["classification"]["advice"])
    assert "tf.sysconfig" not in advice and "TensorFlow" not in advice
    assert "CUDA_LAUNCH_BLOCKING=1" in advice and "compute-sanitizer" in advice
    # The process had the GPU core dump on: asking for it next time is no news.
    assert "CUDA_ENABLE_COREDUMP_ON_EXCEPTION" in gpu_report["environment"]["environment_variable_names"]
    assert "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" not in advice


def test_the_main_thread_waits_for_the_gpu(gpu_crash, gpu_report):
    report = report_from_dict(gpu_report)
    notes = read_core(str(gpu_crash.core))
    try:
        waits = {w.tid: w for w in thread_waits(report.threads, Process(notes), hang_rules())}
    finally:
        notes.close()
    main = waits[MAIN]
    assert main.state == "gpu" and main.object_kind == "cuCtxSynchronize"
    assert describe_wait(main).startswith("thread 464 waiting for the GPU (cuCtxSynchronize) in launch (")
    # The driver's helper threads wait on their own conditions, not for the GPU.
    assert sum(w.state == "gpu" for w in waits.values()) == 1
    # The driver aborted on its own: a crash, not a hang.
    assert gpu_report["classification"]["fault_kind"] != "hang"
