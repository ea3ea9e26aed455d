"""A search of the core file computed in a forked child, on another CPU than the analysis.

The interpreter runs one thread at a time: the search of a TensorFlow core's 174 MiB of
writable memory for packages' names (0.1 s), run in a thread beside gdb, takes that time from
everything else the analysis does meanwhile. Forked while the process has no other thread,
a child computes it on another CPU and sends back the pickled answer. Where forking is not
safe (other threads, whose locks the child would inherit; an observer that must see every read
of the core, as `coreanalyze shrink` has; no fork on this system) the work runs in a thread as
before (background.Job). Either way `result()` is the value, or None when the work failed
(the caller then does it again where errors surface, as with a Job).
"""

from __future__ import annotations

import os
import pickle
import threading
from typing import Any, Callable, Generic, TypeVar

from coreanalyze.base import background

T = TypeVar("T")

CHILD_NICENESS = 10  # added to the child's nice value (see lower_priority)


class ForkedJob(Generic[T]):
    """One function computed in a child process; its answer read once, on demand."""

    def __init__(self, pid: int, answer: int) -> None:
        self._pid = pid
        self._answer = answer  # the read end of the child's pipe
        self._value: T | None = None
        self._collected = False
        self.done = False  # the work succeeded (as background.Job's), known once collected
        self._lock = threading.Lock()

    def result(self) -> T | None:
        with self._lock:
            if not self._collected:
                self.done, self._value = self._collect()
                self._collected = True
            return self._value

    def wait(self) -> None:
        self.result()

    def _collect(self) -> tuple[bool, T | None]:
        chunks = []
        try:
            while chunk := os.read(self._answer, 1 << 20):
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._answer)
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
        try:
            status, value = pickle.loads(b"".join(chunks))  # our own child's answer
        except Exception:  # noqa: BLE001 - a child that died mid-answer: the caller recomputes
            return False, None
        return (True, value) if status == "ok" else (False, None)


def lower_priority() -> None:
    """The child runs at a lower priority: on a machine with fewer free CPUs than runnable
    work, gdb (which the analysis waits for) gets the CPU first, and the child, whose answer is
    needed only after gdb's, takes what is left."""
    try:
        os.nice(CHILD_NICENESS)
    except OSError:
        pass


def start(name: str, work: Callable[..., T], *args: Any) -> ForkedJob[T] | background.Job[T]:
    """work(*args) in a forked child where that is safe, else in a thread."""
    job = fork(work, *args)
    return job if job is not None else background.start(name, work, *args)


def _heard(argument: Any) -> bool:
    return getattr(argument, "observer", None) is not None or getattr(argument, "recording", False) is True


def fork(work: Callable[..., T], *args: Any, before: Callable[[], None] = lower_priority) -> ForkedJob[T] | None:
    """work(*args) in a forked child, None where forking is not safe here (the caller then does
    the work itself). before: run first in the child."""
    # An argument whose reads are heard (a core's memory, or a Process, that `coreanalyze
    # shrink` records: coreanalyze.process.process.Process.record) must be read here, where the
    # recorder is.
    if not hasattr(os, "fork") or threading.active_count() > 1 or any(_heard(a) for a in args):
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: compute, answer, and leave without running the parent's exit code
        try:
            os.close(read_end)
            before()
            try:
                answer = pickle.dumps(("ok", work(*args)))
            except BaseException:  # noqa: BLE001 - told to the parent, which recomputes
                answer = pickle.dumps(("failed", None))
            view = memoryview(answer)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)
    return ForkedJob(pid, read_end)
