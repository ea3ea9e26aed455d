"""Hangs: real stuck processes, real snapshots (gdb's gcore, `coreanalyze --pid`), real gdb.

A lock-order inversion in C, a GIL cycle through a native mutex (a library built here and
called with ctypes), a busy process, and TensorFlow's fork-after-init hang; `--pid` must leave
the process running and refuse, in one line, what it cannot snapshot.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.clirun import analyze_json, run_cli
from support.coregen import run_to_core, terminate
from support.hangcores import build, build_library, gcore, start, thread_states, wait_until_all_sleep
from support.paths import HANGS
from support.procs import alive, descendants
from support.require import require

from coreanalyze.base.model import report_from_dict

DAMAGE_WARNING = "notes are damaged"


def _stderr_has_no_damage(run) -> None:
    assert DAMAGE_WARNING not in run.stderr, run.stderr


@pytest.fixture
def deadlocked(tmp_path):
    require("gdb")
    exe = build("deadlock", tmp_path)
    proc = start([str(exe)], tmp_path)
    wait_until_all_sleep(proc.pid, threads=3)
    yield proc
    terminate(proc)


def _snapshot_json(core: Path, tmp_path: Path) -> dict:
    run = run_cli(str(core), "--format", "json", "-o", "-", cwd=tmp_path)
    assert run.code == 0, run.stderr
    _stderr_has_no_damage(run)
    return run.json


def test_gcore_notes_are_not_damage(deadlocked, tmp_path):
    core, out = gcore(deadlocked.pid, tmp_path)
    assert "Saved corefile" in out
    report = _snapshot_json(core, tmp_path)
    assert not [w for w in report["warnings"] if DAMAGE_WARNING in w]


def test_lock_order_inversion_is_a_deadlock_cycle(deadlocked, tmp_path):
    core, _ = gcore(deadlocked.pid, tmp_path)
    report = _snapshot_json(core, tmp_path)
    c = report["classification"]
    assert c["fault_kind"] == "hang"
    assert c["culprit"]["function"] in ("post_transfer", "write_journal")
    hang = c["hang"]
    cycle = hang["deadlock"]
    assert len(cycle) == 2
    workers = sorted(t for t in (int(p.name) for p in Path(f"/proc/{deadlocked.pid}/task").iterdir()) if t != deadlocked.pid)
    assert sorted(step["tid"] for step in cycle) == workers
    # Each thread holds the mutex the other wants: both mutexes, each wanted once and held once.
    wants = {step["wants"] for step in cycle}
    holds = {step["holds"] for step in cycle}
    assert len(wants) == 2 and wants == holds
    # Named from the program's symbol table, with their addresses.
    assert {w.split(" (0x")[0] for w in wants} == {"mutex accounts_lock", "mutex journal_lock"}
    assert {step["function"] for step in cycle} == {"post_transfer", "write_journal"}
    for step in cycle:
        assert step["file"].endswith("deadlock.c") and step["line"]
        other = next(s for s in cycle if s["tid"] != step["tid"])
        assert step["waits_for"] == other["tid"]
    # The owners come from the glibc mutex words.
    states = {t["tid"]: t for t in hang["threads"]}
    for step in cycle:
        assert states[step["tid"]]["state"] == "mutex"
        assert states[step["tid"]]["owner"] == step["waits_for"]
    assert states[deadlocked.pid]["state"] == "join"
    assert c["signature"] == "hang | deadlock | post_transfer <-> write_journal"
    assert "deadlock" in c["summary"] and "post_transfer" in c["summary"] and "write_journal" in c["summary"]
    assert any("order" in a for a in c["advice"])
    assert report_from_dict(report).to_dict() == report  # classification.hang reads back from JSON


def test_gil_cycle_through_a_native_mutex(tmp_path):
    require("gdb")
    library = build_library("gil_lock", tmp_path)
    proc = start([sys.executable, str(HANGS / "gil_cycle.py"), str(library)], tmp_path)
    try:
        wait_until_all_sleep(proc.pid)
        core, _ = gcore(proc.pid, tmp_path)
        report = _snapshot_json(core, tmp_path)
    finally:
        terminate(proc)
    c = report["classification"]
    assert c["fault_kind"] == "hang"
    hang = c["hang"]
    assert hang["gil_holder"] == proc.pid  # the main thread, blocked in read_cache
    cycle = {step["tid"]: step for step in hang["deadlock"]}
    assert len(cycle) == 2
    main = cycle[proc.pid]
    refresher = next(s for t, s in cycle.items() if t != proc.pid)
    assert main["holds"] == "the GIL" and main["wants"].startswith("mutex cache_lock (0x") and main["function"] == "read_cache"
    assert refresher["wants"] == "the GIL" and refresher["holds"] == main["wants"]
    assert refresher["function"] == "refresh_cache_with_callback"
    assert hang["gil_waiters"] == [refresher["tid"]]
    assert c["signature"] == "hang | GIL deadlock | read_cache <-> refresh_cache_with_callback"
    assert any("GIL" in a for a in c["advice"])


def test_busy_process_is_running_not_deadlocked(tmp_path):
    require("gdb")
    exe = build("busy", tmp_path)
    proc = start([str(exe)], tmp_path)
    try:
        core, _ = gcore(proc.pid, tmp_path)
        report = _snapshot_json(core, tmp_path)
    finally:
        terminate(proc)
    c = report["classification"]
    assert c["fault_kind"] == "hang"
    assert c["hang"]["deadlock"] == []
    threads = c["hang"]["threads"]
    assert len(threads) == 2 and {t["state"] for t in threads} == {"running"}
    assert {t["function"] for t in threads} == {"crunch_numbers"}
    assert "busy" in c["summary"] and "deadlock" in c["summary"]
    assert "no deadlock" in c["summary"] or "there is no deadlock" in c["summary"]


ANSWERING = """
import sys, threading
lock = threading.Lock(); lock.acquire()
threading.Thread(target=lock.acquire, name="stuck-worker", daemon=True).start()
print("ready", flush=True)
for line in sys.stdin:
    print("answer " + line.strip(), flush=True)
