"""apport's `.crash` files are cores: `coreanalyze FILE.crash`, `batch` and `watch` unpack the
CoreDump that apport's own writer (problem_report) put there from a real kernel-written core,
take the program from ExecutablePath (InterpreterPath for a script), and give the verdict the
raw core gets. A .crash without a core, a damaged one, and one that does not fit on the disk
each stop with one line."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from support.apportwriter import crash_fields, read_back, write_crash
from support.clirun import run_cli
from support.paths import CRASHERS
from support.pythons import SYSTEM_PYTHON
from support.require import missing, require
from support.watching import records

from coreanalyze.corefile.compressed import compression_of


def _verdict(report: dict) -> tuple:
    c = report["classification"]
    frames = [(f["kind"], f["function"]) for f in next(t for t in report["threads"] if t["crashed"])["frames"]]
    return c["fault_kind"], c["category"], c["signature"], report["core"]["signal"]["name"], report["crashing_thread"], frames


def _json(*args: str) -> dict:
    run = run_cli(*args, "--format", "json", "-o", "-")
    assert run.code == 0, run.stderr
    return run.json


def _apport_name(exe: Path) -> str:
    """The name apport gives the report (data/apport: ExecutablePath with '/' as '_', the uid)."""
    return f"{str(exe).replace('/', '_')}.{os.getuid()}.crash"


@pytest.fixture(scope="module")
def c_crash(cores, tmp_path_factory):
    """A C crasher's core, the raw core's verdict (with --python) and apport's report of it."""
    case = cores.c_crash("null_callback")
    crash = write_crash(tmp_path_factory.mktemp("apport") / _apport_name(case.exe), case.core, {
        **crash_fields(case), "ProcMaps": Path("/proc/self/maps").read_text(),
    })  # fmt: skip
    return case, _json(str(case.core), "--python", str(case.exe)), crash


def test_apports_reader_and_ours_agree_on_the_file(c_crash):
    case, _, crash = c_crash
    assert compression_of(str(crash)) == "crash"
    back = read_back(crash)
    assert back["core_size"] == case.core.stat().st_size  # apport's own loader: the whole core
    assert back["fields"]["ExecutablePath"] == str(case.exe)


def test_a_crash_file_gets_the_raw_cores_verdict_with_the_program_from_executable_path(c_crash, tmp_path):
    case, expected, crash = c_crash
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = run_cli(str(crash), "--format", "json", "-o", "-", env={"TMPDIR": str(scratch)})  # no --python
    assert run.code == 0, run.stderr
    report = run.json
    assert _verdict(report) == _verdict(expected)
    assert report["core"]["path"] == str(crash)  # the file given, not the unpacked copy
    assert report["core"]["executable_used"] == str(case.exe)  # apport's ExecutablePath
    assert not any(scratch.iterdir()), list(scratch.iterdir())  # the unpacked core is gone


def test_a_zstd_core_apport_took_over_from_systemd_coredump(c_crash, tmp_path):
    """apport stores a core that systemd-coredump compressed as it is: a zstd stream."""
    case, expected, _ = c_crash
    zstandard = require(module="zstandard")
    packed = tmp_path / "core.zst"
    packed.write_bytes(zstandard.ZstdCompressor(level=1).compress(case.core.read_bytes()))
    crash = write_crash(tmp_path / _apport_name(case.exe), packed, crash_fields(case))
    assert _verdict(_json(str(crash))) == _verdict(expected)


def test_a_python_crash_takes_the_interpreter_from_interpreter_path(python_cores, tmp_path):
    """For a script apport's ExecutablePath is the script and InterpreterPath the Python."""
    script = CRASHERS / "ctypes_crash.py"
    case = python_cores.python_crash("ctypes_system_apport", SYSTEM_PYTHON, script)
    expected = _json(str(case.core), "--python", str(SYSTEM_PYTHON))
    crash = write_crash(tmp_path / _apport_name(script), case.core, {
        **crash_fields(case), "ExecutablePath": str(script), "InterpreterPath": str(SYSTEM_PYTHON),
    })  # fmt: skip
    report = _json(str(crash))
    assert _verdict(report) == _verdict(expected)
    assert [f["function"] for f in next(t for t in report["threads"] if t["crashed"])["frames"] if f["kind"] == "python"][:2] == [
        "string_at", "read_config",
    ]  # fmt: skip


