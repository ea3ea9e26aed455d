"""report.capture: how a crash was caught, and what the process was doing for its caller (the
pytest test it ran)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Sequence
from pathlib import Path

from coreanalyze.base import model
from coreanalyze.base.safenames import without_controls
from coreanalyze.capture.requests import CrashRequest

# Where the pytest plugin notes, per process, the test it is running (one file per pid, holding
# the node id), so that a crash of that process is tied to its test (coreanalyze.capture.pytest_plugin).
RUNNING_DIR = ".running"


def capture_info(request: CrashRequest, by: str, modules: Sequence[model.Module] = ()) -> model.CaptureInfo:
    """modules: the report's module table, which places the symbols the process's environment is
    read through."""
    return model.CaptureInfo(
        by=by,
        command=list(request.argv),
        pid=request.pid,
        core=request.core,
        died=_died(request),
        handler_ran=request.handler_ran,
        test=running_test(Path(request.out_dir), request.pid) or test_in_core(request.core, modules),
        problem=request.core_problem,
        oom_kills=request.oom_kills,
        peak_memory=request.peak_rss or request.cgroup_peak,
        memory_limit=request.cgroup_limit,
    )


def _died(request: CrashRequest) -> str | None:
    status = request.died
    if status is None:
        return signal.Signals(request.signal).name if request.signal else None  # held: it dies of this
    if os.WIFSIGNALED(status):
        return _signal_name(os.WTERMSIG(status))
    if os.WIFEXITED(status):
        return f"exit status {os.WEXITSTATUS(status)}"
    return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def running_test(out_dir: Path, pid: int) -> str | None:
    """The node id the pytest plugin noted for `pid`, if any (the pid is a number: the name
    of the file read is never taken from the crashed process)."""
    try:
        text = (out_dir / RUNNING_DIR / str(int(pid))).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return without_controls(text.strip(), 1000) or None


def test_in_core(core: str | None, modules: Sequence[model.Module]) -> str | None:
    """The test pytest was running, as it noted in the process's own environment
    (PYTEST_CURRENT_TEST, "path::name (call)"): `coreanalyze run -- pytest` names the test
    without the plugin."""
    if core is None:
        return None
    from coreanalyze.process.process import Process

    try:
        with Process.open(core, modules) as process:
            value = process.current_environment.get("PYTEST_CURRENT_TEST")
    except Exception:  # noqa: BLE001 - a name for the report, never a reason to lose it
        return None
    if not value:
        return None
    return without_controls(re.sub(r" \((?:setup|call|teardown)\)$", "", value.strip()), 1000) or None


def note_running_test(out_dir: Path, pid: int, nodeid: str | None) -> None:
    """Note (or, with None, forget) the test `pid` runs now."""
    folder = out_dir / RUNNING_DIR
    path = folder / str(int(pid))
    try:
        if nodeid is None:
            path.unlink(missing_ok=True)
            return
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(nodeid, encoding="utf-8")
    except OSError:
        pass
