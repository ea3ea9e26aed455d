"""Work done for later analyses (cache entries), never on this one's time.

A first analysis finds what the next ones could keep: a huge library's symbols in address
order, uncompressed copies of compressed debug files. It needs none of it itself, so the work
is handed here. By default each piece runs in a thread of its own that the interpreter waits for
at exit (a library caller, a batch worker: the cache is whole when they are done). The command
line defers it instead (`deferring()`) and, once the report is written and said, hands it to a
detached process (`detach()`): the user's command returns at once, and the work goes on at a
lower priority, holding a shared lock on the cache's `.later.lock` so that whoever needs the
cache whole can wait for it (`wait_for_detached`).

Failures are the work's own to absorb: a cache entry not written costs the next analysis its
time, never this one its report.
"""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

LOCK_NAME = ".later.lock"
NICENESS = 10

_queued: list[tuple[str, Callable[..., Any], tuple]] = []
_threads: list[threading.Thread] = []
_deferring = False


def add(name: str, work: Callable[..., Any], *args: Any) -> None:
    """Do work(*args) for later analyses: queued while deferring, else in a thread now."""
    if _deferring:
        if all(queued[0] != name for queued in _queued):
            _queued.append((name, work, args))
        return
    thread = threading.Thread(target=_quietly, args=(work, args), name=name)
    thread.start()
    _threads.append(thread)


@contextmanager
def deferring() -> Iterator[None]:
    """Within it, added work waits for detach() (or run_queued())."""
    global _deferring
    _deferring = True
    try:
        yield
    finally:
        _deferring = False


def deferred() -> bool:
    return _deferring


def wait() -> None:
    """Wait for the work under way in threads (a process that leaves with os._exit calls it)."""
    while _threads:
        _threads.pop().join()


def run_queued() -> None:
    while _queued:
        _name, work, args = _queued.pop(0)
        _quietly(work, args)


def detach(cache_root: str | None) -> None:
    """Run the queued work in a process of its own, detached from this one and its terminal;
    this one goes on at once. Where no process can be made, the work is done here."""
    if not _queued:
        return
    lock = _lock_file(cache_root)
    try:
        child = os.fork()
    except OSError:
        _close(lock)
        run_queued()
        return
    if child:
        _close(lock)  # the lock stays held: the detached process has the same open file
        _queued.clear()
        try:
            os.waitpid(child, 0)
        except ChildProcessError:
            pass
        return
    # The child: leave the session, fork again so that nobody waits for it, work quietly.
    code = 0
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            os.nice(NICENESS)
        except OSError:
            pass
        run_queued()
    except BaseException:  # noqa: BLE001 - nothing may escape into the caller's code path
        code = 1
    finally:
        os._exit(code)


def wait_for_detached(cache_root: str) -> None:
    """Block until no detached process works on the cache at cache_root."""
    try:
        fd = os.open(os.path.join(cache_root, LOCK_NAME), os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


def _lock_file(cache_root: str | None) -> int | None:
    if cache_root is None:
        return None
    try:
        os.makedirs(cache_root, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(cache_root, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError:
        os.close(fd)
        return None
    return fd


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def _quietly(work: Callable[..., Any], args: tuple) -> None:
    try:
        work(*args)
    except Exception:  # noqa: BLE001 - see the module docstring
        pass
