"""`coreanalyze run -- CMD ARGS...`: run CMD under the watcher and exit as CMD did.

CMD is forked here and waits on a pipe until the watcher has seized it, so that nothing it does
goes unwatched; then it execs. It needs no root, and neither `ulimit -c` nor `core_pattern`
matters: the core is written by the watcher, not the kernel. Where CMD cannot be watched
(another tracer already follows this process tree, Yama forbids it), CMD runs unwatched and one
line says why.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from coreanalyze.capture import procfs, ptrace
from coreanalyze.capture.loop import block_wake_signals, watch_until_done
from coreanalyze.capture.reporter import Reporter, ReporterOptions
from coreanalyze.capture.watcher import Watcher

DEFAULT_OUT = "coreanalyze-reports"


@dataclass
class RunOptions:
    out_dir: Path
    timeout: float = 300.0
    keep_core: bool = True


def say(line: str) -> None:
    try:
        print(f"coreanalyze: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr closed: the report in DIR still says it


def shell_status(status: int | None) -> int:
    """The exit status a shell gives for this wait status: 128 + signal for a death by signal."""
    if status is None:
        return 0
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def run(argv: list[str], options: RunOptions) -> int:
    program = shutil.which(argv[0]) if "/" not in argv[0] else argv[0]
    if program is None or not os.path.exists(program):
        say(f"{argv[0]}: command not found")
        return 127
    if not os.access(program, os.X_OK) or os.path.isdir(program):
        say(f"{argv[0]}: permission denied")
        return 126
    out_dir = options.out_dir.absolute()
    block_wake_signals()
    # Ctrl-C and Ctrl-\ reach CMD from the terminal; the watcher outlives them to report.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    reporter = Reporter(ReporterOptions(by="run", timeout=options.timeout, keep_core=options.keep_core))
    go_read, go_write = os.pipe()
    child = os.fork()
    if child == 0:
        _become_command(program, argv, go_read, go_write)
    os.close(go_read)
    watcher = Watcher(out_dir=out_dir, request=reporter.ask, say=say, command=child)
    watched = _seize(watcher, child)
    os.write(go_write, b"go")
    os.close(go_write)
    if not watched:
        reporter.close()
        return shell_status(_wait_unwatched(child))
    try:
        result = watch_until_done(watcher, reporter, say, command=child)
    except Exception as e:  # noqa: BLE001 - the command must outlive a broken watch, and exit as it would
        say(f"the watch broke ({type(e).__name__}: {e}); the command runs on unwatched")
        try:
            watcher.release_all()
        except Exception:  # noqa: BLE001
            pass
        reporter.close()
        return shell_status(watcher.exits[child] if child in watcher.exits else _wait_unwatched(child))
    reporter.close()
    return shell_status(result.status)


def _become_command(program: str, argv: list[str], go_read: int, go_write: int) -> None:
    """In the child: the dispositions and mask the command would have had, then wait for the
    watcher, then exec."""
    try:
        os.close(go_write)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.read(go_read, 2)
        os.close(go_read)
        os.execv(program, argv)
    except OSError as e:
        print(f"coreanalyze: {argv[0]}: {e.strerror or e}", file=sys.stderr, flush=True)
        os._exit(126 if e.errno in (errno.EACCES, errno.ENOEXEC) else 127)
    os._exit(127)


def _seize(watcher: Watcher, child: int) -> bool:
    try:
        watcher.seize_process(child)
        return True
    except ptrace.PtraceError as e:
        tracer = procfs.tracer_of(child)
        if tracer:
            from coreanalyze.capture.guard import is_watcher

            name = "a coreanalyze watcher, which reports its crashes" if is_watcher(tracer) else procfs.comm(tracer) or "another tracer"
            say(f"{' '.join(procfs.cmdline(child)[:1]) or 'the command'} is already traced by {name} (pid {tracer}); it runs unwatched")
        elif e.errno == errno.EPERM:
            say(f"the system does not allow watching the command ({_yama_reason()}); it runs unwatched")
        else:
            say(f"cannot watch the command ({e.strerror}); it runs unwatched")
        return False


def _yama_reason() -> str:
    try:
        scope = Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return "ptrace is refused"
    return {"2": "Yama's ptrace_scope is 2: only a process with CAP_SYS_PTRACE may trace", "3": "Yama's ptrace_scope is 3: no process may trace"}.get(
        scope, f"ptrace is refused (Yama ptrace_scope {scope})"
    )


def _wait_unwatched(child: int) -> int:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
    while True:
        try:
            _, status = os.waitpid(child, 0)
            return status
        except ChildProcessError:
            return 0
