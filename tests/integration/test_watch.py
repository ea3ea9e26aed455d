"""`coreanalyze watch`: real cores written by the kernel into a watched directory while the
watcher runs, a core another process is still writing, systemd-coredump's attributes (set with
setfattr) and journal entries (an export file: systemd is not PID 1 here, so the journalctl path
is not the one tested), a full disk, a core under which the analysis dies, SIGTERM and restarts.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.clirun import run_cli
from support.procs import assert_gone, descendants
from support.require import missing, require
from support.watching import WatchRun, attempts, crash_into, records, watcher_children

BOOT_ID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
CONTAINER = "4f2b9c1d7e3a5b6c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"
USEC = 1_760_000_000_123_456
C_KINDS = ("null_thread", "double_free", "divzero", "ud2")


@pytest.fixture(autouse=True)
def _no_watcher_left():
    yield
    while WatchRun.running:
        WatchRun.running.pop().__exit__()


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _by_path(out: Path) -> dict[str, dict]:
    return {r["path"]: r for r in records(out)}


def _export_entry(fields: dict[str, str | bytes]) -> bytes:
    """One entry of the journal export format: text fields as NAME=value, a value with a newline
    in the binary-safe form (name, 64-bit little-endian size, bytes)."""
    out = b""
    for name, value in fields.items():
        data = value if isinstance(value, bytes) else value.encode()
        if b"\n" in data:
            out += name.encode() + b"\n" + len(data).to_bytes(8, "little") + data + b"\n"
        else:
            out += name.encode() + b"=" + data + b"\n"
    return out + b"\n"


WRITER = textwrap.dedent(
    """
    import sys, time
    source, target = sys.argv[1], sys.argv[2]
    with open(source, "rb") as src, open(target, "wb") as dst:
        print("created", flush=True)
        sys.stdin.readline()  # the test sets the attributes, then lets the writing go on
        while True:
            chunk = src.read(256 * 1024)
            if not chunk:
                break
            dst.write(chunk)
            dst.flush()
            time.sleep(0.1)
        print("written", flush=True)
        sys.stdin.readline()  # whole, and still open: not to be read until closed
    """
)


def test_a_core_still_written_waits_and_systemds_record_reaches_the_record(cores, tmp_path):
    """Two cores of one crash: one the kernel writes into the watched directory, one that a
    process writes slowly under systemd-coredump's name, with its attributes set by setfattr and
    its journal entry in an export file. The second is not read while its writer holds it; the
    first is kept whole, the second shrunk (--full 1); unit, command line, boot id and container
    reach its record and the group's breakdown."""
    setfattr = require("setfattr")
    program = cores.c_crash("null_thread").exe
    watched, out = tmp_path / "coredump", tmp_path / "out"
    watched.mkdir()
    source = crash_into(program, tmp_path / "source")  # the bytes the slow writer copies
    name = f"core.null_thread.1000.{BOOT_ID}.4242.{USEC}"
    journal = tmp_path / "coredump.export"
    journal.write_bytes(
        _export_entry({"MESSAGE_ID": "0123456789abcdef0123456789abcdef", "MESSAGE": "not a coredump"})
        + _export_entry({
            "MESSAGE_ID": "fc2e22bc6ee647b6b90729ab34a250b1",
            "MESSAGE": "Process 4242 (null_thread) of user 1000 dumped core.\n\nStack trace of thread 4242:\n#0 ...",
            "COREDUMP_FILENAME": f"/var/lib/systemd/coredump/{name}",
            "COREDUMP_PID": "4242",
            "COREDUMP_TIMESTAMP": str(USEC),
            "COREDUMP_UNIT": "trainer.service",
            "COREDUMP_SLICE": "system.slice",
            "COREDUMP_CGROUP": f"/system.slice/docker-{CONTAINER}.scope",
            "COREDUMP_CMDLINE": "/usr/bin/null_thread --epochs 3",
            "COREDUMP_HOSTNAME": "gpu-7",
            "_BOOT_ID": BOOT_ID,
        })  # fmt: skip
    )

    run = WatchRun([watched], out, tmp_path / "watch.log", "--full", "1", "--journal", str(journal))
    kernel_core = crash_into(program, watched / "by-kernel")
    run.wait_for("the kernel's core recorded", lambda: str(kernel_core) in _by_path(out))

    target = watched / name
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(source), str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "created"
        xattrs = {"pid": "4242", "uid": "1000", "gid": "1000", "signal": "11", "timestamp": str(USEC),
                  "rlimit": "18446744073709551615", "hostname": "gpu-7", "comm": "null_thread", "exe": str(program)}  # fmt: skip
        for key, value in xattrs.items():
            subprocess.run([setfattr, "-n", f"user.coredump.{key}", "-v", value, str(target)], check=True)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "written"
        # Whole on disk and unchanged, but still open for writing: several looks later, not taken.
        for _ in range(15):
            time.sleep(0.2)
            assert run.proc.poll() is None and str(target) not in _by_path(out)
        writer.stdin.write("close\n")
        writer.stdin.flush()
        writer.wait(timeout=60)
    finally:
        writer.kill()
    run.wait_for("the written core recorded and kept", lambda: _by_path(out).get(str(target), {}).get("kept") is not None)
    assert run.stop() == 0
    assert "stopped" in run.text()

    by_path = _by_path(out)
    first, second = by_path[str(kernel_core)], by_path[str(target)]
    assert first["status"] == second["status"] == "ok"
    assert second["size"] == source.stat().st_size and second["signature"] == first["signature"]
    assert first["kept"] == "full" and (out / first["kept_core"]).is_file()
    assert (out / first["kept_core"]).stat().st_size == kernel_core.stat().st_size
    assert second["kept"] == "shrunk" and second["kept_core"] is None and (out / second["shrunk"]).is_file()
    assert first["coredump"] == {}  # the kernel's own core has no systemd record
    meta = second["coredump"]
    assert meta["unit"] == "trainer.service" and meta["slice"] == "system.slice"
    assert meta["cmdline"] == "/usr/bin/null_thread --epochs 3"
    assert meta["boot_id"] == BOOT_ID and meta["container"] == f"docker:{CONTAINER[:12]}"
    assert meta["hostname"] == "gpu-7" and meta["exe"] == str(program) and meta["timestamp"] == str(USEC)
    assert meta["source"] == "xattr+journal+filename"
    assert second["host"] == "gpu-7" and second["host_source"] == "xattr" and second["timestamp_source"] == "xattr"
    group = _summary(out)["groups"][0]
    assert group["count"] == 2
    assert group["versions"]["unit"] == [{"value": "trainer.service", "count": 1}]
    assert group["versions"]["container"] == [{"value": f"docker:{CONTAINER[:12]}", "count": 1}]

    # The shrunk core gives the same verdict as the core it stands for.
    shrunk = run_cli(str(out / second["shrunk"]), "--format", "json", "-o", "-")
    assert shrunk.code == 0, shrunk.stderr
    assert shrunk.json["classification"]["signature"] == second["signature"]


