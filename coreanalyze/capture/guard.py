"""Arming a Python process from inside: `coreanalyze.capture.guard.arm(DIR)`, the
`COREANALYZE_GUARD=DIR` startup hook, the pytest plugin and the notebook extension all come here.

The watcher of an armed process is a helper process of its own (coreanalyze.capture.helper),
started detached (not a child: the armed process never reaps it and never waits for it) and
allowed to trace its armer (`prctl(PR_SET_PTRACER)`, as Yama's ptrace_scope 1 asks, the way
crashpad's handler is). It seizes every thread; what the armed process starts is watched too.
When arming cannot work (another tracer holds the process, Yama forbids it, the helper cannot
start) one line says so and the process runs on unharmed. A helper that dies leaves the process
running: the kernel detaches its tracees.
"""

from __future__ import annotations

import ctypes
import os
import select
import subprocess
import sys
from pathlib import Path

ENV = "COREANALYZE_GUARD"
DEFAULT_OUT = "coreanalyze-reports"
PR_SET_PTRACER = 0x59616D61
HANDSHAKE_SECONDS = 15.0

_armed_dir: Path | None = None


def armed_dir() -> Path | None:
    """Where this process's crash reports go, once armed."""
    return _armed_dir


def arm(out_dir: str | os.PathLike | None = None, *, by: str = "guard", quiet: bool = False) -> bool:
    """Watch this process (and what it starts) for a fatal signal; its report goes to out_dir
    (default: $COREANALYZE_GUARD, else ./coreanalyze-reports). True when armed or already
    watched; False, with one line on stderr, when it cannot be."""
    global _armed_dir
    if _armed_dir is not None:
        return True
    target = Path(out_dir or os.environ.get(ENV) or DEFAULT_OUT).absolute()
    problem = _cannot_arm()
    if problem == "":
        _armed_dir = target
        return True
    if problem is None:
        problem = _start_helper(target, by)
    if problem is None:
        _armed_dir = target
        return True
    if not quiet:
        print(f"coreanalyze: the crash guard is not armed: {problem}; the process runs unwatched", file=sys.stderr, flush=True)
    return False


def _cannot_arm() -> str | None:
    """None: go ahead; "": already watched by a coreanalyze watcher; else why not."""
    if not sys.platform.startswith("linux"):
        return "it needs Linux's ptrace"
    from coreanalyze.capture import procfs

    tracer = procfs.tracer_of(os.getpid())
    if tracer:
        if is_watcher(tracer):
            return ""  # a parent's watcher follows this process already (run, or an armed parent)
        return f"it is traced by {procfs.comm(tracer) or 'another program'} (pid {tracer})"
    return None


def is_watcher(pid: int) -> bool:
    from coreanalyze.capture import procfs

    argv = procfs.cmdline(pid)
    if "coreanalyze.capture.helper" in argv:
        return True
    # `coreanalyze run ...`, `python .../coreanalyze run ...`, `python -m coreanalyze run ...`
    head = [os.path.basename(a) for a in argv[:4]]
    return "coreanalyze" in head and "run" in head[head.index("coreanalyze") :]


def _start_helper(out_dir: Path, by: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if k != ENV}  # the helper itself is not armed
    # The helper imports this package from where this process found it (a checkout on sys.path,
    # a virtual environment's site-packages), whatever the interpreter's own path says.
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    try:
        helper = subprocess.Popen(
            [sys.executable, "-m", "coreanalyze.capture.helper", "--pid", str(os.getpid()), "--out", str(out_dir), "--by", by],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True, close_fds=True,
        )  # fmt: skip
    except OSError as e:
        return f"the helper could not start ({e.strerror or e})"
    try:
        line = _read_line(helper.stdout)
        if not line.startswith("pid "):
            return line or "the helper ended before it started"
        _allow_tracer(int(line.split()[1]))
        helper.stdin.write(b"go\n")
        helper.stdin.flush()
        line = _read_line(helper.stdout)
        return None if line == "ready" else (line or "the helper ended before it was ready")
    except (OSError, ValueError) as e:
        return f"the helper failed ({e})"
    finally:
        for pipe in (helper.stdin, helper.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        helper.wait()  # the first of its two forks: it exits as soon as the helper is detached


def _read_line(stream) -> str:
    ready, _, _ = select.select([stream], [], [], HANDSHAKE_SECONDS)
    if not ready:
        return "the helper did not answer in time"
    return stream.readline().decode("utf-8", "replace").strip()


def _allow_tracer(pid: int) -> None:
    """Yama's ptrace_scope 1 lets only ancestors trace, or the one process named here."""
    if not os.path.exists("/proc/sys/kernel/yama/ptrace_scope"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PTRACER, ctypes.c_ulong(pid), 0, 0, 0)


def arm_from_environment() -> None:
    """The startup hook: arm when COREANALYZE_GUARD names a directory (children inherit it)."""
    if os.environ.get(ENV):
        arm(os.environ[ENV])
