"""`coreanalyze watch` as a server runs it, for the tests: started in the background with its log
in a file, real crashers dying in the watched directory so that the kernel writes their cores
there while the watcher looks, and what the output directory holds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.coregen import kernel_writes_cores_here, raise_core_limit, run_to_core
from support.paths import REPO

# Quick looks and a short settle time: the tests' cores are small and their writers known.
FAST = ("--poll", "0.2", "--settle", "5", "--min-free", "64K")


class WatchRun:
    """One `coreanalyze watch` process."""

    running: list[WatchRun] = []  # ended by the tests' fixture, whatever the test's outcome

    def __init__(self, directories: list[Path], out: Path, log: Path, *extra: str):
        WatchRun.running.append(self)
        env = dict(os.environ, NO_COLOR="1")
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("COREANALYZE_DEBUG", None)
        self.log = log
        with open(log, "a", encoding="utf-8") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "coreanalyze", "watch", *map(str, directories), "--out", str(out), *FAST, *extra],
                env=env, stdout=f, stderr=subprocess.STDOUT, text=True,
                # Started from a test run in the background, SIGINT would be ignored: give the
                # watcher the dispositions a service manager gives it.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )  # fmt: skip

    def __enter__(self) -> WatchRun:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:  # a failed test: its watcher must not outlive it
            self.proc.kill()
            self.proc.wait()

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, what: str, check, timeout: float = 600.0) -> None:
        """Until check() is true; fails with the log when the watcher ends or time runs out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            if self.proc.poll() is not None:
                pytest.fail(f"the watcher ended (exit {self.proc.returncode}) before {what}:\n{self.text()[-4000:]}")
            time.sleep(0.1)
        pytest.fail(f"no {what} within {timeout:g} s:\n{self.text()[-4000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 300.0) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=timeout)
        text = self.text()
        # A worker stopped in the middle of a fork may print Python's "Exception ignored" note.
        assert text.count("Traceback") == text.count("Exception ignored in"), text
        return code


def records(out: Path) -> list[dict]:
    results = out / "results"
    if not results.is_dir():
        return []
    found = []
    for p in sorted(results.iterdir()):
        if p.suffix == ".json" and not p.name.startswith("."):
            try:
                found.append(json.loads(p.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue  # replaced while read
    return found


def attempts(out: Path) -> dict:
    try:
        return json.loads((out / "watch-state.json").read_text(encoding="utf-8"))["attempts"]
    except (OSError, ValueError, KeyError):
        return {}


def crash_into(program: Path, directory: Path) -> Path:
    """Run a crasher in `directory`: the kernel writes its core there (core_pattern `core`)
    while the watcher may already look at it. Where the kernel hands cores elsewhere, the core is
    made by coregen's fallback and moved in whole."""
    directory.mkdir(parents=True)
    if kernel_writes_cores_here():
        proc = subprocess.run([str(program)], cwd=directory, preexec_fn=raise_core_limit, capture_output=True, timeout=120)
        assert proc.returncode < 0, proc.stderr
        core = directory / "core"
        assert core.is_file(), f"no core from {program} in {directory}"
        return core
    scratch = directory.parent / f".{directory.name}-scratch"
    case = run_to_core(program.name, [str(program)], scratch)
    core = directory / "core"
    os.rename(case.core, core)
    return core


def watcher_children(pid: int) -> list[int]:
    """The batch workers the watcher started (not multiprocessing's resource tracker)."""
    from support.procs import descendants

    found = []
    for child in descendants(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            parent = int(Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        if parent == pid and b"spawn_main" in cmdline:
            found.append(child)
    return found
