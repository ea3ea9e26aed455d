"""`coreanalyze shrink`: real cores shrunk, then analyzed and unwound by gdb as the full ones.

The proof of a shrunk core is that nothing downstream can tell: `coreanalyze SMALL` gives the
full core's JSON report but for the core's own path and size (and `core.shrunk`), and
`gdb PROGRAM SMALL` prints the same frames for `thread apply all bt`. What the full core gives
(its report, gdb's frames) is read on a thread beside the shrinking, which does not need it.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli
from support.paths import PYCRASHERS
from support.pythons import require_pyenv_python
from support.require import require

from coreanalyze.arch.debugger import gdb_for_core
from coreanalyze.shrink.run import comparable

FRAME_LINES = ("#", "Thread ", "Backtrace ")


def _shrink(core: Path, small: Path, *extra: str) -> str:
    run = run_cli("shrink", str(core), "-o", str(small), *extra)
    assert run.code == 0, run.stderr
    assert "still misses" not in run.stderr, run.stderr
    return run.stdout


def _backtraces(program: str, core: Path, sysroot: str | None = None, arch: str | None = None) -> list[str]:
    command = [gdb_for_core("gdb", arch) if arch else "gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off"]
    if sysroot:
        command += ["-ex", f"set sysroot {sysroot}"]
    command += ["-ex", f"file {program}", "-ex", f"core-file {core}", "-ex", "thread apply all bt"]
    out = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=600, stdin=subprocess.DEVNULL)
    return [line for line in (out.stdout + out.stderr).splitlines() if line.startswith(FRAME_LINES)]


def _assert_shrinks_faithfully(
    core: Path, tmp_path: Path, *extra: str, sysroot: str | None = None, full_report: dict | None = None
) -> dict:
    """Shrink `core`; the shrunk core's report and backtraces are the full core's. Returns the
    shrunk core's report. full_report: the full core's report with these options, when the
    session has it already (tf_reports)."""
    require("gdb")
    options = (*extra, *(("--sysroot", sysroot) if sysroot else ()))
    small = tmp_path / "small.core"

    def of_the_full_core() -> tuple[dict, list[str]]:
        report = full_report if full_report is not None else analyze_json(core, *options)
        return report, _backtraces(report["core"]["executable_used"], core, sysroot, report["core"]["arch"])

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="full-core") as beside:
        full = beside.submit(of_the_full_core)
        _shrink(core, small, *options)
        small_report = analyze_json(small, *options)
        full_report, full_frames = full.result()
    assert comparable(json.dumps(small_report)) == comparable(json.dumps(full_report))
    assert full_report["core"]["shrunk"] is None
    assert small_report["core"]["shrunk"]["original_size"] == core.stat().st_size
    assert small.stat().st_size < core.stat().st_size
    program, arch = full_report["core"]["executable_used"], full_report["core"]["arch"]
    assert any(line.startswith("#") for line in full_frames)
    assert _backtraces(program, small, sysroot, arch) == full_frames
    return small_report


@pytest.mark.parametrize("name", ["null_thread", "assert_fail", "double_free", "reraise_handler"])
def test_c_crash_shrinks_to_the_same_report_and_backtraces(cores, name, tmp_path):
    case = cores.c_crash(name)
    _assert_shrinks_faithfully(case.core, tmp_path, "--python", str(case.exe))


@pytest.mark.parametrize("name", ["null_thread", "assert_fail"])
def test_arm_core_shrinks_to_the_same_report_and_backtraces(arm_cores, name, tmp_path):
    case = arm_cores.c_crash(name)
    report = _assert_shrinks_faithfully(case.core, tmp_path, "--python", str(case.exe), sysroot=str(arm_cores.sysroot))
    assert report["core"]["arch"] == "aarch64"


@pytest.mark.parametrize("minor", ["10", "11", "12", "13"])
def test_python_crash_shrinks_to_the_same_report_and_backtraces(python_cores, minor, tmp_path):
    exe = require_pyenv_python(minor)
    case = python_cores.python_crash(f"three_deep_{minor}", exe, PYCRASHERS / "three_deep.py")
    report = _assert_shrinks_faithfully(case.core, tmp_path, "--python", str(exe))
    assert any(f["kind"] == "python" for t in report["threads"] for f in t["frames"])


def test_hang_snapshot_shrinks_to_the_same_report(tmp_path):
    from support.coregen import terminate
    from support.hangcores import build, gcore, start, wait_until_all_sleep

    require("gdb")
    exe = build("deadlock", tmp_path)
    proc = start([str(exe)], tmp_path)
    try:
        wait_until_all_sleep(proc.pid, threads=3)
        core, _out = gcore(proc.pid, tmp_path)
    finally:
        terminate(proc)
    report = _assert_shrinks_faithfully(core, tmp_path, "--python", str(exe))
    assert report["classification"]["fault_kind"] == "hang"


@pytest.mark.parametrize("name", ["hang_spin", "hang_fh", "memcpy_segv"])
def test_gpu_process_core_shrinks_to_the_same_report(gpu_crash, gpu_device_cores, name, tmp_path):
    core = gpu_device_cores(name)
    _assert_shrinks_faithfully(core, tmp_path, sysroot=str(gpu_crash.sysroot))


def test_gpu_crash_core_shrinks_to_the_same_verdict_with_its_gpu_core(gpu_crash, tmp_path):
    report = _assert_shrinks_faithfully(
        gpu_crash.core, tmp_path, "--gpu-core", str(gpu_crash.gpu_core), sysroot=str(gpu_crash.sysroot)
    )
    assert report["classification"]["fault_kind"] == "gpu-exception"
    assert report["classification"]["gpu"]["kernel"]


def test_compressed_shrunk_core_is_read_as_it_is_and_shrinks_again_to_itself(cores, tmp_path):
    case = cores.c_crash("assert_fail")
    packed = tmp_path / "small.core.zst"
    _shrink(case.core, packed, "--python", str(case.exe), "--compress")
    assert packed.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    full = analyze_json(case.core, "--python", str(case.exe))
    from_packed = analyze_json(packed, "--python", str(case.exe))
    assert comparable(json.dumps(from_packed)) == comparable(json.dumps(full))
    small, again = tmp_path / "small.core", tmp_path / "again.core"
    _shrink(case.core, small, "--python", str(case.exe))
    _shrink(small, again, "--python", str(case.exe))
    assert again.read_bytes() == small.read_bytes()
    assert analyze_json(again, "--python", str(case.exe))["core"]["shrunk"]["original_size"] == case.core.stat().st_size


def test_truncated_or_hostile_core_is_one_line_and_exit_2(cores, tmp_path):
    case = cores.c_crash("divzero")
    data = case.core.read_bytes()
    samples = {
        "truncated": data[:200],
        "cut_in_half": data[: len(data) // 2],
        "not_elf": b"hello, world\n" * 100,
        "phdrs_past_end": data[:32] + (1 << 40).to_bytes(8, "little") + data[40:4096],
        "empty": b"",
    }
    for name, content in samples.items():
        bad = tmp_path / name
        bad.write_bytes(content)
        run = run_cli("shrink", str(bad), "-o", str(tmp_path / f"{name}.small"))
        assert run.code == 2, (name, run.stderr)
        assert len(run.stderr.strip().splitlines()) == 1, (name, run.stderr)
        assert not (tmp_path / f"{name}.small").exists()
    run = run_cli("shrink", str(case.core), "-o", str(case.core))
    assert run.code == 2 and "overwrite" in run.stderr
    run = run_cli("shrink", str(case.core), "-o", str(tmp_path / "no" / "such" / "dir" / "small"))
    assert run.code == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr


@pytest.mark.tf
def test_tensorflow_core_shrinks_to_a_few_megabytes(tf_reports, tmp_path):
    case, full_report, _seconds = tf_reports("kernel_check_failure")
    packed = tmp_path / "small.core.zst"
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="compressed") as beside:
        compressed = beside.submit(_shrink, case.core, packed, "--python", str(case.exe), "--compress")
        report = _assert_shrinks_faithfully(case.core, tmp_path, "--python", str(case.exe), full_report=full_report)
        compressed.result()
    assert report["classification"]["abort_message"]
    assert (tmp_path / "small.core").stat().st_size <= 5_000_000
    assert packed.stat().st_size <= 5_000_000


@pytest.mark.tf
def test_tensorflow_segfault_core_shrinks_to_the_same_report_and_backtraces(tf_reports, tmp_path):
    """A kernel's SIGSEGV inside an op: frames in the huge TensorFlow libraries all the way."""
    case, full_report, _seconds = tf_reports("kernel_compute_segv")
    _assert_shrinks_faithfully(case.core, tmp_path, "--python", str(case.exe), full_report=full_report)
    assert (tmp_path / "small.core").stat().st_size <= 5_000_000


