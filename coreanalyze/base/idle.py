"""Whether the main thread is blocked waiting for the debugger's answer.

Those are the moments when a thread doing work ahead (coreanalyze.pipeline.warmup) can have the
interpreter without slowing the analysis down: Python threads share one interpreter lock, so
work beside the main thread while it runs Python of its own (between gdb commands) takes that
time from it, but while it sits in select() it needs nothing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_changed = threading.Condition()
_main_waiting = False


@contextmanager
def waiting() -> Iterator[None]:
    """Around a blocking wait for another process; marks the main thread's waits only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _set(True)
    try:
        yield
    finally:
        _set(False)


def _set(value: bool) -> None:
    global _main_waiting
    with _changed:
        _main_waiting = value
        _changed.notify_all()


def until_main_waits(stop: threading.Event) -> bool:
    """Block until the main thread waits (True) or `stop` is set (False; see wake)."""
    with _changed:
        _changed.wait_for(lambda: _main_waiting or stop.is_set())
        return not stop.is_set()


def wake() -> None:
    """Have until_main_waits look at its `stop` again (call after setting it)."""
    with _changed:
        _changed.notify_all()