def _mount_tmpfs(where: Path, size: str) -> None:
    if os.geteuid() != 0:
        missing("root, to mount a small tmpfs as a full disk")
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)


def test_a_full_disk_pauses_the_watcher_and_loses_no_core(cores, tmp_path):
    """OUT on a small tmpfs that fills up (another file takes the rest) while cores keep coming:
    the watcher waits, the cores not yet done stay where they are (--delete-analyzed removes
    only what is recorded and kept as the policy says), and it goes on once there is room; every
    core ends with its record, none failed."""
    program = cores.c_crash("divzero").exe
    watched, out = tmp_path / "in", tmp_path / "out"
    watched.mkdir()
    _mount_tmpfs(out, "4m")
    try:
        corelist = [crash_into(program, watched / f"crash-{i}") for i in range(2)]
        run = WatchRun([watched], out, tmp_path / "watch.log", "--full", "0", "--others", "none", "--delete-analyzed")
        run.wait_for("two cores done", lambda: len([r for r in records(out) if r["kept"]]) == 2)
        filler = out / "filler"
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass  # the disk is full
        corelist += [crash_into(program, watched / f"crash-{i}") for i in range(2, 6)]
        run.wait_for("the watcher to wait for space", lambda: "waiting:" in run.text())
        done = _by_path(out)
        assert len(done) < len(corelist)
        for core in corelist:
            # Removed only once recorded and kept as the policy says; else still there for later.
            assert core.exists() or done[str(core)]["kept"] == "none", core
        assert all(r["status"] == "ok" for r in done.values())
        filler.unlink()
        run.wait_for("every core recorded", lambda: len(records(out)) == len(corelist) and not any(c.exists() for c in corelist))
        assert run.stop() == 0
        assert "resuming" in run.text()
        assert all(r["status"] == "ok" and r["kept"] == "none" for r in records(out))
        assert _summary(out)["totals"]["cores"] == len(corelist)
        assert not [p for p in out.rglob(".*") if ".tmp-" in p.name]
    finally:
        for run in WatchRun.running:
            run.__exit__()
        subprocess.run(["umount", "-l", str(out)], check=False)


