"""Stuck processes for the hang tests: real programs that deadlock, spin or wait, and real
snapshots of them taken with gdb's `gcore` while they run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from support.coregen import compile_c, terminate
from support.paths import HANGS
from support.require import require

STARTUP_LIMIT = 300.0  # seconds a program may take to get stuck (TensorFlow imports slowly)


def thread_states(pid: int) -> list[str]:
    """The one-letter state of every thread of pid ([] when it is gone)."""
    states = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    for task in tasks:
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue
    return states


def wait_until_all_sleep(pid: int, threads: int | None = None, limit: float = STARTUP_LIMIT) -> None:
    """Poll until every thread of pid sleeps in the kernel (and there are `threads` of them)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        states = thread_states(pid)
        if not states:
            raise RuntimeError(f"process {pid} is gone")
        if all(s == "S" for s in states) and (threads is None or len(states) == threads):
            return
        time.sleep(0.05)
    raise RuntimeError(f"process {pid} did not get stuck: thread states {thread_states(pid)}")


def start(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    """Start a stuck-to-be program and wait for its first line ("ready" or "child PID")."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=dict(os.environ, **(env or {})), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    proc.first_line = proc.stdout.readline().strip()  # type: ignore[attr-defined]
    if not proc.first_line:  # type: ignore[attr-defined]
        terminate(proc)
        raise RuntimeError(f"{argv[0]} ended before it was ready")
    return proc


def build(name: str, workdir: Path) -> Path:
    """A C program of tests/hangs/ compiled into workdir."""
    workdir.mkdir(parents=True, exist_ok=True)
    return compile_c(HANGS / f"{name}.c", workdir / name)


def build_library(name: str, workdir: Path) -> Path:
    cc = require("gcc")
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"lib{name}.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-g", "-O1", "-fno-omit-frame-pointer", "-o", str(out), str(HANGS / f"{name}.c"), "-pthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out


def gcore(pid: int, workdir: Path, timeout: float = 900.0) -> tuple[Path, str]:
    """A snapshot of the running process with gdb's gcore; (core path, gcore's output)."""
    tool = require("gcore")
    prefix = workdir / "snapshot"
    done = subprocess.run([tool, "-o", str(prefix), str(pid)], capture_output=True, text=True, timeout=timeout)
    core = Path(f"{prefix}.{pid}")
    if not core.is_file():
        raise RuntimeError(f"gcore wrote no core: {done.stdout[-1000:]} {done.stderr[-1000:]}")
    return core, done.stdout + done.stderr