"""


def test_pid_leaves_the_process_running_and_answering(tmp_path):
    require("gdb")
    proc = start([sys.executable, "-c", ANSWERING], tmp_path)
    try:
        wait_until_all_sleep(proc.pid, threads=2)
        kept = tmp_path / "kept.core"
        run = run_cli("--pid", str(proc.pid), "--keep-core", str(kept), "--format", "json", "-o", "-", cwd=tmp_path)
        assert run.code == 0, run.stderr
        _stderr_has_no_damage(run)
        report = run.json
        assert report["classification"]["fault_kind"] == "hang"
        assert report["core"]["pid"] == proc.pid
        waits = {t["tid"]: t for t in report["classification"]["hang"]["threads"]}
        assert waits[proc.pid]["state"] == "io" and waits[proc.pid]["syscall"] == "read"
        worker = next(t for tid, t in waits.items() if tid != proc.pid)
        assert worker["state"] == "mutex" and worker["object_kind"] == "Python lock"
        assert kept.is_file() and kept.stat().st_size > 0
        # Detached, not stopped, not traced: it goes on answering.
        assert set(thread_states(proc.pid)) <= {"S", "R"}
        assert "TracerPid:\t0" in Path(f"/proc/{proc.pid}/status").read_text()
        proc.stdin.write("ping\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "answer ping"
        # Without --keep-core the snapshot is deleted.
        before = set(Path(tempfile_dir()).glob("coreanalyze-pid-*"))
        run = run_cli("--pid", str(proc.pid), "-o", str(tmp_path / "report.html"), cwd=tmp_path)
        assert run.code == 0, run.stderr
        # The verdict says it is a snapshot: the signal is how it was taken, not a fault.
        assert run.stdout.startswith("snapshot, ") and " hang " in run.stdout.splitlines()[0], run.stdout
        assert set(Path(tempfile_dir()).glob("coreanalyze-pid-*")) == before
        proc.stdin.write("again\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "answer again"
    finally:
        terminate(proc)


def tempfile_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


def test_pid_of_a_missing_process(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run = run_cli("--pid", str(gone.pid), cwd=tmp_path)
    assert run.code == 2
    assert run.stderr.strip().splitlines() == [f"coreanalyze: error: --pid {gone.pid}: no such process"]


def test_pid_of_a_process_that_may_not_be_traced(deadlocked, tmp_path):
    # A process under a debugger already has its tracer; the kernel lets only one attach.
    gdb = require("gdb")
    exe = Path(deadlocked.args[0])
    debugger = subprocess.Popen(
        [gdb, "-nx", "-batch", "-ex", "run", "--args", str(exe)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        deadline = time.monotonic() + 120
        traced = None
        while traced is None and time.monotonic() < deadline:
            children = [p for p in descendants(debugger.pid) if Path(f"/proc/{p}/exe").exists() and _exe_of(p) == exe.resolve()]
            traced = children[0] if children else None
            time.sleep(0.05)
        assert traced is not None
        run = run_cli("--pid", str(traced), cwd=tmp_path)
        assert run.code == 2
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1, run.stderr
        assert "may not be traced" in lines[0] and f"already traced by pid {debugger.pid}" in lines[0]
    finally:
        terminate(debugger)


def _exe_of(pid: int) -> Path | None:
    try:
        return Path(f"/proc/{pid}/exe").resolve()
    except OSError:
        return None


def test_pid_of_a_process_that_exits_midway(tmp_path):
    require("gdb")
    # Big enough that writing its core takes a while; a watcher kills it as soon as gdb attaches.
    script = "b = b'x' * (400 << 20); print('ready', flush=True); import time; time.sleep(3600)"
    proc = start([sys.executable, "-c", script], tmp_path)
    stop = threading.Event()

    def kill_when_traced() -> None:
        status = Path(f"/proc/{proc.pid}/status")
        while not stop.is_set():
            try:
                traced = "TracerPid:\t0" not in status.read_text()
            except OSError:
                return
            if traced:
                proc.kill()
                return
            time.sleep(0.001)

    watcher = threading.Thread(target=kill_when_traced, daemon=True)
    watcher.start()
    try:
        run = run_cli("--pid", str(proc.pid), cwd=tmp_path)
    finally:
        stop.set()
        watcher.join()
        terminate(proc)
    assert run.code == 2, run.stderr
    assert run.stderr.strip().splitlines() == [f"coreanalyze: error: --pid {proc.pid}: the process exited while its snapshot was taken"]
    assert not list(tmp_path.glob("*.html"))


def test_batch_groups_hangs_by_wait_signature_apart_from_crashes(cores, tmp_path):
    exe = build("deadlock", tmp_path / "build")
    inputs = tmp_path / "in"
    inputs.mkdir()
    for run in range(2):
        proc = start([str(exe)], tmp_path)
        try:
            wait_until_all_sleep(proc.pid, threads=3)
            core, _ = gcore(proc.pid, tmp_path)
            core.rename(inputs / f"core.{proc.pid}")
        finally:
            terminate(proc)
    crash = cores.c_crash("null_thread")
    shutil.copy(crash.core, inputs / crash.core.name)
    out = tmp_path / "out"
    run = run_cli("batch", str(inputs), "--out", str(out), "--jobs", "1", cwd=tmp_path)
    assert run.code == 0, run.stderr
    summary = json.loads((out / "summary.json").read_text())
    hangs = [g for g in summary["groups"] if g["hang"]]
    crashes = [g for g in summary["groups"] if not g["hang"]]
    assert [(g["count"], g["signature"], g["fault_kind"]) for g in hangs] == [(2, "hang | deadlock | post_transfer <-> write_journal", "hang")]
    assert len(crashes) == 1 and crashes[0]["fault_kind"] == "null-deref"
    index = (out / "index.html").read_text()
    assert 'id="hangs"' in index and index.index('id="groups"') < index.index('id="hangs"')
    assert "post_transfer" in index[index.index('id="hangs"'):]


@pytest.mark.tf
def test_tensorflow_fork_child_hang(tmp_path):
    from support.tfcores import quiet_env, require_tensorflow

    python = require_tensorflow()
    require("gdb")
    parent = start([str(python), str(HANGS / "tf_fork_hang.py")], tmp_path, env=quiet_env())
    child = None
    try:
        while not parent.first_line.startswith("child "):  # the parent's first op prints a number
            parent.first_line = parent.stdout.readline().strip()
            assert parent.first_line, "the TensorFlow parent ended early"
        child = int(parent.first_line.split()[1])
        wait_until_all_sleep(child, threads=1)

        live = run_cli("--pid", str(child), "--format", "json", "-o", "-", cwd=tmp_path)
        assert live.code == 0, live.stderr
        assert alive(child) and set(thread_states(child)) == {"S"}

        core, _ = gcore(child, tmp_path)
        try:
            from_gcore = _snapshot_json(core, tmp_path)
        finally:
            core.unlink()
    finally:
        if child is not None and alive(child):
            subprocess.run(["kill", "-9", str(child)], check=False)
        terminate(parent)

    for report in (live.json, from_gcore):
        c = report["classification"]
        assert c["fault_kind"] == "hang"
        assert c["hang"]["rule"] == "fork-after-tensorflow-started"
        assert c["category"] == "tf-runtime"
        assert "fork" in c["summary"]
        assert c["op"] and c["op"] in c["summary"]  # the op the child waits in
        assert any("spawn" in a for a in c["advice"])
        assert c["signature"].startswith("hang | fork-after-tensorflow-started")


def test_watchdog_abort_of_a_stuck_process_is_a_hang(tmp_path):
    """A kernel core written because another process sent SIGABRT (a watchdog, `timeout -s ABRT`)
    while the threads were stuck: a hang, with the sender named, not an abort."""
    require("gdb")
    exe = build("deadlock", tmp_path)
    case = run_to_core("watchdog", [str(exe)], tmp_path / "run", kill_after_ready=signal.SIGABRT)
    report = analyze_json(case.core, cwd=tmp_path)
    c = report["classification"]
    assert report["core"]["signal"]["name"] == "SIGABRT"
    assert c["fault_kind"] == "hang"
    assert f"sent by pid {os.getpid()}" in c["hang"]["reason"]
    assert c["signature"] == "hang | deadlock | post_transfer <-> write_journal"


def test_pid_leaves_a_stopped_process_stopped(deadlocked, tmp_path):
    os.kill(deadlocked.pid, signal.SIGSTOP)
    try:
        wait_until_all_stopped(deadlocked.pid)
        run = run_cli("--pid", str(deadlocked.pid), "--format", "json", "-o", "-", cwd=tmp_path)
        assert run.code == 0, run.stderr
        assert run.json["classification"]["fault_kind"] == "hang"
        assert len(run.json["classification"]["hang"]["deadlock"]) == 2
        assert set(thread_states(deadlocked.pid)) == {"T"}
    finally:
        os.kill(deadlocked.pid, signal.SIGCONT)


def wait_until_all_stopped(pid: int) -> None:
    deadline = time.monotonic() + 60
    while set(thread_states(pid)) != {"T"} and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(thread_states(pid)) == {"T"}


def _sleeps_in(pid: int, tid: int, syscall_number: int) -> bool:
    try:
        return Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()[0] == str(syscall_number)
    except (OSError, IndexError):
        return False


@pytest.mark.tf
def test_tensorflow_idle_pools_while_main_thread_waits(tmp_path):
    from support.tfcores import quiet_env, require_tensorflow

    python = require_tensorflow()
    require("gdb")
    proc = start([str(python), str(HANGS / "tf_idle_dequeue.py")], tmp_path, env=quiet_env())
    try:
        while proc.first_line != "ready":
            proc.first_line = proc.stdout.readline().strip()
            assert proc.first_line, "the TensorFlow program ended early"
        futex = 202 if os.uname().machine == "x86_64" else 98
        deadline = time.monotonic() + 120
        while not (_sleeps_in(proc.pid, proc.pid, futex) and set(thread_states(proc.pid)) == {"S"}) and time.monotonic() < deadline:
            time.sleep(0.05)
        run = run_cli("--pid", str(proc.pid), "--format", "json", "-o", "-", cwd=tmp_path)
        assert run.code == 0, run.stderr
        assert alive(proc.pid)
    finally:
        terminate(proc)
    c = run.json["classification"]
    assert c["fault_kind"] == "hang" and c["hang"]["rule"] == "idle-pools-main-waits"
    main = next(t for t in c["hang"]["threads"] if t["tid"] == proc.pid)
    assert main["state"] == "condition" and main["object_kind"] == "notification"
    assert main["function"] == "tensorflow::AsyncOpKernel::Compute"
    assert any("Dequeue" in a for a in c["advice"])
    assert c["hang"]["deadlock"] == []
