"""The driver's GPU core dump of the real H100 fault (../shared/data/gpu): what the GPU did, read
from the GPU core alone, beside its CPU core, given with --gpu-core, missing, broken, and in a
batch. The facts are checked against what NVIDIA's own tools said about the same program
(cuda-gdb on an earlier run's GPU core, compute-sanitizer) and against the program itself."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli
from support.gpudata import core_alone

from coreanalyze.base.errors import BadInput
from coreanalyze.gpu.coredump import read_gpu_core

PID = 464  # the crashed process (README of the data; the CPU core's notes say it too)
# Signatures name the exception as every GPU source does (classify.device), then a hash.
SCATTER_ROWS = "gpu-exception | Illegal Address | scatter_rows #"


@pytest.fixture(scope="module")
def dump(gpu_crash):
    return read_gpu_core(gpu_crash.gpu_core)


@pytest.fixture(scope="module")
def sanitizer(gpu_crash) -> str:
    return (gpu_crash.texts / "compute_sanitizer.cupy_illegal_address.txt").read_text()


@pytest.fixture(scope="module")
def cuda_gdb(gpu_crash) -> str:
    return (gpu_crash.texts / "cuda_gdb.cupy_illegal_address.earlier_run.txt").read_text()


def _link(directory: Path, target: Path, name: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    link = directory / name
    if not link.exists():
        link.symlink_to(target)
    return link


# ------------------------------------------------------------------------------ the reader


def test_the_exception_and_kernel_are_what_cuda_gdb_and_compute_sanitizer_said(dump, cuda_gdb, sanitizer):
    first = dump.first
    exception = re.search(r"CUDA Exception: (.+)", cuda_gdb).group(1).strip()
    assert first.exception == exception == "Warp Illegal Address"
    kernel = re.search(r"Invalid __global__ write of size \d+ bytes\n=+\s+at (\w+)\+0x([0-9a-f]+)", sanitizer)
    assert dump.kernel.name == kernel.group(1) == "scatter_rows"
    # The store that faulted, at the same offset compute-sanitizer names.
    assert first.pc - dump.kernel.entry == int(kernel.group(2), 16)
    # cuda-gdb's focus: the first faulting lane is thread (0,0,0) of block (0,0,0), on device 0.
    focus = re.search(r"block \((\d+),(\d+),(\d+)\), thread \((\d+),(\d+),(\d+)\), device (\d+)", cuda_gdb)
    assert first.block == tuple(int(g) for g in focus.groups()[:3])
    assert first.thread == tuple(int(g) for g in focus.groups()[3:6])
    assert first.device == int(focus.group(7))


def test_the_launch_is_the_programs(dump, gpu_crash, sanitizer):
    # k((1,), (32,), ...): one block of 32 threads; threads 1..31 write out of bounds (thread 0's
    # row is dst itself), and a warp exception marks every lane of the one warp.
    assert "k((1,), (32,)" in gpu_crash.script.read_text()
    assert dump.kernel.grid_dim == (1, 1, 1)
    assert dump.kernel.block_dim == (32, 1, 1)
    assert dump.faulting_lanes == 32 and dump.faulting_warps == 1
    threads = sorted(f.thread for f in dump.faults)
    assert threads == [(x, 0, 0) for x in range(32)]
    assert all(f.lane == f.thread[0] for f in dump.faults)
    sanitized = {(int(x), int(y), int(z)) for x, y, z in re.findall(r"by thread \((\d+),(\d+),(\d+)\)", sanitizer)}
    assert sanitized == set(threads) - {(0, 0, 0)}


def test_device_sm_and_driver(dump, gpu_crash, cuda_gdb):
    device_text = (gpu_crash.texts / "device.txt").read_text()
    device = dump.device(dump.first.device)
    assert device.name == "NVIDIA H100 80GB HBM3" and device.name in device_text
    assert device.sm_arch == "sm_90" and "sm_90" in cuda_gdb
    assert device.sm_count == 132
    assert 0 <= dump.first.sm < device.sm_count and dump.first.warp is not None
    driver = re.search(r"Driver Version: (\d+\.\d+)", device_text).group(1)
    assert dump.driver_version == driver
    assert dump.cuda_version == re.search(r"CUDA Version: (\d+\.\d+)", device_text).group(1)
    assert dump.warnings == []


# ------------------------------------------------------------------------------ the GPU core alone


def test_gpu_core_alone_gives_the_gpu_verdict_in_json(gpu_crash, dump):
    report = analyze_json(gpu_crash.gpu_core)
    cls = report["classification"]
    gpu = cls["gpu"]
    assert cls["fault_kind"] == "gpu-exception"
    assert cls["signature"].startswith(SCATTER_ROWS)
    assert cls["category"] == "gpu-driver"
    assert cls["confidence"] == "high"
    assert gpu["exception"] == "Warp Illegal Address" and gpu["kernel"] == "scatter_rows"
    assert (gpu["device"], gpu["sm"], gpu["warp"], gpu["lane"]) == (0, dump.first.sm, dump.first.warp, 0)
    assert gpu["block"] == [0, 0, 0] and gpu["thread"] == [0, 0, 0]
    assert gpu["grid"] == dump.first.grid
    assert int(gpu["pc"], 16) == dump.first.pc and gpu["kernel_offset"] == 0xB0
    assert gpu["device_name"] == "NVIDIA H100 80GB HBM3" and gpu["sm_arch"] == "sm_90"
    assert gpu["gpu_core"] == str(gpu_crash.gpu_core) and gpu["gpu_core_status"] == "read"
    assert cls["summary"].startswith(
        f"GPU exception Warp Illegal Address in kernel scatter_rows (device 0, SM {dump.first.sm}, warp {dump.first.warp}, lane 0,"
        " block (0,0,0), thread (0,0,0)) at scatter_rows+0xb0"
    )
    assert any("compute-sanitizer" in line for line in cls["advice"])
    assert not any("CUDA_ENABLE_COREDUMP_ON_EXCEPTION" in line for line in cls["advice"])  # the GPU core is here


def test_the_gpu_core_and_cuda_gdbs_text_of_the_same_fault_share_a_signature(gpu_crash):
    core = analyze_json(gpu_crash.gpu_core)["classification"]["signature"]
    pasted = run_cli("triage", str(gpu_crash.texts / "cuda_gdb.cupy_illegal_address.earlier_run.txt"), "--format", "json")
    assert pasted.code == 0, pasted.stderr
    assert core == pasted.json["classification"]["signature"] and core.startswith(SCATTER_ROWS)


@pytest.mark.parametrize("fmt, heading", [("text", "What the GPU did"), ("markdown", "**What the GPU did**"), ("html", "<h2>What the GPU did</h2>")])
def test_every_format_has_the_gpu_section(gpu_crash, fmt, heading):
    run = run_cli(str(gpu_crash.gpu_core), "--format", fmt, "-o", "-")
    assert run.code == 0, run.stderr
    assert heading in run.stdout
    for fact in ("Warp Illegal Address", "scatter_rows", "NVIDIA H100 80GB HBM3", "sm_90", "(0,0,0)", "0xb0", str(gpu_crash.gpu_core)):
        assert fact in run.stdout, (fmt, fact)


# ------------------------------------------------------------------------------ beside a CPU core


@pytest.fixture(scope="module")
def cpu_with_gpu_core(gpu_crash) -> dict:
    # The fixture's directory holds the CPU core and the GPU core under the name the process's
    # CUDA_COREDUMP_FILE (gpu.%p.nvcudmp) gives it.
    assert gpu_crash.core.parent == gpu_crash.gpu_core.parent
    return analyze_json(gpu_crash.core, "--sysroot", str(gpu_crash.sysroot))


def test_cpu_core_finds_its_gpu_core_and_names_the_kernel(cpu_with_gpu_core, gpu_crash, dump):
    cls = cpu_with_gpu_core["classification"]
    assert cpu_with_gpu_core["core"]["pid"] == PID
    assert cls["fault_kind"] == "gpu-exception"
    assert cls["signature"].startswith(SCATTER_ROWS)
    assert "libcuda.so | libcuda.so" not in cls["signature"]
    assert cls["gpu"]["gpu_core"] == str(gpu_crash.gpu_core)
    assert cls["gpu"]["kernel"] == "scatter_rows" and cls["gpu"]["exception"] == "Warp Illegal Address"
    assert cls["summary"].startswith(f"GPU exception Warp Illegal Address in kernel scatter_rows (device 0, SM {dump.first.sm},")
    # The CPU side: the driver's own thread raised the SIGABRT.
    crashed = cpu_with_gpu_core["crashing_thread"]
    assert f"SIGABRT from thread {crashed}, in libcuda.so" in cls["summary"]
    # Where the user stands: the Python line blocked in the synchronize that saw the fault.
    assert f"the main thread ({PID}) was waiting for the GPU in cuCtxSynchronize_v2, from Python launch (" in cls["summary"]
    assert cls["summary"].endswith(".py:17).")
    assert (cpu_with_gpu_core["launched_from"]["tid"], cpu_with_gpu_core["launched_from"]["line"]) == (PID, 17)
    assert any(line.startswith(f"GPU core {gpu_crash.gpu_core}: Warp Illegal Address") for line in cls["evidence"])
    assert any("the driver ended the process after the GPU exception" in line for line in cls["evidence"])
    assert cls["confidence"] == "high"


def test_gpu_core_option(gpu_crash, tmp_path):
    core = _link(tmp_path / "elsewhere", gpu_crash.core, f"core.{PID}")
    report = analyze_json(core, "--sysroot", str(gpu_crash.sysroot), "--gpu-core", str(gpu_crash.gpu_core))
    assert report["classification"]["gpu"]["gpu_core"] == str(gpu_crash.gpu_core)
    assert report["classification"]["signature"].startswith(SCATTER_ROWS)


def test_gpu_core_option_that_is_no_gpu_core_is_bad_input(gpu_crash, tmp_path):
    fifo = tmp_path / "gpu.fifo"
    os.mkfifo(fifo)  # opening it would block forever
    for given in (gpu_crash.script, fifo):
        run = run_cli(str(gpu_crash.core), "--gpu-core", str(given), "-o", "-", "--format", "json", timeout=60)
        assert run.code == 2
        assert run.stderr.count("\n") == 1 and "not a GPU core dump" in run.stderr


def test_without_the_gpu_core_the_driver_abort_still_says_the_gpu_faulted(gpu_crash, tmp_path):
    core = core_alone(gpu_crash, tmp_path / "alone")
    cls = analyze_json(core, "--sysroot", str(gpu_crash.sysroot))["classification"]
    assert cls["fault_kind"] == "gpu-exception"
    assert cls["confidence"] == "medium"
    assert cls["signature"].startswith("gpu-exception | unknown exception | host cuCtxSynchronize_v2 #")
    gpu = cls["gpu"]
    # Where the driver wrote it, from the process's CUDA_COREDUMP_FILE with the pid filled in.
    assert gpu["gpu_core"].endswith(f"gpu.{PID}.nvcudmp") and gpu["gpu_core_status"] == "not-found"
    assert gpu["exception"] is None and gpu["kernel"] is None
    assert cls["summary"].startswith("The GPU faulted: the CUDA driver ended the process")
    assert any("CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1" in line for line in cls["evidence"])
    assert any("--gpu-core" in line and gpu["gpu_core"] in line for line in cls["advice"])


def test_a_broken_gpu_core_beside_the_core_is_a_warning(gpu_crash, tmp_path):
    directory = tmp_path / "broken"
    core = _link(directory, gpu_crash.core, f"core.{PID}")
    (directory / f"gpu.{PID}.nvcudmp").write_bytes(gpu_crash.gpu_core.read_bytes()[:4096])
    run = run_cli(str(core), "--sysroot", str(gpu_crash.sysroot), "--format", "json", "-o", "-")
    assert run.code == 0, run.stderr
    cls = run.json["classification"]
    assert cls["fault_kind"] == "gpu-exception" and cls["gpu"]["gpu_core_status"] == "unreadable"
    assert cls["gpu"]["gpu_core"] == str(directory / f"gpu.{PID}.nvcudmp") and "could not be read" in cls["summary"]
    assert any("CUDA_COREDUMP_SHOW_PROGRESS=1" in line for line in cls["advice"])
    assert "the GPU core beside the core could not be read" in run.stderr


# ------------------------------------------------------------------------------ hostile GPU cores


def _variants(data: bytes, seed: int = 24):
    rng = random.Random(seed)
    shoff = int.from_bytes(data[0x28:0x30], "little")
    for size in sorted({0, 19, 20, 63, 64, 4096, shoff, shoff + 64 * 7, len(data) - 1} | {rng.randrange(len(data)) for _ in range(40)}):
        yield data[:size]
    for _ in range(400):
        flipped = bytearray(data)
        for _ in range(rng.choice((1, 4, 32))):
            # Mostly the section table and the tables, where a flip changes what is read.
            at = rng.randrange(shoff, len(data)) if rng.random() < 0.6 else rng.randrange(len(data))
            flipped[at] = rng.randrange(256)
        yield bytes(flipped)


def test_truncated_and_flipped_gpu_cores_are_one_line_or_a_result(gpu_crash, tmp_path):
    from coreanalyze.gpu.stage import gpu_core_report
    from coreanalyze.render import render

    data = gpu_crash.gpu_core.read_bytes()
    path = tmp_path / "x.nvcudmp"
    outcomes = {"bad input": 0, "report": 0}
    for variant in _variants(data):
        path.write_bytes(variant)
        try:
            report, _ = gpu_core_report(str(path))
        except BadInput as e:
            assert "\n" not in str(e)
            outcomes["bad input"] += 1
            continue
        outcomes["report"] += 1
        for fmt in ("json", "text", "markdown", "html"):
            render(report, fmt)
    assert outcomes["bad input"] and outcomes["report"]


@pytest.mark.parametrize("cut", [20, 1000, 300_000])
def test_truncated_gpu_core_on_the_command_line_exits_2(gpu_crash, tmp_path, cut):
    path = tmp_path / f"gpu.{PID}.nvcudmp"
    path.write_bytes(gpu_crash.gpu_core.read_bytes()[:cut])
    run = run_cli(str(path), "-o", "-", "--format", "json")
    assert run.code == 2, run.stdout
    assert run.stderr.count("\n") == 1 and str(path) in run.stderr


def test_gpu_core_missing_its_last_bytes_is_a_partial_report(gpu_crash, tmp_path):
    # The section table is the file's tail: losing its last entry (the section names) still
    # leaves every table readable.
    path = tmp_path / f"gpu.{PID}.nvcudmp"
    path.write_bytes(gpu_crash.gpu_core.read_bytes()[:-1])
    run = run_cli(str(path), "-o", "-", "--format", "json")
    assert run.code == 3
    assert run.json["classification"]["signature"].startswith(SCATTER_ROWS)
    assert "truncated" in run.stderr


# ------------------------------------------------------------------------------ batch


def _groups(out: Path) -> list[dict]:
    return json.loads((out / "summary.json").read_text())["groups"]


def test_batch_groups_the_gpu_exception_once_with_its_cpu_core(gpu_crash, tmp_path):
    directory = tmp_path / "cores"
    _link(directory, gpu_crash.core, f"core.{PID}")
    _link(directory, gpu_crash.gpu_core, f"gpu.{PID}.nvcudmp")
    out = tmp_path / "out"
    run = run_cli("batch", str(directory), "--out", str(out), "--jobs", "1", "--sysroot", str(gpu_crash.sysroot))
    assert run.code == 0, run.stderr
    groups = _groups(out)
    assert len(groups) == 1 and groups[0]["signature"].startswith(SCATTER_ROWS)
    # The GPU core read with its CPU core is the same crash, counted once.
    assert groups[0]["count"] == 1 and groups[0]["example"]["path"] == str(directory / f"core.{PID}")


def test_batch_over_the_gpu_core_alone(gpu_crash, tmp_path):
    directory = tmp_path / "gpu-only"
    _link(directory, gpu_crash.gpu_core, os.path.basename(gpu_crash.gpu_core))
    out = tmp_path / "out"
    run = run_cli("batch", str(directory), "--out", str(out), "--jobs", "1")
    assert run.code == 0, run.stderr
    groups = _groups(out)
    assert [(g["signature"][: len(SCATTER_ROWS)], g["count"], g["fault_kind"]) for g in groups] == [(SCATTER_ROWS, 1, "gpu-exception")]


# ------------------------------------------------------------------------------ more real GPU cores

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "gpu" / "trimmed"  # its README says how they were made


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory):
    import gzip

    directory = tmp_path_factory.mktemp("trimmed-gpu-cores")

    def unpack(name: str) -> Path:
        target = directory / name.removesuffix(".gz")
        if not target.exists():
            target.write_bytes(gzip.decompress((FIXTURES / name).read_bytes()))
        return target

    return unpack


def test_a_fault_in_a_device_function_names_it_and_the_kernel(trimmed):
    cls = analyze_json(trimmed("device_function_illegal_address.nvcudmp.gz"))["classification"]
    gpu = cls["gpu"]
    assert cls["signature"].startswith("gpu-exception | Illegal Address | outer_kernel #")
    assert gpu["kernel"] == "outer_kernel" and gpu["function"] == "store_row(int*, long)"
    assert gpu["kernel_offset"] is None and gpu["function_offset"] is not None
    assert gpu["device_name"] == "NVIDIA H200" and gpu["sm_arch"] == "sm_90"
    assert f"at store_row+0x{gpu['function_offset']:x}" in cls["summary"]
    assert any("in device function store_row(int*, long) called by the kernel" in line for line in cls["evidence"])


def test_a_misaligned_address_gets_its_own_advice(trimmed):
    cls = analyze_json(trimmed("misaligned_address.nvcudmp.gz"))["classification"]
    assert cls["signature"].startswith("gpu-exception | Misaligned Address | unaligned_store #")
    assert cls["gpu"]["thread"] == [0, 0, 0] and cls["gpu"]["block"] == [0, 0, 0]
    assert "not aligned" in cls["advice"][0] and "unaligned_store" in cls["advice"][0]


def test_a_template_kernel_is_demangled_and_signed_without_its_arguments(trimmed):
    path = trimmed("template_kernel_two_warps.nvcudmp.gz")
    dump = read_gpu_core(path)
    assert dump.kernel.name == "void ops::scale_rows<float>(float*, long)"
    assert (dump.kernel.grid_dim, dump.kernel.block_dim) == ((2, 1, 1), (64, 1, 1))
    # Both blocks faulted, each on its own SM; the first fault is block 0's.
    assert dump.faulting_warps == 2 and dump.faulting_lanes == 64
    assert sorted({f.block for f in dump.faults}) == [(0, 0, 0), (1, 0, 0)] and len({f.sm for f in dump.faults}) == 2
    assert dump.first.block == (0, 0, 0) and dump.first.thread == (0, 0, 0)
    cls = analyze_json(path)["classification"]
    assert cls["signature"].startswith("gpu-exception | Illegal Address | ops::scale_rows #")
    assert cls["summary"].startswith("GPU exception Warp Illegal Address in kernel ops::scale_rows (device 0,")


def test_names_from_a_gpu_core_are_escaped_in_every_format(gpu_crash, tmp_path):
    hostile = b"<b>x</b>`\x1b[31m|*[a](b"
    data = gpu_crash.gpu_core.read_bytes()
    assert data.count(b"NVIDIA H100 80GB HBM3") == 1 and len(hostile) == len(b"NVIDIA H100 80GB HBM3")
    path = tmp_path / "gpu.nvcudmp"
    path.write_bytes(data.replace(b"NVIDIA H100 80GB HBM3", hostile))
    html = run_cli(str(path), "--format", "html", "-o", "-").stdout
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    text = run_cli(str(path), "--format", "text", "-o", "-").stdout
    assert "\x1b" not in text and "<b>x</b>" in text
    markdown = run_cli(str(path), "--format", "markdown", "-o", "-").stdout
    assert "\x1b" not in markdown
    device_line = next(line for line in markdown.splitlines() if line.startswith("- **Device:**"))
    # The value is one code span whose fence is longer than any backtick run inside it.
    head = "- **Device:** ``"
    assert device_line.startswith(head) and device_line.endswith("``") and "``" not in device_line[len(head) : -2]


def test_every_lane_and_pc_is_what_cuda_gdb_read_from_the_same_gpu_core(dump):
    from support.paths import DATA

    text = (DATA / "gpu" / "texts" / "cuda_gdb.shared_gpu_core.txt").read_text()
    focus = re.search(r"grid (\d+), block \((\d+),(\d+),(\d+)\), thread \((\d+),(\d+),(\d+)\), device (\d+), sm (\d+), warp (\d+), lane (\d+)", text)
    grid, bx, by, bz, tx, ty, tz, device, sm, warp, lane = (int(g) for g in focus.groups())
    first = dump.first
    assert (first.grid, first.block, first.thread) == (grid, (bx, by, bz), (tx, ty, tz))
    assert (first.device, first.sm, first.warp, first.lane) == (device, sm, warp, lane)
    assert first.pc == int(re.search(r"^errorpc\s+(0x[0-9a-f]+)", text, re.M).group(1), 16)
    assert first.lane_pc == int(re.search(r"^pc\s+(0x[0-9a-f]+)", text, re.M).group(1), 16)
    lanes = re.findall(r"^\*?\s+(\d+) active (0x[0-9a-f]+)\s+\((\d+),(\d+),(\d+)\) (.+?)\s*$", text, re.M)
    assert len(lanes) == dump.faulting_lanes == 32
    read = {(f.lane, f.lane_pc, f.thread, f.exception) for f in dump.faults}
    assert read == {(int(n), int(pc, 16), (int(x), int(y), int(z)), exc) for n, pc, x, y, z, exc in lanes}
    sms = re.search(r"sm_90\s+(\d+)\s+(\d+)\s+(\d+)", text)
    assert dump.device(0).sm_count == int(sms.group(1))


def test_a_gpu_core_cut_short_when_the_process_exited_is_one_line(tmp_path):
    # PyTorch's device-side assert: the process raised the CUDA error and exited while the driver
    # was still writing the GPU core (tests/data/gpu/README.md); no tool can read it.
    from support.paths import DATA

    run = run_cli(str(DATA / "gpu" / "torch_assert.nvcudmp"), "-o", "-", "--format", "json")
    assert run.code == 2
    assert run.stderr.count("\n") == 1 and "the GPU core is truncated" in run.stderr
    assert "exited before the driver finished writing it" in run.stderr


@pytest.mark.parametrize("name", ["hang_spin", "hang_fh", "memcpy_segv"])
def test_a_signal_that_only_arrived_while_the_driver_ran_is_no_gpu_exception(gpu_device_cores, gpu_crash, name):
    # A watchdog's SIGABRT (also re-raised by faulthandler) and a SIGSEGV in the driver's copy:
    # no abort() called by the driver, no GPU core dumps asked for.
    cls = analyze_json(gpu_device_cores(name), "--sysroot", str(gpu_crash.sysroot))["classification"]
    assert cls["fault_kind"] != "gpu-exception"
    assert not (cls["gpu"] or {}).get("gpu_core_status")


def test_batch_looks_beside_a_compressed_core_not_its_decompressed_copy(gpu_crash, tmp_path):
    from support.gpudata import CORE, GPU_DATA

    directory = tmp_path / "compressed"
    _link(directory, GPU_DATA / CORE, f"core.{PID}.zst")
    _link(directory, gpu_crash.gpu_core, f"gpu.{PID}.nvcudmp")
    out = tmp_path / "out"
    run = run_cli("batch", str(directory), "--out", str(out), "--jobs", "1", "--sysroot", str(gpu_crash.sysroot))
    assert run.code == 0, run.stderr
    groups = _groups(out)
    assert [(g["signature"][: len(SCATTER_ROWS)], g["count"]) for g in groups] == [(SCATTER_ROWS, 1)]
    report = json.loads((out / groups[0]["example"]["report_json"]).read_text())
    assert report["core"]["path"] == str(directory / f"core.{PID}.zst")
    assert report["classification"]["gpu"]["gpu_core"] == str(directory / f"gpu.{PID}.nvcudmp")


def test_one_compressed_core_finds_the_gpu_core_beside_it(gpu_crash, tmp_path):
    from support.gpudata import CORE, GPU_DATA

    core = _link(tmp_path, GPU_DATA / CORE, f"core.{PID}.zst")
    _link(tmp_path, gpu_crash.gpu_core, f"gpu.{PID}.nvcudmp")
    report = analyze_json(core, "--sysroot", str(gpu_crash.sysroot))
    assert report["core"]["path"] == str(core)
    assert report["classification"]["gpu"]["gpu_core"] == str(tmp_path / f"gpu.{PID}.nvcudmp")
    assert report["classification"]["signature"].startswith(SCATTER_ROWS)