def _arrive(kind: str, index: int, watched: Path, programs: dict[str, Path], tf_core: Path) -> Path:
    directory = watched / f"{kind}-{index}"
    if kind != "tf":
        return crash_into(programs[kind], directory)
    directory.mkdir()
    os.link(tf_core, directory / "core")  # the same TensorFlow crash again, its bytes shared
    return directory / "core"


@pytest.mark.tf
@pytest.mark.slow
def test_fifty_cores_of_five_kinds_across_a_sigterm_and_a_restart(cores, tf_cores, tmp_path):
    """The watched directory receives 50 cores of 5 kinds (4 C crashes made by the kernel there,
    and one TensorFlow core linked in 10 times) while the watcher runs; it is stopped with SIGTERM
    half-way and started again while cores keep arriving. It ends with 50 records, 5 groups,
    full cores only for the first 2 of each signature, every original removed once recorded,
    and an output that merge and `batch --since` read."""
    programs = {kind: cores.c_crash(kind).exe for kind in C_KINDS}
    tf_core = tf_cores.get("kernel_check_failure").core
    watched, out = tmp_path / "coredump", tmp_path / "out"
    watched.mkdir()
    policy = ("--full", "2", "--others", "none", "--delete-analyzed")
    arrivals = [(kind, i) for i in range(10) for kind in (*C_KINDS, "tf")]

    run = WatchRun([watched], out, tmp_path / "watch.log", *policy)
    paths = [_arrive(kind, i, watched, programs, tf_core) for kind, i in arrivals[:25]]
    run.wait_for("ten records", lambda: len(records(out)) >= 10)
    workers = descendants(run.proc.pid)
    assert run.stop() == 0
    assert_gone(workers)
    before = len(records(out))
    assert before < 50
    assert attempts(out) == {}  # the cores in hand at the stop do not count against them

    paths += [_arrive(kind, i, watched, programs, tf_core) for kind, i in arrivals[25:35]]  # while stopped
    run = WatchRun([watched], out, tmp_path / "watch.log", *policy)
    paths += [_arrive(kind, i, watched, programs, tf_core) for kind, i in arrivals[35:]]
    run.wait_for("fifty records, each kept", lambda: len(records(out)) == 50 and all(r["kept"] for r in records(out)))
    assert run.stop() == 0

    found = records(out)
    assert sorted(r["path"] for r in found) == sorted(map(str, paths))
    summary = _summary(out)
    totals = summary["totals"]
    assert (totals["files"], totals["groups"], totals["analyzed"], totals["duplicates"], totals["failed"]) == (50, 5, 41, 9, 0)
    for group in summary["groups"]:
        members = [r for r in found if r["signature"] == group["signature"] and r["status"] == "ok"]
        full = [r for r in members if r["kept"] == "full"]
        assert len(full) == min(2, len(members)), group["signature"]
        assert all((out / r["kept_core"]).is_file() for r in full)
        assert all(r["kept"] == "none" and r["kept_core"] is None for r in members if r not in full)
    tf_group = next(g for g in summary["groups"] if g["category"] == "kernel-compute")
    assert tf_group["count"] == 1 and tf_group["known"]["id"] == "tf-lrngrad-output-image-rank"
    assert {r["kept"] for r in found if r["status"] == "duplicate"} == {"none"}
    assert not [p for p in watched.rglob("core")]  # every original removed once recorded
    assert len(list((out / "kept").iterdir())) == 9  # 2 per C signature, 1 TensorFlow core
    assert (out / "index.html").is_file() and (out / "cores.jsonl").read_text().count("\n") == 50

    # batch's own readers take it as a batch: merge, and --since against it.
    merged = run_cli("merge", str(out), "--out", str(tmp_path / "merged"))
    assert merged.code == 0, merged.stderr
    assert _summary(tmp_path / "merged")["totals"]["groups"] == 5
    later = tmp_path / "later"
    crash_into(programs["divzero"], later / "one")
    since = run_cli("batch", str(later), "--out", str(tmp_path / "next"), "--since", str(out), "--jobs", "1")
    assert since.code == 0, since.stderr
    assert "since the previous batch: 0 new" in since.stdout and "4 gone" in since.stdout


