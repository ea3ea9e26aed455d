"""`coreanalyze batch --cluster`: the batch's real cores analyzed by a real Dask cluster — a
`dask scheduler` and two `dask worker` processes started here, as on several hosts — give the
same output directory as a local batch; a worker SIGKILLed mid-core loses and doubles nothing;
a core that kills every worker it touches is failed after a bounded number of tries; --resume
works across cluster runs; `--cluster local:N` starts its own cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.require import require

distributed = require(module="distributed", what="dask[distributed] (pip install 'coreanalyze[cluster]')", module_level=True)

from support.batchcorpus import Corpus
from support.clirun import REPO, run_cli
from support.corecache import C_CRASHERS
from support.coregen import compile_c, run_to_core
from support.procs import assert_gone, descendants

# Threads of the slow crasher: gdb needs seconds for its core, a window to kill its worker in.
SLOW_THREADS = 1000
ALLOWED_FAILURES = 1  # the test scheduler gives up on a core after this many + 1 worker deaths
THROUGHPUT_ROUNDS = 3  # crashes of each C crasher in the batch that is timed

SLOW_CRASHER = f"""
#include <pthread.h>
#include <unistd.h>

static void *park(void *arg) {{
    for (;;)
        pause();
    return arg;
}}

int main(void) {{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < {SLOW_THREADS}; i++) {{
        pthread_t thread;
        pthread_create(&thread, &attr, park, 0);
    }}
    usleep(200000);
    *(volatile int *)0 = 1; /* {SLOW_THREADS} threads parked, main faults */
    return 0;
}}
"""


class ClusterCorpus(Corpus):
    """The batch tests' cores, plus one core with hundreds of threads that takes gdb seconds."""

    def __init__(self, root: Path, cores):
        super().__init__(root, cores)
        build = root.parent / f"{root.name}-slow"
        build.mkdir()
        (build / "many_threads.c").write_text(SLOW_CRASHER)
        exe = compile_c(build / "many_threads.c", build / "many_threads")
        case = run_to_core("many_threads", [str(exe)], build)
        slow_dir = root / "host-b"
        slow_dir.mkdir()
        self.slow = slow_dir / case.core.name
        self.slow.write_bytes(case.core.read_bytes())
        self.files.append(self.slow)
        self.arguments.append(str(slow_dir))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, cores) -> ClusterCorpus:
    return ClusterCorpus(tmp_path_factory.mktemp("cluster-corpus") / "cores", cores)


def _env() -> dict[str, str]:
    env = dict(os.environ, NO_COLOR="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


# ---------------------------------------------------------------------------------- the cluster


@dataclass
class DaskCluster:
    address: str
    monitor: distributed.Client  # this test's own view of the cluster
    processes: list[subprocess.Popen]


def _read_scheduler_file(path: Path, scheduler: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert scheduler.poll() is None, log.read_text()
        try:
            return json.loads(path.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.1)  # not written yet, or half-written
    pytest.fail(f"the Dask scheduler did not start: {log.read_text()}")


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """`dask scheduler` and two `dask worker --nthreads 1` processes (each with its nanny, which
    restarts a worker that dies), as an operator would start them on several hosts; `python -m
    dask` is the `dask` command of this interpreter."""
    here = tmp_path_factory.mktemp("dask")
    scheduler_file = here / "scheduler.json"
    env = _env()
    # One core per worker thread at a time, and a core is given up after two worker deaths.
    env["DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION"] = "1.0"
    env["DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES"] = str(ALLOWED_FAILURES)
    processes: list[subprocess.Popen] = []
    logs = []

    def start(name: str, *argv: str) -> subprocess.Popen:
        logs.append(open(here / f"{name}.log", "wb"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "dask", *argv], env=env, stdout=logs[-1], stderr=subprocess.STDOUT, cwd=here, start_new_session=True
        )
        processes.append(proc)
        return proc

    monitor = None
    try:
        scheduler = start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file))
        address = _read_scheduler_file(scheduler_file, scheduler, here / "scheduler.log")
        for index in range(2):
            start(f"worker{index}", "worker", address, "--nthreads", "1", "--memory-limit", "0", "--no-dashboard", "--name", f"w{index}")
        monitor = distributed.Client(address, set_as_default=False)
        monitor.wait_for_workers(2, timeout=120)
        yield DaskCluster(address, monitor, processes)
    finally:
        if monitor is not None:
            monitor.close()
        for proc in reversed(processes):  # workers first, each with its nanny's worker process
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for proc in processes:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for log in logs:
            log.close()


