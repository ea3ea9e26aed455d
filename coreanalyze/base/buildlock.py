"""One builder at a time for a cache entry that several processes may want at once.

A batch's two workers start on two cores of the same TensorFlow build, and each would index the
same libraries from a cold cache (seconds of CPU each, the same file written twice). The first to
take an entry's lock builds it; the others wait, then find it in the cache. The wait is bounded:
a builder that takes too long (a loaded machine, a stopped process) costs the waiter the time
of building it itself, never the analysis.

The lock is an flock on a small file beside the entry (`.<name>.lock`); the kernel releases it
when its holder exits, however it exits. Lock files are left in place: removing one while
another process waits on it would let a third take a second lock on a new file.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

WAIT_SECONDS = 120.0
POLL_SECONDS = 0.05


@contextmanager
def one_builder(entry: str | os.PathLike[str], wait: float = WAIT_SECONDS) -> Iterator[bool]:
    """Within: this process holds the build lock of `entry` (True), or gave up waiting for it or
    could not make it (False: build anyway, as without the lock)."""
    path = Path(entry)
    lock = path.with_name(f".{path.name}.lock")
    try:
        lock.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield False
        return
    try:
        deadline = time.monotonic() + wait
        held = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = True
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(POLL_SECONDS)
            except OSError:
                break  # a file system without locks: as without the lock
        yield held
    finally:
        os.close(fd)  # releases the lock
