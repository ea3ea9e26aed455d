"""`coreanalyze last`: the newest of the real cores lying where this system puts cores, each
place laid out as the system lays it (a system root given by COREANALYZE_SYSTEM_ROOT, since the
tests cannot change the real core_pattern): core_pattern's directory, systemd-coredump's store
(zstd, with its extended attributes), apport's /var/crash (written by apport's own writer), and
the working directory. With none, one line says why and what to change."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.apportwriter import crash_fields, write_crash
from support.clirun import run_cli
from support.require import missing, require


def _verdict(report: dict) -> tuple:
    c = report["classification"]
    return c["fault_kind"], c["category"], c["signature"], report["core"]["signal"]["name"], report["crashing_thread"]


@pytest.fixture(scope="module")
def two(cores):
    """Two real crashes and their raw cores' verdicts."""
    cases = {name: cores.c_crash(name) for name in ("null_callback", "divzero")}
    raw = {}
    for name, case in cases.items():
        run = run_cli(str(case.core), "--python", str(case.exe), "--format", "json", "-o", "-")
        assert run.code == 0, run.stderr
        raw[name] = run.json
    return cases, raw


def _root(tmp_path: Path, pattern: str) -> Path:
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/kernel/core_pattern").write_text(pattern + "\n")
    return root


def _last(cwd: Path, root: Path, *args: str):
    return run_cli("last", *args, cwd=cwd, env={"COREANALYZE_SYSTEM_ROOT": str(root)})


def _place(src: Path, dst: Path, mtime: float) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    os.utime(dst, (mtime, mtime))
    return dst


def test_the_newest_core_in_the_working_directory_and_pid_and_exe_pick_others(two, tmp_path):
    cases, raw = two
    here = tmp_path / "here"
    older, newer = cases["null_callback"], cases["divzero"]
    _place(older.core, here / f"core.{older.pid}", 1_700_000_000)
    _place(newer.core, here / f"core.{newer.pid}", 1_700_000_100)
    root = _root(tmp_path, "core")

    run = _last(here, root, "--format", "json", "-o", "-")
    assert run.code == 0, run.stderr
    assert _verdict(run.json) == _verdict(raw["divzero"])
    assert f"core.{newer.pid}" in run.stderr  # which core it took

    for pick in (["--pid", str(older.pid)], ["--exe", "null_callback"], ["--exe", str(older.exe)]):
        run = _last(here, root, *pick, "--format", "json", "-o", "-")
        assert run.code == 0, run.stderr
        assert _verdict(run.json) == _verdict(raw["null_callback"]), pick

    listed = _last(here, root, "--list")
    assert listed.code == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[-1] for line in lines] == [str(here / f"core.{newer.pid}"), str(here / f"core.{older.pid}")]

    # The HTML report beside: named after the core, written here.
    assert _last(here, root).code == 0
    assert (here / f"core.{newer.pid}.html").is_file()


