"""Work a session will need, started ahead on a thread of its own while other tests run."""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Ahead(Generic[T]):
    """`make` run once: on a thread of its own after start(), or on the asking thread when
    result() comes first. result() gives what it returned, or raises what it raised (a skip or a
    failure of pytest's included) on the asking thread."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        with self._lock:
            if self._done:
                return
            try:
                self._value = self._make()
            except BaseException as error:  # noqa: BLE001 - raised again by result()
                self._error = error
            self._done = True

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="ahead", daemon=True)
            self._thread.start()

    def result(self) -> T:
        self._run()  # waits for the thread's run, or makes it here
        if self._error is not None:
            raise self._error
        return self._value

    def wait(self) -> None:
        """For the session's end: let a run under way finish (what it made is removed after)."""
        if self._thread is not None:
            self._thread.join()