SECRET = "s3cr3t-token-value-7f2a9c"


def _frames(report: dict) -> list:
    return [(t["tid"], [(f["kind"], f["function"], f["file"], f["line"]) for f in t["frames"]]) for t in report["threads"]]


def test_redacted_core_keeps_the_frames_and_drops_environment_values_and_arguments(python_cores, tmp_path):
    exe = require_pyenv_python("12")
    case = python_cores.python_crash("three_deep_secret", exe, PYCRASHERS / "three_deep.py", env={"SHRINK_TEST_TOKEN": SECRET})
    assert SECRET.encode() in case.core.read_bytes()
    small = tmp_path / "redacted.core"
    out = _shrink(case.core, small, "--python", str(exe), "--redact")
    assert "dropped: environment values" in out
    data = small.read_bytes()
    assert SECRET.encode() not in data
    assert b"SHRINK_TEST_TOKEN=" in data  # the names stay
    full, redacted = analyze_json(case.core, "--python", str(exe)), analyze_json(small, "--python", str(exe))
    assert _frames(redacted) == _frames(full)
    assert any(f["kind"] == "python" for t in redacted["threads"] for f in t["frames"])
    assert "three_deep.py" in full["core"]["cmdline"] and "three_deep.py" not in redacted["core"]["cmdline"]
    assert "environment values" in redacted["core"]["shrunk"]["redacted"]
    program = full["core"]["executable_used"]
    assert _backtraces(program, small) == _backtraces(program, case.core)


