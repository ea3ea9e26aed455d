"""Real multi-process jobs for the tests, one run per scenario and session, a core written by
the kernel for every rank.

Each job runs on this machine over loopback: a two-worker TensorFlow MultiWorkerMirroredStrategy
(tests/jobs/tf_worker.py), a TensorFlow ParameterServerStrategy job of a chief, two workers and a
parameter server (tests/jobs/tf_ps_task.py), PyTorch's gloo backend under torchrun (tests/jobs/torch_rank.py) and
JAX's multi-process CPU runtime (tests/jobs/jax_process.py: its coordination service, and gloo for
the collectives).
Each rank works in its own directory ROOT/rankN, where the kernel writes its core, and leaves
there its pid and, right before its last call, a `waiting` mark. The test plays the cluster's
watchdog: once the ranks meant to crash are dead (their cores written), it ends every rank still
alive and waiting with SIGABRT, which dumps a core, as a job's watchdog or a scheduler's timeout
does; in a job where nothing crashes, it ends all of them once all wait.

Cores are ~180-300 MB each: the cache keeps them in one directory of the session, removed when
the session ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from support.coregen import kernel_writes_cores_here, raise_core_limit, wait_for_core_file
from support.paths import JOBS
from support.require import missing

START_SECONDS = 240.0  # TensorFlow's import and the cluster's start on a loaded 2-CPU machine
SETTLE_SECONDS = 1.5  # after a rank is seen asleep in its wait, before the watchdog's signal


@dataclass(frozen=True)
class JobScenario:
    name: str
    framework: str  # "tensorflow" | "torch" | "jax"
    world_size: int
    crashers: tuple[int, ...]  # the ranks that crash by themselves; the others wait
    runner: str | None = None  # how the job is started, where the framework has several ways
    # Ranks that go on working when the others wait (a coordinator that trains on without a failed
    # worker): signalled once their `waiting` mark is there, asleep or not.
    busy: tuple[int, ...] = ()


SCENARIOS = {
    s.name: s
    for s in (
        JobScenario("tf_one_crash", "tensorflow", 2, (1,)),
        # chief 0, workers 1 and 2, ps 3 (as TF_CONFIG ranks them): worker 1 faults.
        JobScenario("tf_ps_worker_crash", "tensorflow", 4, (2,), runner="tf_ps", busy=(0,)),
        JobScenario("torch_one_crash", "torch", 2, (1,)),
        JobScenario("torch_same_crash", "torch", 2, (0, 1)),
        JobScenario("torch_deadlock", "torch", 2, ()),
        JobScenario("jax_one_crash", "jax", 3, (1,)),
        JobScenario("jax_deadlock", "jax", 2, ()),
    )
}


@dataclass
class JobRun:
    scenario: JobScenario
    root: Path
    cores: dict[int, Path]  # rank -> its core
    pids: dict[int, int]  # rank -> pid
    log: str  # the job's output as a console shows it: every rank's lines interleaved
    watchdog_pid: int = field(default_factory=os.getpid)

    @property
    def waiting(self) -> list[int]:
        return [r for r in self.cores if r not in self.scenario.crashers]


class JobFailed(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _state(pid: int) -> str | None:
    """The process's state letter, None once it is gone or a zombie (dead, not yet reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return None if state in ("Z", "X") else state


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _until(what: str, ready, deadline: float, alive) -> None:
    while not ready():
        if time.monotonic() > deadline:
            raise JobFailed(f"timed out waiting for {what}")
        if not alive():
            raise JobFailed(f"the job ended while waiting for {what}")
        time.sleep(0.05)


