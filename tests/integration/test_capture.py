"""The crash that leaves no core: `coreanalyze run`, the crash guard, pytest's plugin and the
notebook extension on real crashes with `ulimit -c 0`.

The watcher's core must be one that gdb and `coreanalyze CORE` read, and its report the one the
kernel's own core of the same crash gets; the process must die of its signal as it would have,
and nothing may be left stopped or hung, whatever breaks on the way.
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.clirun import analyze_json, crashed_thread
from support.contract import check_text
from support.coregen import compile_c
from support.paths import CRASHERS, REPO
from support.require import missing, require

from coreanalyze.capture import procfs

PYCRASHERS = REPO / "tests" / "pycrashers"


def no_core_limit() -> None:
    """As on most machines and in every container: the kernel writes no core."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def environment(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")
    env.pop("COREANALYZE_GUARD", None)
    return {**env, **extra}


def run_watched(*command: str, out: Path, cwd: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "coreanalyze", "run", "--out", str(out), "--", *command],
        cwd=cwd, env=env or environment(), preexec_fn=no_core_limit, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    # The watched program may print its own tracebacks; none may come from the tool.
    assert "/coreanalyze/" not in "".join(line for line in proc.stderr.splitlines() if line.lstrip().startswith("File ")), proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc


def reports_in(out: Path) -> list[dict]:
    """Every JSON report in `out`, each checked against the shipped schema."""
    found = []
    for path in sorted(out.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        check_text(text, str(path))
        found.append(json.loads(text))
    return found


def only_report(out: Path) -> dict:
    reports = reports_in(out)
    assert len(reports) == 1, [r["capture"] for r in reports]
    return reports[0]


def verdict_of(report: dict) -> dict:
    c = report["classification"]
    return {
        "signal": {k: report["core"]["signal"][k] for k in ("number", "code_name", "address")},
        "category": c["category"],
        "fault_kind": c["fault_kind"],
        "culprit": c["culprit"]["function"],
        "signature": c["signature"],
        "frames": [f["function"] for f in crashed_thread(report)["frames"]],
        "thread": crashed_thread(report)["name"],
        "threads": len(report["threads"]),
    }


def process_gone_or_reaped(pid: int, timeout: float = 15.0) -> bool:
    """True once `pid` no longer runs: gone, or a zombie; never left stopped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    require("gcc")
    require("gdb")
    where = tmp_path_factory.mktemp("capture-crashers")
    return {name: compile_c(CRASHERS / f"{name}.c", where / name) for name in ("null_thread", "two_threads_fault", "load_time_fault")}


# --- /proc as the watcher reads it (this process's own) ------------------------------------


def test_untouched_anonymous_pages_are_holes_and_written_ones_are_not():
    region = mmap.mmap(-1, 64 * procfs.PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    pagemap = os.open(f"/proc/{os.getpid()}/pagemap", os.O_RDONLY)
    try:
        assert procfs.pages_in_use(pagemap, start, start + 64 * procfs.PAGE) == []
        region[5 * procfs.PAGE] = 1
        region[6 * procfs.PAGE] = 1
        assert procfs.pages_in_use(pagemap, start, start + 64 * procfs.PAGE) == [(start + 5 * procfs.PAGE, start + 7 * procfs.PAGE)]
    finally:
        os.close(pagemap)
        region.close()


def test_this_process_as_proc_tells_it():
    me = os.getpid()
    entries = procfs.maps(me)
    assert any(e.path == "[stack]" and e.writable for e in entries)
    # Python's own KeyboardInterrupt handler, unless SIGINT was ignored when it started (a job a
    # non-interactive shell put in the background): /proc says what Python itself says.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        assert procfs.dispositions(me).ignores(signal.SIGINT) and not procfs.dispositions(me).catches(signal.SIGINT)
    else:
        assert procfs.dispositions(me).catches(signal.SIGINT)
    assert not procfs.dispositions(me).catches(signal.SIGSEGV) or "faulthandler" in os.environ.get("PYTHONFAULTHANDLER", "faulthandler")
    assert procfs.tracer_of(me) == 0
    assert me in procfs.thread_ids(me) and procfs.thread_group(me) == me


# --- coreanalyze run --------------------------------------------------------------------------


def test_run_catches_a_crash_and_its_report_is_the_kernel_cores(cores, built, tmp_path):
    kernel_case = cores.c_crash("null_thread")
    out = tmp_path / "reports"
    proc = run_watched(str(built["null_thread"]), out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr
    line = [x for x in proc.stderr.splitlines() if x.startswith("coreanalyze: process")]
    assert len(line) == 1 and "SIGSEGV (SEGV_MAPERR) at 0x0" in line[0] and "store_result" in line[0] and "report:" in line[0], proc.stderr
    report = only_report(out)
    core = Path(report["capture"]["core"])
    assert core.parent == out and core.exists()
    assert report["capture"]["by"] == "run" and report["capture"]["died"] == "SIGSEGV" and not report["capture"]["handler_ran"]
    assert (out / f"{core.name}.html").exists()
    # The same crash's kernel core gets the same verdict, frames and threads.
    kernel = analyze_json(kernel_case.core, "--python", str(kernel_case.exe))
    assert verdict_of(report) == verdict_of(kernel)
    # The watcher's core is a core: gdb reads it, and `coreanalyze CORE` says what the report said.
    bt = subprocess.run(["gdb", "-batch", "-ex", "thread apply all bt", str(built["null_thread"]), str(core)], capture_output=True, text=True, timeout=120)
    assert "store_result" in bt.stdout and "worker" in bt.stdout and "BFD: warning" not in bt.stderr, bt.stdout + bt.stderr
    assert verdict_of(analyze_json(core)) == verdict_of(report)


def test_run_needs_no_root(built, request, tmp_path):
    """As an ordinary user (nobody), with the kernel writing no core, and a cache directory it may
    not enter (pytest's, only root's): the cache gives way, the report does not."""
    if os.geteuid() != 0:
        user_run = []  # already an ordinary user
    else:
        user_run = [require("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]
    # Outside pytest's own temporary tree, which only its owner may enter.
    work = Path(tempfile.mkdtemp(prefix="coreanalyze-anyone-"))
    work.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    exe = work / "null_thread"
    shutil.copy2(built["null_thread"], exe)
    exe.chmod(0o755)
    out = work / "reports"
    proc = subprocess.run([*user_run, sys.executable, "-m", "coreanalyze", "run", "--out", str(out), "--", str(exe)],
                          cwd=work, env=environment(HOME=str(work), COREANALYZE_CACHE_DIR=str(tmp_path / "cache")), preexec_fn=no_core_limit,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if proc.returncode != 128 + signal.SIGSEGV and "Permission denied" in proc.stderr:
        missing(f"a checkout that an ordinary user may read ({proc.stderr.strip()[:200]})")
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr
    report = only_report(out)
    assert report["classification"]["culprit"]["function"] == "store_result"
    core = Path(report["capture"]["core"])
    assert core.stat().st_uid == (65534 if user_run else os.geteuid()) and core.stat().st_mode & 0o077 == 0  # the core is its owner's only


def test_a_healthy_run_writes_nothing_and_passes_its_status_through(tmp_path):
    out = tmp_path / "reports"
    proc = run_watched(sys.executable, "-c", "import sys; print('fine'); sys.exit(3)", out=out, cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (3, "fine\n") and proc.stderr == ""
    # A signal that is not a crash's ends the command as it would have, unreported.
    proc = run_watched("/bin/sh", "-c", "kill -TERM $$", out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGTERM and proc.stderr == ""
    assert not out.exists()


def test_run_of_a_missing_command_says_so(tmp_path):
    proc = run_watched("no-such-program-here", out=tmp_path / "r", cwd=tmp_path)
    assert proc.returncode == 127 and proc.stderr.strip() == "coreanalyze: no-such-program-here: command not found"


def test_the_programs_own_handler_still_runs_and_the_core_is_of_the_first_delivery(tmp_path):
    out = tmp_path / "reports"
    proc = run_watched(sys.executable, "-X", "faulthandler", str(PYCRASHERS / "three_deep.py"), out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in proc.stderr  # faulthandler printed its traceback
    report = only_report(out)
    assert report["capture"]["handler_ran"] is True
    # The original fault, not faulthandler's re-raise.
    assert report["core"]["signal"]["code_name"] == "SEGV_MAPERR" and report["core"]["signal"]["address"] == "0x10"
    assert report["core"]["signal"]["reraised_by"] is None
    python = [(f["function"], f["line"]) for f in crashed_thread(report)["frames"] if f["kind"] == "python"]
    source = (PYCRASHERS / "three_deep.py").read_text().splitlines()
    crash_line = next(i for i, text in enumerate(source, 1) if "# CRASH-LINE" in text)
    assert ("load_weights", crash_line) in python and [f for f, _ in python][-3:] == ["build_model", "train", "<module>"]


def test_children_started_by_fork_and_by_exec_are_watched_too(tmp_path):
    out = tmp_path / "reports"
    proc = run_watched(sys.executable, str(PYCRASHERS / "crashing_children.py"), out=out, cwd=tmp_path)
    assert proc.returncode == 0 and "children ended: -11 -11" in proc.stdout, proc.stderr
    reports = reports_in(out)
    addresses = sorted(r["core"]["signal"]["address"] for r in reports)
    assert addresses == ["0x18", "0x28"]
    assert len({r["capture"]["pid"] for r in reports}) == 2
    forked = next(r for r in reports if r["core"]["signal"]["address"] == "0x18")
    assert "read_null" in [f["function"] for f in crashed_thread(forked)["frames"] if f["kind"] == "python"]


def test_a_launchers_ranks_are_watched_and_reported_with_their_rank(tmp_path):
    """torchrun's ranks, each dying of the same null pointer: a report per rank, each knowing its
    rank; torchrun goes on to its own exit, which run passes through."""
    torchrun = Path(sys.executable).parent / "torchrun"
    if not torchrun.exists():
        missing("torchrun (torch, in the test extras)")
    out = tmp_path / "reports"
    jobs = REPO / "tests" / "jobs"
    env = environment(OMP_NUM_THREADS="1", PYTHONPATH=f"{jobs}{os.pathsep}{REPO}")
    proc = run_watched(str(torchrun), "--standalone", "--nproc-per-node=2", "--monitor-interval=1", str(jobs / "torch_rank.py"), "same_crash", str(tmp_path),
                       out=out, cwd=tmp_path, env=env, timeout=600)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]  # torchrun's own status for a failed rank
    reports = reports_in(out)
    assert sorted(r["job"]["rank"] for r in reports) == [0, 1], [r["capture"]["command"] for r in reports]
    assert {r["job"]["launcher"] for r in reports} == {"torchrun"}
    assert all(r["classification"]["fault_kind"] == "null-deref" for r in reports)


def test_two_threads_faulting_at_once_give_one_report(built, tmp_path):
    out = tmp_path / "reports"
    proc = run_watched(str(built["two_threads_fault"]), out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    report = only_report(out)
    assert report["classification"]["culprit"]["function"] == "write_through"
    assert len(report["threads"]) == 3  # main and both faulting threads, all in the one core


def test_a_crash_right_after_exec(built, tmp_path):
    out = tmp_path / "reports"
    proc = run_watched("/bin/sh", "-c", f"exec {built['load_time_fault']}", out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    report = only_report(out)
    assert report["capture"]["command"] == [str(built["load_time_fault"])]  # the image after exec
    assert [f["function"] for f in crashed_thread(report)["frames"]][:2] == ["init_tables", "crash_at_load"]


def test_nested_run_is_reported_once_by_the_outer_watch(built, tmp_path):
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    proc = run_watched(sys.executable, "-m", "coreanalyze", "run", "--out", str(inner), "--", str(built["null_thread"]), out=outer, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    assert "already traced by a coreanalyze watcher" in proc.stderr and "runs unwatched" in proc.stderr
    assert not inner.exists()
    assert only_report(outer)["classification"]["culprit"]["function"] == "store_result"


def test_a_command_another_tracer_follows_runs_unwatched(built, tmp_path):
    strace = require("strace")
    out = tmp_path / "reports"
    command = [strace, "-f", "-o", "/dev/null", sys.executable, "-m", "coreanalyze", "run", "--out", str(out), "--", str(built["null_thread"])]
    proc = subprocess.run(command, cwd=tmp_path, env=environment(), preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)
    # strace follows run's fork of the command before run can seize it.
    assert "is already traced by strace" in proc.stderr and "it runs unwatched" in proc.stderr, proc.stderr
    assert proc.returncode == 128 + signal.SIGSEGV
    assert not out.exists()


def test_a_sigkill_cannot_be_held_and_is_said_so(tmp_path):
    out = tmp_path / "reports"
    proc = run_watched(sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGKILL
    report = only_report(out)
    assert report["source"] == "capture" and report["capture"]["core"] is None and report["capture"]["died"] == "SIGKILL"
    assert report["classification"]["fault_kind"] != "out-of-memory"
    assert "SIGKILL" in report["classification"]["summary"] and "SIGKILL" in proc.stderr


def _memory_cgroup(tmp_name: str, limit: int) -> Path:
    """A memory cgroup of this machine's hierarchy (v2 or v1) with `limit` bytes."""
    me = Path("/proc/self/cgroup").read_text().splitlines()
    for line in me:
        _, controllers, path = line.split(":", 2)
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            base, limit_file = Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max"
        elif "memory" in controllers.split(","):
            base, limit_file = Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "memory.limit_in_bytes"
        else:
            continue
        group = base / tmp_name
        try:
            group.mkdir(exist_ok=True)
            (group / limit_file).write_text(str(limit))
            return group
        except OSError:
            continue
    missing("a memory cgroup this user may create (root on cgroup v1 or v2)")


def test_an_oom_kill_is_reported_as_out_of_memory(tmp_path):
    group = _memory_cgroup(f"coreanalyze-test-{os.getpid()}", 200 << 20)
    out = tmp_path / "reports"
    try:
        shell = f"echo $$ > {group}/cgroup.procs && exec {sys.executable} -m coreanalyze run --out {out} -- {sys.executable} -c 'x = [bytearray(1 << 20) for _ in range(4000)]'"
        proc = subprocess.run(["/bin/sh", "-c", shell], cwd=tmp_path, env=environment(), preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)
    finally:
        time.sleep(0.2)
        try:
            group.rmdir()
        except OSError:
            pass
    assert proc.returncode == 128 + signal.SIGKILL, proc.stderr
    report = only_report(out)
    c = report["classification"]
    assert c["fault_kind"] == "out-of-memory" and c["oom"]["allocator"] == "cgroup" and c["oom"]["limit"] == 200 << 20
    assert report["capture"]["oom_kills"] >= 1 and "OOM killer" in proc.stderr


def test_killing_the_watcher_mid_dump_leaves_no_stopped_process(tmp_path):
    out = tmp_path / "reports"
    # Enough memory that the core takes a moment to write.
    crash = "import ctypes; x = bytes(range(256)) * (1 << 18); ctypes.string_at(0x40)"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "coreanalyze", "run", "--out", str(out), "--", sys.executable, "-c", crash],
        cwd=tmp_path, env=environment(), preexec_fn=no_core_limit, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    cores_seen: list[Path] = []
    while time.monotonic() < deadline and not cores_seen:
        cores_seen = list(out.glob("core.*")) if out.exists() else []
        time.sleep(0.01)
    assert cores_seen, "the watcher never began a core"
    pid = int(cores_seen[0].name.rsplit(".", 1)[1])
    os.killpg(watcher.pid, signal.SIGKILL)  # the watcher and its reporter, mid-dump
    watcher.wait(timeout=30)
    assert process_gone_or_reaped(pid), f"process {pid} was left behind: {Path(f'/proc/{pid}/status').read_text()[:300]}"