def test_a_core_file_named_last_is_reachable_as_dot_slash_last(two, tmp_path):
    cases, raw = two
    case = cases["divzero"]
    _place(case.core, tmp_path / "last", 1_700_000_000)
    run = run_cli("./last", "--python", str(case.exe), "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert _verdict(run.json) == _verdict(raw["divzero"])


def test_core_pattern_directory_systemd_store_and_apport_newest_first(two, tmp_path):
    cases, raw = two
    zstandard = require(module="zstandard")
    root = _root(tmp_path, "/cores/core.%e.%p.%t")
    here = tmp_path / "here"
    here.mkdir()
    a, b = cases["null_callback"], cases["divzero"]
    # core_pattern's place: the name the kernel would give it
    in_pattern = _place(a.core, root / f"cores/core.null_callback.{a.pid}.1700000000", 1_700_000_000)
    # systemd-coredump's store: compressed, its name and attributes as systemd-coredump writes them
    stored = root / f"var/lib/systemd/coredump/core.divzero.0.{uuid.uuid4().hex}.{b.pid}.1700000100000000.zst"
    stored.parent.mkdir(parents=True)
    stored.write_bytes(zstandard.ZstdCompressor(level=1).compress(b.core.read_bytes()))
    try:
        os.setxattr(stored, "user.coredump.pid", str(b.pid).encode())
        os.setxattr(stored, "user.coredump.exe", str(b.exe).encode())
    except OSError:
        pass  # a file system without user attributes: the name carries the pid
    os.utime(stored, (1_700_000_100, 1_700_000_100))
    # apport's report of the first crash again, the newest
    (root / "var/crash").mkdir(parents=True)
    crash = write_crash(root / "var/crash" / f"{str(a.exe).replace('/', '_')}.0.crash", a.core, {
        **crash_fields(a), "ProcStatus": f"Name:\tnull_callback\nPid:\t{a.pid}",
    })  # fmt: skip
    os.utime(crash, (1_700_000_200, 1_700_000_200))

    listed = _last(here, root, "--list")
    assert listed.code == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert [(r[2], r[-1]) for r in rows] == [("apport", str(crash)), ("systemd-coredump", str(stored)), ("core_pattern", str(in_pattern))]

    newest = _last(here, root, "--format", "json", "-o", "-")
    assert newest.code == 0, newest.stderr
    assert _verdict(newest.json) == _verdict(raw["null_callback"])
    assert newest.json["core"]["path"] == str(crash)

    stored_one = _last(here, root, "--pid", str(b.pid), "--format", "json", "-o", "-")
    assert stored_one.code == 0, stored_one.stderr
    assert _verdict(stored_one.json) == _verdict(raw["divzero"])


@contextmanager
def _core_limit(soft: int):
    old = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (soft if old[1] == resource.RLIM_INFINITY else min(soft, old[1]), old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, old)


def _one_line(run) -> str:
    assert run.code == 2, (run.code, run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def test_none_found_because_the_core_limit_is_zero(tmp_path):
    root = _root(tmp_path, "core")
    with _core_limit(0):
        line = _one_line(_last(tmp_path, root))
    assert "core size limit is 0" in line and "ulimit -c unlimited" in line and "coreanalyze run" in line


def test_none_found_because_the_pipe_goes_to_a_program_not_here(tmp_path):
    root = _root(tmp_path, "|/usr/lib/systemd/systemd-coredump %P %u %g %s %t 9223372036854775808 %h")
    with _core_limit(0):  # a pipe ignores the limit: the pipe is the reason
        line = _one_line(_last(tmp_path, root))
    assert "/usr/lib/systemd/systemd-coredump, which is not here" in line and "host" in line


def test_none_found_because_apport_skipped_the_executable(tmp_path):
    root = _root(tmp_path, "|/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E")
    (root / "usr/share/apport").mkdir(parents=True)
    (root / "usr/share/apport/apport").write_text("")
    (root / "var/log").mkdir(parents=True)
    (root / "var/log/apport.log").write_text(
        "ERROR: apport (pid 9) 2026-11-29 06:12:01,121: executable does not belong to a package, ignoring\n"
    )
    (root / "var/crash").mkdir(parents=True)
    write_crash(root / "var/crash/_usr_bin_python3.11.0.crash", None, {"ExecutablePath": "/usr/bin/python3.11"})  # no core: not one
    line = _one_line(_last(tmp_path, root))
    assert "apport ignored the crash" in line and "does not belong to a package" in line


def test_none_found_because_the_disk_is_full(tmp_path):
    if os.geteuid() != 0:
        missing("root to mount a small tmpfs (a full disk)")
    root = _root(tmp_path, "/cores/core.%p")
    full = root / "cores"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], capture_output=True).returncode != 0:
        missing("mounting a tmpfs (a full disk)")
    try:
        with open(full / "filler", "wb") as f:  # fill it
            try:
                f.write(b"\0" * (2 << 20))
            except OSError:
                pass
        with _core_limit(resource.RLIM_INFINITY):
            line = _one_line(_last(tmp_path, root))
        assert f"{full} is full" in line, line
    finally:
        subprocess.run(["umount", str(full)], capture_output=True)
