"""Work that needs no gdb, run in a thread while gdb is busy; awaited where its result is used.

While gdb reads a core's libraries the interpreter would otherwise idle: the built-in rules are
compiled, the abort-message scan reads the core file, and huge libraries' symbols are sorted
then. Each is one Job here, so the driver holds no thread plumbing of its own. A job's
exception is kept, never raised in its thread; the caller decides (usually: do the work again
where it is needed, so that any error surfaces there).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Job(Generic[T]):
    """One function run in a daemon thread."""

    def __init__(self, name: str, work: Callable[[], T]) -> None:
        self._work = work
        self._value: T | None = None
        self.error: BaseException | None = None
        self.done = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
            self.done = True
        except Exception as e:  # noqa: BLE001 - kept for the caller, who decides
            self.error = e

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> T | None:
        """The value once the job is over; None when it failed (see .error)."""
        self.wait()
        return self._value


def start(name: str, work: Callable[..., T], *args: Any) -> Job[T]:
    return Job(name, (lambda: work(*args)) if args else work)