@dataclass
class Kill:
    pid: int
    gdb_pids: set[int]


def _holds_open(pid: int, path: str) -> bool:
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd) == path:
                return True
        except OSError:
            continue
    return False


def _kill_workers_in(cluster: DaskCluster, batch: subprocess.Popen, core: Path, times: int) -> list[Kill]:
    """While the batch runs, SIGKILL each worker process caught analyzing `core` (it or its gdb
    holds the file open: the worker is mid-core), up to `times` kills."""
    kills: list[Kill] = []
    deadline = time.monotonic() + 300
    while batch.poll() is None and len(kills) < times and time.monotonic() < deadline:
        try:
            workers = set(cluster.monitor.run(os.getpid, on_error="ignore").values())
        except (OSError, distributed.TimeoutError):
            workers = set()
        for pid in workers - {k.pid for k in kills}:
            below = descendants(pid)
            if any(_holds_open(p, os.path.realpath(core)) for p in {pid} | below):
                os.kill(pid, signal.SIGKILL)
                kills.append(Kill(pid, below))
        time.sleep(0.02)
    return kills


# ---------------------------------------------------------------------------------- helpers




def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _comparable(summary: dict) -> dict:
    return {"totals": summary["totals"], "groups": summary["groups"], "failed": summary["failed"]}


def _own(group: dict) -> dict:
    """A group without what depends on the rest of the batch: correlations, the trend chart's
    period, the packages whose versions vary across the batch."""
    return {k: v for k, v in group.items() if k not in ("correlations", "chart", "packages")}


def _records(out: Path) -> dict[str, dict]:
    """cores.jsonl by path, without the time each core took (the only field that may differ)."""
    lines = [json.loads(line) for line in (out / "cores.jsonl").read_text().splitlines()]
    by_path = {line["path"]: {k: v for k, v in line.items() if k != "seconds"} for line in lines}
    assert len(by_path) == len(lines), "a core recorded twice"
    return by_path


def _results(out: Path) -> list[Path]:
    return [p for p in (out / "results").iterdir() if p.suffix == ".json" and not p.name.startswith(".")]


def _start_batch(corpus: ClusterCorpus, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "coreanalyze", "batch", *corpus.arguments, "--out", str(out), "--timeout", "120", *extra],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    return stdout, stderr


def _timed_cli(*args: str) -> float:
    started = time.monotonic()
    run = run_cli(*args)
    assert run.code == 0, run.stderr
    return time.monotonic() - started


TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def timings(tmp_path_factory):
    """Wall-clock seconds of the batches below, for docs/batch-and-fleet.md (printed with -s, and kept in
    cluster-timings.json); never asserted."""
    yield TIMINGS
    if TIMINGS:
        (tmp_path_factory.getbasetemp() / "cluster-timings.json").write_text(json.dumps(TIMINGS, indent=1) + "\n")
        for name, seconds in TIMINGS.items():
            print(f"\n{name}: {seconds:.2f} s", end="")


@pytest.fixture(scope="module")
def local_batch(corpus, tmp_path_factory) -> Path:
    """The reference: the same cores in a local batch of two worker processes."""
    out = tmp_path_factory.mktemp("cluster-local") / "out"
    TIMINGS["local batch --jobs 2"] = _timed_cli("batch", *corpus.arguments, "--out", str(out), "--jobs", "2", "--timeout", "120")
    return out


# ---------------------------------------------------------------------------------- tests