def test_batch_and_watch_take_crash_files_from_a_directory(c_crash, tmp_path):
    case, expected, crash = c_crash
    spool = tmp_path / "var-crash"
    spool.mkdir()
    os.link(crash, spool / crash.name)
    write_crash(spool / "_usr_bin_nothing.0.crash", None, {"ExecutablePath": "/usr/bin/nothing"})  # apport left the core out
    for command in (["batch", str(spool), "--out"], ["watch", str(spool), "--once", "--settle", "0", "--out"]):
        out = tmp_path / command[0]
        run = run_cli(*command, str(out))
        assert run.code == 0, run.stderr
        by_name = {Path(r["path"]).name: r for r in records(out)}
        assert set(by_name) == {crash.name, "_usr_bin_nothing.0.crash"}, by_name
        good, empty = by_name[crash.name], by_name["_usr_bin_nothing.0.crash"]
        assert good["status"] == "ok", good
        assert (good["signature"], good["fault_kind"]) == (expected["classification"]["signature"], expected["classification"]["fault_kind"])
        assert empty["status"] == "failed" and "no CoreDump field" in empty["reason"], empty


def _bad(args: list[str], tmp_path: Path, env: dict | None = None) -> str:
    run = run_cli(*args, "-o", str(tmp_path / "r.html"), env=env)
    assert run.code == 2, (run.code, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert not (tmp_path / "r.html").exists()
    return lines[0]


def test_a_crash_file_without_a_core_says_so_and_points_to_triage(tmp_path):
    crash = write_crash(tmp_path / "_usr_bin_python3.11.0.crash", None, {
        "ExecutablePath": "/usr/bin/python3.11", "Stacktrace": "#0  0x0000 in PyObject_Free ()",
    })  # fmt: skip
    line = _bad([str(crash)], tmp_path)
    assert "no CoreDump field" in line and f"coreanalyze triage {crash.name}" in line, line


def test_a_core_dump_that_is_no_core_names_the_crash_file(tmp_path):
    not_a_core = tmp_path / "notes.txt"
    not_a_core.write_text("not a core\n" * 100)
    crash = write_crash(tmp_path / "_usr_bin_x.0.crash", not_a_core, {"ExecutablePath": "/usr/bin/x"})
    line = _bad([str(crash)], tmp_path)
    assert str(crash) in line and "not an ELF file" in line, line


def _damaged(crash: Path, out: Path, how: str) -> Path:
    lines = crash.read_bytes().split(b"\n")
    start = lines.index(b"CoreDump: base64")
    core = [i for i in range(start + 1, len(lines)) if lines[i].startswith(b" ")]
    if how == "truncated":  # apport stopped mid-write: the stream has no end
        kept = lines[: core[len(core) // 2]]
    elif how == "bad-base64":
        kept = [*lines[: core[1]], b" !!!!not base64!!!!", *lines[core[1] + 1 :]]
    else:  # flipped bytes inside the deflate stream
        chunk = bytearray(base64.b64decode(lines[core[1]]))
        chunk[: min(64, len(chunk))] = bytes(min(64, len(chunk)))
        kept = [*lines[: core[1]], b" " + base64.b64encode(bytes(chunk)), *lines[core[1] + 1 :]]
    out.write_bytes(b"\n".join(kept))
    return out


@pytest.mark.parametrize("how", ["truncated", "bad-base64", "corrupt-stream"])
def test_a_damaged_core_dump_field_is_one_line(c_crash, tmp_path, how):
    _, _, crash = c_crash
    damaged = _damaged(crash, tmp_path / f"{how}.crash", how)
    line = _bad([str(damaged)], tmp_path)
    assert line.startswith(f"coreanalyze: error: {damaged.name}: corrupt apport CoreDump field"), line


def test_a_core_that_does_not_fit_on_the_disk_is_one_line(c_crash, tmp_path):
    """A real full disk: a tmpfs smaller than the core, as TMPDIR."""
    _, _, crash = c_crash
    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or os.system(f"mount -t tmpfs -o size=64k tmpfs {small} 2>/dev/null") != 0:
        missing("root to mount a small tmpfs (a full disk)")
    try:
        line = _bad([str(crash)], tmp_path, env={"TMPDIR": str(small)})
        assert "does not fit" in line, line
    finally:
        os.system(f"umount {small}")