def test_analyze_with_shrink_writes_the_report_and_the_attachable_core(cores, tmp_path):
    case = cores.c_crash("double_free")
    packed = tmp_path / "attach.core.zst"
    run = run_cli(str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-", "--shrink", str(packed))
    assert run.code == 0, run.stderr
    assert packed.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert str(packed) in run.stderr
    again = analyze_json(packed, "--python", str(case.exe))
    assert comparable(json.dumps(again)) == comparable(json.dumps(run.json))


def _fuzz_cases():
    from support.fuzzcore import all_cases, quick_cases

    return quick_cases(all_cases(("divzero",)))


@pytest.mark.parametrize("case", _fuzz_cases(), ids=lambda c: c.id)
def test_damaged_core_is_shrunk_or_refused_in_one_line(case, cores, tmp_path):
    from support.fuzzcore import CoreLayout

    crash = cores.c_crash(case.base)
    layout = CoreLayout.read(crash.core)
    core = case.mutation(layout).write(layout.data, tmp_path / "core.fuzz")
    small = tmp_path / "small.core"
    run = run_cli("shrink", str(core), "--python", str(crash.exe), "-o", str(small), "--timeout", "60", timeout=300)
    assert run.code in (0, 2), run.stderr
    if run.code == 2:
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert not small.exists()
    else:
        again = run_cli(str(small), "--python", str(crash.exe), "--format", "json", "-o", "-", "--timeout", "60", timeout=300)
        assert again.code in (0, 3), again.stderr
        assert again.json["core"]["shrunk"]["original_size"] == core.stat().st_size


def test_markdown_report_says_how_to_attach_the_core_and_that_a_shrunk_one_is_shrunk(cores, tmp_path):
    case = cores.c_crash("null_thread")
    full = run_cli(str(case.core), "--python", str(case.exe), "--format", "markdown", "-o", "-")
    assert f"coreanalyze shrink {case.core.name} -o" in full.stdout
    small = tmp_path / "small.core"
    _shrink(case.core, small, "--python", str(case.exe))
    shrunk = run_cli(str(small), "--python", str(case.exe), "--format", "markdown", "-o", "-")
    assert "shrunk copy of" in shrunk.stdout


def test_batch_shrinks_one_core_per_group_and_a_batch_of_them_says_they_are_shrunk(cores, tmp_path):
    import shutil

    from support.batchcorpus import crash_again

    fleet = tmp_path / "fleet"
    fleet.mkdir()
    crashes = [cores.c_crash("null_thread"), crash_again(cores, "null_thread", 3), cores.c_crash("double_free")]
    for i, case in enumerate(crashes):
        shutil.copy(case.core, fleet / f"{i}-{case.core.name}")  # two groups, three cores
    out = tmp_path / "out"
    run = run_cli("batch", str(fleet), "--out", str(out), "--jobs", "2", "--timeout", "120", "--shrink")
    assert run.code == 0, run.stderr
    assert f"2 crash groups' example cores shrunk to attach, in {out / 'shrunk'}" in run.stdout
    summary = json.loads((out / "summary.json").read_text())
    groups = summary["groups"]
    assert [g["count"] for g in groups] == [2, 1]
    shrunk = {}
    for g in groups:
        small = out / g["example"]["shrunk"]
        assert small.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # zstd
        assert g["example"]["shrunk_size"] == small.stat().st_size
        assert g["example"]["shrunk"] in (out / "index.html").read_text()
        assert g["example"]["shrunk"] in (out / "summary.md").read_text()
        full, again = analyze_json(Path(g["example"]["path"])), analyze_json(small)
        assert comparable(json.dumps(again)) == comparable(json.dumps(full))
        shrunk[g["signature"]] = (small, small.stat().st_mtime_ns, Path(g["example"]["path"]).stat().st_size)
    records = [json.loads(line) for line in (out / "cores.jsonl").read_text().splitlines()]
    assert sum(1 for r in records if r["shrunk"]) == 2

    # Resumed with --shrink: the groups already have their cores, none is made again.
    run = run_cli("batch", str(fleet), "--out", str(out), "--resume", "--shrink")
    assert run.code == 0, run.stderr
    assert "shrunk to attach" not in run.stdout
    assert all(small.stat().st_mtime_ns == mtime for small, mtime, _size in shrunk.values())

    # A merge carries the shrunk cores along with the reports.
    merged = tmp_path / "merged"
    run = run_cli("merge", str(out), "--out", str(merged))
    assert run.code == 0, run.stderr
    for g in json.loads((merged / "summary.json").read_text())["groups"]:
        assert (merged / g["example"]["shrunk"]).read_bytes() == (out / g["example"]["shrunk"]).read_bytes()

    # The shrunk cores in a batch of their own: the same crash groups, each report saying it is
    # a shrunk copy of its full core.
    again = tmp_path / "again"
    run = run_cli("batch", str(out / "shrunk"), "--out", str(again), "--jobs", "2", "--timeout", "120")
    assert run.code == 0, run.stderr
    regrouped = json.loads((again / "summary.json").read_text())["groups"]
    assert {g["signature"] for g in regrouped} == set(shrunk)
    for g in regrouped:
        report = json.loads((again / g["example"]["report_json"]).read_text())
        assert report["core"]["shrunk"]["original_size"] == shrunk[g["signature"]][2]
        assert "shrunk copy of" in (again / g["example"]["report_html"]).read_text()
