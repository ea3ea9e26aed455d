"""Make real cores for the tests: run a real crashing program and let the kernel write its core.

When the kernel's core_pattern pipes cores away (systemd-coredump, apport) or writes them
somewhere we cannot find, run the program under gdb instead and write the core with
`generate-core-file` at the signal; `CrashCase.method` says which one made the core.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.require import require


@dataclass
class CrashCase:
    name: str
    core: Path
    exe: Path  # the program that dumped the core (a compiled crasher or a Python interpreter)
    argv: list[str]
    workdir: Path
    method: str  # "kernel" | "gdb"
    pid: int | None = None
    extra: dict = field(default_factory=dict)


def kernel_writes_cores_here() -> bool:
    try:
        pattern = Path("/proc/sys/kernel/core_pattern").read_text().strip()
    except OSError:
        return False
    # A pipe hands cores to a helper; an absolute path puts them where we may not look.
    return bool(pattern) and not pattern.startswith("|") and "/" not in pattern


def raise_core_limit() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _find_kernel_core(workdir: Path, pid: int, since: float) -> Path | None:
    candidates = [p for p in workdir.iterdir() if p.name.startswith("core") and p.is_file()]
    candidates = [p for p in candidates if p.stat().st_mtime >= since - 1]
    for p in candidates:
        if p.name == f"core.{pid}":
            return p
    return candidates[0] if len(candidates) == 1 else None


def _wait_until_blocked(pid: int, timeout: float = 10.0) -> None:
    """Wait until the process sleeps in a system call, so the signal finds it in its wait loop
    rather than still flushing its "ready" line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
        except OSError:
            return
        if state == "S" and wchan not in ("", "0"):
            time.sleep(0.05)
            return
        time.sleep(0.02)


def compile_c(source: Path, out: Path, extra_flags: tuple[str, ...] = ()) -> Path:
    cc = require("gcc")
    cmd = [cc, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(out), str(source), "-pthread", *extra_flags]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def compile_cxx(source: Path, out: Path) -> Path:
    cxx = require("g++")
    cmd = [cxx, "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(out), str(source)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def wait_for_core_file(path: Path, timeout: float = 30.0) -> None:
    # The kernel writes the core before the parent sees the exit status, but be careful with
    # slow disks: wait until the size stops changing.
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        size = path.stat().st_size
        if size == last and size > 0:
            return
        last = size
        time.sleep(0.1)


def run_to_core(
    name: str,
    argv: list[str],
    workdir: Path,
    env: dict | None = None,
    kill_after_ready: int | None = None,
    timeout: float = 300.0,
    reraised: bool = False,
    base_env: dict | None = None,
) -> CrashCase:
    """Run argv in workdir until it dies by a signal; return the core the crash left.

    kill_after_ready: send this signal from the test process once the child printed a line
    (for a process killed by another one).
    reraised: the program's handler catches the first signal and raises it again; under gdb the
    core is written at the second one (the kernel writes it there anyway).
    base_env: the environment `env` adds to (default: this process's, as it is now).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    exe = Path(shutil.which(argv[0]) or argv[0]).resolve()
    full_env = dict(os.environ if base_env is None else base_env, **(env or {}))
    if kernel_writes_cores_here():
        since = time.time()
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=full_env,
            preexec_fn=raise_core_limit,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if kill_after_ready is not None:
            proc.stdout.readline()
            _wait_until_blocked(proc.pid)
            os.kill(proc.pid, kill_after_ready)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise RuntimeError(f"{name}: the crasher did not crash within {timeout}s")
        if proc.returncode >= 0:
            raise RuntimeError(
                f"{name}: expected death by a signal, got exit {proc.returncode}: {err.decode(errors='replace')[-2000:]}"
            )
        core = _find_kernel_core(workdir, proc.pid, since)
        if core is not None:
            wait_for_core_file(core)
            target = workdir / f"core.{proc.pid}"
            if core != target:
                core.rename(target)
            return CrashCase(name, target, exe, argv, workdir, "kernel", proc.pid)
    return _run_under_gdb_to_core(name, argv, workdir, full_env, exe, kill_after_ready, timeout, reraised)


def _run_under_gdb_to_core(name, argv, workdir, env, exe, kill_after_ready, timeout, reraised=False) -> CrashCase:
    gdb = require("gdb")
    core = workdir / "core.gdb"
    cmd = [gdb, "-nx", "-batch", "-iex", "set debuginfod enabled off", "-ex", "set pagination off"]
    if kill_after_ready is not None:
        # gdb stops the inferior at the signal; the kill comes from the test process below.
        pass
    # gdb stops at every signal; a handler that re-raises gets the first one passed on.
    resume = ["-ex", "continue"] if reraised else []
    cmd += ["-ex", "run", *resume, "-ex", f"generate-core-file {core}", "-ex", "kill", "--args", *argv]
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after_ready is not None:
        # The crasher prints "ready"; find its pid as gdb's child and send the signal.
        deadline = time.monotonic() + 60
        child = None
        while child is None and time.monotonic() < deadline:
            time.sleep(0.2)
            out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            child = int(out[0]) if out else None
        if child is None:
            proc.kill()
            raise RuntimeError(f"{name}: crasher did not start under gdb")
        time.sleep(0.5)
        os.kill(child, kill_after_ready)
    proc.communicate(timeout=timeout)
    if not core.exists():
        raise RuntimeError(f"{name}: gdb did not write a core")
    return CrashCase(name, core, exe, argv, workdir, "gdb")


def terminate(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