def test_cluster_batch_writes_what_a_local_batch_writes(corpus, local_batch, dask_cluster, tmp_path):
    out = tmp_path / "out"
    TIMINGS["--cluster tcp:// (2 workers, running)"] = _timed_cli(
        "batch", *corpus.arguments, "--out", str(out), "--cluster", dask_cluster.address, "--timeout", "120"
    )
    local = _summary(local_batch)
    assert local["totals"] == {"files": 10, "cores": 9, "analyzed": 8, "partial": 0, "failed": 1, "duplicates": 1, "groups": 6, "known_groups": 0, "without_time": 0}
    # The same bytes: summary, index, every report; the same records but for their durations.
    for name in ("summary.json", "index.html"):
        assert (out / name).read_text() == (local_batch / name).read_text(), name
    reports = sorted(p.name for p in (local_batch / "reports").iterdir())
    assert reports and sorted(p.name for p in (out / "reports").iterdir()) == reports
    for name in reports:
        assert (out / "reports" / name).read_bytes() == (local_batch / "reports" / name).read_bytes(), name
    assert _records(out) == _records(local_batch)
    assert set(_records(out)) == {str(p) for p in corpus.files}
    # The workers joined the batch and left it: no plugin of the batch remains registered.
    plugins = dask_cluster.monitor.run(lambda dask_worker: [n for n in dask_worker.plugins if n.startswith("coreanalyze-batch-")])
    assert plugins and not any(plugins.values())


def test_a_worker_killed_mid_core_loses_nothing_and_doubles_nothing(corpus, local_batch, dask_cluster, tmp_path):
    out = tmp_path / "out"
    batch = _start_batch(corpus, out, "--cluster", dask_cluster.address)
    kills = _kill_workers_in(dask_cluster, batch, corpus.slow, times=1)
    assert len(kills) == 1, "no worker was caught in the slow core"
    _finish(batch)
    # The core in flight ran again on another worker: every core once, the same outcome.
    assert _comparable(_summary(out)) == _comparable(_summary(local_batch))
    records = _records(out)
    assert records == _records(local_batch)
    assert records[str(corpus.slow)]["status"] == "ok"
    assert len(_results(out)) == len(corpus.files)
    # The dead worker's gdb did not outlive it; its nanny started a new worker.
    assert_gone({kills[0].pid} | kills[0].gdb_pids)
    dask_cluster.monitor.wait_for_workers(2, timeout=120)


def test_a_core_that_kills_every_worker_is_failed_after_bounded_tries(corpus, local_batch, dask_cluster, tmp_path):
    out = tmp_path / "out"
    batch = _start_batch(corpus, out, "--cluster", dask_cluster.address)
    kills = _kill_workers_in(dask_cluster, batch, corpus.slow, times=ALLOWED_FAILURES + 2)
    _finish(batch)
    # Given up after allowed-failures + 1 deaths, each of a different worker.
    assert len(kills) == ALLOWED_FAILURES + 1
    assert len({k.pid for k in kills}) == len(kills)
    summary = _summary(out)
    failed = {f["path"]: f["reason"] for f in summary["failed"]}
    assert f"died on {ALLOWED_FAILURES + 1} Dask workers" in failed[str(corpus.slow)]
    # Everything else as in the local batch.
    local = _summary(local_batch)
    slow_signature = _records(local_batch)[str(corpus.slow)]["signature"]
    # Less one core, the groups are the same but for what is relative to the whole batch.
    assert [_own(g) for g in summary["groups"]] == [_own(g) for g in local["groups"] if g["signature"] != slow_signature]
    expected = dict(local["totals"], analyzed=local["totals"]["analyzed"] - 1, failed=local["totals"]["failed"] + 1, groups=local["totals"]["groups"] - 1)
    assert summary["totals"] == expected
    records, reference = _records(out), _records(local_batch)
    assert records[str(corpus.slow)]["status"] == "failed"
    assert {p: r for p, r in records.items() if p != str(corpus.slow)} == {p: r for p, r in reference.items() if p != str(corpus.slow)}
    dask_cluster.monitor.wait_for_workers(2, timeout=120)