class _Watchdog:
    """Plays the cluster's watchdog over one job's ranks."""

    def __init__(self, scenario: JobScenario, root: Path, launcher_alive) -> None:
        self.scenario, self.root, self.launcher_alive = scenario, root, launcher_alive
        self.pids: dict[int, int] = {}

    def rank_dir(self, rank: int) -> Path:
        return self.root / f"rank{rank}"

    def run(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        for rank in range(self.scenario.world_size):
            _until(f"rank {rank} to start", lambda r=rank: _read_int(self.rank_dir(r) / "pid") is not None, deadline, self.launcher_alive)
            self.pids[rank] = _read_int(self.rank_dir(rank) / "pid")
        for rank in self.scenario.crashers:
            _until(f"rank {rank} to crash", lambda r=rank: _state(self.pids[r]) is None, deadline, lambda: True)
        waiting = [r for r in self.pids if r not in self.scenario.crashers]
        for rank in waiting:
            pid = self.pids[rank]
            _until(f"rank {rank} to wait", lambda r=rank, p=pid: (self.rank_dir(r) / "waiting").exists() and self._asleep(r, p), deadline, lambda p=pid: _state(p) is not None)
        time.sleep(SETTLE_SECONDS)
        for rank in waiting:
            if not self._asleep(rank, self.pids[rank]):
                raise JobFailed(f"rank {rank} stopped waiting before the watchdog's signal")
            os.kill(self.pids[rank], signal.SIGABRT)
        for rank in waiting:
            _until(f"rank {rank} to die", lambda r=rank: _state(self.pids[r]) is None, time.monotonic() + 120, lambda: True)

    def _asleep(self, rank: int, pid: int) -> bool:
        state = _state(pid)
        return state == "S" or (state is not None and rank in self.scenario.busy)

    def cores(self) -> dict[int, Path]:
        found = {}
        for rank in self.pids:
            core = self.rank_dir(rank) / "core"
            if not core.is_file():
                raise JobFailed(f"rank {rank} left no core in {core.parent}")
            wait_for_core_file(core)
            found[rank] = core.rename(self.rank_dir(rank) / f"core.{self.pids[rank]}")
        return found

    def end_helpers(self) -> None:
        for rank in self.pids:
            helper = _read_int(self.rank_dir(rank) / "helper")
            if helper is not None and _state(helper) is not None:
                os.kill(helper, signal.SIGKILL)


def _end(proc: subprocess.Popen, wait: float = 60.0) -> None:
    """The launcher ends once it has seen every rank die; else it is ended."""
    try:
        proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHOME"}
    env.update({"TF_CPP_MIN_LOG_LEVEL": "1", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"})
    return env


def run_torch_job(scenario: JobScenario, root: Path) -> JobRun:
    torchrun = Path(sys.executable).parent / "torchrun"
    # A long monitor interval: the watchdog, not torchrun's SIGTERM, ends the waiting ranks.
    # --tee: each rank's own lines on the console behind "[default<rank>]:", as people run it.
    cmd = [str(torchrun), "--standalone", f"--nproc-per-node={scenario.world_size}", "--monitor-interval=20", "--tee=3",
           str(JOBS / "torch_rank.py"), scenario.name.removeprefix("torch_"), str(root)]
    proc = subprocess.Popen(cmd, cwd=root, env=_env(), preexec_fn=raise_core_limit, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return _watch(scenario, root, [proc])


def run_tf_job(scenario: JobScenario, root: Path) -> JobRun:
    """Both ways TF_CONFIG reaches a worker: worker 0 builds it from its flags and sets it itself
    (it is not in the environment the process started with), the others get it from the launcher.
    One step, the crash's: the waiting worker's all-reduce never starts (its group is resolved
    with the other task over RPC), so no thread of it is inside a collective."""
    ports = [_free_port() for _ in range(scenario.world_size)]
    workers = [f"localhost:{p}" for p in ports]
    procs = []
    for rank in range(scenario.world_size):
        rank_dir = root / f"rank{rank}"
        rank_dir.mkdir()
        role = "crash" if rank in scenario.crashers else "wait"
        cmd = [sys.executable, str(JOBS / "tf_worker.py"), str(rank_dir), role, "--steps", "1"]
        env = _env()
        if rank == 0:
            cmd += ["--cluster", ",".join(workers), "--index", "0"]
        else:
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}})
        procs.append(subprocess.Popen(cmd, cwd=rank_dir, env=env, preexec_fn=raise_core_limit, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    return _watch(scenario, root, procs)


# ParameterServerStrategy's tasks in the order a core's TF_CONFIG ranks them (jobs/identity.py).
PS_TASKS = (("chief", 0), ("worker", 0), ("worker", 1), ("ps", 0))


def run_tf_ps_job(scenario: JobScenario, root: Path) -> JobRun:
    """A ParameterServerStrategy job: the chief's coordinator schedules steps on the workers, the
    variables live on the parameter server; every task gets TF_CONFIG from its launcher. The task
    told to crash faults once the chief has run its first steps; the chief trains on until its
    coordinator has seen the failure, then ends its program, and the tasks that serve serve on."""
    addresses = [f"localhost:{_free_port()}" for _ in PS_TASKS]
    cluster: dict[str, list[str]] = {}
    for (kind, _), address in zip(PS_TASKS, addresses):
        cluster.setdefault(kind, []).append(address)
    chief_dir = root / "rank0"
    procs = []
    for rank, (kind, index) in enumerate(PS_TASKS[: scenario.world_size]):
        rank_dir = root / f"rank{rank}"
        rank_dir.mkdir()
        action = "crash" if rank in scenario.crashers else "serve"
        env = {**_env(), "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})}
        procs.append(subprocess.Popen([sys.executable, str(JOBS / "tf_ps_task.py"), str(rank_dir), action, str(chief_dir)], cwd=rank_dir,
                                      env=env, preexec_fn=raise_core_limit, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    # srun --label's console, with srun's own line for each task a signal ended.
    return _watch(scenario, root, procs, exits=True)


def run_jax_job(scenario: JobScenario, root: Path) -> JobRun:
    """Processes started side by side, as srun starts a job's tasks: each told the coordinator's
    address, the number of processes and its own id on its command line."""
    coordinator = f"127.0.0.1:{_free_port()}"
    procs = []
    for rank in range(scenario.world_size):
        cmd = [sys.executable, str(JOBS / "jax_process.py"), scenario.name.removeprefix("jax_"), str(root),
               f"--coordinator_address={coordinator}", f"--num_processes={scenario.world_size}", f"--process_id={rank}"]
        procs.append(subprocess.Popen(cmd, cwd=root, env={**_env(), "JAX_PLATFORMS": "cpu"}, preexec_fn=raise_core_limit,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    return _watch(scenario, root, procs, exits=True)


class _Console:
    """The job's console: every process's lines as they come, interleaved; with several
    processes each line behind its rank, as `srun --label` shows them ("1: ..."). With `exits`,
    also srun's own line for each task that a signal ended ("srun: error: HOST: task 1:
    Segmentation fault (core dumped)"), from the process's real exit status."""

    def __init__(self, procs: list[subprocess.Popen], exits: bool = False) -> None:
        self.procs, self.exits = procs, exits
        self.lines: list[str] = []
        self.lock = threading.Lock()
        label = len(procs) > 1
        self.readers = [threading.Thread(target=self._read, args=(p, f"{i}: " if label else ""), daemon=True) for i, p in enumerate(procs)]
        for reader in self.readers:
            reader.start()

    def _read(self, proc: subprocess.Popen, prefix: str) -> None:
        for line in proc.stdout:
            with self.lock:
                self.lines.append(prefix + line)

    def text(self) -> str:
        for reader in self.readers:
            reader.join(timeout=30)
        with self.lock:
            return "".join(self.lines) + (self._exits() if self.exits else "")

    def _exits(self) -> str:
        host = socket.gethostname()
        ended = [(i, p.returncode) for i, p in enumerate(self.procs) if p.returncode is not None and p.returncode < 0]
        return "".join(f"srun: error: {host}: task {i}: {signal.strsignal(-code)} (core dumped)\n" for i, code in ended)


def _watch(scenario: JobScenario, root: Path, procs: list[subprocess.Popen], exits: bool = False) -> JobRun:
    dog = _Watchdog(scenario, root, lambda: any(p.poll() is None for p in procs))
    console = _Console(procs, exits)
    try:
        dog.run()
        cores = dog.cores()
    except JobFailed as e:
        for p in procs:
            p.kill()
            p.wait()
        raise JobFailed(f"{scenario.name}: {e}\n{console.text()[-4000:]}") from None
    finally:
        dog.end_helpers()
    for p in procs:
        _end(p)
    return JobRun(scenario, root, cores, dict(dog.pids), console.text())


class JobCores:
    """Each scenario's job run at most once per session."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs: dict[str, JobRun] = {}

    def get(self, name: str) -> JobRun:
        if name not in self.runs:
            scenario = SCENARIOS[name]
            if not kernel_writes_cores_here():
                missing("the kernel writing cores into the process's directory (core_pattern 'core')")
            require_framework(scenario.framework)
            root = self.root / name
            root.mkdir(parents=True)
            runner = {"tensorflow": run_tf_job, "tf_ps": run_tf_ps_job, "torch": run_torch_job, "jax": run_jax_job}[scenario.runner or scenario.framework]
            self.runs[name] = runner(scenario, root)
        return self.runs[name]


def require_framework(framework: str) -> None:
    import importlib.util

    module = framework
    if importlib.util.find_spec(module) is None:
        missing(f"{module} in the interpreter running the tests")


@contextmanager
def job_core_cache(base: Path) -> Iterator[JobCores]:
    root = base / "jobcores"
    root.mkdir(exist_ok=True)
    try:
        yield JobCores(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