def test_a_full_disk_costs_the_core_never_the_verdict(tmp_path):
    unshare = require("unshare")
    small = tmp_path / "small"
    small.mkdir()
    crash = "import ctypes; x = bytes(range(256)) * (1 << 16) * 3; ctypes.string_at(0x48)"
    script = f"mount -t tmpfs -o size=4m none {small} && exec {sys.executable} -m coreanalyze run --out {small} -- {sys.executable} -c '{crash}'"
    proc = subprocess.run([unshare, "-Urm", "/bin/sh", "-c", script], cwd=tmp_path, env=environment(), preexec_fn=no_core_limit,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if "mount" in proc.stderr and proc.returncode not in (128 + signal.SIGSEGV,):
        missing(f"a tmpfs mounted in a user namespace ({proc.stderr.strip()[:200]})")
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("coreanalyze: process"))
    assert "SIGSEGV (SEGV_MAPERR) at 0x48" in line and "the disk filled while the core was written" in line
    assert "Traceback" not in proc.stderr


def test_run_inside_a_container_of_its_own(built, tmp_path):
    """A user, pid and mount namespace stands in for a container (no root inside, its own pid 1,
    the host's core_pattern out of reach): run needs none of them."""
    unshare = require("unshare")
    out = tmp_path / "reports"
    command = f"exec {sys.executable} -m coreanalyze run --out {out} -- {built['null_thread']}"
    proc = subprocess.run([unshare, "-Urpf", "--mount-proc", "/bin/sh", "-c", command], cwd=tmp_path, env=environment(),
                          preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 128 + signal.SIGSEGV, proc.stderr
    report = only_report(out)
    assert report["classification"]["culprit"]["function"] == "store_result" and report["capture"]["pid"] < 10


def test_a_debugger_gets_the_process_when_the_watch_steps_aside(tmp_path):
    out = tmp_path / "reports"
    watcher = subprocess.Popen(
        [sys.executable, "-m", "coreanalyze", "run", "--out", str(out), "--", sys.executable, "-c", "import time; print('up', flush=True); time.sleep(120)"],
        cwd=tmp_path, env=environment(), preexec_fn=no_core_limit, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert watcher.stdout.readline() == "up\n"
        sleeper = next(int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == watcher.pid and _cmdline(int(p)).split(b"\0")[1:2] == [b"-c"])
        snapshot = subprocess.run([sys.executable, "-m", "coreanalyze", "--pid", str(sleeper), "--format", "json", "-o", "-"],
                                  env=environment(), capture_output=True, text=True, timeout=300)  # fmt: skip
        assert snapshot.returncode == 0, snapshot.stderr
        assert "the watch stepped aside" in snapshot.stderr
        assert json.loads(snapshot.stdout)["core"]["pid"] == sleeper
        assert _parent(sleeper) == watcher.pid and _tracer(sleeper) == 0  # it runs on, unwatched
        os.kill(sleeper, signal.SIGTERM)
        assert watcher.wait(timeout=60) == 128 + signal.SIGTERM
        assert "stepping aside on request" in watcher.stderr.read()
    finally:
        watcher.kill()


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _tracer(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return -1


def test_a_tensorflow_crash_caught_by_run_gets_the_kernel_cores_verdict(tf_cores, tmp_path):
    from support.tfcores import SCENARIOS, TF_CORPUS, quiet_env

    case, kernel, _ = tf_cores.report("kernel_check_failure")
    out = tmp_path / "reports"
    env = environment(**quiet_env(), TMPDIR=str(tmp_path))
    proc = run_watched(str(case.exe), str(TF_CORPUS / SCENARIOS["kernel_check_failure"].script), out=out, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 128 + signal.SIGABRT, proc.stderr[-2000:]
    report = only_report(out)
    for key in ("category", "fault_kind", "signature", "op"):
        assert report["classification"][key] == kernel["classification"][key], key
    # The fatal log's text, after its time and thread id.
    message = lambda r: r["classification"]["abort_message"].split("] ", 1)[1]  # noqa: E731
    assert message(report) == message(kernel) and "Check failed" in message(report)
    assert report["classification"]["culprit"]["function"] == kernel["classification"]["culprit"]["function"]
    python = lambda r: [(f["function"], f["line"]) for f in crashed_thread(r)["frames"] if f["kind"] == "python"]  # noqa: E731
    assert python(report) == python(kernel) and python(report)
    assert report["environment"]["tensorflow_version"] == kernel["environment"]["tensorflow_version"]


# --- the crash guard --------------------------------------------------------------------------


def test_arming_from_inside_reports_a_crash_on_a_worker_thread(tmp_path):
    out = tmp_path / "guarded"
    proc = subprocess.run([sys.executable, str(PYCRASHERS / "armed.py"), str(out), "crash"], cwd=tmp_path, env=environment(),
                          preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == -signal.SIGSEGV and "armed: True" in proc.stdout, proc.stderr
    report = only_report(out)
    assert report["capture"]["by"] == "guard" and report["core"]["signal"]["address"] == "0x30"
    source = (PYCRASHERS / "armed.py").read_text().splitlines()
    crash_line = next(i for i, text in enumerate(source, 1) if "# GUARDED-CRASH" in text)
    assert ("<lambda>", crash_line) in [(f["function"], f["line"]) for f in crashed_thread(report)["frames"] if f["kind"] == "python"]
    assert crashed_thread(report)["tid"] != report["capture"]["pid"]  # a worker thread, not the main one
    assert process_gone_or_reaped(report["capture"]["pid"])


def test_the_environment_variable_arms_a_fresh_interpreter_and_its_children(tmp_path):
    from coreanalyze.capture import hook

    if not hook.installed():
        missing(f"the crash guard's startup hook in {hook.hook_path()} (./setup.sh installs it)")
    out = tmp_path / "guarded"
    env = environment(COREANALYZE_GUARD=str(out))
    proc = subprocess.run([sys.executable, str(PYCRASHERS / "armed.py"), "-", "child"], cwd=tmp_path, env=env,
                          preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0 and "child ended: -11" in proc.stdout, proc.stderr
    report = only_report(out)
    assert report["capture"]["by"] == "guard" and report["core"]["signal"]["address"] == "0x38"
    assert report["capture"]["command"][1:] == ["-c", "import ctypes; ctypes.string_at(0x38)"]


def test_a_guard_whose_helper_dies_leaves_the_process_running(tmp_path):
    out, flag = tmp_path / "guarded", tmp_path / "go-on"
    proc = subprocess.Popen([sys.executable, str(PYCRASHERS / "armed.py"), str(out), "wait", str(flag)], cwd=tmp_path, env=environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline() == "armed: True\n"
        helper = _tracer(proc.pid)
        assert helper > 0 and helper != proc.pid
        os.kill(helper, signal.SIGKILL)
        flag.touch()
        assert proc.wait(timeout=60) == 0 and proc.stdout.read() == "finished\n"
        assert process_gone_or_reaped(helper)
        assert _parent(helper) != proc.pid  # the helper was never the armed process's child to reap
    finally:
        proc.kill()


def test_a_process_another_debugger_traces_is_not_armed_and_runs_on(tmp_path):
    gdb = require("gdb")
    out, flag = tmp_path / "guarded", tmp_path / "go-on"
    flag.touch()
    proc = subprocess.run([gdb, "-batch", "-ex", "run", "--args", sys.executable, str(PYCRASHERS / "armed.py"), str(out), "wait", str(flag)],
                          cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=300)  # fmt: skip
    assert "armed: False" in proc.stdout and "finished" in proc.stdout, proc.stdout + proc.stderr
    assert "the crash guard is not armed: it is traced by gdb" in proc.stderr
    assert not out.exists()


# --- pytest and Jupyter -----------------------------------------------------------------------

CRASHING_TESTS = '''
import ctypes

def test_fine():
    assert True

def test_reads_null():
    ctypes.string_at(0x50)

def test_after():
    assert True
'''


@pytest.mark.parametrize("workers", [None, "2"], ids=["in-process", "xdist"])
def test_pytest_names_the_test_that_crashed(tmp_path, workers):
    if workers:
        require(module="xdist", what="pytest-xdist")
    (tmp_path / "test_native.py").write_text(CRASHING_TESTS)
    out = tmp_path / "crashes"
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--coreanalyze={out}", "test_native.py"]
    if workers:
        args += ["-n", workers]
    proc = subprocess.run(args, cwd=tmp_path, env=environment(), preexec_fn=no_core_limit, capture_output=True, text=True, timeout=300)
    report = only_report(out)
    assert report["capture"]["by"] == "pytest" and report["capture"]["test"] == "test_native.py::test_reads_null"
    assert report["core"]["signal"]["address"] == "0x50"
    html = Path(report["capture"]["core"] + ".html").read_text()
    assert "<dt>Caught</dt><dd>by pytest --coreanalyze in test test_native.py::test_reads_null (pid " in html
    if workers:
        # The run goes on; the summary ties the worker's death to its test and its verdict.
        assert proc.returncode == 1 and "2 passed" in proc.stdout
        section = proc.stdout.split("coreanalyze: crashes", 1)[1]
        assert "test_native.py::test_reads_null: SIGSEGV" in section and "null-deref" in section and str(out) in section
    else:
        assert proc.returncode == -signal.SIGSEGV


def test_pytest_under_run_names_the_test_from_the_processs_own_environment(tmp_path):
    """Without the plugin: pytest's PYTEST_CURRENT_TEST, read from the core's current environment."""
    (tmp_path / "test_native.py").write_text(CRASHING_TESTS)
    out = tmp_path / "crashes"
    proc = run_watched(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_native.py", out=out, cwd=tmp_path)
    assert proc.returncode == 128 + signal.SIGSEGV
    report = only_report(out)
    assert report["capture"]["by"] == "run" and report["capture"]["test"] == "test_native.py::test_reads_null"


def test_a_notebook_kernel_that_dies_is_reported_and_its_successor_says_so(tmp_path):
    jupyter_client = require(module="jupyter_client", what="jupyter_client")
    require(module="ipykernel", what="ipykernel")
    manager = jupyter_client.KernelManager(kernel_name="python3")
    env = environment()
    manager.start_kernel(cwd=str(tmp_path), env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        assert "this kernel is watched" in _cell(client, "%load_ext coreanalyze")
        first_pid = int(_cell(client, "import os; print(os.getpid())").strip())
        client.execute("import ctypes; ctypes.string_at(0x58)")
        deadline = time.monotonic() + 180
        while manager.is_alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not manager.is_alive()
        out = tmp_path / "coreanalyze-reports"
        report = only_report(out)
        assert report["capture"]["by"] == "notebook" and report["capture"]["pid"] == first_pid
        assert report["core"]["signal"]["address"] == "0x58"
        manager.restart_kernel(now=True)
        client.wait_for_ready(timeout=120)
        told = _cell(client, "%load_ext coreanalyze")
        assert "an earlier kernel died: SIGSEGV" in told and str(out) in told
        assert "an earlier kernel died" not in _cell(client, "%reload_ext coreanalyze")  # told once
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _cell(client, code: str) -> str:
    text: list[str] = []

    def hear(message):
        if message["header"]["msg_type"] == "stream":
            text.append(message["content"]["text"])

    client.execute_interactive(code, output_hook=hear, timeout=120)
    return "".join(text)