def test_resume_across_cluster_runs(corpus, local_batch, dask_cluster, tmp_path):
    out = tmp_path / "out"
    batch = _start_batch(corpus, out, "--cluster", dask_cluster.address)
    deadline = time.monotonic() + 300
    while not ((out / "results").is_dir() and _results(out)) and batch.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    batch.send_signal(signal.SIGKILL)  # the client dies; the cluster lives on
    batch.communicate()
    kept = len(_results(out))
    assert 1 <= kept < len(corpus.files), "the client should have been killed mid-run"

    resumed = run_cli("batch", *corpus.arguments, "--out", str(out), "--resume", "--cluster", dask_cluster.address)
    assert resumed.code == 0, resumed.stderr
    assert f"{kept} already done" in resumed.stdout
    assert _comparable(_summary(out)) == _comparable(_summary(local_batch))
    assert _records(out) == _records(local_batch)
    again = run_cli("batch", *corpus.arguments, "--out", str(out), "--resume", "--cluster", dask_cluster.address)
    assert again.code == 0 and f"{len(corpus.files)} already done" in again.stdout


def test_local_cluster_of_worker_processes(corpus, local_batch, tmp_path):
    out = tmp_path / "out"
    TIMINGS["--cluster local:2 (cluster start included)"] = _timed_cli(
        "batch", *corpus.arguments, "--out", str(out), "--cluster", "local:2", "--timeout", "120"
    )
    assert (out / "summary.json").read_text() == (local_batch / "summary.json").read_text()
    assert _records(out) == _records(local_batch)


def test_a_core_over_its_time_is_recorded_as_timed_out(corpus, dask_cluster, tmp_path):
    """The workers' own watchdog, as in a local batch: no real analysis fits in 10 ms."""
    from coreanalyze.batch import BatchOptions, run_batch

    result = run_batch(
        [str(corpus.null_cores[0]), str(corpus.killed)],
        BatchOptions(out=tmp_path / "out", timeout=0.01, grace=0.0, cluster=dask_cluster.address),
    )
    assert result.this_run == {"failed": 2}
    assert {f["path"] for f in result.summary["failed"]} == {str(corpus.null_cores[0]), str(corpus.killed)}
    assert all(f["reason"].startswith("timed out") for f in result.summary["failed"])
    dask_cluster.monitor.wait_for_workers(2, timeout=120)


def test_bad_cluster_options_are_one_line_and_exit_2(corpus, tmp_path):
    core = str(corpus.killed)
    cases = [
        (["--cluster", "tcp:/nowhere"], "expected a Dask scheduler's address"),
        (["--cluster", "local:0"], "at least 1 worker"),
        (["--cluster", "local:2", "--jobs", "2"], "--jobs"),
        (["--cluster", "tcp://127.0.0.1:1"], "cannot reach a Dask scheduler"),
    ]
    for index, (extra, message) in enumerate(cases):
        run = run_cli("batch", core, "--out", str(tmp_path / f"o{index}"), *extra, env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
        assert run.code == 2, (extra, run.stderr)
        assert message in run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_throughput_of_a_cluster_and_of_a_local_batch(cores, dask_cluster, tmp_path):
    """A batch of distinct real cores, each way twice (the faster run counts, so that neither
    pays alone for cold caches): a local batch of 2 worker processes against the 2 running
    workers of the cluster. Both must agree; the times go to docs/batch-and-fleet.md, never asserted."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name, (_, args, sig) in C_CRASHERS.items():
        exe = cores.c_crash(name).exe
        for run in range(THROUGHPUT_ROUNDS):
            case = run_to_core(f"{name}-{run}", [str(exe), *args], tmp_path / f"{name}-{run}", kill_after_ready=sig)
            (inputs / f"core.{name}.{run}").write_bytes(case.core.read_bytes())
    count = len(C_CRASHERS) * THROUGHPUT_ROUNDS
    ways = {
        f"{count} cores, local batch --jobs 2": ("--jobs", "2"),
        f"{count} cores, --cluster tcp:// (2 workers, running)": ("--cluster", dask_cluster.address),
    }
    best: dict[str, float] = {}
    outs: dict[str, Path] = {}
    for attempt in range(2):
        for index, (way, extra) in enumerate(ways.items()):
            out = tmp_path / f"out-{attempt}-{index}"
            outs[way] = out
            seconds = _timed_cli("batch", str(inputs), "--out", str(out), "--timeout", "120", *extra)
            best[way] = min(best.get(way, seconds), seconds)
    TIMINGS.update(best)
    local_out, cluster_out = (outs[way] for way in ways)
    assert _summary(cluster_out)["totals"]["files"] == count
    assert (cluster_out / "summary.json").read_text() == (local_out / "summary.json").read_text()