@pytest.mark.tf
@pytest.mark.slow
def test_a_core_that_ends_the_analysis_twice_is_recorded_not_retried(tf_cores, tmp_path):
    """The TensorFlow core's analysis is killed under it (as the OOM killer would): the worker
    twice in one run, then the whole watcher twice with the core in hand. Each time the core is
    recorded as failed with the reason instead of being tried forever."""
    tf_core = tf_cores.get("kernel_check_failure").core
    out = tmp_path / "out"

    # The worker process, twice: batch's rule for a core a worker died under.
    first = tmp_path / "worker-killed"
    (first / "a").mkdir(parents=True)
    os.link(tf_core, first / "a" / "core")
    run = WatchRun([first], out, tmp_path / "watch.log")
    for attempt in (1, 2):
        run.wait_for(f"attempt {attempt}", lambda a=attempt: any(e["count"] == a for e in attempts(out).values()))
        run.wait_for("the worker", lambda: watcher_children(run.proc.pid))
        for pid in watcher_children(run.proc.pid):
            os.kill(pid, signal.SIGKILL)
    run.wait_for("its record", lambda: records(out))
    assert run.stop() == 0
    (record,) = records(out)
    assert record["status"] == "failed" and "died by SIGKILL" in record["reason"]
    assert (first / "a" / "core").exists()  # a core that was not analyzed is never removed

    # The watcher itself, twice (SIGKILL: no clean stop); the third start records the core.
    second = tmp_path / "watcher-killed"
    (second / "b").mkdir(parents=True)
    os.link(tf_core, second / "b" / "core")  # another output directory: analyzed afresh
    out2 = tmp_path / "out2"
    for attempt in (1, 2):
        run = WatchRun([second], out2, tmp_path / "watch2.log")
        run.wait_for(f"attempt {attempt}", lambda a=attempt: any(e["count"] == a for e in attempts(out2).values()))
        workers = descendants(run.proc.pid)
        run.stop(signal.SIGKILL)
        assert_gone(workers)  # the worker and its gdb die with the watcher
        assert not records(out2)
    run = WatchRun([second], out2, tmp_path / "watch2.log", "--once")
    assert run.proc.wait(timeout=300) == 0, run.text()
    (record,) = records(out2)
    assert record["status"] == "failed" and "the watcher ended 2 times" in record["reason"]
    assert attempts(out2) == {}
    (second / "b" / "core").unlink()
