"""A core of a live process (`coreanalyze --pid PID`): gdb attaches, writes the core with
generate-core-file and detaches; the process goes on exactly as it was (running, or stopped if
it was stopped before). The core is a temporary file unless the caller keeps it.

gdb is told not to read the process's shared libraries (`auto-solib-add off`): writing a core
needs only /proc/PID/maps and the memory, and reading TensorFlow's symbol tables would cost
seconds and gigabytes while the process stands still.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from coreanalyze.base.errors import AnalysisFailed, BadInput, GdbNotFound

SAVED = "Saved corefile"
# How long gdb may take beyond the caller's timeout to detach after a slow core write.
DETACH_GRACE = 30.0


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def _state(pid: int) -> str | None:
    """The one-letter state of /proc/PID/stat (R, S, D, T, t, Z, ...), None when gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z", "X")


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _ptrace_scope() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip())
    except (OSError, ValueError):
        return None


def _user_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return str(uid)


def not_traceable_reason(pid: int, status: dict[str, str]) -> str:
    """Why attaching to pid is refused, and how to allow it (one sentence)."""
    tracer = int((status.get("TracerPid") or "0").split()[0] or 0)
    if tracer:
        return f"it is already traced by pid {tracer} ({_comm(tracer)}); detach that debugger or tracer first"
    uids = (status.get("Uid") or "").split()
    me = os.geteuid()
    if me != 0 and uids and any(int(u) != me for u in uids[:2]):
        owner = _user_name(int(uids[0]))
        return f"it belongs to user {owner}: run coreanalyze as {owner} or as root"
    scope = _ptrace_scope()
    if scope == 3:
        return "kernel.yama.ptrace_scope is 3: attaching is disabled on this machine until it reboots"
    if scope == 2 and me != 0:
        return "kernel.yama.ptrace_scope is 2: only root may attach; run coreanalyze as root"
    if scope == 1 and me != 0:
        return (
            "kernel.yama.ptrace_scope is 1: only a parent may attach; run coreanalyze as root, "
            "or allow it with `sudo sysctl kernel.yama.ptrace_scope=0`"
        )
    return "the kernel refused ptrace (a container without CAP_SYS_PTRACE, or a security module's policy)"


def check_target(pid: int) -> dict[str, str]:
    """/proc/PID/status of a process that can be snapshot, else BadInput with the reason."""
    if pid <= 0:
        raise BadInput(f"--pid {pid}: not a process id")
    if pid == os.getpid():
        raise BadInput(f"--pid {pid}: that is coreanalyze itself")
    status = _status(pid)
    if not status:
        raise BadInput(f"--pid {pid}: no such process")
    if _state(pid) in ("Z", "X", None):
        raise BadInput(f"--pid {pid}: the process has exited (a zombie waiting for its parent)")
    if status.get("Tgid") and status["Tgid"] != str(pid):
        raise BadInput(f"--pid {pid}: that is a thread of process {status['Tgid']}; pass the process id")
    tracer = int((status.get("TracerPid") or "0").split()[0] or 0)
    if tracer:
        raise BadInput(f"--pid {pid}: the process may not be traced: {not_traceable_reason(pid, status)}")
    uids = (status.get("Uid") or "").split()
    if os.geteuid() != 0 and uids and any(int(u) != os.geteuid() for u in uids[:2]):
        raise BadInput(f"--pid {pid}: the process may not be traced: {not_traceable_reason(pid, status)}")
    return status


def _restore_run_state(pid: int, was_stopped: bool) -> None:
    """Leave the process as it was: running if it ran, stopped if it was stopped."""
    state = _state(pid)
    if state is None:
        return
    if not was_stopped and state in ("T", "t"):
        os.kill(pid, signal.SIGCONT)
    elif was_stopped and state not in ("T", "t", "Z", "X"):
        os.kill(pid, signal.SIGSTOP)


def write_snapshot(pid: int, core: Path, *, gdb: str = "gdb", timeout: float = 300.0) -> None:
    """Write a core of the live process pid to core; the process is left as it was."""
    gdb_path = shutil.which(gdb)
    if gdb_path is None:
        raise GdbNotFound(f"gdb is not installed (no {gdb!r} on PATH)")
    status = check_target(pid)
    was_stopped = _state(pid) in ("T", "t")
    command = [
        gdb_path, "-nx", "-batch",
        "-iex", "set debuginfod enabled off",
        "-iex", "set auto-solib-add off",
        "-iex", "set pagination off",
        "-ex", f"attach {pid}",
        "-ex", f"generate-core-file {core}",
        "-ex", "detach",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, errors="replace", timeout=timeout + DETACH_GRACE, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        _restore_run_state(pid, was_stopped)  # the kernel detached when gdb was killed
        raise AnalysisFailed(f"--pid {pid}: gdb did not finish the snapshot within {timeout:.0f} s; the process was left running") from None
    finally:
        if _alive(pid):
            _restore_run_state(pid, was_stopped)
    output = done.stdout + done.stderr
    saved = SAVED in output and core.is_file() and core.stat().st_size > 0
    if saved:
        return
    core.unlink(missing_ok=True)
    if not _alive(pid) or "No such process" in output:
        raise BadInput(f"--pid {pid}: the process exited while its snapshot was taken")
    if "Operation not permitted" in output or "ptrace:" in output:
        raise BadInput(f"--pid {pid}: the process may not be traced: {not_traceable_reason(pid, _status(pid) or status)}")
    last = next((line for line in reversed(output.splitlines()) if line.strip()), "no output")
    raise AnalysisFailed(f"--pid {pid}: gdb could not write a snapshot: {last.strip()[:300]}")


@contextmanager
def live_snapshot(pid: int, *, keep_core: str | None = None, gdb: str = "gdb", timeout: float = 300.0) -> Iterator[Path]:
    """A core of the live process for the length of the block: keep_core, or a temporary file
    removed at the end."""
    if keep_core is not None:
        target = Path(keep_core)
        if target.is_dir():
            raise BadInput(f"--keep-core {keep_core} is a directory; give a file name")
        if not target.parent.is_dir():
            raise BadInput(f"--keep-core {keep_core}: no such directory {target.parent}")
        write_snapshot(pid, target, gdb=gdb, timeout=timeout)
        yield target
        return
    workdir = Path(tempfile.mkdtemp(prefix="coreanalyze-pid-"))
    try:
        core = workdir / f"core.{pid}"
        write_snapshot(pid, core, gdb=gdb, timeout=timeout)
        yield core
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
