"""Only one tracer can hold a process: a debugger (gdb, py-spy, `coreanalyze --pid`) that wants
a watched process asks its watcher to step aside. SIGUSR1 to the watcher releases every process
it watches (they run on, unwatched); `coreanalyze --pid` does it by itself."""

from __future__ import annotations

import os
import signal
import time

from coreanalyze.capture import procfs
from coreanalyze.capture.guard import is_watcher


def watcher_of(pid: int) -> int | None:
    """The coreanalyze watcher tracing `pid`, if one does."""
    tracer = procfs.tracer_of(pid)
    return tracer if tracer and is_watcher(tracer) else None


def free_from_watcher(pid: int, timeout: float = 10.0) -> int | None:
    """Ask the watcher of `pid` to let it go and wait until it has; the watcher's pid, or None
    when `pid` was not watched."""
    watcher = watcher_of(pid)
    if watcher is None:
        return None
    try:
        os.kill(watcher, signal.SIGUSR1)
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    while procfs.tracer_of(pid) == watcher and time.monotonic() < deadline:
        time.sleep(0.02)
    return watcher
